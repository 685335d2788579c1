"""The leader handover of the pre-install (issue 56) under a real client-go leader election: the Deployment cluster-api
of one HostedCluster's HCP namespace runs the real core manager v1.14.2 (testenv.capi.electing_core_manager: HyperShift's
container, reconciling nothing of the fixture), which gives no Lease back when it stops.

- A Lease whose holder may still run is never touched: the old Pod is kept by a finalizer after its deletion. The run
  waits, says why, and the Lease changes hands only when it expires - its holder is never cleared.
- Crash safety: migrate_fleet.yml SIGKILLed during the handover (the new Pod up, the Lease still the old Pod's), then run
  again with the same run id: the HostedCluster migrates, the Lease ends held by the new Pod, nothing else changed.

The manager elects with a short lease here (support.SHORT_LEASE_ARGS) so that the expiry of the first test takes seconds, not
minutes: what is tested (who may write the Lease, and when) does not depend on the durations. The real managers with
HyperShift's flags are tests/integration/e2e/test_capi_controllers.py's.
"""
import os
import threading
import time

import pytest

from testenv import capi
from testenv.client import wait_for
from testenv.module_runner import run_module
from tests.integration.fleet.support import (
    core_manager_leads, hcp_ns, hostedcluster_states, kill_playbook, migrated_content_problems, read_report,
    run_playbook, snapshot, start_electing_fleet, start_playbook, write_inventory)
from tests.integration.fleet.support import manager_pods as support_manager_pods

pytestmark = pytest.mark.slow

NAME = "hc-01"
NAMESPACE = hcp_ns(NAME)
LEASE = capi.LEADER_LEASES["cluster-api"]
HOLD = "private-capi.test/hold"


class LeaseSampler(object):
    """Every 0.2 s: the Lease's holder identity and resourceVersion, and the cluster-api Pods (name -> being deleted)."""

    def __init__(self, server):
        self.server = server
        self.samples = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(0.2):
            lease = self.server.request("GET", "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s"
                                        % (NAMESPACE, LEASE)).json()
            pods = self.server.request("GET", "/api/v1/namespaces/%s/pods" % NAMESPACE).json()["items"]
            self.samples.append({"holder": (lease.get("spec") or {}).get("holderIdentity") or "",
                                 "pods": dict((p["metadata"]["name"], bool(p["metadata"].get("deletionTimestamp")))
                                              for p in pods if p["metadata"]["name"].startswith("cluster-api-"))})

    def stop(self):
        self._stop.set()
        self._thread.join(10)
        return self.samples


def manager_pods(server):
    return support_manager_pods(server, NAMESPACE)


def leads(server):
    """The one live cluster-api Pod, when its manager holds the Lease (else None)."""
    return core_manager_leads(server, NAMESPACE)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("leader-handover")
    server, crds = start_electing_fleet(tmp_path, NAME)
    try:
        yield {"server": server, "crds": crds, "tmp": str(tmp_path),
               "inventory": write_inventory(tmp_path, server.kubeconfig), "before": snapshot(server, crds, NAMESPACE)}
    finally:
        server.stop()


def proxy(world, state, wait_timeout=150):
    """api_proxy_apply on cluster-api alone, as the migrate role's pre-install runs it (pass-through, the role's probes,
    the rollout and the leaders awaited)."""
    result = run_module("api_proxy_apply", {
        "kubeconfig": world["server"].kubeconfig, "state": state, "hcp_namespace": NAMESPACE,
        "deployments": ["cluster-api"], "mode": "passthrough", "wait_timeout": wait_timeout,
        "count_replaced_pods": True, "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
        "liveness_probe": {"httpGet": {"path": "/healthz", "port": 9090}, "periodSeconds": 10},
        "readiness_probe": {"httpGet": {"path": "/readyz", "port": 9090}, "periodSeconds": 5}},
        timeout=wait_timeout + 60)
    assert not result.failed, (result.get("msg"), result.get("exception"), result.stderr[-2000:] if hasattr(result, "stderr") else "")
    return result


def test_a_lease_whose_holder_may_still_run_is_never_touched(world):
    """The old Pod is kept by a finalizer once deleted: its manager got SIGTERM, but nothing outside the node can know
    its containers ended. The run does not release the Lease, says why, and ends once the Lease has expired and the new
    Pod took it (its holder is never cleared: no sample sees it empty)."""
    server = world["server"]
    old = leads(server)
    assert old, "the manager leads before the run"
    patched = server.request("PATCH", "/api/v1/namespaces/%s/pods/%s" % (NAMESPACE, old),
                             {"metadata": {"finalizers": [HOLD]}}, content_type="application/merge-patch+json")
    assert patched.status == 200, patched.body[:300]
    sampler = LeaseSampler(server)
    try:
        result = proxy(world, "present")
    finally:
        samples = sampler.stop()
        server.request("PATCH", "/api/v1/namespaces/%s/pods/%s" % (NAMESPACE, old), {"metadata": {"finalizers": None}},
                       content_type="application/merge-patch+json")
    leadership = result["rollout"]["leadership"]
    print("leadership: %s" % leadership)
    rollout, calls = result["rollout"], result["api_calls"]["by_method"]
    print("rollout: %s reads in %s s; calls %s" % (rollout["polls"], rollout["waited_seconds"], calls))
    # the wait read again on the watches' events (once a second while no manager leads), not every poll_seconds (0.2):
    # under half the reads polling would make. A short wait reads on most of its events (the make test of 05f63ad,
    # 2026-12-03: 8 reads in 3.0 s, a Pod's start rings several times), so at least 10 reads are let through; polling
    # would still read 15 times in 3 s
    polling = rollout["waited_seconds"] / 0.2
    assert calls.get("WATCH", 0) >= 2 and rollout["polls"] < max(polling / 2, 10), (rollout, calls)
    assert leadership["released"] == [], leadership
    assert [waited["lease"] for waited in leadership["waited"]] == [LEASE], leadership
    assert "still exists (finalizers %s)" % HOLD in leadership["waited"][0]["why"], leadership
    assert all(sample["holder"] for sample in samples), "the Lease's holder was cleared while its Pod existed"
    held_by_old = [sample for sample in samples if sample["holder"].startswith(old + "_") and sample["pods"].get(old)]
    assert held_by_old, "the run began while the old Pod, being deleted, still held the Lease"
    new = leads(server)
    assert new and new != old and result["rollout"]["leaderless_seconds"] >= 15, (new, old, leadership)
    wait_for(lambda: old not in [p["metadata"]["name"] for p in manager_pods(server)], "the old Pod to go", timeout=60)
    proxy(world, "absent")  # the sidecar out again: the next test's pre-install rolls the Pod once more
    wait_for(lambda: leads(server), "the core manager to lead again", timeout=120, interval=1)


