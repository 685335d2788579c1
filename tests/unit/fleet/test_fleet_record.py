"""The per-HostedCluster record and the outcome the roles follow (plugins/module_utils/fleet/record.py): the status,
the reason and the marks decided from the module answers, as the roles' YAML decided them before."""
import re

import pytest

from ansible_collections.hypershift.private_capi.plugins.filter import fleet_record as fleet_record_filter
from ansible_collections.hypershift.private_capi.plugins.module_utils.fleet import record

IDENTITY = {"management_cluster": "mc-1", "namespace": "clusters", "name": "hc-1", "hcp_namespace": "clusters-hc-1",
            "run_id": "fleet-1"}
READ, AFTER = "2026-03-01T12:00:00.000000", "2026-03-01T12:00:09.000000"


def _found(status="migrating", state="legacy", action="migrate", reason="legacy: migrate"):
    return {"read_at": READ, "hostedclusters": [{"status": status, "state": state, "action": action, "reason": reason}]}


def _after(state="migrated"):
    return {"read_at": AFTER, "hostedclusters": [{"state": state}]}


def _mark(name, second):
    return {"name": name, "at": "2026-03-01T12:00:%02d.000000" % second}


WINDOW = {"phase": "signal", "marks": [_mark("scale_down", 3), _mark("copy", 4)], "api_calls": {"total": 20},
          "scale_down": {"stopped_at": "2026-03-01T12:00:03.000000", "waited_seconds": 1.0},
          "copied": {"counts": {"Cluster": {"found": 1, "remaining": 1}, "Machine": {"found": 2, "remaining": 2}},
                     "plan": [{"kind": "Machine", "name": "m-1"}]},
          "controllers_down_seconds": 2.5, "stopped_at": "s", "available_at": "a", "waited_seconds": 1.23456}


def _migration(**answers):
    results = {"identity": IDENTITY, "check_mode": False, "access_review": True, "allow_unsteady": False,
               "found": _found(), "access": {"allowed": True}, "steady": {"steady": True, "reasons": []},
               "lock": {"changed": True}, "marks": [_mark("crds", 1), _mark("pause", 2)],
               "pause": {"api_calls": {"total": 3}}, "window": WINDOW, "proxy_get": {"skipped": True},
               "finish": {"phase": "finish", "marks": [_mark("health", 6), _mark("finish", 7)], "api_calls": {"total": 5}},
               "failure": {}, "rescue": {}, "after": _after()}
    results.update(answers)
    return results


def test_a_migrated_record_has_the_layout_the_report_reads():
    migrated = record.record(_migration())
    assert migrated["status"] == "migrated" and migrated["state_before"] == "legacy" and migrated["state_after"] == "migrated"
    assert [m["name"] for m in migrated["marks"]] == ["read", "crds", "pause", "scale_down", "copy", "health", "finish", "end"]
    assert migrated["marks"][-1]["at"] == AFTER
    assert migrated["objects"] == {"Cluster": 1, "Machine": 2} and migrated["api_calls"] == 28 and migrated["plan"] == 0
    assert migrated["controllers_down"] == {"stopped_at": "s", "available_at": "a", "seconds": 2.5, "waiting_seconds": 1.235}
    assert record.record(_migration(check_mode=True))["status"] == "planned"
    assert record.record(_migration(check_mode=True))["plan"] == 1


def test_the_state_after_is_finishs_read_back_when_it_made_the_move_else_the_roles_own_query():
    finish = dict(_migration()["finish"], after={"read_at": "2026-03-01T12:00:08.500000",
                                                 "hostedclusters": [{"state": "migrated"}]})
    skipped = {"skipped": True, "changed": False, "false_condition": "migrate_finish.after is not defined"}
    migrated = record.record(_migration(finish=finish, after=skipped))
    assert migrated["state_after"] == "migrated" and migrated["marks"][-1] == {"name": "end", "at": "2026-03-01T12:00:08.500000"}
    # a finish without its read back (it failed, or its read failed): the rescue's read back, else the role's query
    rescued = record.record(_migration(finish={"failed": True, "msg": "health"}, after=skipped,
                                       rescue={"phase": "state", "after": _after("failed")}))
    assert rescued["state_after"] == "failed" and rescued["marks"][-1]["at"] == AFTER
    rolled_back = record.record(_migration(finish={"failed": True, "msg": "health"}, after=_after("failed")))
    assert rolled_back["state_after"] == "failed" and rolled_back["marks"][-1]["at"] == AFTER


