# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Is a HostedCluster steady enough to migrate? The pure judgement (no I/O, inputs never mutated) and the reads.

Pausing a cluster freezes it where it is, in the one window where no controller can finish what it was doing: a
Machine whose node is draining, a MachineDeployment half rolled out, a NodePool upgrading. steady_reasons() says
what is in flight, each reason naming the object and what is waited for; no reason means steady:
* no CAPI object of the HCP namespace is being deleted;
* every MachineDeployment is rolled out: one MachineSet with replicas, and replicas = up to date = ready = desired,
  its spec observed;
* no Machine is Pending, Provisioning, Provisioned or Deleting, and none is being remediated (HealthCheckSucceeded
  or OwnerRemediated False);
* no MachineHealthCheck has fewer healthy Machines than expected while it may remediate;
* no NodePool is updating (UpdatingVersion, UpdatingConfig, UpdatingPlatformMachineTemplate);
* the HostedCluster is Available and not Progressing;
* the standard CRDs' conversion webhook answers (a read at a version other than the stored one converts), and so
  does the private Cluster twin's (the collection's conversion shim): a server-side dry-run create at a version other
  than the stored one converts without storing anything, so a dead shim stops a migration before it starts.
SteadyService reads all of it in one pass, and again every poll_seconds until steady or wait_timeout.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiError, api_path, parallel_map
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import ModuleService
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    DEFAULT_GROUP_MAP, PRIVATE_SUFFIX, STANDARD_SUFFIX)

CORE_GROUP = STANDARD_SUFFIX
CONVERSION_CHECK_NAME = "capi-conversion-check"  # the dry-run Cluster of the private twin's conversion check
MACHINE_BUSY_PHASES = ("Pending", "Provisioning", "Provisioned", "Deleting")
REMEDIATION_CONDITIONS = ("HealthCheckSucceeded", "OwnerRemediated")
NODEPOOL_UPDATING = ("UpdatingVersion", "UpdatingConfig", "UpdatingPlatformMachineTemplate")
NODEPOOL_GROUP, NODEPOOL_VERSION = hypershift.HOSTEDCLUSTER_GROUP, hypershift.HOSTEDCLUSTER_VERSION


def _metadata(obj):
    return obj.get("metadata") or {}


def _name(obj):
    metadata = _metadata(obj)
    return describe(obj.get("kind") or "object", metadata.get("name"), metadata.get("namespace"))


def _conditions(obj):
    status = obj.get("status") or {}
    found = {}
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type"):
            found[condition["type"]] = condition
    return found


def _said(condition):
    words = " ".join(part for part in (condition.get("reason") or "", condition.get("message") or "") if part)
    return (" (%s)" % words[:200]) if words else ""


def _count(status, *keys):
    for key in keys:
        if status.get(key) is not None:
            return int(status[key])
    return 0


def _deleting(objects):
    reasons = []
    for obj in objects:
        metadata = _metadata(obj)
        if metadata.get("deletionTimestamp"):
            finalizers = metadata.get("finalizers") or []
            reasons.append("%s is being deleted since %s%s: waiting for its deletion to finish" % (
                _name(obj), metadata["deletionTimestamp"],
                " (finalizers %s)" % ", ".join(finalizers) if finalizers else ""))
    return reasons


def _owned_by(obj, owner):
    uid = _metadata(owner).get("uid")
    return any(ref.get("uid") == uid and ref.get("controller") for ref in _metadata(obj).get("ownerReferences") or ())


def _set_replicas(machine_set):
    """A MachineSet's replicas: desired or still running, whichever is more."""
    return max(_count(machine_set.get("spec") or {}, "replicas"), _count(machine_set.get("status") or {}, "replicas"))


