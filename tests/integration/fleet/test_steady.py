"""Only steady HostedClusters are migrated; the others are deferred with the reason (issue 21).

On the real control plane, a fleet of five where, before migrate_fleet.yml runs: hc-01 has a Machine being deleted
(the Machine finalizer holds it, as while its node drains and its instance terminates), hc-02 a MachineDeployment
mid-rollout (a second MachineSet with replicas), hc-03 a HostedCluster that is not Available, hc-04 one that is
Progressing until the test's stand-in for the HyperShift operator reports it done a few seconds into the run, and
hc-05 nothing in flight. The run waits up to private_capi_migrate_steady_timeout: hc-04 and hc-05 are migrated,
the other three deferred - state, objects and Deployments untouched - with reasons naming the objects, counted apart
from failures (the run succeeds). Check mode prints the same judgement per cluster. With
private_capi_migrate_allow_unsteady, hc-03 and hc-01 migrate, and hc-01's deletion is carried across: its private
Machine exists with a deletionTimestamp and the finalizer until the test, standing in for the new CAPI controller,
releases it. Without the override the copy never strips a finalizer from an object it did not copy
(tests/integration/move/test_capi_object_migrate.py).
"""
import json
import os
import re
import threading
import time

import pytest

from testenv.client import wait_for
from testenv.module_runner import run_module
from testenv.hcp import fleet
from tests.integration.fleet.support import (
    bed_webhook_vars, differences, hcp_ns, hostedcluster, hostedcluster_states, list_items, read_report, run_playbook, snapshot,
    start_fleet, write_inventory)

pytestmark = pytest.mark.slow

NAMES = ["hc-%02d" % index for index in range(1, 6)]
CORE = "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s"
PRIVATE_CORE = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/%s"
HC_STATUS = "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters/%s/status"
CARRIED_PREFIX = "hypershift.openshift.io/capi-migration-carried"
STEADY_VARS = {"private_capi_migrate_steady_timeout": 12, "private_capi_migrate_steady_poll_seconds": 1}


