"""hcp_quiesce and capi_health against the real control plane (testenv/cluster): one HostedCluster of the fleet fixture.

The modules run in their own processes (module_runner, as Ansible's wrapper does); every assertion reads the
server back. kube-controller-manager's Deployment and ReplicaSet controllers scale the workloads, KWOK makes their
Pods Ready and removes the deleted ones: the modules' waits wait for real.
"""
import pytest

from testenv.cluster.admission import refuse
from testenv.hcp import fleet
from tests.integration.fleet.support import start_fleet
from testenv.module_runner import run_module

pytestmark = pytest.mark.slow

HC = "hc-01"
NS = "clusters-" + HC
HC_PATH = "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters/" + HC
CORE = "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/" % NS
DEPLOYMENTS = list(fleet.CAPI_DEPLOYMENTS) + ["karpenter-operator"]
REPLICAS = "hypershift.openshift.io/capi-migration-replicas"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server, _crds = start_fleet(tmp_path_factory.mktemp("quiesce"), fleet.fleet_spec(1, machines=2))
    yield server
    assert server.stop() == 0


def get(server, path):
    response = server.request("GET", path)
    assert response.status == 200, (path, response)
    return response.json()


def items(server, path):
    return get(server, path)["items"]


def args(server, **options):
    return dict({"kubeconfig": server.kubeconfig, "hcp_namespace": NS}, **options)


def workload_state(server):
    return {d["metadata"]["name"]: (d["spec"]["replicas"], (d["metadata"].get("annotations") or {}).get(REPLICAS))
            for d in items(server, "/apis/apps/v1/namespaces/%s/deployments" % NS)}


def test_check_mode_changes_nothing_and_shows_the_plan(server):
    before = [get(server, HC_PATH), items(server, CORE + "clusters"), workload_state(server)]
    server.reset_requests()
    result = run_module("hcp_quiesce", args(server, hostedcluster_name=HC, fence=True, pause_group="cluster.x-k8s.io",
                                            deployments=DEPLOYMENTS), check_mode=True, diff=True)
    assert not result.failed, result
    assert result["changed"] and result["diff"]["after"]["Deployment/cluster-api"]["spec"] == {"replicas": 0}
    assert [a["action"] for a in result["actions"]][:2] == ["fence", "pause"]
    writes = [e for e in server.request_counts()["entries"] if e["verb"] not in ("get", "list", "watch")]
    assert writes == [], writes
    assert [get(server, HC_PATH), items(server, CORE + "clusters"), workload_state(server)] == before


def test_quiesce_fences_pauses_stops_and_is_idempotent(server):
    result = run_module("hcp_quiesce", args(server, hostedcluster_name=HC, fence=True, pause_group="cluster.x-k8s.io",
                                            settle_seconds=1, deployments=DEPLOYMENTS, wait_timeout=30))
    assert not result.failed, result
    assert result["changed"] and result["core_version"] == "v1beta2"
    assert result["deployments"] == sorted(fleet.CAPI_DEPLOYMENTS)  # karpenter-operator is absent: ignored
    hc = get(server, HC_PATH)
    assert hc["spec"]["pausedUntil"] == "true"
    assert hc["metadata"]["annotations"]["hypershift.openshift.io/capi-migration-paused-until"] == "none"
    assert all(c["spec"]["paused"] is True for c in items(server, CORE + "clusters"))
    for plural in ("machinedeployments", "machinesets"):
        assert all(o["metadata"]["annotations"]["cluster.x-k8s.io/paused"] == "true" for o in items(server, CORE + plural))
    assert set(workload_state(server).values()) == {(0, "1")}
    assert not items(server, "/api/v1/namespaces/%s/pods" % NS)
    again = run_module("hcp_quiesce", args(server, hostedcluster_name=HC, fence=True, pause_group="cluster.x-k8s.io",
                                           deployments=DEPLOYMENTS))
    assert not again.failed and not again["changed"] and again["actions"] == [], again
    assert again["api_calls"]["by_method"].get("PATCH", 0) == 0


def test_health_of_the_paused_standard_objects_names_the_pause(server):
    kinds = [{"kind": kind, "resource": plural, "version": "v1beta2", "target_group": "cluster.x-k8s.io",
              "source_group": "cluster.x-k8s.io"} for kind, plural in (("Cluster", "clusters"), ("Machine", "machines"))]
    result = run_module("capi_health", args(server, kinds=kinds, source_counts={"Cluster": 1, "Machine": 3}))
    assert result.failed
    assert "is still paused" in result["msg"] and "Machine count 2 != 3 before migration" in result["msg"], result
    assert result["counts"] == {"Cluster": 1, "Machine": 2}


def test_resume_restores_everything_and_lifts_the_fence(server):
    result = run_module("hcp_quiesce", args(server, state="resumed", hostedcluster_name=HC, fence=True,
                                            pause_group="cluster.x-k8s.io", deployments=DEPLOYMENTS,
                                            remove_records=True, wait_timeout=30))
    assert not result.failed, result
    assert result["replicas"] == dict((name, 1) for name in fleet.CAPI_DEPLOYMENTS)
    hc = get(server, HC_PATH)
    assert "pausedUntil" not in hc["spec"]
    assert not [key for key in hc["metadata"].get("annotations") or {} if "capi-migration" in key]
    assert all(c["spec"]["paused"] is False for c in items(server, CORE + "clusters"))
    assert not [o for plural in ("machinedeployments", "machinesets") for o in items(server, CORE + plural)
                if "cluster.x-k8s.io/paused" in (o["metadata"].get("annotations") or {})]
    assert set(workload_state(server).values()) == {(1, None)}
    deployments = items(server, "/apis/apps/v1/namespaces/%s/deployments" % NS)
    assert all(d["status"].get("availableReplicas") == 1 for d in deployments)


def test_health_passes_on_the_healthy_resumed_objects(server):
    kinds = [{"kind": kind, "resource": plural, "version": "v1beta2", "target_group": "cluster.x-k8s.io"}
             for kind, plural in (("Cluster", "clusters"), ("Machine", "machines"))]
    result = run_module("capi_health", args(server, kinds=kinds, source_counts={"Cluster": {"found": 1}, "Machine": 2},
                                            deployments=list(fleet.CAPI_DEPLOYMENTS), stable_seconds=1))
    assert not result.failed, result
    assert result["failures"] == [] and result["rounds"] == 2 and not result["changed"]


def test_a_refused_write_fails_the_run_naming_the_object(server):
    """A ValidatingAdmissionPolicy refuses every write of a Deployment in the namespace (a PATCH is an UPDATE)."""
    probe = fleet.deployment(NS, "refusal-probe")
    with server.api_client() as api:
        policy = refuse(api, "quiesce-refuse-deployments", group="apps", resource="deployments",
                        operations=("CREATE", "UPDATE"), namespace=NS, message="deployments are frozen (test policy)",
                        probe=probe)
        try:
            result = run_module("hcp_quiesce", args(server, deployments=["cluster-api"], wait_timeout=0))
        finally:
            policy.remove()
    assert result.failed
    assert "patch Deployment %s/cluster-api" % NS in result["msg"] and "frozen (test policy)" in result["msg"], result
    assert result["status"] == 403
    assert workload_state(server)["cluster-api"] == (1, None)