def test_the_judgement_before_the_lock_follows_the_modules():
    refused = record.outcome(_migration(access={"allowed": False, "message": "missing rights"}, lock={}))
    assert (refused["status"], refused["reason"], refused["lock"], refused["record_unlocked"]) == (
        "refused", "missing rights", False, True)
    deferred = record.outcome(_migration(steady={"steady": False, "waited_seconds": 12.7, "reasons": ["a", "b"]}, lock={}))
    assert (deferred["status"], deferred["reason"]) == ("deferred", "not steady after 12 s for: a; b")
    waits = record.outcome(_migration(check_mode=True, steady={"steady": False, "reasons": ["a"]}, lock={}))
    assert waits["reason"] == "would wait for: a"
    assert record.outcome(_migration(allow_unsteady=True, steady={"steady": False, "reasons": ["a"]}))["locked"]
    lost = record.outcome(_migration(lock={"msg": "held by run-2", "refused": {"status": "skipped"}}, window={}, finish={}))
    assert (lost["status"], lost["reason"], lost["locked"], lost["stop"]) == ("skipped", "held by run-2", False, "")
    broken = record.outcome(_migration(lock={"msg": "conflict", "refused": {"status": "refused"}}))
    assert broken["stop"] == "Step lock: conflict" and not broken["locked"]
    invalid = record.outcome(_migration(found=_found(status="invalid", action="invalid", reason="both markers")))
    assert invalid["stop"] == "both markers" and not invalid["review"]


def test_a_failed_migration_names_its_phase_and_a_failed_rescue_how_to_resume():
    failed_window = dict(WINDOW, failed=True, msg="copy refused", phase="copy")
    failed = record.record(_migration(window=failed_window, finish={},
                                      failure={"task": "Stop the CAPI controllers", "result": failed_window},
                                      rescue={"marks": [_mark("x", 5)], "controllers_down_seconds": 4.0,
                                              "waited_seconds": 2.0, "stopped_at": "s2", "available_at": "a2"},
                                      after=_after("failed")))
    assert failed["status"] == "failed" and failed["reason"] == "copy: copy refused (task 'Stop the CAPI controllers')"
    assert [m["name"] for m in failed["marks"]] == ["read", "crds", "pause", "scale_down", "copy", "rollback", "end"]
    assert failed["objects"] == {} and failed["controllers_down"]["waiting_seconds"] == 3.0
    rescue_failed = record.outcome(_migration(window=failed_window, finish={},
                                              failure={"task": "T", "result": failed_window},
                                              rescue={"failed": True, "phase": "resume", "msg": "no answer"}))
    assert rescue_failed["status"] == "rollback-failed" and rescue_failed["unfinished"]
    assert rescue_failed["reason"].endswith("ROLLBACK FAILED at resume: no answer. The lock is still held by run fleet-1: "
                                            "fix the cause and re-run with that run id (the migration resumes)")


def test_an_unknown_record_keeps_how_far_the_migration_got():
    unknown = record.record(_migration(after={}, unknown={"task": "Read the state after", "error": "no answer"}),
                            "unknown")
    assert unknown["status"] == "unknown" and unknown["state_after"] == "unknown" and unknown["api_calls"] == 0
    assert re.match(r"its migration had finished; then task 'Read the state after' failed: no answer", unknown["reason"])
    assert unknown["marks"][-1]["name"] == "end" and len(unknown["marks"][-1]["at"]) == len(READ)
    unread = record.record({"identity": IDENTITY, "unknown": {"task": "Step 1 - read the state, review the rights, wait until nothing is in flight, take (or resume) the lock", "error": "x"}},
                           "unknown")
    assert unread["reason"].startswith("task 'Step 1 - read the state") and unread["marks"] == []


def _rollback(**answers):
    results = {"identity": dict(IDENTITY, run_id="rollback-1"), "check_mode": False, "access_review": True,
               "found": _found(status="rolling-back", state="migrated", action="rollback", reason=""),
               "access": {"allowed": True}, "lock": {"changed": True, "state": "in-progress", "failed": False},
               "run": {"phase": "legacy", "marks": [_mark("pause", 1), _mark("legacy", 5)], "api_calls": {"total": 40},
                       "copied": {"counts": {"Cluster": {"found": 1}}}},
               "failure": {}, "after": _after("legacy")}
    results.update(answers)
    return results


