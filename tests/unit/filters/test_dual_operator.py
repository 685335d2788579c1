"""What the dual_operator role does (plugins/module_utils/filters/dual_operator.py and the filters dual_operator_plan and
dual_operator_cleanup): the cases its Jinja templates (plan.json.j2, blockers.json.j2) covered, as pure functions."""
import copy
import json
import os

import pytest
import yaml

from ansible_collections.hypershift.private_capi.plugins.filter import dual_operator as dual_operator_filter
from ansible_collections.hypershift.private_capi.plugins.module_utils.filters import dual_operator
from ansible_collections.hypershift.private_capi.plugins.module_utils.merge_patch import merge_patch
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine
from ansible_collections.hypershift.private_capi.plugins.module_utils import contract

ROLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "dual_operator")
NS = "hypershift"
SETTINGS = {"state": "present", "namespace": NS, "name": "operator", "legacy_name": "operator-legacy", "container": "",
            "new_args": ["--private-capi-types"], "legacy_args": ["--hostedcluster-scope=legacy"],
            "leader_election_flag": "--leader-election-id", "lease_name": "hypershift-operator-leader-elect",
            "legacy_lease_name": "hypershift-operator-legacy-leader-elect", "mark_legacy": True, "proxy": True,
            "proxy_image": "quay.io/hypershift/capi-proxy:1.0.0", "proxy_port": 8080, "proxy_metrics_port": 9090,
            "proxy_extra_args": [], "wait_timeout": 120, "cleanup_fail_when_blocked": False, "check_mode": False}
BASE_ARGS = ["run", "--namespace=$(MY_NAMESPACE)", "--metrics-addr=:9000"]
ORIGINAL, HASH = contract.OPERATOR_ORIGINAL_ANNOTATION, contract.DUAL_OPERATOR_HASH_ANNOTATION
# {{ {'b': 1, 'a': ['\u00e9']} | to_json(sort_keys=true) | hash('sha256') }} as Ansible 2.19 renders it
TEMPLATE_DIGEST = "9ce73ae9f746813e96560635d5fb7453ed7e37aa196f1432040ca2e87e628979"


def settings(**changes):
    return dict(SETTINGS, **changes)


def operator(name="operator", containers=None, annotations=None):
    """Deployment `operator` as `hypershift install` makes it."""
    labels = {"name": name, "hypershift.openshift.io/operator-component": "operator"}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS, "labels": dict(labels), "annotations": dict(annotations or {})},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"name": name}},
                     "template": {"metadata": {"labels": dict(labels)},
                                  "spec": {"serviceAccountName": "operator", "containers": containers if containers is not None else [
                                      {"name": "operator", "image": "quay.io/hypershift/hypershift-operator:4.22",
                                       "args": list(BASE_ARGS), "env": [{"name": "MY_NAMESPACE", "value": NS}]}]}}}}


def hostedclusters(*states):
    return [{"namespace": "clusters", "name": "hc-%02d" % index, "state": state} for index, state in enumerate(states, 1)]


def installed(plan, source):
    """The operator after the role's patch and the proxy role's sidecar (KUBECONFIG in the main container)."""
    after = merge_patch(copy.deepcopy(source), {"metadata": plan["operator_patch"]["metadata"]})
    main = next(c for c in after["spec"]["template"]["spec"]["containers"] if c["name"] == plan["main_container"])
    main["args"] = plan["operator_patch"]["spec"]["template"]["spec"]["containers"][0]["args"]
    main["env"] = main.get("env", []) + [{"name": "KUBECONFIG", "value": "/etc/capi-proxy/kubeconfig"}]
    after["spec"]["template"]["spec"]["containers"].append({"name": "kube-apiserver-proxy", "image": "proxy"})
    return after


def converged():
    """(Deployments, HostedClusters) after a first run on an operator with one new and one legacy HostedCluster."""
    source = operator()
    first = dual_operator.present_plan([source], hostedclusters("new", "legacy"), SETTINGS)
    return [installed(first, source), first["legacy_object"]], hostedclusters("legacy", "legacy")


# ---- present: the first run


