"""HTTP handlers for resource requests: body decoding, query options, verbs and subresources."""
import json
import re

import yaml

from . import errors, protobuf, reviews, wiring
from .api import FINALIZER_FOREGROUND, WriteOptions, clone
from .store import dumps

PATCH_TYPES = {"application/json-patch+json": "json", "application/merge-patch+json": "merge",
               "application/strategic-merge-patch+json": "strategic", "application/apply-patch+yaml": "apply",
               "application/apply-patch+cbor": None}
BODY_TYPES = ("application/json", "application/yaml")
FIELD_VALIDATION = ("Ignore", "Warn", "Strict")


class _NoTimestampLoader(yaml.SafeLoader):
    """YAML 1.1 as Kubernetes decodes it, but timestamps stay strings."""


_NoTimestampLoader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}


def go_json_error(text, exc):
    """A Go encoding/json style message for a Python JSONDecodeError."""
    pos = exc.pos
    if pos >= len(text.rstrip()):
        return "unexpected end of JSON input"
    char = text[pos]
    what = {"Expecting property name enclosed in double quotes": "looking for beginning of object key string",
            "Expecting ':' delimiter": "after object key",
            "Expecting ',' delimiter": "after object key:value pair" if "{" in text[:pos] else "after array element",
            "Extra data": "after top-level value"}.get(exc.msg, "looking for beginning of value")
    return "invalid character %s %s" % (json.dumps(char).replace('"', "'"), what)


def decode_json(data):
    duplicates = []

    def pairs_hook(pairs):
        result = {}
        for key, value in pairs:
            if key in result:
                duplicates.append(key)
            result[key] = value
        return result

    text = data.decode("utf-8", errors="replace")
    try:
        return json.loads(text, object_pairs_hook=pairs_hook), duplicates
    except json.JSONDecodeError as exc:
        raise errors.bad_request("couldn't get version/kind; json parse error: " + go_json_error(text, exc))


def decode_yaml(data):
    try:
        return yaml.load(data.decode("utf-8", errors="replace"), Loader=_NoTimestampLoader), []
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            raise errors.bad_request("error converting YAML to JSON: yaml: line %d: %s"
                                     % (mark.line + 1, getattr(exc, "problem", None) or exc))
        raise errors.bad_request("error converting YAML to JSON: %s" % exc)


async def read_body(request):
    length = request.content_length
    if length is not None and length > errors.MAX_BODY_BYTES:
        raise errors.request_entity_too_large()
    chunks, size = [], 0
    while True:
        chunk = await request.content.read(65536)
        if not chunk:
            break
        size += len(chunk)
        if size > errors.MAX_BODY_BYTES:
            raise errors.request_entity_too_large()
        chunks.append(chunk)
    return b"".join(chunks)


async def decode_body(request, rtype=None):
    data = await read_body(request)
    content_type = request.content_type if "Content-Type" in request.headers else "application/json"
    if rtype is not None and not rtype.builtin and content_type == "application/vnd.kubernetes.protobuf":
        # custom resources have no protobuf encoding
        raise errors.unsupported_media_type(content_type, ("application/json", "application/yaml"))
    if content_type in ("application/json", "") or content_type.endswith("+json"):
        if not data.strip():
            raise errors.bad_request("couldn't get version/kind; json parse error: unexpected end of JSON input")
        return decode_json(data)
    if content_type == "application/vnd.kubernetes.protobuf":
        return protobuf.decode(data), []
    if content_type in ("application/yaml", "application/x-yaml", "text/yaml"):
        obj, duplicates = decode_yaml(data)
        if obj is None:
            raise errors.bad_request("Object 'Kind' is missing in ''")
        return obj, duplicates
    raise errors.unsupported_media_type(content_type)


def write_options(request, user, verb):
    query = request.query
    options = WriteOptions(user=user, user_agent=request.headers.get("User-Agent", ""))
    dry_run = query.getall("dryRun", [])
    for value in dry_run:
        if value != "All":
            raise errors.bad_request('dryRun: Unsupported value: "%s": supported values: "All"' % value)
    options.dry_run = bool(dry_run)
    options.field_manager = query.get("fieldManager", "")
    if len(options.field_manager) > 128:
        raise errors.bad_request("fieldManager: Too long: may not be more than 128 bytes")
    validation = query.get("fieldValidation", "")
    if validation and validation not in FIELD_VALIDATION:
        raise errors.bad_request('fieldValidation: Unsupported value: "%s": supported values: "Ignore", "Strict", '
                                 '"Warn"' % validation)
    # the server default for requests that do not say is Warn (kubectl sends Strict)
    options.field_validation = validation or "Warn"
    force = query.get("force", "")
    if force and verb == "patch" and request.content_type != "application/apply-patch+yaml":
        raise errors.bad_request("force: Forbidden: may not be specified for non-apply patch")
    options.force = force == "true"
    return options


