# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The one CAPI API-version conversion core: v1beta1 <-> v1beta2 for core cluster.x-k8s.io kinds.

Pure Python (no Ansible, no I/O), Python 3.9+, deterministic, never mutates its input. Follows
upstream CAPI v1.14 (core/webhooks/conversion, api/core/v1beta1/conversion.go), on plain JSON dicts, and held
equal to it by tests/integration/conversion (docs/architecture.md, "Conversion, measured against upstream"):

* Group-agnostic: a ``cluster.x-k8s.io`` object stays in that group and a
  ``cluster.hypershift.openshift.io`` object stays private; only the version changes.
* Down-conversion (v1beta2 -> v1beta1) needs the apiVersion of every contract reference
  (infrastructureRef, controlPlaneRef, bootstrap.configRef): from ``ref_versions`` or from the
  referenced CRD's contract label in ``crds``; never guessed.
* The ``cluster.x-k8s.io/conversion-data`` annotation carries what v1beta1 cannot hold (pointer
  intent of false/0, Machine minReadySeconds / phase Updating / status.failureDomain), with the same
  JSON paths upstream writes and reads, so either side can read the other's. It is written only
  when it carries information (so v1beta1 -> v1beta2 -> v1beta1 is the identity) and is consumed
  (deleted) by up-conversion.
* ClusterClass is refused (see ``_CLUSTERCLASS_REFUSAL``) rather than half-converted.

