"""hcp_migrate_window against the real control plane (testenv/cluster): the window of one HostedCluster of the fleet
fixture in one module run - stop, copy, start with a patch, signal - its check mode, its second run, its failure.

The module runs in its own process (module_runner, as Ansible's wrapper does); every assertion reads the server back.
kube-controller-manager's Deployment and ReplicaSet controllers scale the workloads and KWOK makes their Pods Ready,
so the waits (and the window measured) are real.
"""
import pytest

from testenv.cluster.admission import refuse
from testenv.hcp import fleet
from tests.integration.fleet.support import list_items, start_fleet
from testenv.module_runner import run_module

pytestmark = pytest.mark.slow

HC = "hc-01"
NS = "clusters-" + HC
STANDARD = "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/" % NS
PRIVATE = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/%s/" % NS
HCP_PATH = "/apis/hypershift.openshift.io/v1beta1/namespaces/%s/hostedcontrolplanes/%s" % (NS, HC)
REPLICAS = "hypershift.openshift.io/capi-migration-replicas"
SIGNAL = {"hypershift.openshift.io/private-capi-types": "true"}
PATCH_MARK = "example.com/window-test"
DEPLOYMENTS = list(fleet.CAPI_DEPLOYMENTS)
SIDECAR_IMAGE = "registry.example.com/capi-api-proxy:test"  # the node has it as the placeholder (start_fleet)
WINDOW = {}  # the window the first real run measured (the second run reads it back from Kubernetes)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # the private CRDs are installed with the standard ones (testenv/hcp/build.py crd_documents); hc-02 fails
    server, _crds = start_fleet(tmp_path_factory.mktemp("window"), fleet.fleet_spec(2, machines=2),
                                placeholders=[SIDECAR_IMAGE])
    yield server
    assert server.stop() == 0


def get(server, path):
    response = server.request("GET", path)
    assert response.status == 200, (path, response)
    return response.json()


def workloads(server, namespace=NS):
    """name -> (replicas, replica record, the test patch's pod template annotation)"""
    return {d["metadata"]["name"]: (d["spec"]["replicas"], (d["metadata"].get("annotations") or {}).get(REPLICAS),
                                    (d["spec"]["template"]["metadata"].get("annotations") or {}).get(PATCH_MARK))
            for d in list_items(server, "/apis/apps/v1/namespaces/%s/deployments" % namespace)}


def patches(server, namespace=NS):
    """What the api_proxy role's sidecar patches are (hcp/sidecar.py present_patch): a JSON merge patch replacing the
    containers list whole - the Deployment's containers as read plus a sidecar without the fields the API server
    defaults - and a pod template annotation here, to see the patch in place."""
    found = {d["metadata"]["name"]: d for d in list_items(server, "/apis/apps/v1/namespaces/%s/deployments" % namespace)}
    sidecar = {"name": "capi-api-proxy", "image": SIDECAR_IMAGE, "args": ["--listen=:8443"]}
    return [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
             "spec": {"template": {"metadata": {"annotations": {PATCH_MARK: "in"}}, "spec": {"containers": [
                 c for c in found[name]["spec"]["template"]["spec"]["containers"] if c["name"] != sidecar["name"]]
                 + [sidecar]}}}} for name in DEPLOYMENTS]


def args(server, **options):
    return dict({"kubeconfig": server.kubeconfig, "hcp_namespace": NS, "deployments": DEPLOYMENTS,
                 "deployment_patches": patches(server, options.get("hcp_namespace", NS)),
                 "pause_group": "cluster.hypershift.openshift.io", "scale_down_timeout": 60, "available_timeout": 60,
                 "strategy": "scale_down",
                 "hostedcluster_name": HC, "signal_annotations": SIGNAL}, **options)


def writes(server, since=0):
    return [entry for entry in server.request_counts(since)["entries"] if entry["verb"] not in ("get", "list", "watch")]


def pause_standard(server, namespace=NS):
    paused = run_module("hcp_quiesce", {"kubeconfig": server.kubeconfig, "hcp_namespace": namespace,
                                        "pause_group": "cluster.x-k8s.io"})
    assert not paused.failed, paused


def test_check_mode_writes_nothing_and_shows_the_plan(server):
    pause_standard(server)
    before = [workloads(server), get(server, HCP_PATH)["metadata"].get("annotations")]
    server.reset_requests()
    result = run_module("hcp_migrate_window", args(server, pause_group="", verify=False, require_paused=False),
                        check_mode=True, diff=True)
    assert not result.failed, result
    assert result["changed"] and result["stopped"] and result["phase"] == "signal"
    assert [mark["name"] for mark in result["marks"]] == ["scale_down", "copy", "resume", "signal"]
    assert {p["action"] for p in result["copied"]["plan"]} >= {"create"}
    assert result["scale_down"]["actions"] and result["signal"]["changed"]
    assert result["controllers_down_seconds"] is None  # nothing stopped, nothing measured
    # the copies are sent as server-side dry runs; nothing else is written
    assert all(entry["dry_run"] for entry in writes(server)), writes(server)
    assert list_items(server, PRIVATE + "machines") == []
    assert [workloads(server), get(server, HCP_PATH)["metadata"].get("annotations")] == before


