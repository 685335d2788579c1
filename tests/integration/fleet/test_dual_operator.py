"""The dual_operator role on the local API server, one management cluster through its life: a dry run, the install
(existing HostedClusters marked legacy, `operator` turned into the new operator with the proxy sidecar, `operator-legacy`
beside it), a converged run that only reads, a cleanup refused while any HostedCluster still needs the legacy operator,
the cleanup once all are migrated, and the legacy operator made again, as it was, for a rolled-back cluster.

The tests run in file order on one server (pytest --dist loadfile keeps them on one worker)."""
import copy
import json
import os
import re
import subprocess

import pytest

from testenv import REPO_ROOT
from testenv.hcp import fleet
from tests.integration.fleet.support import ANSIBLE_PLAYBOOK, hostedcluster_states, start_fleet, write_inventory

PLAYBOOK = os.path.join(REPO_ROOT, "tests", "integration", "fleet", "playbooks", "dual_operator.yml")
NS = fleet.OPERATOR_NAMESPACE
DEPLOYMENTS = "/apis/apps/v1/namespaces/%s/deployments" % NS
HOSTEDCLUSTERS = "/apis/hypershift.openshift.io/v1beta1/namespaces/%s/hostedclusters" % fleet.HC_NAMESPACE
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
SCOPE, IN_PROGRESS, FAILED, PRIVATE = ("hypershift.openshift.io/scope", "hypershift.openshift.io/migration-in-progress",
                                       "hypershift.openshift.io/migration-failed", "hypershift.openshift.io/private-capi-types")
# hc-01 legacy (seeded so), hc-02 and hc-03 from before the install (no marker), hc-04 already on private types
SEEDED_STATES = {"hc-01": "legacy", "hc-02": "new", "hc-03": "new", "hc-04": "migrated"}


