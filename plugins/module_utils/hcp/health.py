# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner of hypershift.private_capi.capi_health: the enhancement's health checks of one migrated HCP namespace.

health_failures() is pure (no I/O, inputs never mutated, deterministic order); HealthService reads the objects
(one LIST per kind, the source Machines, the Deployments), judges them, and with stable_seconds judges again.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.conversion import conversion_problem
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiError, api_path
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import ModuleService
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.graph import leaving


class HealthInputError(PrivateCapiError):
    """An option that cannot be used as given; the message says what was expected."""


def health_options():
    """{option: spec} of the checks' options: capi_health's own, and hcp_migrate_finish's O(health) suboptions."""
    return dict(
        kinds=dict(type="list", elements="dict", required=True),
        source_counts=dict(type="dict", default={}),
        not_copied=dict(type="list", elements="dict", default=[]),
        cluster_phases=dict(type="list", elements="str", default=["Provisioned", "Provisioning"]),
        machine_phases=dict(type="list", elements="str", default=["Running", "Provisioning", "Pending", "Provisioned"]),
        deployments=dict(type="list", elements="str", default=[]),
        stable_seconds=dict(type="int", default=0),
    )


def _phase(obj, default):
    return ((obj.get("status") or {}).get("phase")) or default


def infrastructure_ready(cluster):
    """v1beta1 status.infrastructureReady, or v1beta2 status.initialization.infrastructureProvisioned."""
    status = cluster.get("status") or {}
    if "infrastructureReady" in status:
        return bool(status["infrastructureReady"])
    return bool((status.get("initialization") or {}).get("infrastructureProvisioned"))


def health_failures(namespace, objects_by_kind, expected_counts, cluster_phases, machine_phases,
                    unhealthy_before=(), deployments=None, required_deployments=()):
    """One line per failed check; an empty list means healthy.

    objects_by_kind: {kind: [objects found in the target group]}; expected_counts: {kind: count expected};
    unhealthy_before: names of Machines already unhealthy before the migration (not failures);
    deployments: the Deployments read, required_deployments: names that must be fully available.
    Objects on their way out (being deleted, or taken along by an owner that is: a deletion carried across, or one
    begun since) are neither counted nor judged by phase; the expected counts leave them out too (capi_object_migrate's
    counts[kind].remaining).
    """
    failures = []
    gone = leaving([obj for objects in objects_by_kind.values() for obj in objects or ()])
    clusters = objects_by_kind.get("Cluster") or []
    if not clusters:
        failures.append("no private Cluster in %s" % namespace)
    for cluster in clusters:
        name = cluster["metadata"]["name"]
        phase = _phase(cluster, "unset")
        if phase not in cluster_phases:
            failures.append("Cluster %s phase is %s, expected one of %s" % (name, phase, "/".join(cluster_phases)))
        if not infrastructure_ready(cluster):
            failures.append("Cluster %s infrastructure is not ready" % name)
        if (cluster.get("spec") or {}).get("paused"):
            failures.append("Cluster %s is still paused" % name)
    for kind in sorted(expected_counts):
        found = len([obj for obj in objects_by_kind.get(kind) or () if obj["metadata"]["uid"] not in gone])
        if found != expected_counts[kind]:
            failures.append("%s count %d != %d before migration" % (kind, found, expected_counts[kind]))
    skip = set(unhealthy_before)
    for machine in objects_by_kind.get("Machine") or []:
        phase = _phase(machine, "Pending")
        if phase not in machine_phases and machine["metadata"]["name"] not in skip and machine["metadata"]["uid"] not in gone:
            failures.append("Machine %s phase %s" % (machine["metadata"]["name"], phase))
    by_name = dict((d["metadata"]["name"], d) for d in deployments or [])
    for name in sorted(required_deployments):
        deployment = by_name.get(name)
        if deployment is None:
            failures.append("Deployment %s/%s is missing" % (namespace, name))
            continue
        wanted = (deployment.get("spec") or {}).get("replicas", 1)
        available = (deployment.get("status") or {}).get("availableReplicas") or 0
        if available != wanted:
            failures.append("Deployment %s/%s has %d of %d replicas available" % (namespace, name, available, wanted))
    return failures


def unhealthy_machine_names(machines, machine_phases):
    """Names of the Machines whose phase is unset or not healthy, sorted."""
    return sorted(m["metadata"]["name"] for m in machines
                  if (m.get("status") or {}).get("phase") not in machine_phases)


