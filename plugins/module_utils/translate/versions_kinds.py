# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Per-kind v1beta1 <-> v1beta2 field rules for Machine, MachineSet, MachineDeployment, MachinePool,
MachineHealthCheck and MachineDrainRule, plus the shared reference / duration / status helpers
(Cluster lives in versions_cluster.py). Rules: cluster-api v1.14.2 core/webhooks/conversion and
api/core/v1beta1/conversion.go.

Every function restructures the caller's private copy in place. Absent fields stay absent; a
v1beta1 zero value for a field v1beta2 makes a pointer follows upstream's intent rule.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions_common import (
    MISSING,
    duration_to_seconds,
    get_in,
    is_integer,
    move,
    paused_intent_down,
    pop_in,
    prune_empty,
    restore_pointer_intent,
    seconds_to_duration,
    set_in,
    split_paths,
)

# ---------------------------------------------------------------------------------------------
# v1beta2 fields whose schema rejects the zero value: Go's omitempty drops a v1beta1 zero there.
# Derived from the v1beta2 openAPIV3Schema (tests/unit/translate/test_capi_versions.py re-derives and compares), less
# POINTER_ZERO_KEPT: fields that are pointers in Go, whose zero upstream keeps although the schema rejects it.
# ---------------------------------------------------------------------------------------------

POINTER_ZERO_KEPT = ("status.deprecated.v1beta1.failureMessage",)

_MACHINE_SPEC_ZERO = ("deletion", "failureDomain", "providerID", "readinessGates", "taints", "taints[].value", "version")
_DEPRECATED_ZERO = ("status.deprecated.v1beta1.conditions[].message", "status.deprecated.v1beta1.conditions[].reason")

V1BETA2_ZERO_PATHS = {
    "Machine": split_paths(
        ["spec." + path for path in _MACHINE_SPEC_ZERO]
        + ["status", "status.failureDomain", "status.initialization", "status.observedGeneration"]
        + list(_DEPRECATED_ZERO)
    ),
    "MachineSet": split_paths(
        ["spec.template.spec." + path for path in _MACHINE_SPEC_ZERO]
        + ["spec.deletion", "spec.machineNaming", "spec.machineNaming.template", "spec.template.metadata", "status",
           "status.observedGeneration", "status.selector", "status.versions", "status.versions[].replicas"]
        + list(_DEPRECATED_ZERO)
    ),
    "MachineDeployment": split_paths(
        ["spec.template.spec." + path for path in _MACHINE_SPEC_ZERO]
        + ["spec.deletion", "spec.machineNaming", "spec.machineNaming.template", "spec.remediation", "spec.rollout",
           "spec.rollout.strategy", "spec.rollout.strategy.rollingUpdate", "spec.template.metadata", "status",
           "status.observedGeneration", "status.selector", "status.versions", "status.versions[].replicas"]
        + list(_DEPRECATED_ZERO)
    ),
    "MachinePool": split_paths(
        ["spec.template.spec." + path for path in _MACHINE_SPEC_ZERO]
        + ["spec.template.metadata", "status", "status.initialization", "status.observedGeneration", "status.versions",
           "status.versions[].replicas"] + list(_DEPRECATED_ZERO)
    ),
    "MachineHealthCheck": split_paths(
        ["spec.checks", "spec.checks.unhealthyMachineConditions", "spec.checks.unhealthyNodeConditions",
         "spec.remediation", "spec.remediation.triggerIf", "spec.remediation.triggerIf.unhealthyInRange", "status",
         "status.observedGeneration"] + list(_DEPRECATED_ZERO)
    ),
    "MachineDrainRule": split_paths(["spec.machines", "spec.pods"]),
}

# ---------------------------------------------------------------------------------------------
# Values: durations, booleans, references
# ---------------------------------------------------------------------------------------------


