"""preinstall_proxy.yml, migrate_fleet.yml and rollback.yml with private_capi_migrate_strategy=zero_stop on the real
control plane.

Two HostedClusters: the sidecars put in ahead by the pre-install play on its own (2026-12-04: the operator held off
with spec.pausedUntil a time, the original kept; a second run and a dry run change nothing), then migrated at once
(the migration finds the sidecars in place and replaces no Pod; its fence takes the hold over and restores each
original pausedUntil), then one rolled back: the window flips the sidecars, the way back flips them back. A sampler reads every HCP
namespace's Deployments every 0.2 s from the end of the sidecar roll-out to the end of the rollback: no CAPI-dependent
Deployment is ever scaled below its replicas or short of an available replica, and no Pod is replaced after the
sidecars went in.
"""
import datetime
import json
import os

import pytest

from testenv.hcp import fleet
from tests.integration.fleet.support import (
    hostedcluster, hostedcluster_states, list_items, read_report, run_playbook, start_fleet, write_inventory)
from tests.integration.fleet.test_zero_stop import Sampler

pytestmark = pytest.mark.slow

NAMES = ("hc-01", "hc-02")
STRATEGY = {"private_capi_migrate_strategy": "zero_stop"}
HOLD_ANNOTATION = "hypershift.openshift.io/capi-migration-paused-until"
# hc-01 carries a pause of its user's that has ended (an older maintenance): the pre-install keeps it as the original
USER_PAUSE = "2026-01-01T00:00:00Z"


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
    response = server.request("PATCH", "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters/hc-01",
                              {"spec": {"pausedUntil": USER_PAUSE}}, content_type="application/merge-patch+json")
    assert response.status == 200, response
    inventory = write_inventory(tmp_path, server.kubeconfig)
    extra = dict(STRATEGY, private_capi_fleet_serial=2,
                 private_capi_fleet_report_root=os.path.join(str(tmp_path), "reports"))
    # the pre-install's summaries apart from the migration's reports (read_report reads the last run there)
    pre = dict(extra, private_capi_fleet_report_root=os.path.join(str(tmp_path), "preinstall-reports"))
    yield {"server": server, "inventory": inventory, "extra": extra, "reports": extra["private_capi_fleet_report_root"],
           "pre": pre,
           "before": {name: replicas(server, "clusters-" + name) for name in NAMES}}
    assert server.stop() == 0


def preinstall_summary(report_root, run_id):
    with open(os.path.join(report_root, run_id, "preinstall.json")) as handle:
        return json.load(handle)


def hold_of(server, name):
    found = hostedcluster(server, name)
    return found["spec"].get("pausedUntil"), found["metadata"].get("annotations", {}).get(HOLD_ANNOTATION)


def test_the_preinstall_play_puts_the_sidecars_in_ahead_and_holds_the_operator_off(world):
    server = world["server"]
    untouched = {name: (hold_of(server, name), pods(server, "clusters-" + name)) for name in NAMES}
    dry = run_playbook("preinstall_proxy.yml", world["inventory"], dict(world["pre"], private_capi_fleet_run_id="pre-dry"),
                       check=True)
    assert dry.returncode == 0, (dry.stdout + dry.stderr)[-5000:]
    assert {name: (hold_of(server, name), pods(server, "clusters-" + name)) for name in NAMES} == untouched
    assert not os.path.exists(os.path.join(world["pre"]["private_capi_fleet_report_root"], "pre-dry")), "check mode wrote a report"

    started = datetime.datetime.now(datetime.timezone.utc)
    done = run_playbook("preinstall_proxy.yml", world["inventory"], dict(world["pre"], private_capi_fleet_run_id="pre-1"))
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    summary = preinstall_summary(world["pre"]["private_capi_fleet_report_root"], "pre-1")
    assert summary["fleet"]["by_status"] == {"preinstalled": 2}, summary["lines"]
    assert summary["fleet"]["pods_replaced"] > 0 and summary["fleet"]["longest_unready_seconds"] == 0.0, summary["lines"]
    assert hostedcluster_states(server) == {name: "legacy" for name in NAMES}
    for name in NAMES:
        paused_until, original = hold_of(server, name)
        ends = datetime.datetime.strptime(paused_until, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
        assert 7100 < (ends - started).total_seconds() < 7300, paused_until  # the default hold, two hours
        assert original == (USER_PAUSE if name == "hc-01" else "none")
        namespace = "clusters-" + name
        mode = server.request("GET", "/api/v1/namespaces/%s/configmaps/capi-proxy-mode" % namespace).json()["data"]
        assert mode["mode"] == "passthrough"
        sidecars = [d["metadata"]["name"] for d in list_items(server, "/apis/apps/v1/namespaces/%s/deployments" % namespace)
                    if "kube-apiserver-proxy" in [c["name"] for c in d["spec"]["template"]["spec"]["containers"]]]
        assert "cluster-api" in sidecars and "capi-provider" in sidecars, sidecars
    held = {name: (hold_of(server, name), pods(server, "clusters-" + name)) for name in NAMES}
    world["preinstalled_pods"] = {name: held[name][1] for name in NAMES}

    again = run_playbook("preinstall_proxy.yml", world["inventory"], dict(world["pre"], private_capi_fleet_run_id="pre-2"))
    assert again.returncode == 0, (again.stdout + again.stderr)[-5000:]
    assert preinstall_summary(world["pre"]["private_capi_fleet_report_root"], "pre-2")["fleet"]["by_status"] == {"unchanged": 2}
    assert {name: (hold_of(server, name), pods(server, "clusters-" + name)) for name in NAMES} == held


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
    # the sidecars were in ahead: the migration replaced no Pod, and its fence took the hold over and gave it back
    report = read_report(world["reports"])
    assert [c["preinstall"]["pods_replaced"] for c in report["clusters"]] == [0, 0], report["clusters"]
    assert {name: pods(server, "clusters-" + name) for name in NAMES} == world["preinstalled_pods"]
    assert {name: hold_of(server, name) for name in NAMES} == {"hc-01": (USER_PAUSE, None), "hc-02": (None, None)}

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


def test_the_preinstall_refuses_a_migrated_hostedcluster_and_changes_nothing(world):
    server = world["server"]
    before = (hostedcluster(server, "hc-02"), pods(server, "clusters-hc-02"))
    refused = run_playbook("preinstall_proxy.yml", world["inventory"], dict(
        world["pre"], private_capi_fleet_run_id="pre-3", private_capi_fleet_states=["migrated"]))
    assert refused.returncode != 0
    assert "HostedCluster clusters/hc-02 is migrated: a pre-install holds the HyperShift operator off" in refused.stdout, \
        refused.stdout[-5000:]
    assert preinstall_summary(world["pre"]["private_capi_fleet_report_root"], "pre-3")["fleet"]["by_status"] == {"failed": 1}
    assert (hostedcluster(server, "hc-02"), pods(server, "clusters-hc-02")) == before