Known, upstream-by-design losses are listed in docs of ``convert_object``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe_object
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    DEFAULT_GROUP_MAP,
    GroupMap,
    copy_json,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions_cluster import (
    CLUSTER_FREE_FORM_PATHS,
    CLUSTER_ZERO_PATHS,
    cluster_down,
    cluster_up,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions_common import (
    CONTRACT_LABELS,
    CONVERSION_DATA_ANNOTATION,
    CORE_GROUP,
    MISSING,
    SUPPORTED_VERSIONS,
    V1BETA1,
    V1BETA2,
    ConversionContext,
    ConversionError,
    drop_unset_values,
    drop_zero_values,
    duration_to_seconds,
    kube_version_key,
    parse_go_duration,
    read_conversion_data,
    seconds_to_duration,
    write_conversion_data,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions_kinds import (
    V1BETA2_ZERO_PATHS,
    machine_down,
    machine_up,
    machinedeployment_down,
    machinedeployment_up,
    machinedrainrule_down,
    machinedrainrule_up,
    machinehealthcheck_down,
    machinehealthcheck_up,
    machinepool_down,
    machinepool_up,
    machineset_down,
    machineset_up,
)

__all__ = [
    "CONTRACT_LABELS",
    "CONVERSION_DATA_ANNOTATION",
    "CONVERTIBLE_KINDS",
    "ConversionError",
    "SUPPORTED_VERSIONS",
    "V1BETA1",
    "V1BETA2",
    "convert_object",
    "converts_group",
    "duration_to_seconds",
    "kube_version_key",
    "parse_go_duration",
    "seconds_to_duration",
]


class _KindRules(object):
    """How one kind converts: up(ctx, obj, found, restored), down(ctx, obj) -> annotation data."""

    def __init__(self, up, down, zero_paths, uses_annotation, free_form=()):
        self.up = up
        self.down = down
        self.zero_paths = zero_paths
        self.uses_annotation = uses_annotation
        self.free_form = free_form


_RULES = {
    "Cluster": _KindRules(cluster_up, cluster_down, CLUSTER_ZERO_PATHS, True, CLUSTER_FREE_FORM_PATHS),
    "Machine": _KindRules(machine_up, machine_down, V1BETA2_ZERO_PATHS["Machine"], True),
    "MachineSet": _KindRules(machineset_up, machineset_down, V1BETA2_ZERO_PATHS["MachineSet"], False),
    "MachineDeployment": _KindRules(machinedeployment_up, machinedeployment_down,
                                    V1BETA2_ZERO_PATHS["MachineDeployment"], True),
    "MachinePool": _KindRules(machinepool_up, machinepool_down, V1BETA2_ZERO_PATHS["MachinePool"], True),
    "MachineHealthCheck": _KindRules(machinehealthcheck_up, machinehealthcheck_down,
                                     V1BETA2_ZERO_PATHS["MachineHealthCheck"], True),
    "MachineDrainRule": _KindRules(machinedrainrule_up, machinedrainrule_down,
                                   V1BETA2_ZERO_PATHS["MachineDrainRule"], False),
}
CONVERTIBLE_KINDS = tuple(sorted(_RULES))

# Why ClusterClass is refused instead of converted: its conversion restores bool intent inside
# user-supplied JSON schemas (variables, status.variables[].definitions), patch selectors and
# template refs across ~40 paths; HyperShift never creates ClusterClasses (no topology-managed
# Clusters in HCP namespaces), and a half-converted ClusterClass would silently corrupt variables.
_CLUSTERCLASS_REFUSAL = (
    "ClusterClass conversion is not supported by this offline converter (its variables' JSON schemas and "
    "patches need upstream's full ruleset, and HyperShift does not create ClusterClasses); read the object in "
    "the wanted version through the API server (the CAPI conversion webhook converts it) instead"
)


def _split_api_version(obj, label):
    api_version = obj.get("apiVersion")
    if not isinstance(api_version, str) or api_version.count("/") != 1:
        raise ConversionError(
            "%s: apiVersion is %r, expected '<group>/<version>' of a CAPI core group (%s or its private twin); "
            "set apiVersion on the object" % (label, api_version, CORE_GROUP)
        )
    return api_version.split("/")


def converts_group(group, group_map=None):
    """True for the groups whose versions convert_object converts: the CAPI core group and its private twin.

    Every other CAPI group (infrastructure, bootstrap, control-plane, ipam, addons providers) converts as its own
    standard CRD says: through its own webhook, or not at all (strategy None). The private CRD render and the
    conversion shim both decide by this."""
    group_map = DEFAULT_GROUP_MAP if group_map is None else group_map
    return group == CORE_GROUP or (group_map.is_private(group) and group_map.to_standard(group) == CORE_GROUP)


def _check_core_group(group, group_map, label):
    if converts_group(group, group_map):
        return
    raise ConversionError(
        "%s: group %r is not the CAPI core group; only %s and %s objects are converted here (infrastructure, "
        "bootstrap and control-plane providers have their own conversions)"
        % (label, group, CORE_GROUP, group_map.to_private(CORE_GROUP))
    )


def _convert_single(obj, target_version, ref_versions, crds, group_map):
    label = describe_object(obj)
    group, source_version = _split_api_version(obj, label)
    _check_core_group(group, group_map, label)
    if source_version not in SUPPORTED_VERSIONS:
        raise ConversionError(
            "%s: source version %r is not supported; only %s objects can be converted (convert older versions "
            "with CAPI before using this tool)" % (label, source_version, " and ".join(SUPPORTED_VERSIONS))
        )
    kind = obj.get("kind")
    if kind == "ClusterClass":
        raise ConversionError("%s: %s" % (label, _CLUSTERCLASS_REFUSAL))
    rules = _RULES.get(kind)
    if rules is None:
        raise ConversionError(
            "%s: kind %r has no v1beta1 <-> v1beta2 rules here; convertible kinds are %s (and their List forms)"
            % (label, kind, ", ".join(CONVERTIBLE_KINDS))
        )
    converted = copy_json(obj)
    if source_version == target_version:
        return converted
    ctx = ConversionContext(obj, target_version, ref_versions, crds, group_map)
    converted["apiVersion"] = "%s/%s" % (group, target_version)
    if target_version == V1BETA2:
        found, restored = read_conversion_data(ctx, converted) if rules.uses_annotation else (False, {})
        # upstream decodes an absent spec or status as the zero struct and converts it like any other: the
        # annotation's intent and the always-written counters apply to it too
        absent = [key for key in ("spec", "status") if converted.get(key) is None]  # null: what Go decodes as absent
        for key in absent:
            converted[key] = {}
        rules.up(ctx, converted, found, restored)
        for key in ("spec", "status"):
            drop_unset_values(converted.get(key), rules.free_form, (key,))
        drop_zero_values(converted, rules.zero_paths)
        for key in absent:
            if converted.get(key) == {}:
                del converted[key]
    else:
        annotation = rules.down(ctx, converted)
        if annotation is not MISSING:  # MISSING: the kind leaves the annotation alone (MachineSet, MachineDrainRule)
            write_conversion_data(converted, annotation)
    return converted


def _convert_list(obj, target_version, ref_versions, crds, group_map):
    label = describe_object(obj)
    items = obj.get("items")
    if not isinstance(items, list):
        raise ConversionError("%s: a List needs an items list, got %r; pass a List object or a single object"
                              % (label, items))
    list_kind = obj.get("kind")
    list_api_version = obj.get("apiVersion")
    converted = {key: copy_json(value) for key, value in obj.items() if key != "items"}
    converted_items = []
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise ConversionError("%s: items[%d] is %r, expected an object" % (label, position, item))
        view = item
        if "kind" not in item or "apiVersion" not in item:  # typed lists may omit them on items
            view = dict(item)
            view.setdefault("kind", list_kind[: -len("List")])
            view.setdefault("apiVersion", list_api_version)
        try:
            result = _convert_single(view, target_version, ref_versions, crds, group_map)
        except ConversionError as exc:
            raise ConversionError("%s items[%d]: %s" % (label, position, exc))
        for key in ("kind", "apiVersion"):
            if key not in item:
                result.pop(key, None)
        converted_items.append(result)
    converted["items"] = converted_items
    if isinstance(list_api_version, str) and list_api_version.count("/") == 1:
        group, _version = list_api_version.split("/")
        if group != "" and list_kind != "List":
            converted["apiVersion"] = "%s/%s" % (group, target_version)
    return converted


def convert_object(obj, target_version, ref_versions=None, crds=None, group_map=None):
    """Return a converted copy of a CAPI core object (or List) in target_version ('v1beta1' or 'v1beta2').

    obj: Cluster, Machine, MachineSet, MachineDeployment, MachineHealthCheck, MachinePool or
    MachineDrainRule (or a <Kind>List / v1 List of them) in group cluster.x-k8s.io or
    cluster.hypershift.openshift.io; the group is kept. Same version -> an unchanged copy.
    ref_versions: {"<group>/<Kind>": "<version>"} for contract references (either group spelling).
    crds: CRD dicts; the referenced kind's version comes from its cluster.x-k8s.io/v1beta2 (then
    /v1beta1) contract label, highest kube-aware version of the "_"-separated value.
    group_map: translate.groups.GroupMap used to match private/standard spellings (default: DEFAULT_GROUP_MAP).

    Lossy by upstream design (v1beta1 -> v1beta2 -> v1beta1): topology.rolloutAfter, variables
    definitionFrom, MachineDeployment progressDeadlineSeconds/revisionHistoryLimit, reference
    namespace (set to the object's namespace) / uid / resourceVersion / fieldPath, nodeRef fields but
    name, sub-second durations (and duration spelling: '5m' comes back as '5m0s'), "" strings and
    false/0 pointer values (become unset), zero values v1beta2 rejects (omitted, as Go's omitempty), null and []
    (v1beta2 holds neither: its slices are omitempty, its times omitzero; e.g. clusterNetwork cidrBlocks).
    """
    if target_version not in SUPPORTED_VERSIONS:
        raise ConversionError("target_version must be one of %s, got %r" % (", ".join(SUPPORTED_VERSIONS), target_version))
    if not isinstance(obj, dict):
        raise ConversionError("expected a Kubernetes object (dict), got %s %r" % (type(obj).__name__, obj))
    if ref_versions is not None and not hasattr(ref_versions, "get"):
        raise ConversionError("ref_versions must be a mapping '<group>/<Kind>' -> '<version>', got %r" % (ref_versions,))
    if crds is not None and not isinstance(crds, (list, tuple)):
        raise ConversionError("crds must be a list of CustomResourceDefinition objects, got %s" % type(crds).__name__)
    if group_map is None:
        group_map = DEFAULT_GROUP_MAP
    elif not isinstance(group_map, GroupMap):
        raise ConversionError("group_map must be a translate.groups.GroupMap, got %s" % type(group_map).__name__)
    kind = obj.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in obj:
        return _convert_list(obj, target_version, ref_versions, crds, group_map)
    return _convert_single(obj, target_version, ref_versions, crds, group_map)
