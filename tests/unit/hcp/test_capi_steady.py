"""The pre-flight judgement of capi_steady: what keeps a HostedCluster from being steady, each reason naming the
object (pure, no server); and the module's documentation against its argument spec."""
import copy

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.steady import steady_reasons
from ansible_collections.hypershift.private_capi.plugins.modules import capi_steady as capi_steady_module
from tests.unit.module_docs import assert_argspec_matches_documentation

NS = "clusters-hc-01"


def condition(kind, status="True", reason="AsExpected", message=""):
    return {"type": kind, "status": status, "reason": reason, "message": message}


def obj(kind, name, namespace=NS, uid=None, owner=None, status=None, spec=None, deleting=None, finalizers=None,
        generation=1):
    metadata = {"name": name, "namespace": namespace, "uid": uid or "uid-" + name, "generation": generation}
    if owner is not None:
        metadata["ownerReferences"] = [{"kind": owner["kind"], "name": owner["metadata"]["name"],
                                        "uid": owner["metadata"]["uid"], "controller": True}]
    if deleting:
        metadata["deletionTimestamp"] = deleting
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {"kind": kind, "metadata": metadata, "spec": spec or {}, "status": status or {}}


MD = obj("MachineDeployment", "pool-1", spec={"replicas": 2},
         status={"replicas": 2, "upToDateReplicas": 2, "readyReplicas": 2, "observedGeneration": 1})
MS = obj("MachineSet", "pool-1-abc", owner=MD, spec={"replicas": 2}, status={"replicas": 2})
OLD_MS = obj("MachineSet", "pool-1-old", owner=MD, spec={"replicas": 0}, status={"replicas": 0})
MACHINES = [obj("Machine", "pool-1-abc-%d" % i, owner=MS, status={"phase": "Running",
                                                                  "conditions": [condition("Ready")]})
            for i in range(2)]
MHC = obj("MachineHealthCheck", "pool-1", status={"expectedMachines": 2, "currentHealthy": 2, "remediationsAllowed": 1})
HC = obj("HostedCluster", "hc-01", namespace="clusters",
         status={"conditions": [condition("Available"), condition("Progressing", "False")]})
POOL = obj("NodePool", "hc-01-pool-1", namespace="clusters",
           status={"conditions": [condition("UpdatingVersion", "False"), condition("Ready")]})


def steady():
    core = [MD, MS, OLD_MS] + MACHINES + [MHC]
    return copy.deepcopy({"hostedcluster": HC, "node_pools": [POOL], "machine_deployments": [MD],
                          "machine_sets": [MS, OLD_MS], "machines": MACHINES, "machine_health_checks": [MHC],
                          "capi_objects": core + [obj("AWSMachine", "pool-1-abc-0")], "conversion_problem": None})


def with_change(change):
    inputs = steady()
    change(inputs)
    return inputs


def machine_deleted(inputs):
    for key in ("machines", "capi_objects"):
        for item in inputs[key]:
            if item["metadata"]["name"] == "pool-1-abc-1":
                item["metadata"]["deletionTimestamp"] = "2026-11-24T21:00:00Z"
                item["metadata"]["finalizers"] = ["machine.cluster.x-k8s.io"]


def infra_machine_deleted(inputs):
    inputs["capi_objects"][-1]["metadata"].update(deletionTimestamp="2026-11-24T21:00:00Z")


def mid_rollout(inputs):
    inputs["machine_sets"][1]["spec"]["replicas"] = 1
    inputs["machine_sets"][1]["status"]["replicas"] = 1


def not_ready(inputs):
    inputs["machine_deployments"][0]["status"]["readyReplicas"] = 1


def unobserved(inputs):
    inputs["machine_deployments"][0]["metadata"]["generation"] = 2


def provisioning(inputs):
    inputs["machines"][0]["status"]["phase"] = "Provisioning"


def remediating(inputs):
    inputs["machines"][0]["status"].update(phase="Failed", conditions=[
        condition("HealthCheckSucceeded", "False", "UnhealthyNode", "Node is unhealthy")])


def mhc_remediates(inputs):
    inputs["machine_health_checks"][0]["status"]["currentHealthy"] = 1


def mhc_held_back(inputs):
    inputs["machine_health_checks"][0]["status"].update(currentHealthy=1, remediationsAllowed=0)


