"""Test environments and the upstream reference data the tests use (see upstream/README.md and cluster/README.md)."""