def test_the_window_stops_copies_starts_with_the_patch_and_signals(server):
    machines = sorted(m["metadata"]["name"] for m in list_items(server, STANDARD + "machines"))
    result = run_module("hcp_migrate_window", args(server), diff=True)
    assert not result.failed, result.get("msg", result)
    assert result["changed"] and result["stopped"] and result["phase"] == "signal"
    marks = result["marks"]
    assert [mark["name"] for mark in marks] == ["scale_down", "copy", "resume", "signal"]
    assert [mark["at"] for mark in marks] == sorted(mark["at"] for mark in marks)
    # the window: from the first scale to 0 to all available again, the signal after it
    assert result["stopped_at"][:26] >= marks[0]["at"] and result["available_at"][:26] <= marks[3]["at"]
    assert 0 < result["waited_seconds"] <= result["controllers_down_seconds"], result
    assert result["scale_down"]["deployments"] == sorted(DEPLOYMENTS)
    assert result["copied"]["verify"]["failures"] == [] and result["copied"]["counts"]["Machine"]["created"] == len(machines)
    assert sorted(m["metadata"]["name"] for m in list_items(server, PRIVATE + "machines")) == machines
    # back at the record, with the patch (one rollout); the record stays for the finish step
    assert workloads(server) == dict((name, (1, "1", "in")) for name in DEPLOYMENTS)
    assert all(d["status"].get("availableReplicas") == 1
               for d in list_items(server, "/apis/apps/v1/namespaces/%s/deployments" % NS))
    assert all(c["spec"].get("paused") is not True for c in list_items(server, PRIVATE + "clusters"))
    assert get(server, HCP_PATH)["metadata"]["annotations"]["hypershift.openshift.io/private-capi-types"] == "true"
    assert [entry["after_header"] for entry in result["diff"]][:1] == ["scale_down"]
    WINDOW.update((key, result[key]) for key in ("stopped_at", "available_at", "controllers_down_seconds"))
    WINDOW.update(resume_at=marks[2]["at"])
    WINDOW.update(kinds=result["copied"]["kinds"], counts=result["copied"]["counts"])


def test_a_second_run_does_not_stop_the_controllers_again(server):
    since = (server.request_counts()["entries"] or [{"seq": 0}])[-1]["seq"]
    result = run_module("hcp_migrate_window", args(server))
    assert not result.failed, result.get("msg")
    assert not result["changed"] and not result["stopped"], result
    # the window the first run closed, as the Deployments' record and their pods' Ready times tell it (to the second),
    # all of it waiting for this run
    assert "scale_down" not in result and result["stopped_at"] == WINDOW["stopped_at"]
    # The pods' Ready times are whole seconds (cut down). They were set after the first run sent the scale back up (its
    # resume mark) and before its poll saw the Deployments available: the window read back ends inside that span. How
    # far before the poll depends on kube-controller-manager carrying the pods' Ready into the Deployments' status,
    # which on a loaded machine takes more than a second (CI of 42a6740: 2.02 s short of the measured window), so the
    # bound is the span, not a lag guessed in advance.
    assert WINDOW["resume_at"][:19] <= result["available_at"][:19], (result, WINDOW)
    assert result["available_at"] <= WINDOW["available_at"], (result, WINDOW)
    assert 0 <= WINDOW["controllers_down_seconds"] - result["controllers_down_seconds"], (result, WINDOW)
    assert result["waited_seconds"] == result["controllers_down_seconds"]
    # the copies were verified by the run that closed the window; the controllers have run on them since
    assert "verify" not in result["copied"] and not result["copied"]["changed"] and not result["signal"]["changed"]
    assert result["copied"]["counts"]["Machine"]["found"] == 2
    # the patches (recomputed from the Deployments as they are, as the api_proxy role does) judged in place by a
    # server-side dry run each: nothing written
    assert [entry for entry in writes(server, since) if not entry["dry_run"]] == []
    assert workloads(server) == dict((name, (1, "1", "in")) for name in DEPLOYMENTS)


