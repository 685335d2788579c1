"""A run killed in the middle of a migration is resumed (issue 7, "Must show").

Run A is SIGKILLed (ansible-playbook and every process of its group, as when the host running the job dies) while
both HostedClusters are in the copy step: the API server holds their first private Machine create (a hang fault),
so partial private copies exist, the Deployments are at zero, the Clusters paused, the locks held by run A. Then:
- run B (another run id) leaves both alone while A's lease is live (skipped, nothing written to them);
- run B with takeover finishes hc-02;
- run A again (same run id) resumes hc-01 (hc-02 is migrated: not selected, or skipped);
and both end migrated with every object and its content as before the migration.
"""
import os
import time

import pytest

from testenv.hcp import fleet
from tests.integration.fleet.support import (
    bed_webhook_vars, hcp_ns, hostedcluster, hostedcluster_states, kill_playbook, migrated_content_problems, private_keys, read_report,
    run_playbook, snapshot, start_fleet, start_playbook, window_problems, write_inventory)

PRIVATE = "cluster.hypershift.openshift.io"
NAMES = ("hc-01", "hc-02")
RUN_A, RUN_B = "resume-run-a", "resume-run-b"
HOLDER = "hypershift.openshift.io/capi-migration-lease-holder"
KILL_TIMEOUT = 420
HANG_SECONDS = 15  # the first private Machine create of each cluster is held this long, then refused (503)


def _faults(server):
    return server.faults.faults()


def _wait_until_both_copies_hang(server, process, output_path):
    deadline = time.monotonic() + KILL_TIMEOUT
    while not all(rule["hits"] >= 1 for rule in _faults(server)):
        assert process.poll() is None, "run A ended (%s) before its copies started:\n%s" % (
            process.returncode, open(output_path).read()[-4000:])
        assert time.monotonic() < deadline, "run A's copies did not start within %ss:\n%s" % (
            KILL_TIMEOUT, open(output_path).read()[-4000:])
        time.sleep(0.2)


def _mutating_requests_on(server, since, names):
    touched = []
    for entry in server.request_counts(since)["entries"]:
        if entry["verb"] not in ("create", "update", "patch", "delete", "deletecollection"):
            continue
        if entry["namespace"] in [hcp_ns(n) for n in names] or (entry["resource"] == "hostedclusters" and entry["name"] in names):
            touched.append(entry)
    return touched


