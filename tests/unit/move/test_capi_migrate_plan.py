"""capi_migrate_graph / capi_migrate_plan / capi_migrate_verify: pure logic on the realistic fixture objects."""
import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import TO_PRIVATE, TO_STANDARD, GroupMap
from ansible_collections.hypershift.private_capi.plugins.module_utils.move import plan
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.graph import (
    OwnershipCycleError,
    OwnershipGraph,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.verify import failure_message, verify_copies
from testenv.hcp import build

GROUPS = GroupMap()


def sources(platform="AWS", **options):
    """The fixture's CAPI objects as a server would return them: placeholder uids become real-looking ones."""
    objects = [obj for obj in build.build_hcp_namespace(platform, "clusters", "ex", **options)
               if "cluster.x-k8s.io/" in obj["apiVersion"] or "agent-install" in obj["apiVersion"]]
    for index, obj in enumerate(objects):
        obj["metadata"]["uid"] = build.placeholder(obj["kind"], obj["metadata"]["name"])
        obj["metadata"]["resourceVersion"] = str(100 + index)
        obj["metadata"]["creationTimestamp"] = build.STAMP
        obj["metadata"]["managedFields"] = [{"manager": "capi", "apiVersion": obj["apiVersion"]}]
    return objects


def kind_of(obj):
    group, _slash, version = obj["apiVersion"].rpartition("/")
    return plan.MovedKind(obj["kind"], obj["kind"].lower() + "s", version, group, GROUPS.to_private(group))


def by_kind(objects, kind):
    return [obj for obj in objects if obj["kind"] == kind]


def test_levels_put_owners_first_and_skip_what_is_being_deleted():
    objects = sources(machines=3, deleting=1)
    graph = OwnershipGraph(objects)
    order = {uid: number for number, members in enumerate(graph.levels()) for uid in members}
    for uid, owners in graph.owners.items():
        assert all(order[owner] < order[uid] for owner in owners)
    kinds_by_level = [sorted({graph.by_uid[uid]["kind"] for uid in members}) for members in graph.levels()]
    assert kinds_by_level == [["Cluster"], ["AWSCluster", "AWSMachineTemplate", "MachineDeployment", "MachineHealthCheck"],
                              ["MachineSet"], ["Machine"], ["AWSMachine"]]
    assert sorted(graph.by_uid[uid]["kind"] for uid in graph.skipped) == ["AWSMachine", "Machine"]
    assert all("being deleted" in reason for reason in graph.skipped.values())


def test_dependents_of_a_deleting_owner_are_skipped_unless_it_orphans_them():
    objects = sources(machines=2, deleting=0)
    machine = by_kind(objects, "Machine")[0]
    machine["metadata"]["deletionTimestamp"] = build.STAMP
    graph = OwnershipGraph(objects)
    infra = next(obj for obj in by_kind(objects, "AWSMachine") if obj["metadata"]["name"] == machine["metadata"]["name"])
    assert "takes it along" in graph.skipped[infra["metadata"]["uid"]]
    machine["metadata"]["finalizers"] = ["orphan"]
    orphaning = OwnershipGraph(objects)
    assert infra["metadata"]["uid"] not in orphaning.skipped
    assert orphaning.dropped_owner_uids(infra["metadata"]["uid"]) == [machine["metadata"]["uid"]]


def test_cycles_are_named():
    objects = sources(machines=1, deleting=0, mhc=False)
    cluster = by_kind(objects, "Cluster")[0]
    deployment = by_kind(objects, "MachineDeployment")[0]
    cluster["metadata"]["ownerReferences"] = [{"apiVersion": deployment["apiVersion"], "kind": "MachineDeployment",
                                               "name": deployment["metadata"]["name"], "uid": deployment["metadata"]["uid"]}]
    with pytest.raises(OwnershipCycleError, match="cycle: .*Cluster clusters-ex/ex-.* -> MachineDeployment"):
        OwnershipGraph(objects)


def test_desired_target_translates_groups_remaps_owners_and_keeps_everything_else():
    objects = sources(machines=2, deleting=0)
    machine_set = by_kind(objects, "MachineSet")[0]
    deployment = by_kind(objects, "MachineDeployment")[0]
    original = copy.deepcopy(machine_set)
    owners = {deployment["metadata"]["uid"]: ("cluster.hypershift.openshift.io/v1beta2", "new-md-uid")}
    refs, dropped = plan.remap_owner_references(machine_set, owners, {("cluster.x-k8s.io", "MachineDeployment")}, set())
    body, status = plan.desired_target(machine_set, kind_of(machine_set), TO_PRIVATE, GROUPS, refs)
    assert machine_set == original and dropped == []
    assert body["apiVersion"] == "cluster.hypershift.openshift.io/v1beta2"
    assert body["metadata"]["ownerReferences"] == [{"apiVersion": "cluster.hypershift.openshift.io/v1beta2",
                                                    "kind": "MachineDeployment", "name": deployment["metadata"]["name"],
                                                    "uid": "new-md-uid", "controller": True, "blockOwnerDeletion": True}]
    for field in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
        assert field not in body["metadata"]
    assert body["metadata"]["annotations"][plan.SOURCE_UID_ANNOTATION] == machine_set["metadata"]["uid"]
    assert body["metadata"]["labels"] == machine_set["metadata"]["labels"]  # incl. machine-template-hash
    assert body["metadata"]["finalizers"] == ["cluster.x-k8s.io/machineset"]
    template = body["spec"]["template"]
    assert template["spec"]["infrastructureRef"]["apiGroup"] == "infrastructure.cluster.hypershift.openshift.io"
    assert template["metadata"] == machine_set["spec"]["template"]["metadata"]
    assert status == machine_set["status"] and "status" not in body
    cluster = by_kind(objects, "Cluster")[0]
    cluster_body, _status = plan.desired_target(cluster, kind_of(cluster), TO_PRIVATE, GROUPS, [])
    assert cluster_body["spec"]["controlPlaneRef"] == cluster["spec"]["controlPlaneRef"]  # HostedControlPlane untouched


def test_owner_references_to_unmoved_kinds_stay_and_dangling_ones_are_dropped():
    machine = sources(machines=1, deleting=0)[0]
    machine["metadata"]["ownerReferences"] = [
        {"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedControlPlane", "name": "ex", "uid": "hcp"},
        {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "name": "gone", "uid": "gone-uid"}]
    refs, dropped = plan.remap_owner_references(machine, {}, {("cluster.x-k8s.io", "MachineSet")}, set())
    assert refs == [machine["metadata"]["ownerReferences"][0]]
    assert [(ref["name"], why) for ref, why in dropped] == [("gone", "no such owner among the source objects (dangling reference)")]


def test_decide_judges_existing_targets():
    objects = sources(machines=1, deleting=0)
    machine = by_kind(objects, "Machine")[0]
    body, status = plan.desired_target(machine, kind_of(machine), TO_PRIVATE, GROUPS, [])
    target = dict(copy.deepcopy(body), status=copy.deepcopy(status))
    target["metadata"].update(uid="t", resourceVersion="9")
    assert plan.decide(machine, target, body, status).outcome == plan.IN_SYNC
    without_status = {key: value for key, value in target.items() if key != "status"}
    decision = plan.decide(machine, without_status, body, status)
    assert (decision.outcome, decision.fix_status, decision.fix_owners) == (plan.FIX, True, False)
    moved_on = copy.deepcopy(target)
    moved_on["status"]["phase"] = "Deleting"  # new controllers act on the copy; the source is unchanged
    assert plan.decide(machine, moved_on, body, status).outcome == plan.IN_SYNC
    changed_source = copy.deepcopy(machine)
    changed_source["metadata"]["resourceVersion"] = "999"
    changed_source["spec"]["providerID"] = "aws:///other"
    changed_body, changed_status = plan.desired_target(changed_source, kind_of(machine), TO_PRIVATE, GROUPS, [])
    decision = plan.decide(changed_source, target, changed_body, changed_status)
    assert decision.outcome == plan.DIFFERS and decision.differences[0]["path"] == "spec.providerID"
    foreign = copy.deepcopy(target)
    del foreign["metadata"]["annotations"][plan.SOURCE_UID_ANNOTATION]
    assert "was not copied from this source" in plan.decide(machine, foreign, body, status).reason


def test_a_copy_carrying_its_owners_provenance_was_adopted_by_the_new_controllers():
    """CAPI's MachineDeployment controller copies the MachineDeployment's annotations onto its MachineSets (the
    migration's provenance among them): a MachineSet copy then names the MachineDeployment as its source. Found with
    the real core manager (issue 19); such a copy is the controllers' own, not someone else's object."""
    objects = sources(machines=1, deleting=0)
    deployment, machine_set = by_kind(objects, "MachineDeployment")[0], by_kind(objects, "MachineSet")[0]
    for index, obj in enumerate(objects):
        obj["metadata"]["uid"] = "uid-%d" % index
    machine_set["metadata"]["ownerReferences"][0]["uid"] = deployment["metadata"]["uid"]
    body, status = plan.desired_target(machine_set, kind_of(machine_set), TO_PRIVATE, GROUPS, [])
    adopted = dict(copy.deepcopy(body), status=dict(copy.deepcopy(status), readyReplicas=7))
    adopted["metadata"]["annotations"].update({plan.SOURCE_UID_ANNOTATION: deployment["metadata"]["uid"],
                                               plan.SOURCE_VERSION_ANNOTATION: "12345"})
    decision = plan.decide(machine_set, adopted, body, status)
    assert (decision.outcome, decision.reason) == (plan.IN_SYNC, "adopted by the new controllers (its owner's "
                                                                 "provenance was propagated to it)")
    adopted["metadata"]["annotations"][plan.SOURCE_UID_ANNOTATION] = "uid-of-something-else"
    assert plan.decide(machine_set, adopted, body, status).outcome == plan.DIFFERS, "any other uid stays foreign"


def test_a_re_run_tells_its_own_deletions_from_deletions_in_flight():
    """An interrupted delete phase leaves sources this module deleted (Orphan, or labelled once it removed their
    finalizers) that a re-run reads with a deletionTimestamp: they are not deletions in flight, and carrying them
    would delete their copies. Found by the fault sweep with carry_deletions."""
    objects = sources(machines=1, deleting=0)
    check = by_kind(objects, "MachineHealthCheck")[0]
    body, _status = plan.desired_target(check, kind_of(check), TO_PRIVATE, GROUPS, [])
    going = copy.deepcopy(check)
    going["metadata"].update(deletionTimestamp=build.STAMP, finalizers=["orphan"])
    assert plan.deleted_by_this_module(going, body)  # its copy names it: deleted by the module, orphaning
    assert not plan.deleted_by_this_module(going, None), "no copy: someone else's deletion"
    foreign = copy.deepcopy(body)
    foreign["metadata"]["annotations"][plan.SOURCE_UID_ANNOTATION] = "uid-of-something-else"
    assert not plan.deleted_by_this_module(going, foreign)
    held = copy.deepcopy(going)
    held["metadata"]["finalizers"] = ["orphan", "machinehealthcheck.example.com"]
    assert not plan.deleted_by_this_module(held, body), "a controller's finalizer: a deletion in flight"
    foreground = dict(going, metadata=dict(going["metadata"], finalizers=["foregroundDeletion"]))
    assert not plan.deleted_by_this_module(foreground, body), "foreground: someone else's, taking dependents along"
    assert not plan.deleted_by_this_module(check, body), "not being deleted"
    labelled = copy.deepcopy(check)
    labelled["metadata"]["labels"][plan.DELETE_LABEL] = plan.DELETE_LABEL_VALUE
    assert plan.deleted_by_this_module(labelled, None)


def test_a_carried_source_names_its_copy():
    machine = by_kind(sources(machines=1, deleting=0), "Machine")[0]
    assert plan.carried_copy_uid(machine) is None and not plan.is_carried(machine)
    machine["metadata"]["annotations"].update(plan.carried_mark("uid-of-the-copy", deletes_copy=False))
    assert plan.carried_copy_uid(machine) == "uid-of-the-copy" and plan.is_carried(machine)
    assert not plan.carries_deletion(machine), "taken along: its copy goes with its owner's"
    machine["metadata"]["annotations"].update(plan.carried_mark("uid-of-the-copy", deletes_copy=True))
    assert plan.carries_deletion(machine)
    body, _status = plan.desired_target(machine, kind_of(machine), TO_PRIVATE, GROUPS, [])
    assert not set(plan.carried_mark("x", True)) & set(body["metadata"]["annotations"]), "the mark is never copied"


def test_marking_for_deletion_keeps_the_copy_comparable():
    machine = by_kind(sources(machines=1, deleting=0), "Machine")[0]
    patch = plan.marked_for_deletion(machine)
    assert patch["metadata"]["finalizers"] is None
    assert patch["metadata"]["resourceVersion"] == machine["metadata"]["resourceVersion"]
    assert patch["metadata"]["labels"] == {plan.DELETE_LABEL: "true"}
    marked = copy.deepcopy(machine)
    marked["metadata"].pop("finalizers")
    marked["metadata"]["labels"][plan.DELETE_LABEL] = "true"
    marked["metadata"]["annotations"][plan.FINALIZERS_ANNOTATION] = patch["metadata"]["annotations"][plan.FINALIZERS_ANNOTATION]
    assert plan.original_finalizers(marked) == ["machine.cluster.x-k8s.io"]
    body_marked, _status = plan.desired_target(marked, kind_of(machine), TO_PRIVATE, GROUPS, [])
    body, _status = plan.desired_target(machine, kind_of(machine), TO_PRIVATE, GROUPS, [])
    assert plan.canonical(body_marked) == plan.canonical(body)


def test_verify_reports_differences_and_missing_copies():
    machine = by_kind(sources(machines=1, deleting=0), "Machine")[0]
    body, status = plan.desired_target(machine, kind_of(machine), TO_PRIVATE, GROUPS, [])
    live = dict(copy.deepcopy(body), status=copy.deepcopy(status))
    assert verify_copies([("Machine a", body, status, live)]) == []
    live["status"]["phase"] = "Provisioning"
    failures = verify_copies([("Machine a", body, status, live), ("Machine b", body, status, None)])
    assert [failure["object"] for failure in failures] == ["Machine a", "Machine b"]
    assert failures[0]["differences"][0]["path"] == "status.phase"
    assert "2 of 5 copies differ" in failure_message(failures, 5) and "status.phase" in failure_message(failures, 5)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(build.PLATFORMS), st.integers(min_value=1, max_value=4), st.integers(min_value=0, max_value=2))
def test_round_trip_of_desired_targets_restores_the_source(platform, machines, deleting):
    """to_private then to_standard gives back every source, minus server fields and provenance."""
    group_map = GroupMap({"capi-provider.agent-install.openshift.io": "capi-provider.agent-install.hypershift.openshift.io"})
    for obj in sources(platform, machines=machines, deleting=deleting):
        group, _slash, version = obj["apiVersion"].rpartition("/")
        forward = plan.MovedKind(obj["kind"], "x", version, group, group_map.to_private(group))
        backward = plan.MovedKind(obj["kind"], "x", version, group_map.to_private(group), group)
        body, status = plan.desired_target(obj, forward, TO_PRIVATE, group_map, obj["metadata"].get("ownerReferences"))
        private = dict(body, status=status) if status else body
        private["metadata"].update(uid="p", resourceVersion="1")
        back, back_status = plan.desired_target(private, backward, TO_STANDARD, group_map,
                                                obj["metadata"].get("ownerReferences"))
        restored = dict(back, status=back_status) if back_status else back
        expected = json.loads(json.dumps(obj))
        expected["metadata"].pop("deletionTimestamp", None)
        assert plan.canonical(restored) == plan.canonical(expected)
