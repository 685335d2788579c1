"""What the conversion core leaves unset: no null and no [] where upstream writes nothing (issue 48).

v1beta1 writes null and [] for fields without omitempty (clusterNetwork cidrBlocks; a zero metav1.Time is null);
every v1beta2 slice is omitempty and every time omitzero, so upstream's up-conversion writes neither, and its round
trip, with JSON between the steps as kube-apiserver has it, gives them back unset. Held to upstream's own functions
by tests/integration/conversion/test_upstream_differential.py; these pin the cases without a server.
"""
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions import convert_object
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions_cluster import (
    CLUSTER_FREE_FORM_PATHS,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions_common import split_paths
from tests.unit import schema_check
from tests.unit.strategies import objects_from_crd
from tests.unit.translate.test_capi_versions_properties import (
    REF_VERSIONS,
    SETTINGS,
    V1BETA1_OVERRIDES,
    V1BETA2_OVERRIDES,
    _cases,
    _with_namespace,
)

PODS = {"cidrBlocks": ["10.128.0.0/14"]}


def _cluster(version, network):
    return {"apiVersion": "cluster.x-k8s.io/%s" % version, "kind": "Cluster",
            "metadata": {"name": "prod-01", "namespace": "clusters"}, "spec": {"clusterNetwork": network}}


def _round_trip(obj):
    there = "v1beta2" if obj["apiVersion"].endswith("/v1beta1") else "v1beta1"
    back = obj["apiVersion"].rsplit("/", 1)[1]
    return convert_object(convert_object(obj, there, ref_versions=REF_VERSIONS), back, ref_versions=REF_VERSIONS)


def _unset_paths(value, path="", unset=(None, [])):
    """Every path of value holding one of unset (list items by position)."""
    if isinstance(value, dict):
        items = [("%s.%s" % (path, key) if path else key, item) for key, item in value.items()]
    elif isinstance(value, list):
        items = [("%s[%d]" % (path, position), item) for position, item in enumerate(value)]
    else:
        return []
    return [found for inner, item in items
            for found in ([inner] if any(item == zero and type(item) is type(zero) for zero in unset)
                          else _unset_paths(item, inner, unset))]


@pytest.mark.parametrize("network, expected", [
    ({"pods": PODS}, {"pods": PODS}),
    ({"pods": PODS, "services": {"cidrBlocks": None}}, {"pods": PODS}),
    ({"pods": PODS, "services": {"cidrBlocks": []}}, {"pods": PODS}),
    ({"pods": {"cidrBlocks": None}, "services": PODS, "serviceDomain": "cluster.local"},
     {"services": PODS, "serviceDomain": "cluster.local"}),
    ({"pods": {"cidrBlocks": []}, "services": {"cidrBlocks": None}}, None),
], ids=["pods-only", "services-null", "services-empty", "pods-null", "both-unset"])
def test_cluster_network_round_trip_leaves_unset_blocks_out(network, expected):
    """v1beta1 -> v1beta2 -> v1beta1 of a Cluster's clusterNetwork: what upstream gives back, no services key, no
    null (the core's round trip wrote pods/services {cidrBlocks: null} or [] where upstream's has no key)."""
    hub = convert_object(_cluster("v1beta1", network), "v1beta2")
    assert _unset_paths(hub) == []
    spec = _round_trip(_cluster("v1beta1", network))["spec"]
    assert _unset_paths(spec) == []
    assert spec.get("clusterNetwork") == expected


def test_a_null_time_is_left_out_as_upstream_does():
    """A zero metav1.Time, which v1beta1 writes as null, is unset in v1beta2 (omitzero there); a struct that held it
    stays, as Go keeps a non-nil pointer."""
    deployment = {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
                  "metadata": {"name": "workers", "namespace": "clusters"},
                  "spec": {"clusterName": "prod-01", "rolloutAfter": None}}
    machine = {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
               "metadata": {"name": "worker-0", "namespace": "clusters"},
               "status": {"lastUpdated": None, "certificatesExpiryDate": None,
                          "deletion": {"nodeDrainStartTime": None}}}
    assert "rollout" not in convert_object(deployment, "v1beta2")["spec"]
    assert convert_object(machine, "v1beta2")["status"] == {"deletion": {}}


def test_a_variable_value_keeps_its_null():
    """A topology variable's value is free-form JSON: upstream keeps it as written, null and [] included."""
    topology = {"class": "quick-start", "version": "v1.33.0",
                "variables": [{"name": "a", "value": None}, {"name": "b", "value": {"list": [], "none": None}}]}
    cluster = _cluster("v1beta1", {"pods": PODS})
    cluster["spec"]["topology"] = topology
    assert convert_object(cluster, "v1beta2")["spec"]["topology"]["variables"] == topology["variables"]


@pytest.mark.parametrize("crd_dir, kind", _cases())
def test_no_round_trip_writes_a_null_for_a_key_the_input_lacks(crd_dir, kind):
    """Property: converting either way and back gives no null where the input held none, and the up-conversion
    writes no null or [] at all (outside a variable's free-form value)."""
    crd = schema_check.crd_by_kind(kind, crd_dir)
    spokes = objects_from_crd(crd, "v1beta1", V1BETA1_OVERRIDES).map(
        lambda obj: _with_namespace(obj, obj["metadata"]["namespace"]))

    @SETTINGS
    @given(st.one_of(spokes, objects_from_crd(crd, "v1beta2", V1BETA2_OVERRIDES)))
    def check(obj):
        assert set(_unset_paths(_round_trip(obj), unset=(None,))) <= set(_unset_paths(obj, unset=(None,)))
        if obj["apiVersion"].endswith("/v1beta1"):
            hub = convert_object(obj, "v1beta2", ref_versions=REF_VERSIONS)
            # a variable's value is free-form JSON, kept as written with whatever nulls and [] it holds inside
            assert [path for path in _unset_paths(hub) if not re.search(r"\.value($|\[|\.)", path)] == []

    check()


@pytest.mark.parametrize("kind", ["Cluster", "Machine", "MachineSet", "MachineDeployment", "MachineHealthCheck",
                                  "MachinePool", "MachineDrainRule"])
def test_free_form_table_matches_the_v1beta2_schema(kind):
    """The paths kept as written are exactly the v1beta2 schema's x-kubernetes-preserve-unknown-fields."""
    derived = []

    def walk(node, path):
        if node.get("x-kubernetes-preserve-unknown-fields"):
            derived.append(path)
            return
        for key, child in (node.get("properties") or {}).items():
            walk(child, "%s.%s" % (path, key) if path else key)
        if isinstance(node.get("items"), dict):
            walk(node["items"], path + "[]")

    walk(schema_check.version_schema(schema_check.crd_by_kind(kind), "v1beta2"), "")
    assert split_paths(derived) == (CLUSTER_FREE_FORM_PATHS if kind == "Cluster" else ())