def _wait_until_quiet(server, not_before, quiet_seconds=3, timeout=120):
    """Until no request reached the server for quiet_seconds (and not before the monotonic time not_before)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < not_before:
        time.sleep(0.5)
    seen = _last_seq(server)
    while time.monotonic() < deadline:
        time.sleep(quiet_seconds)
        latest = _last_seq(server)
        if latest == seen:
            return
        seen = latest
    raise AssertionError("the server still got requests %ss after run A was killed" % timeout)


def _last_seq(server):
    entries = server.request_counts()["entries"]
    return entries[-1]["seq"] if entries else 0


@pytest.fixture(scope="module")
def resumed_fleet(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("resume")
    server, crds = start_fleet(tmp_path, fleet.fleet_spec(len(NAMES), machines=1), faults=True, pods="kwok-only", private_crds=False)
    before = {name: snapshot(server, crds, hcp_ns(name)) for name in NAMES}
    inventory = write_inventory(tmp_path, server.kubeconfig, host_vars=bed_webhook_vars(server))
    root = os.path.join(str(tmp_path), "reports")
    for name in NAMES:
        # hold the first private Machine create of each cluster, then refuse it: the killed run's request never lands
        server.add_fault({"verb": "create", "group": PRIVATE, "resource": "machines", "namespace": hcp_ns(name),
                          "action": "hang", "seconds": HANG_SECONDS, "code": 503, "message": "held by the test"})
    output_a = os.path.join(str(tmp_path), "run-a-killed.log")
    process = start_playbook("migrate_fleet.yml", inventory, output_a, {
        "private_capi_fleet_run_id": RUN_A, "private_capi_fleet_serial": len(NAMES),
        "private_capi_fleet_report_root": root})
    _wait_until_both_copies_hang(server, process, output_a)
    killed = {"code": kill_playbook(process)}
    killed_at = time.monotonic()
    # read before the held creates are answered: nothing of the copies has landed yet
    killed.update(states=hostedcluster_states(server), holders={n: hostedcluster(server, n)["metadata"]["annotations"].get(
        HOLDER) for n in NAMES}, partial={n: private_keys(snapshot(server, crds, hcp_ns(n))) for n in NAMES})
    server.clear_faults()
    # a module process of the killed run may outlive it (as on a real controller) and finish its copy: let it end
    _wait_until_quiet(server, killed_at + HANG_SECONDS + 2)

    since = _last_seq(server)
    refused = run_playbook("migrate_fleet.yml", inventory, {
        "private_capi_fleet_run_id": RUN_B, "private_capi_fleet_report_root": root})
    refused_writes = _mutating_requests_on(server, since, NAMES)
    refused_states = hostedcluster_states(server)
    refused_report = read_report(root)

    takeover = run_playbook("migrate_fleet.yml", inventory, {
        "private_capi_fleet_run_id": RUN_B, "private_capi_fleet_names": ["hc-02"], "private_capi_migrate_takeover": True,
        "private_capi_fleet_report_root": root + "-takeover"})
    resumed = run_playbook("migrate_fleet.yml", inventory, {
        "private_capi_fleet_run_id": RUN_A, "private_capi_fleet_report_root": root + "-resumed"})
    yield {"server": server, "crds": crds, "before": before, "killed": killed, "output_a": output_a,
           "refused": refused, "refused_writes": refused_writes, "refused_states": refused_states,
           "refused_report": refused_report, "takeover": takeover, "resumed": resumed,
           "roots": {"takeover": root + "-takeover", "resumed": root + "-resumed"}}
    assert server.stop() == 0


def _out(result):
    return (result.stdout + result.stderr)[-4000:]


def test_the_run_was_killed_in_the_middle_of_both_copies(resumed_fleet):
    killed = resumed_fleet["killed"]
    assert killed["code"] == -9
    assert {n: killed["states"][n] for n in NAMES} == {n: "in-progress" for n in NAMES}
    assert killed["holders"] == {n: RUN_A for n in NAMES}
    for name in NAMES:
        partial = killed["partial"][name]
        assert partial and not [key for key in partial if key.startswith(PRIVATE + "/Machine/")], partial


def test_another_run_leaves_the_locked_clusters_alone_while_the_lease_is_live(resumed_fleet):
    result = resumed_fleet["refused"]
    assert result.returncode == 0, _out(result)
    assert {n: resumed_fleet["refused_states"][n] for n in NAMES} == {n: "in-progress" for n in NAMES}
    assert resumed_fleet["refused_writes"] == [], resumed_fleet["refused_writes"]
    records = {c["name"]: c for c in resumed_fleet["refused_report"]["clusters"]}
    for name in NAMES:
        assert records[name]["status"] == "skipped", records[name]
        assert "locked by run %s" % RUN_A in records[name]["reason"], records[name]["reason"]


def test_takeover_by_another_run_finishes_the_migration(resumed_fleet):
    result = resumed_fleet["takeover"]
    assert result.returncode == 0, _out(result)
    record = {c["name"]: c for c in read_report(resumed_fleet["roots"]["takeover"])["clusters"]}["hc-02"]
    assert record["status"] == "migrated" and record["resumed"], record


def test_the_same_run_id_resumes_and_nothing_is_lost(resumed_fleet):
    server, result = resumed_fleet["server"], resumed_fleet["resumed"]
    assert result.returncode == 0, _out(result)
    assert hostedcluster_states(server) == {n: "migrated" for n in NAMES}
    records = {c["name"]: c for c in read_report(resumed_fleet["roots"]["resumed"])["clusters"]}
    assert records["hc-01"]["status"] == "migrated" and records["hc-01"]["resumed"], records["hc-01"]
    # the window without controllers began in the killed run (the first scale to 0, kept on the Deployments)
    assert window_problems(records["hc-01"]) == []
    assert records["hc-01"]["controllers_down"]["stopped_at"][:26] < records["hc-01"]["phases"][0]["start"]
    # hc-02 (migrated by the takeover) is not selected again, or skipped as already migrated
    assert records.get("hc-02", {"status": "skipped", "reason": "already migrated"})["reason"] == "already migrated"
    for name in NAMES:
        after = snapshot(server, resumed_fleet["crds"], hcp_ns(name))
        problems = migrated_content_problems(resumed_fleet["before"][name], after)
        assert problems == [], "%s:\n%s" % (name, "\n".join(problems))
        hc = hostedcluster(server, name)
        assert "pausedUntil" not in hc["spec"] and HOLDER not in hc["metadata"]["annotations"]
        deployment = server.request("GET", "/apis/apps/v1/namespaces/%s/deployments/cluster-api" % hcp_ns(name)).json()
        assert deployment["spec"]["replicas"] == 1 and deployment["status"].get("availableReplicas") == 1
