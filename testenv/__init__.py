"""What the tests, the demo and the benchmarks share (see docs/architecture.md): the real control plane (cluster/),
HyperShift management-cluster fixtures (hcp/), the fault proxy, the module runner, the proxy stack and the upstream
reference data (upstream/). Nothing here ships in the collection, and nothing here imports from tests/."""
import os

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS_ROOT = os.path.join(REPO_ROOT, ".collections")
