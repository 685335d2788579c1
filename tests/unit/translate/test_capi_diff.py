"""diff_objects: the field-level differences used by the demo and, later, the migration's verify."""
import copy

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.diff import diff_objects

MACHINE = {
    "apiVersion": "cluster.x-k8s.io/v1beta2",
    "kind": "Machine",
    "metadata": {"name": "m-0", "namespace": "clusters-a", "labels": {"cluster.x-k8s.io/cluster-name": "a"}},
    "spec": {"clusterName": "a", "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine", "name": "m-0"}},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}


def test_identical_objects_have_no_differences():
    assert diff_objects(MACHINE, copy.deepcopy(MACHINE)) == []


def test_changed_added_removed_leaves_are_reported_with_paths_sorted():
    after = copy.deepcopy(MACHINE)
    after["apiVersion"] = "cluster.hypershift.openshift.io/v1beta2"
    after["spec"]["infrastructureRef"]["apiGroup"] = "infrastructure.cluster.hypershift.openshift.io"
    after["metadata"]["labels"]["cluster.x-k8s.io/paused"] = ""
    del after["status"]["conditions"][0]["status"]
    assert diff_objects(MACHINE, after) == [
        {"path": "apiVersion", "before": "cluster.x-k8s.io/v1beta2", "after": "cluster.hypershift.openshift.io/v1beta2", "change": "changed"},
        {"path": 'metadata.labels["cluster.x-k8s.io/paused"]', "before": None, "after": "", "change": "added"},
        {"path": "spec.infrastructureRef.apiGroup", "before": "infrastructure.cluster.x-k8s.io",
         "after": "infrastructure.cluster.hypershift.openshift.io", "change": "changed"},
        {"path": "status.conditions[0].status", "before": "True", "after": None, "change": "removed"},
    ]


def test_lists_of_different_length_are_one_change_and_json_types_matter():
    after = copy.deepcopy(MACHINE)
    after["status"]["conditions"].append({"type": "Paused", "status": "False"})
    after["spec"]["replicas"] = True
    before = copy.deepcopy(MACHINE)
    before["spec"]["replicas"] = 1
    changes = diff_objects(before, after)
    assert [c["path"] for c in changes] == ["spec.replicas", "status.conditions"]
    assert changes[0]["before"] == 1 and changes[0]["after"] is True


@pytest.mark.parametrize("limit", [1, 2])
def test_limit_bounds_the_report(limit):
    after = {"a": 1, "b": 2, "c": 3}
    assert len(diff_objects({}, after, limit=limit)) == limit


def test_inputs_are_not_mutated():
    before, after = copy.deepcopy(MACHINE), copy.deepcopy(MACHINE)
    after["kind"] = "MachineSet"
    snapshot = (copy.deepcopy(before), copy.deepcopy(after))
    diff_objects(before, after)
    assert (before, after) == snapshot


def test_subclasses_of_json_types_compare_by_value():
    class TaggedStr(str):
        """Stands for Ansible 2.19's tagged strings, which templating returns."""

    class TaggedInt(int):
        pass

    before = {"apiVersion": "cluster.x-k8s.io/v1beta2", "spec": {"replicas": 3}}
    after = {"apiVersion": TaggedStr("cluster.x-k8s.io/v1beta2"), "spec": {"replicas": TaggedInt(3)}}
    assert diff_objects(before, after) == []
    assert [c["path"] for c in diff_objects(before, {"apiVersion": TaggedStr("v1"), "spec": {"replicas": 3.5}})] == ["apiVersion", "spec.replicas"]
