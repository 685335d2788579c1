"""Throughput of the CAPI v1beta1 <-> v1beta2 conversion core (plugins/module_utils/translate/versions.py).

Workload: a MachineList of 100 Machines built from the upstream v1beta2 example Machine
(testenv/upstream/capi/examples/v1beta2/examples__simple-cluster-without-kcp.yaml) with a realistic status
(conditions, nodeRef, addresses, initialization, phase Updating on every 10th so the annotation
path is exercised), converted v1beta2 -> v1beta1 (ref versions from a CRD contract label) and back.
"""
import copy
import os
import time

import yaml

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions import convert_object
from testenv.upstream import CAPI_EXAMPLES_V1BETA2

EXAMPLE = os.path.join(CAPI_EXAMPLES_V1BETA2, "examples__simple-cluster-without-kcp.yaml")
MACHINES = 100
ROUNDS = 20


def _contract_crds():
    """CRD stubs for the referenced kinds, labelled like the providers label their CRDs."""
    return [
        {"metadata": {"name": "dockermachines.infrastructure.cluster.x-k8s.io", "labels": {"cluster.x-k8s.io/v1beta2": "v1beta1_v1beta2"}},
         "spec": {"group": "infrastructure.cluster.x-k8s.io", "names": {"kind": "DockerMachine"}}},
        {"metadata": {"name": "kubeadmconfigs.bootstrap.cluster.x-k8s.io", "labels": {"cluster.x-k8s.io/v1beta2": "v1beta2"}},
         "spec": {"group": "bootstrap.cluster.x-k8s.io", "names": {"kind": "KubeadmConfig"}}},
    ]


def machine_list():
    with open(EXAMPLE) as handle:
        template = [doc for doc in yaml.safe_load_all(handle) if doc and doc["kind"] == "Machine"][0]
    items = []
    for index in range(MACHINES):
        item = copy.deepcopy(template)
        item["metadata"]["name"] = "worker-%03d" % index
        item["metadata"]["uid"] = "00000000-0000-0000-0000-%012d" % index
        item["spec"]["deletion"] = {"nodeDrainTimeoutSeconds": 600}
        item["status"] = {
            "phase": "Updating" if index % 10 == 0 else "Running",
            "nodeRef": {"name": "ip-10-0-%d-%d" % (index // 250, index % 250)},
            "addresses": [{"type": "InternalIP", "address": "10.0.%d.%d" % (index // 250, index % 250)}],
            "initialization": {"bootstrapDataSecretCreated": True, "infrastructureProvisioned": True},
            "conditions": [{"type": name, "status": "True", "reason": name, "message": "",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"} for name in ("Available", "Ready", "UpToDate")],
            "deprecated": {"v1beta1": {"conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
        }
        items.append(item)
    return {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineList", "metadata": {}, "items": items}


def _rate(function, argument):
    best = None
    for _round in range(ROUNDS):
        started = time.perf_counter()
        result = function(argument)
        elapsed = time.perf_counter() - started
        best = elapsed if best is None else min(best, elapsed)
    return result, MACHINES / best, best


def main():
    crds = _contract_crds()
    hub_list = machine_list()
    spoke_list, down_rate, down_time = _rate(lambda obj: convert_object(obj, "v1beta1", crds=crds), hub_list)
    back, up_rate, up_time = _rate(lambda obj: convert_object(obj, "v1beta2"), spoke_list)
    assert back == hub_list, "round trip must be the identity"
    single = hub_list["items"][1]
    _result, single_rate, _single_time = _rate(lambda obj: [convert_object(obj, "v1beta1", crds=crds) for _copy in range(MACHINES)], single)
    print("MachineList of %d Machines (best of %d rounds)" % (MACHINES, ROUNDS))
    print("  v1beta2 -> v1beta1: %8.0f objects/s  (%.2f ms per list)" % (down_rate, down_time * 1000))
    print("  v1beta1 -> v1beta2: %8.0f objects/s  (%.2f ms per list)" % (up_rate, up_time * 1000))
    print("  round trip:         %8.0f objects/s" % (MACHINES / (down_time + up_time)))
    print("  single Machine v1beta2 -> v1beta1: %8.0f objects/s (ratio to list: %.2f)" % (single_rate, single_rate / down_rate))


if __name__ == "__main__":
    main()