def duration_up(ctx, where):
    def to_seconds(value):
        try:
            return duration_to_seconds(value)
        except ValueError as exc:
            raise ctx.error(where, str(exc), "write the duration in Go syntax, e.g. '10s' or '5m0s'")
    return to_seconds


def duration_down(ctx, where):
    def to_duration(value):
        if not is_integer(value):
            raise ctx.error(where, "expected whole seconds (integer), got %r" % (value,), "fix the field in the v1beta2 object")
        return seconds_to_duration(value)
    return to_duration


def restore_paused_intent(ctx, spec, found, restored):
    """Up-conversion of spec.paused (bool -> *bool): an explicit false survives only through the conversion-data record."""
    paused = checked_bool(ctx, spec.pop("paused", MISSING), "spec.paused")
    paused = restore_pointer_intent(paused, found, get_in(restored, ("spec", "paused")), False)
    if paused is not MISSING:
        spec["paused"] = paused


def checked_bool(ctx, value, where):
    if value is not MISSING and not isinstance(value, bool):
        raise ctx.error(where, "expected true or false, got %r" % (value,), "fix the field in the source object")
    return value


def _group_of_api_version(ctx, api_version, where):
    """schema.ParseGroupVersion: 'g/v' -> 'g', 'v1' -> '' (core), '' -> ''."""
    if not api_version:
        return ""
    if not isinstance(api_version, str) or api_version.count("/") > 1:
        raise ctx.error(where, "apiVersion %r is not '<group>/<version>'" % (api_version,), "fix the reference's apiVersion")
    return api_version.partition("/")[0] if "/" in api_version else ""


def contract_ref_up(ctx, ref, where):
    """v1beta1 ObjectReference -> v1beta2 {apiGroup, kind, name}; namespace/uid/resourceVersion/fieldPath dropped."""
    if not isinstance(ref, dict):
        raise ctx.error(where, "expected an object reference, got %r" % (ref,), "fix the reference")
    converted = {}
    group = _group_of_api_version(ctx, ref.get("apiVersion"), where + ".apiVersion")
    if group:
        converted["apiGroup"] = group
    for key in ("kind", "name"):
        if ref.get(key):
            converted[key] = ref[key]
    return converted or MISSING


def contract_ref_down(ctx, ref, where):
    """v1beta2 {apiGroup, kind, name} -> ObjectReference with the looked-up apiVersion and the object's namespace."""
    if not isinstance(ref, dict):
        raise ctx.error(where, "expected {apiGroup, kind, name}, got %r" % (ref,), "fix the reference")
    group, kind, name = ref.get("apiGroup") or "", ref.get("kind") or "", ref.get("name") or ""
    if not (group or kind or name):
        return MISSING
    converted = {"apiVersion": ctx.contract_api_version(group, kind, where)}
    if kind:
        converted["kind"] = kind
    if name:
        converted["name"] = name
    if ctx.namespace:
        converted["namespace"] = ctx.namespace
    return converted


def template_ref_up(ctx, ref, where):
    """ObjectReference -> {apiVersion, kind, name} (not contract-versioned: apiVersion kept)."""
    if not isinstance(ref, dict):
        raise ctx.error(where, "expected an object reference, got %r" % (ref,), "fix the reference")
    converted = {key: ref[key] for key in ("apiVersion", "kind", "name") if ref.get(key)}
    return converted or MISSING


def template_ref_down(ctx, ref, where):
    if not isinstance(ref, dict):
        raise ctx.error(where, "expected {apiVersion, kind, name}, got %r" % (ref,), "fix the reference")
    converted = {key: ref[key] for key in ("apiVersion", "kind", "name") if ref.get(key)}
    if not converted:
        return MISSING
    if ctx.namespace:
        converted["namespace"] = ctx.namespace
    return converted


def convert_ref_at(ctx, node, path, where, convert):
    value = get_in(node, path)
    if value is MISSING:
        return
    converted = convert(ctx, value, where)
    if converted is MISSING:
        pop_in(node, path)
    else:
        set_in(node, path, converted)


