"""OpenAPI v3 documents, as much as kubectl needs.

kubectl (1.27+) reads /openapi/v3 to learn that the server validates fields itself (the PATCH operation of
each kind lists the `fieldValidation` query parameter); without it kubectl refuses to apply with its
default --validate=strict. Custom resources get their CRD's openAPIV3Schema as component schema;
built-in kinds get a compact schema (apiVersion/kind/metadata + their top-level fields, free-form below).
PATCH request bodies deliberately do not list strategic-merge-patch, so kubectl computes strategic
merge patches from its compiled-in Go types (exact patch directives) rather than from these compact
schemas. /openapi/v2 is an empty swagger document (see document()).
"""
import hashlib
import json

from . import api as api_module
from . import protobuf

QUERY_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")
OBJECT_META_REF = {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}


def _reverse_group(group):
    if not group:
        return "io.k8s.api.core"
    return ".".join(reversed(group.split(".")))


def schema_name(rtype, version):
    if rtype.builtin:
        group = rtype.group.split(".")[0] if rtype.group else "core"
        if rtype.group == "apiextensions.k8s.io":
            return "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.%s.%s" % (version, rtype.kind)
        return "io.k8s.api.%s.%s.%s" % (group, version, rtype.kind)
    return "%s.%s.%s" % (_reverse_group(rtype.group), version, rtype.kind)


def _gvk(rtype, version):
    return {"group": rtype.group, "version": version, "kind": rtype.kind}


def _kind_schema(rtype, version):
    if not rtype.builtin:
        info = rtype.version(version)
        schema = json.loads(json.dumps(info.raw_schema or {"type": "object"}))
        schema.setdefault("type", "object")
    else:
        message = protobuf.message_for(rtype.api_version(version), rtype.kind)
        fields = protobuf.json_field_names(message) - {"metadata"} if message else \
            api_module.BUILTIN_FIELDS.get((rtype.group, rtype.kind), set())
        schema = {"type": "object", "properties": {f: {"x-kubernetes-preserve-unknown-fields": True}
                                                   for f in sorted(fields)}}
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {"type": "string"}
    properties["kind"] = {"type": "string"}
    properties["metadata"] = {"allOf": [OBJECT_META_REF], "default": {}}
    schema["x-kubernetes-group-version-kind"] = [_gvk(rtype, version)]
    return schema


def _operation(rtype, version, verb, name_ref):
    operation = {"x-kubernetes-group-version-kind": _gvk(rtype, version), "x-kubernetes-action": verb,
                 "operationId": "%s%s" % (verb, rtype.kind),
                 "parameters": [{"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
                                for p in QUERY_PARAMS],
                 "responses": {"200": {"description": "OK", "content": {
                     "application/json": {"schema": {"$ref": name_ref}}}}}}
    if verb == "patch":
        operation["requestBody"] = {"content": {t: {"schema": {"type": "object"}} for t in PATCH_TYPES},
                                    "required": True}
    elif verb in ("put", "post"):
        operation["requestBody"] = {"content": {"application/json": {"schema": {"$ref": name_ref}}},
                                    "required": True}
    return operation


def group_version_document(registry, group, version):
    paths = {}
    schemas = {"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    prefix = "/api/%s" % version if not group else "/apis/%s/%s" % (group, version)
    for rtype in registry.resources_in(group, version):
        name = schema_name(rtype, version)
        schemas[name] = _kind_schema(rtype, version)
        ref = "#/components/schemas/" + name
        base = prefix + ("/namespaces/{namespace}/" if rtype.namespaced else "/") + rtype.plural
        if rtype.verbs == ["create"]:
            paths[base] = {"post": _operation(rtype, version, "post", ref)}
            continue
        paths[base] = {"get": _operation(rtype, version, "list", ref), "post": _operation(rtype, version, "post", ref)}
        item = {"get": _operation(rtype, version, "get", ref), "put": _operation(rtype, version, "put", ref),
                "patch": _operation(rtype, version, "patch", ref), "delete": _operation(rtype, version, "delete", ref)}
        paths[base + "/{name}"] = item
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.33.0"}, "paths": paths,
            "components": {"schemas": schemas}}


def _hash(doc):
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:128].upper()


OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _pb_string(number, text):
    data = text.encode()
    return bytes([number << 3 | 2, len(data)]) + data


def empty_v2_protobuf():
    """gnostic openapi_v2.Document {swagger: "2.0", info: {title, version}, paths: {}} in protobuf (kubectl asks
    /openapi/v2 in that format only)."""
    info = _pb_string(1, "Kubernetes") + _pb_string(2, "v1.33.0")
    return _pb_string(1, "2.0") + bytes([2 << 3 | 2, len(info)]) + info + bytes([8 << 3 | 2, 0])


def document(server, parts, query):
    """The document at /openapi/<parts...>, or None (404)."""
    registry = server.registry
    if parts == ["v3"]:
        paths = {}
        for group, versions in registry.groups().items():
            for version in versions:
                key = "api/%s" % version if not group else "apis/%s/%s" % (group, version)
                doc = group_version_document(registry, group, version)
                paths[key] = {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (key, _hash(doc))}
        return {"paths": paths}
    if parts == ["v2"]:
        # kubectl falls back to v2 for kinds the v3 documents do not know (e.g. a CR whose CRD is missing);
        # no definitions means "not validated client-side", so the real "no matches for kind" error follows
        return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.33.0"}, "paths": {},
                "definitions": {}}
    if len(parts) >= 3 and parts[0] == "v3":
        if parts[1] == "api" and len(parts) == 3:
            group, version = "", parts[2]
        elif parts[1] == "apis" and len(parts) == 4:
            group, version = parts[2], parts[3]
        else:
            return None
        if version not in (registry.groups().get(group) or []):
            return None
        return group_version_document(registry, group, version)
    return None
