"""Group translation speed: objects/s of translate_object on a 100-Machine list (target > 5,000/s).

The Machines are built from the real MachineDeployment templates in testenv/upstream/capi/examples (v1beta1
and v1beta2), dressed the way a live HyperShift Machine looks (labels, annotations, finalizer,
MachineSet controller ownerReference, managedFields, status with nodeRef/addresses/conditions).
"""
import copy
import os
import statistics
import time

import yaml

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    TO_PRIVATE,
    TO_STANDARD,
    translate_object,
)
from testenv.upstream import CAPI_EXAMPLES

TARGET_OBJECTS_PER_SECOND = 5000
MACHINE_COUNT = 100
EXAMPLE_FILE = "examples__simple-cluster.yaml"


def load_machine_deployment(version):
    """The MachineDeployment of the upstream simple-cluster example for version v1beta1|v1beta2."""
    path = os.path.join(CAPI_EXAMPLES, version, EXAMPLE_FILE)
    with open(path) as handle:
        for document in yaml.safe_load_all(handle):
            if document and document.get("kind") == "MachineDeployment":
                return document
    raise RuntimeError("no MachineDeployment in %s" % path)


def _instance_ref(template_ref, name):
    """The ref a MachineSet writes into a Machine: the template's kind without 'Template', the Machine's name."""
    instance_ref = dict(template_ref)
    instance_ref["kind"] = template_ref["kind"][: -len("Template")]
    instance_ref["name"] = name
    return instance_ref


def build_machine(machine_deployment, index):
    """One realistic Machine owned by the MachineDeployment's MachineSet."""
    api_version = machine_deployment["apiVersion"]
    md_name = machine_deployment["metadata"]["name"]
    namespace = machine_deployment["metadata"].get("namespace", "default")
    cluster_name = machine_deployment["spec"]["clusterName"]
    set_name = md_name + "-7d9f8"
    name = "%s-%05d" % (set_name, index)
    spec = copy.deepcopy(machine_deployment["spec"]["template"]["spec"])
    spec["infrastructureRef"] = _instance_ref(spec["infrastructureRef"], name)
    spec["bootstrap"]["configRef"] = _instance_ref(spec["bootstrap"]["configRef"], name)
    spec["bootstrap"]["dataSecretName"] = name
    spec["providerID"] = "docker:////%s" % name
    labels = {
        "cluster.x-k8s.io/cluster-name": cluster_name,
        "cluster.x-k8s.io/deployment-name": md_name,
        "cluster.x-k8s.io/set-name": set_name,
        "machine-template-hash": "3457384312",
        "topology.cluster.x-k8s.io/owned": "",
    }
    return {
        "apiVersion": api_version,
        "kind": "Machine",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": "5b1c0f3e-0000-4000-8000-%012d" % index,
            "resourceVersion": str(100000 + index),
            "generation": 3,
            "creationTimestamp": "2026-05-01T10:00:00Z",
            "labels": labels,
            "annotations": {
                "hypershift.openshift.io/nodePool": "clusters/%s" % md_name,
                "cluster.x-k8s.io/cloned-from-groupkind": "DockerMachineTemplate.infrastructure.cluster.x-k8s.io",
            },
            "finalizers": ["machine.cluster.x-k8s.io"],
            "ownerReferences": [
                {
                    "apiVersion": api_version,
                    "kind": "MachineSet",
                    "name": set_name,
                    "uid": "0a9d7c1e-0000-4000-8000-000000000001",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": [
                {
                    "apiVersion": api_version,
                    "fieldsType": "FieldsV1",
                    "manager": "manager",
                    "operation": "Update",
                    "time": "2026-05-01T10:00:00Z",
                    "fieldsV1": {
                        "f:metadata": {
                            "f:finalizers": {".": {}, 'v:"machine.cluster.x-k8s.io"': {}},
                            "f:labels": {".": {}, **{"f:%s" % key: {} for key in labels}},
                        },
                        "f:spec": {"f:bootstrap": {"f:configRef": {}, "f:dataSecretName": {}}, "f:providerID": {}},
                    },
                },
                {
                    "apiVersion": api_version,
                    "fieldsType": "FieldsV1",
                    "manager": "manager",
                    "operation": "Update",
                    "subresource": "status",
                    "time": "2026-05-01T10:05:00Z",
                    "fieldsV1": {"f:status": {"f:addresses": {}, "f:conditions": {}, "f:nodeRef": {}, "f:phase": {}}},
                },
            ],
        },
        "spec": spec,
        "status": {
            "phase": "Running",
            "nodeRef": {"apiVersion": "v1", "kind": "Node", "name": name, "uid": "node-%d" % index},
            "addresses": [
                {"type": "InternalIP", "address": "10.0.%d.%d" % (index // 250, index % 250)},
                {"type": "Hostname", "address": name},
            ],
            "conditions": [
                {"type": condition, "status": "True", "lastTransitionTime": "2026-05-01T10:05:00Z", "reason": "Ready"}
                for condition in ("Ready", "BootstrapReady", "InfrastructureReady", "NodeHealthy")
            ],
            "observedGeneration": 3,
        },
    }


def build_machine_list(version, count=MACHINE_COUNT):
    """A MachineList of `count` Machines in the examples' standard group, for version v1beta1|v1beta2."""
    machine_deployment = load_machine_deployment(version)
    return {
        "apiVersion": machine_deployment["apiVersion"],
        "kind": "MachineList",
        "metadata": {"resourceVersion": "200000"},
        "items": [build_machine(machine_deployment, index) for index in range(count)],
    }


def measure(machine_list, direction, min_seconds=1.0):
    """Median objects/s over rounds of translating the whole list (median: robust on a busy machine)."""
    round_seconds = []
    started = time.perf_counter()
    while time.perf_counter() - started < min_seconds or len(round_seconds) < 5:
        round_started = time.perf_counter()
        translate_object(machine_list, direction)
        round_seconds.append(time.perf_counter() - round_started)
    return len(machine_list["items"]) / statistics.median(round_seconds)


def main():
    for version in ("v1beta1", "v1beta2"):
        standard_list = build_machine_list(version)
        private_list = translate_object(standard_list, TO_PRIVATE)
        deepcopy_seconds = []
        for _round in range(10):
            round_started = time.perf_counter()
            copy.deepcopy(standard_list)
            deepcopy_seconds.append(time.perf_counter() - round_started)
        deepcopy_rate = MACHINE_COUNT / statistics.median(deepcopy_seconds)
        for direction, machine_list in ((TO_PRIVATE, standard_list), (TO_STANDARD, private_list)):
            rate = measure(machine_list, direction)
            print(
                "%s %-11s %3d-Machine list: %9.0f objects/s  (%.1fx the %d/s target; %.1fx copy.deepcopy's %.0f/s)"
                % (version, direction, MACHINE_COUNT, rate, rate / TARGET_OBJECTS_PER_SECOND, TARGET_OBJECTS_PER_SECOND,
                   rate / deepcopy_rate, deepcopy_rate)
            )


if __name__ == "__main__":
    main()
