"""rollback.yml end to end on the local API server: two HostedClusters migrated by migrate_fleet.yml, then one rolled
back - refused without a selection, planned in check mode, failing at the copy and at the deletion (each time left
locked with the command that resumes), resumed with the same run id to legacy with the standard objects as they were
before the migration; the other untouched; a second run changes nothing; migrate_fleet.yml migrates it again."""
import json
import os

import pytest

from testenv.cluster.testing import containers_named, get_in_pod, ready_pod, unwell
from testenv.hcp import fleet
from testenv.hcp.state import SOURCE_UID_ANNOTATION, SOURCE_VERSION_ANNOTATION
from testenv.module_runner import run_module
from tests.integration.fleet.support import (
    hostedcluster_states, run_playbook, snapshot, start_fleet, user_annotations, write_inventory)

TARGET, OTHER = "hc-01", "hc-02"
HCP = "clusters-" + TARGET
PRIVATE = "cluster.hypershift.openshift.io"
RUN_ID = "rollback-test-run"
HC_PATH = "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters/"
WRITES = ("create", "update", "patch", "delete", "deletecollection")


def deployments(server, namespace):
    listed = server.request("GET", "/apis/apps/v1/namespaces/%s/deployments" % namespace).json()["items"]
    return {item["metadata"]["name"]: {"replicas": item["spec"]["replicas"], "template": item["spec"]["template"],
                                       "annotations": user_annotations(item["metadata"])} for item in listed}


def hostedcluster(server, name):
    return server.request("GET", HC_PATH + name).json()


def without_provenance(state):
    """The canonical state minus the copy's provenance annotations, ownerReference versions reduced to the group."""
    reduced = json.loads(json.dumps(state))
    for obj in reduced.values():
        annotations = obj["metadata"].get("annotations") or {}
        for key in (SOURCE_UID_ANNOTATION, SOURCE_VERSION_ANNOTATION):
            annotations.pop(key, None)
        if "annotations" in obj["metadata"] and not annotations:
            del obj["metadata"]["annotations"]
        for ref in obj["metadata"].get("ownerReferences") or ():
            ref["apiVersion"] = ref["apiVersion"].rpartition("/")[0]
    return reduced


def rollback(world, names=(TARGET,), check=False, **extra):
    extra_vars = dict({"private_capi_rollback_names": list(names)} if names is not None else {}, **extra)
    return run_playbook("rollback.yml", world["inventory"], dict(extra_vars, private_capi_migrate_strategy="scale_down"),
                        check=check)


def output(result):
    return result.stdout + result.stderr


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("rollback")
    server, crds = start_fleet(tmp_path, fleet.fleet_spec(2, machines=2), faults=True)
    before = snapshot(server, crds, HCP)
    deployments_before = deployments(server, HCP)
    inventory = write_inventory(tmp_path, server.kubeconfig)
    # the scale-down way, both ways: this module checks its Deployments, sidecars out and replicas as before
    extra = {"private_capi_fleet_serial": 2, "private_capi_fleet_report_root": os.path.join(str(tmp_path), "reports"),
             "private_capi_migrate_strategy": "scale_down"}
    migrated = run_playbook("migrate_fleet.yml", inventory, extra)
    assert migrated.returncode == 0, output(migrated)[-4000:]
    assert hostedcluster_states(server) == {TARGET: "migrated", OTHER: "migrated"}
    yield {"server": server, "crds": crds, "before": before, "deployments_before": deployments_before,
           "inventory": inventory, "extra": extra, "other_migrated": snapshot(server, crds, "clusters-" + OTHER),
           "tmp": str(tmp_path)}
    assert server.stop() == 0


def test_after_the_migration_with_the_defaults_v1beta1_reads_work_directly_and_through_the_sidecar(world):
    """What the collection deployed runs as on a cluster (a real node, testenv.cluster.node): the conversion shim behind its Service
    converts the private twins, the sidecars pass their probes at the pod IP."""
    server = world["server"]
    crd = server.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/machines." + PRIVATE).json()
    client_config = crd["spec"]["conversion"]["webhook"]["clientConfig"]
    assert client_config["service"]["name"] == "capi-conversion-webhook-shim", client_config
    assert client_config["service"]["namespace"] == "hypershift" and client_config.get("caBundle"), client_config
    direct = server.request("GET", "/apis/%s/v1beta1/namespaces/%s/machines" % (PRIVATE, HCP))
    assert direct.status == 200, direct
    assert direct.json()["items"] and {m["apiVersion"] for m in direct.json()["items"]} == {PRIVATE + "/v1beta1"}
    url = "http://127.0.0.1:8080/apis/cluster.x-k8s.io/v1beta1/namespaces/%s/machines" % HCP
    code, body = get_in_pod(ready_pod(server, HCP, "app=cluster-api"), url)
    assert code == 200, body
    machines = json.loads(body)["items"]
    assert machines and {m["apiVersion"] for m in machines} == {"cluster.x-k8s.io/v1beta1"}
    sidecars = containers_named(server, "kube-apiserver-proxy")
    assert len(sidecars) >= 2 * 6 and not unwell(sidecars), unwell(sidecars)
    shim = {name: status for name, status in containers_named(server, "shim").items() if name.startswith("hypershift/")}
    assert len(shim) == 2 and not unwell(shim), (shim, unwell(shim))
    assert not server.conversion_failures(), server.conversion_failures()[:5]


