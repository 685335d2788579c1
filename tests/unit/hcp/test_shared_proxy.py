"""The shared topology of the API proxy (plugins/module_utils/hcp/sidecar.py, private_capi_proxy_topology shared): one
proxy Deployment per HCP namespace behind a Service over TLS, the workloads pointed at it with their own tokens; how
the flip (flip.py), the way back and the rollback's judge see it; and the proxy's own refusal to lend its identity on
a non-loopback listener (capi_proxy/proxy/program.py)."""
import argparse
import json

import pytest
import yaml

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import PROXY_ORIGINAL_ANNOTATION
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import flip, judge, sidecar
from capi_proxy.proxy import program
from tests.unit.hcp.test_sidecar_role import (CLUSTERROLEBINDINGS, CLUSTERROLES, DEPLOYMENTS, LABELS, NS, READ,
                                              ROLEBINDINGS, ROLES, SETTINGS, names)

BUNDLE = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
SHARED = dict(SETTINGS, topology="shared", replicas=2, ca_bundle=BUNDLE, serving_secret_name="capi-proxy-serving",
              serving_certificate_provider="generate")


def by_kind(objects, kind):
    return [obj for obj in objects if obj["kind"] == kind]


def installed(deployments, settings):
    """deployments as the API server holds them once their put-in patches are applied (spec and annotations)."""
    patched = []
    for deployment, patch in zip(deployments, sidecar.present_patches(deployments, settings["deployments"], settings)):
        patched.append(dict(deployment, spec={"template": {"spec": patch["spec"]["template"]["spec"]}},
                            metadata=dict(deployment["metadata"], annotations=patch["metadata"]["annotations"])))
    return patched


def shared_deployment(settings=SHARED, rolled=True):
    obj = by_kind(sidecar.shared_proxy_objects(settings, NS), "Deployment")[0]
    status = {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2 if rolled else 1}
    return dict(obj, metadata=dict(obj["metadata"], generation=1), status=status)


