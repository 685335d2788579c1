"""The one fleet selection (fleet/selection.py): candidates, label selectors, names, the plan and the batches."""

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.fleet import selection


def query(*entries):
    return {"hostedclusters": [dict({"hcp_namespace": "%s-%s" % (entry["namespace"], entry["name"])}, **entry)
                               for entry in entries]}


def row(name, state="legacy", namespace="clusters", mc="mc-1", labels=None, platform="KubeVirt"):
    return selection.candidates(query({"name": name, "namespace": namespace, "state": state, "platform": platform,
                                       "labels": labels or {}}), mc)[0]


LABELS = {"env": "prod", "tier": "a"}


@pytest.mark.parametrize("selector, expected", [
    ("", True), ("env=prod", True), ("env==prod", True), ("env=dev", False), ("env!=prod", False), ("env!=dev", True),
    ("missing!=x", True), ("env in (prod,dev)", True), ("env in (dev)", False), ("env notin (prod)", False),
    ("missing notin (a)", True), ("missing in (a)", False), ("tier", True), ("missing", False), ("!tier", False),
    ("!missing", True), ("env=prod,tier in (a, b)", True), ("env=prod, tier=b", False),
])
def test_label_selectors_are_judged_as_the_api_server_judges_them(selector, expected):
    assert selection.label_selector_matches(selector, LABELS) is expected


def test_a_label_selector_it_cannot_read_is_refused_with_the_forms_it_takes():
    with pytest.raises(selection.SelectionError, match="label selector 'env in prod': cannot read it"):
        selection.label_selector_matches("env in prod", LABELS)


def test_candidates_of_a_management_cluster_carry_where_they_live():
    found = selection.candidates(query({"name": "hc-1", "namespace": "clusters", "state": "legacy"}), "mc-1",
                                 kubeconfig="/k", context="c", crds_installed=True)
    assert found == [{"key": "mc-1/clusters/hc-1", "management_cluster": "mc-1", "namespace": "clusters",
                      "name": "hc-1", "hcp_namespace": "clusters-hc-1", "platform": "None", "state": "legacy",
                      "labels": {}, "kubeconfig": "/k", "context": "c", "crds_installed": True,
                      "inventory_host": False}]
    assert selection.candidates({}, "mc-1") == []


def plugin_row():
    host = {"inventory_hostname": "mc-1/clusters/hc-1", "private_capi_management_cluster": "mc-1",
            "private_capi_hc_namespace": "clusters", "private_capi_hc_name": "hc-1",
            "private_capi_hcp_namespace": "clusters-hc-1", "private_capi_platform": "KubeVirt",
            "private_capi_state": "legacy", "private_capi_hc_labels": {"env": "prod"}}
    return selection.host_candidates([host])[0]


def test_inventory_plugin_hosts_become_the_same_candidates():
    assert plugin_row() == dict(row("hc-1", labels={"env": "prod"}), crds_installed=False, inventory_host=True)


def test_plugin_hosts_put_the_crds_on_from_the_first_selected_of_each_management_cluster():
    hosts = [dict(plugin_row(), key=key, name=key[-4:], management_cluster=mc)
             for key, mc in (("mc-1/clusters/hc-2", "mc-1"), ("mc-1/clusters/hc-1", "mc-1"), ("mc-2/clusters/hc-3", "mc-2"))]
    result = selection.select(hosts + [row("hc-9", mc="mc-3")], {"plugin_crds": True})
    assert result["install_crds_on"] == ["mc-1/clusters/hc-1", "mc-2/clusters/hc-3"]
    assert [item["crds_installed"] for item in result["selected"]] == [True, True, True, False]
    assert selection.select(hosts, {"plugin_crds": False})["install_crds_on"] == []


@pytest.mark.parametrize("criteria, expected", [
    ({}, ["hc-1", "hc-2", "hc-4"]),  # migrated is not selected by default
    ({"states": ["migrated"]}, ["hc-3"]),
    ({"name_regex": "hc-[12]"}, ["hc-1", "hc-2"]),
    ({"name_regex": "1"}, []),  # matched from the start, as Jinja's match
    ({"names": ["hc-2", " "]}, ["hc-2"]),
    ({"namespace": "other"}, ["hc-4"]),
    ({"label_selector": "env=prod"}, ["hc-1"]),
])
def test_a_migration_selects_by_state_name_names_namespace_and_labels(criteria, expected):
    rows = [row("hc-2"), row("hc-1", labels={"env": "prod"}), row("hc-3", "migrated"), row("hc-4", "failed", "other")]
    result = selection.select(rows, dict(criteria, run_id="r"))
    assert [item["name"] for item in result["selected"]] == expected
    assert result["keys"] == [item["key"] for item in result["selected"]]
    assert len(result["selected"]) + len(result["not_selected"]) == 4


