"""Hypothesis strategies that generate objects valid against a CRD version's openAPIV3Schema.

`objects_from_crd(crd_doc, version)` walks the structural schema: types, enums, required,
minProperties, min/maxItems (capped small), min/maxLength, minimum/maximum, patterns, list-map
keys (unique), formats date-time / duration / int32 / int64, x-kubernetes-int-or-string and
x-kubernetes-preserve-unknown-fields. apiVersion/kind come from the CRD, metadata has a DNS name,
a namespace and a few labels. Semantics a schema cannot express (e.g. which group/kind a reference
points at, Go duration strings in untyped string fields) are supplied through `overrides`:
{glob over the dotted field path ("[]" = list item), e.g. "spec.*Timeout": strategy}.
"""
import datetime
import fnmatch
import json

from hypothesis import strategies as st

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions_common import seconds_to_duration
from testenv.goregex import to_python_regex

MAX_ITEMS = 2
MAX_STRING = 12
DNS_LABEL = st.from_regex(r"[a-z]([-a-z0-9]{0,6}[a-z0-9])?", fullmatch=True)
NAMESPACES = st.sampled_from(["default", "clusters-prod-01", "clusters"])
LABEL_KEYS = st.sampled_from(["app", "cluster.x-k8s.io/cluster-name", "tier", "cluster.x-k8s.io/control-plane"])
PLAIN_TEXT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=0, max_size=MAX_STRING)

# Go time.Duration.String() of whole seconds (what a Go client serialises; upstream fuzzes whole seconds).
GO_DURATIONS = st.integers(min_value=0, max_value=10 * 24 * 3600).map(seconds_to_duration)
DATE_TIMES = st.datetimes(min_value=datetime.datetime(2020, 1, 1), max_value=datetime.datetime(2030, 12, 31)).map(
    lambda moment: moment.replace(microsecond=0).isoformat() + "Z")
JSON_VALUES = st.recursive(
    st.one_of(st.booleans(), st.integers(-5, 5), PLAIN_TEXT),
    lambda children: st.one_of(st.lists(children, max_size=2), st.dictionaries(DNS_LABEL, children, max_size=2)),
    max_leaves=4,
)


def _overridden(overrides, path):
    for pattern, strategy in overrides:
        if fnmatch.fnmatchcase(path, pattern):
            return strategy
    return None


def _string(schema):
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    fmt = schema.get("format")
    if fmt == "date-time":
        return DATE_TIMES
    if fmt == "duration":
        return GO_DURATIONS
    min_length = schema.get("minLength", 0)
    max_length = schema.get("maxLength", 253)
    if "pattern" in schema:
        base = st.from_regex(to_python_regex(schema["pattern"]), fullmatch=True)
        return base.filter(lambda value: min_length <= len(value) <= min(max_length, 63))
    return st.text(
        alphabet="abcdefghijklmnopqrstuvwxyz0123456789-",
        min_size=min_length,
        max_size=max(min_length, min(max_length, MAX_STRING)),
    )


def _integer(schema):
    low = schema.get("minimum", 0)
    high = schema.get("maximum", max(low, 0) + 1000)
    if schema.get("exclusiveMinimum"):
        low += 1
    if schema.get("exclusiveMaximum"):
        high -= 1
    return st.integers(min_value=low, max_value=high)


def _object(schema, path, overrides):
    properties = schema.get("properties")
    additional = schema.get("additionalProperties")
    if properties is None:
        if isinstance(additional, dict):
            values = _schema(additional, path + ".*", overrides)
            return st.dictionaries(DNS_LABEL, values, min_size=schema.get("minProperties", 0), max_size=MAX_ITEMS)
        return st.dictionaries(LABEL_KEYS, PLAIN_TEXT, min_size=schema.get("minProperties", 0), max_size=MAX_ITEMS)
    required = set(schema.get("required") or ())
    child_path = (path + ".") if path else ""
    fixed = {key: _schema(sub, child_path + key, overrides) for key, sub in properties.items() if key in required}
    optional = {key: _schema(sub, child_path + key, overrides) for key, sub in properties.items() if key not in required}
    strategy = st.fixed_dictionaries(fixed, optional=optional)
    min_properties = schema.get("minProperties", 0)
    if min_properties:
        strategy = strategy.filter(lambda value: len(value) >= min_properties)
    return strategy


