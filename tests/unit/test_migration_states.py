"""The migration state machine: every marker combination, every move, the lease, history, repair, query."""
import copy
import datetime
import itertools
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.hypershift.private_capi.plugins.module_utils import migration_states as ms
from ansible_collections.hypershift.private_capi.plugins.module_utils.migration_states import (
    FAILED,
    IN_PROGRESS,
    INVALID,
    LEGACY,
    MIGRATED,
    NEW,
    MoveRefused,
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
    plan = ms.plan_move(source, requested, "run-a", NOW, reason="because" if requested == FAILED else None,
                        force=current == FAILED)
    assert source == pristine, "plan_move mutated its input"
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
    with pytest.raises(MoveRefused) as raised:
        ms.plan_move(source, requested, "run-a", NOW, reason="r", force=True, takeover=True)
    message = str(raised.value)
    assert "HostedCluster clusters/prod-01: cannot move from %s to %s" % (current, requested) in message
    legal = ", ".join(ms.LEGAL_MOVES[current]) or "none"
    assert "Legal moves from %s: %s." % (current, legal) in message
    if current == INVALID:
        assert "repair: true" in message


@pytest.mark.parametrize("state", [LEGACY, MIGRATED, FAILED])
def test_asking_the_current_state_is_a_no_op_or_a_label_repair(state):
    plan = ms.plan_move(hostedcluster(state), state, "run-a", NOW, reason="r")
    assert (plan.changed, plan.write, plan.event) == (False, False, None)
    unlabelled = ms.plan_move(hostedcluster(state, label=False), state, "run-a", NOW, reason="r")
    assert (unlabelled.changed, unlabelled.write) == (True, True)
    assert unlabelled.labels[ms.STATE_LABEL] == state and unlabelled.annotations == STATE_ANNOTATIONS[state]


def test_failed_needs_a_reason_and_leaving_failed_needs_force():
    with pytest.raises(MoveRefused, match="moving to failed needs a reason"):
        ms.plan_move(hostedcluster(IN_PROGRESS), FAILED, "run-a", NOW)
    with pytest.raises(MoveRefused, match=r"leaving failed \(reason: copy: Machine x conflicted\) needs explicit remediation.*force: true"):
        ms.plan_move(hostedcluster(FAILED), LEGACY, "run-a", NOW)
    assert ms.state_of(ms.plan_move(hostedcluster(FAILED), LEGACY, "run-a", NOW, force=True).updated_object()) == LEGACY


def test_same_holder_renews_without_change():
    plan = ms.plan_move(hostedcluster(IN_PROGRESS), IN_PROGRESS, "run-a", NOW, lease_seconds=600)
    assert (plan.changed, plan.write, plan.renewed, plan.took_over, plan.event) == (False, True, True, False, None)
    lease = ms.lease_of(plan.annotations)
    assert lease["acquire_time"] == "2026-03-01T11:59:00.000000Z"
    assert lease["renew_time"] == "2026-03-01T12:00:00.000000Z" and lease["duration_seconds"] == 600
    assert ms.HISTORY_ANNOTATION not in plan.annotations


def test_other_holder_is_refused_naming_holder_and_age():
    with pytest.raises(MoveRefused) as raised:
        ms.plan_move(hostedcluster(IN_PROGRESS), IN_PROGRESS, "run-b", NOW)
    message = str(raised.value)
    assert "held by 'run-a'" in message and "renewed 30s ago" in message and "expires in 870s" in message
    assert "takeover: true" in message
    for target in (MIGRATED, FAILED):
        with pytest.raises(MoveRefused, match="held by 'run-a'"):
            ms.plan_move(hostedcluster(IN_PROGRESS), target, "run-b", NOW, reason="r")


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
    plan = ms.plan_move(source, IN_PROGRESS, "run-b", now, takeover=takeover)
    assert (plan.changed, plan.took_over) == (True, True)
    assert ms.lease_of(plan.annotations)["holder"] == "run-b"
    history = json.loads(plan.annotations[ms.HISTORY_ANNOTATION])
    assert history[-1]["takeover"] is True and history[-1]["by"] == "run-b"
    assert plan.event[1] == "CAPIMigrationLeaseTakenOver"
    finished = ms.plan_move(hostedcluster(IN_PROGRESS, extra=extra), MIGRATED, "run-b", now, takeover=takeover)
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
    plan = ms.plan_move(source, IN_PROGRESS, "run-a", NOW)
    history = json.loads(plan.annotations[ms.HISTORY_ANNOTATION])
    assert len(history) == ms.HISTORY_LIMIT and history[0] == {"n": 6} and history[-1]["to"] == IN_PROGRESS
    garbage = hostedcluster(LEGACY, extra={ms.HISTORY_ANNOTATION: "{not json"})
    assert len(json.loads(ms.plan_move(garbage, IN_PROGRESS, "run-a", NOW).annotations[ms.HISTORY_ANNOTATION])) == 1


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
    with pytest.raises(MoveRefused, match="namespace clusters-prod-01 holds %d standard-group and %d private-group" % (standard, private)):
        ms.plan_repair(hostedcluster(INVALID), standard, private, "run-a", NOW, "clusters-prod-01")
    with pytest.raises(MoveRefused, match="is legacy, not invalid"):
        ms.plan_repair(hostedcluster(LEGACY), 1, 0, "run-a", NOW, "clusters-prod-01")


def test_report_and_selectors_and_hcp_namespace():
    entry = ms.report(hostedcluster(IN_PROGRESS), NOW)
    assert entry["state"] == IN_PROGRESS and entry["label_in_sync"] and entry["lease"]["holder"] == "run-a"
    assert entry["lease"]["age_seconds"] == 30.0 and entry["lease"]["expired"] is False
    assert ms.report(hostedcluster(NEW), NOW)["label_in_sync"] is True
    assert ms.report(hostedcluster(LEGACY, label=False), NOW)["label_in_sync"] is False
    assert ms.label_selector_for([LEGACY, FAILED, LEGACY]) == "hypershift.openshift.io/capi-migration-state in (failed,legacy)"
    assert ms.label_selector_for([LEGACY, NEW]) is None and ms.label_selector_for([]) is None
    assert ms.hcp_namespace("clusters", "prod.eu-1") == "clusters-prod-eu-1"


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
        plan = ms.plan_move(source, requested, holder, now, takeover=takeover, force=force, reason="r")
    except MoveRefused as exc:
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
    again = ms.plan_move(updated, requested, holder, now, takeover=takeover, force=force, reason="r")
    assert again.changed is False, "a second identical request must report no change"


def test_argspec_matches_documentation():
    assert_argspec_matches_documentation(migration_state)
