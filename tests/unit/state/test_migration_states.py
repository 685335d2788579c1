"""The migration state machine: every marker combination, every move, the lease, history, repair, query."""
import copy
import datetime
import itertools
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine as ms
from ansible_collections.hypershift.private_capi.plugins.module_utils.state.machine import (
    FAILED,
    IN_PROGRESS,
    INVALID,
    LEGACY,
    MIGRATED,
    NEW,
    TransitionRefused,
)
from ansible_collections.hypershift.private_capi.plugins.modules import migration_state
from tests.unit.module_docs import assert_argspec_matches_documentation

NOW = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
STATE_ANNOTATIONS = {
    NEW: {},
    LEGACY: {ms.SCOPE_ANNOTATION: "legacy"},
    IN_PROGRESS: {ms.SCOPE_ANNOTATION: "legacy", ms.IN_PROGRESS_ANNOTATION: "true",
                  ms.LEASE_HOLDER_ANNOTATION: "run-a", ms.LEASE_ACQUIRE_TIME_ANNOTATION: "2026-03-01T11:59:00.000000Z",
                  ms.LEASE_RENEW_TIME_ANNOTATION: "2026-03-01T11:59:30.000000Z", ms.LEASE_DURATION_ANNOTATION: "900"},
    MIGRATED: {ms.PRIVATE_TYPES_ANNOTATION: "true"},
    FAILED: {ms.SCOPE_ANNOTATION: "legacy", ms.FAILED_ANNOTATION: "copy: Machine x conflicted"},
    INVALID: {ms.SCOPE_ANNOTATION: "legacy", ms.PRIVATE_TYPES_ANNOTATION: "true"},
}


def hostedcluster(state, label=True, extra=None):
    annotations = dict(STATE_ANNOTATIONS[state], **(extra or {}))
    labels = {"app": "x"}
    if label and state in ms.LABELLED_STATES:
        labels[ms.STATE_LABEL] = state
    return {"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster",
            "metadata": {"name": "prod-01", "namespace": "clusters", "resourceVersion": "41", "uid": "u-1",
                         "annotations": annotations, "labels": labels},
            "spec": {"platform": {"type": "AWS"}}}


MARKER_COMBINATIONS = list(itertools.product((None, "legacy", "other"), (None, "true", "false"), (None, "true", "false"),
                                             (None, "why")))


@pytest.mark.parametrize("scope, in_progress, private, failed", MARKER_COMBINATIONS)
def test_every_marker_combination_has_one_state(scope, in_progress, private, failed):
    pairs = ((ms.SCOPE_ANNOTATION, scope), (ms.IN_PROGRESS_ANNOTATION, in_progress),
             (ms.PRIVATE_TYPES_ANNOTATION, private), (ms.FAILED_ANNOTATION, failed))
    annotations = {key: value for key, value in pairs if value}
    is_legacy, is_ip, is_private = scope == "legacy", in_progress == "true", private == "true"
    if is_private:
        expected = INVALID if (is_legacy or is_ip or failed) else MIGRATED
    elif is_legacy:
        expected = INVALID if (is_ip and failed) else IN_PROGRESS if is_ip else FAILED if failed else LEGACY
    else:
        expected = INVALID if (is_ip or failed) else NEW
    assert ms.state_of_annotations(annotations) == expected


def test_state_table_fixtures_are_what_they_say():
    for state in ms.STATES:
        assert ms.state_of(hostedcluster(state)) == state


LEGAL = [(NEW, LEGACY), (LEGACY, IN_PROGRESS), (IN_PROGRESS, MIGRATED), (IN_PROGRESS, FAILED), (FAILED, LEGACY)]


@pytest.mark.parametrize("current, requested", LEGAL)
def test_legal_moves_write_markers_label_history_and_event(current, requested):
    source = hostedcluster(current)
    pristine = copy.deepcopy(source)
    plan = ms.plan_transition(source, requested, "run-a", NOW, reason="because" if requested == FAILED else None,
                              force=current == FAILED)
    assert source == pristine, "plan_transition mutated its input"
    assert (plan.from_state, plan.to_state, plan.changed, plan.write) == (current, requested, True, True)
    updated = plan.updated_object()
    assert ms.state_of(updated) == requested
    assert updated["metadata"]["labels"] == {"app": "x", ms.STATE_LABEL: requested}
    assert updated["metadata"]["resourceVersion"] == "41" and updated["spec"] == source["spec"]
    history = json.loads(plan.annotations[ms.HISTORY_ANNOTATION])
    assert history[-1]["from"] == current and history[-1]["to"] == requested and history[-1]["by"] == "run-a"
    assert history[-1]["at"] == "2026-03-01T12:00:00.000000Z"
    event_type, reason, message = plan.event
    assert event_type == ("Warning" if requested == FAILED else "Normal") and reason.startswith("CAPIMigration")
    assert "%s -> %s" % (current, requested) in message
    has_lease = ms.lease_of(plan.annotations) is not None
    assert has_lease == (requested == IN_PROGRESS)
    if requested == IN_PROGRESS:
        assert ms.lease_of(plan.annotations) == {"holder": "run-a", "acquire_time": "2026-03-01T12:00:00.000000Z",
                                                 "renew_time": "2026-03-01T12:00:00.000000Z", "duration_seconds": 900}
    if requested == FAILED:
        assert plan.annotations[ms.FAILED_ANNOTATION] == "because"
        assert plan.annotations[ms.SCOPE_ANNOTATION] == "legacy"
    if requested == MIGRATED:
        assert ms.SCOPE_ANNOTATION not in plan.annotations


