# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The fleet migration report, from the per-HostedCluster records the migrate role writes (pure, no I/O).

A record: management_cluster, namespace, name, status, reason, state_before, state_after, marks (ordered
[{name, at}] with at = "%Y-%m-%dT%H:%M:%S.%f" UTC; the last mark is "end"), objects ({kind: count}), api_calls.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
from datetime import datetime

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"
PHASE_COLUMNS = ("pause", "scale_down", "crds", "copy", "proxy", "resume", "health", "finish", "rollback")
STATUS_ORDER = ("migrated", "planned", "skipped", "failed", "rollback-failed", "pending")


class FleetReportError(PrivateCapiError, ValueError):
    """A record the report cannot read; the message names the record and the field."""


def _parse(record, at):
    try:
        return datetime.strptime(at, TIME_FORMAT)
    except (TypeError, ValueError):
        raise FleetReportError("record %s/%s: mark time %r is not %s; re-run the migrate role to rewrite it"
                               % (record.get("namespace"), record.get("name"), at, TIME_FORMAT))


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
        clusters.append(entry)
    totals = {}
    for entry in clusters:
        totals[entry["status"]] = totals.get(entry["status"], 0) + 1
    starts = [p["start"] for c in clusters for p in c["phases"]]
    ends = [p["end"] for c in clusters for p in c["phases"]]
    first, last = (min(starts), max(ends)) if starts else (started, finished)
    wall = 0.0
    if first and last:
        wall = round((datetime.strptime(last, TIME_FORMAT) - datetime.strptime(first, TIME_FORMAT)).total_seconds(), 3)
    migrated = [c for c in clusters if c["status"] == "migrated"]
    migrated_seconds = round(sum(c["seconds"] for c in migrated), 3)
    return {"run_id": run_id, "check_mode": bool(check_mode), "started": first, "finished": last,
            "wall_seconds": wall, "totals": totals, "clusters_total": len(clusters),
            "parallel_clusters": parallel_clusters(clusters),
            "migrated_seconds_total": migrated_seconds,
            "seconds_per_migrated_cluster": round(migrated_seconds / len(migrated), 3) if migrated else None,
            "objects_moved": sum(c["objects_total"] for c in migrated),
            "api_calls": sum(int(c.get("api_calls") or 0) for c in clusters),
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


def report_markdown(report):
    """Markdown: summary, per-cluster table, failures, and a Mermaid gantt of every cluster's phases."""
    lines = ["# Fleet migration report - run `%s`" % report["run_id"], ""]
    if report["check_mode"]:
        lines += ["**Dry run (check mode): nothing was changed.**", ""]
    totals = ", ".join("%s %d" % (status, report["totals"][status]) for status in STATUS_ORDER if status in report["totals"])
    lines += ["- HostedClusters: %d (%s)" % (report["clusters_total"], totals or "none"),
              "- Timing: %s" % timing_headline(report),
              "- CAPI objects moved: %d; API calls (copy and delete): %d" % (report["objects_moved"], report["api_calls"]), "",
              "| management cluster | HostedCluster | before | after | status | seconds | objects | API calls | reason |",
              "|---|---|---|---|---|---|---|---|---|"]
    for c in report["clusters"]:
        lines.append("| %s | %s/%s | %s | %s | %s | %.1f | %d | %s | %s |" % (
            c.get("management_cluster"), c.get("namespace"), c.get("name"), c.get("state_before"), c.get("state_after"),
            c.get("status"), c["seconds"], c["objects_total"], c.get("api_calls", 0),
            (c.get("reason") or "").replace("|", "/").replace("\n", " ")))
    lines += ["", "## Phases per cluster (seconds)", "",
              "| HostedCluster | " + " | ".join(PHASE_COLUMNS) + " |", "|---|" + "---|" * len(PHASE_COLUMNS)]
    for c in report["clusters"]:
        by_name = {p["name"]: p["seconds"] for p in c["phases"]}
        lines.append("| %s/%s | %s |" % (c.get("namespace"), c.get("name"), " | ".join(
            "%.2f" % by_name[name] if name in by_name else "-"
            for name in PHASE_COLUMNS)))
    lines += ["", "## Rollout", "", "```mermaid", "gantt",
              "    title Fleet migration %s" % report["run_id"],
              "    dateFormat YYYY-MM-DDTHH:mm:ss.SSS", "    axisFormat %H:%M:%S"]
    for c in report["clusters"]:
        lines.append("    section %s" % c.get("name"))
        for index, phase in enumerate(p for p in c["phases"] if p["name"] != "read"):
            tag = "crit, " if phase["name"] == "rollback" else ("done, " if c["status"] == "migrated" else "")
            task_id = "%s_%d" % (_mermaid_id(c.get("name", "")), index)
            lines.append("    %s :%s%s, %s, %s" % (phase["name"], tag, task_id, phase["start"][:23], phase["end"][:23]))
    lines += ["```", ""]
    failed = [c for c in report["clusters"] if c["status"] in ("failed", "rollback-failed")]
    if failed:
        lines += ["## Failed HostedClusters (remediate, then `migration_state: legacy force=true`, then re-run)", ""]
        lines += ["- `%s/%s` (%s): %s" % (c["namespace"], c["name"], c["status"], c.get("reason")) for c in failed]
        lines.append("")
    return "\n".join(lines)


def report_summary(report, report_path=""):
    """A one-screen console summary (list of lines)."""
    lines = ["Fleet migration %s%s: %d HostedClusters - %s" % (
        report["run_id"], " (DRY RUN)" if report["check_mode"] else "", report["clusters_total"],
        ", ".join("%s %d" % (s, report["totals"][s]) for s in STATUS_ORDER if s in report["totals"]) or "none")]
    lines.append("%s; %d CAPI objects moved" % (timing_headline(report), report["objects_moved"]))
    for c in report["clusters"][:20]:
        lines.append("  %-16s %-40s %-11s -> %-11s %6.1fs %s" % (
            c["status"], "%s/%s/%s" % (c.get("management_cluster"), c.get("namespace"), c.get("name")),
            c.get("state_before"), c.get("state_after"), c["seconds"], (c.get("reason") or "")[:60]))
    if len(report["clusters"]) > 20:
        lines.append("  ... %d more in the report" % (len(report["clusters"]) - 20))
    if report_path:
        lines.append("report: %s (.json, .md)" % report_path)
    return lines