def scale_of(rtype, obj, version):
    """autoscaling/v1 Scale for an object (deployments and CRDs with a scale subresource)."""
    paths = rtype.scale_paths(version)
    meta = obj["metadata"]
    replicas = _get_path(obj, paths["specReplicasPath"])
    status_replicas = _get_path(obj, paths["statusReplicasPath"]) or 0
    selector = ""
    if rtype.builtin:
        selector = _selector_string((obj.get("spec") or {}).get("selector") or {})
    elif paths.get("labelSelectorPath"):
        selector = _get_path(obj, paths["labelSelectorPath"]) or ""
    scale_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                  if k in meta}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale_meta,
            "spec": {"replicas": replicas or 0}, "status": {"replicas": status_replicas, "selector": selector}}


def _selector_string(selector):
    parts = ["%s=%s" % kv for kv in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op = expr.get("operator")
        if op == "In":
            parts.append("%s in (%s)" % (expr["key"], ",".join(sorted(expr.get("values") or []))))
        elif op == "NotIn":
            parts.append("%s notin (%s)" % (expr["key"], ",".join(sorted(expr.get("values") or []))))
        elif op == "Exists":
            parts.append(expr["key"])
        elif op == "DoesNotExist":
            parts.append("!" + expr["key"])
    return ",".join(parts)


def _get_path(obj, path):
    current = obj
    for part in path.lstrip(".").split("."):
        if not isinstance(current, dict):
            return None
        current = current.get(part)
    return current


def _set_path(obj, path, value):
    parts = path.lstrip(".").split(".")
    current = obj
    for part in parts[:-1]:
        current = current.setdefault(part, {})
    current[parts[-1]] = value


_WARNING_ESCAPE = re.compile(r'["\\]')


def warning_headers(warnings):
    return [("Warning", '299 - "%s"' % _WARNING_ESCAPE.sub(lambda m: "\\" + m.group(0), w)) for w in warnings]


class ResourceHandlers:
    def __init__(self, server):
        self.server = server
        self.api = server.api

    def respond(self, body, status=200, warnings=()):
        response = self.server.json_response(body, status)
        for key, value in warning_headers(warnings):
            response.headers.add(key, value)
        return response

    async def handle(self, request, info, rtype, user):
        verb = info.verb
        if verb not in rtype.verbs and not (info.subresource and verb in ("get", "update", "patch", "create")):
            raise errors.method_not_allowed(rtype.group, rtype.plural, verb)
        if rtype.namespaced and info.namespace == "" and info.name and rtype.plural != "namespaces":
            raise errors.route_not_found()
        if not rtype.namespaced and info.namespace and rtype.plural != "namespaces":
            raise errors.route_not_found()
        if info.subresource:
            return await self.subresource(request, info, rtype, user)
        if rtype.group_resource in reviews.VIRTUAL:
            if verb != "create":
                raise errors.method_not_allowed(rtype.group, rtype.plural, verb)
            obj, _unused = await decode_body(request)
            return self.respond(reviews.handle(self.server, rtype, info, obj, user), 201)
        if verb in ("get", "list", "watch"):
            return await self.server.read.handle(request, info, rtype, user)
        namespace = info.namespace if rtype.namespaced else ""
        if verb == "create":
            if info.name:
                raise errors.method_not_allowed(rtype.group, rtype.plural, "create")
            self.refuse_if_crd_terminating(rtype, verb)
            obj, duplicates = await decode_body(request, rtype)
            options = write_options(request, user, verb)
            result = await self.api.create(rtype, info.version, namespace, obj, options, duplicates)
            return self.respond(result, 201, options.warnings)
        if verb == "update":
            obj, duplicates = await decode_body(request, rtype)
            options = write_options(request, user, verb)
            result, created = await self.api.update(rtype, info.version, namespace, info.name, obj, options,
                                                    duplicates=duplicates)
            return self.respond(result, 201 if created else 200, options.warnings)
        if verb == "patch":
            return await self.patch(request, info, rtype, user, None)
        if verb == "delete":
            return await self.delete(request, info, rtype, user)
        if verb == "deletecollection":
            return await self.delete_collection(request, info, rtype, user)
        raise errors.method_not_allowed(rtype.group, rtype.plural, verb)

    def refuse_if_crd_terminating(self, rtype, verb):
        """crdHandler: no new custom resources while their CRD is being deleted (405 MethodNotAllowed)."""
        if rtype.builtin:
            return
        crd = self.server.store.get(("apiextensions.k8s.io", "customresourcedefinitions"), "", rtype.crd_name)
        if crd is not None and crd["metadata"].get("deletionTimestamp"):
            err = errors.method_not_allowed(rtype.group, rtype.plural, verb)
            err.message = "%s not allowed while custom resource definition is terminating" % verb
            raise err

    async def decode_patch(self, request, rtype):
        content_type = request.content_type
        patch_type = PATCH_TYPES.get(content_type)
        allowed = ["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"]
        if rtype.builtin:
            allowed.insert(2, "application/strategic-merge-patch+json")
        if patch_type is None or content_type not in allowed:
            raise errors.unsupported_media_type(content_type, allowed)
        data = await read_body(request)
        if patch_type == "apply":
            try:
                doc, duplicates = decode_yaml(data)
            except errors.ApiError as err:
                raise errors.bad_request("error decoding YAML: " + err.message.split(": ", 1)[-1])
            return patch_type, doc, duplicates
        text = data.decode("utf-8", errors="replace")
        try:
            doc, duplicates = decode_json(data)
        except errors.ApiError:
            try:
                json.loads(text)
            except json.JSONDecodeError as exc:
                raise errors.bad_request(go_json_error(text, exc))
            raise
        if patch_type == "json" and not isinstance(doc, list):
            raise errors.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
        return patch_type, doc, duplicates

    async def patch(self, request, info, rtype, user, subresource):
        patch_type, doc, duplicates = await self.decode_patch(request, rtype)
        options = write_options(request, user, "patch")
        namespace = info.namespace if rtype.namespaced else ""
        result, created = await self.api.patch(rtype, info.version, namespace, info.name, patch_type, doc, options,
                                               subresource, duplicates)
        return self.respond(result, 201 if created else 200, options.warnings)

    async def delete_options(self, request):
        query = request.query
        options = {}
        data = await read_body(request)
        if data.strip():
            if request.content_type in ("application/yaml",):
                body, _unused = decode_yaml(data)
            else:
                body, _unused = decode_json(data)
            if not isinstance(body, dict):
                raise errors.bad_request("DeleteOptions must be an object")
            options.update(body)
        if "gracePeriodSeconds" in query:
            try:
                options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
            except ValueError:
                raise errors.bad_request('strconv.ParseInt: parsing "%s": invalid syntax' % query["gracePeriodSeconds"])
        if "propagationPolicy" in query:
            options["propagationPolicy"] = query["propagationPolicy"]
        if "orphanDependents" in query:
            options["orphanDependents"] = query["orphanDependents"] == "true"
        dry_run = query.getall("dryRun", []) or options.get("dryRun") or []
        for value in dry_run:
            if value != "All":
                raise errors.bad_request('dryRun: Unsupported value: "%s": supported values: "All"' % value)
        options["dryRun"] = bool(dry_run)
        return options

    def deleted_body(self, rtype, final):
        if not rtype.builtin or rtype.plural == "pods":
            return final
        meta = final["metadata"]
        details = {"name": meta["name"], "kind": rtype.plural, "uid": meta.get("uid", "")}
        if rtype.group:
            details = {"name": meta["name"], "group": rtype.group, "kind": rtype.plural, "uid": meta.get("uid", "")}
        return errors.success_status(details)

    async def delete(self, request, info, rtype, user):
        options = await self.delete_options(request)
        namespace = info.namespace if rtype.namespaced else ""
        pending, final = await self.api.delete(rtype, info.version, namespace, info.name, options,
                                               options["dryRun"])
        if pending is not None:
            status = 202 if options.get("orphanDependents") is False else 200
            return self.respond(pending, status)
        return self.respond(self.deleted_body(rtype, final))

    async def delete_collection(self, request, info, rtype, user):
        options = await self.delete_options(request)
        namespace = info.namespace if rtype.namespaced else ""
        objects = self.server.read.select(request, rtype, namespace)
        items = []
        for obj in objects:
            meta = obj["metadata"]
            try:
                pending, final = await self.api.delete(rtype, info.version, meta.get("namespace", ""), meta["name"],
                                                       dict(options), options["dryRun"])
            except errors.ApiError as err:
                if err.code == 404:
                    continue
                raise
            items.append(pending if pending is not None else final)
        body = {"kind": rtype.list_kind, "apiVersion": rtype.api_version(info.version),
                "metadata": {"resourceVersion": str(self.server.store.rv)}, "items": items}
        return self.respond(body)

    # --- subresources -----------------------------------------------------------------------------
    async def subresource(self, request, info, rtype, user):
        sub = info.subresource
        namespace = info.namespace if rtype.namespaced else ""
        key = rtype.storage_group_resource
        if sub == "status" and rtype.has_status(info.version):
            if info.verb == "get":
                return await self.server.read.handle(request, info, rtype, user)
            if info.verb == "update":
                obj, duplicates = await decode_body(request, rtype)
                options = write_options(request, user, "update")
                result, _unused = await self.api.update(rtype, info.version, namespace, info.name, obj, options, "status",
                                                        duplicates)
                return self.respond(result, 200, options.warnings)
            if info.verb == "patch":
                return await self.patch(request, info, rtype, user, "status")
            raise errors.method_not_allowed(rtype.group, rtype.plural + "/status", info.verb)
        if sub == "scale" and rtype.scale_paths(info.version):
            return await self.scale(request, info, rtype, user, namespace)
        if sub == "token" and rtype.plural == "serviceaccounts" and info.verb == "create":
            obj, _unused = await decode_body(request)
            return self.respond(reviews.token_request(self.server, namespace, info.name, obj), 201)
        if sub == "finalize" and rtype.plural == "namespaces" and info.verb == "update":
            obj, _unused = await decode_body(request)
            old = self.server.store.get(key, "", info.name)
            if old is None:
                raise errors.not_found("", "namespaces", info.name)
            new = clone(old)
            new.setdefault("spec", {})["finalizers"] = list((obj.get("spec") or {}).get("finalizers") or [])
            result = await self.server.controllers.finalize_namespace(new)
            return self.respond(result)
        raise errors.route_not_found()

    async def scale(self, request, info, rtype, user, namespace):
        key = rtype.storage_group_resource
        stored = self.server.store.get(key, namespace, info.name)
        if stored is None:
            raise errors.not_found(rtype.group, rtype.plural, info.name)
        current = await self.api.to_version(rtype, stored, info.version)
        scale = scale_of(rtype, current, info.version)
        if info.verb == "get":
            return self.respond(scale)
        if info.verb == "update":
            body, _unused = await decode_body(request)
            new_scale = body
        elif info.verb == "patch":
            patch_type, doc, _unused = await self.decode_patch(request, rtype)
            if patch_type == "json":
                new_scale = wiring.json_patch(scale, doc)
            elif patch_type in ("merge", "strategic", "apply"):
                new_scale = wiring.merge_patch(scale, doc)
            else:
                raise errors.unsupported_media_type(request.content_type)
        else:
            raise errors.method_not_allowed(rtype.group, rtype.plural + "/scale", info.verb)
        if not isinstance(new_scale, dict):
            raise errors.bad_request("the object provided is unrecognized (must be of type Scale)")
        rv = (new_scale.get("metadata") or {}).get("resourceVersion")
        if rv and rv != current["metadata"]["resourceVersion"]:
            raise errors.conflict(rtype.group, rtype.plural, info.name)
        replicas = (new_scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise errors.invalid("autoscaling", "Scale", info.name, [
                errors.field_invalid("spec.replicas", replicas, "must be greater than or equal to 0")])
        paths = rtype.scale_paths(info.version)
        updated = clone(current)
        _set_path(updated, paths["specReplicasPath"], replicas)
        options = write_options(request, user, "update")
        result, _unused = await self.api.update(rtype, info.version, namespace, info.name, updated, options, "scale",
                                                old=stored)
        return self.respond(scale_of(rtype, result, info.version))


__all__ = ["ResourceHandlers", "decode_body", "dumps", "FINALIZER_FOREGROUND"]
