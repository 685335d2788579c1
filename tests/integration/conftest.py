"""Integration fixtures: the real control plane (testenv/cluster), see tests/integration/clusters.py:
real_cluster (one per session and worker), fresh_cluster and bare_cluster (one per module), hcp_crds."""
from tests.integration.clusters import bare_cluster, fresh_cluster, hcp_crds, real_cluster  # noqa: F401 pylint: disable=unused-import
