"""Decoding of the few protobuf request bodies kubectl sends (its typed clients default to protobuf).

kubectl `create token`, `auth can-i` and `auth whoami` POST TokenRequest, SelfSubjectAccessReview,
SelfSubjectRulesReview and SelfSubjectReview as application/vnd.kubernetes.protobuf (while accepting
JSON answers). This decodes the runtime.Unknown envelope and those messages (field numbers from
k8s.io/api generated.proto) into the equivalent JSON dicts. Other kinds get 415 like an unknown format.
"""
import base64

from . import errors

MAGIC = b"k8s\x00"


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
    """[(field_number, value)] of one message: varints as int, length-delimited as bytes."""
    pos, out = 0, []
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError("unsupported wire type %d" % wire)
        out.append((number, value))
    return out


def _message(data, schema):
    """Decode with schema {number: (name, kind)}; kind: "str", "int", "strs" or a nested schema dict."""
    result = {}
    for number, value in fields(data):
        if number not in schema:
            continue
        name, kind = schema[number]
        if kind == "str":
            result[name] = value.decode("utf-8")
        elif kind == "bool":
            result[name] = bool(value)
        elif kind in ("smap", "bmap"):
            entry = dict(fields(value))
            item = entry.get(2, b"")
            result.setdefault(name, {})[entry.get(1, b"").decode("utf-8")] = (
                item.decode("utf-8") if kind == "smap" else base64.b64encode(item).decode("ascii"))
        elif isinstance(kind, list):
            result.setdefault(name, []).append(_message(value, kind[0]))
        elif kind == "int":
            result[name] = value
        elif kind == "strs":
            result.setdefault(name, []).append(value.decode("utf-8"))
        else:
            result[name] = _message(value, kind)
    return result


OWNER_REFERENCE = {5: ("apiVersion", "str"), 1: ("kind", "str"), 3: ("name", "str"), 4: ("uid", "str"),
                   6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")}
OBJECT_META = {1: ("name", "str"), 2: ("generateName", "str"), 3: ("namespace", "str"), 11: ("labels", "smap"),
               12: ("annotations", "smap"), 13: ("ownerReferences", [OWNER_REFERENCE]), 14: ("finalizers", "strs")}
POLICY_RULE = {1: ("verbs", "strs"), 2: ("apiGroups", "strs"), 3: ("resources", "strs"),
               4: ("resourceNames", "strs"), 5: ("nonResourceURLs", "strs")}
SUBJECT = {1: ("kind", "str"), 2: ("apiGroup", "str"), 3: ("name", "str"), 4: ("namespace", "str")}
ROLE_REF = {1: ("apiGroup", "str"), 2: ("kind", "str"), 3: ("name", "str")}
LOCAL_REF = {1: ("name", "str")}
BINDING = {1: ("metadata", OBJECT_META), 2: ("subjects", [SUBJECT]), 3: ("roleRef", ROLE_REF)}
RESOURCE_ATTRIBUTES = {1: ("namespace", "str"), 2: ("verb", "str"), 3: ("group", "str"), 4: ("version", "str"),
                       5: ("resource", "str"), 6: ("subresource", "str"), 7: ("name", "str")}
NON_RESOURCE_ATTRIBUTES = {1: ("path", "str"), 2: ("verb", "str")}
MESSAGES = {
    ("authentication.k8s.io/v1", "TokenRequest"): {
        1: ("metadata", OBJECT_META),
        2: ("spec", {1: ("audiences", "strs"), 4: ("expirationSeconds", "int"),
                     3: ("boundObjectRef", {1: ("kind", "str"), 2: ("apiVersion", "str"), 3: ("name", "str"),
                                            4: ("uid", "str")})})},
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): {
        1: ("metadata", OBJECT_META),
        2: ("spec", {1: ("resourceAttributes", RESOURCE_ATTRIBUTES),
                     2: ("nonResourceAttributes", NON_RESOURCE_ATTRIBUTES)})},
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): {
        1: ("metadata", OBJECT_META), 2: ("spec", {1: ("namespace", "str")})},
    ("authentication.k8s.io/v1", "SelfSubjectReview"): {1: ("metadata", OBJECT_META)},
    # kubectl create configmap|secret|namespace|serviceaccount|role|rolebinding|clusterrole|clusterrolebinding
    ("v1", "ConfigMap"): {1: ("metadata", OBJECT_META), 2: ("data", "smap"), 3: ("binaryData", "bmap"),
                          4: ("immutable", "bool")},
    ("v1", "Secret"): {1: ("metadata", OBJECT_META), 2: ("data", "bmap"), 3: ("type", "str"),
                       4: ("stringData", "smap"), 5: ("immutable", "bool")},
    ("v1", "Namespace"): {1: ("metadata", OBJECT_META), 2: ("spec", {1: ("finalizers", "strs")})},
    ("v1", "ServiceAccount"): {1: ("metadata", OBJECT_META), 2: ("secrets", [{1: ("kind", "str"),
                                                                               2: ("namespace", "str"),
                                                                               3: ("name", "str")}]),
                               3: ("imagePullSecrets", [LOCAL_REF]), 4: ("automountServiceAccountToken", "bool")},
    ("rbac.authorization.k8s.io/v1", "Role"): {1: ("metadata", OBJECT_META), 2: ("rules", [POLICY_RULE])},
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): {
        1: ("metadata", OBJECT_META), 2: ("rules", [POLICY_RULE]),
        3: ("aggregationRule", {1: ("clusterRoleSelectors", [{1: ("matchLabels", "smap")}])})},
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): BINDING,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): BINDING,
}


def decode(data):
    """The JSON-equivalent dict of a protobuf-encoded request body, or ApiError 415."""
    if not data.startswith(MAGIC):
        raise errors.bad_request("provided data does not appear to be a protobuf message, expected prefix "
                                 "[107 56 115 0]")
    try:
        envelope = dict((n, v) for n, v in fields(data[len(MAGIC):]))
        type_meta = _message(envelope.get(1, b""), {1: ("apiVersion", "str"), 2: ("kind", "str")})
        schema = MESSAGES.get((type_meta.get("apiVersion"), type_meta.get("kind")))
        if schema is None:
            raise errors.unsupported_media_type("application/vnd.kubernetes.protobuf",
                                                ("application/json", "application/yaml"))
        body = _message(envelope.get(2, b""), schema)
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.bad_request("unable to decode protobuf body: %s" % exc)
    body["apiVersion"] = type_meta["apiVersion"]
    body["kind"] = type_meta["kind"]
    return body