ILLEGAL = [(c, r) for c in ms.STATES for r in ms.REQUESTABLE_STATES if c != r and (c, r) not in LEGAL]


@pytest.mark.parametrize("current, requested", ILLEGAL)
def test_illegal_moves_are_refused_with_current_requested_and_legal_moves(current, requested):
    source = hostedcluster(current)
    with pytest.raises(TransitionRefused) as raised:
        ms.plan_transition(source, requested, "run-a", NOW, reason="r", force=True, takeover=True)
    message = str(raised.value)
    assert "HostedCluster clusters/prod-01: cannot move from %s to %s" % (current, requested) in message
    legal = ", ".join(ms.LEGAL_MOVES[current]) or "none"
    assert "Legal moves from %s: %s." % (current, legal) in message
    if current == INVALID:
        assert "repair: true" in message


@pytest.mark.parametrize("state", [LEGACY, MIGRATED, FAILED])
def test_asking_the_current_state_is_a_no_op_or_a_label_repair(state):
    plan = ms.plan_transition(hostedcluster(state), state, "run-a", NOW, reason="r")
    assert (plan.changed, plan.write, plan.event) == (False, False, None)
    unlabelled = ms.plan_transition(hostedcluster(state, label=False), state, "run-a", NOW, reason="r")
    assert (unlabelled.changed, unlabelled.write) == (True, True)
    assert unlabelled.labels[ms.STATE_LABEL] == state and unlabelled.annotations == STATE_ANNOTATIONS[state]


def test_failed_needs_a_reason_and_leaving_failed_needs_force():
    with pytest.raises(TransitionRefused, match="moving to failed needs a reason"):
        ms.plan_transition(hostedcluster(IN_PROGRESS), FAILED, "run-a", NOW)
    with pytest.raises(TransitionRefused, match=r"leaving failed \(reason: copy: Machine x conflicted\) needs explicit remediation.*force: true"):
        ms.plan_transition(hostedcluster(FAILED), LEGACY, "run-a", NOW)
    assert ms.state_of(ms.plan_transition(hostedcluster(FAILED), LEGACY, "run-a", NOW, force=True).updated_object()) == LEGACY


def test_same_holder_renews_without_change():
    plan = ms.plan_transition(hostedcluster(IN_PROGRESS), IN_PROGRESS, "run-a", NOW, lease_seconds=600)
    assert (plan.changed, plan.write, plan.renewed, plan.took_over, plan.event) == (False, True, True, False, None)
    lease = ms.lease_of(plan.annotations)
    assert lease["acquire_time"] == "2026-03-01T11:59:00.000000Z"
    assert lease["renew_time"] == "2026-03-01T12:00:00.000000Z" and lease["duration_seconds"] == 600
    assert ms.HISTORY_ANNOTATION not in plan.annotations


def test_other_holder_is_refused_naming_holder_and_age():
    with pytest.raises(TransitionRefused) as raised:
        ms.plan_transition(hostedcluster(IN_PROGRESS), IN_PROGRESS, "run-b", NOW)
    message = str(raised.value)
    assert "held by 'run-a'" in message and "renewed 30s ago" in message and "expires in 870s" in message
    assert "takeover: true" in message
    for target in (MIGRATED, FAILED):
        with pytest.raises(TransitionRefused, match="held by 'run-a'"):
            ms.plan_transition(hostedcluster(IN_PROGRESS), target, "run-b", NOW, reason="r")


