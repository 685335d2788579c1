# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The fleet migration report, from the per-HostedCluster records the migrate role writes (pure, no I/O).

A record: management_cluster, namespace, name, status, reason, state_before, state_after, marks (ordered
[{name, at}] with at = "%Y-%m-%dT%H:%M:%S.%f" UTC; the last mark is "end"), objects ({kind: count}), api_calls,
controllers_down (None, or {stopped_at, available_at, seconds, waiting_seconds}: the window without CAPI controllers,
from the first scale to 0 to all CAPI Deployments available again, and the part of it spent waiting on Kubernetes),
reconcile_paused (absent or None, or {paused_at, unpaused_at, seconds}: zero stop's pause of CAPI reconciliation, the
pause to the unpause of the copies; the controllers ran all along), preinstall (absent or None, or {pods_replaced,
longest_unready_seconds, seconds}: zero stop's rollout of the sidecars ahead of the window, as api_proxy_apply
measured it).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import statistics
from datetime import datetime

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import MARK_TIME_FORMAT
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError

PHASE_COLUMNS = ("crds", "fence", "sidecar", "pause", "prepare", "scale_down", "check", "copy", "flip", "resume", "signal", "health",
                 "finish", "rollback")
ZERO_STOP_PHASES = ("fence", "sidecar", "check", "flip")  # columns of the phases table only when a cluster ran them
SUMMARY_CLUSTERS = 19  # the console summary fits 24 lines: 3 headlines, the clusters, "... more", the report path
STATUS_ORDER = ("migrated", "planned", "skipped", "deferred", "refused", "failed", "rollback-failed", "unknown", "pending",
                "not attempted")
# Not migrated, to be told: the failure budget counts these per batch (fleet.selection.budget), and migrate_fleet.yml
# fails their hosts at the end of the run (with "not attempted": the run stopped before them).
FAILED_STATUSES = ("failed", "rollback-failed", "refused", "unknown")
SELECTION_FILE, STOPPED_FILE = "selection.json", "stopped.json"  # beside report.json: written by migrate_fleet.yml


class FleetReportError(PrivateCapiError, ValueError):
    """A record the report cannot read; the message names the record and the field."""


def _parse(record, at):
    try:
        return datetime.strptime(at, MARK_TIME_FORMAT)
    except (TypeError, ValueError):
        raise FleetReportError("record %s/%s: mark time %r is not %s; re-run the migrate role to rewrite it"
                               % (record.get("namespace"), record.get("name"), at, MARK_TIME_FORMAT))


def phases(record):
    """[{name, start, end, seconds}] of one record: each mark lasts until the next one."""
    marks = record.get("marks") or []
    result = []
    for current, following in zip(marks, marks[1:]):
        start, end = _parse(record, current["at"]), _parse(record, following["at"])
        result.append({"name": current["name"], "start": current["at"], "end": following["at"],
                       "seconds": round((end - start).total_seconds(), 3)})
    return result


def parallel_clusters(clusters):
    """The most clusters whose runs (first mark to last mark) overlapped at one moment: the batch size actually run.

    A cluster that ends at the moment another starts does not count as parallel to it.
    """
    events = []
    for cluster in clusters:
        if cluster["phases"]:
            events.append((cluster["phases"][0]["start"], 1))
            events.append((cluster["phases"][-1]["end"], -1))
    running = peak = 0
    for _at, step in sorted(events):  # at one time, -1 (an end) sorts before +1 (a start)
        running += step
        peak = max(peak, running)
    return peak


def controllers_window(record):
    """(seconds down, seconds of it waiting on Kubernetes, seconds of it our own work) of one record, or None."""
    window = record.get("controllers_down")
    if not isinstance(window, dict) or window.get("seconds") is None:
        return None
    try:
        down = float(window["seconds"])
        waiting = min(down, float(window.get("waiting_seconds") or 0.0))
    except (TypeError, ValueError):
        raise FleetReportError("record %s/%s: controllers_down %r holds no number of seconds; re-run the migrate role "
                               "to rewrite it" % (record.get("namespace"), record.get("name"), window))
    return round(down, 3), round(waiting, 3), round(down - waiting, 3)


