"""Integration fixtures: a local Kubernetes API server (tests/kubeapi) per test module."""
import os

import pytest

from testenv.upstream import CAPI_CRDS, CAPI_EXAMPLES_V1BETA2 as _V1BETA2
from tests.kubeapi.testing import start_server

# the concrete (non-template) upstream examples; templates carry ${VARS} a real server rejects too
CAPI_EXAMPLES_V1BETA2 = [os.path.join(_V1BETA2, name) for name in (
    "examples__simple-cluster.yaml", "examples__machine-pool.yaml", "examples__simple-cluster-without-kcp.yaml")]


@pytest.fixture(scope="module")
def kubeapi(tmp_path_factory):
    """A fresh server (no seeds) shared by the tests of one module."""
    server = start_server(tmp_path_factory.mktemp("kubeapi"))
    yield server
    code = server.stop()
    assert code == 0, "kubeapi did not stop cleanly (exit %s):\n%s" % (code, server.log()[-3000:])


@pytest.fixture(scope="module")
def kubeapi_capi(tmp_path_factory):
    """A server seeded with the real CAPI CRDs (cluster.x-k8s.io and friends)."""
    server = start_server(tmp_path_factory.mktemp("kubeapi-capi"), seeds=[CAPI_CRDS])
    yield server
    code = server.stop()
    assert code == 0, "kubeapi did not stop cleanly (exit %s):\n%s" % (code, server.log()[-3000:])


# the real control plane (testenv/cluster): real_cluster (session), fresh_cluster and bare_cluster (module)
from tests.integration.clusters import bare_cluster, fresh_cluster, hcp_crds, real_cluster  # noqa: E402,F401 pylint: disable=wrong-import-position,unused-import