def handover_begun(server, before):
    """The new Pod is up while the Lease still names a Pod of before: the handover has begun."""
    holder = capi.lease_holder_pod(server, NAMESPACE, LEASE)
    names = [p["metadata"]["name"] for p in manager_pods(server)]
    return holder in before and any(name not in before for name in names)


def test_a_run_killed_during_the_handover_converges_when_run_again(world):
    """migrate_fleet.yml SIGKILLed once the new Pod is up and the old one still holds the Lease; the same run id again:
    migrated, nothing lost, one cluster-api Pod whose manager holds the Lease."""
    server = world["server"]
    before = [p["metadata"]["name"] for p in manager_pods(server)]
    run_id = "fleet-handover-crash"
    extra = {"private_capi_fleet_run_id": run_id, "private_capi_fleet_report_root": os.path.join(world["tmp"], run_id)}
    log = os.path.join(world["tmp"], "killed.log")
    process = start_playbook("migrate_fleet.yml", world["inventory"], log, extra)
    deadline = time.time() + 600
    while not handover_begun(server, before):
        assert process.poll() is None, "the run ended before the handover began: %s" % open(log).read()[-3000:]
        assert time.time() < deadline, "no handover within 600 s"
        time.sleep(0.2)
    assert kill_playbook(process) == -9
    killed_holder = capi.lease_holder_pod(server, NAMESPACE, LEASE)
    print("killed with the Lease held by %s (Pods before %s, now %s)" % (
        killed_holder, before, [p["metadata"]["name"] for p in manager_pods(server)]))
    time.sleep(5)  # a module process of the killed run may outlive it (as on a real controller): let it end
    holders, running = [], threading.Event()

    def watch_holder():  # the Lease's holder while the re-run runs: "" once the old manager released it
        while not running.wait(0.2):
            holders.append(capi.lease_holder_pod(server, NAMESPACE, LEASE))
    watcher = threading.Thread(target=watch_holder, daemon=True)
    watcher.start()
    try:
        again = run_playbook("migrate_fleet.yml", world["inventory"], extra)
    finally:
        running.set()
        watcher.join()
    assert again.returncode == 0, (again.stdout + again.stderr)[-5000:]
    assert hostedcluster_states(server) == {NAME: "migrated"}
    leaderless = read_report(extra["private_capi_fleet_report_root"])["clusters"][0]["leaderless"]
    print("the re-run's leaderless figures: %s; the Lease's holders meanwhile: %s" % (leaderless, sorted(set(holders))))
    if "" not in holders:  # the Lease named a manager all along: the re-run followed the handover through
        assert leaderless and leaderless["preinstall"] is not None, leaderless
    # else the re-run may have read the Lease released (the old manager's release on its stop, before the new one's
    # retry, HyperShift's 26 s jittered, took it): a Lease without a holder is nobody's to the run (hcp/leadership.py
    # lease_owners), so it had no pre-install figure to give (make test of 8b92156, 2026-12-04)
    new = wait_for(lambda: leads(server), "the new Pod's manager to hold the Lease", timeout=10, interval=0.5)
    assert new not in before, (new, before)
    assert not migrated_content_problems(world["before"], snapshot(server, world["crds"], NAMESPACE))


def test_the_way_back_keeps_the_leader_and_says_so(world):
    """rollback.yml (zero stop: the sidecars flip back, no Pod restarts): the manager keeps its Lease throughout, and
    the run's summary gives its leaderless figure, 0.0 s (the Lease read when the way back begins and ends, same holder
    and term)."""
    server = world["server"]
    leader = leads(server)
    assert leader
    sampler = LeaseSampler(server)
    try:
        rolled_back = run_playbook("rollback.yml", world["inventory"], {"private_capi_rollback_names": [NAME]})
    finally:
        samples = sampler.stop()
    assert rolled_back.returncode == 0, (rolled_back.stdout + rolled_back.stderr)[-5000:]
    assert hostedcluster_states(server) == {NAME: "legacy"}
    assert "CAPI managers without a leader at most 0.0 s" in rolled_back.stdout, rolled_back.stdout[-3000:]
    assert {sample["holder"].split("_", 1)[0] for sample in samples} == {leader} and leads(server) == leader
