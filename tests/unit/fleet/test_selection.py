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


# A run that selects nothing says why (empty_reason) and fails with it (refusal) unless allow_empty.
ALLOW = "private_capi_fleet_allow_empty=true"


def test_no_management_cluster_and_no_hostedcluster_host_is_said_to_be_the_inventory():
    result = selection.select([], {"run_id": "r"})
    assert result["selected"] == []
    assert result["empty_reason"].startswith("the inventory has no management cluster: group management_clusters is "
                                             "empty and there is no HostedCluster host (group capi_hostedclusters")
    assert "Give an inventory with -i" in result["empty_reason"]
    assert result["refusal"] == "0 HostedClusters selected: %s. If a run with nothing to do is expected (a fleet " \
                                "already done, a job run on every inventory), set %s." % (result["empty_reason"], ALLOW)
    assert result["plan"][-1] == "Nothing to do: " + result["empty_reason"]


@pytest.mark.parametrize("purpose", ["migrate", "verify", "rollback"])
def test_every_purpose_refuses_an_empty_inventory_unless_allowed(purpose):
    criteria = {"purpose": purpose, "names": ["hc-1"], "run_id": "r"}
    if purpose == "rollback":  # a rollback refuses its names as always, saying why there is nothing to match
        with pytest.raises(selection.SelectionError) as error:
            selection.select([], criteria)
        assert str(error.value).startswith("private_capi_rollback_names: 'hc-1' matches 0 HostedClusters; found no "
                                           "HostedCluster: the inventory has no management cluster: ")
        assert str(error.value).endswith("Nothing was changed. " + selection.ALLOW_EMPTY_HINT)
    else:
        assert "the inventory has no management cluster" in selection.select([], criteria)["refusal"]
        assert selection.select([], dict(criteria, allow_empty="false"))["refusal"]
    for allowed in (True, "true", "True", "yes"):
        result = selection.select([], dict(criteria, allow_empty=allowed))
        assert (result["refusal"], result["selected"]) == ("", [])
        assert result["empty_reason"].startswith("the inventory has no management cluster")


def test_management_clusters_without_hostedclusters_are_named_apart_from_those_not_read():
    criteria = {"management_clusters": ["mc-1", "mc-2"], "run_id": "r"}
    reason = selection.select([], criteria)["empty_reason"]
    assert reason.startswith("no HostedCluster on the management clusters of the inventory (mc-1, mc-2): check that "
                             "their private_capi_kubeconfig and private_capi_context point at HyperShift"), reason
    reason = selection.select([], dict(criteria, management_clusters_read=["mc-2"], namespace="prod"))["empty_reason"]
    assert reason.startswith("no HostedCluster in namespace prod on the management clusters of the inventory: mc-2 has "
                             "none; mc-1 was not read (its tasks failed above);"), reason
    assert reason.endswith("and that private_capi_fleet_namespace is right")
    reason = selection.select([], dict(criteria, management_clusters_read=[]))["empty_reason"]
    assert "mc-1, mc-2 were not read (their tasks failed above)" in reason


def test_hostedclusters_matching_no_filter_name_each_filter_with_what_it_lets_through():
    rows = [row("hc-1", "migrated"), row("hc-2", "migrated", labels={"env": "prod"}), row("hc-3", "legacy", "other")]
    result = selection.select(rows, {"run_id": "r", "name_regex": "hc-[12]", "label_selector": "env=dev",
                                     "names": ["hc-2", "hc-9"], "namespace": "clusters"})
    assert result["selected"] == [] and len(result["not_selected"]) == 3
    reason = result["empty_reason"]
    assert reason.startswith("3 HostedClusters found on mc-1, none passes the selection of this migration - "), reason
    assert ("states new, legacy, in-progress, failed (a migration's default): 1 of 3 are in them "
            "(found legacy 1, migrated 2)") in reason
    assert "private_capi_fleet_name_regex 'hc-[12]' (matched from the start): 2 of 3 match" in reason
    assert "private_capi_fleet_names [hc-2, hc-9]: 1 of 3 are named" in reason
    assert "private_capi_fleet_namespace 'clusters': 2 of 3 are in it (found clusters 2, other 1)" in reason
    assert "private_capi_fleet_label_selector 'env=dev': 0 of 3 match" in reason
    assert result["refusal"].startswith("0 HostedClusters selected: 3 HostedClusters found on mc-1")


def test_a_fleet_already_migrated_says_the_default_states_leave_it_out_and_names_only_the_filters_set():
    reason = selection.select([row("hc-1", "migrated"), row("hc-2", "migrated", mc="mc-2")], {"run_id": "r"})["empty_reason"]
    assert reason == ("2 HostedClusters found on mc-1, mc-2, none passes the selection of this migration - states new, "
                      "legacy, in-progress, failed (a migration's default): 0 of 2 are in them (found migrated 2) "
                      "(a HostedCluster must pass every one)")