@pytest.mark.parametrize("how", ["expired", "takeover", "no-lease", "unreadable-time"])
def test_takeover_of_an_expired_missing_or_forced_lease(how):
    extra, takeover, now = {}, False, NOW
    if how == "expired":
        now = NOW + datetime.timedelta(seconds=900)
    elif how == "takeover":
        takeover = True
    elif how == "no-lease":
        extra = {key: "" for key in ms.LEASE_ANNOTATIONS}
    else:
        extra = {ms.LEASE_RENEW_TIME_ANNOTATION: "yesterday", ms.LEASE_ACQUIRE_TIME_ANNOTATION: "?"}
    source = hostedcluster(IN_PROGRESS, extra=extra)
    plan = ms.plan_transition(source, IN_PROGRESS, "run-b", now, takeover=takeover)
    assert (plan.changed, plan.took_over) == (True, True)
    assert ms.lease_of(plan.annotations)["holder"] == "run-b"
    history = json.loads(plan.annotations[ms.HISTORY_ANNOTATION])
    assert history[-1]["takeover"] is True and history[-1]["by"] == "run-b"
    assert plan.event[1] == "CAPIMigrationLeaseTakenOver"
    finished = ms.plan_transition(hostedcluster(IN_PROGRESS, extra=extra), MIGRATED, "run-b", now, takeover=takeover)
    assert finished.took_over is (how != "no-lease")  # nobody held it: finishing is no takeover
    assert ms.state_of(finished.updated_object()) == MIGRATED


def test_expiry_uses_the_recorded_duration_then_the_default():
    lease = ms.lease_of(STATE_ANNOTATIONS[IN_PROGRESS])
    assert ms.judge_lease(lease, NOW + datetime.timedelta(seconds=869), 10)["expired"] is False
    assert ms.judge_lease(lease, NOW + datetime.timedelta(seconds=870), 10)["expired"] is True
    lease["duration_seconds"] = None
    assert ms.judge_lease(lease, NOW, 30)["expired"] is True
    assert ms.judge_lease(lease, NOW, 31)["expired"] is False


def test_history_is_bounded_and_tolerates_garbage():
    source = hostedcluster(LEGACY, extra={ms.HISTORY_ANNOTATION: json.dumps([{"n": i} for i in range(25)])})
    plan = ms.plan_transition(source, IN_PROGRESS, "run-a", NOW)
    history = json.loads(plan.annotations[ms.HISTORY_ANNOTATION])
    assert len(history) == ms.HISTORY_LIMIT and history[0] == {"n": 6} and history[-1]["to"] == IN_PROGRESS
    garbage = hostedcluster(LEGACY, extra={ms.HISTORY_ANNOTATION: "{not json"})
    assert len(json.loads(ms.plan_transition(garbage, IN_PROGRESS, "run-a", NOW).annotations[ms.HISTORY_ANNOTATION])) == 1


@pytest.mark.parametrize("standard, private, target", [(3, 0, LEGACY), (0, 11, MIGRATED)])
def test_repair_follows_the_objects(standard, private, target):
    source = hostedcluster(INVALID, extra={ms.IN_PROGRESS_ANNOTATION: "true", ms.LEASE_HOLDER_ANNOTATION: "dead"})
    plan = ms.plan_repair(source, standard, private, "run-a", NOW, "clusters-prod-01")
    updated = plan.updated_object()
    assert ms.state_of(updated) == target and updated["metadata"]["labels"][ms.STATE_LABEL] == target
    assert ms.lease_of(plan.annotations) is None
    entry = json.loads(plan.annotations[ms.HISTORY_ANNOTATION])[-1]
    assert entry["from"] == INVALID and entry["to"] == target
    assert entry["removed"][ms.PRIVATE_TYPES_ANNOTATION] == "true"
    assert "%d standard-group, %d private-group" % (standard, private) in entry["reason"]


@pytest.mark.parametrize("standard, private", [(0, 0), (2, 5)])
def test_repair_refuses_when_the_objects_cannot_tell(standard, private):
    with pytest.raises(TransitionRefused, match="namespace clusters-prod-01 holds %d standard-group and %d private-group" % (standard, private)):
        ms.plan_repair(hostedcluster(INVALID), standard, private, "run-a", NOW, "clusters-prod-01")
    with pytest.raises(TransitionRefused, match="is legacy, not invalid"):
        ms.plan_repair(hostedcluster(LEGACY), 1, 0, "run-a", NOW, "clusters-prod-01")


def test_report_and_selectors_and_hcp_namespace():
    entry = ms.report(hostedcluster(IN_PROGRESS), NOW)
    assert entry["state"] == IN_PROGRESS and entry["label_in_sync"] and entry["lease"]["holder"] == "run-a"
    assert entry["lease"]["age_seconds"] == 30.0 and entry["lease"]["expired"] is False
    assert ms.report(hostedcluster(NEW), NOW)["label_in_sync"] is True
    assert ms.report(hostedcluster(LEGACY, label=False), NOW)["label_in_sync"] is False
    assert entry["platform"] == "AWS" and entry["labels"] == {"app": "x", ms.STATE_LABEL: IN_PROGRESS}
    no_platform = hostedcluster(LEGACY)
    no_platform["spec"] = {}
    assert ms.report(no_platform, NOW)["platform"] == "None"
    assert ms.label_selector_for([LEGACY, FAILED, LEGACY]) == "hypershift.openshift.io/capi-migration-state in (failed,legacy)"
    assert ms.label_selector_for([LEGACY, NEW]) is None and ms.label_selector_for([]) is None
    assert hypershift.hcp_namespace("clusters", "prod.eu-1") == "clusters-prod-eu-1"


