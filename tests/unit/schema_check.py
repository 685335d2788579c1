"""Validate an object against a CRD version's openAPIV3Schema the way an API server would.

Two checks:
* `schema_errors`: types, required, enum, patterns, min/max, formats (date-time, int32/int64)
  via jsonschema (the Kubernetes x-kubernetes-* extensions are ignored by it except where noted);
* `pruned_fields`: every field a real API server would silently prune (a property not declared in
  the schema, outside x-kubernetes-preserve-unknown-fields) -- jsonschema cannot see those.
"""
import datetime
import functools
import glob
import os

import jsonschema
import yaml

from testenv import upstream

CAPI_CRD_DIR = upstream.CAPI_CRDS
HYPERSHIFT_CAPI_CRD_DIR = upstream.HYPERSHIFT_CAPI_CRDS  # read by test_capi_versions_properties.py

_FORMATS = jsonschema.FormatChecker(formats=())


@_FORMATS.checks("date-time", raises=ValueError)
def _is_date_time(value):
    if not isinstance(value, str):
        return True
    datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return "T" in value


@_FORMATS.checks("int32")
def _is_int32(value):
    return not isinstance(value, int) or -(2 ** 31) <= value < 2 ** 31


@_FORMATS.checks("int64")
def _is_int64(value):
    return not isinstance(value, int) or -(2 ** 63) <= value < 2 ** 63


@functools.lru_cache(maxsize=None)
def load_crd(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


@functools.lru_cache(maxsize=None)
def crd_by_kind(kind, crd_dir=CAPI_CRD_DIR):
    for path in sorted(glob.glob(os.path.join(crd_dir, "*.yaml"))):
        crd = load_crd(path)
        if crd["spec"]["names"]["kind"] == kind:
            return crd
    raise KeyError("no CRD for kind %s in %s" % (kind, crd_dir))


def version_schema(crd, version):
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            return entry["schema"]["openAPIV3Schema"]
    raise KeyError("CRD %s has no version %s" % (crd["metadata"]["name"], version))


def _where(path):
    return "".join("[%d]" % part if isinstance(part, int) else ".%s" % part for part in path).lstrip(".") or "<root>"


def schema_errors(obj, schema):
    validator = jsonschema.Draft4Validator(schema, format_checker=_FORMATS)
    return sorted("%s: %s" % (_where(error.absolute_path), error.message) for error in validator.iter_errors(obj))


def pruned_fields(value, schema, path=()):
    """Paths of fields a structural-schema API server would prune from value."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    found = []
    if isinstance(value, dict):
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        for key, child in value.items():
            if path == () and key in ("apiVersion", "kind", "metadata"):
                continue
            if properties is not None and key in properties:
                found.extend(pruned_fields(child, properties[key], path + (key,)))
            elif isinstance(additional, dict):
                found.extend(pruned_fields(child, additional, path + (key,)))
            elif additional is True:
                continue
            else:
                found.append(_where(path + (key,)))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for position, item in enumerate(value):
            found.extend(pruned_fields(item, schema["items"], path + (position,)))
    return found


def problems(obj, version=None, crd_dir=CAPI_CRD_DIR):
    """All schema errors and pruned fields of obj against its CRD version (from apiVersion unless given)."""
    version = version or obj["apiVersion"].split("/")[-1]
    schema = version_schema(crd_by_kind(obj["kind"], crd_dir), version)
    return schema_errors(obj, schema) + ["pruned by the API server: %s" % path for path in pruned_fields(obj, schema)]