def test_first_run_marks_the_new_clusters_derives_the_legacy_operator_and_patches_the_operator():
    clusters = hostedclusters("new", "legacy", "migrated", "in-progress", "failed", "invalid", "new")
    plan = dual_operator.present_plan([operator()], clusters, SETTINGS)
    assert plan["errors"] == [] and plan["main_container"] == "operator" and not plan["installed"]
    assert plan["mark"] == ["clusters/hc-01", "clusters/hc-07"] and plan["left_new"] == []
    assert plan["need_legacy"] == ["clusters/hc-02", "clusters/hc-04", "clusters/hc-05", "clusters/hc-06",
                                   "clusters/hc-01", "clusters/hc-07"]
    patch = plan["operator_patch"]
    assert patch["metadata"]["name"] == "operator" and patch["metadata"]["namespace"] == NS
    assert patch["spec"]["template"]["spec"]["containers"] == [
        {"name": "operator", "args": BASE_ARGS + ["--private-capi-types", "--leader-election-id=hypershift-operator-leader-elect"]}]
    record = json.loads(patch["metadata"]["annotations"][ORIGINAL])
    assert record == {"labels": operator()["metadata"]["labels"], "spec": operator()["spec"]}
    assert plan["proxy_needed"] and not plan["legacy_exists"] and plan["legacy_apply"]
    legacy = plan["legacy_object"]
    # every label value naming the operator is renamed, so neither Deployment selects the other's pods
    assert legacy["metadata"]["name"] == "operator-legacy" and legacy["metadata"]["labels"] == {
        "name": "operator-legacy", "hypershift.openshift.io/operator-component": "operator-legacy",
        "hypershift.openshift.io/capi-operator-scope": "legacy", "app.kubernetes.io/managed-by": dual_operator.MANAGED_BY}
    assert legacy["spec"]["selector"]["matchLabels"] == {"name": "operator-legacy", contract.OPERATOR_SCOPE_LABEL: "legacy"}
    assert legacy["spec"]["template"]["metadata"]["labels"]["name"] == "operator-legacy"
    assert legacy["spec"]["template"]["spec"]["containers"][0]["args"] == BASE_ARGS + [
        "--hostedcluster-scope=legacy", "--leader-election-id=hypershift-operator-legacy-leader-elect"]
    assert legacy["spec"]["template"]["spec"]["serviceAccountName"] == "operator"
    assert plan["result"] == {"marked_legacy": plan["mark"], "legacy_needed_by": plan["need_legacy"], "left_to_new_operator": [],
                              "legacy_operator": "created", "new_operator": "changed"}
    assert plan["summary"] == ("hypershift/operator: new operator (changed); operator-legacy: created; 2 HostedCluster(s) "
                               "marked legacy: clusters/hc-01, clusters/hc-07; 6 reconciled by the legacy operator")
    assert (plan["wait"], plan["wait_timeout"]) == (True, 120)


def test_the_plan_never_changes_its_input():
    source = operator()
    before = copy.deepcopy(source)
    dual_operator.present_plan([source], hostedclusters("legacy"), SETTINGS)
    assert source == before


