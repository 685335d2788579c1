# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Building blocks of the CAPI v1beta1 <-> v1beta2 conversion (see versions.py for the API).

Pure Python (no Ansible, no I/O), Python 3.9+. Everything here works on plain JSON dicts: paths
are tuples of keys, absent keys stay absent, and helpers never touch the caller's input (the
converter deep-copies first and then restructures its own copy in place).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe_object
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    DEFAULT_GROUP_MAP,
    CapiTranslationError,
)

V1BETA1 = "v1beta1"
V1BETA2 = "v1beta2"
SUPPORTED_VERSIONS = (V1BETA1, V1BETA2)
CORE_GROUP = "cluster.x-k8s.io"
# Annotation keys are never group-translated: CAPI reads this literal key (cluster-api util/conversion DataAnnotation).
CONVERSION_DATA_ANNOTATION = "cluster.x-k8s.io/conversion-data"
# Contract labels on provider CRDs, read with the literal core-group prefix (cluster-api internal/contract/version.go).
CONTRACT_LABELS = ("cluster.x-k8s.io/v1beta2", "cluster.x-k8s.io/v1beta1")

INT32_MAX = 2147483647
INT32_MIN = -2147483648

MISSING = object()


class ConversionError(CapiTranslationError):
    """An object that cannot be converted between CAPI API versions; the message says why and what to do."""