def window_summary(clusters):
    """Fleet-wide figures of the windows without CAPI controllers: clusters, max, p50, sum (and own work p50)."""
    windows = [c for c in clusters if c.get("controllers_down_seconds") is not None]
    if not windows:
        return None
    down = [c["controllers_down_seconds"] for c in windows]
    own = [c["controllers_own_seconds"] for c in windows]
    waiting = [c["controllers_waiting_seconds"] for c in windows]
    migrated = [c["controllers_down_seconds"] for c in windows if c.get("status") == "migrated"]
    migrated_p50 = round(statistics.median(migrated), 3) if migrated else None
    # a failed migration's window runs from the stop to the rescue's start: the way back beside the way forward
    rolled_back = [{"namespace": c.get("namespace"), "name": c.get("name"), "seconds": c["controllers_down_seconds"],
                    "ratio_to_migrated_p50": round(c["controllers_down_seconds"] / migrated_p50, 2) if migrated_p50 else None}
                   for c in windows if c.get("status") in ("failed", "rollback-failed")]
    return {"clusters": len(windows), "max_seconds": round(max(down), 3),
            "p50_seconds": round(statistics.median(down), 3), "sum_seconds": round(sum(down), 3),
            "own_p50_seconds": round(statistics.median(own), 3), "waiting_p50_seconds": round(statistics.median(waiting), 3),
            "migrated_p50_seconds": migrated_p50, "rolled_back": rolled_back}


def seconds_summary(clusters, key):
    """Fleet-wide figures of one per-cluster figure (key: reconcile_paused_seconds, zero stop's pause of CAPI
    reconciliation; leaderless_seconds, the longest time a CAPI manager had no leader): clusters, p50, max; None when
    no cluster has it."""
    seconds = [c[key] for c in clusters if c.get(key) is not None]
    if not seconds:
        return None
    return {"clusters": len(seconds), "p50_seconds": round(statistics.median(seconds), 3),
            "max_seconds": round(max(seconds), 3)}


def preinstall_summary(clusters):
    """Fleet-wide figures of zero stop's pre-install: clusters, Pods replaced, the longest gap without a Ready replica
    of any CAPI-dependent Deployment, the rollout's p50 wait; None when no cluster ran it."""
    found = [c["preinstall"] for c in clusters if c.get("preinstall")]
    if not found:
        return None
    return {"clusters": len(found), "pods_replaced": sum(p["pods_replaced"] for p in found),
            "longest_unready_seconds": round(max(p["longest_unready_seconds"] for p in found), 3),
            "p50_seconds": round(statistics.median(p["seconds"] for p in found), 3)}


def window_headline(report):
    summary = report.get("controllers_down")
    paused = report.get("reconcile_paused")
    paused_line = "" if not paused else (
        "; CAPI reconciliation paused per cluster (pause to unpause, the controllers running): p50 %.1f s, max %.1f s "
        "over %d cluster%s" % (paused["p50_seconds"], paused["max_seconds"], paused["clusters"],
                               "" if paused["clusters"] == 1 else "s"))
    leaderless = report.get("leaderless")
    if leaderless:
        paused_line += ("; CAPI managers without a leader per cluster (the longest of the pre-install, the window and a "
                        "rescue): p50 %.1f s, max %.1f s" % (leaderless["p50_seconds"], leaderless["max_seconds"]))
    preinstall = report.get("preinstall")
    if preinstall:
        paused_line += ("; pre-install (the sidecars rolled in ahead, %d cluster%s): %d Pods replaced, longest gap "
                        "without a Ready replica %.1f s, rollout p50 %.1f s"
                        % (preinstall["clusters"], "" if preinstall["clusters"] == 1 else "s",
                           preinstall["pods_replaced"], preinstall["longest_unready_seconds"], preinstall["p50_seconds"]))
    if not summary:
        return "CAPI controllers down: no cluster's controllers were stopped" + paused_line
    line = ("CAPI controllers down per cluster (first scale to 0 to all available again): max %.1f s, p50 %.1f s, "
            "sum %.1f s over %d cluster%s; of it our own work p50 %.1f s, waiting on Kubernetes p50 %.1f s"
            % (summary["max_seconds"], summary["p50_seconds"], summary["sum_seconds"], summary["clusters"],
               "" if summary["clusters"] == 1 else "s", summary["own_p50_seconds"], summary["waiting_p50_seconds"]))
    rolled_back = summary.get("rolled_back") or []
    if rolled_back:
        line += "; migrated p50 %s, rolled back after a failure: %s" % (
            "n/a" if summary.get("migrated_p50_seconds") is None else "%.1f s" % summary["migrated_p50_seconds"],
            ", ".join("%s/%s %.1f s%s" % (c["namespace"], c["name"], c["seconds"], "" if c["ratio_to_migrated_p50"] is None
                                          else " (%.2fx the migrated p50)" % c["ratio_to_migrated_p50"])
                      for c in rolled_back))
    return line + paused_line


