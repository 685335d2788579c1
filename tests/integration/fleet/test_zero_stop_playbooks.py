"""migrate_fleet.yml and rollback.yml with private_capi_migrate_strategy=zero_stop on the real control plane.

Two HostedClusters migrated at once, then one rolled back: the sidecars go in ahead in pass-through (their own phase,
the Deployments' rolling update), the window flips them, the way back flips them back. A sampler reads every HCP
namespace's Deployments every 0.2 s from the end of the sidecar roll-out to the end of the rollback: no CAPI-dependent
Deployment is ever scaled below its replicas or short of an available replica, and no Pod is replaced after the
sidecars went in.
"""
import os

import pytest

from testenv.hcp import fleet
from tests.integration.fleet.support import hostedcluster_states, list_items, run_playbook, start_fleet, write_inventory
from tests.integration.fleet.test_zero_stop import Sampler

pytestmark = pytest.mark.slow

NAMES = ("hc-01", "hc-02")
STRATEGY = {"private_capi_migrate_strategy": "zero_stop"}


def pods(server, namespace):
    return sorted(p["metadata"]["name"] for p in list_items(server, "/api/v1/namespaces/%s/pods" % namespace)
                  if not p["metadata"].get("deletionTimestamp"))


def replicas(server, namespace):
    return {d["metadata"]["name"]: d["spec"]["replicas"]
            for d in list_items(server, "/apis/apps/v1/namespaces/%s/deployments" % namespace)}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("zero-stop-playbooks")
    server, _crds = start_fleet(tmp_path, fleet.fleet_spec(2, machines=2))
    inventory = write_inventory(tmp_path, server.kubeconfig)
    extra = dict(STRATEGY, private_capi_fleet_serial=2,
                 private_capi_fleet_report_root=os.path.join(str(tmp_path), "reports"))
    yield {"server": server, "inventory": inventory, "extra": extra, "before": {
        name: replicas(server, "clusters-" + name) for name in NAMES}}
    assert server.stop() == 0


def test_migrate_and_roll_back_without_stopping_a_controller(world):
    server = world["server"]
    migrated = run_playbook("migrate_fleet.yml", world["inventory"], world["extra"])
    assert migrated.returncode == 0, (migrated.stdout + migrated.stderr)[-5000:]
    assert hostedcluster_states(server) == {name: "migrated" for name in NAMES}
    for name in NAMES:
        namespace = "clusters-" + name
        assert replicas(server, namespace) == world["before"][name], "a Deployment was scaled"
        mode = server.request("GET", "/api/v1/namespaces/%s/configmaps/capi-proxy-mode" % namespace).json()["data"]
        assert mode["mode"] == "translate"
    assert "controllers down" not in migrated.stdout or "0.0" in migrated.stdout

    after_migration = {name: pods(server, "clusters-" + name) for name in NAMES}
    sampler = Sampler(server, namespaces=["clusters-" + name for name in NAMES])
    try:
        rolled = run_playbook("rollback.yml", world["inventory"],
                              dict(STRATEGY, private_capi_rollback_names=["hc-01"]))
    finally:
        short = sampler.stop()
    assert rolled.returncode == 0, (rolled.stdout + rolled.stderr)[-5000:]
    assert hostedcluster_states(server) == {"hc-01": "legacy", "hc-02": "migrated"}
    mode = server.request("GET", "/api/v1/namespaces/clusters-hc-01/configmaps/capi-proxy-mode").json()["data"]
    assert mode["mode"] == "passthrough"
    assert list_items(server, "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/clusters-hc-01/machines") == []
    assert {name: pods(server, "clusters-" + name) for name in NAMES} == after_migration, "a Pod was replaced"
    assert replicas(server, "clusters-hc-01") == world["before"]["hc-01"]
    assert sampler.samples > 3 and short == [], short