def test_time_round_trip():
    assert ms.parse_time(ms.format_time(NOW)) == NOW
    assert ms.parse_time("2026-03-01T12:00:00Z") == NOW
    assert ms.parse_time("garbage") is None and ms.parse_time(None) is None


ANNOTATION_VALUES = st.one_of(st.none(), st.sampled_from(["true", "false", "legacy", "", "why", "x"]))


@settings(max_examples=300, deadline=None)
@given(
    markers=st.fixed_dictionaries({key: ANNOTATION_VALUES for key in ms.MARKER_ANNOTATIONS + (ms.LEASE_HOLDER_ANNOTATION,)}),
    label=st.one_of(st.none(), st.sampled_from(ms.STATES)),
    requested=st.sampled_from(ms.REQUESTABLE_STATES),
    holder=st.sampled_from(["run-a", "run-b"]),
    takeover=st.booleans(),
    force=st.booleans(),
    seconds=st.integers(min_value=-10, max_value=2000),
)
def test_any_plan_either_refuses_or_lands_exactly_on_the_requested_state(markers, label, requested, holder, takeover, force, seconds):
    annotations = {key: value for key, value in markers.items() if value is not None}
    annotations[ms.LEASE_RENEW_TIME_ANNOTATION] = "2026-03-01T12:00:00.000000Z"
    source = {"metadata": {"name": "n", "namespace": "ns", "annotations": annotations,
                           "labels": {ms.STATE_LABEL: label} if label else {}}}
    pristine = copy.deepcopy(source)
    current = ms.state_of(source)
    now = NOW + datetime.timedelta(seconds=seconds)
    try:
        plan = ms.plan_transition(source, requested, holder, now, takeover=takeover, force=force, reason="r")
    except TransitionRefused as exc:
        assert source == pristine
        assert re.search(r"cannot move|held by|needs", str(exc))
        return
    assert source == pristine
    assert current == requested or requested in ms.LEGAL_MOVES[current]
    updated = plan.updated_object()
    assert ms.state_of(updated) == requested
    if plan.write:
        assert updated["metadata"]["labels"][ms.STATE_LABEL] == requested
    if requested == IN_PROGRESS:
        assert ms.lease_of(plan.annotations)["holder"] == holder
    else:
        assert ms.lease_of(plan.annotations) is None or current == requested
    again = ms.plan_transition(updated, requested, holder, now, takeover=takeover, force=force, reason="r")
    assert again.changed is False, "a second identical request must report no change"


def test_argspec_matches_documentation():
    assert_argspec_matches_documentation(migration_state)


# --- rollback: migrated -> in-progress (lease direction rollback) -> legacy, only with rollback=True -------------------
ROLLBACK_LOCK = dict(STATE_ANNOTATIONS[IN_PROGRESS], **{ms.LEASE_DIRECTION_ANNOTATION: ms.ROLLBACK})


def rollback_locked(extra=None):
    source = hostedcluster(IN_PROGRESS, extra=dict({ms.LEASE_DIRECTION_ANNOTATION: ms.ROLLBACK}, **(extra or {})))
    assert source["metadata"]["annotations"] == dict(ROLLBACK_LOCK, **(extra or {}))
    return source