def is_integer(value):
    """True for JSON integers, including int subclasses (Ansible 2.19 tags values it templated); never for bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def record_paused_intent(spec, annotation):
    """Down-conversion: keep spec.paused in the conversion-data record; True when only the record holds the intent.

    v1beta1's bool cannot tell an explicit false from unset (v1beta2's *bool can), so an explicit false needs the
    annotation for a lossless round trip (upstream Convert_bool_To_Pointer_bool).
    """
    if "paused" not in spec:
        return False
    set_in(annotation, ("spec", "paused"), spec["paused"])
    return spec["paused"] is False


def paused_intent_down(obj):
    """(its spec, or None when it has none; the conversion-data record; whether the record is needed) at the start of
    a down-conversion of a kind with spec.paused (record_paused_intent)."""
    annotation = {}
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return None, annotation, False
    return spec, annotation, record_paused_intent(spec, annotation)


# ---------------------------------------------------------------------------------------------
# Path helpers on nested dicts
# ---------------------------------------------------------------------------------------------


def get_in(node, path):
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return MISSING
        node = node[key]
    return node


def pop_in(node, path):
    """Remove and return the value at path (MISSING if absent); parents are left in place."""
    parent = get_in(node, path[:-1])
    if not isinstance(parent, dict):
        return MISSING
    return parent.pop(path[-1], MISSING)


def set_in(node, path, value):
    """Set path to value, creating intermediate dicts; a non-dict in the way is replaced only if absent."""
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[path[-1]] = value


def move(node, source, target, transform=None):
    """Move the value at source to target (optionally transformed); absent stays absent."""
    value = pop_in(node, source)
    if value is MISSING:
        return
    if transform is not None:
        value = transform(value)
        if value is MISSING:
            return
    set_in(node, target, value)


def prune_empty(node, *paths):
    """Delete each path whose value is an empty dict, in the order given (children before parents)."""
    for path in paths:
        value = get_in(node, path)
        if isinstance(value, dict) and not value:
            pop_in(node, path)


def is_go_zero(value):
    """True for what a Go client decodes as the zero value of a struct field: absent, null, "", 0, false, or an
    object all of whose fields are such (a nested struct; a JSON list, even empty, is a non-nil slice)."""
    if value is None or value is False or value == "" or (is_integer(value) and value == 0):
        return True
    return isinstance(value, dict) and all(is_go_zero(child) for child in value.values())


def drop_go_zero(node, *paths):
    """Down-conversion of a v1beta2 struct to a v1beta1 pointer: upstream leaves the pointer nil when the struct is
    zero (reflect.DeepEqual with its zero value). Paths are checked in the order given (children first)."""
    for path in paths:
        value = get_in(node, path)
        if value is not MISSING and is_go_zero(value):
            pop_in(node, path)


def _drop_zero_at(node, keys, index):
    key = keys[index]
    if key == "[]":
        if isinstance(node, list):
            for item in node:
                _drop_zero_at(item, keys, index + 1)
        return
    if not isinstance(node, dict) or key not in node:
        return
    if index < len(keys) - 1:
        _drop_zero_at(node[key], keys, index + 1)
        return
    value = node[key]
    if value == "" or value == {} or value == [] or (is_integer(value) and value == 0):
        del node[key]


def drop_zero_values(obj, paths):
    """Drop "", 0, {} and [] at the given dotted paths ("[]" = every list item), deepest first.

    Mirrors Go's omitempty/omitzero when a v1beta1 value lands in a v1beta2 field whose schema
    rejects the zero value (minLength/minItems/minProperties/minimum >= 1).
    """
    for keys in paths:
        _drop_zero_at(obj, keys, 0)


def _is_unset(value):
    return value is None or value == []


def drop_unset_values(node, free_form=(), path=()):
    """Up-conversion: drop every null and [] under node (at path), outside the free-form JSON at the free_form key
    tuples ("[]" = every list item).

    v1beta1 writes both for fields without omitempty (clusterNetwork cidrBlocks; a zero metav1.Time is null); every
    v1beta2 pointer, slice and map is omitempty and every time omitzero, so upstream's answer never holds either.
    Parents stay: Go keeps a non-nil pointer, and a struct whose slice was empty but not nil, which upstream writes
    as {}.
    """
    if isinstance(node, dict):
        for key in [key for key, value in node.items() if _is_unset(value) and path + (key,) not in free_form]:
            del node[key]
        for key, value in node.items():
            if path + (key,) not in free_form:
                drop_unset_values(value, free_form, path + (key,))
    elif isinstance(node, list):
        for item in node:
            drop_unset_values(item, free_form, path + ("[]",))


def split_paths(dotted_paths):
    """Dotted path strings -> key tuples sorted deepest first (so emptied parents are dropped too)."""
    tuples = []
    for dotted in dotted_paths:
        keys = []
        for part in dotted.split("."):
            if part.endswith("[]"):
                keys.extend((part[:-2], "[]"))
            else:
                keys.append(part)
        tuples.append(tuple(keys))
    return tuple(sorted(tuples, key=lambda keys: (-len(keys), keys)))


# ---------------------------------------------------------------------------------------------
# Durations: metav1.Duration strings (Go time.ParseDuration syntax) <-> int32 seconds
# ---------------------------------------------------------------------------------------------

_NANOS_PER_UNIT = {
    "ns": 1,
    "us": 1000,
    "\u00b5s": 1000,
    "\u03bcs": 1000,
    "ms": 1000 * 1000,
    "s": 1000 * 1000 * 1000,
    "m": 60 * 1000 * 1000 * 1000,
    "h": 3600 * 1000 * 1000 * 1000,
}
_DURATION_PART = re.compile("([0-9]*)(?:\\.([0-9]*))?(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_INT64_MAX = 9223372036854775807


def parse_go_duration(text):
    """Nanoseconds of a Go duration string ('10s', '1h2m3.5s', '-300ms', '0'); ValueError if invalid."""
    if not isinstance(text, str) or not text:
        raise ValueError("a duration must be a non-empty string like '10s' or '5m0s'")
    sign = 1
    rest = text
    if rest[0] in "+-":
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise ValueError("invalid duration %r" % text)
    total = 0
    position = 0
    while position < len(rest):
        match = _DURATION_PART.match(rest, position)
        if match is None or (not match.group(1) and not match.group(2)):
            raise ValueError("invalid duration %r (Go syntax: a sequence of <number><unit>, units ns us ms s m h)" % text)
        whole, fraction, unit = match.group(1) or "0", match.group(2) or "", match.group(3)
        scale = _NANOS_PER_UNIT[unit]
        total += int(whole) * scale
        if fraction:
            total += int(fraction) * scale // (10 ** len(fraction))
        position = match.end()
    if total > _INT64_MAX + (1 if sign < 0 else 0):
        raise ValueError("invalid duration %r: larger than Go's time.Duration range" % text)
    return sign * total


def duration_to_seconds(text):
    """Whole seconds of a Go duration, truncated toward zero and capped to int32 (upstream ConvertToSeconds)."""
    nanos = parse_go_duration(text)
    seconds = abs(nanos) // 1000000000
    seconds = -seconds if nanos < 0 else seconds
    return max(INT32_MIN, min(INT32_MAX, seconds))


def seconds_to_duration(seconds):
    """Go's time.Duration.String() of whole seconds: 10 -> '10s', 300 -> '5m0s', 3600 -> '1h0m0s'."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    remaining = abs(seconds)
    hours, remaining = divmod(remaining, 3600)
    minutes, secs = divmod(remaining, 60)
    if hours:
        return "%s%dh%dm%ds" % (sign, hours, minutes, secs)
    if minutes:
        return "%s%dm%ds" % (sign, minutes, secs)
    return "%s%ds" % (sign, secs)


