"""The conversion_shim role's objects and judgements (plugins/module_utils/filters/shim_manifests.py) and its filters
conversion_shim_manifests and conversion_shim_outcome.

conversion_shim_golden.json holds what the role's Jinja templates (deployment.yml.j2, access.yml.j2, service.yml.j2,
pdb.yml.j2, absent.yml.j2) rendered before they became Python, for three sets of variables (the defaults; every
variable changed, ints passed as strings as `-e` gives them, one replica, no metrics port, the service CA; three
replicas): the functions must build exactly those objects."""
import base64
import copy
import hashlib
import json
import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.hypershift.private_capi.plugins.filter import conversion_shim
from ansible_collections.hypershift.private_capi.plugins.module_utils.filters import shim_manifests
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import sidecar
from testenv import REPO_ROOT

ROLE = os.path.join(REPO_ROOT, "roles", "conversion_shim")
PREFIX = "private_capi_shim_"
with open(os.path.join(os.path.dirname(__file__), "conversion_shim_golden.json")) as _handle:
    GOLDEN = json.load(_handle)


def _yaml(*parts):
    with open(os.path.join(*parts)) as handle:
        return yaml.safe_load(handle)


DEFAULTS = _yaml(ROLE, "defaults", "main.yml")


def settings(variables=None, **changes):
    """The role's conversion_shim_settings for these variables (the defaults otherwise), as vars/main.yml gives it."""
    merged = dict(DEFAULTS, **(variables or {}))
    result = dict((name[len(PREFIX):], value) for name, value in merged.items() if name.startswith(PREFIX))
    result.pop("certificate", None)  # the module's provider choice, not a setting of these functions
    for name in ("cluster_domain", "certificate_validity_days", "certificate_ca_validity_days",
                 "certificate_renew_before_days"):
        result.pop(name)
    result.update(path="/convert", check_mode=False, monitoring=bool(merged.get("private_capi_monitoring", False)),
                  leaderless_alert_seconds=merged.get("private_capi_monitoring_leaderless_alert_seconds"))
    result.update(changes)
    return result


def certificate(provider="generate", **extra):
    return dict({"changed": False, "provider": provider, "provider_reason": "asked for", "ca_bundle": "PEM",
                 "ca_bundle_base64": "UEVN"}, **extra)


def users(*names):
    return {"changed": False, "in_use": bool(names), "crds": [{"name": name, "deleting": False} for name in names]}


def deployment_read(generation=2, observed=2, updated=2, available=2, conditions=None):
    status = {"observedGeneration": observed, "updatedReplicas": updated, "availableReplicas": available}
    if conditions is not None:
        status["conditions"] = conditions
    return {"changed": False, "resources": [{"metadata": {"name": "capi-conversion-shim", "generation": generation},
                                             "status": status}]}


# -- the objects, against what the templates rendered

@pytest.mark.parametrize("case", sorted(GOLDEN))
def test_the_objects_are_what_the_templates_rendered(case):
    golden = GOLDEN[case]
    shim = settings(golden["variables"])
    answers = {"certificate": certificate(golden["provider"], tls_crt_sha256=golden["cert_sha256"])}
    pristine = (copy.deepcopy(shim), copy.deepcopy(answers))
    built = shim_manifests.manifests(shim, answers)
    assert (shim, answers) == pristine, "manifests changed its input"
    assert built["apply"] == golden["apply"]
    assert built["deployment"] == golden["deployment"]
    removed = shim_manifests.manifests(dict(shim, state="absent"), {"users": users()})
    assert removed["remove"] == golden["absent"]
    assert removed["apply"] == [] and removed["deployment"] is None


def test_names_and_labels_derive_from_the_name_namespace_and_secret():
    shim = settings(name="shim-x", namespace="ops", certificate_secret_name="tls-x")
    assert shim_manifests.names(shim) == {"config_map": "shim-x-kubeconfig", "ca_secret": "tls-x-ca",
                                          "service_ca_config_map": "shim-x-service-ca", "cluster_role": "shim-x-ops",
                                          "exporter": "shim-x-exporter", "exporter_cluster_role": "shim-x-exporter-ops",
                                          "prometheus_rule": "hypershift-private-capi"}
    built = shim_manifests.manifests(shim)
    assert built["names"] == shim_manifests.names(shim)
    assert built["labels"] == {"app.kubernetes.io/name": "capi-conversion-shim", "app.kubernetes.io/instance": "shim-x",
                               "app.kubernetes.io/component": "conversion-webhook",
                               "app.kubernetes.io/part-of": "hypershift-private-capi",
                               "app.kubernetes.io/managed-by": "hypershift.private_capi.conversion_shim"}


