"""Property tests: schema-generated CAPI objects survive v1beta2->v1beta1->v1beta2 and v1beta1->v1beta2->v1beta1.

Objects come from the real CRDs (CAPI v1.14 in capi/crds, HyperShift's copy in
hypershift/crds/cluster-api). Normalised before comparing -- and only these, the cases upstream's own
fuzz tests exclude (core/webhooks/conversion/conversion_test.go):
* references: namespace = the object's namespace, no uid/resourceVersion/fieldPath
  (spokeObjectReference, fillMachineSpec); nodeRef carries only name + v1/Node (spokeMachineStatus);
  referenced group/kind from a fixed table with known versions (testGVKs);
* v1beta1 durations are whole seconds in Go's canonical spelling (spokeMachineSpec);
* v1beta1 fields upstream drops on purpose: topology rolloutAfter, variables definitionFrom,
  MachineDeployment progressDeadlineSeconds / revisionHistoryLimit;
* Go zero values ("" / 0 / false / {} / []) of optional v1beta1 struct fields equal absence (Go
  cannot tell them apart, so pointer intent and omitempty fields come back unset), and so does [] of a required
  one (clusterNetwork cidrBlocks: v1beta2 writes no []);
* v1beta2: empty status.deprecated(.v1beta1) structs (hubXStatus "drop empty structs"), Cluster
  status.failureDomains order (sorted by name, as the Cluster controller writes them), MachineSet
  spec.template.spec.minReadySeconds 0 (v1beta1 int32 0 reads back as unset), [] and optional {} (every v1beta2
  slice is omitempty: up-conversion writes no [], and a struct that held only [] is left as {}, as upstream's answer
  has it; Go reads both as unset).
"""
import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions import (
    CONVERSION_DATA_ANNOTATION,
    convert_object,
)
from tests.unit import schema_check
from tests.unit.strategies import DNS_LABEL, GO_DURATIONS, objects_from_crd
from tests.unit.translate.zeros import without_added_zeros

KINDS = ("Cluster", "Machine", "MachineSet", "MachineDeployment", "MachinePool", "MachineHealthCheck", "MachineDrainRule")
CRD_DIRS = {"capi-v1.14": schema_check.CAPI_CRD_DIR, "hypershift": schema_check.HYPERSHIFT_CAPI_CRD_DIR}
NAMESPACE_PLACEHOLDER = "__object_namespace__"

# (group, kind, version) a reference may point at; the table plays upstream's testGVKs.
REFERENCED = (
    ("infrastructure.cluster.x-k8s.io", "AWSMachine", "v1beta2"),
    ("infrastructure.cluster.x-k8s.io", "AWSCluster", "v1beta2"),
    ("bootstrap.cluster.x-k8s.io", "KubeadmConfig", "v1beta1"),
    ("hypershift.openshift.io", "HostedControlPlane", "v1beta1"),
    ("infrastructure.cluster.hypershift.openshift.io", "KubevirtMachine", "v1alpha1"),
)
REF_VERSIONS = {"%s/%s" % (group, kind): version for group, kind, version in REFERENCED}
_TARGET = st.sampled_from(REFERENCED)
V1BETA2_REF = _TARGET.flatmap(
    lambda target: st.fixed_dictionaries({"apiGroup": st.just(target[0]), "kind": st.just(target[1]), "name": DNS_LABEL})
)
V1BETA1_REF = _TARGET.flatmap(
    lambda target: st.fixed_dictionaries({
        "apiVersion": st.just("%s/%s" % (target[0], target[2])), "kind": st.just(target[1]), "name": DNS_LABEL,
        "namespace": st.just(NAMESPACE_PLACEHOLDER),
    })
)
V1BETA1_TEMPLATE_REF = st.fixed_dictionaries({
    "apiVersion": st.just("infrastructure.cluster.x-k8s.io/v1beta2"), "kind": st.just("AWSRemediationTemplate"),
    "name": DNS_LABEL, "namespace": st.just(NAMESPACE_PLACEHOLDER),
})
V1BETA2_OVERRIDES = {
    "spec.infrastructureRef": V1BETA2_REF,
    "spec.controlPlaneRef": V1BETA2_REF,
    "*bootstrap.configRef": V1BETA2_REF,
    "spec.template.spec.infrastructureRef": V1BETA2_REF,
}
V1BETA1_OVERRIDES = {
    "spec.infrastructureRef": V1BETA1_REF,
    "spec.controlPlaneRef": V1BETA1_REF,
    "*bootstrap.configRef": V1BETA1_REF,
    "spec.template.spec.infrastructureRef": V1BETA1_REF,
    "*remediationTemplate": V1BETA1_TEMPLATE_REF,
    "status.nodeRef": st.fixed_dictionaries({"apiVersion": st.just("v1"), "kind": st.just("Node"), "name": DNS_LABEL}),
    "*Timeout": GO_DURATIONS,
    "*[].timeout": GO_DURATIONS,
}
SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


def _with_namespace(value, namespace):
    if isinstance(value, dict):
        return {key: (namespace if item == NAMESPACE_PLACEHOLDER else _with_namespace(item, namespace))
                for key, item in value.items()}
    if isinstance(value, list):
        return [_with_namespace(item, namespace) for item in value]
    return value


def _is_zero(value):
    return value in ("", 0, {}, []) and value is not True


