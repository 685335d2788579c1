"""Paths to the upstream reference data the tests, molecule, benchmarks and demo playbook read.

The data are unchanged copies of Cluster API and HyperShift files (provenance in capi/SOURCE.md and
hypershift/SOURCE.md, refresh steps in README.md), kept in the repository so that a clone stands alone.
Standard library only: importable by the tests, the benchmarks and the hack/ scripts alike.
"""
import os

UPSTREAM_ROOT = os.path.dirname(os.path.abspath(__file__))

CAPI_ROOT = os.path.join(UPSTREAM_ROOT, "capi")
CAPI_CRDS = os.path.join(CAPI_ROOT, "crds")  # kubernetes-sigs/cluster-api core/config/crd/bases (v1.14.0)
CAPI_EXAMPLES = os.path.join(CAPI_ROOT, "examples")  # v1beta1/ (v1.10.0) and v1beta2/ (main)
CAPI_EXAMPLES_V1BETA1 = os.path.join(CAPI_EXAMPLES, "v1beta1")
CAPI_EXAMPLES_V1BETA2 = os.path.join(CAPI_EXAMPLES, "v1beta2")
# clusterctl's inventory CRD (providers.clusterctl.cluster.x-k8s.io, v1.14.2): a group the pattern matches but never maps
CLUSTERCTL_CRD = os.path.join(CAPI_ROOT, "clusterctl", "clusterctl-api.yaml")

HYPERSHIFT_ROOT = os.path.join(UPSTREAM_ROOT, "hypershift")
HYPERSHIFT_CRDS = os.path.join(HYPERSHIFT_ROOT, "crds")  # openshift/hypershift cmd/install/assets/crds
HYPERSHIFT_CAPI_CRDS = os.path.join(HYPERSHIFT_CRDS, "cluster-api")  # CAPI core CRDs as HyperShift ships them
AWS_CRDS = os.path.join(HYPERSHIFT_CRDS, "cluster-api-provider-aws")
HOSTEDCLUSTER_CRD = os.path.join(HYPERSHIFT_CRDS, "hostedclusters-Hypershift-Default.crd.yaml")

__all__ = [
    "UPSTREAM_ROOT", "CAPI_ROOT", "CAPI_CRDS", "CAPI_EXAMPLES", "CAPI_EXAMPLES_V1BETA1", "CAPI_EXAMPLES_V1BETA2",
    "CLUSTERCTL_CRD",
    "HYPERSHIFT_ROOT", "HYPERSHIFT_CRDS", "HYPERSHIFT_CAPI_CRDS", "AWS_CRDS", "HOSTEDCLUSTER_CRD",
]
