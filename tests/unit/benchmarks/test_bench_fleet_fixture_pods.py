"""Where the fleet bench's fixture Pods run (PRIVATE_CAPI_BENCH_FIXTURE_PODS): the switch, and the seed's Deployments
bound to KWOK's Node by name while the proxies stay on the real nodes."""
import pytest

from benchmarks import bench_fleet
from testenv.cluster.cluster import fake_node_name
from testenv.hcp import fleet


def test_every_pod_is_a_container_by_default_and_the_shared_topology_may_put_the_fixture_on_kwok(monkeypatch):
    monkeypatch.delenv("PRIVATE_CAPI_BENCH_FIXTURE_PODS", raising=False)
    assert bench_fleet.fixture_pods("shared") == bench_fleet.fixture_pods("sidecar") == "node"
    monkeypatch.setenv("PRIVATE_CAPI_BENCH_FIXTURE_PODS", "kwok")
    assert bench_fleet.fixture_pods("shared") == "kwok"


@pytest.mark.parametrize("value, topology, message", [("kwok", "sidecar", "needs the shared topology"),
                                                      ("fake", "shared", "must be kwok or node")])
def test_a_fixture_placement_that_cannot_be_is_refused(monkeypatch, value, topology, message):
    monkeypatch.setenv("PRIVATE_CAPI_BENCH_FIXTURE_PODS", value)
    with pytest.raises(SystemExit, match=message):
        bench_fleet.fixture_pods(topology)


def test_the_seed_binds_every_deployment_and_nothing_else_to_the_kwok_node_by_name(tmp_path):
    fleet.seed_fleet_dir(str(tmp_path / "kwok"), fleet.fleet_spec(2), bulk_on_fake_nodes=True)
    fleet.seed_fleet_dir(str(tmp_path / "node"), fleet.fleet_spec(2))
    on_kwok, on_node = fleet.seed_objects(str(tmp_path / "kwok")), fleet.seed_objects(str(tmp_path / "node"))
    deployments = [obj for obj in on_kwok if obj["kind"] == "Deployment" and obj["metadata"]["namespace"] != fleet.OPERATOR_NAMESPACE]
    assert len(deployments) == 2 * len(fleet.CAPI_DEPLOYMENTS)  # each HCP's
    # the operator stays on the real nodes: the migration puts a proxy sidecar in it
    assert [obj["spec"]["template"]["spec"].get("nodeName") for obj in on_kwok
            if obj["kind"] == "Deployment" and obj["metadata"]["namespace"] == fleet.OPERATOR_NAMESPACE] == [None]
    for deployment in deployments:
        pod = deployment["spec"]["template"]["spec"]
        # by name: nothing the shared proxy's Pods copy from the Deployment beside them (nodeSelector, tolerations,
        # node affinity), so those stay on the real nodes
        assert pod.pop("nodeName") == fake_node_name(0) == "kwok-node-0"
        assert not {"nodeSelector", "tolerations", "affinity"} & set(pod)
    assert on_kwok == on_node  # the same objects otherwise
