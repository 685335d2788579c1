"""tests/kubeapi/schema.py against the real CAPI and HyperShift CRDs and the v1beta2 examples."""
import copy
import time

import pytest

from tests.kubeapi.fielderrors import go_value
from tests.kubeapi.schema import StructuralSchema, go_float
from tests.unit.kubeapi.crd_data import (capi_schema, crd_files, crds_in, example, example_objects,
                                         hypershift_schema)


def machine_schema():
    return StructuralSchema(capi_schema("Machine"))


def machine():
    return copy.deepcopy(example("Machine", "controlplane-0"))


def causes_after_admission(schema, obj):
    """What the server validates: the pruned and defaulted object."""
    return schema.validate(schema.apply_defaults(schema.prune(obj)))


@pytest.mark.parametrize("path", crd_files(), ids=lambda p: p.rsplit("/", 2)[-1])
def test_every_crd_version_compiles_and_requires_its_root_fields(path):
    crds = crds_in(path)
    assert crds, "no CustomResourceDefinition in %s" % path
    for crd in crds:
        for version in crd["spec"]["versions"]:
            source = version["schema"]["openAPIV3Schema"]
            schema = StructuralSchema(source)
            required = source.get("required") or []
            causes = schema.validate({})
            assert [c["field"] for c in causes if c["reason"] == "FieldValueRequired"] == required, (
                crd["metadata"]["name"], version["name"])
            assert schema.typeinfo.root.kind == "object"


def test_examples_cover_the_core_kinds():
    kinds = {obj["kind"] for _file, obj in example_objects()}
    assert {"Cluster", "Machine", "MachineDeployment", "MachineHealthCheck", "ClusterClass",
            "MachinePool"} <= kinds


@pytest.mark.parametrize("entry", example_objects(),
                         ids=lambda e: "%s:%s/%s" % (e[0], e[1]["kind"], e[1]["metadata"]["name"]))
def test_example_objects_are_valid_and_fully_declared(entry):
    _file, obj = entry
    schema = StructuralSchema(capi_schema(obj["kind"]))
    assert schema.unknown_fields(obj) == []
    assert schema.prune(obj) == obj
    assert causes_after_admission(schema, obj) == []


# ------------------------------------------------------------------------------------ mutations

def single_cause(schema, obj):
    causes = causes_after_admission(schema, obj)
    assert len(causes) == 1, causes
    return causes[0]


def test_bad_enum_names_the_supported_values():
    obj = machine()
    obj["spec"]["taints"] = [{"key": "k", "effect": "Sometimes", "propagation": "Always"}]
    assert single_cause(machine_schema(), obj) == {
        "reason": "FieldValueNotSupported", "field": "spec.taints[0].effect",
        "message": 'Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", '
                   '"NoExecute"'}


def test_wrong_type_reports_the_found_type():
    obj = machine()
    obj["spec"]["minReadySeconds"] = "ten"
    assert single_cause(machine_schema(), obj) == {
        "reason": "FieldValueTypeInvalid", "field": "spec.minReadySeconds",
        "message": 'Invalid value: "string": spec.minReadySeconds in body must be of type integer: "string"'}
    obj["spec"]["minReadySeconds"] = 5.0  # an integral float is an integer, as for Go's decoder
    assert causes_after_admission(machine_schema(), obj) == []


def test_minimum_and_missing_required_field():
    obj = machine()
    obj["spec"]["minReadySeconds"] = -1
    del obj["spec"]["clusterName"]
    assert causes_after_admission(machine_schema(), obj) == [
        {"reason": "FieldValueInvalid", "field": "spec.minReadySeconds",
         "message": "Invalid value: -1: spec.minReadySeconds in body should be greater than or equal to 0"},
        {"reason": "FieldValueRequired", "field": "spec.clusterName", "message": "Required value"},
    ]


def test_too_long_string_uses_the_bytes_wording():
    obj = machine()
    obj["spec"]["clusterName"] = "a" * 64
    assert single_cause(machine_schema(), obj) == {
        "reason": "FieldValueTooLong", "field": "spec.clusterName",
        "message": "Too long: may not be more than 63 bytes"}


def test_pattern_and_min_properties():
    obj = machine()
    obj["spec"]["infrastructureRef"]["name"] = "Not_A_Name"
    obj["spec"]["deletion"] = {}
    causes = causes_after_admission(machine_schema(), obj)
    assert causes[0] == {"reason": "FieldValueInvalid", "field": "spec.deletion",
                         "message": "Invalid value: 0: spec.deletion in body should have at least 1 properties"}
    assert causes[1]["field"] == "spec.infrastructureRef.name"
    assert causes[1]["message"].startswith(
        'Invalid value: "Not_A_Name": spec.infrastructureRef.name in body should match \'^[a-z0-9]')