# ---------------------------------------------------------------------------------------------
# Machine spec (Machine.spec and spec.template.spec of MachineSet/MachineDeployment/MachinePool)
# ---------------------------------------------------------------------------------------------

DELETION_TIMEOUTS = (
    ("nodeDrainTimeout", "nodeDrainTimeoutSeconds"),
    ("nodeVolumeDetachTimeout", "nodeVolumeDetachTimeoutSeconds"),
    ("nodeDeletionTimeout", "nodeDeletionTimeoutSeconds"),
)


def deletion_timeouts_up(ctx, node, where):
    for old, new in DELETION_TIMEOUTS:
        move(node, (old,), ("deletion", new), duration_up(ctx, "%s.%s" % (where, old)))


def deletion_timeouts_down(ctx, node, where):
    for old, new in DELETION_TIMEOUTS:
        move(node, ("deletion", new), (old,), duration_down(ctx, "%s.deletion.%s" % (where, new)))
    prune_empty(node, ("deletion",))


def machine_spec_up(ctx, spec, where):
    if not isinstance(spec, dict):
        return
    convert_ref_at(ctx, spec, ("infrastructureRef",), where + ".infrastructureRef", contract_ref_up)
    convert_ref_at(ctx, spec, ("bootstrap", "configRef"), where + ".bootstrap.configRef", contract_ref_up)
    deletion_timeouts_up(ctx, spec, where)


def machine_spec_down(ctx, spec, where):
    if not isinstance(spec, dict):
        return
    convert_ref_at(ctx, spec, ("infrastructureRef",), where + ".infrastructureRef", contract_ref_down)
    convert_ref_at(ctx, spec, ("bootstrap", "configRef"), where + ".bootstrap.configRef", contract_ref_down)
    deletion_timeouts_down(ctx, spec, where)
    for key in ("version", "providerID", "failureDomain"):  # upstream dropEmptyStringsMachineSpec
        if spec.get(key) == "":
            del spec[key]


# ---------------------------------------------------------------------------------------------
# Status: conditions swap, deprecated (old-semantics) fields, new-semantics counters
# ---------------------------------------------------------------------------------------------


def status_up(status, old_keys, new_keys, counters=None):
    """v1beta1 top-level old fields -> deprecated.v1beta1; v1beta1 status.v1beta2.* -> top level.

    counters: for MachineSet, MachineDeployment and MachinePool, whose upstream up-conversion always writes
    status.replicas and status.deprecated.v1beta1 (even for an object without status): the v1beta1 int32 counters
    it always writes there (non-omitempty in v1beta2), an absent one read as 0 as a Go client reads it."""
    deprecated = {}
    if counters is not None:
        status["replicas"] = status.get("replicas") or 0
        for key in counters:
            deprecated[key] = status.pop(key, None) or 0
    for key in old_keys:
        if key in status:
            deprecated[key] = status.pop(key)
    newer = status.pop("v1beta2", MISSING)
    if isinstance(newer, dict):
        for key in new_keys:
            if key in newer:
                status[key] = newer[key]
    if deprecated or counters is not None:
        status["deprecated"] = {"v1beta1": deprecated}


_MACHINESET_COUNTERS = ("readyReplicas", "availableReplicas", "fullyLabeledReplicas")
_MACHINEDEPLOYMENT_COUNTERS = ("updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")
_MACHINEPOOL_COUNTERS = ()  # omitempty in v1beta2: moved only when present


def status_down(status, old_keys, new_keys):
    newer = {}
    for key in new_keys:
        if key in status:
            newer[key] = status.pop(key)
    deprecated = get_in(status, ("deprecated", "v1beta1"))
    status.pop("deprecated", None)
    if isinstance(deprecated, dict):
        for key in old_keys:
            if key in deprecated:
                status[key] = deprecated[key]
    if newer:
        status["v1beta2"] = newer