def _set_condition(server, name, kind, status, reason, message=""):
    hc = hostedcluster(server, name)
    conditions = [c for c in hc["status"]["conditions"] if c["type"] != kind]
    conditions.append({"type": kind, "status": status, "reason": reason, "message": message,
                       "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    response = server.request("PATCH", HC_STATUS % name, {"status": {"conditions": conditions}},
                              content_type="application/merge-patch+json")
    assert response.status == 200, response


def _delete_a_machine(server):
    machine = sorted(list_items(server, CORE % hcp_ns("hc-01") + "/machines"), key=lambda m: m["metadata"]["name"])[0]
    path = CORE % hcp_ns("hc-01") + "/machines/" + machine["metadata"]["name"]
    response = server.request("DELETE", path)
    assert response.status in (200, 202), response
    # what the CAPI Machine controller writes once the deletion has begun (it drains the node next)
    response = server.request("PATCH", path + "/status", {"status": {"phase": "Deleting"}},
                              content_type="application/merge-patch+json")
    assert response.status == 200, response
    return machine["metadata"]["name"]


def _set_cluster_phase(server, name, phase):
    """Write the standard Cluster's status.phase; returns the phase it had."""
    cluster = list_items(server, CORE % hcp_ns(name) + "/clusters")[0]
    path = CORE % hcp_ns(name) + "/clusters/%s/status" % cluster["metadata"]["name"]
    response = server.request("PATCH", path, {"status": {"phase": phase}}, content_type="application/merge-patch+json")
    assert response.status == 200, response
    return cluster["status"]["phase"]


def _start_a_rollout(server):
    """A second MachineSet of the pool's MachineDeployment with a replica: what a template change starts."""
    machine_set = list_items(server, CORE % hcp_ns("hc-02") + "/machinesets")[0]
    new = {"apiVersion": machine_set["apiVersion"], "kind": "MachineSet",
           "metadata": {"name": machine_set["metadata"]["name"] + "-next", "namespace": hcp_ns("hc-02"),
                        "labels": machine_set["metadata"]["labels"],
                        "ownerReferences": machine_set["metadata"]["ownerReferences"]},
           "spec": dict(machine_set["spec"], replicas=1)}
    response = server.request("POST", CORE % hcp_ns("hc-02") + "/machinesets", new)
    assert response.status == 201, response
    return new["metadata"]["name"]


@pytest.fixture(scope="module")
def fleet_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("steady")
    server, crds = start_fleet(tmp_path, fleet.fleet_spec(len(NAMES), machines=1), pods="kwok-only")
    inventory = write_inventory(tmp_path, server.kubeconfig, host_vars=bed_webhook_vars(server))
    deleted = _delete_a_machine(server)
    rollout = _start_a_rollout(server)
    _set_condition(server, "hc-03", "Available", "False", "EtcdUnavailable", "etcd quorum lost")
    _set_condition(server, "hc-04", "Progressing", "True", "Upgrading", "rolling out 4.21.4")
    checked = run_playbook("migrate_fleet.yml", inventory, dict(STEADY_VARS, private_capi_fleet_report_root=os.path.join(
        str(tmp_path), "reports-check")), check=True)
    before = {name: snapshot(server, crds, hcp_ns(name)) for name in ("hc-01", "hc-02", "hc-03")}
    # the HyperShift operator's stand-in: hc-04's rollout finishes 4 s into the run (while the role waits on it)
    timer = threading.Timer(4.0, _set_condition, (server, "hc-04", "Progressing", "False", "AsExpected"))
    timer.start()
    root = os.path.join(str(tmp_path), "reports")
    result = run_playbook("migrate_fleet.yml", inventory, dict(STEADY_VARS, private_capi_fleet_serial=len(NAMES),
                                                               private_capi_fleet_report_root=root))
    timer.join()
    after = {name: snapshot(server, crds, hcp_ns(name)) for name in ("hc-01", "hc-02", "hc-03")}
    states = hostedcluster_states(server)
    # a first attempt with the override fails its health check (hc-01's Cluster Failed: the copy carries the phase)
    # and is rolled back with the standard objects intact: the partial copies go, and the carried mark with them
    phase = _set_cluster_phase(server, "hc-01", "Failed")
    failed_attempt = run_playbook("migrate_fleet.yml", inventory, dict(
        STEADY_VARS, private_capi_migrate_allow_unsteady=True, private_capi_migrate_steady_timeout=0,
        private_capi_fleet_names=["hc-01"], private_capi_fleet_report_root=root + "-failed-attempt"))
    after_failure = server.request("GET", CORE % hcp_ns("hc-01") + "/machines/" + deleted).json()
    _set_cluster_phase(server, "hc-01", phase)
    # the override, for the two that will not become steady by themselves
    forced = run_playbook("migrate_fleet.yml", inventory, dict(
        STEADY_VARS, private_capi_migrate_allow_unsteady=True, private_capi_migrate_steady_timeout=0,
        private_capi_migrate_retry_failed=True, private_capi_fleet_names=["hc-01", "hc-03"],
        private_capi_fleet_serial=2, private_capi_fleet_report_root=root + "-forced"))
    yield {"server": server, "crds": crds, "check": checked, "result": result, "root": root, "before": before,
           "after": after, "states": states, "deleted": deleted, "rollout": rollout, "forced": forced,
           "failed_attempt": failed_attempt, "after_failure": after_failure}
    assert server.stop() == 0


def _records(root):
    return {c["name"]: c for c in read_report(root)["clusters"]}


def test_steady_clusters_migrate_and_the_others_are_deferred_untouched(fleet_run):
    result = fleet_run["result"]
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]  # a deferral is no failure
    assert fleet_run["states"] == {"hc-01": "legacy", "hc-02": "legacy", "hc-03": "legacy", "hc-04": "migrated",
                                   "hc-05": "migrated"}
    for name in ("hc-01", "hc-02", "hc-03"):
        changed = differences(fleet_run["before"][name], fleet_run["after"][name])
        assert not changed, "%s changed while deferred:\n%s" % (name, "\n".join(changed))
        hc = hostedcluster(fleet_run["server"], name)
        assert "pausedUntil" not in hc["spec"]
        assert not [key for key in hc["metadata"].get("annotations") or {} if "migration-in-progress" in key]