def _rollouts(machine_deployments, machine_sets):
    reasons = []
    for deployment in machine_deployments:
        if _metadata(deployment).get("deletionTimestamp"):
            continue  # said as being deleted
        spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
        desired = 1 if spec.get("replicas") is None else int(spec["replicas"])
        owned = [(_metadata(ms).get("name"), _set_replicas(ms)) for ms in machine_sets if _owned_by(ms, deployment)]
        with_replicas = sorted("%s (%d)" % (name, replicas) for name, replicas in owned if replicas)
        if len(with_replicas) > 1:
            reasons.append("%s is rolling out: MachineSets %s have replicas: waiting until only the newest has"
                           % (_name(deployment), ", ".join(with_replicas)))
            continue
        generation, observed = _metadata(deployment).get("generation"), status.get("observedGeneration")
        if generation is not None and observed is not None and int(observed) < int(generation):
            reasons.append("%s has not observed its spec yet (generation %s, observed %s): waiting for its controller"
                           % (_name(deployment), generation, observed))
            continue
        replicas = _count(status, "replicas")
        updated = _count(status, "upToDateReplicas", "updatedReplicas")
        ready = _count(status, "readyReplicas")
        if not replicas == updated == ready == desired:
            reasons.append("%s has %d replicas, %d up to date, %d ready of %d desired: waiting for its rollout"
                           % (_name(deployment), replicas, updated, ready, desired))
    return reasons


def _machines(machines):
    reasons = []
    for machine in machines:
        if _metadata(machine).get("deletionTimestamp"):
            continue
        phase = (machine.get("status") or {}).get("phase")
        if phase in MACHINE_BUSY_PHASES:
            reasons.append("%s is %s: waiting for it to be Running" % (_name(machine), phase))
            continue
        conditions = _conditions(machine)
        for kind in REMEDIATION_CONDITIONS:
            condition = conditions.get(kind)
            if condition is not None and condition.get("status") == "False":
                reasons.append("%s is being remediated (%s False%s): waiting for its replacement"
                               % (_name(machine), kind, _said(condition)))
                break
    return reasons


def _health_checks(machine_health_checks):
    reasons = []
    for check in machine_health_checks:
        status = check.get("status") or {}
        expected, healthy = status.get("expectedMachines"), status.get("currentHealthy")
        allowed = status.get("remediationsAllowed")
        if expected is None or healthy is None or int(healthy) >= int(expected):
            continue
        if allowed is not None and int(allowed) <= 0:
            continue  # remediation is held back (too many unhealthy): nothing moves, nothing to wait for
        reasons.append("%s has %d of %d Machines healthy and may remediate: waiting for the remediation to finish"
                       % (_name(check), int(healthy), int(expected)))
    return reasons


def _node_pools(node_pools):
    reasons = []
    for pool in node_pools:
        conditions = _conditions(pool)
        updating = [kind for kind in NODEPOOL_UPDATING if (conditions.get(kind) or {}).get("status") == "True"]
        if updating:
            reasons.append("%s is updating (%s%s): waiting for the update to finish" % (
                _name(pool), ", ".join(updating), _said(conditions[updating[0]])))
    return reasons


def _hostedcluster(hostedcluster):
    conditions = _conditions(hostedcluster)
    available, progressing = conditions.get("Available"), conditions.get("Progressing")
    reasons = []
    if available is None:
        reasons.append("%s reports no Available condition: waiting for the HyperShift operator to report it"
                       % _name(hostedcluster))
    elif available.get("status") != "True":
        reasons.append("%s is not Available%s: waiting for it to be" % (_name(hostedcluster), _said(available)))
    if progressing is not None and progressing.get("status") == "True":
        reasons.append("%s is Progressing%s: waiting for its rollout to finish"
                       % (_name(hostedcluster), _said(progressing)))
    return reasons