def test_rollback_takes_the_lock_then_ends_legacy_and_a_rerun_changes_nothing():
    source = hostedcluster(MIGRATED, extra={ms.HISTORY_ANNOTATION: json.dumps([{"from": "in-progress", "to": "migrated"}])})
    pristine = copy.deepcopy(source)
    locked = ms.plan_transition(source, IN_PROGRESS, "rb-1", NOW, lease_seconds=600, rollback=True, reason="new operator crashes")
    assert source == pristine, "plan_transition mutated its input"
    assert (locked.from_state, locked.to_state, locked.changed, locked.write) == (MIGRATED, IN_PROGRESS, True, True)
    annotations = locked.annotations
    assert ms.PRIVATE_TYPES_ANNOTATION not in annotations
    assert annotations[ms.SCOPE_ANNOTATION] == "legacy" and annotations[ms.IN_PROGRESS_ANNOTATION] == "true"
    assert ms.lease_direction(annotations) == ms.ROLLBACK and ms.lease_of(annotations)["holder"] == "rb-1"
    assert ms.lease_of(annotations)["duration_seconds"] == 600
    assert locked.labels[ms.STATE_LABEL] == IN_PROGRESS
    entry = json.loads(annotations[ms.HISTORY_ANNOTATION])[-1]
    assert entry == {"from": MIGRATED, "to": IN_PROGRESS, "at": "2026-03-01T12:00:00.000000Z", "by": "rb-1",
                     "rollback": True, "reason": "new operator crashes"}
    assert locked.event[:2] == ("Warning", "CAPIMigrationRollbackStarted") and "(rollback)" in locked.event[2]
    assert ms.report(locked.updated_object(), NOW)["lease"]["direction"] == ms.ROLLBACK
    lock_object = locked.updated_object()
    renewed = ms.plan_transition(lock_object, IN_PROGRESS, "rb-1", NOW, rollback=True)
    assert (renewed.changed, renewed.renewed) == (False, True)
    assert ms.lease_direction(renewed.annotations) == ms.ROLLBACK
    done = ms.plan_transition(lock_object, LEGACY, "rb-1", NOW, rollback=True)
    updated = done.updated_object()
    assert ms.state_of(updated) == LEGACY and updated["metadata"]["labels"][ms.STATE_LABEL] == LEGACY
    assert not [key for key in done.annotations if key.startswith("hypershift.openshift.io/capi-migration-lease")]
    assert set(done.annotations) == {ms.SCOPE_ANNOTATION, ms.HISTORY_ANNOTATION}
    history = json.loads(done.annotations[ms.HISTORY_ANNOTATION])
    assert [(e["from"], e["to"], e.get("rollback")) for e in history] == [
        (IN_PROGRESS, MIGRATED, None), (MIGRATED, IN_PROGRESS, True), (IN_PROGRESS, LEGACY, True)]
    assert done.event[:2] == ("Normal", "CAPIMigrationRolledBack")
    again = ms.plan_transition(updated, LEGACY, "rb-1", NOW, rollback=True)
    assert (again.changed, again.write, again.event) == (False, False, None)


def test_rollback_moves_are_refused_without_rollback_true():
    with pytest.raises(TransitionRefused) as raised:
        ms.plan_transition(hostedcluster(MIGRATED), IN_PROGRESS, "rb-1", NOW, force=True, takeover=True)
    message = str(raised.value)
    assert "cannot move from migrated to in-progress" in message and "Legal moves from migrated: none." in message
    assert "rollback move only" in message and "playbooks/rollback.yml" in message
    with pytest.raises(TransitionRefused, match="Legal moves from in-progress: migrated, failed.*rollback move only"):
        ms.plan_transition(hostedcluster(IN_PROGRESS), LEGACY, "run-a", NOW)


@pytest.mark.parametrize("requested", [MIGRATED, FAILED, IN_PROGRESS, LEGACY])
@pytest.mark.parametrize("holder, takeover", [("run-a", False), ("run-b", True)])
def test_a_rollback_lock_is_never_renewed_taken_over_or_finished_as_a_migration(requested, holder, takeover):
    source = rollback_locked()
    with pytest.raises(TransitionRefused) as raised:
        ms.plan_transition(source, requested, holder, NOW + datetime.timedelta(hours=2), takeover=takeover, force=True,
                           reason="r")
    message = str(raised.value)
    assert "HostedCluster clusters/prod-01: cannot move from in-progress to %s" % requested in message
    assert "held by 'run-a', direction rollback" in message and "ends only in legacy" in message
    assert raised.value.refusal() == {"reason": "not-allowed", "holder": None, "status": "refused"}, \
        "the migrate role would take this refusal for a live lock and skip quietly"


FORWARD_LOCK = "it is locked for a migration to private CAPI types (lock held by 'run-a'), not migrated"


@pytest.mark.parametrize("current, requested, why", [
    (LEGACY, IN_PROGRESS, "there is nothing to roll back"),
    (FAILED, IN_PROGRESS, "rolled back when it failed"),
    (FAILED, LEGACY, "force: true"),
    (NEW, IN_PROGRESS, "never migrated"),
    (NEW, LEGACY, "never migrated"),
    (MIGRATED, LEGACY, "holds the lock while it copies the objects back"),
    (IN_PROGRESS, IN_PROGRESS, FORWARD_LOCK),
    (IN_PROGRESS, LEGACY, FORWARD_LOCK),
])
def test_rollback_from_anything_but_migrated_or_its_own_lock_is_refused(current, requested, why):
    source = hostedcluster(current)
    pristine = copy.deepcopy(source)
    with pytest.raises(TransitionRefused) as raised:
        ms.plan_transition(source, requested, "run-a", NOW, rollback=True, force=True, takeover=True, reason="r")
    message = str(raised.value)
    assert "HostedCluster clusters/prod-01: cannot roll back from %s to %s" % (current, requested) in message
    assert why in message and "migrated -> in-progress, then in-progress -> legacy" in message
    assert source == pristine