def test_refuses_without_a_selection_or_with_an_unknown_name_unless_empty_is_allowed_and_writes_nothing(world):
    server = world["server"]
    server.reset_requests()
    unnamed = rollback(world, names=None)
    assert unnamed.returncode != 0
    assert "none was named" in output(unnamed) and 'there is no "all"' in output(unnamed)
    unknown = rollback(world, names=["hc-99", "clusters/" + TARGET])
    assert unknown.returncode != 0
    assert "'hc-99' matches 0 HostedClusters" in output(unknown) and "Nothing was changed" in output(unknown)
    # told that an empty selection is fine (a job run on every inventory), names that all match nothing do nothing
    allowed = rollback(world, names=["hc-99"], private_capi_fleet_allow_empty=True)
    assert allowed.returncode == 0, output(allowed)[-4000:]
    assert ("Nothing to do: none of private_capi_rollback_names [hc-99] is one of the 2 HostedClusters found on mc-1"
            in output(allowed)), output(allowed)[-4000:]
    writes = {verb: n for verb, n in server.request_counts()["by_verb"].items() if verb in WRITES}
    assert not writes, writes
    assert hostedcluster_states(server) == {TARGET: "migrated", OTHER: "migrated"}


def test_check_mode_prints_the_plan_and_changes_nothing(world):
    server = world["server"]
    version = hostedcluster(server, TARGET)["metadata"]["resourceVersion"]
    state = snapshot(server, world["crds"], HCP)
    planned = rollback(world, check=True, private_capi_rollback_names="[%s]" % TARGET)  # the string form of -e k=v
    assert planned.returncode == 0, output(planned)[-4000:]
    text = output(planned)
    assert "DRY RUN (check mode)" in text and "mc-1/clusters/%s: migrated -> legacy (roll back)" % TARGET in text
    assert "4. copy back to the standard groups: " in text and "Machine x2" in text
    assert "5. remove the proxy sidecar from: " in text and "cluster-api" in text
    assert "planned" in text and "objects to copy back" in text
    assert hostedcluster(server, TARGET)["metadata"]["resourceVersion"] == version
    assert snapshot(server, world["crds"], HCP) == state


def test_the_rollback_module_in_check_mode_sends_only_dry_runs_and_changes_nothing(world):
    """hcp_migrate_rollback run directly with check_mode on the migrated cluster: the copies and deletions go as
    server-side dry runs, nothing else is written, and it says what it would change."""
    server = world["server"]
    version = hostedcluster(server, TARGET)["metadata"]["resourceVersion"]
    state = snapshot(server, world["crds"], HCP)
    server.reset_requests()
    result = run_module("hcp_migrate_rollback", {
        "kubeconfig": server.kubeconfig, "path": "rollback", "strategy": "scale_down", "hcp_namespace": HCP, "hostedcluster_name": TARGET,
        "holder": RUN_ID, "deployments": ["cluster-api", "capi-provider", "control-plane-operator"]},
        check_mode=True, diff=True)
    assert not result.failed, result.get("msg")
    assert result["changed"] and result["phase"] == "finish" and "moved" not in result
    assert [mark["name"] for mark in result["marks"]] == ["pause", "copy", "proxy", "resume", "verify", "finish"]
    assert {step["action"] for step in result["copied"]["plan"]} >= {"create"}
    assert result["proxy"]["deployments"], result["proxy"]
    writes = [entry for entry in server.request_counts()["entries"] if entry["verb"] in WRITES]
    assert writes and all(entry["dry_run"] for entry in writes), [
        (e["verb"], e.get("resource"), e.get("user"), e.get("uri", "")[:120]) for e in writes if not e["dry_run"]][:5]
    assert hostedcluster(server, TARGET)["metadata"]["resourceVersion"] == version
    assert snapshot(server, world["crds"], HCP) == state


