"""The lease token of a module process (state/fence.py, machine.token_of): who may write under a HostedCluster's lock,
and what a resume says of a module still running. Pure judgements; the fence itself is shown on the real control plane
(tests/integration/fleet/test_killed_run_fenced.py)."""
import datetime
import json

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine as ms
from ansible_collections.hypershift.private_capi.plugins.module_utils.state.fence import json_pointer, judge, new_token

NOW = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
LOCKED = {ms.SCOPE_ANNOTATION: "legacy", ms.IN_PROGRESS_ANNOTATION: "true", ms.LEASE_HOLDER_ANNOTATION: "run-a",
          ms.LEASE_ACQUIRE_TIME_ANNOTATION: "2026-03-01T11:59:00.000000Z",
          ms.LEASE_RENEW_TIME_ANNOTATION: "2026-03-01T11:59:30.000000Z", ms.LEASE_DURATION_ANNOTATION: "900"}


def token(ident="t1", run="run-a", renewed="2026-03-01T11:59:55.000000Z"):
    annotations = {ms.LEASE_TOKEN_ANNOTATION: new_token(run, pid=4242, host="ctl-1", ident=ident)}
    if renewed:
        annotations[ms.LEASE_TOKEN_RENEW_TIME_ANNOTATION] = renewed
    return annotations


def hostedcluster(*parts):
    annotations = {}
    for part in parts:
        annotations.update(part)
    return {"metadata": {"namespace": "clusters", "name": "hc-1", "annotations": annotations}}


def test_a_token_is_compact_json_naming_the_process_and_its_run():
    value = json.loads(new_token("run-a", pid=4242, host="ctl-1", ident="abc"))
    assert value == {"id": "abc", "run": "run-a", "pid": 4242, "host": "ctl-1"}
    assert json.loads(new_token("run-a"))["id"] != json.loads(new_token("run-a"))["id"]


@pytest.mark.parametrize("renewed, age, live", [
    ("2026-03-01T11:59:55.000000Z", 5.0, True),
    ("2026-03-01T11:59:31.000000Z", 29.0, True),
    ("2026-03-01T11:59:30.000000Z", 30.0, False),  # TOKEN_LIVE_SECONDS: a renewing process renews every 5 s
    (None, None, False),  # never renewed: nothing says it is alive
])
def test_a_token_is_live_while_renewed_within_thirty_seconds(renewed, age, live):
    found = ms.token_of(token(renewed=renewed), NOW)
    assert (found["id"], found["run"], found["pid"], found["host"]) == ("t1", "run-a", 4242, "ctl-1")
    assert (found["age_seconds"], found["live"]) == (age, live)


def test_no_token_and_a_token_written_by_hand_are_read_without_failing():
    assert ms.token_of({}, NOW) is None
    found = ms.token_of({ms.LEASE_TOKEN_ANNOTATION: "not json"}, NOW)
    assert found["id"] == "not json" and found["live"] is False


def test_the_token_may_write_only_while_its_run_holds_the_lock_and_the_token_is_its_own():
    assert judge(hostedcluster(LOCKED, token()), "run-a", "t1", NOW) is None
    taken = judge(hostedcluster(LOCKED, token(ident="t2")), "run-a", "t1", NOW)
    assert "lease token of HostedCluster clusters/hc-1 now belongs to the module process 4242 on host ctl-1 of run " \
           "run-a (token t2, renewed 5s ago)" in taken
    assert "the token was removed" in judge(hostedcluster(LOCKED), "run-a", "t1", NOW)
    other_run = dict(LOCKED, **{ms.LEASE_HOLDER_ANNOTATION: "run-b"})
    assert judge(hostedcluster(other_run, token()), "run-a", "t1", NOW) == \
        "the lock of HostedCluster clusters/hc-1 is now held by run run-b, not run-a"
    migrated = {ms.PRIVATE_TYPES_ANNOTATION: "true"}
    assert judge(hostedcluster(migrated), "run-a", "t1", NOW) == \
        "HostedCluster clusters/hc-1 is no longer locked (state migrated)"


def test_a_move_out_of_in_progress_drops_the_token_with_the_lease():
    plan = ms.plan_transition(hostedcluster(LOCKED, token()), ms.MIGRATED, "run-a", NOW)
    assert ms.LEASE_TOKEN_ANNOTATION not in plan.annotations
    assert ms.LEASE_TOKEN_RENEW_TIME_ANNOTATION not in plan.annotations


@pytest.mark.parametrize("renewed, says", [("2026-03-01T11:59:55.000000Z", True), ("2026-03-01T11:50:00.000000Z", False)])
def test_a_resume_says_when_a_module_of_the_killed_run_still_renews_its_token(renewed, says):
    found = ms.report(hostedcluster(LOCKED, token(renewed=renewed)), NOW)
    decided = ms.decide(found, "run-a")
    assert decided["action"] == ms.ACTION_RESUME
    assert decided["reason"].startswith("resumed its own lock (run run-a)")
    assert ("the module process 4242 on host ctl-1 of run run-a (token t1, renewed 5s ago) is still writing"
            in decided["reason"]) is says


def test_json_pointers_escape_the_annotation_key():
    assert json_pointer(ms.LEASE_TOKEN_ANNOTATION) == \
        "/metadata/annotations/hypershift.openshift.io~1capi-migration-lease-token"
    assert json_pointer("a~b/c") == "/metadata/annotations/a~0b~1c"


def test_a_failed_rescue_is_noted_with_the_lock_read_by_the_query_named_by_the_resume_and_dropped_with_the_lock():
    note = {ms.ROLLBACK_FAILED_ANNOTATION: "the rescue by run run-a failed at copy: forbidden"}
    found = ms.report(hostedcluster(LOCKED, note), NOW)
    assert found["rollback_failed"] == "the rescue by run run-a failed at copy: forbidden"
    assert ms.decide(found, "run-a")["reason"] == (
        "resumed its own lock (run run-a); its last rescue or rollback had failed (the rescue by run run-a failed at "
        "copy: forbidden)")
    assert ms.report(hostedcluster(LOCKED), NOW)["rollback_failed"] is None
    for target, reason in ((ms.MIGRATED, None), (ms.FAILED, "copy: refused")):
        plan = ms.plan_transition(hostedcluster(LOCKED, note), target, "run-a", NOW, reason=reason)
        assert ms.ROLLBACK_FAILED_ANNOTATION not in plan.annotations