def test_a_verification_names_its_states_as_set():
    reason = selection.select([row("hc-1", "migrated")], {"purpose": "verify", "states": ["failed"]})["empty_reason"]
    assert ("none passes the selection of this verification - states failed (private_capi_fleet_states): 0 of 1 are "
            "in them (found migrated 1)") in reason


def test_a_selection_of_something_has_no_reason_and_no_refusal():
    result = selection.select([row("hc-1")], {"run_id": "r"})
    assert (result["empty_reason"], result["refusal"]) == ("", "")
    assert not any(line.startswith("Nothing to do") for line in result["plan"])


def test_the_static_inventorys_selection_leaves_the_judgement_to_the_inventory_plugins_play():
    # migrate_fleet.yml's localhost play: the plugin's HostedCluster hosts are not its candidates, their play selects
    criteria = {"run_id": "r", "management_clusters": ["mc-1"], "hostedcluster_hosts": ["mc-2/clusters/hc-1"]}
    for rows in ([], [row("hc-1", "migrated")]):
        result = selection.select(rows, criteria)
        assert (result["selected"], result["empty_reason"], result["refusal"]) == ([], "", "")
    # their play selects over both: nothing there is judged
    plugin = dict(plugin_row(), state="migrated")
    reason = selection.select([plugin, row("hc-2", "migrated")], criteria)["empty_reason"]
    assert reason.startswith("2 HostedClusters found on mc-1, none passes the selection"), reason


def test_a_rollback_whose_names_all_match_nothing_is_empty_when_allowed_and_refused_otherwise():
    criteria = {"purpose": "rollback", "names": ["hc-9", "other/hc-2"], "run_id": "rb"}
    with pytest.raises(selection.SelectionError, match="'hc-9' matches 0 HostedClusters"):
        selection.select(ROLLBACK_ROWS, criteria)
    result = selection.select(ROLLBACK_ROWS, dict(criteria, allow_empty=True))
    assert (result["selected"], result["refusal"]) == ([], "")
    assert result["empty_reason"] == ("none of private_capi_rollback_names [hc-9, other/hc-2] is one of the 4 "
                                      "HostedClusters found on mc-1, mc-2")
    # a name that matches while another does not is a mistake, allowed or not
    with pytest.raises(selection.SelectionError, match="'hc-9' matches 0 HostedClusters"):
        selection.select(ROLLBACK_ROWS, dict(criteria, names=["hc-9", "hc-2"], allow_empty=True))
    # and a rollback still names what it rolls back, allowed or not
    with pytest.raises(selection.SelectionError, match="none was named"):
        selection.select([], {"purpose": "rollback", "allow_empty": True})


def test_the_budget_stops_only_when_more_than_its_percentage_of_the_batch_failed():
    from ansible_collections.hypershift.private_capi.plugins.module_utils.fleet.selection import budget

    def result(name, status):
        return {"management_cluster": "mc-1", "namespace": "clusters", "name": name, "status": status}

    one_failed = [result("hc-01", "failed")]
    assert budget(one_failed)["stop"] is False  # the default 100 %: Ansible's all-failed rule does not apply
    stopped = budget(one_failed, 0)
    assert stopped["stop"] and stopped["failed"] == ["mc-1/clusters/hc-01"] and stopped["batch"] == 1
    assert "1 of the 1 HostedClusters of the last batch failed (mc-1/clusters/hc-01)" in stopped["reason"]
    mixed = [result("hc-01", "migrated"), result("hc-02", "refused"), result("hc-03", "deferred"),
             result("hc-04", "skipped")]
    assert budget(mixed, 25)["stop"] is False and budget(mixed, 24)["stop"] is True
    assert budget([result("hc-05", "unknown"), result("hc-06", "rollback-failed")], 99)["failed"] == [
        "mc-1/clusters/hc-05", "mc-1/clusters/hc-06"]
    assert budget([], 0) == {"stop": False, "failed": [], "batch": 0, "reason": ""}


def test_a_preinstall_selects_what_no_migration_holds_unless_told_and_says_what_it_does():
    rows = [row("hc-1", "legacy"), row("hc-2", "in-progress"), row("hc-3", "migrated"), row("hc-4", "failed"),
            row("hc-5", "new")]
    result = selection.select(rows, {"purpose": "preinstall", "run_id": "preinstall-1"})
    assert result["keys"] == ["mc-1/clusters/hc-1", "mc-1/clusters/hc-4", "mc-1/clusters/hc-5"]
    assert result["plan"][0] == "API proxy pre-install - run preinstall-1"
    assert result["plan"][2].endswith("hc-1 [KubeVirt] legacy -> proxy in ahead: hold the operator off, API proxy in (pass-through)")
    assert selection.select(rows, {"purpose": "preinstall", "states": ["legacy"]})["keys"] == ["mc-1/clusters/hc-1"]
    nothing = selection.select([row("hc-3", "migrated")], {"purpose": "preinstall", "run_id": "p"})
    assert "none passes the selection of this pre-install - states new, legacy, failed (a pre-install's default)" \
        in nothing["empty_reason"], nothing["empty_reason"]
