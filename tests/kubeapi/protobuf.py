"""Decoding of protobuf request bodies (kubectl's typed commands send application/vnd.kubernetes.protobuf).

`kubectl create deployment|configmap|secret|namespace|serviceaccount|service|role|...`, `create token`,
`auth can-i`, `auth whoami` POST their objects as protobuf (runtime.Unknown envelope, magic "k8s\\0")
while accepting JSON answers. This decodes them into the JSON-equivalent dicts, driven by the message
layouts in protobuf_types.json (extracted from the descriptors compiled into kubectl, see
protobuf_gen.py). Like the Go decoder, scalar fields at their zero value are "unset" (omitempty), except
the pointer fields listed in POINTER_FIELDS; well-known types (Time, Quantity, IntOrString,
RawExtension, FieldsV1) become their JSON forms. Kinds outside the table get 415 like an unknown format.
"""
import base64
import datetime
import json
import os
import struct

from . import errors

MAGIC = b"k8s\x00"
TYPES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "protobuf_types.json")
# descriptor field types
DOUBLE, FLOAT, INT64, UINT64, INT32, BOOL, STRING, MESSAGE, BYTES, UINT32 = 1, 2, 3, 4, 5, 8, 9, 11, 12, 13
# Go pointer fields (*int32, *bool, ...): present means set, even at the zero value
POINTER_FIELDS = frozenset((
    "replicas", "immutable", "automountServiceAccountToken", "expirationSeconds", "revisionHistoryLimit",
    "progressDeadlineSeconds", "terminationGracePeriodSeconds", "activeDeadlineSeconds", "enableServiceLinks",
    "shareProcessNamespace", "hostUsers", "setHostnameAsFQDN", "allocateLoadBalancerNodePorts", "priority",
    "leaseDurationSeconds", "leaseTransitions", "runAsUser", "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem",
    "privileged", "allowPrivilegeEscalation", "defaultMode", "optional", "gracePeriodSeconds", "orphanDependents",
    "controller", "blockOwnerDeletion", "fsGroup", "deletionGracePeriodSeconds", "count", "seconds",
    "timeoutSeconds", "procMount", "mode", "sizeLimit"))
_TYPES = {}


