"""The fleet report's pure logic: phases from marks, totals, Markdown with a Mermaid gantt, summary lines; the records
and report files of the fleet_report_files action."""
import copy
import json

import pytest
from ansible.plugins.filter.core import to_nice_json

from ansible_collections.hypershift.private_capi.plugins.action.fleet_report_files import read_records, report_files
from ansible_collections.hypershift.private_capi.plugins.module_utils.fleet.report import (
    FleetReportError, build_report, complete, phases, report_markdown, report_root, report_summary, unknown_reason,
    window_headline)


def record(name, status, marks, objects=None, reason=""):
    return {"management_cluster": "mc-1", "namespace": "clusters", "name": name, "status": status, "reason": reason,
            "state_before": "legacy", "state_after": "migrated" if status == "migrated" else "failed",
            "marks": [{"name": n, "at": "2026-11-22T10:00:%06.3f000" % s} for n, s in marks],
            "objects": objects or {}, "api_calls": 10}


MIGRATED = record("hc-01", "migrated", [("read", 0), ("pause", 1), ("copy", 3.5), ("finish", 5), ("end", 6)],
                  {"Machine": 2, "Cluster": 1})
FAILED = record("hc-02", "failed", [("read", 0.5), ("pause", 1), ("copy", 2), ("rollback", 3), ("end", 4.25)],
                reason="copy: admission webhook denied | twice")


def test_phases_last_until_the_next_mark():
    assert [(p["name"], p["seconds"]) for p in phases(MIGRATED)] == [("read", 1.0), ("pause", 2.5), ("copy", 1.5),
                                                                     ("finish", 1.0)]


def test_report_totals_wall_time_and_inputs_untouched():
    records = [FAILED, MIGRATED]
    before = copy.deepcopy(records)
    report = build_report(records, "run-1")
    assert records == before
    assert report["totals"] == {"migrated": 1, "failed": 1}
    assert [c["name"] for c in report["clusters"]] == ["hc-01", "hc-02"]
    assert report["wall_seconds"] == 6.0 and report["seconds_per_migrated_cluster"] == 6.0
    assert report["objects_moved"] == 3 and report["api_calls"] == 20


def test_markdown_has_a_gantt_section_per_cluster_and_the_failure():
    markdown = report_markdown(build_report([MIGRATED, FAILED], "run-1"))
    assert "```mermaid\ngantt" in markdown
    assert "section hc-01" in markdown and "section hc-02" in markdown
    assert "rollback :crit, hc_02_" in markdown and "pause :done, hc_01_0, 2026-11-22T10:00:01.000" in markdown
    assert "copy: admission webhook denied / twice" in markdown  # table-safe reason


def test_summary_fits_one_screen():
    many = [record("hc-%02d" % i, "migrated", [("read", 0), ("end", 1)]) for i in range(30)]
    lines = report_summary(build_report(many, "run-2"), "/tmp/r/report")
    assert len(lines) <= 24 and lines[-1] == "report: /tmp/r/report (.json, .md)" and "11 more" in lines[-2]


def test_unreadable_mark_names_the_record():
    broken = dict(MIGRATED, marks=[{"name": "read", "at": "yesterday"}, {"name": "end", "at": "today"}])
    with pytest.raises(FleetReportError, match="clusters/hc-01.*'yesterday'"):
        build_report([broken], "run-3")


def test_report_files_reads_the_records_and_writes_what_to_nice_json_would(tmp_path):
    for item in (FAILED, MIGRATED):
        (tmp_path / ("mc-1__clusters__%s.json" % item["name"])).write_text(json.dumps(item))
    (tmp_path / "notes.txt").write_text("not a record")
    records = read_records(str(tmp_path))
    assert records == [MIGRATED, FAILED]  # by file name: hc-01, hc-02
    report = build_report(records, "run-1")
    files = dict(report_files(report, "/reports/run-1"))
    assert files["/reports/run-1/report.json"].decode() == to_nice_json(report) + "\n"
    assert files["/reports/run-1/report.md"].decode() == report_markdown(report)


