"""migrate_fleet.yml end to end on the local API server: a small fleet over two platforms, one HostedCluster whose
copy is refused by the server (it must roll back to exactly what it was), then a second run that changes nothing."""
import json
import os

import pytest

from tests.fixtures.hcp import fleet
from tests.integration.fleet.support import (
    hostedcluster_states, read_report, run_playbook, snapshot, start_fleet, write_inventory)

FAULTY = "hc-03"


@pytest.fixture(scope="module")
def migrated_fleet(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("fleet")
    server, crds = start_fleet(tmp_path, fleet.fleet_spec(3, machines=2))
    before = {name: snapshot(server, crds, "clusters-" + name) for name in ("hc-01", FAULTY)}
    # the API server refuses every private Machine of one HCP namespace, as an admission webhook would
    server.add_fault({"verb": "create", "group": "cluster.hypershift.openshift.io", "resource": "machines",
                      "namespace": "clusters-" + FAULTY, "code": 403, "count": -1,
                      "message": "admission webhook denied the request (injected)"})
    inventory = write_inventory(tmp_path, server.kubeconfig)
    report_root = os.path.join(str(tmp_path), "reports")
    extra_vars = {"private_capi_fleet_serial": 3, "private_capi_fleet_report_root": report_root}
    result = run_playbook("migrate_fleet.yml", inventory, extra_vars)
    yield {"server": server, "crds": crds, "before": before, "result": result, "inventory": inventory,
           "report_root": report_root}
    assert server.stop() == 0


def test_fleet_migrates_and_the_faulty_cluster_rolls_back_cleanly(migrated_fleet):
    server, result = migrated_fleet["server"], migrated_fleet["result"]
    output = result.stdout + result.stderr
    assert result.returncode != 0, "the faulty HostedCluster must show failed:\n" + output[-3000:]
    assert hostedcluster_states(server) == {"hc-01": "migrated", "hc-02": "migrated", FAULTY: "failed"}, output[-4000:]
    # migrated: no standard-group object left, the private ones in their place
    after = snapshot(server, migrated_fleet["crds"], "clusters-hc-01")
    assert not [key for key in after if key.split("/")[0].endswith("cluster.x-k8s.io")]
    assert {key.split("/", 1)[1] for key in after if "hypershift.openshift.io" in key.split("/")[0] and "cluster." in key} \
        == {key.split("/", 1)[1] for key in migrated_fleet["before"]["hc-01"] if key.split("/")[0].endswith("cluster.x-k8s.io")}
    # rolled back: the HCP namespace is exactly what it was, no private object left
    assert snapshot(server, migrated_fleet["crds"], "clusters-" + FAULTY) == migrated_fleet["before"][FAULTY]
    hc = server.request("GET", "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters/" + FAULTY).json()
    annotations = hc["metadata"]["annotations"]
    assert annotations["hypershift.openshift.io/scope"] == "legacy"
    assert "admission webhook denied" in annotations["hypershift.openshift.io/migration-failed"]
    assert "pausedUntil" not in hc["spec"]
    deployment = server.request("GET", "/apis/apps/v1/namespaces/clusters-%s/deployments/cluster-api" % FAULTY).json()
    assert deployment["spec"]["replicas"] == 1
    assert [c["name"] for c in deployment["spec"]["template"]["spec"]["containers"]] == ["manager"]


def test_report_has_every_cluster_phases_and_a_gantt(migrated_fleet):
    report = read_report(migrated_fleet["report_root"])
    assert report["totals"] == {"migrated": 2, "failed": 1}
    by_name = {c["name"]: c for c in report["clusters"]}
    expected = ["pause", "scale_down", "copy", "proxy", "resume", "health", "finish"]
    assert [p["name"] for p in by_name["hc-01"]["phases"]][1:] == expected
    assert by_name[FAULTY]["phases"][-1]["name"] == "rollback" and "copy:" in by_name[FAULTY]["reason"]
    markdown = open(os.path.join(migrated_fleet["report_root"], report["run_id"], "report.md")).read()
    assert "```mermaid\ngantt" in markdown and "section hc-01" in markdown and "rollback :crit" in markdown


def test_second_run_changes_nothing_on_the_cluster(migrated_fleet):
    server = migrated_fleet["server"]
    server.clear_faults()
    server.reset_requests()
    result = run_playbook("migrate_fleet.yml", migrated_fleet["inventory"],
                          {"private_capi_fleet_report_root": migrated_fleet["report_root"]})
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    entries = server.request_counts()
    writes = {verb: count for verb, count in entries["by_verb"].items()
              if verb in ("create", "update", "patch", "delete", "deletecollection")}
    assert not writes, "a second run wrote to the cluster: %r" % entries
    assert hostedcluster_states(server) == {"hc-01": "migrated", "hc-02": "migrated", FAULTY: "failed"}


def _verify(migrated_fleet):
    result = run_playbook("verify_fleet.yml", migrated_fleet["inventory"],
                          {"private_capi_verify_report_root": migrated_fleet["report_root"]})
    root = migrated_fleet["report_root"]
    latest = sorted(name for name in os.listdir(root) if name.startswith("verify-"))[-1]
    with open(os.path.join(root, latest)) as handle:
        return result, {row["name"]: row for row in json.load(handle)}


def test_verify_proves_the_migrated_clusters_and_flags_the_rolled_back_one(migrated_fleet):
    result, rows = _verify(migrated_fleet)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output[-3000:]
    assert rows["hc-01"]["ok"] and rows["hc-02"]["ok"], output[-3000:]
    assert rows["hc-01"]["objects"] == 9 and rows["hc-01"]["standard_left"] == 0
    assert not rows[FAULTY]["ok"]
    assert "migration state failed, expected migrated" in rows[FAULTY]["problems"][0]
    assert "2 of 3 HostedClusters verified" in output


def test_verify_detects_a_lost_private_object(migrated_fleet):
    server = migrated_fleet["server"]
    machines = server.request("GET", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/clusters-hc-02/machines").json()
    name = machines["items"][0]["metadata"]["name"]
    path = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/clusters-hc-02/machines/" + name
    # the Machine's finalizers would keep it (no CAPI controller runs here to remove them)
    server.request("PATCH", path, body={"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
    deleted = server.request("DELETE", path, body={"propagationPolicy": "Orphan"})
    assert deleted.status in (200, 202), deleted
    rows = _verify(migrated_fleet)[1]
    assert not rows["hc-02"]["ok"]
    assert any("1 private Machine objects, the record before migration says 2" in p for p in rows["hc-02"]["problems"]), \
        rows["hc-02"]["problems"]