def rolled(deployment):
    return dict(deployment, metadata=dict(deployment["metadata"], generation=1),
                status={"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1})


def test_the_shared_plan_adds_one_proxy_for_the_namespace_and_points_the_workloads_at_it_over_tls():
    plan = sidecar.role_plan(READ, SHARED)
    assert plan["error"] == "" and plan["delete"] == []
    config_map = plan["apply"][0]
    kubeconfig = yaml.safe_load(config_map["data"]["kubeconfig"])
    assert kubeconfig["clusters"][0]["cluster"] == {"server": "https://capi-proxy.%s.svc:8080" % NS,
                                                    "certificate-authority": "/etc/capi-proxy/ca.crt"}
    assert kubeconfig["users"][0]["user"] == {"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}
    assert config_map["data"]["ca.crt"] == BUNDLE
    assert names(plan["apply"][-4:]) == [("ServiceAccount", "capi-proxy"), ("Deployment", "capi-proxy"),
                                         ("Service", "capi-proxy"), ("PodDisruptionBudget", "capi-proxy")]
    proxy = by_kind(plan["apply"], "Deployment")[0]
    assert proxy["spec"]["replicas"] == 2 and proxy["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": 0,
                                                                                             "maxSurge": 1}
    assert proxy["metadata"]["labels"]["app.kubernetes.io/managed-by"] == LABELS["app.kubernetes.io/managed-by"]
    pod = proxy["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "capi-proxy"
    container = pod["containers"][0]
    assert container["name"] == "kube-apiserver-proxy" and "lifecycle" not in container
    assert "--listen=0.0.0.0:8080" in container["args"] and "--use-own-credentials" not in container["args"]
    assert {"--tls-cert=/etc/capi-proxy-tls/tls.crt", "--tls-key=/etc/capi-proxy-tls/tls.key",
            "--mode-config-map=%s/capi-proxy-mode" % NS} <= set(container["args"])
    assert container["securityContext"]["runAsNonRoot"] is True and container["ports"][0]["name"] == "proxy"
    assert {"name": "capi-proxy-serving", "secret": {"secretName": "capi-proxy-serving"}} in pod["volumes"]
    service = by_kind(plan["apply"], "Service")[0]
    assert service["spec"]["selector"] == proxy["spec"]["selector"]["matchLabels"]
    # HyperShift's NetworkPolicy lets a control-plane Pod reach the management API server with this label
    assert proxy["spec"]["template"]["metadata"]["labels"] == dict(
        proxy["spec"]["selector"]["matchLabels"], **{"hypershift.openshift.io/need-management-kas-access": "true"})
    assert "annotations" not in service["metadata"]
    # the workloads: KUBECONFIG and the ConfigMap, no sidecar, recorded as for a sidecar
    for patch in plan["patches"]:
        containers = patch["spec"]["template"]["spec"]["containers"]
        assert [c["name"] for c in containers] == ["manager"]
        assert {"name": "KUBECONFIG", "value": "/etc/capi-proxy/kubeconfig"} in containers[0]["env"]
        assert "metadata" not in patch["spec"]["template"], "no sidecar: kubectl's default container needs no annotation"
        assert PROXY_ORIGINAL_ANNOTATION in patch["metadata"]["annotations"]


def test_only_the_shared_proxy_follows_the_mode_and_it_reads_crds_beside_the_workloads():
    plan = sidecar.role_plan(READ, SHARED)
    bindings = dict((obj["metadata"]["name"], obj["subjects"]) for obj in by_kind(plan["apply"], "RoleBinding")
                    + by_kind(plan["apply"], "ClusterRoleBinding"))
    proxy = {"kind": "ServiceAccount", "name": "capi-proxy", "namespace": NS}
    assert bindings["private-capi-proxy-mode"] == [proxy]
    assert proxy in bindings["private-capi-proxy-crd-reader-%s" % NS]
    # the workloads' own grants mirrored on the private groups as with sidecars: their tokens reach the API server
    sidecar_rbac = sidecar.private_rbac(DEPLOYMENTS, SETTINGS["deployments"], NS, ROLEBINDINGS, ROLES,
                                        CLUSTERROLEBINDINGS, CLUSTERROLES)
    mirrored = [obj for obj in sidecar_rbac if "mode" not in obj["metadata"]["name"]
                and "crd-reader" not in obj["metadata"]["name"]]
    assert mirrored and all(obj in plan["apply"] for obj in mirrored)


def test_the_shared_proxy_runs_where_the_capi_pods_run_and_rolls_on_a_new_certificate():
    placed = dict(DEPLOYMENTS[0], spec={"template": {"spec": dict(
        DEPLOYMENTS[0]["spec"]["template"]["spec"], nodeSelector={"hypershift.openshift.io/control-plane": "true"},
        tolerations=[{"key": "hypershift.openshift.io/control-plane", "operator": "Exists"}],
        priorityClassName="hypershift-control-plane",
        affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}})}})
    plan = sidecar.role_plan([{"resources": [placed] + DEPLOYMENTS[1:]}] + READ[1:],
                             dict(SHARED, serving_cert_sha256="abc"))
    proxy = by_kind(plan["apply"], "Deployment")[0]
    pod = proxy["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"hypershift.openshift.io/control-plane": "true"}
    assert pod["tolerations"][0]["key"] == "hypershift.openshift.io/control-plane"
    assert pod["priorityClassName"] == "hypershift-control-plane" and "nodeAffinity" in pod["affinity"]
    assert "podAntiAffinity" in pod["affinity"]
    assert proxy["spec"]["template"]["metadata"]["annotations"] == {"hypershift.openshift.io/serving-cert-sha256": "abc"}


def test_openshift_certificates_are_asked_for_on_the_service():
    service = by_kind(sidecar.shared_proxy_objects(dict(SHARED, serving_certificate_provider="openshift"), NS),
                      "Service")[0]
    assert service["metadata"]["annotations"] == {
        "service.beta.openshift.io/serving-cert-secret-name": "capi-proxy-serving"}


@pytest.mark.parametrize("change, message", [
    ({"ca_bundle": ""}, "private_capi_proxy_topology shared needs the shared proxy's CA bundle"),
    ({"replicas": 0}, "private_capi_proxy_replicas must be a number of at least 1"),
    ({"replicas": "two"}, "private_capi_proxy_replicas must be a number of at least 1"),
    ({"follow_mode": False}, "private_capi_proxy_topology shared needs private_capi_proxy_follow_mode true"),
    ({"topology": "mesh"}, "private_capi_proxy_topology must be one of sidecar, shared, got 'mesh'"),
])
def test_a_shared_plan_without_what_it_needs_is_refused_naming_the_variable(change, message):
    with pytest.raises(sidecar.SidecarError, match=message.replace("(", "\\(").replace(")", "\\)")):
        reads = READ if change.get("follow_mode", True) else READ[:1] + READ[2:]
        sidecar.role_plan(reads, dict(SHARED, **change))


def test_a_namespace_moves_from_sidecars_to_the_shared_proxy_and_back_with_the_same_record():
    with_sidecars = installed(DEPLOYMENTS[:2], SETTINGS)
    record = [d["metadata"]["annotations"][PROXY_ORIGINAL_ANNOTATION] for d in with_sidecars]
    moved = sidecar.present_patches(with_sidecars, SETTINGS["deployments"], SHARED)
    for patch, kept in zip(moved, record):
        assert [c["name"] for c in patch["spec"]["template"]["spec"]["containers"]] == ["manager"]
        # the default-container annotation the sidecar topology added goes, and the record forgets it
        assert patch["spec"]["template"]["metadata"] == {
            "annotations": {"kubectl.kubernetes.io/default-container": None}}
        assert json.loads(patch["metadata"]["annotations"][PROXY_ORIGINAL_ANNOTATION]) == dict(
            (key, value) for key, value in json.loads(kept).items() if key != "default_container_added")
    shared = installed(DEPLOYMENTS[:2], SHARED)
    assert all(sidecar.points_at_shared(d) and not sidecar.has_sidecar(d) for d in shared)
    # back to sidecars: the sidecar topology's plan deletes the shared proxy it no longer uses
    read = [{"resources": shared + [shared_deployment()]}] + READ[1:]
    plan = sidecar.role_plan(read, SETTINGS)
    assert plan["delete"] == [] and names(plan["delete_shared"]) == [
        ("ServiceAccount", "capi-proxy"), ("Deployment", "capi-proxy"), ("Service", "capi-proxy"),
        ("PodDisruptionBudget", "capi-proxy")]
    assert all(set(obj["metadata"]) == {"name", "namespace"} for obj in plan["delete_shared"])
    # kept while a Deployment this run does not patch still points at it, or when the patches are sent later
    assert sidecar.role_plan(read, dict(SETTINGS, deployments=["cluster-api"]))["delete_shared"] == []
    assert sidecar.role_plan(read, dict(SETTINGS, steps="prepare"))["delete_shared"] == []
    assert [c["name"] for c in plan["patches"][0]["spec"]["template"]["spec"]["containers"]] == [
        "kube-apiserver-proxy", "manager"]
    # removed: each Deployment as it was, then the shared proxy and what the role made
    absent_read = [{"resources": shared + [shared_deployment()]}] + [{"resources": []}] * 4
    absent = sidecar.role_plan(absent_read, dict(SHARED, state="absent"))
    assert absent["patches"] == sidecar.absent_patches(shared, SETTINGS["deployments"])
    for patch, original in zip(absent["patches"], DEPLOYMENTS):
        assert patch["spec"]["template"]["spec"]["containers"] == original["spec"]["template"]["spec"]["containers"]
    assert ("Deployment", "capi-proxy") in names(absent["delete_shared"])
    assert "capi-proxy" not in [name for _kind, name in names(absent["delete"])]


def test_the_flip_waits_for_the_shared_proxy_pods_and_checks_its_rollout():
    workloads = [rolled(d) for d in installed(DEPLOYMENTS[:2], SHARED)]
    deployments = workloads + [shared_deployment()]
    assert flip.sidecar_problems(deployments, SETTINGS["deployments"], NS) == []
    problems = flip.sidecar_problems(workloads + [shared_deployment(rolled=False)], SETTINGS["deployments"], NS)
    assert len(problems) == 1 and problems[0].startswith(
        "Deployment %s/capi-proxy is still rolling out the shared API proxy (replicas 2 wanted, 2 updated, 1 available" % NS)
    problems = flip.sidecar_problems(workloads, SETTINGS["deployments"], NS)
    assert problems == ["Deployment %s/capi-proxy, the shared API proxy its Deployments point at, is missing: put it in "
                        "with %s and private_capi_proxy_topology shared" % (NS, flip.PREINSTALL)]
    running = {"containerStatuses": [{"name": "kube-apiserver-proxy", "state": {"running": {}}}]}
    pods = [{"metadata": {"name": "capi-proxy-5d9c8b7f4-%s" % suffix,
                          "ownerReferences": [{"kind": "ReplicaSet", "name": "capi-proxy-5d9c8b7f4"}]}, "status": running}
            for suffix in ("aaaaa", "bbbbb")]
    owner = [{"kind": "ReplicaSet", "name": "cluster-api-7c"}]
    pods.append({"metadata": {"name": "cluster-api-7c-ccccc", "ownerReferences": owner},
                 "status": {"containerStatuses": [{"name": "manager", "state": {"running": {}}}]}})
    assert flip.running_sidecars(pods, SETTINGS["deployments"], shared=True) == [
        "capi-proxy-5d9c8b7f4-aaaaa", "capi-proxy-5d9c8b7f4-bbbbb"]
    # a proxy no named Deployment points at (left by an interrupted move to sidecars) is not waited for
    assert flip.running_sidecars(pods, SETTINGS["deployments"]) == []
    assert flip.zero_stop_way_back(deployments, SETTINGS["deployments"], NS, {"data": {"mode": "translate"}}) is True
    assert flip.zero_stop_way_back(workloads, SETTINGS["deployments"], NS, {"data": {"mode": "translate"}}) is False


def test_the_rollback_judge_names_a_deployment_still_pointed_at_the_shared_proxy():
    workloads = installed(DEPLOYMENTS[:2], SHARED)
    problems = judge.rollback_problems({"deployment_names": ["cluster-api"], "deployments": workloads[:1]})
    assert "Deployment cluster-api still points at the shared API proxy" in problems
    assert "Deployment cluster-api still points at the shared API proxy" not in judge.rollback_problems(
        {"deployment_names": ["cluster-api"], "deployments": workloads[:1], "passthrough_sidecars": True})


def test_verify_accepts_a_deployment_pointed_at_the_shared_proxy_only_while_that_proxy_exists():
    workloads = installed(DEPLOYMENTS[:2], SHARED)
    where = "HostedCluster clusters/hc-1"
    assert judge._sidecar_problems(workloads + [shared_deployment()], ["cluster-api"], True, where) == []
    assert judge._sidecar_problems(workloads, ["cluster-api"], True, where) == [
        "%s: Deployment cluster-api points at the shared API proxy, but Deployment capi-proxy is missing; re-run the "
        "api_proxy role" % where]


@pytest.mark.parametrize("argv, message", [
    (["--listen=0.0.0.0:8443", "--use-own-credentials"], "--use-own-credentials sends the proxy's own credentials"),
    (["--listen=10.0.0.7:8443", "--use-own-credentials", "--tls-cert=c", "--tls-key=k"],
     "it is refused on --listen 10.0.0.7:8443"),
    (["--listen=0.0.0.0:8443", "--tls-cert=c"], "--tls-cert and --tls-key go together"),
])
def test_the_proxy_lends_its_identity_on_loopback_only(argv, message):
    args = program.proxy_parser().parse_args(["--kubeconfig=k"] + argv)
    with pytest.raises(ValueError, match=message):
        program.check_listen(args)


@pytest.mark.parametrize("argv", [["--use-own-credentials"], ["--listen=[::1]:8080", "--use-own-credentials"],
                                  ["--listen=localhost:8080", "--use-own-credentials"],
                                  ["--listen=0.0.0.0:8443", "--tls-cert=c", "--tls-key=k"]])
def test_the_sidecar_and_the_shared_listeners_are_allowed(argv):
    program.check_listen(program.proxy_parser().parse_args(["--kubeconfig=k"] + argv))
    assert isinstance(program.proxy_parser().parse_args(["--kubeconfig=k"] + argv), argparse.Namespace)