def key_of(management_cluster, namespace, name):
    """A HostedCluster's key across the fleet code: <management cluster>/<namespace>/<name>."""
    return "%s/%s/%s" % (management_cluster, namespace, name)


def _row_key(row):
    """key_of a record or selection row."""
    return key_of(row.get("management_cluster"), row.get("namespace"), row.get("name"))


def resume_command(run_id):
    return "ansible-playbook playbooks/migrate_fleet.yml -e private_capi_fleet_run_id=%s" % run_id


# the phases of the window without CAPI controllers: a migration stopped there left its Deployments at 0
CONTROLLERS_DOWN_PHASES = ("scale_down", "copy", "resume")


def unknown_reason(run_id, failed_task, error, locked=False, status="", phase="", reason="", stopped_at=""):
    """The reason of an "unknown" row (roles/migrate/tasks/unknown.yml: the migrate role failed outside its own
    rescue, most often because the management cluster stopped answering): how far this run's migration got when it
    held the lock (status, phase and reason as the role had them; stopped_at, when its window scaled the CAPI
    Deployments to 0), then the failed task, its error and the command that resumes it."""
    got = ""
    if locked and status == "rollback-failed":
        got = "its migration failed and so did the rollback: %s" % reason.strip()[:900]
        if stopped_at and phase in CONTROLLERS_DOWN_PHASES:
            got += ("; its CAPI Deployments were scaled to 0 at %s and may still be (no CAPI controller runs for it "
                    "until the resume)" % stopped_at)
    elif locked and status == "failed":
        got = "its migration failed and was rolled back: %s" % reason.strip()[:400]
    elif locked and status == "migrated":
        got = "its migration had finished"
    elif locked and status:
        got = "its migration (locked by this run) was at phase %s" % (phase or "?")
    told = ("task '%s' failed: %s; once the management cluster answers, resume with %s (the same run id takes its own "
            "lock back)" % (failed_task, str(error)[:400], resume_command(run_id)))
    return "%s; then %s" % (got, told) if got else told


def complete(records, selection, run_id, final=False, stopped=""):
    """records plus a row for each selected HostedCluster that has none, so that the report lists the whole selection:
    "pending" while the run goes on, "not attempted" once it has ended (final), with why and how to resume. A record
    that could not read the state before (its management cluster did not answer: "unknown") gets the state the
    selection read at the start of the run."""
    chosen = dict((_row_key(s), s) for s in selection or ())
    rows = []
    for record in records:
        selected = chosen.get(_row_key(record)) or {}
        if record.get("state_before") in (None, "", "unknown") and selected.get("state"):
            record = dict(record, state_before=selected["state"])
        rows.append(record)
    have = set(_row_key(r) for r in records)
    for selected in selection or ():
        if _row_key(selected) in have:
            continue
        if not final:
            reason = "not started yet"
        else:
            reason = "%s; resume with %s" % (stopped or "the run ended before it (a stop or a kill)", resume_command(run_id))
        rows.append({"management_cluster": selected.get("management_cluster"), "namespace": selected.get("namespace"),
                     "name": selected.get("name"),
                     "hcp_namespace": selected.get("hcp_namespace", ""), "run_id": run_id,
                     "status": "not attempted" if final else "pending", "reason": reason,
                     "state_before": selected.get("state") or "unknown", "state_after": selected.get("state") or "unknown",
                     "marks": [], "objects": {}, "api_calls": 0, "controllers_down": None})
    return rows


