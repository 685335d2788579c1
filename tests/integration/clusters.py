"""Fixtures of the real control plane (testenv/cluster): etcd, kube-apiserver, kube-controller-manager (garbage
collector, namespace, deployment, replicaset, service-account ... controllers), kube-scheduler, and KWOK with one Node
(the API's tests: no Pod of theirs needs to run) or a real node (`bare_cluster`: what the collection deploys runs).

- `real_cluster` (session): one per pytest worker, with HyperShift's CRDs for HCPs (HostedCluster, NodePool,
  HostedControlPlane, core CAPI, the providers) and their private twins installed before the controllers start.
  Tests that share it isolate themselves by namespace.
- `fresh_cluster` (module): the same, started for one test module, for tests that change cluster-scoped state
  (CRDs, admission policies) or count every request.
- `bare_cluster` (module): no CRDs at all, two real nodes (testenv.cluster.node) with the collection's image: the
  conversion shim's and the exporter's tests run their Pods there (the shim's two replicas one on each).

The binaries are built on first use (testenv/cluster/build.py) and cached outside the checkout.
"""
import pytest

from testenv.cluster.testing import start_cluster
from testenv.hcp import build


def _started(tmp_path_factory, name, crds, pods="kwok-only", nodes=1):
    return start_cluster(tmp_path_factory.mktemp(name), crds=crds, pods=pods, nodes=nodes)


def _stopped(server):
    code = server.stop()
    assert code == 0, "the control plane did not stop cleanly (a component had died):\n%s" % server.log()


@pytest.fixture(scope="session")
def hcp_crds():
    """The CRDs of the HCP fixtures: HyperShift's standard ones and the private twins crd_render makes of them."""
    return build.crd_documents()


@pytest.fixture(scope="session")
def real_cluster(tmp_path_factory, hcp_crds):
    server = _started(tmp_path_factory, "real-cluster", hcp_crds)
    yield server
    _stopped(server)


@pytest.fixture(scope="module")
def fresh_cluster(tmp_path_factory, hcp_crds):
    server = _started(tmp_path_factory, "fresh-cluster", hcp_crds)
    yield server
    _stopped(server)


@pytest.fixture(scope="module")
def bare_cluster(tmp_path_factory):
    server = _started(tmp_path_factory, "bare-cluster", (), pods="node", nodes=2)
    yield server
    _stopped(server)