def _varint(data, pos):
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def fields(data):
    """[(field_number, value)] of one message: varints as int, length-delimited and fixed as bytes."""
    pos, out = 0, []
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated field %d" % number)
            value, pos = data[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError("unsupported wire type %d" % wire)
        out.append((number, value))
    return out


def types():
    """{"kinds": {apiVersion/Kind: message},
        "messages": {message: {number: [number, json name, type, repeated, type name, inline]}}}."""
    if not _TYPES:
        with open(TYPES_FILE, encoding="utf-8") as handle:
            loaded = json.load(handle)
        _TYPES["kinds"] = loaded["kinds"]
        _TYPES["messages"] = {name: {f[0]: f for f in described} for name, described in loaded["messages"].items()}
    return _TYPES


def is_map_entry(type_name):
    """Whether a message type is the synthetic entry of a protobuf map (a nested "<Field>Entry" type)."""
    if not type_name or not type_name.endswith("Entry"):
        return False
    parent = type_name.rsplit(".", 2)[-2]
    entry = types()["messages"].get(type_name)
    return parent[:1].isupper() and entry is not None and set(entry) == {1, 2}


def _signed(value):
    """int32/int64 varints are sign-extended to 64 bits."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(kind, value):
    if kind == STRING:
        return value.decode("utf-8")
    if kind == BYTES:
        return base64.b64encode(value).decode("ascii")
    if kind == BOOL:
        return bool(value)
    if kind in (INT32, INT64):
        return _signed(value)
    if kind == DOUBLE:
        return struct.unpack("<d", value)[0]
    if kind == FLOAT:
        return struct.unpack("<f", value)[0]
    return value


def _time(message):
    parts = dict(fields(message))
    seconds = _signed(parts.get(1, 0))
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    nanos = parts.get(2, 0)
    if nanos:
        return moment.strftime("%Y-%m-%dT%H:%M:%S") + ".%06dZ" % (nanos // 1000)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _well_known(type_name, value):
    """JSON form of the apimachinery types that marshal as scalars; None when not one of them."""
    short = type_name.rsplit(".", 2)
    tail = ".".join(short[-2:])
    if tail in ("intstr.IntOrString",):
        parts = dict(fields(value))
        return parts.get(3, b"").decode("utf-8") if parts.get(1) == 1 else _signed(parts.get(2, 0))
    if tail == "resource.Quantity":
        return dict(fields(value)).get(1, b"").decode("utf-8")
    if type_name.endswith("meta.v1.Time") or type_name.endswith("meta.v1.MicroTime"):
        return _time(value) if value else None
    if type_name.endswith("runtime.RawExtension") or type_name.endswith("meta.v1.FieldsV1"):
        raw = dict(fields(value)).get(1, b"")
        return json.loads(raw) if raw else None
    if type_name.endswith("meta.v1.Duration"):
        return "%ds" % (_signed(dict(fields(value)).get(1, 0)) // 1000000000)
    return _NOT_WELL_KNOWN


_NOT_WELL_KNOWN = object()


def decode_message(data, type_name):
    """The JSON-equivalent dict of one message of type `type_name` (fully qualified, no leading dot)."""
    layout = types()["messages"].get(type_name)
    if layout is None:
        raise ValueError("no layout for %s" % type_name)
    result = {}
    for number, value in fields(data):
        described = layout.get(number)
        if described is None:
            continue  # unknown fields are dropped, as the Go unmarshaller skips them
        _number, name, kind, repeated, nested, inline = described
        if kind == MESSAGE and inline:
            result.update(decode_message(value, nested))   # `json:",inline"` embedded struct
            continue
        if kind == MESSAGE:
            sub = types()["messages"].get(nested)
            if is_map_entry(nested):
                key_kind, value_described = sub[1][2], sub[2]
                entry = dict((n, v) for n, v in fields(value))
                key = _scalar(key_kind, entry.get(1, b"" if key_kind in (STRING, BYTES) else 0))
                item = entry.get(2, b"" if value_described[2] in (STRING, BYTES, MESSAGE) else 0)
                result.setdefault(name, {})[key] = _decode_value(value_described[2], value_described[4], item)
                continue
            decoded = _decode_value(kind, nested, value)
        elif repeated and kind != STRING and kind != BYTES and isinstance(value, bytes) and kind not in (
                DOUBLE, FLOAT):
            packed, pos = [], 0  # packed repeated varints
            while pos < len(value):
                item, pos = _varint(value, pos)
                packed.append(_scalar(kind, item))
            result.setdefault(name, []).extend(packed)
            continue
        else:
            decoded = _scalar(kind, value)
            if not repeated and not decoded and decoded is not None and name not in POINTER_FIELDS:
                continue  # zero values of non-pointer fields are "omitted"
        if repeated:
            result.setdefault(name, []).append(decoded)
        else:
            result[name] = decoded
    return result


def _decode_value(kind, type_name, value):
    if kind != MESSAGE:
        return _scalar(kind, value)
    known = _well_known(type_name, value)
    if known is not _NOT_WELL_KNOWN:
        return known
    return decode_message(value, type_name)


def decode(data):
    """The JSON-equivalent dict of a protobuf-encoded request body, or ApiError 400/415."""
    if not data.startswith(MAGIC):
        raise errors.bad_request("provided data does not appear to be a protobuf message, expected prefix "
                                 "[107 56 115 0]")
    try:
        envelope = dict(fields(data[len(MAGIC):]))
        type_meta = dict(fields(envelope.get(1, b"")))
        api_version = type_meta.get(1, b"").decode("utf-8")
        kind = type_meta.get(2, b"").decode("utf-8")
        message = types()["kinds"].get("%s/%s" % (api_version, kind))
        if message is None:
            raise errors.unsupported_media_type("application/vnd.kubernetes.protobuf",
                                                ("application/json", "application/yaml"))
        body = decode_message(envelope.get(2, b""), message)
    except (ValueError, UnicodeDecodeError, KeyError, IndexError, struct.error) as exc:
        raise errors.bad_request("unable to decode protobuf body: %s" % exc)
    body["apiVersion"] = api_version
    body["kind"] = kind
    return body


# --- strict field validation of built-ins -------------------------------------------------------------
_FREE_FORM = ("intstr.IntOrString", "resource.Quantity", "meta.v1.Time", "meta.v1.MicroTime",
              "runtime.RawExtension", "meta.v1.FieldsV1", "meta.v1.Duration")


def message_for(api_version, kind):
    """The message name of a built-in kind, or None when the table does not describe it."""
    return types()["kinds"].get("%s/%s" % (api_version, kind))


def unknown_json_fields(obj, message):
    """Paths of fields the Go type does not declare, worded like the strict JSON decoder
    ("spec.template.spec.containers[0].foo"); apiVersion and kind are TypeMeta at the top."""
    found = []
    _unknown(obj, message, "", found, top=True)
    return found


def _json_fields(message):
    """{json name: field} of a message, with the fields of inline-embedded structs lifted up."""
    by_name = {}
    for described in types()["messages"].get(message, {}).values():
        if described[5]:
            by_name.update(_json_fields(described[4]))
        else:
            by_name[described[1]] = described
    return by_name


def json_field_names(message):
    """The JSON field names of a message (inline-embedded structs' fields included)."""
    return set(_json_fields(message))


def _unknown(value, message, prefix, found, top=False):
    if not isinstance(value, dict) or message.endswith(_FREE_FORM):
        return
    by_name = _json_fields(message)
    for key, item in value.items():
        path = prefix + "." + key if prefix else key
        described = by_name.get(key)
        if described is None:
            if not (top and key in ("apiVersion", "kind")):
                found.append(path)
            continue
        kind, repeated, nested = described[2], described[3], described[4]
        if kind != MESSAGE or item is None:
            continue
        entry = types()["messages"].get(nested)
        if is_map_entry(nested):
            if entry[2][2] == MESSAGE and isinstance(item, dict):
                for map_key, map_value in item.items():
                    _unknown(map_value, entry[2][4], "%s.%s" % (path, map_key), found)
            continue
        if repeated and isinstance(item, list):
            for index, element in enumerate(item):
                _unknown(element, nested, "%s[%d]" % (path, index), found)
        else:
            _unknown(item, nested, path, found)


def prune_unknown(obj, message):
    """obj without the fields the Go type does not declare (what decoding into the struct drops);
    obj itself when it has none."""
    if not unknown_json_fields(obj, message):
        return obj
    return _pruned(obj, message, top=True)


def _pruned(value, message, top=False):
    if not isinstance(value, dict) or message.endswith(_FREE_FORM):
        return value
    by_name = _json_fields(message)
    out = {}
    for key, item in value.items():
        described = by_name.get(key)
        if described is None:
            if top and key in ("apiVersion", "kind"):
                out[key] = item
            continue
        kind, repeated, nested = described[2], described[3], described[4]
        entry = types()["messages"].get(nested) if kind == MESSAGE else None
        if kind != MESSAGE or item is None:
            out[key] = item
        elif is_map_entry(nested):
            out[key] = {k: _pruned(v, entry[2][4]) for k, v in item.items()} \
                if entry[2][2] == MESSAGE and isinstance(item, dict) else item
        elif repeated and isinstance(item, list):
            out[key] = [_pruned(element, nested) for element in item]
        else:
            out[key] = _pruned(item, nested)
    return out


# --- type checking of built-in bodies (what decoding JSON into the Go struct refuses) ---------------------
_GO_SCALARS = {STRING: "string", BOOL: "bool", INT32: "int32", INT64: "int64", UINT32: "uint32", UINT64: "uint64",
               DOUBLE: "float64", FLOAT: "float32", BYTES: "[]uint8"}
_INT_RANGES = {INT32: (-2 ** 31, 2 ** 31 - 1), INT64: (-2 ** 63, 2 ** 63 - 1), UINT32: (0, 2 ** 32 - 1),
               UINT64: (0, 2 ** 64 - 1)}


def _json_kind(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _go_type(described):
    kind, repeated, nested = described[2], described[3], described[4]
    if kind == MESSAGE:
        entry = types()["messages"].get(nested)
        if is_map_entry(nested):
            return "map[string]" + _go_type(entry[2])
        element = nested.rsplit(".", 2)
        element = "%s.%s" % (element[-2], element[-1])
    else:
        element = _GO_SCALARS.get(kind, "string")
    return "[]" + element if repeated else element


def type_error(obj, message):
    """The Go decoder's first type error for a built-in body ("json: cannot unmarshal string into Go struct
    field DeploymentSpec.spec.replicas of type int32"), or None when every value fits its field."""
    return _type_error(obj, message, [])


def _type_error(value, message, path):
    if message.endswith(_FREE_FORM):
        return _free_form_error(value, message)
    struct = message.rsplit(".", 1)[1]
    for key, item in value.items():
        described = _json_fields(message).get(key)
        if described is None or item is None:
            continue
        found = _field_error(item, described, struct, path + [key])
        if found:
            return found
    return None


def _mismatch(value, struct, path, go_type):
    return "json: cannot unmarshal %s into Go struct field %s.%s of type %s" % (
        _json_kind(value), struct, ".".join(path), go_type)


def _field_error(item, described, struct, path):
    kind, repeated, nested = described[2], described[3], described[4]
    if repeated and not is_map_entry(nested):
        if not isinstance(item, list):
            return _mismatch(item, struct, path, _go_type(described))
        single = list(described)
        single[3] = 0
        for element in item:
            if element is not None:
                found = _field_error(element, single, struct, path)
                if found:
                    return found
        return None
    if kind == MESSAGE:
        entry = types()["messages"].get(nested)
        if is_map_entry(nested):
            if not isinstance(item, dict):
                return _mismatch(item, struct, path, _go_type(described))
            for map_value in item.values():
                if map_value is not None:
                    found = _field_error(map_value, entry[2], struct, path)
                    if found:
                        return found
            return None
        if nested.endswith(_FREE_FORM):
            return _free_form_error(item, nested)
        if not isinstance(item, dict):
            return _mismatch(item, struct, path, _go_type(described))
        return _type_error(item, nested, path)
    return _scalar_error(item, kind, struct, path, _go_type(described))


def _scalar_error(item, kind, struct, path, go_type):
    if kind in (STRING, BYTES):
        if not isinstance(item, str):
            return _mismatch(item, struct, path, go_type)
        if kind == BYTES:
            try:
                base64.b64decode(item, validate=True)
            except ValueError:
                return "illegal base64 data at input byte 0"
        return None
    if kind == BOOL:
        return None if isinstance(item, bool) else _mismatch(item, struct, path, go_type)
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            return _mismatch(item, struct, path, go_type)
        if isinstance(item, float) or not low <= item <= high:
            return "json: cannot unmarshal number %s into Go struct field %s.%s of type %s" % (
                json.dumps(item), struct, ".".join(path), go_type)
        return None
    if kind in (DOUBLE, FLOAT) and (isinstance(item, bool) or not isinstance(item, (int, float))):
        return _mismatch(item, struct, path, go_type)
    return None


def _free_form_error(value, message):
    """IntOrString, Quantity and Time decode themselves; their errors name no struct field."""
    if message.endswith("intstr.IntOrString") and (isinstance(value, bool) or not isinstance(value, (int, str))):
        return "json: cannot unmarshal %s into Go value of type int32" % _json_kind(value)
    if message.endswith("resource.Quantity") and (isinstance(value, bool) or not isinstance(value, (int, float, str))):
        return "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    if message.endswith(("meta.v1.Time", "meta.v1.MicroTime")) and not isinstance(value, str):
        return "json: cannot unmarshal %s into Go value of type string" % _json_kind(value)
    return None