def build_report(records, run_id, started=None, finished=None, check_mode=False):
    """The report dict: run, totals per status, wall time, one entry per cluster with its phases.

    Three timings, each for what it says: wall_seconds (first mark to last mark of the whole run), parallel_clusters
    (the most clusters that ran at once) and seconds_per_migrated_cluster (the migrated clusters' own durations
    summed, divided by their number: what one cluster takes when it runs alone, not wall time divided by clusters).
    """
    clusters = []
    for record in sorted(records, key=lambda r: (r.get("management_cluster", ""), r.get("namespace", ""), r.get("name", ""))):
        entry = copy.deepcopy(record)
        entry["phases"] = phases(record)
        entry["seconds"] = round(sum(phase["seconds"] for phase in entry["phases"]), 3)
        entry["objects_total"] = sum((record.get("objects") or {}).values())
        window = controllers_window(record)
        entry["controllers_down_seconds"], entry["controllers_waiting_seconds"], entry["controllers_own_seconds"] = (
            window if window else (None, None, None))
        entry["reconcile_paused_seconds"] = (record.get("reconcile_paused") or {}).get("seconds")
        entry["leaderless_seconds"] = (record.get("leaderless") or {}).get("seconds")
        clusters.append(entry)
    totals = {}
    for entry in clusters:
        totals[entry["status"]] = totals.get(entry["status"], 0) + 1
    starts = [p["start"] for c in clusters for p in c["phases"]]
    ends = [p["end"] for c in clusters for p in c["phases"]]
    first, last = (min(starts), max(ends)) if starts else (started, finished)
    wall = 0.0
    if first and last:
        wall = round((datetime.strptime(last, MARK_TIME_FORMAT) - datetime.strptime(first, MARK_TIME_FORMAT)).total_seconds(), 3)
    migrated = [c for c in clusters if c["status"] == "migrated"]
    migrated_seconds = round(sum(c["seconds"] for c in migrated), 3)
    return {"run_id": run_id, "check_mode": bool(check_mode), "started": first, "finished": last,
            "wall_seconds": wall, "totals": totals, "clusters_total": len(clusters),
            "parallel_clusters": parallel_clusters(clusters),
            "migrated_seconds_total": migrated_seconds,
            "seconds_per_migrated_cluster": round(migrated_seconds / len(migrated), 3) if migrated else None,
            "objects_moved": sum(c["objects_total"] for c in migrated),
            "api_calls": sum(int(c.get("api_calls") or 0) for c in clusters),
            "controllers_down": window_summary(clusters),
            "reconcile_paused": seconds_summary(clusters, "reconcile_paused_seconds"),
            "leaderless": seconds_summary(clusters, "leaderless_seconds"),
            "preinstall": preinstall_summary(clusters),
            "unfinished": dict((key_of(c.get("management_cluster"), c.get("namespace"), c.get("name")),
                                "%s: %s" % (c["status"], c.get("reason") or "")) for c in clusters
                               if c["status"] in FAILED_STATUSES + ("not attempted",)),
            "clusters": clusters}


def timing_headline(report):
    """What the run's timings are, each named: wall time, clusters at once, time per migrated cluster alone."""
    parallel = report.get("parallel_clusters")
    text = "wall time of the run %.1f s" % report["wall_seconds"]
    if parallel is not None:
        text += ", up to %d cluster%s at once (batch size)" % (parallel, "" if parallel == 1 else "s")
    per_cluster = report["seconds_per_migrated_cluster"]
    if per_cluster is None:
        return text + "; time per migrated cluster: n/a (none migrated)"
    migrated = report["totals"].get("migrated", 0)
    total = report.get("migrated_seconds_total")
    # a cluster's own duration: one at a time only when none ran beside it (else it includes the contention)
    how = "one at a time" if parallel in (None, 1) else "each while up to %d ran at once" % parallel
    return text + "; time per migrated cluster, %s: %.1f s (%s%d migrated)" % (
        how, per_cluster, "%.1f s summed over " % total if total is not None else "mean of ", migrated)