def test_a_failed_rollback_stays_locked_and_says_how_to_resume(world):
    server = world["server"]
    # the API server refuses to delete the private Machines: the rollback fails at its last step, copies made
    server.add_fault({"verb": "delete*", "group": PRIVATE, "resource": "machines", "namespace": HCP, "code": 403,
                      "count": -1, "message": "deletion denied by an admission webhook (injected)"})
    try:
        failed = rollback(world, private_capi_rollback_run_id=RUN_ID)
    finally:
        server.clear_faults()
    text = output(failed)
    assert failed.returncode != 0
    assert "Rollback of HostedCluster clusters/%s failed at step finish" % TARGET in text, text[-4000:]
    assert "deletion denied by an admission webhook" in text
    assert "-e private_capi_rollback_run_id=%s" % RUN_ID in text and "stays in-progress, locked for the rollback" in text
    assert "not rolled back: mc-1/clusters/%s - failed" % TARGET in text
    annotations = hostedcluster(server, TARGET)["metadata"]["annotations"]
    assert annotations["hypershift.openshift.io/migration-in-progress"] == "true"
    assert annotations["hypershift.openshift.io/capi-migration-lease-holder"] == RUN_ID
    assert annotations["hypershift.openshift.io/capi-migration-lease-direction"] == "rollback"
    assert annotations["hypershift.openshift.io/capi-migration-phase"] == "revert-finish"
    # the HostedCluster itself says why and what to do (the note goes with the lock)
    note = annotations["hypershift.openshift.io/capi-migration-rollback-failed"]
    assert "the rollback by run %s failed at finish" % RUN_ID in note and "deletion denied by an admission webhook" in note
    assert hostedcluster_states(server) == {TARGET: "in-progress", OTHER: "migrated"}
    state = snapshot(server, world["crds"], HCP)
    assert [key for key in state if key.startswith(PRIVATE + "/Machine/")], "the private Machines were kept"
    assert len([key for key in state if key.startswith("cluster.x-k8s.io/Machine/")]) == 2


def test_resumed_rollback_ends_legacy_exactly_as_before_the_migration(world):
    server = world["server"]
    resumed = rollback(world, private_capi_rollback_run_id=RUN_ID)
    text = output(resumed)
    assert resumed.returncode == 0, text[-4000:]
    assert "mc-1/clusters/%s: in-progress -> legacy, rolled-back" % TARGET in text, text[-3000:]
    assert hostedcluster_states(server) == {TARGET: "legacy", OTHER: "migrated"}
    after = snapshot(server, world["crds"], HCP)
    assert not [key for key in after if key.split("/")[0].endswith(PRIVATE)], "private objects left"
    assert without_provenance(after) == without_provenance(world["before"])
    assert all(SOURCE_UID_ANNOTATION in obj["metadata"]["annotations"] for key, obj in after.items()
               if key.split("/")[0].endswith("cluster.x-k8s.io")), "the copies record where they came from"
    hcp = after["hypershift.openshift.io/HostedControlPlane/%s" % TARGET]
    assert [ref["apiVersion"].rpartition("/")[0] for ref in hcp["metadata"]["ownerReferences"]] == ["cluster.x-k8s.io"]
    assert "hypershift.openshift.io/private-capi-types" not in (hcp["metadata"].get("annotations") or {})
    # Deployments: no sidecar, no record, replicas and pod template exactly as before the migration
    assert deployments(server, HCP) == world["deployments_before"]
    hc = hostedcluster(server, TARGET)
    annotations = hc["metadata"]["annotations"]
    assert annotations["hypershift.openshift.io/scope"] == "legacy"
    assert not [key for key in annotations if key in ("hypershift.openshift.io/private-capi-types",
                                                      "hypershift.openshift.io/migration-in-progress",
                                                      "hypershift.openshift.io/capi-migration-counts",
                                                      "hypershift.openshift.io/capi-migration-phase",
                                                      "hypershift.openshift.io/capi-migration-paused-until")
                or key.startswith("hypershift.openshift.io/capi-migration-lease")]
    assert "pausedUntil" not in hc["spec"]
    history = json.loads(annotations["hypershift.openshift.io/capi-migration-history"])
    rollback_moves = [(entry["from"], entry["to"]) for entry in history if entry.get("rollback")]
    assert rollback_moves == [("migrated", "in-progress"), ("in-progress", "legacy")]
    clusters = [obj for key, obj in after.items() if key.startswith("cluster.x-k8s.io/Cluster/")]
    assert clusters and not any(obj["spec"].get("paused") for obj in clusters)
    assert snapshot(server, world["crds"], "clusters-" + OTHER) == world["other_migrated"], "the other cluster changed"


def test_second_rollback_run_changes_nothing(world):
    server = world["server"]
    server.reset_requests()
    again = rollback(world)
    assert again.returncode == 0, output(again)[-3000:]
    assert "mc-1/clusters/%s: legacy -> legacy, skipped" % TARGET in output(again) and "already legacy" in output(again)
    writes = {verb: n for verb, n in server.request_counts()["by_verb"].items() if verb in WRITES}
    assert not writes, "a second run wrote to the cluster: %r" % writes


def test_migrate_fleet_migrates_the_rolled_back_cluster_again(world):
    server = world["server"]
    migrated = run_playbook("migrate_fleet.yml", world["inventory"], dict(world["extra"], private_capi_fleet_names=[TARGET]))
    assert migrated.returncode == 0, output(migrated)[-4000:]
    assert hostedcluster_states(server) == {TARGET: "migrated", OTHER: "migrated"}
    state = snapshot(server, world["crds"], HCP)
    assert not [key for key in state if key.split("/")[0].endswith("cluster.x-k8s.io")]
    assert {key.split("/", 1)[1] for key in state if key.split("/")[0].endswith(PRIVATE)} == \
        {key.split("/", 1)[1] for key in world["before"] if key.split("/")[0].endswith("cluster.x-k8s.io")}
