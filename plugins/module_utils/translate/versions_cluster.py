# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Cluster v1beta1 <-> v1beta2 field rules, including spec.topology (cluster-api v1.14.2:
core/webhooks/conversion/cluster.go, api/core/v1beta1/conversion.go)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions_common import (
    MISSING,
    drop_go_zero,
    get_in,
    move,
    paused_intent_down,
    pop_in,
    prune_empty,
    split_paths,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions_kinds import (
    contract_ref_down,
    contract_ref_up,
    convert_ref_at,
    deletion_timeouts_down,
    deletion_timeouts_up,
    health_check_down,
    health_check_up,
    initialization_down,
    initialization_up,
    restore_paused_intent,
    status_down,
    status_up,
)

_TOPOLOGY_HEALTH_ZERO = (
    "healthCheck", "healthCheck.checks", "healthCheck.checks.unhealthyMachineConditions",
    "healthCheck.checks.unhealthyNodeConditions", "healthCheck.remediation", "healthCheck.remediation.triggerIf",
    "healthCheck.remediation.triggerIf.unhealthyInRange",
)
_TOPOLOGY_COMMON_ZERO = ("deletion", "metadata", "taints", "taints[].value", "variables", "variables.overrides")
_CP = "spec.topology.controlPlane."
_MD = "spec.topology.workers.machineDeployments[]."
_MP = "spec.topology.workers.machinePools[]."

CLUSTER_ZERO_PATHS = split_paths(
    ["spec.availabilityGates", "spec.clusterNetwork", "spec.clusterNetwork.apiServerPort",
     "spec.clusterNetwork.serviceDomain", "spec.controlPlaneEndpoint", "spec.controlPlaneEndpoint.host",
     "spec.controlPlaneEndpoint.port", "spec.topology.classRef.namespace", "spec.topology.controlPlane",
     "spec.topology.variables", "spec.topology.workers", "spec.topology.workers.machineDeployments",
     "spec.topology.workers.machinePools"]
    + [_CP + path for path in _TOPOLOGY_COMMON_ZERO + _TOPOLOGY_HEALTH_ZERO + ("readinessGates", "rollout")]
    + [_MD + path for path in _TOPOLOGY_COMMON_ZERO + _TOPOLOGY_HEALTH_ZERO
       + ("failureDomain", "readinessGates", "rollout", "rollout.strategy", "rollout.strategy.rollingUpdate")]
    + [_MP + path for path in _TOPOLOGY_COMMON_ZERO + ("failureDomains",)]
    + ["status", "status.controlPlane.upgradePlan", "status.controlPlane.versions", "status.controlPlane.versions[].replicas",
       "status.deprecated.v1beta1.conditions[].message", "status.deprecated.v1beta1.conditions[].reason",
       "status.failureDomains", "status.initialization",
       "status.observedGeneration", "status.workers.upgradePlan", "status.workers.versions",
       "status.workers.versions[].replicas"]
)

# Free-form JSON (the v1beta2 schema's x-kubernetes-preserve-unknown-fields) under spec: a variable's value is kept as
# written, null and [] included (tests/unit/translate/test_capi_versions_unset.py re-derives the list from the schema).
CLUSTER_FREE_FORM_PATHS = split_paths(["spec.topology.variables[].value", _CP + "variables.overrides[].value",
                                       _MD + "variables.overrides[].value", _MP + "variables.overrides[].value"])

_INITIALIZATION = (("infrastructureReady", "infrastructureProvisioned"), ("controlPlaneReady", "controlPlaneInitialized"))
_OLD_STATUS = ("conditions", "failureReason", "failureMessage")
_NEW_STATUS = ("conditions", "controlPlane", "workers")
_MD_TOPOLOGY_MOVES = (  # (v1beta1, v1beta2) under spec.topology.workers.machineDeployments[]
    (("strategy", "type"), ("rollout", "strategy", "type")),
    (("strategy", "rollingUpdate", "maxSurge"), ("rollout", "strategy", "rollingUpdate", "maxSurge")),
    (("strategy", "rollingUpdate", "maxUnavailable"), ("rollout", "strategy", "rollingUpdate", "maxUnavailable")),
    (("strategy", "rollingUpdate", "deletePolicy"), ("deletion", "order")),
    (("strategy", "remediation", "maxInFlight"), ("healthCheck", "remediation", "maxInFlight")),
)


def _items(ctx, node, path, where):
    value = get_in(node, path)
    if value is MISSING:
        return []
    if not isinstance(value, list):
        raise ctx.error(where, "expected a list, got %r" % (value,), "fix the field in the source object")
    return [(position, item) for position, item in enumerate(value) if isinstance(item, dict)]


def _drop_definition_from(ctx, node, path, where):
    """variables[].definitionFrom was deprecated in v1.8 and is dropped by upstream's up-conversion."""
    for _position, variable in _items(ctx, node, path, where):
        variable.pop("definitionFrom", None)


# ---------------------------------------------------------------------------------------------
# spec.topology
# ---------------------------------------------------------------------------------------------


def _health_up(ctx, holder, where):
    block = holder.pop("machineHealthCheck", MISSING)
    if isinstance(block, dict):
        block = dict(block)
        health_check_up(ctx, block, where + ".machineHealthCheck", topology=True)
        existing = holder.get("healthCheck")
        if isinstance(existing, dict):  # maxInFlight may have arrived first
            block.setdefault("remediation", {}).update(existing.get("remediation", {}))
        holder["healthCheck"] = block


def _health_down(ctx, holder, where):
    block = holder.pop("healthCheck", MISSING)
    if isinstance(block, dict):
        block = dict(block)
        health_check_down(ctx, block, where + ".healthCheck", topology=True)
        if block:  # upstream creates machineHealthCheck only for a non-empty healthCheck
            holder["machineHealthCheck"] = block


def topology_up(ctx, topology):
    where = "spec.topology"
    move(topology, ("class",), ("classRef", "name"))
    move(topology, ("classNamespace",), ("classRef", "namespace"))
    topology.pop("rolloutAfter", None)  # never implemented; dropped by upstream
    _drop_definition_from(ctx, topology, ("variables",), where + ".variables")
    control_plane = topology.get("controlPlane")
    if isinstance(control_plane, dict):
        cp_where = where + ".controlPlane"
        deletion_timeouts_up(ctx, control_plane, cp_where)
        _health_up(ctx, control_plane, cp_where)
        _drop_definition_from(ctx, control_plane, ("variables", "overrides"), cp_where + ".variables.overrides")
    md_path = ("workers", "machineDeployments")
    for position, deployment in _items(ctx, topology, md_path, where + ".workers.machineDeployments"):
        md_where = "%s.workers.machineDeployments[%d]" % (where, position)
        deletion_timeouts_up(ctx, deployment, md_where)
        for old, new in _MD_TOPOLOGY_MOVES:
            move(deployment, old, new)
        prune_empty(deployment, ("strategy", "rollingUpdate"), ("strategy", "remediation"))
        deployment.pop("strategy", None)
        _health_up(ctx, deployment, md_where)
        _drop_definition_from(ctx, deployment, ("variables", "overrides"), md_where + ".variables.overrides")
    for position, pool in _items(ctx, topology, ("workers", "machinePools"), where + ".workers.machinePools"):
        mp_where = "%s.workers.machinePools[%d]" % (where, position)
        deletion_timeouts_up(ctx, pool, mp_where)
        _drop_definition_from(ctx, pool, ("variables", "overrides"), mp_where + ".variables.overrides")


def topology_down(ctx, topology):
    where = "spec.topology"
    move(topology, ("classRef", "name"), ("class",))
    move(topology, ("classRef", "namespace"), ("classNamespace",))
    prune_empty(topology, ("classRef",))
    control_plane = topology.get("controlPlane")
    if isinstance(control_plane, dict):
        cp_where = where + ".controlPlane"
        deletion_timeouts_down(ctx, control_plane, cp_where)
        _health_down(ctx, control_plane, cp_where)
        drop_go_zero(control_plane, ("variables",))
    md_path = ("workers", "machineDeployments")
    for position, deployment in _items(ctx, topology, md_path, where + ".workers.machineDeployments"):
        md_where = "%s.workers.machineDeployments[%d]" % (where, position)
        for old, new in _MD_TOPOLOGY_MOVES:
            move(deployment, new, old)
        prune_empty(deployment, ("rollout", "strategy", "rollingUpdate"), ("rollout", "strategy"), ("rollout",),
                    ("healthCheck", "remediation"))
        deletion_timeouts_down(ctx, deployment, md_where)
        _health_down(ctx, deployment, md_where)
        if deployment.get("failureDomain") == "":  # upstream dropEmptyStringsCluster
            del deployment["failureDomain"]
        drop_go_zero(deployment, ("variables",))
    for position, pool in _items(ctx, topology, ("workers", "machinePools"), where + ".workers.machinePools"):
        deletion_timeouts_down(ctx, pool, "%s.workers.machinePools[%d]" % (where, position))
        drop_go_zero(pool, ("variables",))
    drop_go_zero(topology, ("workers",))


# ---------------------------------------------------------------------------------------------
# status.failureDomains: map name -> {controlPlane, attributes}  <->  list sorted by name
# ---------------------------------------------------------------------------------------------


def _failure_domains_up(ctx, status):
    domains = status.pop("failureDomains", MISSING)
    if domains is MISSING:
        return
    if not isinstance(domains, dict):
        raise ctx.error("status.failureDomains", "expected a map of name -> {controlPlane, attributes}, got %r"
                        % (domains,), "fix the field in the v1beta1 object")
    converted = []
    for name in sorted(domains):
        value = domains[name]
        if value is not None and not isinstance(value, dict):
            raise ctx.error("status.failureDomains[%s]" % name, "expected {controlPlane, attributes}, got %r" % (value,),
                            "fix the field in the v1beta1 object")
        entry = {"name": name}
        entry.update(value or {})
        entry["controlPlane"] = entry.get("controlPlane") or False  # v1beta1 bool -> *bool, always set upstream
        converted.append(entry)
    status["failureDomains"] = converted


def _failure_domains_down(ctx, status):
    domains = status.pop("failureDomains", MISSING)
    if domains is MISSING:
        return
    if not isinstance(domains, list):
        raise ctx.error("status.failureDomains", "expected a list of {name, controlPlane, attributes}, got %r"
                        % (domains,), "fix the field in the v1beta2 object")
    converted = {}
    for position, entry in enumerate(domains):
        name = entry.get("name", "") if isinstance(entry, dict) else None  # Go reads an absent name as ""
        if not isinstance(name, str):
            raise ctx.error("status.failureDomains[%d]" % position, "expected {name, ...}, got %r" % (entry,),
                            "fix the field in the v1beta2 object")
        if name in converted:
            raise ctx.error("status.failureDomains[%d]" % position, "duplicate name %r" % name,
                            "failure domain names must be unique (v1beta1 stores them as map keys)")
        converted[name] = {key: value for key, value in entry.items() if key != "name"}
    status["failureDomains"] = converted


# ---------------------------------------------------------------------------------------------
# Cluster
# ---------------------------------------------------------------------------------------------


def cluster_up(ctx, obj, found, restored):
    spec = obj.get("spec")
    if isinstance(spec, dict):
        restore_paused_intent(ctx, spec, found, restored)
        convert_ref_at(ctx, spec, ("infrastructureRef",), "spec.infrastructureRef", contract_ref_up)
        convert_ref_at(ctx, spec, ("controlPlaneRef",), "spec.controlPlaneRef", contract_ref_up)
        topology = spec.get("topology")
        if isinstance(topology, dict):
            topology_up(ctx, topology)
    status = obj.get("status")
    if isinstance(status, dict):
        initialization_up(ctx, status, _INITIALIZATION, found, restored)
        _failure_domains_up(ctx, status)
        status_up(status, _OLD_STATUS, _NEW_STATUS)


def cluster_down(ctx, obj):
    spec, annotation, needs_annotation = paused_intent_down(obj)
    if spec is not None:
        convert_ref_at(ctx, spec, ("infrastructureRef",), "spec.infrastructureRef", contract_ref_down)
        convert_ref_at(ctx, spec, ("controlPlaneRef",), "spec.controlPlaneRef", contract_ref_down)
        if get_in(spec, ("clusterNetwork", "apiServerPort")) == 0:
            pop_in(spec, ("clusterNetwork", "apiServerPort"))
        drop_go_zero(spec, ("clusterNetwork", "services"), ("clusterNetwork", "pods"), ("clusterNetwork",))
        topology = spec.get("topology")
        if isinstance(topology, dict):
            topology_down(ctx, topology)
        drop_go_zero(spec, ("topology",))
    status = obj.get("status")
    if isinstance(status, dict):
        needs_annotation = initialization_down(status, _INITIALIZATION, annotation) or needs_annotation
        _failure_domains_down(ctx, status)
        status_down(status, _OLD_STATUS, _NEW_STATUS)
        if not status:
            del obj["status"]
    return annotation if needs_annotation else None
