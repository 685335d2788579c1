"""A fault a real node survives, in the middle of a fleet run: the kubelet and containerd are SIGKILLed while the first
HostedCluster migrates (zero stop, the default), and started again a few seconds later as a supervisor would.

The containers go on without them (containerd's shims hold them, not containerd: the same processes before the kill and
after), the node comes back Ready, no container is restarted, and the run finishes with every cluster migrated. The node
is the test bed's (testenv.cluster.node): kubelet v1.34.4, containerd and runc from Debian.
"""
import os
import time

import pytest

from testenv import capi
from testenv.client import wait_for
from testenv.cluster.testing import pod_processes
from testenv.hcp import fleet
from tests.integration.fleet.support import (
    hostedcluster_states, kill_playbook, list_items, start_fleet, start_playbook, write_inventory)

pytestmark = pytest.mark.slow

NAMES = ("hc-01", "hc-02", "hc-03")
DOWN_SECONDS = 5  # how long the node's daemons stay away


def running_containers(server):
    """{container ID: (pod namespace/name, restartCount)} of every running container of the cluster's live Pods."""
    found = {}
    for pod in list_items(server, "/api/v1/pods"):
        if pod["metadata"].get("deletionTimestamp"):
            continue
        for status in (pod.get("status") or {}).get("containerStatuses") or ():
            if status.get("containerID") and "running" in (status.get("state") or {}):
                found[status["containerID"]] = ("%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"]),
                                                status["restartCount"])
    return found


def sidecar_in(server, namespace):
    """Whether a Deployment of namespace has the proxy sidecar in its template (the migration's pre-install began)."""
    return any(container["name"] == capi.SIDECAR
               for deployment in list_items(server, "/apis/apps/v1/namespaces/%s/deployments" % namespace)
               for container in deployment["spec"]["template"]["spec"]["containers"])


def node_ready(server):
    node = server.request("GET", "/api/v1/nodes/node-0").json()
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"])


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("node-faults")
    server, _crds = start_fleet(tmp_path, fleet.fleet_spec(len(NAMES), machines=1))
    yield {"server": server, "tmp": tmp_path, "inventory": write_inventory(tmp_path, server.kubeconfig)}
    assert server.stop() == 0


def test_kubelet_and_containerd_killed_mid_run_the_containers_go_on_and_the_run_converges(world):
    server, node = world["server"], world["server"].cluster.real_nodes[0]
    log = str(world["tmp"] / "migrate.log")
    run = start_playbook("migrate_fleet.yml", world["inventory"], log, {
        "private_capi_fleet_names": list(NAMES), "private_capi_fleet_serial": 1,
        "private_capi_fleet_report_root": str(world["tmp"] / "reports")})
    try:
        wait_for(lambda: sidecar_in(server, "clusters-" + NAMES[0]), "the first HostedCluster's sidecars to go in",
                 timeout=300, interval=0.2)
        before = running_containers(server)
        for daemon in ("kubelet", "containerd"):
            node.kill(daemon)
        # the processes of the Pods that were to go on when the daemons died, read once they are dead: a Pod deleted
        # before (the run's rollout replaces Pods) was being stopped by the kubelet, and its processes end as asked
        pids = {pid for pod in list_items(server, "/api/v1/pods") if not pod["metadata"].get("deletionTimestamp")
                for pid in pod_processes(pod)}
        assert before and pids
        time.sleep(DOWN_SECONDS)
        gone = [pid for pid in pids if not os.path.exists("/proc/%d" % pid)]
        assert gone == [], "containers' processes ended with the kubelet and containerd: %s" % gone
        for daemon in ("containerd", "kubelet"):
            node.restart(daemon)
        wait_for(lambda: node_ready(server), "node-0 Ready again", timeout=120, interval=0.5)
        code = run.wait(timeout=1200)
    finally:
        if run.poll() is None:
            kill_playbook(run)
    with open(log) as handle:
        output = handle.read()
    assert code == 0, output[-5000:]
    assert hostedcluster_states(server) == {name: "migrated" for name in NAMES}
    after = running_containers(server)
    # every container that ran through the outage still runs, never restarted (the run's own rollouts replaced some
    # Pods afterwards: those are gone from the list, not restarted)
    restarted = {cid: (pod, count, after[cid][1]) for cid, (pod, count) in before.items()
                 if cid in after and after[cid][1] != count}
    assert restarted == {}, restarted
    assert all(count == 0 for _pod, count in after.values()), after