def _mermaid_id(text):
    return "".join(ch if ch.isalnum() else "_" for ch in text)


def _several_management_clusters(clusters):
    return len(set(c.get("management_cluster") for c in clusters)) > 1


def _md_name(cluster, several):
    """A cluster as report.md names it outside the main table: namespace/name, with its management cluster in front
    when the report holds several (each may have a HostedCluster of that name)."""
    name = "%s/%s" % (cluster.get("namespace"), cluster.get("name"))
    return "%s/%s" % (cluster.get("management_cluster"), name) if several else name


def _gantt_name(cluster, several):
    name = cluster.get("name", "")
    return "%s/%s" % (cluster.get("management_cluster"), name) if several else name


def _gantt_lines(report, several):
    """report.md's Mermaid gantt chart: a section per cluster (its leaderless figure in the name), its phases, and the
    window its controllers were down."""
    lines = ["", "## Rollout", "", "```mermaid", "gantt",
             "    title Fleet migration %s" % report["run_id"],
             "    dateFormat YYYY-MM-DDTHH:mm:ss.SSS", "    axisFormat %H:%M:%S"]
    for c in report["clusters"]:
        gantt_name = _gantt_name(c, several)
        lines.append("    section %s%s" % (gantt_name, "" if c.get("leaderless_seconds") is None
                                           else " - leaderless %.1f s" % c["leaderless_seconds"]))
        for index, phase in enumerate(p for p in c["phases"] if p["name"] != "read"):
            tag = "crit, " if phase["name"] == "rollback" else ("done, " if c["status"] == "migrated" else "")
            task_id = "%s_%d" % (_mermaid_id(gantt_name), index)
            lines.append("    %s :%s%s, %s, %s" % (phase["name"], tag, task_id, phase["start"][:23], phase["end"][:23]))
        window = c.get("controllers_down") or {}
        if c.get("controllers_down_seconds") is not None and window.get("stopped_at") and window.get("available_at"):
            lines.append("    controllers down :active, %s_down, %s, %s" % (
                _mermaid_id(gantt_name), window["stopped_at"][:23], window["available_at"][:23]))
    return lines