@pytest.mark.parametrize("content", ["{not json", "[1, 2]"])
def test_report_files_names_the_record_it_cannot_read(tmp_path, content):
    (tmp_path / "mc-1__clusters__hc-09.json").write_text(content)
    with pytest.raises(FleetReportError) as raised:
        read_records(str(tmp_path))
    assert str(tmp_path / "mc-1__clusters__hc-09.json") in str(raised.value) and "remove or repair it" in str(raised.value)


def test_timings_say_what_they_are_when_clusters_ran_in_parallel():
    """Issue 16 item C: three clusters at once, 6 s each, wall 7 s. The headline names the wall time of the run, the
    clusters at once (batch size) and the time per migrated cluster one at a time (sum / count = 6 s), never the
    wall time divided by the clusters (2.3 s) nor the wall time itself presented as a per-cluster figure."""
    batch = [record("hc-%02d" % index, "migrated", [("read", index * 0.5), ("copy", index * 0.5 + 3),
                                                    ("end", index * 0.5 + 6)]) for index in range(3)]
    later = record("hc-09", "failed", [("read", 8), ("end", 9)])  # after the batch: not parallel to it
    report = build_report(batch + [later], "run-p")
    assert report["wall_seconds"] == 9.0
    assert report["parallel_clusters"] == 3
    assert report["migrated_seconds_total"] == 18.0 and report["seconds_per_migrated_cluster"] == 6.0
    headline = ("wall time of the run 9.0 s, up to 3 clusters at once (batch size); time per migrated cluster, each "
                "while up to 3 ran at once: 6.0 s (18.0 s summed over 3 migrated)")
    assert "- Timing: %s" % headline in report_markdown(report)
    assert report_summary(report)[1] == headline + "; 0 CAPI objects moved"


def test_serial_clusters_are_one_at_a_time_and_touching_runs_do_not_overlap():
    serial = [record("hc-01", "migrated", [("read", 0), ("end", 2)]), record("hc-02", "migrated", [("read", 2), ("end", 5)])]
    report = build_report(serial, "run-s")
    assert report["parallel_clusters"] == 1 and report["wall_seconds"] == 5.0
    assert report["seconds_per_migrated_cluster"] == 2.5
    assert "up to 1 cluster at once (batch size)" in report_summary(report)[1]
    assert "time per migrated cluster, one at a time: 2.5 s" in report_summary(report)[1]
    nothing = build_report([record("hc-03", "failed", [("read", 0), ("end", 1)])], "run-f")
    assert report_summary(nothing)[1].endswith("time per migrated cluster: n/a (none migrated); 0 CAPI objects moved")


def windowed(base, seconds, waiting, start="2026-11-22T10:00:01.500000Z", end="2026-11-22T10:00:06.000000Z"):
    found = copy.deepcopy(base)
    found["controllers_down"] = {"stopped_at": start, "available_at": end, "seconds": seconds,
                                 "waiting_seconds": waiting}
    return found


