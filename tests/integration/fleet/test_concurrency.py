"""Two concurrent runs over the same fleet never migrate the same HostedCluster twice (issue 7, "Must show").

Runs A and B (different run ids, one HostedCluster at a time, the same order) start together: they race for the
lock of every cluster. Each cluster must be locked by exactly one run (the other records it skipped), its private
Machines created exactly once (no create refused as a duplicate), and every cluster ends migrated with its content.
"""
import os

import pytest

from testenv.hcp import fleet
from tests.integration.fleet.support import (
    bed_webhook_vars, hostedcluster_states, kill_playbook, migrated_content_problems, read_report, snapshot, start_fleet, start_playbook,
    write_inventory)

PRIVATE = "cluster.hypershift.openshift.io"
NAMES = ("hc-01", "hc-02")
MACHINES = 1
RUNS = ("concurrent-a", "concurrent-b")
RUN_TIMEOUT = 600


@pytest.fixture(scope="module")
def raced_fleet(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("concurrency")
    server, crds = start_fleet(tmp_path, fleet.fleet_spec(len(NAMES), machines=MACHINES), pods="kwok-only", private_crds=False)
    before = {name: snapshot(server, crds, "clusters-" + name) for name in NAMES}
    inventory = write_inventory(tmp_path, server.kubeconfig, host_vars=bed_webhook_vars(server))
    server.reset_requests()
    processes, outputs, roots = {}, {}, {}
    for run in RUNS:
        outputs[run] = os.path.join(str(tmp_path), run + ".log")
        roots[run] = os.path.join(str(tmp_path), "reports-" + run)
        processes[run] = start_playbook("migrate_fleet.yml", inventory, outputs[run], {
            "private_capi_fleet_run_id": run, "private_capi_fleet_serial": 1, "private_capi_fleet_report_root": roots[run]})
    try:
        codes = {run: processes[run].wait(RUN_TIMEOUT) for run in RUNS}
    finally:
        for process in processes.values():
            if process.poll() is None:
                kill_playbook(process)
    yield {"server": server, "crds": crds, "before": before, "codes": codes,
           "outputs": {run: open(outputs[run]).read() for run in RUNS},
           # a run that failed before its report play leaves no report: its output says why (the first test shows it)
           "reports": {run: read_report(roots[run]) if os.path.isdir(roots[run]) else None for run in RUNS},
           "entries": server.request_counts()["entries"]}
    assert server.stop() == 0


def test_both_runs_succeed_and_every_cluster_is_migrated(raced_fleet):
    assert raced_fleet["codes"] == {run: 0 for run in RUNS}, \
        "\n".join(raced_fleet["outputs"][run][-3000:] for run in RUNS)
    assert hostedcluster_states(raced_fleet["server"]) == {name: "migrated" for name in NAMES}


def test_each_cluster_has_exactly_one_lock_winner_and_the_other_run_skipped_it(raced_fleet):
    statuses = {name: {} for name in NAMES}
    assert None not in raced_fleet["reports"].values(), "a run wrote no report:\n" + "\n".join(
        raced_fleet["outputs"][run][-3000:] for run in RUNS if raced_fleet["reports"][run] is None)
    for run in RUNS:
        for record in raced_fleet["reports"][run]["clusters"]:
            statuses[record["name"]][run] = (record["status"], record["reason"])
    for name in NAMES:
        winners = [run for run in RUNS if statuses[name].get(run, ("",))[0] == "migrated"]
        assert len(winners) == 1, "%s: %r" % (name, statuses[name])
        loser = [run for run in RUNS if run not in winners][0]
        status, reason = statuses[name][loser]
        # the loser found the lock taken (held by the winner) or the cluster already migrated
        assert status == "skipped" and (winners[0] in reason or reason == "already migrated"), (name, status, reason)


def test_private_machines_were_created_once_per_cluster(raced_fleet):
    for name in NAMES:
        creates = [e for e in raced_fleet["entries"] if e["verb"] == "create" and e["group"] == PRIVATE
                   and e["resource"] == "machines" and e["namespace"] == "clusters-" + name]
        assert [e["code"] for e in creates] == [201] * MACHINES, (name, creates)


def test_nothing_was_lost(raced_fleet):
    for name in NAMES:
        after = snapshot(raced_fleet["server"], raced_fleet["crds"], "clusters-" + name)
        problems = migrated_content_problems(raced_fleet["before"][name], after)
        assert problems == [], "%s:\n%s" % (name, "\n".join(problems))