def test_the_migration_plan_names_the_selected_in_order_and_the_rest():
    rows = [row("hc-2"), row("hc-1"), row("hc-3", "migrated")]
    plan = selection.select(rows, {"run_id": "fleet-1", "canary": 1, "serial": 5, "check_mode": True})["plan"]
    assert plan[0] == "DRY RUN (check mode): nothing is changed - run fleet-1"
    assert plan[1] == "2 of 3 HostedClusters selected, batches [1, 5], failure budget 100%"
    assert plan[2].startswith("  1. mc-1/clusters/hc-1 [KubeVirt] legacy -> migrated: lock, pause")
    assert plan[3].startswith("  2. mc-1/clusters/hc-2")
    assert plan[4] == "  -  mc-1/clusters/hc-3 [KubeVirt] migrated: not selected"


def test_a_bad_name_pattern_is_refused():
    with pytest.raises(selection.SelectionError, match="private_capi_fleet_name_regex '\\[' is not a regular"):
        selection.select([row("hc-1")], {"name_regex": "["})


@pytest.mark.parametrize("canary, serial, expected", [(0, 1, 1), (None, None, 1), ("", "", 1), (2, 10, [2, 10]), ("0", "3", 3)])
def test_batches_put_a_canary_first_when_asked(canary, serial, expected):
    assert selection.batches(canary, serial) == expected


def test_batches_refuse_a_serial_below_one():
    with pytest.raises(selection.SelectionError, match="private_capi_fleet_serial 1 or more"):
        selection.batches(0, -1)


@pytest.mark.parametrize("value, expected", [
    (None, []), ("", []), ([], []), ("[hc-01,hc-02]", ["hc-01", "hc-02"]), ("hc-01", ["hc-01"]),
    ("['hc-01', \"ns/hc-02\", hc-01]", ["hc-01", "ns/hc-02"]), (["a", " b ", "", "a"], ["a", "b"]), ("[]", []),
])
def test_rollback_names_are_read_from_a_list_or_its_string_form(value, expected):
    assert selection.parse_names(value) == expected


ROLLBACK_ROWS = [row("hc-1", "migrated"), row("hc-1", "migrated", "other"), row("hc-1", "migrated", mc="mc-2"),
                 row("hc-2", "legacy")]


@pytest.mark.parametrize("names, expected", [
    (["clusters/hc-2"], ["mc-1/clusters/hc-2"]),
    (["hc-2", "hc-2"], ["mc-1/clusters/hc-2"]),
    (["mc-2/clusters/hc-1", "mc-1/other/hc-1"], ["mc-2/clusters/hc-1", "mc-1/other/hc-1"]),
])
def test_each_rollback_name_matches_exactly_one_hostedcluster(names, expected):
    assert [item["key"] for item in selection.match_names(ROLLBACK_ROWS, names)] == expected


def test_a_rollback_name_matching_none_or_several_is_refused_naming_them_all():
    with pytest.raises(selection.SelectionError) as error:
        selection.match_names(ROLLBACK_ROWS, ["hc-1", "nope", "hc-2"], ["mc-1", "mc-2"])
    message = str(error.value)
    assert "'hc-1' matches 3 HostedClusters (mc-1/clusters/hc-1, mc-1/other/hc-1, mc-2/clusters/hc-1): name one as" in message
    assert "'nope' matches 0 HostedClusters;" in message
    assert "found 4 HostedClusters in management clusters mc-1, mc-2. Nothing was changed." in message
    with pytest.raises(selection.SelectionError, match="in management clusters \\(none: is the inventory right\\?\\)"):
        selection.match_names([], ["hc-1"])


def test_the_rollback_plan_says_what_each_named_hostedcluster_goes_through():
    result = selection.select(ROLLBACK_ROWS, {"purpose": "rollback", "names": "[clusters/hc-2, mc-2/clusters/hc-1]",
                                              "run_id": "rb-1", "serial": 2})
    assert result["keys"] == ["mc-1/clusters/hc-2", "mc-2/clusters/hc-1"]
    assert result["plan"] == ["Rollback to standard CAPI types", "mc-1/clusters/hc-2: legacy already (nothing to do)",
                              "mc-2/clusters/hc-1: migrated -> legacy (roll back)", "batches of 2, run rb-1"]


@pytest.mark.parametrize("names, said", [(None, "is not set"), ("[]", "is empty"), ([" "], "is empty")])
def test_a_rollback_without_names_is_refused(names, said):
    with pytest.raises(selection.SelectionError, match="none was named \\(private_capi_rollback_names %s\\)" % said):
        selection.select(ROLLBACK_ROWS, {"purpose": "rollback", "names": names})


def test_a_verification_selects_every_state_unless_told_and_keeps_the_other_criteria():
    rows = [row("hc-1", "migrated"), row("hc-2", "invalid", labels={"env": "prod"}), row("hc-3", "legacy")]
    result = selection.select(rows, {"purpose": "verify"})
    assert result["keys"] == ["mc-1/clusters/hc-1", "mc-1/clusters/hc-2", "mc-1/clusters/hc-3"]
    assert result["plan"] == ["Verification (read-only): 3 of 3 HostedClusters"]
    assert selection.select(rows, {"purpose": "verify", "label_selector": "env"})["keys"] == ["mc-1/clusters/hc-2"]
