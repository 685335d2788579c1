# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The per-HostedCluster record of a fleet run, and the outcome it records, from the module results (pure but the clock).

The roles register each module's answer and pass them here in one mapping (``results``); this module decides the
status, the reason, the phase, the marks and the record's layout, which fleet/report.py reads. The YAML follows the
outcome (``outcome.review``, ``outcome.lock``, ``outcome.locked`` ...) and never decides itself.

results of a migration (roles/migrate): identity {management_cluster, namespace, name, hcp_namespace, run_id},
check_mode, access_review, allow_unsteady, and the registered answers found (migration_state query), access
(capi_access_review), steady (capi_steady), lock (migration_state in-progress), marks (the marks the role took before
the window: crds, pause, prepare), pause (hcp_quiesce), window (hcp_migrate_window), proxy_get (the GET through the
proxy), finish (hcp_migrate_finish), failure ({task, result}: what failed in the migration block), rescue
(hcp_migrate_rollback path=rescue), after (migration_state query after, when neither finish nor rescue read it back),
unknown ({task, error}: what failed outside the role's own rescue). A rollback (roles/rollback): identity, check_mode,
access_review, found, access, lock, run (hcp_migrate_rollback path=rollback), failure, after (when run did not read it
back).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import random
import string
from datetime import datetime

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    MARK_TIME_FORMAT,
    RUN_ID_TIME_FORMAT,
    format_mark,
    utc_now,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.fleet.report import (
    preinstall_summary as fleet_preinstall, unknown_reason)

RUN_ID_SUFFIX_CHARACTERS = string.ascii_lowercase + string.digits
MIGRATE_ACTIONS = ("migrate", "mark-legacy-and-migrate")


def mark(name, now=utc_now):
    """A phase mark as the modules write theirs: {name, at} (MARK_TIME_FORMAT, UTC)."""
    return {"name": name, "at": format_mark(now())}


def run_id(prefix, suffix_length=6, now=utc_now, choice=random.SystemRandom().choice):
    """<prefix>-<UTC time>-<suffix_length random letters and digits>: a run's lock holder (no suffix when 0)."""
    stamp = "%s-%s" % (prefix, now().strftime(RUN_ID_TIME_FORMAT))
    if not suffix_length:
        return stamp
    return "%s-%s" % (stamp, "".join(choice(RUN_ID_SUFFIX_CHARACTERS) for _position in range(suffix_length)))


def _ran(result):
    """A registered task that ran (registered, not skipped)."""
    return bool(result) and not result.get("skipped")


def _succeeded(result):
    return _ran(result) and not result.get("failed")


def _first_hostedcluster(query):
    return ((query or {}).get("hostedclusters") or [{}])[0]


def _failure_message(result, limit):
    return str(result.get("msg", "failed"))[:limit]


def _seconds_between(start, end):
    return (datetime.strptime(end, MARK_TIME_FORMAT) - datetime.strptime(start, MARK_TIME_FORMAT)).total_seconds()


def _steady_message(steady, results):
    """What capi_steady found: steady, or what is in flight and what the run does about it."""
    if steady.get("steady", True):
        return "steady"
    if results.get("allow_unsteady"):
        doing = ", going on as told (private_capi_migrate_allow_unsteady)"
    else:
        doing = ", would wait" if results.get("check_mode") else ", deferred"
    return "not steady%s: %s" % (doing, "; ".join(steady.get("reasons") or []))


def decide_migration(results):
    """The judgement before the block: the module's answer, then the pre-flight, the steadiness and the lock."""
    found = _first_hostedcluster(results.get("found"))
    status, reason, action = found.get("status", ""), found.get("reason", ""), found.get("action", "")
    outcome = {"state_found": found.get("state", "unknown"), "action": action, "stop": "", "review": False, "steady_message": "",
               "wait_steady": False, "mark_legacy": False, "lock": False, "locked": False, "resumed": False}
    if action == "invalid":
        return dict(outcome, status=status, reason=reason, stop=reason)
    outcome["review"] = status == "migrating" and bool(results.get("access_review"))
    access = results.get("access") or {}
    if "allowed" in access and not access["allowed"]:
        status, reason = "refused", access.get("message", "")
    outcome["wait_steady"] = action in MIGRATE_ACTIONS and status == "migrating"
    steady = results.get("steady") or {}
    outcome["steady_message"] = _steady_message(steady, results)
    if "steady" in steady and not steady["steady"] and not results.get("allow_unsteady"):
        waited = "would wait" if results.get("check_mode") else "not steady after %d s" % int(steady.get("waited_seconds") or 0)
        status, reason = "deferred", "%s for: %s" % (waited, "; ".join(steady.get("reasons") or []))
    outcome["mark_legacy"] = action == "mark-legacy-and-migrate" and status == "migrating"
    outcome["lock"] = status == "migrating"
    lock = results.get("lock") or {}
    if not lock:
        return dict(outcome, status=status, reason=reason)
    refused = lock.get("refused") or {}
    if status == "migrating" and "msg" in lock and refused.get("status", "") != "skipped":
        return dict(outcome, status=status, reason=reason, stop="Step lock: %s" % lock["msg"])
    lost = status == "migrating" and "refused" in lock
    outcome.update(locked=status == "migrating" and not lost, resumed=outcome["state_found"] == "in-progress")
    if lost:
        status, reason = refused.get("status"), lock.get("msg")
    return dict(outcome, status=status, reason=reason)


def _migration_phase(results):
    """The phase the migration is in (or failed in): the role's marks, then what the window and finish modules said."""
    phase = "lock"
    for role_mark in results.get("marks") or []:
        phase = role_mark["name"]
    window, proxy_get, finish = (results.get(key) or {} for key in ("window", "proxy_get", "finish"))
    if _ran(window):
        phase = window.get("phase") or "scale_down"
    if _ran(proxy_get):
        phase = "health"
    if _ran(finish):
        phase = finish.get("phase") or phase
    return phase


def _migration_marks(results):
    """read, the role's marks, the window's and the finish's, then the rollback's start (after a failure)."""
    found = results.get("found") or {}
    marks = [{"name": "read", "at": found["read_at"]}] if found.get("read_at") else []
    marks += list(results.get("marks") or [])
    for key in ("window", "finish"):
        marks += list((results.get(key) or {}).get("marks") or [])
    rescue_marks = (results.get("rescue") or {}).get("marks") or []
    if rescue_marks:
        marks.append({"name": "rollback", "at": rescue_marks[0]["at"]})
    return marks


def migrate_outcome(results):
    """What the migrate role does next and what it records: status, reason, phase, whether this run holds the lock."""
    outcome = decide_migration(results)
    outcome["phase"] = _migration_phase(results)
    if not outcome["locked"]:
        return _closing(outcome)
    failure = results.get("failure") or {}
    rescue = results.get("rescue") or {}
    if failure:
        failed = failure.get("result") or {}
        phase = failed.get("phase") or outcome["phase"]
        reason = "%s: %s (task '%s')" % (phase, _failure_message(failed, 400), failure.get("task", "?"))
        outcome.update(status="failed", phase=phase, reason=reason)
        if rescue.get("failed"):
            outcome.update(status="rollback-failed", reason=(
                "%s; ROLLBACK FAILED at %s: %s. The lock is still held by run %s: fix the cause and re-run with that "
                "run id (the migration resumes)" % (reason.strip(), rescue.get("phase", "?"), _failure_message(rescue, 300),
                                                    results["identity"]["run_id"])))
    elif _succeeded(results.get("finish")):
        outcome["status"] = "planned" if results.get("check_mode") else "migrated"
    return _closing(outcome)


def _closing(outcome):
    """Whether the role records this HostedCluster outside its locked block, and whether its host fails."""
    return dict(outcome, record_unlocked=not outcome["locked"] and outcome["status"] in ("skipped", "deferred", "refused"),
                unfinished=outcome["status"] in ("failed", "rollback-failed", "refused"))


def _controllers_down(results):
    """The window without CAPI controllers: the migration's (hcp_migrate_window) or its rescue's (a rolled back one)."""
    rescue = results.get("rescue") or {}
    window = results.get("window") or {}
    rolled_back = rescue.get("controllers_down_seconds") is not None
    down = rescue if rolled_back else window
    if down.get("controllers_down_seconds") is None:
        return None
    if rolled_back:
        waiting = float((window.get("scale_down") or {}).get("waited_seconds") or 0) + float(rescue["waited_seconds"])
    else:
        waiting = float(down.get("waited_seconds") or 0)
    return {"stopped_at": down.get("stopped_at"), "available_at": down.get("available_at"),
            "seconds": down["controllers_down_seconds"], "waiting_seconds": round(waiting, 3)}


def _reconcile_paused(results):
    """Zero stop: CAPI reconciliation paused, from the pause mark (the window's own, else the role's) to the window's
    unpause of the copies, or None (another strategy, or the window did not unpause)."""
    window = results.get("window") or {}
    unpaused = window.get("unpaused_at") if _succeeded(window) else None
    paused = [m["at"] for m in list(results.get("marks") or []) + list(window.get("marks") or [])
              if m.get("name") == "pause"]
    if not unpaused or not paused:
        return None
    seconds = _seconds_between(paused[-1], unpaused)
    return {"paused_at": paused[-1], "unpaused_at": unpaused, "seconds": round(max(seconds, 0.0), 3)}


def _preinstall(results):
    """Zero stop: the pre-install's figures (api_proxy_apply's rollout: the sidecars' rollout ahead of the window), or None
    (another strategy, or the wait did not finish)."""
    rollout = results.get("rollout") or {}
    if not _succeeded(rollout) or "pods_replaced" not in rollout:
        return None
    return {"pods_replaced": rollout["pods_replaced"], "longest_unready_seconds": rollout["longest_unready_seconds"],
            "seconds": rollout["waited_seconds"]}


MIGRATION_LEADER_STEPS = (("preinstall", "rollout"), ("window", "window"), ("rescue", "rescue"))


def _leaderless(results, steps=MIGRATION_LEADER_STEPS):
    """The longest time a CAPI manager had no live leader (its Lease without a live holder), as each step measured it:
    the pre-install's rollout (api_proxy_apply), the window (hcp_migrate_window) and a rolled-back cluster's rescue
    (hcp_migrate_rollback; steps: (figure, results key) pairs), and the longest of them (seconds); None when no step
    followed the Leases."""
    figures = {}
    for key, step in steps:
        value = (results.get(step) or {}).get("leaderless_seconds")
        if value is not None:
            figures[key] = value
    return dict(figures, seconds=max(figures.values())) if figures else None


def _identity(results):
    identity = results["identity"]
    return {"management_cluster": identity["management_cluster"], "namespace": identity["namespace"],
            "name": identity["name"], "hcp_namespace": identity["hcp_namespace"], "run_id": identity["run_id"],
            "check_mode": bool(results.get("check_mode"))}


def _after(results, steps=("finish", "rescue")):
    """The state after: the read back (RV(after)) of the step that made the last move - hcp_migrate_finish, or
    hcp_migrate_rollback (the migration's rescue; a rollback's run) - else the role's own query (results after,
    skipped when a step gave it)."""
    for step in steps:
        after = (results.get(step) or {}).get("after")
        if after:
            return after
    return results.get("after") or {}


def _migration_record(results):
    outcome = migrate_outcome(results)
    after = _after(results)
    window = results.get("window") or {}
    copied = (window.get("copied") or {}) if _succeeded(window) else {}
    counts = copied.get("counts") or {}
    record = _identity(results)
    record.update(
        status=outcome["status"], reason=str(outcome["reason"]).strip(), state_before=outcome["state_found"],
        state_after=_first_hostedcluster(after).get("state"), resumed=outcome["resumed"],
        marks=_migration_marks(results) + [{"name": "end", "at": after.get("read_at")}],
        objects=dict((kind, count["found"]) for kind, count in counts.items()),
        # requests of the steps' own modules (the api_proxy role's kubernetes.core tasks do not count theirs)
        api_calls=sum(int(((results.get(key) or {}).get("api_calls") or {}).get("total", 0))
                      for key in ("pause", "window", "finish")),
        plan=len(copied.get("plan") or []) if results.get("check_mode") else 0,
        # what was in flight when the run judged the HostedCluster (capi_steady), empty when it was steady
        steady_reasons=list((results.get("steady") or {}).get("reasons") or []),
        controllers_down=_controllers_down(results), reconcile_paused=_reconcile_paused(results),
        preinstall=_preinstall(results), leaderless=_leaderless(results))
    return record


def _unknown_record(results, now=utc_now):
    """The migrate role failed outside its own rescue (most often its management cluster stopped answering)."""
    outcome = migrate_outcome(results)
    unknown = results.get("unknown") or {}
    stopped_at = ((results.get("window") or {}).get("scale_down") or {}).get("stopped_at") or ""
    marks = _migration_marks(results)
    record = _identity(results)
    record.update(
        status="unknown",
        reason=unknown_reason(results["identity"]["run_id"], unknown.get("task", "?"), str(unknown.get("error", "failed")),
                              locked=outcome["locked"], status=outcome["status"] or "", phase=outcome["phase"] or "",
                              reason=str(outcome["reason"] or ""), stopped_at=stopped_at),
        state_before=outcome["state_found"], state_after="unknown", resumed=outcome["resumed"],
        marks=marks + [mark("end", now)] if marks else [], objects={}, api_calls=0, controllers_down=None)
    return record


def rollback_outcome(results):
    """What the rollback role does next and records: the module's judgement, the pre-flight, the lock, the run."""
    found = _first_hostedcluster(results.get("found"))
    status, reason = found.get("status", ""), found.get("reason", "")
    outcome = {"state_found": found.get("state", "unknown"), "phase": "lock", "review": False, "lock": False,
               "run": False, "api_calls": 0,
               # a rollback lock was found: this run resumes it, or another run holds it
               "resumed": found.get("action") in ("resume-rollback", "locked")}
    outcome["review"] = status == "rolling-back" and bool(results.get("access_review"))
    access = results.get("access") or {}
    if "allowed" in access and not access["allowed"]:
        status, reason = "refused", access.get("message", "")
    outcome["lock"] = status == "rolling-back"
    lock = results.get("lock") or {}
    # the lock task keeps the module's answer with failed_when: false, which sets failed to false: a move that did not
    # happen is told by the answer itself (RV(refused), or no RV(state))
    if status == "rolling-back" and _ran(lock) and (lock.get("failed") or "refused" in lock or "state" not in lock):
        # refused.status is skipped when another run won the lock; any other failure refuses
        status, reason = (lock.get("refused") or {}).get("status", "refused"), "lock: %s" % lock.get("msg")
    outcome["run"] = status == "rolling-back"
    run, failure = results.get("run") or {}, results.get("failure") or {}
    identity = results["identity"]
    if outcome["run"] and failure:
        failed = failure.get("result") or {}
        phase = failed.get("phase") or "lock"
        status, outcome["phase"] = "failed", phase
        outcome["api_calls"] = int((failed.get("api_calls") or {}).get("total", 0))
        reason = (
            "Rollback of HostedCluster %(namespace)s/%(name)s failed at step %(phase)s (task '%(task)s'): %(msg)s. No "
            "private object is deleted before its standard copy is verified; the HostedCluster stays in-progress, "
            "locked for the rollback by run %(run_id)s (both operators keep off it; its CAPI controllers may be at 0 "
            "replicas and its Cluster paused until the rollback ends). Fix the cause, then resume with ansible-playbook "
            "playbooks/rollback.yml -e private_capi_rollback_names=%(name)s -e private_capi_rollback_run_id=%(run_id)s "
            "- it goes on from where it stopped and ends legacy. migrate_fleet.yml refuses this lock."
            % {"namespace": identity["namespace"], "name": identity["name"], "phase": phase,
               "task": failure.get("task", "?"), "msg": _failure_message(failed, 500), "run_id": identity["run_id"]})
    elif outcome["run"] and _succeeded(run):
        status, outcome["phase"] = ("planned" if results.get("check_mode") else "rolled-back"), run.get("phase")
        outcome["api_calls"] = int(run["api_calls"]["total"])
    return dict(outcome, status=status, reason=reason, unfinished=status in ("failed", "refused"))


def _rollback_record(results):
    outcome = rollback_outcome(results)
    found, after = results.get("found") or {}, _after(results, steps=("run",))
    run, failure = results.get("run") or {}, results.get("failure") or {}
    marks = [{"name": "read", "at": found.get("read_at")}]
    if outcome["run"]:
        marks += list(((failure.get("result") or {}) if failure else run).get("marks") or [])
    counts = (run.get("copied") or {}).get("counts") or {}
    record = _identity(results)
    record.update(
        status=outcome["status"], reason=str(outcome["reason"]).strip(), state_before=outcome["state_found"],
        state_after=_first_hostedcluster(after).get("state"), resumed=outcome["resumed"],
        phases=[m["name"] for m in marks], seconds=round(_seconds_between(marks[0]["at"], after["read_at"]), 1),
        objects=dict((kind, count["found"]) for kind, count in counts.items()), api_calls=outcome["api_calls"],
        leaderless=_leaderless({"run": (failure.get("result") or {}) if failure else run}, (("rollback", "run"),)))
    return record


def _preinstall_record(results):
    """The record of one HostedCluster's pre-install (roles/migrate, entry point preinstall): the hold (hcp_quiesce's
    answer: hold), the API proxy's rollout (api_proxy_apply's: rollout) or the failure (failure: task, result)."""
    hold, rollout, failure = results.get("hold") or {}, results.get("rollout") or {}, results.get("failure") or {}
    record = _identity(results)
    if failure:
        status = "failed"
        reason = ("Pre-install of HostedCluster %s/%s failed at task '%s': %s. No migration was started and its state "
                  "is unchanged; fix the cause and re-run the pre-install, or leave the HostedCluster to "
                  "migrate_fleet.yml, which puts the proxy in itself" % (
                      record["namespace"], record["name"], failure.get("task", "?"),
                      _failure_message(failure.get("result") or {}, 500)))
    else:
        changed = bool(hold.get("changed")) or bool(rollout.get("changed"))
        status = "planned" if results.get("check_mode") else ("preinstalled" if changed else "unchanged")
        reason = ""
    figures = {} if failure else rollout.get("rollout") or {}  # a failed rollout's figures are no claim
    record.update(status=status, reason=reason, paused_until=hold.get("paused_until"),
                  preinstall=_preinstall({"rollout": figures}), leaderless_seconds=figures.get("leaderless_seconds"))
    return record


def _preinstall_line(host, preinstall):
    line = "%s: %s" % (host, preinstall["status"])
    figures = preinstall.get("preinstall")
    if figures:
        line += ", %d Pods replaced in %.1f s, the longest without a Ready replica %.1f s" % (
            figures["pods_replaced"], figures["seconds"], figures["longest_unready_seconds"])
    if preinstall.get("leaderless_seconds") is not None:
        line += ", CAPI managers without a leader at most %.1f s" % preinstall["leaderless_seconds"]
    if preinstall.get("paused_until"):
        line += ", the HyperShift operator held off until %s" % preinstall["paused_until"]
    if preinstall.get("reason"):
        line += " - %s" % preinstall["reason"]
    return line


PREINSTALL_DONE = ("preinstalled", "unchanged", "planned")


def preinstall_summary(records, hosts, run_id, check_mode=False):
    """preinstall_proxy.yml's summary: its lines, the figures over the fleet (HostedClusters by status, Pods replaced,
    the longest time without a Ready replica, the rollouts' median) and what to fail with when a selected HostedCluster
    was not pre-installed (empty when none). records: each host's pre-install record, or {status: not run}."""
    figures = fleet_preinstall(records) or {}  # the fleet report's own figures of the records' pre-install
    totals = {}
    for record in records:
        totals[record["status"]] = totals.get(record["status"], 0) + 1
    fleet = {"hostedclusters": len(records), "by_status": totals, "pods_replaced": figures.get("pods_replaced", 0),
             "longest_unready_seconds": figures.get("longest_unready_seconds"),
             "rollout_p50_seconds": figures.get("p50_seconds")}
    header = "Pre-install run %s%s: %s; %d Pods replaced, the longest without a Ready replica %s s" % (
        run_id, " (dry run: nothing changed)" if check_mode else "",
        ", ".join("%d %s" % (count, status) for status, count in sorted(totals.items())), fleet["pods_replaced"],
        fleet["longest_unready_seconds"])
    lines = "\n".join([header] + [_preinstall_line(host, record) for host, record in zip(hosts, records)]).split("\n")
    left = ["%s - %s" % (host, record["status"]) for host, record in zip(hosts, records)
            if record["status"] not in PREINSTALL_DONE]
    unfinished = ("not pre-installed: %s; fix the cause and re-run the pre-install (or let migrate_fleet.yml put the "
                  "proxy in)" % ", ".join(left)) if left else ""
    return {"lines": lines, "fleet": fleet, "records": [dict(record, host=host) for host, record in zip(hosts, records)],
            "unfinished": unfinished}


RECORDS = {"migrate": _migration_record, "unknown": _unknown_record, "rollback": _rollback_record,
           "preinstall": _preinstall_record}
OUTCOMES = {"migrate": migrate_outcome, "unknown": migrate_outcome, "rollback": rollback_outcome}


def record(results, kind="migrate"):
    """The record of one HostedCluster: migrate (the fleet report's), unknown (the migrate role failed outside its
    rescue) or rollback (rollback.yml's summary)."""
    return RECORDS[kind](results)


def outcome(results, kind="migrate"):
    return OUTCOMES[kind](results)


ROLLBACK_DONE = ("rolled-back", "skipped", "planned")


def _rollback_line(host, rollback):
    """One line of rollback.yml's summary: states, status, time, objects, reason."""
    line = "%s: %s -> %s, %s" % (host, rollback.get("state_before", "?"), rollback.get("state_after", "?"), rollback["status"])
    if "seconds" in rollback:
        line += " in %ss" % rollback["seconds"]
    if rollback.get("objects"):
        line += ", %d objects %s" % (sum(rollback["objects"].values()),
                                     "to copy back" if rollback["status"] == "planned" else "copied back")
    if (rollback.get("leaderless") or {}).get("seconds") is not None:
        line += ", CAPI managers without a leader at most %.1f s" % rollback["leaderless"]["seconds"]
    if rollback.get("reason"):
        line += " - %s" % rollback["reason"]
    if rollback["status"] == "not run":
        line += " (stopped after an earlier failure)"
    return line


def rollback_summary(records, hosts, run_id, check_mode=False):
    """rollback.yml's summary: its lines, and what to fail with when a selected HostedCluster was not rolled back
    (empty when none). records: each host's rollback record, or {status: not run} for a host the run stopped before."""
    header = "Rollback run %s%s" % (run_id, " (dry run: nothing changed)" if check_mode else "")
    # one list item per printed line, as the debug module shows it (a reason may hold a newline)
    lines = "\n".join([header] + [_rollback_line(host, rollback) for host, rollback in zip(hosts, records)]).strip().split("\n")
    left = ["%s - %s" % (host, rollback["status"]) for host, rollback in zip(hosts, records)
            if rollback["status"] not in ROLLBACK_DONE]
    unfinished = ("not rolled back: %s; fix the cause and resume with -e private_capi_rollback_run_id=%s"
                  % (", ".join(left), run_id)) if left else ""
    return {"lines": lines, "unfinished": unfinished}