@pytest.mark.parametrize("current", ms.STATES)
@pytest.mark.parametrize("requested", [MIGRATED, FAILED])
def test_rollback_true_only_asks_for_in_progress_or_legacy(current, requested):
    with pytest.raises(TransitionRefused, match="rollback: true works with state in-progress .* or legacy .*, not %s" % requested):
        ms.plan_transition(hostedcluster(MIGRATED if current == INVALID else current), requested, "run-a", NOW, rollback=True,
                           reason="r")
    with pytest.raises(TransitionRefused, match="repair: true"):
        ms.plan_transition(hostedcluster(INVALID), IN_PROGRESS, "run-a", NOW, rollback=True)


def test_rollback_lock_is_refused_to_others_until_expired_or_taken_over_and_keeps_its_direction():
    with pytest.raises(TransitionRefused) as raised:
        ms.plan_transition(rollback_locked(), LEGACY, "run-b", NOW, rollback=True)
    assert "the migration lock is held by 'run-a'" in str(raised.value) and "takeover: true" in str(raised.value)
    assert raised.value.refusal() == {"reason": "lock-held", "holder": "run-a", "status": "skipped"}
    # the one refusal class carries RV(refused) itself, and keeps it when judged again after a conflict
    assert raised.value.result() == {"refused": raised.value.refusal()}
    again = raised.value.again("judged again")
    assert str(again) == "judged again" and again.result() == {"refused": raised.value.refusal()}
    taken = ms.plan_transition(rollback_locked(), IN_PROGRESS, "run-b", NOW, rollback=True, takeover=True)
    assert (taken.changed, taken.took_over) == (True, True)
    assert ms.lease_direction(taken.annotations) == ms.ROLLBACK and ms.lease_of(taken.annotations)["holder"] == "run-b"
    expired = NOW + datetime.timedelta(seconds=900)
    finished = ms.plan_transition(rollback_locked(), LEGACY, "run-c", expired, rollback=True)
    assert finished.took_over is True and ms.state_of(finished.updated_object()) == LEGACY
    assert json.loads(finished.annotations[ms.HISTORY_ANNOTATION])[-1]["takeover"] is True


def test_a_migration_lock_never_inherits_a_stray_rollback_direction():
    source = hostedcluster(LEGACY, extra={ms.LEASE_DIRECTION_ANNOTATION: ms.ROLLBACK})
    plan = ms.plan_transition(source, IN_PROGRESS, "run-a", NOW)
    assert ms.LEASE_DIRECTION_ANNOTATION not in plan.annotations
    assert ms.report(plan.updated_object(), NOW)["lease"]["direction"] == ms.MIGRATE


@settings(max_examples=300, deadline=None)
@given(
    markers=st.one_of(
        st.sampled_from([STATE_ANNOTATIONS[state] for state in ms.STATES]),
        st.fixed_dictionaries({key: ANNOTATION_VALUES for key in ms.MARKER_ANNOTATIONS + (ms.LEASE_HOLDER_ANNOTATION,)})),
    direction=st.sampled_from([None, ms.ROLLBACK, ms.MIGRATE, "x"]),
    requested=st.sampled_from(ms.REQUESTABLE_STATES),
    rollback=st.booleans(),
    holder=st.sampled_from(["run-a", "run-b"]),
    takeover=st.booleans(),
    seconds=st.integers(min_value=-10, max_value=2000),
)
def test_any_plan_with_directions_keeps_rollback_and_migration_apart(markers, direction, requested, rollback, holder,
                                                                     takeover, seconds):
    annotations = {key: value for key, value in markers.items() if value is not None}
    annotations.setdefault(ms.LEASE_RENEW_TIME_ANNOTATION, "2026-03-01T12:00:00.000000Z")
    if direction is not None:
        annotations[ms.LEASE_DIRECTION_ANNOTATION] = direction
    source = {"metadata": {"name": "n", "namespace": "ns", "annotations": annotations, "labels": {}}}
    pristine = copy.deepcopy(source)
    current = ms.state_of(source)
    rollback_lock = current == IN_PROGRESS and direction == ms.ROLLBACK
    try:
        plan = ms.plan_transition(source, requested, holder, NOW + datetime.timedelta(seconds=seconds), takeover=takeover,
                                  force=True, reason="r", rollback=rollback)
    except TransitionRefused as exc:
        assert source == pristine
        assert re.search(r"cannot (move|roll back)|held by|works with state", str(exc))
        return
    assert source == pristine
    assert rollback or not rollback_lock, "a rollback lock moved without rollback: true"
    assert not rollback or rollback_lock or current in (MIGRATED, LEGACY), "a rollback from %s" % current
    assert not rollback or current != LEGACY or requested == LEGACY, "a rollback locked a legacy HostedCluster"
    if rollback:
        assert current == requested or requested in ms.ROLLBACK_MOVES[current]
    else:
        assert current == requested or requested in ms.LEGAL_MOVES[current]
    updated = plan.updated_object()
    assert ms.state_of(updated) == requested
    if requested == IN_PROGRESS:
        expected = ms.ROLLBACK if rollback else ms.MIGRATE
        assert ms.lease_direction(plan.annotations) == expected and ms.lease_of(plan.annotations)["holder"] == holder
    elif current != requested:
        assert ms.LEASE_DIRECTION_ANNOTATION not in plan.annotations and ms.lease_of(plan.annotations) is None
    again = ms.plan_transition(updated, requested, holder, NOW + datetime.timedelta(seconds=seconds), takeover=takeover,
                               force=True, reason="r", rollback=rollback)
    assert again.changed is False


