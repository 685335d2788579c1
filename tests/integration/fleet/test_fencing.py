"""The fence works (issue 7, "Must show"): a fake legacy HyperShift operator that un-pauses every Cluster of a
HostedCluster it reconciles unless the HostedCluster is paused with spec.pausedUntil
(testenv/hcp/legacy_operator.py) runs during the migrations.

- Fence on (the default): the migration succeeds and the operator never un-pauses anything.
- Fence off: the pause check (after private_capi_migrate_pause_settle_seconds) sees the Cluster un-paused and the
  migration rolls back cleanly with a reason saying an operator still reconciles the HostedCluster.
"""
import os

import pytest

from testenv.client import wait_for
from testenv.hcp import fleet
from testenv.hcp.legacy_operator import LegacyOperator
from tests.integration.fleet.support import (
    bed_webhook_vars, hostedcluster, hostedcluster_states, private_keys, run_playbook, snapshot, standard_keys, start_fleet,
    write_inventory)

FENCED, UNFENCED = "hc-01", "hc-02"


@pytest.fixture(scope="module")
def fenced_fleet(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("fencing")
    server, crds = start_fleet(tmp_path, fleet.fleet_spec(2, machines=1), pods="kwok-only", private_crds=False)
    before = {name: snapshot(server, crds, "clusters-" + name) for name in (FENCED, UNFENCED)}
    operator = LegacyOperator(server.kubeconfig).start()
    # the operator is live: it has reconciled both HostedClusters (nothing to un-pause yet)
    wait_for(lambda: operator.reconciles >= 2, "the legacy operator's first reconciles")
    inventory = write_inventory(tmp_path, server.kubeconfig, host_vars=bed_webhook_vars(server))
    root = os.path.join(str(tmp_path), "reports")
    fenced = run_playbook("migrate_fleet.yml", inventory, {
        "private_capi_fleet_names": [FENCED], "private_capi_fleet_report_root": root,
        "private_capi_migrate_pause_settle_seconds": 2})
    writes_fenced, fenced_paused = list(operator.writes), list(operator.fenced_paused)
    unfenced = run_playbook("migrate_fleet.yml", inventory, {
        "private_capi_fleet_names": [UNFENCED], "private_capi_fleet_report_root": root,
        "private_capi_migrate_fence": False, "private_capi_migrate_pause_settle_seconds": 2})
    alive = operator.stop()
    yield {"server": server, "crds": crds, "before": before, "operator": operator, "alive": alive,
           "runs": {FENCED: fenced, UNFENCED: unfenced}, "writes_fenced": writes_fenced,
           "fenced_paused": fenced_paused}
    assert server.stop() == 0


def test_with_the_fence_the_migration_succeeds_and_the_operator_never_unpauses(fenced_fleet):
    server, result = fenced_fleet["server"], fenced_fleet["runs"][FENCED]
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert hostedcluster_states(server)[FENCED] == "migrated"
    assert fenced_fleet["writes_fenced"] == [], "the fenced HostedCluster's Cluster was un-paused"
    # the operator did see the paused Cluster during the migration, and left it alone because of the fence
    assert FENCED in fenced_fleet["fenced_paused"]
    after = snapshot(server, fenced_fleet["crds"], "clusters-" + FENCED)
    assert not standard_keys(after)
    assert sorted(key.split("/", 1)[1] for key in private_keys(after)) == \
        sorted(key.split("/", 1)[1] for key in standard_keys(fenced_fleet["before"][FENCED]))
    assert "pausedUntil" not in hostedcluster(server, FENCED)["spec"]


def test_without_the_fence_the_pause_check_sees_the_operator_and_rolls_back(fenced_fleet):
    server, result = fenced_fleet["server"], fenced_fleet["runs"][UNFENCED]
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-4000:]
    writes = [w for w in fenced_fleet["operator"].writes if w["hostedcluster"] == UNFENCED]
    assert writes, "the fake operator never un-paused the unfenced Cluster: the test proves nothing"
    assert hostedcluster_states(server)[UNFENCED] == "failed", output[-4000:]
    hc = hostedcluster(server, UNFENCED)
    reason = hc["metadata"]["annotations"]["hypershift.openshift.io/migration-failed"]
    assert reason.startswith("pause:") and "an operator still reconciles" in reason, reason
    assert hc["metadata"]["annotations"]["hypershift.openshift.io/scope"] == "legacy"
    assert "pausedUntil" not in hc["spec"]
    # rolled back: nothing copied, the namespace exactly as before (the Cluster unpaused, as it was)
    assert snapshot(server, fenced_fleet["crds"], "clusters-" + UNFENCED) == fenced_fleet["before"][UNFENCED]
    assert "fatal: [mc-1/clusters/%s]: FAILED!" % UNFENCED in output


def test_the_fake_operator_ran_cleanly(fenced_fleet):
    operator = fenced_fleet["operator"]
    assert operator.errors == [] and fenced_fleet["alive"] == [], (operator.errors, fenced_fleet["alive"])
