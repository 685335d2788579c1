"""capi_health's judgement (pure): what it fails and why; across a deletion in flight, what is on its way out is
neither counted nor judged."""
import copy

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.health import (
    HealthInputError,
    expected_counts_from,
    health_failures,
    unhealthy_machine_names,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.graph import leaving

NS = "clusters-ex"
STAMP = "2026-11-24T10:00:00Z"


def obj(kind, name, phase=None, owner=None, deleting=False, finalizers=None):
    metadata = {"name": name, "namespace": NS, "uid": "uid-%s-%s" % (kind, name)}
    if owner is not None:
        metadata["ownerReferences"] = [{"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": owner["kind"],
                                        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                        "controller": True}]
    if deleting:
        metadata["deletionTimestamp"] = STAMP
    if finalizers:
        metadata["finalizers"] = finalizers
    body = {"kind": kind, "metadata": metadata}
    if phase:
        body["status"] = {"phase": phase}
    return body


def cluster():
    body = obj("Cluster", "ex", phase="Provisioned")
    body["status"]["initialization"] = {"infrastructureProvisioned": True}
    return body


def namespace_objects(carried):
    """A Cluster, a MachineSet, three Machines and their DevMachines; with carried, Machine m-2 is being deleted."""
    machine_set = obj("MachineSet", "ms")
    machines = [obj("Machine", "m-%d" % index, phase="Running", owner=machine_set) for index in range(3)]
    if carried:
        machines[2] = obj("Machine", "m-2", phase="Deleting", owner=machine_set, deleting=True,
                          finalizers=["machine.cluster.x-k8s.io"])
    infra = [obj("DevMachine", machine["metadata"]["name"], owner=machine) for machine in machines]
    return {"Cluster": [cluster()], "MachineSet": [machine_set], "Machine": machines, "DevMachine": infra}


def judge(objects, expected):
    return health_failures(NS, objects, expected, ["Provisioned"], ["Running"])


def test_leaving_is_what_is_being_deleted_and_what_its_deletion_takes_along():
    objects = namespace_objects(carried=True)
    gone = leaving([item for items in objects.values() for item in items])
    assert gone == {"uid-Machine-m-2": "being deleted (deletionTimestamp %s)" % STAMP,
                    "uid-DevMachine-m-2": "its owner Machine %s/m-2 is being deleted and takes it along" % NS}
    orphaning = copy.deepcopy(objects)
    orphaning["Machine"][2]["metadata"]["finalizers"] = ["orphan"]
    assert set(leaving([item for items in orphaning.values() for item in items])) == {"uid-Machine-m-2"}


def test_a_deletion_carried_across_is_neither_counted_nor_judged_by_phase():
    counts = {"Cluster": {"found": 1, "leaving": 0, "remaining": 1}, "MachineSet": {"found": 1, "leaving": 0, "remaining": 1},
              "Machine": {"found": 3, "leaving": 1, "remaining": 2}, "DevMachine": {"found": 3, "leaving": 1, "remaining": 2}}
    expected = expected_counts_from(counts, [])
    assert expected == {"Cluster": 1, "MachineSet": 1, "Machine": 2, "DevMachine": 2}
    # the copy is still there, Deleting, while its controller drains the node ...
    assert judge(namespace_objects(carried=True), expected) == []
    # ... and gone once it has finished: the same verdict, at any moment of the deletion
    finished = namespace_objects(carried=True)
    finished["Machine"].pop()
    finished["DevMachine"].pop()
    assert judge(finished, expected) == []


def test_a_machine_lost_or_unhealthy_outside_a_deletion_still_fails():
    expected = {"Cluster": 1, "MachineSet": 1, "Machine": 3, "DevMachine": 3}
    objects = namespace_objects(carried=False)
    objects["Machine"][1]["status"]["phase"] = "Failed"
    assert judge(objects, expected) == ["Machine m-1 phase Failed"]
    # a deletion begun since the copy counts against the record: the Machine is no longer there to stay
    objects = namespace_objects(carried=True)
    assert judge(objects, expected) == ["DevMachine count 2 != 3 before migration", "Machine count 2 != 3 before migration"]


PHASES = (["Provisioned", "Provisioning"], ["Running", "Provisioning", "Pending", "Provisioned"])


def test_health_of_a_healthy_namespace_is_empty():
    objects = {"Cluster": [cluster()], "Machine": [obj("Machine", "m-1", phase="Running"), obj("Machine", "m-2")]}
    assert health_failures(NS, objects, {"Cluster": 1, "Machine": 2}, *PHASES) == []


def test_health_lists_every_failure():
    failed = obj("Cluster", "ex", phase="Failed")
    failed["status"]["infrastructureReady"] = False
    failed["spec"] = {"paused": True}
    objects = {"Cluster": [failed], "Machine": [obj("Machine", "m-1", phase="Failed"), obj("Machine", "m-2", phase="Deleting")]}
    deployments = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "cluster-api", "namespace": NS},
                    "spec": {"replicas": 2}, "status": {"availableReplicas": 1}}]
    failures = health_failures(NS, objects, {"Cluster": 1, "Machine": 3}, *PHASES, unhealthy_before=["m-2"],
                               deployments=deployments, required_deployments=["cluster-api", "capi-provider"])
    assert failures == [
        "Cluster ex phase is Failed, expected one of Provisioned/Provisioning",
        "Cluster ex infrastructure is not ready",
        "Cluster ex is still paused",
        "Machine count 2 != 3 before migration",
        "Machine m-1 phase Failed",
        "Deployment %s/capi-provider is missing" % NS,
        "Deployment %s/cluster-api has 1 of 2 replicas available" % NS,
    ]
    assert health_failures(NS, {}, {}, *PHASES) == ["no private Cluster in %s" % NS]


def test_expected_counts_leave_out_what_was_not_copied():
    counts = {"Machine": {"found": 3, "created": 2}, "Cluster": 1}
    assert expected_counts_from(counts, [{"kind": "Machine", "name": "m-3"}]) == {"Machine": 2, "Cluster": 1}
    with pytest.raises(HealthInputError, match=r"source_counts\['Machine'\] is 'many'"):
        expected_counts_from({"Machine": "many"}, [])
    machines = [obj("Machine", "b", phase="Failed"), obj("Machine", "a"), obj("Machine", "c", phase="Running")]
    assert unhealthy_machine_names(machines, PHASES[1]) == ["a", "b"]