# ---------------------------------------------------------------------------------------------
# Kube-aware version ordering (k8s.io/apimachinery version.CompareKubeAwareVersionStrings)
# ---------------------------------------------------------------------------------------------

_KUBE_VERSION = re.compile(r"^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$")
_STAGE_RANK = {"alpha": 0, "beta": 1, None: 2}


def kube_version_key(version):
    """Sort key: v1 > v1beta2 > v1beta1 > v1alpha3; non-kube-like strings sort below, lexicographically."""
    match = _KUBE_VERSION.match(version)
    if match is None:
        return (0, 0, 0, 0, version)
    major, stage, minor = match.groups()
    return (1, int(major), _STAGE_RANK[stage], int(minor or 0), "")


def latest_contract_version(label_value):
    versions = [part for part in label_value.split("_") if part]
    if not versions:
        return None
    return max(versions, key=kube_version_key)


# ---------------------------------------------------------------------------------------------
# Per-object conversion context: error messages, ref version lookup, conversion-data annotation
# ---------------------------------------------------------------------------------------------


class ConversionContext(object):
    """Everything one object's conversion needs besides its own fields."""

    def __init__(self, obj, target_version, ref_versions=None, crds=None, group_map=None):
        self.label = describe_object(obj)
        metadata = obj.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        namespace = metadata.get("namespace")
        self.namespace = namespace if isinstance(namespace, str) else ""
        self.target_version = target_version
        self.ref_versions = ref_versions
        self.crds = crds
        self.group_map = group_map if group_map is not None else DEFAULT_GROUP_MAP
        self._crd_index = None

    def error(self, where, problem, hint):
        return ConversionError("%s: cannot convert %s to %s: %s; %s" % (self.label, where, self.target_version, problem, hint))

    # -- contract reference versions ------------------------------------------------------------

    def _group_spellings(self, group):
        spellings = [group]
        if group:
            for other in (self.group_map.to_standard(group), self.group_map.to_private(group)):
                if other not in spellings:
                    spellings.append(other)
        return spellings

    def _version_from_ref_versions(self, group, kind, where):
        if not self.ref_versions:
            return None
        for spelling in self._group_spellings(group):
            version = self.ref_versions.get("%s/%s" % (spelling, kind))
            if version is None:
                continue
            if not isinstance(version, str) or not version or "/" in version:
                raise self.error(
                    where,
                    "ref_versions['%s/%s'] is %r, expected a bare API version such as 'v1beta2'" % (spelling, kind, version),
                    "fix that ref_versions entry",
                )
            return version
        return None

    def _crd_for(self, group, kind, where):
        if self._crd_index is None:
            index = {}
            for position, crd in enumerate(self.crds or ()):
                spec = crd.get("spec") if isinstance(crd, dict) else None
                names = spec.get("names") if isinstance(spec, dict) else None
                if not isinstance(names, dict):
                    raise self.error(
                        where, "crds[%d] is not a CustomResourceDefinition (no spec.group/spec.names.kind)" % position,
                        "pass CRD objects as returned by the API server or read from their YAML",
                    )
                index.setdefault((spec.get("group"), names.get("kind")), crd)
            self._crd_index = index
        for spelling in self._group_spellings(group):
            crd = self._crd_index.get((spelling, kind))
            if crd is not None:
                return crd
        return None

    def _version_from_crds(self, group, kind, where):
        if not self.crds:
            return None
        crd = self._crd_for(group, kind, where)
        if crd is None:
            return None
        labels = (crd.get("metadata") or {}).get("labels") or {}
        for label in CONTRACT_LABELS:
            value = labels.get(label)
            if isinstance(value, str) and value:
                version = latest_contract_version(value)
                if version:
                    return version
        crd_name = (crd.get("metadata") or {}).get("name") or "%s CRD" % kind
        raise self.error(
            where,
            "CRD %s (group %s, kind %s) has no contract label %s or %s, so its served version for CAPI is unknown"
            % (crd_name, group, kind, CONTRACT_LABELS[0], CONTRACT_LABELS[1]),
            "label the CRD as its provider does (e.g. %s: v1beta2) or pass ref_versions={'%s/%s': '<version>'}"
            % (CONTRACT_LABELS[1], group, kind),
        )

    def contract_api_version(self, group, kind, where):
        """apiVersion '<group>/<version>' for a v1beta2 contract reference; never guessed."""
        version = self._version_from_ref_versions(group, kind, where)
        if version is None:
            version = self._version_from_crds(group, kind, where)
        if version is None:
            raise self.error(
                where,
                "the reference to group %r kind %r needs that kind's API version, which v1beta2 does not record"
                % (group, kind),
                "pass ref_versions={'%s/%s': '<version>'} or crds=[<its CRD with the %s or %s contract label>]"
                % (group, kind, CONTRACT_LABELS[0], CONTRACT_LABELS[1]),
            )
        return "%s/%s" % (group, version) if group else version


