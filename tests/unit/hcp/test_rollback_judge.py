"""The rollback's verification (hcp/judge.py rollback_problems, filter capi_rollback_judge): the cases the role's
Jinja (revert_verify.yml) judged, as a table."""
import copy

import pytest

from ansible_collections.hypershift.private_capi.plugins.filter.fleet_verify import FilterModule
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import judge, sidecar

from ansible.errors import AnsibleFilterError

NAMES = ["cluster-api", "capi-provider"]


def obj(kind, name, uid=None, deleting=False, owner=None, paused=None):
    metadata = {"name": name, "namespace": "clusters-prod-01", "uid": uid or "%s-%s" % (kind, name)}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-27T10:00:00Z"
        metadata["finalizers"] = ["cluster.x-k8s.io"]
    if owner is not None:
        metadata["ownerReferences"] = [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": owner[0], "name": owner[1],
                                        "uid": "%s-%s" % owner, "controller": True}]
    spec = {} if paused is None else {"paused": paused}
    return {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": kind, "metadata": metadata, "spec": spec}


def deployment(name, replicas=1, available=1, proxy=False):
    containers = [{"name": "manager"}] + ([{"name": sidecar.CONTAINER_NAME}] if proxy else [])
    return {"metadata": {"name": name}, "spec": {"replicas": replicas, "template": {"spec": {"containers": containers}}},
            "status": {"availableReplicas": available}}


def healthy():
    return {
        "counts": {"Cluster": {"found": 1, "remaining": 1}, "Machine": {"found": 2, "remaining": 2},
                   "MachinePool": {"found": 0, "remaining": 0}},
        "standard": [{"item": {"kind": "Cluster"}, "resources": [obj("Cluster", "prod-01", paused=False)]},
                     {"item": {"kind": "Machine"}, "resources": [obj("Machine", "m-0"), obj("Machine", "m-1")]}],
        "deployments": [deployment("cluster-api"), deployment("capi-provider"), deployment("other", available=0)],
        "deployment_names": NAMES,
    }


def changed(**changes):
    inputs = healthy()
    for key, value in changes.items():
        inputs[key] = value(copy.deepcopy(inputs[key])) if callable(value) else value
    return inputs


def with_machines(machines):
    return lambda standard: [standard[0], {"item": {"kind": "Machine"}, "resources": machines}]


CASES = [
    ("all well (a kind with nothing found is not compared; other Deployments do not count)", healthy(), []),
    ("a standard object missing", changed(standard=with_machines([obj("Machine", "m-0")])),
     ["counts per kind differ: private Machine=2 but standard Machine=1"]),
    ("a kind the copy found but nothing read", changed(standard=lambda standard: standard[:1]),
     ["counts per kind differ: private Machine=2 but standard none"]),
    ("one standard object too many", changed(standard=with_machines(
        [obj("Machine", "m-0"), obj("Machine", "m-1"), obj("Machine", "m-2")])),
     ["counts per kind differ: private Machine=2 but standard Machine=3"]),
    ("a deletion in flight is counted on neither side", changed(
        counts=lambda counts: dict(counts, Machine={"found": 3, "remaining": 2}),
        standard=with_machines([obj("Machine", "m-0"), obj("Machine", "m-1"), obj("Machine", "m-2", deleting=True)])),
     []),
    ("what a deleted owner takes along is not counted", changed(
        counts=lambda counts: dict(counts, Machine={"found": 2, "remaining": 1}),
        standard=lambda standard: [{"item": {"kind": "Cluster"}, "resources": [obj("Cluster", "prod-01")]},
                                   {"item": {"kind": "MachineSet"}, "resources": [obj("MachineSet", "ms", deleting=True)]},
                                   {"item": {"kind": "Machine"}, "resources": [
                                       obj("Machine", "m-0"), obj("Machine", "m-1", owner=("MachineSet", "ms"))]}]),
     []),
    ("the standard Cluster still paused", changed(standard=lambda standard: [
        {"item": {"kind": "Cluster"}, "resources": [obj("Cluster", "prod-01", paused=True)]}] + standard[1:]),
     ["still paused: Cluster prod-01"]),
    ("a sidecar left", changed(deployments=[deployment("cluster-api", proxy=True), deployment("capi-provider")]),
     ["proxy sidecar still in Deployment cluster-api"]),
    ("the zero-stop way back leaves the sidecars in, flipped back to pass-through", dict(changed(
        deployments=[deployment("cluster-api", proxy=True), deployment("capi-provider", proxy=True)]),
        passthrough_sidecars=True), []),
    ("a Deployment not available", changed(deployments=[deployment("cluster-api"), deployment("capi-provider", 2, 1)]),
     ["Deployments not available (name=available/replicas): cluster-api=1/1, capi-provider=1/2"]),
    ("a Deployment without status", changed(deployments=[
        {"metadata": {"name": "cluster-api"}, "spec": {"replicas": 1, "template": {"spec": {"containers": []}}}}]),
     ["Deployments not available (name=available/replicas): cluster-api=0/1"]),
    ("a scaled-to-zero Deployment counts as available", changed(deployments=[deployment("cluster-api", 0, 0)]), []),
]


@pytest.mark.parametrize("inputs, expected", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_the_rollback_judgement(inputs, expected):
    pristine = copy.deepcopy(inputs)
    assert judge.rollback_problems(inputs) == expected
    assert inputs == pristine


def test_standard_may_also_be_given_by_kind():
    by_kind = dict((result["item"]["kind"], result["resources"]) for result in healthy()["standard"])
    assert judge.rollback_problems(changed(standard=by_kind)) == []


def test_the_filter_judges_and_names_a_read_it_cannot_use():
    judge_filter = FilterModule().filters()["capi_rollback_judge"]
    assert judge_filter(healthy()) == []
    with pytest.raises(AnsibleFilterError, match="each with item.kind and resources"):
        judge_filter(changed(standard=[["Machine"]]))