# --- decide(): what a run does with a HostedCluster, judged from its query report (the migrate role follows it) ---
EXPIRED = {ms.LEASE_DURATION_ANNOTATION: "10"}
NO_LEASE = {ms.LEASE_HOLDER_ANNOTATION: ""}
ROLLBACK_LEASE = {ms.LEASE_DIRECTION_ANNOTATION: "rollback"}
WHO = "HostedCluster clusters/prod-01"
LOCKED_MIGRATION = "locked by run run-a (lease not expired); resume with that run id or takeover"
FAILED_BEFORE = ("failed before (copy: Machine x conflicted): remediate, then re-run with "
                 "private_capi_migrate_retry_failed=true")
MIGRATE_TABLE = [
    # state, extra annotations, holder, retry_failed, takeover, action, reason
    (NEW, None, "run-b", False, False, "mark-legacy-and-migrate", ""),
    (LEGACY, None, "run-b", False, False, "migrate", ""),
    (MIGRATED, None, "run-b", True, True, "skip", "already migrated"),
    (FAILED, None, "run-b", False, True, "skip", FAILED_BEFORE),
    (FAILED, None, "run-b", True, False, "mark-legacy-and-migrate", FAILED_BEFORE),
    (INVALID, None, "run-b", True, True, "invalid",
     WHO + " is in the invalid state (scope legacy together with private-capi-types); run migration_state with "
     "state=query repair=true, then re-run"),
    (IN_PROGRESS, NO_LEASE, "run-b", False, False, "resume", ""),
    (IN_PROGRESS, None, "run-a", False, False, "resume", "resumed its own lock (run run-a)"),
    (IN_PROGRESS, None, "run-b", False, False, "locked", LOCKED_MIGRATION),
    (IN_PROGRESS, None, "run-b", False, True, "resume", "took over the lock of run run-a (takeover)"),
    (IN_PROGRESS, EXPIRED, "run-b", False, False, "resume", "took over the lock of run run-a (its lease had expired)"),
    # a rollback lock is judged like any lock here; the in-progress move then refuses it (plan_transition)
    (IN_PROGRESS, ROLLBACK_LEASE, "run-b", False, False, "locked", LOCKED_MIGRATION),
]


@pytest.mark.parametrize("state, extra, holder, retry_failed, takeover, action, reason", MIGRATE_TABLE)
def test_decide_migrate_every_branch(state, extra, holder, retry_failed, takeover, action, reason):
    found = ms.report(hostedcluster(state, extra=extra), NOW)
    pristine = copy.deepcopy(found)
    decision = ms.decide(found, holder, direction=ms.MIGRATE, retry_failed=retry_failed, takeover=takeover)
    assert decision == {"action": action, "reason": reason, "status": EXPECTED_STATUS[ms.MIGRATE][action]}
    assert action in ms.MIGRATE_ACTIONS
    assert found == pristine


LOCKED_ROLLBACK = ("locked by rollback run run-a (lease not expired): resume it with -e "
                   "private_capi_rollback_run_id=run-a, or take it over with -e private_capi_rollback_takeover=true "
                   "once that run is known to be dead")