def test_a_rollback_record():
    rolled_back = record.record(_rollback(), "rollback")
    assert rolled_back["status"] == "rolled-back" and rolled_back["phases"] == ["read", "pause", "legacy"]
    assert rolled_back["seconds"] == 9.0 and rolled_back["objects"] == {"Cluster": 1} and rolled_back["api_calls"] == 40
    # the run's own read back of the state after its move (the role's query skipped)
    run = dict(_rollback()["run"], after={"read_at": "2026-03-01T12:00:07.000000", "hostedclusters": [{"state": "legacy"}]})
    read_back = record.record(_rollback(run=run, after={"skipped": True, "changed": False}), "rollback")
    assert read_back["state_after"] == "legacy" and read_back["seconds"] == 7.0
    failed = record.outcome(_rollback(run={"failed": True}, failure={"task": "Steps 2-9", "result": {
        "msg": "copy back refused", "phase": "copy_back", "api_calls": {"total": 7}}}), "rollback")
    assert failed["status"] == "failed" and failed["unfinished"] and failed["api_calls"] == 7
    assert failed["reason"].startswith("Rollback of HostedCluster clusters/hc-1 failed at step copy_back (task 'Steps "
                                       "2-9'): copy back refused. No private object is deleted")
    skipped = record.outcome(_rollback(found=_found(status="skipped", state="legacy", action="skip", reason="legacy"),
                                       lock={"skipped": True}, run={"skipped": True}), "rollback")
    assert (skipped["status"], skipped["run"], skipped["unfinished"]) == ("skipped", False, False)


def test_a_refused_rollback_lock_stops_before_the_run():
    # the lock task registers with failed_when: false, so Ansible reports failed false: the answer itself tells
    won = {"failed": False, "failed_when_result": False, "changed": False, "msg": "locked by rollback-2",
           "refused": {"reason": "lock-held", "holder": "rollback-2", "status": "skipped"}}
    other = {"failed": False, "failed_when_result": False, "changed": False, "msg": "HTTP 403 forbidden"}
    for lock, status in ((won, "skipped"), (other, "refused")):
        outcome = record.outcome(_rollback(lock=lock, run={"skipped": True}), "rollback")
        assert (outcome["status"], outcome["run"]) == (status, False)
        assert outcome["reason"] == "lock: %s" % lock["msg"]


def test_run_ids_and_marks_take_the_time_in_python():
    assert re.match(r"^fleet-\d{8}T\d{6}Z-[a-z0-9]{6}$", fleet_record_filter.fleet_run_id("fleet"))
    assert re.match(r"^verify-\d{8}T\d{6}Z$", fleet_record_filter.fleet_run_id("verify", 0))
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$", fleet_record_filter.fleet_mark("pause")["at"])


ZERO_STOP_WINDOW = {"phase": "signal", "marks": [_mark("check", 3), _mark("pause", 4), _mark("copy", 5), _mark("flip", 6)],
                    "api_calls": {"total": 12}, "copied": WINDOW["copied"], "controllers_down_seconds": 0.0,
                    "strategy": "zero_stop", "unpaused_at": "2026-03-01T12:00:07.500000"}
ROLLOUT = {"pods_replaced": 2, "longest_unready_seconds": 0.0, "waited_seconds": 21.4, "polls": 90,
           "deployments": [{"name": "cluster-api", "pods_replaced": ["cluster-api-1"], "longest_unready_seconds": 0.0}]}


def test_a_zero_stop_record_holds_the_pause_and_the_preinstall():
    migrated = record.record(_migration(window=ZERO_STOP_WINDOW, rollout=ROLLOUT))
    assert migrated["reconcile_paused"] == {"paused_at": "2026-03-01T12:00:04.000000",
                                            "unpaused_at": "2026-03-01T12:00:07.500000", "seconds": 3.5}
    assert migrated["preinstall"] == {"pods_replaced": 2, "longest_unready_seconds": 0.0, "seconds": 21.4}
    # the scale-down strategy runs no pre-install; a wait that failed gives no figure
    assert record.record(_migration())["preinstall"] is None
    assert record.record(_migration(window=ZERO_STOP_WINDOW, rollout=dict(ROLLOUT, failed=True)))["preinstall"] is None


def test_the_record_holds_the_longest_leaderless_stretch_of_each_step_and_of_all():
    rollout = dict(ROLLOUT, leaderless_seconds=27.4)
    migrated = record.record(_migration(window=dict(ZERO_STOP_WINDOW, leaderless_seconds=0.0), rollout=rollout))
    assert migrated["leaderless"] == {"preinstall": 27.4, "window": 0.0, "seconds": 27.4}
    # a rolled-back cluster: its rescue's figure counts too
    rescued = record.record(_migration(window=dict(ZERO_STOP_WINDOW, leaderless_seconds=1.0), rollout=rollout,
                                       rescue={"leaderless_seconds": 31.0, "marks": []}))
    assert rescued["leaderless"] == {"preinstall": 27.4, "window": 1.0, "rescue": 31.0, "seconds": 31.0}
    # no step followed the Leases (an older run's results, or a failure before the pre-install)
    assert record.record(_migration())["leaderless"] is None