def steady_reasons(inputs):
    """What keeps one HostedCluster from being steady, each reason naming the object; [] when it is steady.

    inputs: hostedcluster, node_pools, capi_objects (every CAPI object of the HCP namespace, with kind),
    machine_deployments, machine_sets, machines, machine_health_checks (core objects of that namespace), and
    conversion_problem (None, or what the conversion probe met)."""
    by_kind = dict((key, list(inputs.get(key) or ())) for key in (
        "node_pools", "capi_objects", "machine_deployments", "machine_sets", "machines", "machine_health_checks"))
    reasons = _hostedcluster(inputs.get("hostedcluster") or {}) + _node_pools(by_kind["node_pools"])
    reasons += _deleting(by_kind["capi_objects"])
    reasons += _rollouts(by_kind["machine_deployments"], by_kind["machine_sets"])
    reasons += _machines(by_kind["machines"]) + _health_checks(by_kind["machine_health_checks"])
    if inputs.get("conversion_problem"):
        reasons.append(inputs["conversion_problem"])
    return reasons


class SteadyService(ModuleService):
    """One run of capi_steady: read, judge, and while not steady read again until wait_timeout. Read-only: never
    changed; a cluster that is not steady is a result (steady: false), not a failure."""

    DERIVED = hypershift.HCP_NAMESPACE_DERIVED
    MINIMUMS = {"wait_timeout": 0, "poll_seconds": 1}
    NAMESPACES = (("hcp_namespace", None), ("hostedcluster_namespace", None))

    CORE_KINDS = (("MachineDeployment", "machine_deployments"), ("MachineSet", "machine_sets"),
                  ("Machine", "machines"), ("MachineHealthCheck", "machine_health_checks"))

    def __init__(self, client, params, sleep=time.sleep, clock=time.monotonic):
        self.client = client
        self.params = params
        self.hcp_namespace = params["hcp_namespace"]
        self.sleep = sleep
        self.clock = clock
        self.result = {"changed": False, "steady": False, "reasons": [], "waited_seconds": 0.0, "polls": 0}

    @classmethod
    def from_run(cls, run):
        return cls(cls.connect(run), run.params)

    def _kinds(self):
        """(kind, group, storage version, plural, served versions, conversion) of the namespaced standard CAPI CRDs,
        and the same of the private core Cluster twin (None when it is not installed)."""
        crds = self.client.list(api_path("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
                                "list CustomResourceDefinitions")
        kinds = []
        private_cluster = None
        for crd in crds:
            spec = crd.get("spec") or {}
            group = spec.get("group") or ""
            versions = spec.get("versions") or []
            storage = [v.get("name") for v in versions if v.get("storage")]
            if spec.get("scope") != "Namespaced" or not storage:
                continue
            entry = (spec["names"]["kind"], group, storage[0], spec["names"]["plural"],
                     [v.get("name") for v in versions if v.get("served")], spec.get("conversion") or {})
            if group == PRIVATE_SUFFIX and entry[0] == "Cluster":
                private_cluster = entry
            if DEFAULT_GROUP_MAP.is_standard(group):  # the core's rule: clusterctl's inventory is no CAPI kind
                kinds.append(entry)
        return sorted(kinds), private_cluster

    @staticmethod
    def _converts(entry):
        """The version other than the stored one that a read or write of this CRD converts at, or None."""
        kind, _group, storage, _plural, served, conversion = entry
        others = [version for version in served if version != storage]
        if kind != "Cluster" or conversion.get("strategy") != "Webhook" or not others:
            return None
        return others[0]

    def _conversion_problem(self, kinds, private_cluster):
        for entry in kinds:
            version = self._converts(entry) if entry[1] == CORE_GROUP else None
            if version is None:
                continue
            _kind, group, _storage, plural = entry[:4]
            path = api_path(group, version, plural, self.hcp_namespace)
            try:
                self.client.request("GET", path, "list %s.%s/%s (a conversion)" % (plural, group, version),
                                    query={"limit": 1})
            except ApiError as exc:
                return ("the conversion webhook of CustomResourceDefinition %s.%s does not answer (reading %s: HTTP "
                        "%s %s): waiting for it (HyperShift's operator serves /convert)"
                        % (plural, group, version, exc.status, (exc.api_message or "")[:200]))
        version = self._converts(private_cluster) if private_cluster else None
        if version is None:
            return None
        _kind, group, _storage, plural = private_cluster[:4]
        probe = {"apiVersion": "%s/%s" % (group, version), "kind": "Cluster",
                 "metadata": {"name": CONVERSION_CHECK_NAME, "namespace": self.hcp_namespace}, "spec": {}}
        try:
            self.client.request("POST", api_path(group, version, plural, self.hcp_namespace),
                                "dry-run create %s.%s/%s (a conversion)" % (plural, group, version), body=probe,
                                query={"dry_run": "All"})
        except ApiError as exc:
            if exc.status == 409:  # AlreadyExists: a Cluster of that name is there, and was converted to say so
                return None
            if exc.status is not None and exc.status < 500:  # refused before or apart from any conversion
                return ("a dry-run create of a private Cluster at %s in namespace %s was refused (HTTP %s %s): the "
                        "migration's own creates of private objects would be too; check the identity's RBAC (create on "
                        "%s.%s) and the admission policies of the private groups"
                        % (version, self.hcp_namespace, exc.status, (exc.api_message or "")[:200], plural, group))
            return ("the conversion webhook of CustomResourceDefinition %s.%s (the collection's conversion shim, "
                    "role conversion_shim) does not answer (a dry-run create at %s: HTTP %s %s): waiting for it; "
                    "check its Deployment and Service (docs/operator-guide.md, What the collection deploys)"
                    % (plural, group, version, exc.status, (exc.api_message or "")[:200]))
        return None

    def read(self):
        hc_name, hc_namespace = self.params["hostedcluster_name"], self.params["hostedcluster_namespace"]
        hostedcluster = self.client.get(
            api_path(hypershift.HOSTEDCLUSTER_GROUP, hypershift.HOSTEDCLUSTER_VERSION, "hostedclusters", hc_namespace,
                     hc_name), "get " + describe(hypershift.HOSTEDCLUSTER_KIND, hc_name, hc_namespace))
        hostedcluster.setdefault("kind", hypershift.HOSTEDCLUSTER_KIND)
        pools = self.client.list(api_path(NODEPOOL_GROUP, NODEPOOL_VERSION, "nodepools", hc_namespace),
                                 "list " + describe("NodePools", namespace=hc_namespace))
        kinds, private_cluster = self._kinds()

        def read_kind(entry):
            kind, group, storage, plural = entry[:4]
            items = self.client.list(api_path(group, storage, plural, self.hcp_namespace),
                                     "list " + describe("%s.%s" % (plural, group), namespace=self.hcp_namespace))
            for item in items:
                item.setdefault("kind", kind)
            return items
        lists = parallel_map(read_kind, kinds, 8)
        inputs = {"hostedcluster": hostedcluster, "capi_objects": [item for items in lists for item in items],
                  "node_pools": [dict(pool, kind="NodePool") for pool in pools
                                 if (pool.get("spec") or {}).get("clusterName") == hc_name],
                  "conversion_problem": self._conversion_problem(kinds, private_cluster)}
        for (kind, group, _storage, _plural, _served, _conversion), items in zip(kinds, lists):
            for core_kind, key in self.CORE_KINDS:
                if group == CORE_GROUP and kind == core_kind:
                    inputs[key] = items
        return inputs

    def run(self):
        started = self.clock()
        delay = max(1, self.params["poll_seconds"])
        while True:
            self.result["polls"] += 1
            reasons = steady_reasons(self.read())
            self.result["reasons"] = reasons
            self.result["steady"] = not reasons
            waited = self.clock() - started
            if not reasons or waited + delay > self.params["wait_timeout"]:
                self.result["waited_seconds"] = round(waited, 3)
                return self.result
            self.sleep(delay)