def test_the_objects_share_no_mapping_the_k8s_module_could_change_in_another():
    built = shim_manifests.manifests(settings())
    objects = built["apply"] + [built["deployment"]]
    labels = [obj["metadata"]["labels"] for obj in objects]
    assert len({id(item) for item in labels}) == len(labels)


@pytest.mark.parametrize("replicas, kinds, removed", [
    (1, ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Service"], ["PodDisruptionBudget"]),
    ("1", ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Service"], ["PodDisruptionBudget"]),
    (2, ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Service", "PodDisruptionBudget"], []),
])
def test_a_single_replica_has_no_pod_disruption_budget_and_removes_one_left_over(replicas, kinds, removed):
    built = shim_manifests.manifests(settings(replicas=replicas))
    assert [obj["kind"] for obj in built["apply"]] == kinds
    assert [obj["kind"] for obj in built["remove"]] == removed
    assert built["deployment"]["spec"]["replicas"] == int(replicas)
    if removed:
        assert built["remove"][0] == {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                      "metadata": {"name": "capi-conversion-shim", "namespace": "hypershift"}}


def test_the_service_is_annotated_for_openshifts_service_ca_only():
    for provider, annotated in (("openshift", True), ("generate", False), (None, False)):
        answers = {"certificate": certificate(provider)} if provider else {}
        service = [obj for obj in shim_manifests.manifests(settings(), answers)["apply"] if obj["kind"] == "Service"][0]
        assert ("annotations" in service["metadata"]) is annotated, provider
        if annotated:
            assert service["metadata"]["annotations"] == {
                "service.beta.openshift.io/serving-cert-secret-name": "capi-conversion-shim-tls"}


def test_the_metrics_port_off_leaves_no_metrics_port_or_flag():
    built = shim_manifests.manifests(settings(metrics_port=0))
    container = built["deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert [port["name"] for port in container["ports"]] == ["https"]
    assert not [arg for arg in container["args"] if arg.startswith("--metrics-listen")]
    service = [obj for obj in built["apply"] if obj["kind"] == "Service"][0]
    assert [port["name"] for port in service["spec"]["ports"]] == ["https"]


def test_the_extra_groups_are_sorted_by_group_and_the_extra_args_come_last():
    args = shim_manifests.shim_args(settings(extra_groups={"b.example": "b.private", "A.example": "a.private"},
                                             extra_args=["--crd-ttl=120"]))
    assert args[-3:] == ["--extra-group=A.example=a.private", "--extra-group=b.example=b.private", "--crd-ttl=120"]
    assert shim_manifests.shim_args(settings(extra_groups={}, extra_args=[]))[-1] == "--metrics-listen=0.0.0.0:9090"


def test_the_pod_spec_carries_priority_class_node_selector_and_tolerations_only_when_set():
    pod = shim_manifests.deployment(settings(), "")["spec"]["template"]["spec"]
    assert not {"priorityClassName", "nodeSelector", "tolerations"} & set(pod)
    pod = shim_manifests.deployment(settings(priority_class_name="high", node_selector={"a": "b"},
                                             tolerations=[{"operator": "Exists"}]), "")["spec"]["template"]["spec"]
    assert (pod["priorityClassName"], pod["nodeSelector"], pod["tolerations"]) == ("high", {"a": "b"},
                                                                                   [{"operator": "Exists"}])


# -- the serving certificate's hash in the Pod template

def test_the_certificate_hash_comes_from_the_module_else_from_the_service_ca_secret_else_is_empty():
    pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    secret = {"resources": [{"data": {"tls.crt": base64.b64encode(pem).decode()}}]}
    answers = {"certificate": certificate("openshift"), "service_ca_secret": secret}
    assert shim_manifests.cert_sha256(shim_manifests._answers(answers)) == hashlib.sha256(pem).hexdigest()
    answers["certificate"]["tls_crt_sha256"] = "from-the-module"
    assert shim_manifests.cert_sha256(shim_manifests._answers(answers)) == "from-the-module"
    skipped = {"certificate": certificate("openshift"), "service_ca_secret": {"skipped": True}}
    assert shim_manifests.cert_sha256(shim_manifests._answers(skipped)) == ""
    built = shim_manifests.manifests(settings(), {"certificate": certificate("openshift"), "service_ca_secret": secret})
    annotations = built["deployment"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"hypershift.openshift.io/serving-cert-sha256": hashlib.sha256(pem).hexdigest()}


# -- state=absent: what goes, and when

@pytest.mark.parametrize("answers, goes", [({"users": users()}, True), ({"users": users("machines.x")}, False),
                                           ({}, False), ({"users": {"skipped": True}}, False)])
def test_absent_removes_everything_only_once_the_module_answered_that_no_crd_converts_through_it(answers, goes):
    removed = shim_manifests.manifests(settings(state="absent"), answers)["remove"]
    assert (removed == shim_manifests.made_objects(settings())) is goes
    assert bool(removed) is goes


def test_made_objects_go_deployment_first_and_rbac_last():
    kinds = [obj["kind"] for obj in shim_manifests.made_objects(settings())]
    assert kinds == ["Deployment", "PodDisruptionBudget", "Service", "ConfigMap", "ConfigMap", "Secret", "Secret",
                     "ServiceAccount", "ClusterRoleBinding", "ClusterRole"]


# -- settings

@pytest.mark.parametrize("changes", [dict(namespace=""), dict(replicas=0), dict(replicas="none"), dict(port=0),
                                     dict(port=9090, metrics_port=9090), dict(port="9090", metrics_port=9090),
                                     dict(image="quay.io/hypershift/capi-proxy:latest")])
def test_bad_settings_are_one_message_naming_every_variable(changes):
    problem = shim_manifests.settings_problem(settings(**changes))
    assert problem.startswith("conversion_shim needs private_capi_shim_namespace (got '")
    assert problem.endswith("fix those variables.")
    for value in changes.values():
        assert "%s" % value in problem
    outcome = shim_manifests.outcome(settings(**changes))
    assert outcome == dict(settings_problem=problem, serving_secret_problem="", rollout_problem="", refused=False,
                           stays="", result={})
    with pytest.raises(shim_manifests.ShimSettingsError) as raised:
        shim_manifests.manifests(settings(**changes))
    assert str(raised.value) == problem


def test_missing_settings_and_an_unknown_state_are_named():
    shim = settings()
    del shim["image"], shim["check_mode"]
    assert shim_manifests.settings_problem(shim).startswith("the conversion_shim settings lack image, check_mode")
    assert "private_capi_shim_state present or absent (got 'gone')" in shim_manifests.settings_problem(
        settings(state="gone"))
    assert shim_manifests.settings_problem(settings()) == ""


def test_answers_that_are_not_mappings_are_refused():
    with pytest.raises(shim_manifests.ShimSettingsError, match="the answers certificate, users must be"):
        shim_manifests.manifests(settings(), {"certificate": "x", "users": [1]})


# -- the outcome

def test_present_with_every_answer_fine_has_no_problem_and_says_where_the_shim_answers():
    answers = {"certificate": certificate("generate"), "service_ca_secret": {"skipped": True},
               "rollout": deployment_read()}
    outcome = shim_manifests.outcome(settings(service_port="443"), answers)
    assert outcome == dict(settings_problem="", serving_secret_problem="", rollout_problem="", refused=False, stays="",
                           result={"state": "present", "provider": "generate", "provider_reason": "asked for",
                                   "namespace": "hypershift", "service_name": "capi-conversion-webhook-shim",
                                   "service_port": 443, "service_path": "/convert", "ca_bundle": "PEM",
                                   "ca_bundle_base64": "UEVN", "deployment": "capi-conversion-shim", "in_use_by": []})


def test_the_service_ca_issuing_no_secret_stops_the_role_naming_it_except_in_check_mode_or_with_another_issuer():
    answers = {"certificate": certificate("openshift"),
               "service_ca_secret": {"resources": [], "msg": "timed out"}}
    problem = shim_manifests.outcome(settings(wait_timeout=120), answers)["serving_secret_problem"]
    assert problem == (
        "Secret hypershift/capi-conversion-shim-tls does not exist 120 s after Service hypershift/"
        "capi-conversion-webhook-shim asked OpenShift's service CA for it (annotation service.beta.openshift.io/"
        "serving-cert-secret-name). Check the service CA (`oc get clusteroperator service-ca`, `oc -n hypershift "
        "describe service capi-conversion-webhook-shim`), or set private_capi_shim_certificate=generate. (timed out)")
    assert "(no error)" in shim_manifests.outcome(settings(), {"certificate": certificate("openshift"),
                                                               "service_ca_secret": {"resources": []}})[
        "serving_secret_problem"]
    assert shim_manifests.outcome(settings(check_mode=True), answers)["serving_secret_problem"] == ""
    assert shim_manifests.outcome(settings(), dict(answers, certificate=certificate()))["serving_secret_problem"] == ""
    found = dict(answers, service_ca_secret={"resources": [{"data": {"tls.crt": ""}}]})
    assert shim_manifests.outcome(settings(), found)["serving_secret_problem"] == ""


@pytest.mark.parametrize("read", [
    deployment_read(observed=1), deployment_read(updated=1), deployment_read(available=1),
    {"resources": [], "msg": "timed out"}, {"resources": [{"metadata": {"generation": 1}}]},
])
def test_a_deployment_not_updated_and_available_in_every_replica_stops_the_role(read):
    problem = shim_manifests.outcome(settings(), {"certificate": certificate(), "rollout": read})["rollout_problem"]
    assert problem.startswith("Deployment hypershift/capi-conversion-shim is not Available after 300 s (")
    assert "The private CRDs were not changed. (%s)" % read.get("msg", "no error") in problem
    assert shim_manifests.outcome(settings(check_mode=True), {"rollout": read})["rollout_problem"] == ""


def test_the_rollout_problem_says_what_the_deployment_reports():
    read = deployment_read(updated=1, available=1, conditions=[
        {"type": "Available", "message": "Deployment does not have minimum availability."},
        {"type": "Progressing", "message": "ReplicaSet is progressing."}])
    problem = shim_manifests.outcome(settings(replicas="2"), {"rollout": read})["rollout_problem"]
    assert problem == (
        "Deployment hypershift/capi-conversion-shim is not Available after 300 s (1 of 2 replicas available, 1 "
        "updated; conditions Available: Deployment does not have minimum availability.; Progressing: ReplicaSet is "
        "progressing.). Check `kubectl -n hypershift get pods -l app.kubernetes.io/instance=capi-conversion-shim` and "
        "`kubectl -n hypershift describe deployment capi-conversion-shim`: the image quay.io/hypershift/capi-proxy:"
        "1.0.0 must be pullable, the Secret capi-conversion-shim-tls must exist, and the probes on port 9443 must "
        "answer (the Pods' logs say why not). The private CRDs were not changed. (no error)")


def test_absent_refuses_while_crds_convert_through_the_service_unless_told_to_keep_it():
    answers = {"users": users("clusters.cluster.hypershift.openshift.io", "machines.cluster.hypershift.openshift.io")}
    refused = shim_manifests.outcome(settings(state="absent"), answers)
    assert refused["refused"] is True
    assert refused["stays"].startswith(
        "The conversion shim stays: CRDs clusters.cluster.hypershift.openshift.io, machines.cluster.hypershift."
        "openshift.io convert through Service hypershift/capi-conversion-webhook-shim, and without it")
    assert refused["stays"].endswith("then re-run. Nothing was removed.")
    kept = shim_manifests.outcome(settings(state="absent", keep_when_in_use=True), answers)
    assert kept["refused"] is False
    assert kept["stays"] == (
        "The conversion shim in hypershift stays: 2 CRDs convert through Service capi-conversion-webhook-shim "
        "(clusters.cluster.hypershift.openshift.io, machines.cluster.hypershift.openshift.io). It goes once they do "
        "(docs/rollback.md).")
    assert kept["result"] == {"state": "kept", "namespace": "hypershift", "service_name": "capi-conversion-webhook-shim",
                              "service_port": 443, "service_path": "/convert", "deployment": "capi-conversion-shim",
                              "in_use_by": ["clusters.cluster.hypershift.openshift.io",
                                            "machines.cluster.hypershift.openshift.io"]}
    assert shim_manifests.outcome(settings(state="absent", keep_when_in_use="true"), answers)["settings_problem"] == (
        "the conversion_shim settings keep_when_in_use must be true or false (vars/main.yml passes the variables "
        "through the bool filter)")


def test_absent_with_no_crd_converting_through_the_service_says_nothing_and_the_shim_is_gone():
    outcome = shim_manifests.outcome(settings(state="absent"), {"users": users(), "rollout": deployment_read(observed=1)})
    assert (outcome["refused"], outcome["stays"], outcome["rollout_problem"]) == (False, "", "")
    assert outcome["result"]["state"] == "absent" and outcome["result"]["in_use_by"] == []


# -- the filters, their docs and the role's wiring

FILTERS = conversion_shim.FilterModule().filters()


def test_the_filters_return_what_the_functions_do():
    answers = {"certificate": certificate("openshift", tls_crt_sha256="abc")}
    assert FILTERS["conversion_shim_manifests"](settings(), answers) == shim_manifests.manifests(settings(), answers)
    assert FILTERS["conversion_shim_outcome"](settings()) == shim_manifests.outcome(settings())


def test_a_bad_answer_is_a_filter_error_naming_the_filter():
    with pytest.raises(AnsibleFilterError, match="conversion_shim_outcome: the answers rollout must be"):
        FILTERS["conversion_shim_outcome"](settings(), {"rollout": "x"})


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_each_filter_is_documented_beside_it(name):
    # its options against its signature: tests/unit/filters/test_filter_docs.py, for every filter
    doc = _yaml(REPO_ROOT, "plugins", "filter", name + ".yml")
    assert doc["DOCUMENTATION"]["name"] == name and doc["DOCUMENTATION"]["version_added"] == "1.0.0"
    assert doc["RETURN"]["_value"]["type"] == "dict"


def test_the_role_gives_every_setting_and_answer_and_renders_no_template():
    role_vars = _yaml(ROLE, "vars", "main.yml")
    assert tuple(role_vars["conversion_shim_settings"]) == shim_manifests.SETTINGS
    assert tuple(role_vars["conversion_shim_answers"]) == shim_manifests.ANSWERS
    assert role_vars["conversion_shim_path"] == "/convert"
    for name, value in role_vars["conversion_shim_settings"].items():
        if name not in ("path", "check_mode", "monitoring", "leaderless_alert_seconds"):
            assert PREFIX + name in value, name
    assert "private_capi_monitoring" in role_vars["conversion_shim_settings"]["monitoring"]
    assert not os.path.exists(os.path.join(ROLE, "templates"))
    registered = set()
    for task_file in os.listdir(os.path.join(ROLE, "tasks")):
        registered.update(task["register"] for task in _yaml(ROLE, "tasks", task_file) if "register" in task)
    # the exporter's Deployment and the PrometheusRule come from one k8s_lists run, in that order
    together = ("exporter", "monitoring")
    assert registered == {"conversion_shim_" + answer for answer in shim_manifests.ANSWERS
                          if answer not in together} | {"conversion_shim_reads"}
    for index, answer in enumerate(together):
        assert "conversion_shim_reads.results" in role_vars["conversion_shim_answers"][answer]
        assert role_vars["conversion_shim_answers"][answer].endswith("[%d] }}" % index), answer


# -- private_capi_monitoring: the fleet exporter, its alerts and its scrape

def _kinds(objects):
    return [(obj["kind"], obj["metadata"]["name"]) for obj in objects]


def test_monitoring_off_adds_nothing_and_removes_nothing_it_did_not_make():
    built = shim_manifests.manifests(settings(), {"monitoring": {"api_found": True, "resources": []}})
    assert not [obj for obj in built["apply"] if "exporter" in obj["metadata"]["name"]]
    assert built["remove"] == []


def test_monitoring_adds_the_exporter_apart_from_the_shim_and_the_monitoring_objects_where_served():
    served = shim_manifests.manifests(settings(monitoring=True), {"monitoring": {"api_found": True}})
    exporter = [obj for obj in served["apply"] if obj["metadata"]["name"].startswith("capi-conversion-shim-exporter")]
    assert _kinds(exporter) == [("ServiceAccount", "capi-conversion-shim-exporter"),
                                ("ClusterRole", "capi-conversion-shim-exporter-hypershift"),
                                ("ClusterRoleBinding", "capi-conversion-shim-exporter-hypershift"),
                                ("Service", "capi-conversion-shim-exporter"),
                                ("Deployment", "capi-conversion-shim-exporter"),
                                ("ServiceMonitor", "capi-conversion-shim-exporter")]
    assert ("PrometheusRule", "hypershift-private-capi") in _kinds(served["apply"])
    pods = [obj for obj in served["apply"] if obj["kind"] == "PodMonitor"][0]
    assert pods["metadata"]["name"] == "capi-proxy-sidecars" and pods["spec"]["namespaceSelector"] == {"any": True}
    assert pods["spec"]["podMetricsEndpoints"][0]["port"] == sidecar.METRICS_PORT_NAME
    role = [obj for obj in exporter if obj["kind"] == "ClusterRole"][0]
    assert role["rules"] == [{"apiGroups": ["hypershift.openshift.io"], "resources": ["hostedclusters"],
                              "verbs": ["list", "watch"]}]
    deployment = [obj for obj in exporter if obj["kind"] == "Deployment"][0]
    shim_selector = served["deployment"]["spec"]["selector"]["matchLabels"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert not all(pod_labels.get(key) == value for key, value in shim_selector.items()), "the shim's Service would select it"
    assert deployment["spec"]["replicas"] == 1
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][0] == "exporter" and container["image"] == settings()["image"]
    service = [obj for obj in exporter if obj["kind"] == "Service"][0]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"][0]["name"] == "metrics"
    monitor = [obj for obj in served["apply"] if obj["kind"] == "ServiceMonitor"][0]
    assert monitor["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    unserved = shim_manifests.manifests(settings(monitoring=True), {"monitoring": {"api_found": False}})
    assert not {"PrometheusRule", "ServiceMonitor", "PodMonitor"} & {obj["kind"] for obj in unserved["apply"]}
    assert ("Deployment", "capi-conversion-shim-exporter") in _kinds(unserved["apply"])


def test_monitoring_turned_off_removes_the_exporter_it_finds_deployment_first():
    answers = {"exporter": {"resources": [{"kind": "Deployment"}]}, "monitoring": {"api_found": True}}
    removed = shim_manifests.manifests(settings(), answers)["remove"]
    assert _kinds(removed) == [("PrometheusRule", "hypershift-private-capi"),
                               ("ServiceMonitor", "capi-conversion-shim-exporter"),
                               ("PodMonitor", "capi-proxy-sidecars"),
                               ("Deployment", "capi-conversion-shim-exporter"),
                               ("Service", "capi-conversion-shim-exporter"),
                               ("ClusterRoleBinding", "capi-conversion-shim-exporter-hypershift"),
                               ("ClusterRole", "capi-conversion-shim-exporter-hypershift"),
                               ("ServiceAccount", "capi-conversion-shim-exporter")]
    absent = shim_manifests.manifests(settings(state="absent"), dict(answers, users=users()))["remove"]
    assert _kinds(absent)[-len(removed):] == _kinds(removed)


def test_monitoring_must_be_a_boolean():
    assert "monitoring" in shim_manifests.settings_problem(settings(monitoring="yes"))


def test_the_leaderless_alert_threshold_is_the_roles_variable_and_a_bad_one_is_refused():
    rule = shim_manifests.monitoring_settings(settings(leaderless_alert_seconds="90"))
    assert rule["leaderless_alert_seconds"] == 90.0
    assert "leaderless_alert_seconds" not in shim_manifests.monitoring_settings(settings(leaderless_alert_seconds=None))
    for bad in ("-1", "soon", float("inf")):
        with pytest.raises(shim_manifests.ShimSettingsError, match="private_capi_monitoring_leaderless_alert_seconds"):
            shim_manifests.monitoring_settings(settings(leaderless_alert_seconds=bad))