def run_role(inventory, steps, check=False, diff=False, extra_vars=None):
    """ansible-playbook on the driver; returns (returncode, output, changed count of the recap)."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    command = [ANSIBLE_PLAYBOOK, "-i", inventory, PLAYBOOK,
               "-e", json.dumps(dict(extra_vars or {}, dual_operator_steps=steps))]
    command += ["--check"] if check else []
    command += ["--diff"] if diff else []
    result = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    output = result.stdout + result.stderr
    recap = re.search(r"mc-1\s*:\s*ok=\d+\s+changed=(\d+)", output)
    return result.returncode, output, int(recap.group(1)) if recap else None


def writes(server):
    return [(e["verb"], e["resource"], e["namespace"], e["name"]) for e in server.request_counts()["entries"]
            if e["verb"] in WRITE_VERBS]


def deployment(server, name):
    response = server.request("GET", "%s/%s" % (DEPLOYMENTS, name))
    return response.json() if response.status == 200 else None


def container(deployment_object, name):
    return next(c for c in deployment_object["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def versions(server):
    """resourceVersion of every object the role could write: a check-mode run must leave all of them as they are."""
    paths = [DEPLOYMENTS, "/api/v1/namespaces/%s/configmaps" % NS, HOSTEDCLUSTERS,
             "/apis/rbac.authorization.k8s.io/v1/clusterroles", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
             "/api/v1/namespaces/%s/events" % fleet.HC_NAMESPACE]
    return {(path, item["metadata"]["name"]): item["metadata"]["resourceVersion"]
            for path in paths for item in server.request("GET", path).json()["items"]}


def set_state(server, name, state):
    """Put a HostedCluster in a state the way migration_state leaves it (annotations and mirror label)."""
    hostedcluster = server.request("GET", "%s/%s" % (HOSTEDCLUSTERS, name)).json()
    annotations = {key: value for key, value in (hostedcluster["metadata"].get("annotations") or {}).items()
                   if key not in (SCOPE, IN_PROGRESS, FAILED, PRIVATE)}
    annotations.update({"legacy": {SCOPE: "legacy"}, "in-progress": {SCOPE: "legacy", IN_PROGRESS: "true"},
                        "failed": {SCOPE: "legacy", FAILED: "verify: Machine count 1 != 2"},
                        "migrated": {PRIVATE: "true"}}[state])
    hostedcluster["metadata"]["annotations"] = annotations
    hostedcluster["metadata"].setdefault("labels", {})[fleet.STATE_LABEL] = state
    response = server.request("PUT", "%s/%s" % (HOSTEDCLUSTERS, name), hostedcluster)
    assert response.status == 200, response.body


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("dual-operator")
    spec = fleet.fleet_spec(len(SEEDED_STATES), machines=1)
    for entry in spec:
        entry["state"] = SEEDED_STATES[entry["hc_name"]]
    server, _crds = start_fleet(tmp_path, spec)
    # HyperShift's operator ClusterRole names the CAPI groups: the proxy must get the same on the private groups
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "hypershift-operator"},
            "rules": [{"apiGroups": ["cluster.x-k8s.io"], "resources": ["clusters", "machines"], "verbs": ["get", "list", "patch"]},
                      {"apiGroups": ["hypershift.openshift.io"], "resources": ["*"], "verbs": ["*"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "hypershift-operator"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "hypershift-operator"},
               "subjects": [{"kind": "ServiceAccount", "name": "operator", "namespace": NS}]}
    for path, body in (("clusterroles", role), ("clusterrolebindings", binding)):
        assert server.request("POST", "/apis/rbac.authorization.k8s.io/v1/" + path, body).status == 201
    inventory = write_inventory(tmp_path, server.kubeconfig)
    original = deployment(server, "operator")
    before = versions(server)
    check = run_role(inventory, ["present"], check=True, diff=True)
    after_check = versions(server)
    server.reset_requests()
    first = run_role(inventory, ["present"], diff=True)
    first_writes = writes(server)
    yield {"server": server, "inventory": inventory, "original": original, "before": before, "check": check,
           "after_check": after_check, "first": first, "first_writes": first_writes, "saved": {}}
    assert server.stop() == 0


def test_check_mode_shows_the_plan_and_writes_nothing(cluster):
    code, output, changed = cluster["check"]
    assert code == 0, output[-4000:]
    assert cluster["after_check"] == cluster["before"], "check mode wrote to the cluster"
    assert changed >= 4, output[-4000:]  # two HostedClusters marked, operator-legacy created, operator patched
    assert "2 HostedCluster(s) marked legacy: clusters/hc-02, clusters/hc-03" in output
    assert "check mode: nothing was written" in output
    # the diff shows the HostedClusters' new marker and the operator's new arguments
    assert len(re.findall(r'^\+\s+"hypershift.openshift.io/scope": "legacy"', output, re.M)) == 2, output[-6000:]
    assert re.search(r'^\+\s+"--private-capi-types",$', output, re.M), output[-6000:]


def test_first_run_installs_both_operators_and_marks_the_existing_clusters_legacy(cluster):
    server, original = cluster["server"], cluster["original"]
    code, output, changed = cluster["first"]
    assert code == 0, output[-4000:]
    assert changed > 0
    # existing clusters marked legacy (one guarded write each), the one on private types untouched
    assert hostedcluster_states(server) == {"hc-01": "legacy", "hc-02": "legacy", "hc-03": "legacy", "hc-04": "migrated"}
    hostedcluster_writes = sorted(w[3] for w in cluster["first_writes"] if w[1] == "hostedclusters")
    assert hostedcluster_writes == ["hc-02", "hc-03"]
    hc04 = server.request("GET", HOSTEDCLUSTERS + "/hc-04").json()["metadata"]["annotations"]
    assert hc04 == {PRIVATE: "true"}

    new, legacy = deployment(server, "operator"), deployment(server, "operator-legacy")
    original_main = container(original, "operator")
    base_args = original_main["args"]
    # the new operator: private types, HyperShift's own lease, the proxy sidecar with KUBECONFIG for the operator
    new_main = container(new, "operator")
    assert new_main["args"] == base_args + ["--private-capi-types", "--leader-election-id=hypershift-operator-leader-elect"]
    assert {"name": "KUBECONFIG", "value": "/etc/capi-proxy/kubeconfig"} in new_main["env"]
    proxy = container(new, "kube-apiserver-proxy")
    assert "--listen=127.0.0.1:8080" in proxy["args"] and proxy["image"] == "quay.io/hypershift/capi-proxy:1.0.0"
    assert server.request("GET", "/api/v1/namespaces/%s/configmaps/capi-proxy-kubeconfig" % NS).status == 200
    private_role = server.request("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/private-capi-proxy-%s-operator" % NS).json()
    assert private_role["rules"][0]["apiGroups"] == ["cluster.hypershift.openshift.io"]

    # the legacy operator: the original spec (image, command, env, service account), scope legacy, its own lease, no proxy
    legacy_main = container(legacy, "operator")
    assert legacy_main["args"] == base_args + ["--hostedcluster-scope=legacy",
                                               "--leader-election-id=hypershift-operator-legacy-leader-elect"]
    for field in ("image", "command", "env", "ports"):
        assert legacy_main[field] == original_main[field], field
    legacy_pod, original_pod = legacy["spec"]["template"]["spec"], original["spec"]["template"]["spec"]
    assert [c["name"] for c in legacy_pod["containers"]] == ["operator"]
    assert legacy_pod["serviceAccountName"] == original_pod["serviceAccountName"] == "operator"
    assert legacy["spec"]["replicas"] == original["spec"]["replicas"]
    assert "volumes" not in legacy_pod
    # selectors that do not overlap: neither Deployment (nor the operator Service, on name=operator) owns the other's pods
    legacy_selector, new_selector = legacy["spec"]["selector"]["matchLabels"], new["spec"]["selector"]["matchLabels"]
    assert legacy_selector["name"] == "operator-legacy" and new_selector["name"] == "operator"
    assert legacy_selector.items() <= legacy["spec"]["template"]["metadata"]["labels"].items()
    assert not new_selector.items() <= legacy["spec"]["template"]["metadata"]["labels"].items()
    assert legacy["status"].get("availableReplicas") == 1 and new["status"].get("availableReplicas") == 1
    cluster["saved"]["legacy_spec"] = legacy["spec"]


def test_second_run_only_reads_and_the_cleanup_refuses_while_clusters_are_legacy(cluster):
    server = cluster["server"]
    server.reset_requests()
    code, output, changed = run_role(cluster["inventory"], ["present", "cleanup"])
    assert code == 0, output[-4000:]
    assert changed == 0, output[-4000:]
    assert writes(server) == [], "a converged run wrote to the cluster"
    # present: one LIST of Deployments (k8s_lists: after one GET of the operator namespace, which must exist), one of
    # HostedClusters; cleanup: one LIST with the mirror-label selector
    resource_requests = sorted((e["verb"], e["resource"]) for e in server.request_counts()["entries"]
                               if not e["resource"].startswith("/"))  # not discovery
    assert resource_requests == [("get", "namespaces"), ("list", "deployments"), ("list", "hostedclusters"),
                                 ("list", "hostedclusters")]
    assert "Not removing hypershift/operator-legacy: 3 HostedCluster(s) still need the legacy operator" in output
    assert "clusters/hc-01 (legacy), clusters/hc-02 (legacy), clusters/hc-03 (legacy)" in output
    assert deployment(server, "operator-legacy") is not None


def test_a_drifted_legacy_operator_is_repaired_and_the_cleanup_refuses_while_a_cluster_is_in_progress_or_failed(cluster):
    server = cluster["server"]
    set_state(server, "hc-01", "migrated")
    set_state(server, "hc-02", "failed")
    set_state(server, "hc-03", "in-progress")
    # someone dropped the scope from the legacy operator: it would reconcile every HostedCluster
    legacy = deployment(server, "operator-legacy")
    container(legacy, "operator")["args"].remove("--hostedcluster-scope=legacy")
    assert server.request("PUT", DEPLOYMENTS + "/operator-legacy", legacy).status == 200
    server.reset_requests()
    code, output, _changed = run_role(cluster["inventory"], ["present", "cleanup"],
                                      extra_vars={"private_capi_dual_operator_cleanup_fail_when_blocked": True})
    assert code != 0, output[-4000:]
    assert writes(server) == [("update", "deployments", NS, "operator-legacy")]
    assert deployment(server, "operator-legacy")["spec"] == cluster["saved"]["legacy_spec"]
    assert "Cannot remove hypershift/operator-legacy" in output
    assert "clusters/hc-02 (failed), clusters/hc-03 (in-progress)" in output and "hc-01" not in output.split("Cannot remove")[1]


def test_cleanup_removes_the_legacy_operator_once_all_are_migrated_and_then_changes_nothing(cluster):
    server = cluster["server"]
    set_state(server, "hc-02", "migrated")
    set_state(server, "hc-03", "migrated")
    server.reset_requests()
    code, output, changed = run_role(cluster["inventory"], ["present", "cleanup"])
    assert code == 0 and changed == 1, output[-4000:]
    assert deployment(server, "operator-legacy") is None
    assert writes(server) == [("delete", "deployments", NS, "operator-legacy")]
    assert "hypershift/operator-legacy" in output
    # again: present does not bring back a legacy operator no HostedCluster needs; nothing is written
    server.reset_requests()
    code, output, changed = run_role(cluster["inventory"], ["present", "cleanup"])
    assert code == 0 and changed == 0, output[-4000:]
    assert writes(server) == [] and deployment(server, "operator-legacy") is None
    assert "operator-legacy: not needed, not created" in output


def test_a_rolled_back_cluster_gets_the_legacy_operator_back_as_it_was(cluster):
    server = cluster["server"]
    set_state(server, "hc-02", "legacy")  # as a rollback leaves it
    # a HostedCluster created after the install is the new operator's: it stays unmarked
    fresh = copy.deepcopy(server.request("GET", HOSTEDCLUSTERS + "/hc-04").json())
    fresh["metadata"] = {"name": "hc-05", "namespace": fleet.HC_NAMESPACE}
    fresh.pop("status", None)
    assert server.request("POST", HOSTEDCLUSTERS, fresh).status == 201
    server.reset_requests()
    code, output, changed = run_role(cluster["inventory"], ["present"])
    assert code == 0 and changed == 1, output[-4000:]
    assert writes(server) == [("create", "deployments", NS, "operator-legacy")]
    assert deployment(server, "operator-legacy")["spec"] == cluster["saved"]["legacy_spec"]
    assert "left to the new operator (created after it was installed): clusters/hc-05" in output
    assert hostedcluster_states(server)["hc-05"] is None


def test_a_missing_operator_deployment_stops_the_role_naming_it(cluster):
    server = cluster["server"]
    server.reset_requests()
    code, output, _changed = run_role(cluster["inventory"], ["present"],
                                      extra_vars={"private_capi_dual_operator_name": "hypershift-operator"})
    assert code != 0
    assert "Deployment hypershift/hypershift-operator not found (expected the HyperShift operator" in output, output[-3000:]
    assert writes(server) == []