def test_the_window_without_controllers_per_cluster_and_fleet_wide():
    records = [windowed(MIGRATED, 4.5, 3.0), windowed(FAILED, 2.0, 0.5),
               record("hc-03", "migrated", [("read", 0), ("end", 1)]), windowed(MIGRATED, 7.0, 1.0)]
    records[3]["name"] = "hc-04"
    report = build_report(records, "run-3")
    by_name = {c["name"]: c for c in report["clusters"]}
    assert (by_name["hc-01"]["controllers_down_seconds"], by_name["hc-01"]["controllers_waiting_seconds"],
            by_name["hc-01"]["controllers_own_seconds"]) == (4.5, 3.0, 1.5)
    assert by_name["hc-03"]["controllers_down_seconds"] is None  # never stopped: not a zero in the figures
    assert report["controllers_down"] == {
        "clusters": 3, "max_seconds": 7.0, "p50_seconds": 4.5, "sum_seconds": 13.5, "own_p50_seconds": 1.5,
        "waiting_p50_seconds": 1.0, "migrated_p50_seconds": 5.75,
        "rolled_back": [{"namespace": FAILED["namespace"], "name": FAILED["name"], "seconds": 2.0,
                         "ratio_to_migrated_p50": 0.35}]}
    assert "migrated p50 5.8 s, rolled back after a failure: %s/%s 2.0 s (0.35x the migrated p50)" % (
        FAILED["namespace"], FAILED["name"]) in report_summary(report)[2]
    markdown = report_markdown(report)
    assert "| 4.5 (1.5) |" in markdown and "| - |" in markdown
    assert "controllers down :active, hc_01_down, 2026-11-22T10:00:01.500, 2026-11-22T10:00:06.000" in markdown
    assert "max 7.0 s, p50 4.5 s, sum 13.5 s over 3 clusters" in markdown
    summary = report_summary(report)
    assert any(line.startswith("CAPI controllers down per cluster") and "own work p50 1.5 s" in line
               for line in summary)
    assert any("hc-04" in line and "down   7.0s" in line for line in summary)


def test_no_window_is_said_as_such_and_a_bad_one_names_the_record():
    report = build_report([record("hc-05", "skipped", [("read", 0), ("end", 1)])], "run-4")
    assert report["controllers_down"] is None
    assert "no cluster's controllers were stopped" in report_markdown(report)
    with pytest.raises(FleetReportError, match=r"record clusters/hc-01: controllers_down .* re-run the migrate role"):
        build_report([windowed(MIGRATED, "soon", 0)], "run-5")


def test_report_root_is_taken_from_the_current_directory_not_the_playbooks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert report_root(None) == str(tmp_path / "reports")
    assert report_root("") == str(tmp_path / "reports")
    assert report_root("out/runs") == str(tmp_path / "out" / "runs")
    assert report_root("/srv/reports/") == "/srv/reports"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert report_root("~/r") == str(tmp_path / "home" / "r")


def test_report_root_writes_nothing_in_check_mode_unless_asked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert report_root("reports", check_mode=True) == ""
    assert report_root("reports", check_mode=True, in_check_mode=True) == str(tmp_path / "reports")
    assert report_root("reports", check_mode=False, in_check_mode=False) == str(tmp_path / "reports")


def test_a_refused_cluster_is_counted_and_listed_with_the_rules_to_add():
    refused = record("hc-03", "refused", [("read", 0), ("end", 0.5)],
                     reason="HostedCluster clusters/hc-03: the identity lacks 1 right(s) migrate uses; nothing was changed")
    report = build_report([MIGRATED, refused, FAILED], "run-3")
    assert report["totals"] == {"migrated": 1, "refused": 1, "failed": 1}
    markdown = report_markdown(report)
    assert "## Refused HostedClusters" in markdown and "- `clusters/hc-03`: HostedCluster clusters/hc-03: the identity" in markdown
    assert "- `clusters/hc-02` (failed): copy: admission webhook denied | twice" in markdown
    assert report_summary(report)[0] == "Fleet migration run-3: 3 HostedClusters - migrated 1, refused 1, failed 1"