def read_conversion_data(ctx, obj):
    """Consume the conversion-data annotation: (True, data) if present (annotation removed), else (False, {})."""
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict) or CONVERSION_DATA_ANNOTATION not in annotations:
        return False, {}
    raw = annotations.pop(CONVERSION_DATA_ANNOTATION)
    if not annotations:
        del metadata["annotations"]
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except ValueError as exc:
        raise ctx.error(
            "metadata.annotations[%s]" % CONVERSION_DATA_ANNOTATION, "the value is not valid JSON (%s)" % exc,
            "remove the annotation (it is only a cache of v1beta2-only values) or restore its original value",
        )
    if not isinstance(data, dict):
        raise ctx.error(
            "metadata.annotations[%s]" % CONVERSION_DATA_ANNOTATION, "the value is %r, expected a JSON object" % (raw,),
            "remove the annotation or restore its original value",
        )
    return True, data


def write_conversion_data(obj, data):
    """Replace the conversion-data annotation with data (compact, sorted JSON), or remove it when data is None."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        if data is None:
            return
        metadata = {}
        obj["metadata"] = metadata
    annotations = metadata.get("annotations")
    if data is None:
        if isinstance(annotations, dict) and CONVERSION_DATA_ANNOTATION in annotations:
            del annotations[CONVERSION_DATA_ANNOTATION]
            if not annotations:
                del metadata["annotations"]
        return
    if not isinstance(annotations, dict):
        annotations = {}
        metadata["annotations"] = annotations
    annotations[CONVERSION_DATA_ANNOTATION] = json.dumps(data, sort_keys=True, separators=(",", ":"))


def restore_pointer_intent(spoke_value, found, restored_value, zero):
    """Upstream Convert_bool_To_Pointer_bool / Convert_int32_To_Pointer_int32.

    A v1beta1 zero (false/0, or absent) becomes an explicit zero in v1beta2 only when the
    annotation recorded an explicit zero; otherwise the field is unset. Non-zero values map as is.
    """
    if spoke_value is not MISSING and spoke_value != zero:
        return spoke_value
    if found and restored_value is not MISSING and restored_value is not None and restored_value == zero:
        return zero
    return MISSING