def _without_go_zero_values(value, schema):
    """Drop optional struct fields holding a Go zero value (recursively), as Go's omitempty would."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return value
    if isinstance(value, dict):
        properties = schema.get("properties")
        if properties is None:
            additional = schema.get("additionalProperties")
            if isinstance(additional, dict):
                return {key: _without_go_zero_values(item, additional) for key, item in value.items()}
            return value
        required = set(schema.get("required") or ())
        result = {}
        for key, item in value.items():
            item = _without_go_zero_values(item, properties.get(key, {}))
            if key in properties and key not in required and (_is_zero(item) or item is False):
                continue
            result[key] = item
        return result
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_without_go_zero_values(item, schema["items"]) for item in value]
    return value


def _without_empty(value, schema):
    """Drop [] and optional {} (recursively, outside free-form JSON), as Go reads a v1beta2 object: every v1beta2 slice
    is omitempty, so upstream's answer never holds [], and JSON between the steps of a round trip reads a struct
    left empty by one as unset."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return value
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        required = set(schema.get("required") or ())
        result = {}
        for key, item in value.items():
            child = properties.get(key, additional if isinstance(additional, dict) else {})
            item = _without_empty(item, child)
            if child.get("x-kubernetes-preserve-unknown-fields") or (item != [] and (item != {} or key in required)):
                result[key] = item
        return result
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_without_empty(item, schema["items"]) for item in value]
    return value


def _without_upstream_dropped_v1beta1_fields(obj):
    spec = obj.get("spec", {})
    for key in ("progressDeadlineSeconds", "revisionHistoryLimit"):
        if obj["kind"] == "MachineDeployment":
            spec.pop(key, None)
    topology = spec.get("topology")
    if isinstance(topology, dict) and obj["kind"] == "Cluster":
        topology.pop("rolloutAfter", None)
        holders = [topology] + [topology.get("controlPlane", {}).get("variables", {})]
        for group in ("machineDeployments", "machinePools"):
            holders += [item.get("variables", {}) for item in topology.get("workers", {}).get(group, [])]
        for holder in holders:
            for variable in holder.get("variables", []) + holder.get("overrides", []):
                variable.pop("definitionFrom", None)
    return obj


def _without_empty_deprecated(obj):
    status = obj.get("status")
    if isinstance(status, dict) and isinstance(status.get("failureDomains"), list):
        # v1beta1 keeps them in a map; the Cluster controller always writes them sorted (hubClusterStatus)
        status["failureDomains"] = sorted(status["failureDomains"], key=lambda domain: domain["name"])
    if isinstance(status, dict) and isinstance(status.get("deprecated"), dict):
        if status["deprecated"].get("v1beta1") == {}:
            del status["deprecated"]["v1beta1"]
        if status["deprecated"] == {}:
            del status["deprecated"]
        if status == {}:
            del obj["status"]
    if obj["kind"] == "MachineSet":
        template_spec = obj.get("spec", {}).get("template", {}).get("spec", {})
        if template_spec.get("minReadySeconds") == 0:
            del template_spec["minReadySeconds"]
    return obj


def _cases():
    return [pytest.param(crd_dir, kind, id="%s-%s" % (label, kind)) for label, crd_dir in CRD_DIRS.items() for kind in KINDS]


@pytest.mark.parametrize("crd_dir, kind", _cases())
def test_v1beta2_round_trip_through_v1beta1_is_identity(crd_dir, kind):
    crd = schema_check.crd_by_kind(kind, crd_dir)
    v1beta1_schema = schema_check.version_schema(crd, "v1beta1")
    v1beta2_schema = schema_check.version_schema(crd, "v1beta2")

    @SETTINGS
    @given(objects_from_crd(crd, "v1beta2", V1BETA2_OVERRIDES))
    def check(hub):
        spoke = convert_object(hub, "v1beta1", ref_versions=REF_VERSIONS)
        assert schema_check.schema_errors(spoke, v1beta1_schema) == []
        assert schema_check.pruned_fields(spoke, v1beta1_schema) == []
        back = convert_object(spoke, "v1beta2", ref_versions=REF_VERSIONS)
        assert CONVERSION_DATA_ANNOTATION not in back["metadata"].get("annotations", {})
        expected = _without_empty_deprecated(_without_empty(hub, v1beta2_schema))
        assert _without_empty_deprecated(without_added_zeros(back, expected)) == expected

    check()


@pytest.mark.parametrize("crd_dir, kind", _cases())
def test_v1beta1_round_trip_through_v1beta2_is_identity(crd_dir, kind):
    crd = schema_check.crd_by_kind(kind, crd_dir)
    v1beta1_schema = schema_check.version_schema(crd, "v1beta1")
    v1beta2_schema = schema_check.version_schema(crd, "v1beta2")
    spokes = objects_from_crd(crd, "v1beta1", V1BETA1_OVERRIDES).map(
        lambda obj: _with_namespace(obj, obj["metadata"]["namespace"])
    )

    @SETTINGS
    @given(spokes)
    def check(spoke):
        hub = convert_object(spoke, "v1beta2", ref_versions=REF_VERSIONS)
        back = convert_object(hub, "v1beta1", ref_versions=REF_VERSIONS)
        # The hub view is stable: converting the result up again gives the same v1beta2 object.
        assert _without_empty(convert_object(back, "v1beta2", ref_versions=REF_VERSIONS), v1beta2_schema) == (
            _without_empty(hub, v1beta2_schema))
        expected = _without_go_zero_values(
            _without_empty(_without_upstream_dropped_v1beta1_fields(spoke), v1beta1_schema), v1beta1_schema)
        back = without_added_zeros(back, spoke)
        assert _without_go_zero_values(_without_empty(back, v1beta1_schema), v1beta1_schema) == expected

    check()