def test_the_selection_completes_the_report_pending_while_running_not_attempted_at_the_end():
    selection = [{"management_cluster": "mc-1", "namespace": "clusters", "name": name, "state": "legacy"}
                 for name in ("hc-01", "hc-02", "hc-09")]
    running = build_report(complete([MIGRATED, FAILED], selection, "run-4"), "run-4")
    assert running["totals"] == {"migrated": 1, "failed": 1, "pending": 1} and running["clusters_total"] == 3
    ended = build_report(complete([MIGRATED, FAILED], selection, "run-4", final=True, stopped="budget hit"), "run-4")
    assert ended["totals"] == {"migrated": 1, "failed": 1, "not attempted": 1}
    rest = ended["clusters"][-1]
    assert rest["name"] == "hc-09" and rest["state_after"] == "legacy" and rest["phases"] == []
    assert rest["reason"] == "budget hit; resume with ansible-playbook playbooks/migrate_fleet.yml -e private_capi_fleet_run_id=run-4"
    assert ended["unfinished"] == {"mc-1/clusters/hc-02": "failed: copy: admission webhook denied | twice",
                                   "mc-1/clusters/hc-09": "not attempted: " + rest["reason"]}
    assert "## HostedClusters not attempted" in report_markdown(ended)
    assert report_summary(ended)[0] == "Fleet migration run-4: 3 HostedClusters - migrated 1, failed 1, not attempted 1"


def unknown(management_cluster, name, marks=(), state_before="unknown"):
    """A record as roles/migrate/tasks/unknown.yml writes it (filter fleet_record) (its management cluster stopped answering)."""
    return dict(record(name, "unknown", marks, reason="task 'Read the state' failed: refused; once the management "
                       "cluster answers, resume with ansible-playbook playbooks/migrate_fleet.yml -e "
                       "private_capi_fleet_run_id=run-5"),
                management_cluster=management_cluster, state_before=state_before, state_after="unknown")


def test_an_unknown_record_takes_the_state_before_from_the_selection():
    selection = [{"management_cluster": "mc-1", "namespace": "clusters", "name": name, "state": state}
                 for name, state in (("hc-01", "legacy"), ("hc-02", "in-progress"), ("hc-03", "legacy"))]
    records = [unknown("mc-1", "hc-01", state_before="legacy"), unknown("mc-1", "hc-02"), unknown("mc-9", "hc-03")]
    before = copy.deepcopy(records)
    rows = complete(records, selection, "run-5", final=True)
    assert records == before
    # read by the migration (kept), not read (the selection's), of another management cluster (not that selection's)
    assert [(r["management_cluster"], r["name"], r["state_before"]) for r in rows] == [
        ("mc-1", "hc-01", "legacy"), ("mc-1", "hc-02", "in-progress"), ("mc-9", "hc-03", "unknown"),
        ("mc-1", "hc-03", "legacy")]
    assert rows[3]["status"] == "not attempted"


def test_with_several_management_clusters_report_md_names_each_cluster_with_its_management_cluster():
    in_flight = unknown("mc-1", "hc-01", [("read", 0), ("pause", 1), ("scale_down", 2), ("end", 3)], "legacy")
    report = build_report([in_flight, unknown("mc-1", "hc-02"), dict(MIGRATED, management_cluster="mc-2")], "run-5")
    assert report["totals"] == {"migrated": 1, "unknown": 2}
    markdown = report_markdown(report)
    section = markdown.split("## HostedClusters in an unknown state", 1)[1]
    assert "\n- `mc-1/clusters/hc-01`: task 'Read the state' failed" in section
    assert "\n- `mc-1/clusters/hc-02`: task" in section and "mc-2/" not in section
    assert "| mc-1/clusters/hc-01 | - | 1.00 | - | 1.00 |" in markdown and "| mc-2/clusters/hc-01 | - | 2.50 |" in markdown
    assert "section mc-1/hc-01" in markdown and "section mc-2/hc-01" in markdown
    # the same HostedCluster name on two management clusters: the gantt's task ids stay unique
    assert "pause :mc_1_hc_01_0, " in markdown and "pause :done, mc_2_hc_01_0, " in markdown
    # one management cluster: named as before
    single = report_markdown(build_report([unknown("mc-1", "hc-02"), MIGRATED], "run-5"))
    assert "\n- `clusters/hc-02`: task" in single and "| clusters/hc-01 |" in single and "section hc-01" in single