def initialization_up(ctx, status, pairs, found, restored):
    """v1beta1 bools -> status.initialization *bools with upstream's intent rule."""
    initialization = {}
    for old, new in pairs:
        value = checked_bool(ctx, status.pop(old, MISSING), "status." + old)
        value = restore_pointer_intent(value, found, get_in(restored, ("status", "initialization", new)), False)
        if value is not MISSING:
            initialization[new] = value
    if initialization:
        status["initialization"] = initialization


def initialization_down(status, pairs, annotation):
    """status.initialization -> v1beta1 bools; returns True when an explicit false needs the annotation.

    Every v1beta1 bool of pairs is written, false when v1beta2 leaves it unset: upstream's v1beta1 fields are plain
    `bool` without omitempty (Cluster infrastructureReady/controlPlaneReady, Machine and MachinePool
    bootstrapReady/infrastructureReady), so a v1beta1 reader always sees them (api/core/v1beta1 machine_types.go,
    cluster_types.go: nil -> false). Called only for an object that has a status: a v1beta2 manifest without one
    (not yet reconciled) gets none on the way down.
    """
    initialization = status.pop("initialization", MISSING)
    needs_annotation = False
    if isinstance(initialization, dict):
        for old, new in pairs:
            if new in initialization:
                value = initialization[new]
                status[old] = False if value is None else value
                needs_annotation = needs_annotation or value is False
        set_in(annotation, ("status", "initialization"), initialization)
    for old, _new in pairs:
        status.setdefault(old, False)
    return needs_annotation


_CONDITIONS_AND_FAILURES = ("conditions", "failureReason", "failureMessage")
_NEW_COUNTERS = ("conditions", "readyReplicas", "availableReplicas", "upToDateReplicas")
_INITIALIZATION = (("bootstrapReady", "bootstrapDataSecretCreated"), ("infrastructureReady", "infrastructureProvisioned"))


def _status_of(obj):
    status = obj.get("status")
    return status if isinstance(status, dict) else None


def _finish_status(obj):
    if obj.get("status") == {}:
        del obj["status"]


# ---------------------------------------------------------------------------------------------
# Machine
# ---------------------------------------------------------------------------------------------


def machine_up(ctx, obj, found, restored):
    spec = obj.get("spec")
    machine_spec_up(ctx, spec, "spec")
    status = _status_of(obj)
    if status is not None:
        initialization_up(ctx, status, _INITIALIZATION, found, restored)
        node_ref = status.pop("nodeRef", MISSING)
        if isinstance(node_ref, dict) and node_ref.get("name"):
            status["nodeRef"] = {"name": node_ref["name"]}
        status_up(status, _CONDITIONS_AND_FAILURES, ("conditions",))
    if found:  # v1beta2-only fields; the phase comes from the annotation (keeps "Updating")
        min_ready = get_in(restored, ("spec", "minReadySeconds"))
        if min_ready is not MISSING and isinstance(spec, dict):
            spec["minReadySeconds"] = min_ready
        for key in ("phase", "failureDomain"):
            value = get_in(restored, ("status", key))
            if value is not MISSING:
                obj.setdefault("status", {})[key] = value
            elif status is not None:
                status.pop(key, None)
    _finish_status(obj)


def machine_down(ctx, obj):
    annotation = {}
    needs_annotation = False
    spec = obj.get("spec")
    if isinstance(spec, dict):
        min_ready = spec.pop("minReadySeconds", MISSING)
        if min_ready is not MISSING:
            set_in(annotation, ("spec", "minReadySeconds"), min_ready)
            needs_annotation = True
        machine_spec_down(ctx, spec, "spec")
    status = _status_of(obj)
    if status is not None:
        if "phase" in status:
            set_in(annotation, ("status", "phase"), status["phase"])
            if status["phase"] == "Updating":  # not a v1beta1 phase
                status["phase"] = "Running"
                needs_annotation = True
        failure_domain = status.pop("failureDomain", MISSING)
        if failure_domain is not MISSING:
            set_in(annotation, ("status", "failureDomain"), failure_domain)
            needs_annotation = True
        needs_annotation = initialization_down(status, _INITIALIZATION, annotation) or needs_annotation
        node_ref = status.get("nodeRef")
        if isinstance(node_ref, dict):
            status["nodeRef"] = {"apiVersion": "v1", "kind": "Node"}
            if node_ref.get("name"):
                status["nodeRef"]["name"] = node_ref["name"]
        status_down(status, _CONDITIONS_AND_FAILURES, ("conditions",))
        _finish_status(obj)
    return annotation if needs_annotation else None


