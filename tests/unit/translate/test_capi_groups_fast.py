"""translate_object_in_place is translate_object without the copy: proven equal on every input family.

For each object (every document in testenv/upstream/capi/examples, the fixtures of test_capi_groups.py,
objects generated from every CRD in testenv/upstream/capi/crds and .../hypershift/crds, and the
adversarial generator of test_capi_groups_properties.py), in both directions, alone and wrapped
the way the proxy meets it (a List, a List without item apiVersion/kind, a WatchEvent, a Table
row), the in-place result on a fresh JSON tree must equal translate_object's result, key order
included (the proxy re-encodes it), or both must fail with the same message.
"""
import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    AGENT_EXTRA_GROUPS,
    DEFAULT_GROUP_MAP,
    TO_PRIVATE,
    TO_STANDARD,
    CapiTranslationError,
    GroupMap,
    translate_object,
    translate_object_in_place,
)
from tests.unit.strategies import objects_from_crd
from tests.unit.translate.test_capi_groups import EXAMPLE_OBJECTS, SHAPE_TABLE, adversarial_machine
from tests.unit.translate.test_capi_groups_properties import CRD_VERSIONS, REF_OVERRIDES, generated_objects

AGENT_MAP = GroupMap(AGENT_EXTRA_GROUPS)
HYPOTHESIS = dict(deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


def json_tree(obj):
    """A fresh tree as the proxy owns it after parsing (YAML timestamps become strings)."""
    return json.loads(json.dumps(obj, default=str))


def outcome(function, obj, direction, group_map):
    try:
        return "ok", json.dumps(function(obj, direction, group_map))  # text: values and key order
    except CapiTranslationError as exc:
        return "error", str(exc)


def assert_same(obj, direction, group_map=DEFAULT_GROUP_MAP):
    """The in-place result on a fresh tree equals translate_object's, or both fail alike; returns the result."""
    expected = outcome(translate_object, json_tree(obj), direction, group_map)
    owned = json_tree(obj)
    actual = outcome(translate_object_in_place, owned, direction, group_map)
    assert actual == expected
    if expected[0] == "ok" and isinstance(obj, dict):
        assert json.dumps(owned) == expected[1]  # translated where it lies: the caller's tree is the result
    return json.loads(expected[1]) if expected[0] == "ok" else None


def wrappings(obj):
    """obj as the proxy meets it: alone, a List item (with and without apiVersion/kind), an event, a Table row."""
    yield obj
    if not isinstance(obj, dict):
        return
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) else "Thing"
    api_version = obj.get("apiVersion") if isinstance(obj.get("apiVersion"), str) else "v1"
    bare = {key: value for key, value in obj.items() if key not in ("apiVersion", "kind")}
    yield {"apiVersion": api_version, "kind": kind + "List", "metadata": {"resourceVersion": "7"}, "items": [obj, bare]}
    yield {"kind": "List", "items": [obj], "apiVersion": "v1", "metadata": {}}  # items before metadata
    yield {"type": "MODIFIED", "object": obj}
    yield {"apiVersion": "meta.k8s.io/v1", "kind": "Table", "columnDefinitions": [], "rows": [{"cells": ["x"], "object": obj}]}


def assert_same_everywhere(obj, group_maps=(DEFAULT_GROUP_MAP,)):
    """Both directions (the standard object and its private form), every wrapping, every group map."""
    for group_map in group_maps:
        private = assert_same(obj, TO_PRIVATE, group_map)
        for document in wrappings(obj):
            assert_same(document, TO_PRIVATE, group_map)
            assert_same(document, TO_STANDARD, group_map)
        if private is not None:
            for document in wrappings(private):
                assert_same(document, TO_STANDARD, group_map)


@pytest.mark.parametrize("obj", EXAMPLE_OBJECTS)
def test_examples(obj):
    assert_same_everywhere(obj, (DEFAULT_GROUP_MAP, AGENT_MAP))


@pytest.mark.parametrize("obj", [pytest.param(adversarial_machine(), id="adversarial_machine")] + [
    pytest.param(standard, id=param.id) for param in SHAPE_TABLE for standard in param.values[:1]])
def test_fixtures(obj):
    assert_same_everywhere(obj, (DEFAULT_GROUP_MAP, AGENT_MAP))