@pytest.mark.parametrize("locked, status, phase, stopped_at, says", [
    (False, "", "", "", ""),  # the lock was never taken: the failed task and the resume only
    (True, "migrating", "copy", "", "its migration (locked by this run) was at phase copy; then "),
    (True, "failed", "copy", "", "its migration failed and was rolled back: copy: refused; then "),
    (True, "migrated", "finish", "", "its migration had finished; then "),
    (True, "rollback-failed", "copy", "2026-03-01T12:00:05.000000",
     "its migration failed and so did the rollback: copy: refused; its CAPI Deployments were scaled to 0 at "
     "2026-03-01T12:00:05.000000 and may still be (no CAPI controller runs for it until the resume); then "),
    # stopped before the window, or after it: nothing says the Deployments are at 0
    (True, "rollback-failed", "finish", "2026-03-01T12:00:05.000000",
     "its migration failed and so did the rollback: copy: refused; then "),
    (False, "failed", "copy", "", ""),  # a status of an earlier run (no lock taken by this one) says nothing
])
def test_an_unknown_row_says_how_far_the_migration_got_then_the_error_and_the_resume(
        locked, status, phase, stopped_at, says):
    reason = unknown_reason("run-1", "Read the state", "no answer from the API server", locked=locked,
                            status=status, phase=phase, reason=" copy: refused \n", stopped_at=stopped_at)
    assert reason == says + (
        "task 'Read the state' failed: no answer from the API server; once the management cluster answers, resume with "
        "ansible-playbook playbooks/migrate_fleet.yml -e private_capi_fleet_run_id=run-1 (the same run id takes its own "
        "lock back)")


def test_the_zero_stop_figures_are_summed_fleet_wide_and_headlined():
    zero_stop = [dict(record("hc-%02d" % index, "migrated", [("read", 0), ("sidecar", 1), ("end", 6)]),
                      reconcile_paused={"seconds": seconds}, controllers_down=None,
                      preinstall={"pods_replaced": 4, "longest_unready_seconds": gap, "seconds": 20.0 + index})
                 for index, (seconds, gap) in enumerate(((1.2, 0.0), (1.6, 0.0), (2.9, 1.5)))]
    report = build_report(zero_stop + [MIGRATED], "run-1")
    assert report["reconcile_paused"] == {"clusters": 3, "p50_seconds": 1.6, "max_seconds": 2.9}
    assert report["preinstall"] == {"clusters": 3, "pods_replaced": 12, "longest_unready_seconds": 1.5, "p50_seconds": 21.0}
    line = window_headline(report)
    assert "CAPI reconciliation paused per cluster" in line and "p50 1.6 s, max 2.9 s over 3 clusters" in line
    assert "12 Pods replaced, longest gap without a Ready replica 1.5 s, rollout p50 21.0 s" in line
    assert build_report([MIGRATED], "run-2")["preinstall"] is None


def test_the_leaderless_figures_are_per_cluster_and_fleet_wide_in_the_report_and_its_chart():
    clusters = [dict(record("hc-%02d" % index, "migrated", [("read", 0), ("sidecar", 1), ("end", 6)]),
                     leaderless=None if seconds is None else {"preinstall": seconds, "window": 0.0, "seconds": seconds})
                for index, seconds in enumerate((27.4, 31.0, 52.5, None))]
    report = build_report(clusters, "run-1")
    assert [c["leaderless_seconds"] for c in report["clusters"]] == [27.4, 31.0, 52.5, None]
    assert report["leaderless"] == {"clusters": 3, "p50_seconds": 31.0, "max_seconds": 52.5}
    assert ("CAPI managers without a leader per cluster (the longest of the pre-install, the window and a rescue): "
            "p50 31.0 s, max 52.5 s") \
        in window_headline(report)
    markdown = report_markdown(report)
    assert "| paused s | leaderless s |" in markdown and "section hc-02 - leaderless 52.5 s" in markdown
    assert "section hc-03\n" in markdown  # no figure: no claim
    assert build_report([MIGRATED], "run-2")["leaderless"] is None