def test_list_map_duplicates_and_max_items():
    obj = machine()
    taint = {"key": "k", "effect": "NoSchedule", "propagation": "Always"}
    obj["spec"]["taints"] = [taint, dict(taint, value="other")]
    obj["spec"]["readinessGates"] = [{"conditionType": "C%d" % i} for i in range(33)]
    assert causes_after_admission(machine_schema(), obj) == [
        {"reason": "FieldValueTooMany", "field": "spec.readinessGates",
         "message": "Too many: 33: must have at most 32 items"},
        {"reason": "FieldValueDuplicate", "field": "spec.taints[1]",
         "message": 'Duplicate value: map[string]interface {}{"effect":"NoSchedule", "key":"k"}'},
    ]


def test_int_or_string_and_date_time_format():
    schema = StructuralSchema(capi_schema("MachineDeployment"))
    obj = copy.deepcopy(example("MachineDeployment"))
    obj["spec"]["rollout"] = {"after": "2025-01-02T03:04:05Z",
                              "strategy": {"type": "RollingUpdate",
                                           "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}}
    assert causes_after_admission(schema, obj) == []
    obj["spec"]["rollout"]["after"] = "yesterday"
    obj["spec"]["rollout"]["strategy"]["rollingUpdate"]["maxSurge"] = True
    causes = causes_after_admission(schema, obj)
    assert {"reason": "FieldValueTypeInvalid", "field": "spec.rollout.after",
            "message": 'Invalid value: "yesterday": spec.rollout.after in body must be of type date-time: '
                       '"yesterday"'} in causes
    assert {"reason": "FieldValueTypeInvalid", "field": "spec.rollout.strategy.rollingUpdate.maxSurge",
            "message": 'Invalid value: "boolean": spec.rollout.strategy.rollingUpdate.maxSurge in body must be '
                       'of type integer,string: "boolean"'} in causes


# ------------------------------------------------------------------------------ unknown fields

def test_unknown_fields_in_the_servers_order_and_pruned():
    obj = machine()
    obj["zzz"] = 1
    obj["metadata"]["bogus"] = "x"
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u",
                                           "color": "red"}]
    obj["spec"]["foo"] = {"bar": 1}
    obj["spec"]["bootstrap"]["configRef"]["extra"] = True
    obj["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule", "propagation": "Always", "bogus": 1}]
    original = copy.deepcopy(obj)
    schema = machine_schema()
    assert schema.unknown_fields(obj) == [
        "metadata.bogus", "metadata.ownerReferences[0].color",
        "spec.bootstrap.configRef.extra", "spec.foo", "spec.taints[0].bogus", "zzz"]
    pruned = schema.prune(obj)
    assert obj == original, "prune must not mutate its input"
    expected = machine()
    expected["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u"}]
    expected["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule", "propagation": "Always"}]
    assert pruned == expected


def test_preserve_unknown_fields_subtree_is_kept():
    schema = StructuralSchema(capi_schema("Cluster"))
    cluster = copy.deepcopy(example("Cluster", "my-cluster"))
    cluster["spec"]["topology"] = {
        "classRef": {"name": "quick-start"}, "version": "v1.33.0",
        "variables": [{"name": "anything", "value": {"free": {"form": [1, "two", {"three": None}]}}}]}
    assert schema.unknown_fields(cluster) == []
    assert schema.prune(cluster) == cluster
    cluster["spec"]["topology"]["variables"][0]["undeclared"] = 1
    assert schema.unknown_fields(cluster) == ["spec.topology.variables[0].undeclared"]


INLINE = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "x-kubernetes-preserve-unknown-fields": True,
                             "properties": {"spec": {"type": "object",
                                                     "properties": {"size": {"type": "integer"}}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
                "nothing": {"type": "string"},
                "maybe": {"type": "string", "nullable": True},
                "mode": {"type": "string", "default": "auto"},
                "sized": {"type": "object", "default": {"size": 1, "junk": 2},
                          "properties": {"size": {"type": "integer"}, "unit": {"type": "string", "default": "Gi"}}},
                "ports": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}},
                "choice": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                           "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
                "odd": {"type": "integer", "not": {"multipleOf": 2}},
            },
        },
    },
}