# ---------------------------------------------------------------------------------------------
# MachineSet (no conversion-data annotation in v1.14)
# ---------------------------------------------------------------------------------------------

_MACHINESET_OLD = _CONDITIONS_AND_FAILURES + ("readyReplicas", "availableReplicas", "fullyLabeledReplicas")


def machineset_up(ctx, obj, found, restored):
    spec = obj.get("spec")
    if isinstance(spec, dict):
        min_ready = spec.pop("minReadySeconds", MISSING)
        if min_ready is not MISSING and min_ready != 0:  # upstream: 0 -> nil
            set_in(spec, ("template", "spec", "minReadySeconds"), min_ready)
        move(spec, ("deletePolicy",), ("deletion", "order"))
        move(spec, ("machineNamingStrategy",), ("machineNaming",))
        machine_spec_up(ctx, get_in(spec, ("template", "spec")), "spec.template.spec")
    status = _status_of(obj)
    if status is not None:
        status_up(status, _MACHINESET_OLD, _NEW_COUNTERS, _MACHINESET_COUNTERS)
        _finish_status(obj)


def machineset_down(ctx, obj):
    spec = obj.get("spec")
    if isinstance(spec, dict):
        move(spec, ("template", "spec", "minReadySeconds"), ("minReadySeconds",))
        move(spec, ("deletion", "order"), ("deletePolicy",))
        move(spec, ("machineNaming",), ("machineNamingStrategy",))
        prune_empty(spec, ("deletion",))
        machine_spec_down(ctx, get_in(spec, ("template", "spec")), "spec.template.spec")
    status = _status_of(obj)
    if status is not None:
        status_down(status, _MACHINESET_OLD, _NEW_COUNTERS)
        _finish_status(obj)
    return MISSING  # MISSING = leave any existing annotation alone (MachineSet does not use it)


# ---------------------------------------------------------------------------------------------
# MachineDeployment
# ---------------------------------------------------------------------------------------------