def report_markdown(report):
    """Markdown: summary, per-cluster table, failures, and a Mermaid gantt of every cluster's phases. With several
    management clusters, each cluster outside the main table is named with its management cluster."""
    several = _several_management_clusters(report["clusters"])
    lines = ["# Fleet migration report - run `%s`" % report["run_id"], ""]
    if report["check_mode"]:
        lines += ["**Dry run (check mode): nothing was changed.**", ""]
    totals = ", ".join("%s %d" % (status, report["totals"][status]) for status in STATUS_ORDER if status in report["totals"])
    lines += ["- HostedClusters: %d (%s)" % (report["clusters_total"], totals or "none"),
              "- Timing: %s" % timing_headline(report),
              "- %s" % window_headline(report),
              "- CAPI objects moved: %d; API calls (copy and delete): %d" % (report["objects_moved"], report["api_calls"]), "",
              "| management cluster | HostedCluster | before | after | status | seconds | controllers down s (own) "
              "| paused s | leaderless s | objects | API calls | reason |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in report["clusters"]:
        lines.append("| %s | %s/%s | %s | %s | %s | %.1f | %s | %s | %s | %d | %s | %s |" % (
            c.get("management_cluster"), c.get("namespace"), c.get("name"), c.get("state_before"), c.get("state_after"),
            c.get("status"), c["seconds"], _window_cell(c), _seconds_cell(c.get("reconcile_paused_seconds")),
            _seconds_cell(c.get("leaderless_seconds")), c["objects_total"], c.get("api_calls", 0),
            (c.get("reason") or "").replace("|", "/").replace("\n", " ")))
    ran = set(p["name"] for c in report["clusters"] for p in c["phases"])
    columns = [name for name in PHASE_COLUMNS if name not in ZERO_STOP_PHASES or name in ran]
    lines += ["", "## Phases per cluster (seconds)", "",
              "| HostedCluster | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for c in report["clusters"]:
        by_name = {p["name"]: p["seconds"] for p in c["phases"]}
        lines.append("| %s | %s |" % (_md_name(c, several), " | ".join(
            "%.2f" % by_name[name] if name in by_name else "-"
            for name in columns)))
    lines += _gantt_lines(report, several)
    lines += ["```", ""]
    sections = (
        (("deferred",), "Deferred HostedClusters (not steady: nothing was changed; run again once they are, or see the "
                        "operator guide for private_capi_migrate_allow_unsteady)"),
        (("refused",), "Refused HostedClusters (the identity lacks rights the migration uses: nothing was changed; "
                       "grant the rules named - docs/operator-guide.md, RBAC - then run again)"),
        (("failed", "rollback-failed"), "Failed HostedClusters (remediate, then `migration_state: legacy force=true`, "
                                        "then re-run)"),
        (("unknown",), "HostedClusters in an unknown state (their management cluster did not answer, or the run "
                       "failed outside the migration: resume with the same run id once it answers)"),
        (("not attempted",), "HostedClusters not attempted (the run stopped before them: nothing was changed)"))
    for statuses, title in sections:
        listed = [c for c in report["clusters"] if c["status"] in statuses]
        if listed:
            lines += ["## " + title, ""]
            lines += ["- `%s`%s: %s" % (_md_name(c, several), " (%s)" % c["status"] if len(statuses) > 1 else "",
                                        c.get("reason")) for c in listed]
            lines.append("")
    return "\n".join(lines)


def _seconds_cell(seconds):
    return "-" if seconds is None else "%.1f" % seconds


def _window_cell(cluster):
    if cluster.get("controllers_down_seconds") is None:
        return "-"
    return "%.1f (%.1f)" % (cluster["controllers_down_seconds"], cluster["controllers_own_seconds"])


def report_summary(report, report_path=""):
    """A one-screen console summary (list of lines)."""
    lines = ["Fleet migration %s%s: %d HostedClusters - %s" % (
        report["run_id"], " (DRY RUN)" if report["check_mode"] else "", report["clusters_total"],
        ", ".join("%s %d" % (s, report["totals"][s]) for s in STATUS_ORDER if s in report["totals"]) or "none")]
    lines.append("%s; %d CAPI objects moved" % (timing_headline(report), report["objects_moved"]))
    lines.append(window_headline(report))
    for c in report["clusters"][:SUMMARY_CLUSTERS]:
        down = c.get("controllers_down_seconds")
        lines.append("  %-16s %-40s %-11s -> %-11s %6.1fs  down %s %s" % (
            c["status"], "%s/%s/%s" % (c.get("management_cluster"), c.get("namespace"), c.get("name")),
            c.get("state_before"), c.get("state_after"), c["seconds"], "%5.1fs" % down if down is not None else "    -",
            (c.get("reason") or "")[:60]))
    if len(report["clusters"]) > SUMMARY_CLUSTERS:
        lines.append("  ... %d more in the report" % (len(report["clusters"]) - SUMMARY_CLUSTERS))
    if report_path:
        lines.append("report: %s (.json, .md)" % report_path)
    return lines


DEFAULT_REPORT_ROOT = "reports"


def report_root(root, check_mode=False, in_check_mode=False):
    """Where a run writes its reports: ``root`` (default ``reports``) with ``~`` expanded and a relative path taken from
    the controller's current directory (where ansible-playbook runs; never beside the playbooks, which may be an
    installed collection), as an absolute path; "" when nothing is to be written (check mode, unless asked)."""
    if check_mode and not in_check_mode:
        return ""
    return os.path.realpath(os.path.expanduser(root or DEFAULT_REPORT_ROOT))