ROLLBACK_TABLE = [
    # state, extra annotations, holder, takeover, action, reason
    (MIGRATED, None, "run-b", False, "rollback", ""),
    (IN_PROGRESS, ROLLBACK_LEASE, "run-a", False, "resume-rollback", ""),
    (IN_PROGRESS, dict(ROLLBACK_LEASE, **EXPIRED), "run-b", False, "resume-rollback", ""),
    (IN_PROGRESS, ROLLBACK_LEASE, "run-b", True, "resume-rollback", ""),
    (IN_PROGRESS, ROLLBACK_LEASE, "run-b", False, "locked", LOCKED_ROLLBACK),
    (LEGACY, None, "run-b", True, "skip", "already legacy (standard CAPI types): nothing to roll back"),
    (IN_PROGRESS, None, "run-a", True, "refuse",
     "cannot roll back " + WHO + ": it is in-progress for a migration to private CAPI types (lock held by run-a), not "
     "migrated. Let migrate_fleet.yml finish it (re-run with its run id: it ends migrated, or failed after rolling "
     "itself back), then roll back if it is migrated"),
    (IN_PROGRESS, NO_LEASE, "run-a", False, "refuse",
     "cannot roll back " + WHO + ": it is in-progress for a migration to private CAPI types (lock held by nobody), "
     "not migrated. Let migrate_fleet.yml finish it (re-run with its run id: it ends migrated, or failed after "
     "rolling itself back), then roll back if it is migrated"),
    (FAILED, None, "run-b", True, "refuse",
     "cannot roll back " + WHO + ": it is failed (copy: Machine x conflicted); its migration was already rolled back "
     "when it failed and the standard objects are in place. Remediate, then move it to legacy (migration_state "
     "state=legacy force=true)"),
    (NEW, None, "run-b", False, "refuse",
     "cannot roll back " + WHO + ": it is new (created with private CAPI types, never migrated); there is nothing to "
     "roll back"),
    (INVALID, None, "run-b", False, "refuse",
     "cannot roll back " + WHO + ": its state is invalid (contradictory annotations); run migration_state with "
     "state=query repair=true, then re-run"),
]


# what the migrate role recorded per action when it held these tables itself (decide.yml, revert_decide.yml, before the roles followed migration_state)
EXPECTED_STATUS = {
    ms.MIGRATE: {"migrate": "migrating", "mark-legacy-and-migrate": "migrating", "resume": "migrating",
                 "skip": "skipped", "locked": "skipped", "invalid": "invalid"},
    ms.ROLLBACK: {"rollback": "rolling-back", "resume-rollback": "rolling-back", "skip": "skipped",
                  "locked": "skipped", "refuse": "refused"},
}


@pytest.mark.parametrize("state, extra, holder, takeover, action, reason", ROLLBACK_TABLE)
def test_decide_rollback_every_branch(state, extra, holder, takeover, action, reason):
    found = ms.report(hostedcluster(state, extra=extra), NOW)
    decision = ms.decide(found, holder, direction=ms.ROLLBACK, takeover=takeover)
    assert decision == {"action": action, "reason": reason, "status": EXPECTED_STATUS[ms.ROLLBACK][action]}
    assert action in ms.ROLLBACK_ACTIONS
    # retry_failed means nothing to a rollback
    assert ms.decide(found, holder, direction=ms.ROLLBACK, retry_failed=True, takeover=takeover) == decision


def test_decide_tables_cover_every_state_and_action():
    assert {row[0] for row in MIGRATE_TABLE} == set(ms.STATES) == {row[0] for row in ROLLBACK_TABLE}
    assert {row[5] for row in MIGRATE_TABLE} == set(ms.MIGRATE_ACTIONS)
    assert {row[4] for row in ROLLBACK_TABLE} == set(ms.ROLLBACK_ACTIONS)


def test_decide_refuses_an_unknown_direction():
    with pytest.raises(ValueError, match="direction must be one of migrate, rollback"):
        ms.decide(ms.report(hostedcluster(LEGACY), NOW), "run-a", direction="sideways")


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(ms.STATES), st.sampled_from([None, EXPIRED, NO_LEASE, ROLLBACK_LEASE]),
       st.sampled_from(["run-a", "run-b"]), st.booleans(), st.booleans())
def test_decide_goes_ahead_exactly_when_the_lock_move_would_be_allowed(state, extra, holder, retry_failed, takeover):
    """migrate/resume means the move to in-progress (after legacy first for mark-legacy-and-migrate) is not refused."""
    source = hostedcluster(state, extra=extra)
    action = ms.decide(ms.report(source, NOW), holder, retry_failed=retry_failed, takeover=takeover)["action"]
    if action == "mark-legacy-and-migrate":
        source = ms.plan_transition(source, LEGACY, holder, NOW, force=True).updated_object()
    try:
        ms.plan_transition(source, IN_PROGRESS, holder, NOW, takeover=takeover)
        lock_allowed = True
    except TransitionRefused:
        lock_allowed = False
    rollback_lock = state == IN_PROGRESS and extra == ROLLBACK_LEASE
    if action in ("migrate", "mark-legacy-and-migrate", "resume") and not rollback_lock:
        assert lock_allowed
    if action in ("locked", "invalid"):
        assert not lock_allowed


def test_every_action_of_a_direction_has_the_status_a_run_records():
    """The one action-to-status table covers every action decide() can say, with the statuses the role recorded."""
    assert ms.ACTION_STATUS == dict(((direction, action), status) for direction, statuses in EXPECTED_STATUS.items()
                                    for action, status in statuses.items())
    assert set(EXPECTED_STATUS[ms.MIGRATE]) == set(ms.MIGRATE_ACTIONS)
    assert set(EXPECTED_STATUS[ms.ROLLBACK]) == set(ms.ROLLBACK_ACTIONS)