def test_each_deferral_names_the_object_and_what_it_waits_for(fleet_run):
    records = _records(fleet_run["root"])
    assert {name: records[name]["status"] for name in NAMES} == {
        "hc-01": "deferred", "hc-02": "deferred", "hc-03": "deferred", "hc-04": "migrated", "hc-05": "migrated"}
    assert ("Machine %s/%s is being deleted since" % (hcp_ns("hc-01"), fleet_run["deleted"])) in records["hc-01"]["reason"]
    assert "waiting for its deletion to finish" in records["hc-01"]["reason"]
    assert "MachineDeployment %s/hc-02-pool-1 is rolling out" % hcp_ns("hc-02") in records["hc-02"]["reason"]
    assert fleet_run["rollout"] in records["hc-02"]["reason"]
    assert ("HostedCluster clusters/hc-03 is not Available (EtcdUnavailable etcd quorum lost)"
            in records["hc-03"]["reason"]), records["hc-03"]["reason"]
    assert records["hc-01"]["reason"].startswith("not steady after 1"), records["hc-01"]["reason"]  # waited 12 s
    assert records["hc-04"]["steady_reasons"] == [] and records["hc-05"]["steady_reasons"] == []


def test_a_cluster_that_becomes_steady_during_the_wait_is_migrated(fleet_run):
    record = _records(fleet_run["root"])["hc-04"]
    assert record["status"] == "migrated" and record["controllers_down_seconds"] > 0
    output = fleet_run["result"].stdout
    assert "not steady" not in [line for line in output.splitlines() if "hc-04" in line and "msg" in line]


def test_the_report_and_the_summary_count_deferred_apart_from_failed(fleet_run):
    report = read_report(fleet_run["root"])
    assert report["totals"] == {"migrated": 2, "deferred": 3}
    output = fleet_run["result"].stdout
    assert "migrated 2, deferred 3" in output, output[-3000:]
    markdown = open(os.path.join(fleet_run["root"], report["run_id"], "report.md")).read()
    assert "## Deferred HostedClusters" in markdown and "## Failed HostedClusters" not in markdown


def test_check_mode_prints_steady_or_what_each_cluster_would_wait_for(fleet_run):
    result = fleet_run["check"]
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    text = result.stdout
    assert text.count('"msg": "steady"') == 1, text[-4000:]  # hc-05 (hc-04 is still Progressing then)
    assert text.count('"msg": "not steady, would wait: ') == 4, text[-4000:]
    assert "HostedCluster clusters/hc-04 is Progressing (Upgrading rolling out 4.21.4)" in text


def test_the_override_migrates_and_carries_the_deletion_across(fleet_run):
    server = fleet_run["server"]
    forced = fleet_run["forced"]
    assert forced.returncode == 0, (forced.stdout + forced.stderr)[-4000:]
    records = _records(fleet_run["root"] + "-forced")
    assert records["hc-03"]["status"] == "migrated" and records["hc-01"]["status"] == "migrated", records
    assert hostedcluster_states(server)["hc-01"] == "migrated"
    # the standard Machine is gone; its private copy is being deleted, holding the Machine finalizer for the new
    # controllers (drain, instance termination)
    name = fleet_run["deleted"]
    assert server.request("GET", CORE % hcp_ns("hc-01") + "/machines/" + name).status == 404
    path = PRIVATE_CORE % hcp_ns("hc-01") + "/machines/" + name
    machine = server.request("GET", path).json()
    assert machine["metadata"].get("deletionTimestamp"), json.dumps(machine)[:800]
    assert machine["metadata"]["finalizers"] == ["machine.cluster.x-k8s.io"], machine["metadata"]
    # the role's health check passed with the copy Deleting; the count record leaves the deletion in flight out, so
    # capi_verify agrees before and after the controller finishes it
    record = json.loads(hostedcluster(server, "hc-01")["metadata"]["annotations"]["hypershift.openshift.io/capi-migration-counts"])
    before = verify(server, "hc-01")
    assert before["ok"], before["problems"]
    assert before["leaving_counts"]["Machine"] == 1 and before["private_counts"]["Machine"] == record["Machine"]
    # the new CAPI controller finishes: it releases the finalizer, and the deletion completes
    released = server.request("PATCH", path, {"metadata": {"finalizers": None}},
                              content_type="application/merge-patch+json")
    assert released.status == 200, released
    wait_for(lambda: server.request("GET", path).status == 404, "the private Machine %s to go" % name, timeout=30)
    # once the garbage collector has taken (or begun deleting) what the Machine owned
    after = wait_for(lambda: verify(server, "hc-01", passing=True), "capi_verify of hc-01 to pass after the deletion",
                     timeout=60, interval=1)
    assert "Machine" not in after["leaving_counts"] and after["private_counts"]["Machine"] == record["Machine"]