def expected_counts_from(source_counts, not_copied):
    """{kind: sources - those not copied}; source_counts values are numbers or capi_object_migrate's counts entries
    (their C(remaining): found less those on their way out; C(found) from a release that did not count those)."""
    expected = {}
    for kind, numbers in source_counts.items():
        found = numbers.get("remaining", numbers.get("found", 0)) if isinstance(numbers, dict) else numbers
        try:
            found = int(found)
        except (TypeError, ValueError):
            raise HealthInputError("source_counts[%r] is %r, expected a number or {found: number}" % (kind, numbers))
        expected[kind] = found - len([entry for entry in not_copied if entry.get("kind") == kind])
    return expected


class HealthService(object):
    def __init__(self, client, params, sleep=time.sleep):
        self.client = client
        self.params = params
        self.sleep = sleep
        self.hcp_namespace = params["hcp_namespace"]
        self.kinds = []
        for entry in params["kinds"]:
            missing = [key for key in ("kind", "resource", "version", "target_group") if not entry.get(key)]
            if missing:
                raise HealthInputError("kinds entry %r lacks %s; pass capi_object_migrate's returned kinds"
                                       % (entry, ", ".join(missing)))
            self.kinds.append(entry)
        if not any(entry["kind"] == "Cluster" for entry in self.kinds):
            raise HealthInputError("kinds must include the Cluster kind (got %s); pass every kind "
                                   "capi_object_migrate moved" % [entry["kind"] for entry in self.kinds])

    def _list(self, group, version, resource):
        return self.client.list(api_path(group, version, resource, self.hcp_namespace),
                                "list " + describe("%s.%s" % (resource, group), namespace=self.hcp_namespace))

    def unhealthy_before(self):
        """Source Machines already unhealthy (their status is frozen since the pause): not a failure of the copy."""
        machine = [entry for entry in self.kinds if entry["kind"] == "Machine" and entry.get("source_group")]
        if not machine:
            return []
        try:
            sources = self._list(machine[0]["source_group"], machine[0]["version"], machine[0]["resource"])
        except ApiError as error:
            if error.is_not_found:  # the sources are gone (deleted by step 7 of a resumed run)
                return []
            raise
        return unhealthy_machine_names(sources, self.params["machine_phases"])

    def judge(self, unhealthy_before):
        objects = {}
        for entry in self.kinds:
            objects[entry["kind"]] = self._list(entry["target_group"], entry["version"], entry["resource"])
        deployments = []
        if self.params["deployments"]:
            deployments = self._list("apps", "v1", "deployments")
        expected = expected_counts_from(self.params["source_counts"], self.params["not_copied"])
        failures = health_failures(self.hcp_namespace, objects, expected,
                                   self.params["cluster_phases"], self.params["machine_phases"], unhealthy_before,
                                   deployments, self.params["deployments"])
        cluster = [entry for entry in self.kinds if entry["kind"] == "Cluster"][0]
        problem = conversion_problem(self.client, cluster["target_group"], cluster["version"], cluster["resource"],
                                     self.hcp_namespace)
        failures += [problem] if problem else []
        return failures, dict((kind, len(found)) for kind, found in objects.items())

    def run(self):
        unhealthy_before = self.unhealthy_before()
        failures, counts = self.judge(unhealthy_before)
        rounds = 1
        if not failures and self.params["stable_seconds"] > 0:
            self.sleep(self.params["stable_seconds"])
            failures, counts = self.judge(unhealthy_before)
            failures = ["after %ss: %s" % (self.params["stable_seconds"], failure) for failure in failures]
            rounds = 2
        return {"failures": failures, "counts": counts, "unhealthy_before": unhealthy_before, "rounds": rounds}


class HealthChecksFailed(PrivateCapiError):
    """Checks that failed: the message is one line per failure, the result what the run read (k8s/runner.py)."""

    def __init__(self, result):
        super(HealthChecksFailed, self).__init__("; ".join(result["failures"]))
        self.checked = result

    def result(self):
        return dict(self.checked)


class HealthModule(HealthService, ModuleService):
    """capi_health's service (k8s/runner.py): read-only; a failed check fails the module (HealthChecksFailed)."""

    MINIMUMS = {"stable_seconds": 0}
    NAMESPACES = (("hcp_namespace", None),)

    @classmethod
    def from_run(cls, run):
        return cls(cls.connect(run), run.params)

    def run(self):
        result = dict(HealthService.run(self), changed=False)
        if result["failures"]:
            raise HealthChecksFailed(result)
        return result