def test_a_rollback_record_and_its_summary_line_hold_the_leaderless_figure():
    run = dict(_rollback()["run"], leaderless_seconds=0.0)
    rolled_back = record.record(_rollback(run=run), "rollback")
    assert rolled_back["leaderless"] == {"rollback": 0.0, "seconds": 0.0}
    line = record.rollback_summary([rolled_back], ["mc-1/clusters/hc-1"], "rollback-1")["lines"][1]
    assert line.endswith("1 objects copied back, CAPI managers without a leader at most 0.0 s"), line
    assert record.record(_rollback(), "rollback")["leaderless"] is None  # nothing followed: no claim
    assert "leader" not in record.rollback_summary([record.record(_rollback(), "rollback")], ["h"], "r")["lines"][1]


# The pre-install (roles/migrate preinstall.yml, playbooks/preinstall_proxy.yml): its record and its summary.
PREINSTALL_ROLLOUT = {"changed": True, "rollout": {"pods_replaced": 6, "longest_unready_seconds": 0.0,
                                                   "waited_seconds": 41.5, "leaderless_seconds": 27.0}}


def _preinstall(**answers):
    results = {"identity": dict(IDENTITY, run_id="preinstall-1"), "check_mode": False,
               "hold": {"changed": True, "paused_until": "2026-12-05T00:00:00Z"}, "rollout": PREINSTALL_ROLLOUT,
               "failure": {}}
    results.update(answers)
    return record.record(results, "preinstall")


def test_a_preinstall_record_holds_the_hold_the_rollout_and_the_leaderless_figure():
    done = _preinstall()
    assert (done["status"], done["reason"], done["paused_until"], done["leaderless_seconds"]) == (
        "preinstalled", "", "2026-12-05T00:00:00Z", 27.0)
    assert done["preinstall"] == {"pods_replaced": 6, "longest_unready_seconds": 0.0, "seconds": 41.5}
    again = _preinstall(hold={"changed": False, "paused_until": "2026-12-05T00:00:00Z"},
                        rollout={"changed": False, "rollout": dict(PREINSTALL_ROLLOUT["rollout"], pods_replaced=0)})
    assert again["status"] == "unchanged"
    assert _preinstall(check_mode=True)["status"] == "planned"
    failed = _preinstall(hold={}, rollout={}, failure={"task": "Hold", "result": {"msg": "HostedCluster clusters/hc-1 is in-progress"}})
    assert failed["status"] == "failed" and failed["preinstall"] is None
    assert failed["reason"].startswith("Pre-install of HostedCluster clusters/hc-1 failed at task 'Hold': HostedCluster "
                                       "clusters/hc-1 is in-progress. No migration was started")


def test_the_preinstall_summary_gives_the_fleet_figures_and_names_what_was_not_preinstalled():
    records = [_preinstall(), _preinstall(rollout={"changed": True, "rollout": dict(
        PREINSTALL_ROLLOUT["rollout"], pods_replaced=4, longest_unready_seconds=1.5, waited_seconds=60.0)}),
        _preinstall(failure={"task": "Hold", "result": {"msg": "conflict"}}), {"status": "not run"}]
    hosts = ["h1", "h2", "h3", "h4"]
    summary = record.preinstall_summary(records, hosts, "preinstall-1")
    assert summary["fleet"] == {"hostedclusters": 4, "by_status": {"preinstalled": 2, "failed": 1, "not run": 1},
                                # the fleet report's median (fleet/report.py preinstall_summary): 41.5 and 60.0
                                "pods_replaced": 10, "longest_unready_seconds": 1.5, "rollout_p50_seconds": 50.75}
    assert summary["lines"][0] == ("Pre-install run preinstall-1: 1 failed, 1 not run, 2 preinstalled; 10 Pods replaced, "
                                   "the longest without a Ready replica 1.5 s")
    assert summary["lines"][1] == (
        "h1: preinstalled, 6 Pods replaced in 41.5 s, the longest without a Ready replica 0.0 s, CAPI managers without a "
        "leader at most 27.0 s, the HyperShift operator held off until 2026-12-05T00:00:00Z")
    assert summary["unfinished"].startswith("not pre-installed: h3 - failed, h4 - not run; fix the cause")
    assert [entry["host"] for entry in summary["records"]] == hosts
    assert record.preinstall_summary([_preinstall()], ["h1"], "p")["unfinished"] == ""
    with pytest.raises(Exception, match="record 0 has no status"):
        fleet_record_filter.fleet_preinstall_summary([{}], ["h1"], "p")