def test_a_failed_attempt_leaves_the_deletion_in_flight_to_the_standard_controllers(fleet_run):
    """The override's copy phase marked hc-01's Machine as carried; the attempt failed before any standard object
    was deleted, and its rollback deleted the partial copies: it also takes the mark away, so that the standard
    controllers (back at once) finish the deletion, and a later attempt carries it afresh instead of taking it for
    carried and removing its finalizer with no copy left to finish it."""
    failed = fleet_run["failed_attempt"]
    text = failed.stdout + failed.stderr
    assert failed.returncode != 0 and "Cluster" in text and "phase is Failed" in text, text[-4000:]
    # the rescue (one hcp_migrate_rollback run, path rescue) ran and changed the cluster; what it did to the mark is below
    rescued = re.search(r"TASK \[[^\]]*Back to the standard CAPI objects[^\]]*\] \**\n(\w+):", text)
    assert rescued and rescued.group(1) == "changed", text[-6000:]
    metadata = fleet_run["after_failure"]["metadata"]
    assert metadata.get("deletionTimestamp") and metadata["finalizers"] == ["machine.cluster.x-k8s.io"], metadata
    assert not [key for key in metadata.get("annotations") or {} if key.startswith(CARRIED_PREFIX)], metadata


def verify(server, name, passing=False):
    """capi_verify's result; with passing, None unless it passed."""
    result = run_module("capi_verify", {"kubeconfig": server.kubeconfig, "hostedcluster_name": name,
                                        "hostedcluster_namespace": "clusters"})
    assert not result.failed, result.get("msg")
    return result if result["ok"] or not passing else None


def test_a_rollback_carries_a_deletion_in_flight_back(fleet_run, tmp_path):
    """hc-03 (migrated by the override) has a private Machine whose deletion has begun: rollback.yml does not wait,
    it carries the deletion back to the standard group, where the standard controllers finish it."""
    server = fleet_run["server"]
    assert hostedcluster_states(server)["hc-03"] == "migrated"
    machine = sorted(list_items(server, PRIVATE_CORE % hcp_ns("hc-03") + "/machines"),
                     key=lambda m: m["metadata"]["name"])[0]
    name = machine["metadata"]["name"]
    private = PRIVATE_CORE % hcp_ns("hc-03") + "/machines/" + name
    assert server.request("DELETE", private).status in (200, 202)
    assert server.request("PATCH", private + "/status", {"status": {"phase": "Deleting"}},
                          content_type="application/merge-patch+json").status == 200
    inventory = write_inventory(tmp_path, server.kubeconfig, host_vars=bed_webhook_vars(server))
    result = run_playbook("rollback.yml", inventory, {"private_capi_rollback_names": ["hc-03"],
                                                      "private_capi_fleet_report_root": str(tmp_path / "reports")})
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert hostedcluster_states(server)["hc-03"] == "legacy"
    assert server.request("GET", private).status == 404
    standard = CORE % hcp_ns("hc-03") + "/machines/" + name
    copy = server.request("GET", standard).json()
    assert copy["metadata"].get("deletionTimestamp"), json.dumps(copy)[:800]
    assert copy["metadata"]["finalizers"] == machine["metadata"]["finalizers"], copy["metadata"]
    released = server.request("PATCH", standard, {"metadata": {"finalizers": None}},
                              content_type="application/merge-patch+json")
    assert released.status == 200, released
    wait_for(lambda: server.request("GET", standard).status == 404, "the standard Machine %s to go" % name, timeout=30)