def test_the_hashes_are_those_the_templates_wrote():
    # sha256 of Ansible's to_json(sort_keys=true): clusters converged before the move to Python stay converged
    plan = dual_operator.present_plan([operator()], hostedclusters("legacy"), SETTINGS)
    args = plan["operator_patch"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert plan["operator_patch"]["metadata"]["annotations"][HASH] == dual_operator._digest(
        {"args": args, "proxy": {"image": SETTINGS["proxy_image"], "port": 8080, "metrics_port": 9090, "extra_args": []}})
    assert dual_operator._digest({"b": 1, "a": ["\u00e9"]}) == TEMPLATE_DIGEST


def test_no_hostedcluster_needing_it_means_no_legacy_operator():
    plan = dual_operator.present_plan([operator()], hostedclusters("migrated"), SETTINGS)
    assert plan["errors"] == [] and plan["legacy_object"] is None and not plan["legacy_apply"]
    assert plan["result"]["legacy_operator"] == "absent"
    assert "operator-legacy: not needed, not created; 0 HostedCluster(s) marked legacy; 0 reconciled" in plan["summary"]


def test_check_mode_is_said():
    plan = dual_operator.present_plan([operator()], [], settings(check_mode=True))
    assert plan["summary"].endswith(" (check mode: nothing was written)")


# ---- present: converged, drifted, after a rollback


def test_a_converged_operator_needs_nothing():
    deployments, clusters = converged()
    plan = dual_operator.present_plan(deployments, clusters, SETTINGS)
    assert plan["errors"] == [] and plan["installed"] and plan["mark"] == []
    assert plan["operator_patch"] is None and not plan["proxy_needed"] and plan["legacy_exists"] and not plan["legacy_apply"]
    assert plan["result"]["legacy_operator"] == "unchanged" and plan["result"]["new_operator"] == "unchanged"


@pytest.mark.parametrize("drift", ["args", "hash", "sidecar"])
def test_a_drifted_legacy_operator_is_applied_again(drift):
    deployments, clusters = converged()
    legacy = deployments[1]
    if drift == "args":
        legacy["spec"]["template"]["spec"]["containers"][0]["args"].remove("--hostedcluster-scope=legacy")
    elif drift == "hash":
        legacy["metadata"]["annotations"][HASH] = "other"
    else:
        legacy["spec"]["template"]["spec"]["containers"].append({"name": "kube-apiserver-proxy"})
    plan = dual_operator.present_plan(deployments, clusters, SETTINGS)
    assert plan["legacy_apply"] and plan["result"]["legacy_operator"] == "updated"
    assert plan["legacy_object"] == converged()[0][1]


def test_after_a_rollback_the_legacy_operator_is_made_again_from_the_record_and_new_clusters_are_left_alone():
    deployments, _clusters = converged()
    plan = dual_operator.present_plan(deployments[:1], hostedclusters("legacy", "new", "migrated"), SETTINGS)
    assert plan["errors"] == [] and plan["installed"] and plan["mark"] == [] and plan["left_new"] == ["clusters/hc-02"]
    assert plan["legacy_apply"] and plan["legacy_object"] == deployments[1]
    assert plan["result"]["legacy_operator"] == "created" and plan["operator_patch"] is None
    assert plan["summary"].endswith("1 reconciled by the legacy operator; left to the new operator (created after it "
                                    "was installed): clusters/hc-02")


def test_an_operator_already_new_without_record_or_legacy_operator_cannot_derive_it():
    source = operator()
    source["spec"]["template"]["spec"]["containers"][0]["args"].append("--private-capi-types")
    plan = dual_operator.present_plan([source], hostedclusters("legacy", "failed"), SETTINGS)
    assert plan["installed"] and plan["errors"] == [
        "Deployment hypershift/operator already runs with --private-capi-types but has no annotation %s and "
        "hypershift/operator-legacy does not exist, so the legacy operator cannot be derived; 2 HostedCluster(s) need it "
        "(hc-01, hc-02): re-run `hypershift install --private-capi-types` or create operator-legacy by hand" % ORIGINAL]
    # with the legacy operator there (made by hand), nothing is derived and nothing fails
    plan = dual_operator.present_plan([source, operator("operator-legacy")], hostedclusters("legacy"), SETTINGS)
    assert plan["errors"] == [] and plan["legacy_object"] is None and not plan["legacy_apply"]
    assert plan["result"]["legacy_operator"] == "unchanged"


def test_an_upgraded_operator_keeps_its_new_args_and_is_scoped_again():
    deployments, clusters = converged()
    main = deployments[0]["spec"]["template"]["spec"]["containers"][0]
    main["args"] = ["run", "--new-flag"] + [a for a in main["args"] if a != "run"]
    main["args"].remove("--leader-election-id=hypershift-operator-leader-elect")
    plan = dual_operator.present_plan(deployments, clusters, SETTINGS)
    assert plan["operator_patch"]["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "run", "--new-flag", "--namespace=$(MY_NAMESPACE)", "--metrics-addr=:9000", "--private-capi-types",
        "--leader-election-id=hypershift-operator-leader-elect"]
    # the record stays the original's (written again as it was, sorted), never the upgraded spec
    assert json.loads(plan["operator_patch"]["metadata"]["annotations"][ORIGINAL]) == json.loads(
        deployments[0]["metadata"]["annotations"][ORIGINAL])


def test_changed_proxy_settings_change_the_hash_and_need_the_proxy_again():
    deployments, clusters = converged()
    plan = dual_operator.present_plan(deployments, clusters, settings(proxy_image="quay.io/other:1"))
    assert plan["operator_patch"] is not None and plan["proxy_needed"]


def test_without_the_proxy_the_sidecar_is_not_needed():
    plan = dual_operator.present_plan([operator()], hostedclusters("legacy"), settings(proxy=False))
    assert plan["operator_patch"] is not None and not plan["proxy_needed"]
    assert plan["operator_patch"]["metadata"]["annotations"][HASH] == dual_operator._digest(
        {"args": BASE_ARGS + ["--private-capi-types", "--leader-election-id=hypershift-operator-leader-elect"], "proxy": {}})


def test_a_missing_kubeconfig_needs_the_proxy_again():
    deployments, clusters = converged()
    deployments[0]["spec"]["template"]["spec"]["containers"][0]["env"] = []
    plan = dual_operator.present_plan(deployments, clusters, SETTINGS)
    assert plan["operator_patch"] is None and plan["proxy_needed"] and plan["result"]["new_operator"] == "changed"


def test_without_a_leader_election_flag_no_lease_argument_is_added():
    plan = dual_operator.present_plan([operator()], hostedclusters("legacy"), settings(leader_election_flag=""))
    assert plan["operator_patch"]["spec"]["template"]["spec"]["containers"][0]["args"] == BASE_ARGS + ["--private-capi-types"]
    assert plan["legacy_object"]["spec"]["template"]["spec"]["containers"][0]["args"] == BASE_ARGS + ["--hostedcluster-scope=legacy"]


def test_managed_and_lease_arguments_already_there_are_replaced_not_repeated():
    source = operator()
    source["spec"]["template"]["spec"]["containers"][0]["args"] += [
        "--hostedcluster-scope=legacy", "--leader-election-id", "--leader-election-id=old"]
    plan = dual_operator.present_plan([source], hostedclusters("legacy"), SETTINGS)
    assert plan["operator_patch"]["spec"]["template"]["spec"]["containers"][0]["args"] == BASE_ARGS + [
        "--private-capi-types", "--leader-election-id=hypershift-operator-leader-elect"]


def test_with_marking_off_the_new_clusters_are_left_to_the_new_operator():
    plan = dual_operator.present_plan([operator()], hostedclusters("new"), settings(mark_legacy=False))
    assert plan["mark"] == [] and plan["left_new"] == ["clusters/hc-01"] and plan["need_legacy"] == []
    assert plan["legacy_object"] is None


def test_the_proxy_sidecar_is_left_out_of_the_legacy_operator():
    source = operator(containers=[{"name": "operator", "args": ["run"]}, {"name": "kube-apiserver-proxy"},
                                  {"name": "metrics", "image": "rbac-proxy"}])
    plan = dual_operator.present_plan([source], hostedclusters("legacy"), SETTINGS)
    assert [c["name"] for c in plan["legacy_object"]["spec"]["template"]["spec"]["containers"]] == ["operator", "metrics"]


# ---- present: the main container and what stops the role


@pytest.mark.parametrize("containers, container, main", [
    ([{"name": "operator"}], "", "operator"),
    ([{"name": "manager"}], "", "manager"),  # the only one
    ([{"name": "manager"}, {"name": "kube-apiserver-proxy"}], "", "manager"),  # the sidecar never counts
    ([{"name": "operator"}, {"name": "metrics"}], "", "operator"),
    ([{"name": "manager"}, {"name": "metrics"}], "manager", "manager"),
])
def test_the_main_container(containers, container, main):
    plan = dual_operator.present_plan([operator(containers=containers)], [], settings(container=container))
    assert plan["errors"] == [] and plan["main_container"] == main


@pytest.mark.parametrize("containers, container, wanted", [
    ([{"name": "manager"}, {"name": "metrics"}], "", "one named operator or a single container"),
    ([{"name": "manager"}], "other", "other"),
    ([{"name": "kube-apiserver-proxy"}], "", "one named operator or a single container"),
])
def test_an_unknown_main_container_stops_the_role(containers, container, wanted):
    plan = dual_operator.present_plan([operator(containers=containers)], hostedclusters("new"), settings(container=container))
    found = ", ".join(c["name"] for c in containers if c["name"] != "kube-apiserver-proxy")
    assert plan["errors"] == ["Deployment hypershift/operator: cannot tell the operator container (wanted %s, found %s); "
                              "set private_capi_dual_operator_container" % (wanted, found)]
    assert plan["operator_patch"] is None and plan["legacy_object"] is None


def test_a_missing_operator_stops_the_role_naming_it():
    plan = dual_operator.present_plan([operator("other")], hostedclusters("new"), settings(name="hypershift-operator"))
    assert plan["errors"] == ["Deployment hypershift/hypershift-operator not found (expected the HyperShift operator that "
                              "`hypershift install` creates); install HyperShift first or set "
                              "private_capi_dual_operator_namespace/_name"]


def test_a_broken_record_stops_the_role_naming_it():
    plan = dual_operator.present_plan([operator(annotations={ORIGINAL: "{"})], hostedclusters("legacy"), SETTINGS)
    assert len(plan["errors"]) == 1 and "annotation %s is not a JSON object" % ORIGINAL in plan["errors"][0]
    assert plan["legacy_object"] is None


@pytest.mark.parametrize("changes", [
    {"state": "other"}, {"namespace": ""}, {"name": ""}, {"legacy_name": ""}, {"legacy_name": "operator"},
    {"legacy_lease_name": "hypershift-operator-leader-elect"}, {"legacy_args": ["--private-capi-types"]},
])
def test_settings_that_cannot_work_stop_both_states(changes):
    wrong = settings(**changes)
    message = ("dual_operator needs private_capi_dual_operator_state present or cleanup (got '%s'), a namespace (got '%s'), "
               "two different Deployment names (got '%s' and '%s'), two different leases (got '%s' and '%s': the two "
               "operators must never share a leader election) and no argument in both new_args and legacy_args."
               % (wrong["state"], wrong["namespace"], wrong["name"], wrong["legacy_name"], wrong["lease_name"],
                  wrong["legacy_lease_name"]))
    assert dual_operator.present_plan([operator()], hostedclusters("new"), wrong)["errors"] == [message]
    cleanup = dual_operator.cleanup_plan([], wrong)
    assert cleanup["errors"] == [message] and cleanup["message"] == message and cleanup["delete"] == []


def test_one_lease_is_fine_without_a_leader_election_flag():
    same = settings(leader_election_flag="", legacy_lease_name=SETTINGS["lease_name"])
    assert dual_operator.settings_problems(same) == []


def test_bad_ports_stop_the_role():
    plan = dual_operator.present_plan([operator()], [], settings(proxy_port="eighty", wait_timeout="0"))
    assert plan["errors"] == ["private_capi_dual_operator_proxy_port must be an integer, got 'eighty'"]
    assert plan["wait"] is False


@pytest.mark.parametrize("value, expected", [(True, True), ("yes", True), ("True", True), (1, True), ("1", True),
                                             (False, False), ("no", False), ("", False), (0, False), (None, False)])
def test_flags_read_like_the_bool_filter(value, expected):
    assert dual_operator.as_bool(value) is expected


# ---- cleanup


def hostedcluster(name, annotations=None, label=None):
    """The HostedCluster as migration_state's query reports it (the state machine judges its annotations)."""
    metadata = {"name": name, "namespace": "clusters", "annotations": annotations}
    if label:
        metadata["labels"] = {machine.STATE_LABEL: label}
    return machine.report({"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster", "metadata": metadata},
                          "2026-01-01T00:00:00Z")


@pytest.mark.parametrize("annotations, label, blocker", [
    ({machine.SCOPE_ANNOTATION: "legacy"}, None, "legacy"),
    (None, "legacy", "legacy"),
    ({machine.SCOPE_ANNOTATION: "legacy", machine.IN_PROGRESS_ANNOTATION: "true"}, "legacy", "in-progress"),
    (None, "in-progress", "in-progress"),
    ({machine.SCOPE_ANNOTATION: "legacy", machine.FAILED_ANNOTATION: "verify: count"}, None, "failed"),
    (None, "failed", "failed"),
    ({machine.IN_PROGRESS_ANNOTATION: "false"}, None, None),
    ({machine.FAILED_ANNOTATION: ""}, None, None),
    ({machine.SCOPE_ANNOTATION: "other"}, None, None),
    ({machine.PRIVATE_TYPES_ANNOTATION: "true"}, None, None),
    (None, None, None),
    ({machine.SCOPE_ANNOTATION: "legacy", machine.PRIVATE_TYPES_ANNOTATION: "true"}, None, "invalid"),  # to repair first
])
def test_which_hostedclusters_keep_the_legacy_operator(annotations, label, blocker):
    expected = "clusters/hc (%s)" % blocker if blocker else None
    assert dual_operator.hostedcluster_blocker(hostedcluster("hc", annotations, label)) == expected


def test_cleanup_refuses_while_clusters_need_the_legacy_operator():
    clusters = [hostedcluster("hc-01", {machine.SCOPE_ANNOTATION: "legacy"}), hostedcluster("hc-02"),
                hostedcluster("hc-03", label="failed")]
    plan = dual_operator.cleanup_plan(clusters, SETTINGS)
    assert plan["errors"] == [] and plan["delete"] == []
    assert plan["blockers"] == ["clusters/hc-01 (legacy)", "clusters/hc-03 (failed)"]
    assert plan["message"] == ("Not removing hypershift/operator-legacy: 2 HostedCluster(s) still need the legacy operator "
                               "(clusters/hc-01 (legacy), clusters/hc-03 (failed)); migrate them (or remediate the failed "
                               "ones) and run the cleanup again.")
    assert plan["result"] == {"legacy_needed_by": plan["blockers"], "legacy_operator": "kept"}


def test_cleanup_fails_while_clusters_need_the_legacy_operator_when_asked_to():
    plan = dual_operator.cleanup_plan([hostedcluster("hc-01", label="in-progress")], settings(cleanup_fail_when_blocked=True))
    assert plan["errors"] == [plan["message"]] == [
        "Cannot remove hypershift/operator-legacy: expected no HostedCluster legacy, in-progress or failed, found "
        "clusters/hc-01 (in-progress); migrate them (or remediate the failed ones) and run the cleanup again."]
    assert plan["delete"] == [] and plan["result"]["legacy_operator"] == "kept"


def test_cleanup_deletes_the_legacy_operator_and_its_lease_once_none_needs_it():
    plan = dual_operator.cleanup_plan([hostedcluster("hc-01")], settings(wait_timeout=0))
    assert plan["errors"] == [] and plan["message"] == "" and plan["blockers"] == []
    assert plan["delete"] == [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "operator-legacy", "namespace": NS}},
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
         "metadata": {"name": "hypershift-operator-legacy-leader-elect", "namespace": NS}}]
    assert (plan["wait"], plan["wait_timeout"]) == (False, 0)
    assert plan["result"] == {"legacy_needed_by": [], "legacy_operator": "removed"}


# ---- the role and the filters


def test_the_role_settings_are_the_functions():
    with open(os.path.join(ROLE, "vars", "main.yml")) as handle:
        role_vars = yaml.safe_load(handle)
    assert set(role_vars["dual_operator_settings"]) == set(dual_operator.SETTINGS)


def test_the_filters_call_the_pure_functions():
    filters = dual_operator_filter.FilterModule().filters()
    assert filters["dual_operator_plan"]([operator()], [], SETTINGS) == dual_operator.present_plan([operator()], [], SETTINGS)
    assert filters["dual_operator_cleanup"]([], SETTINGS) == dual_operator.cleanup_plan([], SETTINGS)