def test_finish_deletes_the_sources_releases_and_moves_to_migrated(server):
    """After the window: hcp_migrate_finish records, deletes the standard objects (the real garbage collector leaves
    the copies alone), removes the replica records and moves the HostedCluster to migrated; a second run changes
    nothing."""
    lock = run_module("migration_state", {"kubeconfig": server.kubeconfig, "hostedcluster_name": HC, "hostedcluster_namespace": "clusters",
                                          "state": "in-progress", "holder": "window-test"})
    assert not lock.failed, lock
    private = sorted(m["metadata"]["uid"] for m in list_items(server, PRIVATE + "machines"))
    health = {"kinds": WINDOW["kinds"], "source_counts": WINDOW["counts"], "deployments": DEPLOYMENTS}
    finish = {"kubeconfig": server.kubeconfig, "hcp_namespace": NS, "hostedcluster_name": HC, "holder": "window-test",
              "source_counts": {"Machine": 2, "Cluster": 1}, "deployments": DEPLOYMENTS, "health": health}
    # the health checks gate the rest: a Cluster phase not accepted fails the run before any write
    since = (server.request_counts()["entries"] or [{"seq": 0}])[-1]["seq"]
    refused = run_module("hcp_migrate_finish", dict(finish, health=dict(health, cluster_phases=["Deleting"])))
    assert refused.failed and refused["phase"] == "health" and refused["step"] == "health", refused
    assert "phase is Provisioned, expected one of Deleting" in refused["msg"], refused["msg"]
    assert [mark["name"] for mark in refused["marks"]] == ["health"] and not refused["changed"]
    assert writes(server, since) == []
    result = run_module("hcp_migrate_finish", finish, diff=True)
    assert not result.failed, result.get("msg")
    assert result["changed"] and result["step"] == "state" and result["moved"]["state"] == "migrated", result
    assert [mark["name"] for mark in result["marks"]] == ["health", "finish"] and result["phase"] == "finish"
    assert result["health"]["failures"] == [] and result["health"]["counts"]["Machine"] == 2
    assert result["delete"]["counts"]["Machine"]["deleted"] == 2
    # the state read back after the move, as migration_state's query answers it (the record's end mark)
    query = run_module("migration_state", {"kubeconfig": server.kubeconfig, "hostedcluster_name": HC,
                                           "hostedcluster_namespace": "clusters", "state": "query"})
    assert [entry["state"] for entry in result["after"]["hostedclusters"]] == ["migrated"], result["after"]
    assert set(result["after"]) <= set(query) and set(result["after"]["hostedclusters"][0]) == set(query["hostedclusters"][0])
    assert query["read_at"] > result["after"]["read_at"] > result["marks"][-1]["at"]
    hostedcluster = get(server, "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters/" + HC)
    annotations = hostedcluster["metadata"]["annotations"]
    assert annotations["hypershift.openshift.io/capi-migration-counts"] == '{"Cluster": 1, "Machine": 2}'
    assert "hypershift.openshift.io/capi-migration-phase" not in annotations  # the release removes it with the fence
    assert list_items(server, STANDARD + "machines") == []
    assert sorted(m["metadata"]["uid"] for m in list_items(server, PRIVATE + "machines")) == private
    assert workloads(server) == dict((name, (1, None, "in")) for name in DEPLOYMENTS)
    again = run_module("hcp_migrate_finish", finish)
    assert not again.failed and not again["changed"], again


def test_a_failed_copy_names_its_phase_and_leaves_the_controllers_stopped(server):
    """A ValidatingAdmissionPolicy refuses the private Machines' creation in hc-02's namespace: the run stops in the
    copy, after the stop, with its marks; the caller (the migrate role's rescue) rolls back from there."""
    namespace = "clusters-hc-02"
    pause_standard(server, namespace)
    probe = {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Machine",
             "metadata": {"name": "refusal-probe", "namespace": namespace},
             "spec": {"clusterName": "hc-02", "bootstrap": {"dataSecretName": "x"},
                      "infrastructureRef": {"apiGroup": "infrastructure.cluster.hypershift.openshift.io",
                                            "kind": "KubevirtMachine", "name": "x"}}}
    with server.api_client() as api:
        policy = refuse(api, "window-refuse-machines", group="cluster.hypershift.openshift.io", resource="machines",
                        namespace=namespace, message="machines are frozen (test policy)", probe=probe)
        try:
            result = run_module("hcp_migrate_window", args(server, hcp_namespace=namespace, hostedcluster_name="hc-02"))
        finally:
            policy.remove()
    assert result.failed
    assert result["phase"] == "copy" and "frozen (test policy)" in result["msg"], result
    assert [mark["name"] for mark in result["marks"]] == ["scale_down", "copy"]
    assert result["stopped"] and result["scale_down"]["actions"] and result["changed"], result
    assert "resume" not in result and result["copied"]["counts"]["Machine"]["created"] == 0
    assert dict((name, state[:2]) for name, state in workloads(server, namespace).items()) == dict(
        (name, (0, "1")) for name in DEPLOYMENTS)