def test_embedded_resource_metadata_and_nulls():
    schema = StructuralSchema(INLINE)
    obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"},
           "spec": {"template": {"metadata": {"name": "t", "colour": "blue"}, "free": 1, "spec": {"size": 2,
                                                                                                  "bad": 0}},
                    "nothing": None, "maybe": None, "mode": None}}
    assert schema.unknown_fields(obj) == ["spec.template.spec.bad", "spec.template.metadata.colour"]
    pruned = schema.prune(obj)
    assert pruned["spec"]["template"] == {"metadata": {"name": "t"}, "free": 1, "spec": {"size": 2}}
    assert "nothing" not in pruned["spec"] and pruned["spec"]["maybe"] is None and "mode" in pruned["spec"]
    defaulted = schema.apply_defaults(pruned)
    assert defaulted["spec"]["mode"] == "auto"
    assert defaulted["spec"]["sized"] == {"size": 1, "unit": "Gi"}, "defaults are pruned, then defaulted"
    assert schema.validate(defaulted) == [
        {"reason": "FieldValueRequired", "field": "spec.template.apiVersion", "message": "Required value"},
        {"reason": "FieldValueRequired", "field": "spec.template.kind", "message": "Required value"}]


def test_additional_properties_sets_and_composition_messages():
    schema = StructuralSchema(INLINE)
    obj = {"spec": {"labels": {"ok": "abc", "long": "abcd"}, "ports": [80, 443, 80],
                    "choice": {"a": "x", "b": "y"}, "odd": 4}}
    assert schema.validate(obj) == [
        {"reason": "FieldValueTooLong", "field": "spec.labels.long", "message": "Too long: may not be more than 3 bytes"},
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "": "spec.choice" must validate one and only one '
                                                   'schema (oneOf). Found 2 valid alternatives'},
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "": "spec.odd" must not validate the schema (not)'},
        {"reason": "FieldValueDuplicate", "field": "spec.ports[2]", "message": "Duplicate value: 80"},
    ]


def test_items_of_a_preserve_unknown_array_keep_undeclared_keys():
    schema = StructuralSchema({"type": "object", "properties": {"list": {
        "type": "array", "x-kubernetes-preserve-unknown-fields": True,
        "items": {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}}}}})
    obj = {"list": [{"free": 1, "a": {"b": "c", "z": 2}}]}
    assert schema.prune(obj) == {"list": [{"free": 1, "a": {"b": "c"}}]}
    assert schema.unknown_fields(obj) == ["list[0].a.z"]


def test_defaults_of_a_real_nodepool_schema():
    schema = StructuralSchema(hypershift_schema("nodepools-Default.crd.yaml", "NodePool", "v1beta1"))
    obj = {"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "NodePool", "metadata": {"name": "np"},
           "spec": {"clusterName": "c", "management": {"upgradeType": "Replace"},
                    "platform": {"type": "KubeVirt", "kubevirt": {}}, "release": {"image": "r"}}}
    original = copy.deepcopy(obj)
    out = schema.apply_defaults(obj)
    assert obj == original
    assert out["spec"]["arch"] == "amd64"
    assert out["spec"]["management"]["replace"] == {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
                                                    "strategy": "RollingUpdate"}
    assert out["spec"]["platform"]["kubevirt"]["compute"] == {"cores": 2, "memory": "8Gi", "qosClass": "Burstable"}
    obj["spec"]["arch"] = "arm64"
    assert schema.apply_defaults(obj)["spec"]["arch"] == "arm64"


def test_go_value_rendering():
    assert [go_float(v) for v in (1.0, 0.5, 1e6, 123456.0, 1.5e-5)] == ["1", "0.5", "1e+06", "123456", "1.5e-05"]
    assert go_value({"b": [1, "x"], "a": None}) == 'map[string]interface {}{"a":interface {}(nil), "b":[]interface {}{1, "x"}}'
    assert go_value("q\"") == '"q\\""'


def test_machine_validation_and_pruning_is_well_under_a_millisecond():
    schema = machine_schema()
    obj = machine()
    schema.validate(schema.prune(obj))
    rounds = 300
    start = time.perf_counter()
    for _round in range(rounds):
        schema.validate(schema.apply_defaults(schema.prune(obj)))
    per_object = (time.perf_counter() - start) / rounds
    assert per_object < 0.001, "%.0f us per Machine" % (per_object * 1e6)