def _array(schema, path, overrides):
    items = _schema(schema.get("items") or {}, path + "[]", overrides)
    min_size = schema.get("minItems", 0)
    max_size = max(min_size, min(schema.get("maxItems", MAX_ITEMS), MAX_ITEMS))
    keys = schema.get("x-kubernetes-list-map-keys")
    if keys:
        return st.lists(items, min_size=min_size, max_size=max_size,
                        unique_by=lambda item: tuple(repr(item.get(key)) for key in keys))
    unique = schema.get("x-kubernetes-list-type") == "set" or schema.get("uniqueItems")
    if unique:
        return st.lists(items, min_size=min_size, max_size=max_size, unique_by=repr)
    return st.lists(items, min_size=min_size, max_size=max_size)


def _schema(schema, path, overrides):
    override = _overridden(overrides, path)
    if override is not None:
        return override
    if schema.get("x-kubernetes-int-or-string"):
        return st.one_of(st.integers(0, 10), st.from_regex(r"[1-9][0-9]?%", fullmatch=True))
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return JSON_VALUES
    kind = schema.get("type")
    if kind == "object":
        return _object(schema, path, overrides)
    if kind == "array":
        return _array(schema, path, overrides)
    if kind == "string":
        return _string(schema)
    if kind == "integer" or kind == "number":
        return _integer(schema)
    if kind == "boolean":
        return st.booleans()
    return JSON_VALUES


def metadata_strategy():
    return st.fixed_dictionaries(
        {"name": DNS_LABEL, "namespace": NAMESPACES},
        optional={"labels": st.dictionaries(LABEL_KEYS, PLAIN_TEXT, min_size=1, max_size=2)},
    )


def objects_from_crd(crd_doc, version, overrides=None):
    """Strategy for objects of crd_doc's kind in version, valid against that version's schema."""
    entry = [item for item in crd_doc["spec"]["versions"] if item["name"] == version]
    if not entry:
        raise ValueError("CRD %s has no version %s" % (crd_doc["metadata"]["name"], version))
    schema = entry[0]["schema"]["openAPIV3Schema"]
    override_list = sorted((overrides or {}).items(), key=lambda pair: -len(pair[0]))
    body = {
        key: _schema(sub, key, override_list)
        for key, sub in schema.get("properties", {}).items()
        if key not in ("apiVersion", "kind", "metadata")
    }
    required = set(schema.get("required") or ()) - {"apiVersion", "kind", "metadata"}
    fixed = {key: value for key, value in body.items() if key in required}
    optional = {key: value for key, value in body.items() if key not in required}
    header = {
        "apiVersion": st.just("%s/%s" % (crd_doc["spec"]["group"], version)),
        "kind": st.just(crd_doc["spec"]["names"]["kind"]),
        "metadata": metadata_strategy(),
    }
    header.update(fixed)
    return st.fixed_dictionaries(header, optional=optional)


proxy_json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2 ** 70), max_value=2 ** 70),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12)),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)),
    max_leaves=25,
)


def json_holes():
    """Raw JSON-ish text to put where a value goes: any depth (past the API server's), huge numbers, invalid
    UTF-8, duplicate keys, junk, size up to the proxy's body limit."""
    depth = st.integers(min_value=0, max_value=25000)
    return st.one_of(
        proxy_json_values.map(lambda value: json.dumps(value).encode()),
        depth.map(lambda levels: b"[" * levels + b"]" * levels),  # any depth, past the API server's too
        depth.map(lambda levels: b'{"a":' * levels + b"1" + b"}" * levels),
        depth.map(lambda levels: b"[" * levels),  # unbalanced
        st.integers(min_value=20, max_value=5000).map(lambda digits: b"9" * digits),  # huge numbers
        st.integers(min_value=1, max_value=400).map(lambda exponent: b"1e%d" % exponent),
        st.binary(min_size=1, max_size=40).map(lambda junk: b'"' + junk.replace(b'"', b"") + b'"'),  # invalid UTF-8
        st.just(b'{"k":1,"k":"cluster.x-k8s.io/v1beta2","k":[1]}'),  # duplicate keys
        st.binary(max_size=200),  # junk
        st.integers(min_value=1, max_value=3 * 1024 * 1024).map(lambda size: b'"' + b"x" * size + b'"'),  # size
    )