def test_benchmark_machine_list():
    from benchmarks.bench_translation import build_machine_list  # pylint: disable=import-outside-toplevel

    for version in ("v1beta1", "v1beta2"):
        assert_same_everywhere(build_machine_list(version, count=5))


def test_crd_objects():
    crds = {param.values[0]["metadata"]["name"]: param.values[0] for param in CRD_VERSIONS}
    assert len(crds) >= 30
    for crd in crds.values():
        assert_same_everywhere(crd)


ERROR_CASES = [
    {"kind": "Machine", "metadata": {"name": "m", "namespace": "ns"}},
    {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "m", "ownerReferences": {"kind": "MachineSet"}}},
    {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "m", "managedFields": ["x"]}},
    {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "m", "ownerReferences": [{"apiVersion": 1}]}},
    {"apiVersion": "v1", "kind": "List", "items": ["x"]},
    {"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "A", "metadata": {"managedFields": [1]}}]},
    {"type": "ADDED", "object": "not a mapping"},
    # Two faults: whichever comes first in key order is reported, as translate_object reports it.
    {"apiVersion": "v1", "kind": "List", "metadata": {"ownerReferences": "x"}, "items": [3]},
    {"apiVersion": "v1", "kind": "List", "items": [3], "metadata": {"ownerReferences": "x"}},
    {"apiVersion": "meta.k8s.io/v1", "kind": "Table", "rows": [{"object": {"kind": "K", "metadata": {"managedFields": {}}}}]},
    "cluster.x-k8s.io/v1beta2",
    ["not", "an", "object"],
]


@pytest.mark.parametrize("obj", ERROR_CASES)
def test_errors_are_the_same(obj):
    for direction in (TO_PRIVATE, TO_STANDARD):
        expected = outcome(translate_object, json_tree(obj), direction, DEFAULT_GROUP_MAP)
        assert expected[0] == "error"
        assert outcome(translate_object_in_place, json_tree(obj), direction, DEFAULT_GROUP_MAP) == expected


def test_in_place_mutates_the_tree_and_allocates_no_copy():
    machine = json_tree(adversarial_machine())
    nodes = {id(machine), id(machine["metadata"]), id(machine["spec"]), id(machine["spec"]["infrastructureRef"])}
    result = translate_object_in_place(machine, TO_PRIVATE)
    assert result is machine
    assert nodes == {id(result), id(result["metadata"]), id(result["spec"]), id(result["spec"]["infrastructureRef"])}
    assert result == translate_object(adversarial_machine(), TO_PRIVATE)
    assert result["spec"]["infrastructureRef"]["apiVersion"] == "infrastructure.cluster.hypershift.openshift.io/v1beta2"


def test_mappings_that_are_not_dicts_are_translated_as_translate_object_does():
    class Tagged(dict):
        pass

    obj = {"apiVersion": "v1", "kind": "List", "items": [Tagged(apiVersion="cluster.x-k8s.io/v1beta2", kind="Machine")]}
    expected = translate_object(copy.deepcopy(obj), TO_PRIVATE)
    assert translate_object_in_place(obj, TO_PRIVATE) == expected
    assert type(obj["items"][0]) is dict  # pylint: disable=unidiomatic-typecheck  # a plain dict, as translate_object returns


def test_arguments_are_checked_like_translate_object():
    with pytest.raises(CapiTranslationError, match="direction must be"):
        translate_object_in_place({"apiVersion": "v1", "kind": "A"}, "up")
    with pytest.raises(CapiTranslationError, match="group_map must be a GroupMap"):
        translate_object_in_place({"apiVersion": "v1", "kind": "A"}, TO_PRIVATE, group_map={})


@settings(max_examples=150, **HYPOTHESIS)
@given(obj=generated_objects)
def test_adversarial_generated_objects(obj):
    """Random nested refs, free-text maps with apiVersion/kind keys, group-looking strings everywhere."""
    assert_same_everywhere(obj, (DEFAULT_GROUP_MAP, AGENT_MAP))


@pytest.mark.parametrize("crd, version", CRD_VERSIONS)
def test_schema_generated_objects(crd, version):
    @settings(max_examples=4, **HYPOTHESIS)
    @given(obj=objects_from_crd(crd, version, overrides=REF_OVERRIDES))
    def same(obj):
        assert_same_everywhere(obj)

    same()