def pool_updating(inputs):
    inputs["node_pools"][0]["status"]["conditions"][0].update(status="True", message="4.21.3 to 4.21.4")


def not_available(inputs):
    inputs["hostedcluster"]["status"]["conditions"][0].update(status="False", reason="EtcdUnavailable",
                                                              message="etcd quorum lost")


def progressing(inputs):
    inputs["hostedcluster"]["status"]["conditions"][1].update(status="True", reason="Upgrading")


def no_conditions(inputs):
    inputs["hostedcluster"]["status"] = {}


def webhook_down(inputs):
    inputs["conversion_problem"] = "the conversion webhook of CustomResourceDefinition clusters.cluster.x-k8s.io ..."


def other_pool(inputs):
    inputs["node_pools"] = []  # NodePools of other HostedClusters are not passed in: nothing to judge


@pytest.mark.parametrize("change, expected", [
    (lambda inputs: None, []),
    (machine_deleted, ["Machine clusters-hc-01/pool-1-abc-1 is being deleted since 2026-11-24T21:00:00Z (finalizers "
                       "machine.cluster.x-k8s.io): waiting for its deletion to finish"]),
    (infra_machine_deleted, ["AWSMachine clusters-hc-01/pool-1-abc-0 is being deleted since 2026-11-24T21:00:00Z: "
                             "waiting for its deletion to finish"]),
    (mid_rollout, ["MachineDeployment clusters-hc-01/pool-1 is rolling out: MachineSets pool-1-abc (2), pool-1-old "
                   "(1) have replicas: waiting until only the newest has"]),
    (not_ready, ["MachineDeployment clusters-hc-01/pool-1 has 2 replicas, 2 up to date, 1 ready of 2 desired: waiting "
                 "for its rollout"]),
    (unobserved, ["MachineDeployment clusters-hc-01/pool-1 has not observed its spec yet (generation 2, observed 1): "
                  "waiting for its controller"]),
    (provisioning, ["Machine clusters-hc-01/pool-1-abc-0 is Provisioning: waiting for it to be Running"]),
    (remediating, ["Machine clusters-hc-01/pool-1-abc-0 is being remediated (HealthCheckSucceeded False (UnhealthyNode "
                   "Node is unhealthy)): waiting for its replacement"]),
    (mhc_remediates, ["MachineHealthCheck clusters-hc-01/pool-1 has 1 of 2 Machines healthy and may remediate: "
                      "waiting for the remediation to finish"]),
    (mhc_held_back, []),
    (pool_updating, ["NodePool clusters/hc-01-pool-1 is updating (UpdatingVersion (AsExpected 4.21.3 to 4.21.4)): "
                     "waiting for the update to finish"]),
    (not_available, ["HostedCluster clusters/hc-01 is not Available (EtcdUnavailable etcd quorum lost): waiting for it "
                     "to be"]),
    (progressing, ["HostedCluster clusters/hc-01 is Progressing (Upgrading): waiting for its rollout to finish"]),
    (no_conditions, ["HostedCluster clusters/hc-01 reports no Available condition: waiting for the HyperShift "
                     "operator to report it"]),
    (webhook_down, ["the conversion webhook of CustomResourceDefinition clusters.cluster.x-k8s.io ..."]),
    (other_pool, []),
], ids=lambda value: getattr(value, "__name__", None) if callable(value) else None)
def test_each_thing_in_flight_is_a_reason_naming_its_object(change, expected):
    inputs = with_change(change)
    before = copy.deepcopy(inputs)
    assert steady_reasons(inputs) == expected
    assert inputs == before


def test_a_v1beta1_machinedeployment_counts_its_updated_replicas():
    inputs = steady()
    status = inputs["machine_deployments"][0]["status"]
    status["updatedReplicas"] = status.pop("upToDateReplicas") - 1
    assert steady_reasons(inputs) == ["MachineDeployment clusters-hc-01/pool-1 has 2 replicas, 1 up to date, 2 ready "
                                      "of 2 desired: waiting for its rollout"]


def test_several_reasons_are_all_said():
    inputs = with_change(lambda i: (machine_deleted(i), progressing(i)))
    reasons = steady_reasons(inputs)
    assert len(reasons) == 2 and reasons[0].startswith("HostedCluster") and reasons[1].startswith("Machine ")


def test_module_documentation_matches_argspec():
    assert_argspec_matches_documentation(capi_steady_module)