_MACHINEDEPLOYMENT_OLD = ("conditions", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas")
_MACHINEDEPLOYMENT_MOVES = (  # (v1beta1 path, v1beta2 path) under spec
    (("rolloutAfter",), ("rollout", "after")),
    (("strategy", "type"), ("rollout", "strategy", "type")),
    (("strategy", "rollingUpdate", "maxSurge"), ("rollout", "strategy", "rollingUpdate", "maxSurge")),
    (("strategy", "rollingUpdate", "maxUnavailable"), ("rollout", "strategy", "rollingUpdate", "maxUnavailable")),
    (("strategy", "rollingUpdate", "deletePolicy"), ("deletion", "order")),
    (("strategy", "remediation", "maxInFlight"), ("remediation", "maxInFlight")),
    (("machineNamingStrategy",), ("machineNaming",)),
)


def machinedeployment_up(ctx, obj, found, restored):
    spec = obj.get("spec")
    if isinstance(spec, dict):
        restore_paused_intent(ctx, spec, found, restored)
        move(spec, ("minReadySeconds",), ("template", "spec", "minReadySeconds"))
        for old, new in _MACHINEDEPLOYMENT_MOVES:
            move(spec, old, new)
        prune_empty(spec, ("strategy", "rollingUpdate"), ("strategy", "remediation"))
        spec.pop("strategy", None)  # everything it held has moved
        spec.pop("progressDeadlineSeconds", None)  # dropped by upstream (never used)
        spec.pop("revisionHistoryLimit", None)  # dropped by upstream
        machine_spec_up(ctx, get_in(spec, ("template", "spec")), "spec.template.spec")
    status = _status_of(obj)
    if status is not None:
        status_up(status, _MACHINEDEPLOYMENT_OLD, _NEW_COUNTERS, _MACHINEDEPLOYMENT_COUNTERS)
        _finish_status(obj)


def machinedeployment_down(ctx, obj):
    spec, annotation, needs_annotation = paused_intent_down(obj)
    if spec is not None:
        move(spec, ("template", "spec", "minReadySeconds"), ("minReadySeconds",))
        for old, new in _MACHINEDEPLOYMENT_MOVES:
            move(spec, new, old)
        prune_empty(spec, ("rollout", "strategy", "rollingUpdate"), ("rollout", "strategy"), ("rollout",),
                    ("deletion",), ("remediation",))
        machine_spec_down(ctx, get_in(spec, ("template", "spec")), "spec.template.spec")
    status = _status_of(obj)
    if status is not None:
        status_down(status, _MACHINEDEPLOYMENT_OLD, _NEW_COUNTERS)
        _finish_status(obj)
    return annotation if needs_annotation else None


# ---------------------------------------------------------------------------------------------
# MachinePool
# ---------------------------------------------------------------------------------------------

_MACHINEPOOL_OLD = _CONDITIONS_AND_FAILURES + ("readyReplicas", "availableReplicas", "unavailableReplicas")


def machinepool_up(ctx, obj, found, restored):
    spec = obj.get("spec")
    if isinstance(spec, dict):
        move(spec, ("minReadySeconds",), ("template", "spec", "minReadySeconds"))
        machine_spec_up(ctx, get_in(spec, ("template", "spec")), "spec.template.spec")
    status = _status_of(obj)
    if status is not None:
        initialization_up(ctx, status, _INITIALIZATION, found, restored)
        status_up(status, _MACHINEPOOL_OLD, _NEW_COUNTERS, _MACHINEPOOL_COUNTERS)
        _finish_status(obj)


def machinepool_down(ctx, obj):
    annotation = {}
    needs_annotation = False
    spec = obj.get("spec")
    if isinstance(spec, dict):
        move(spec, ("template", "spec", "minReadySeconds"), ("minReadySeconds",))
        machine_spec_down(ctx, get_in(spec, ("template", "spec")), "spec.template.spec")
    status = _status_of(obj)
    if status is not None:
        needs_annotation = initialization_down(status, _INITIALIZATION, annotation)
        status_down(status, _MACHINEPOOL_OLD, _NEW_COUNTERS)
        _finish_status(obj)
    return annotation if needs_annotation else None


# ---------------------------------------------------------------------------------------------
# Health checks: MachineHealthCheck.spec and the topology healthCheck / machineHealthCheck blocks
# ---------------------------------------------------------------------------------------------


def _move_conditions(ctx, source, source_path, target, target_path, where, up):
    """Move a condition list, converting each item's timeout <-> timeoutSeconds."""
    items = pop_in(source, source_path)
    if items is MISSING:
        return
    if not isinstance(items, list):
        raise ctx.error(where, "expected a list, got %r" % (items,), "fix the field in the source object")
    converted = []
    for position, item in enumerate(items):
        if isinstance(item, dict):
            item = dict(item)
            item_where = "%s[%d]" % (where, position)
            if up:  # upstream: a missing timeout is the zero Duration -> 0 seconds
                item["timeoutSeconds"] = duration_up(ctx, item_where + ".timeout")(item.pop("timeout", "0s"))
            else:  # upstream: nil timeoutSeconds -> "0s"
                item["timeout"] = duration_down(ctx, item_where + ".timeoutSeconds")(item.pop("timeoutSeconds", 0))
        converted.append(item)
    set_in(target, target_path, converted)


_HEALTH_CONDITIONS = (("unhealthyConditions", "unhealthyNodeConditions"),
                      ("unhealthyMachineConditions", "unhealthyMachineConditions"))


def health_check_up(ctx, block, where, topology):
    """v1beta1 MachineHealthCheck spec / topology machineHealthCheck -> v1beta2 checks/remediation layout."""
    prefix = where + "."
    for old, new in _HEALTH_CONDITIONS:
        _move_conditions(ctx, block, (old,), block, ("checks", new), prefix + old, True)
    move(block, ("nodeStartupTimeout",), ("checks", "nodeStartupTimeoutSeconds"),
         duration_up(ctx, prefix + "nodeStartupTimeout"))
    move(block, ("maxUnhealthy",), ("remediation", "triggerIf", "unhealthyLessThanOrEqualTo"))
    move(block, ("unhealthyRange",), ("remediation", "triggerIf", "unhealthyInRange"))
    template = block.pop("remediationTemplate", MISSING)
    if template is not MISSING:
        template = template_ref_up(ctx, template, prefix + "remediationTemplate")
        if template is not MISSING:
            set_in(block, ("remediation", "templateRef"), template)
    if topology:
        move(block, ("enable",), ("enabled",))


def health_check_down(ctx, block, where, topology):
    """v1beta2 checks/remediation layout -> v1beta1 flat layout (remediation.maxInFlight handled by the caller)."""
    prefix = where + "."
    for old, new in _HEALTH_CONDITIONS:
        _move_conditions(ctx, block, ("checks", new), block, (old,), prefix + "checks." + new, False)
    move(block, ("checks", "nodeStartupTimeoutSeconds"), ("nodeStartupTimeout",),
         duration_down(ctx, prefix + "checks.nodeStartupTimeoutSeconds"))
    move(block, ("remediation", "triggerIf", "unhealthyLessThanOrEqualTo"), ("maxUnhealthy",))
    move(block, ("remediation", "triggerIf", "unhealthyInRange"), ("unhealthyRange",))
    template = pop_in(block, ("remediation", "templateRef"))
    if template is not MISSING:
        template = template_ref_down(ctx, template, prefix + "remediation.templateRef")
        if template is not MISSING:
            block["remediationTemplate"] = template
    prune_empty(block, ("checks",), ("remediation", "triggerIf"), ("remediation",))
    if topology:
        move(block, ("enabled",), ("enable",))


_MHC_COUNTERS = ("expectedMachines", "currentHealthy", "remediationsAllowed")


def machinehealthcheck_up(ctx, obj, found, restored):
    spec = obj.get("spec")
    if isinstance(spec, dict):
        health_check_up(ctx, spec, "spec", topology=False)
    status = _status_of(obj)
    if status is not None:
        for key in _MHC_COUNTERS:
            value = restore_pointer_intent(status.pop(key, MISSING), found, get_in(restored, ("status", key)), 0)
            if value is not MISSING:
                status[key] = value
        status_up(status, ("conditions",), ("conditions",))
        _finish_status(obj)


def machinehealthcheck_down(ctx, obj):
    annotation = {}
    needs_annotation = False
    spec = obj.get("spec")
    if isinstance(spec, dict):
        health_check_down(ctx, spec, "spec", topology=False)
    status = _status_of(obj)
    if status is not None:
        for key in _MHC_COUNTERS:
            if key in status:
                set_in(annotation, ("status", key), status[key])
                needs_annotation = needs_annotation or status[key] == 0
        status_down(status, ("conditions",), ("conditions",))
        _finish_status(obj)
    return annotation if needs_annotation else None


# ---------------------------------------------------------------------------------------------
# MachineDrainRule: identical schema in both versions (no annotation)
# ---------------------------------------------------------------------------------------------


def machinedrainrule_up(ctx, obj, found, restored):
    return None


def machinedrainrule_down(ctx, obj):
    return MISSING
