"""Object operations (create, update, patch, delete) with kube-apiserver semantics, independent of HTTP.

Objects are stored in their storage version; `version` arguments name the version a client speaks.
Every method works on private copies: stored dicts are never mutated.
"""
import datetime
import json
import random
import re
import uuid
from dataclasses import dataclass, field

from . import errors, protobuf, strategies, wiring
from .store import dumps
from .validation import validate_object_meta

GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"
META_FIELDS = {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
               "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
               "ownerReferences", "finalizers", "managedFields"}
TOP_FIELDS = {"apiVersion", "kind", "metadata"}
# top-level fields of built-ins the protobuf table (protobuf_types.json) does not describe
BUILTIN_FIELDS = {
    ("apiextensions.k8s.io", "CustomResourceDefinition"): {"spec", "status"},
}
FINALIZER_ORPHAN = "orphan"
FINALIZER_FOREGROUND = "foregroundDeletion"


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def clone(obj):
    return json.loads(dumps(obj))


@dataclass
class WriteOptions:
    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = "Strict"   # the server default for clients that do not say is Warn; see server.py
    force: bool = False
    user: object = None
    user_agent: str = ""
    warnings: list = field(default_factory=list)
    patch_type: str = ""       # set for PATCH: strict decoding errors are then 422 "patch: Invalid value"
    patch_doc: object = None


def default_manager(user_agent):
    """The field manager kube-apiserver derives from the User-Agent (the program name)."""
    name = (user_agent or "unknown").split("/", 1)[0]
    return name[:128] or "unknown"


class ObjectApi:
    def __init__(self, store, registry, converter, hooks=None):
        self.store = store
        self.registry = registry
        self.converter = converter
        self.hooks = hooks        # controllers.Hooks: after_write(rtype, old, new), after_delete(rtype, obj)

    # --- helpers ----------------------------------------------------------------------------------
    def typeinfo_for(self, rtype, version):
        if wiring.typeinfo is None:
            return None
        if rtype.builtin:
            try:
                return wiring.typeinfo.TypeInfo.for_builtin(rtype.group, rtype.kind)
            except Exception:
                return None
        info = rtype.version(version) or rtype.versions[0]
        return info.typeinfo

    async def to_version(self, rtype, obj, version):
        if obj is None or rtype.builtin:
            if obj is not None and rtype.storage_group_resource != rtype.group_resource:
                return event_to_group(obj, rtype.group)
            return obj
        converted = (await self.converter.convert(rtype, [obj], version))[0]
        if converted is not obj:
            info = rtype.version(version)
            if info is not None and info.schema is not None:
                converted = info.schema.apply_defaults(converted)
        return converted

    async def many_to_version(self, rtype, objs, version):
        if rtype.builtin:
            if rtype.storage_group_resource != rtype.group_resource:
                return [event_to_group(o, rtype.group) for o in objs]
            return objs
        if not objs:
            return objs
        return await self.converter.convert(rtype, objs, version)

    async def to_storage(self, rtype, obj):
        if rtype.builtin:
            if rtype.storage_group_resource != rtype.group_resource:
                return event_to_group(obj, "")
            return obj
        storage = rtype.storage_version
        converted = (await self.converter.convert(rtype, [obj], storage))[0]
        info = rtype.version(storage) or next(v for v in rtype.versions if v.name == storage)
        if converted is not obj and info.schema is not None:
            converted = info.schema.apply_defaults(info.schema.prune(converted))
        return converted

    def check_type(self, rtype, version, obj, expected_kind=None):
        if not isinstance(obj, dict):
            raise errors.bad_request("the object provided is unrecognized (must be of type %s)" % rtype.kind)
        expected_version = rtype.api_version(version)
        expected_kind = expected_kind or rtype.kind
        if rtype.builtin:
            # typed endpoints decode with the URL's group/version/kind as defaults, like the real codecs
            obj.setdefault("kind", expected_kind)
            obj.setdefault("apiVersion", expected_version)
        kind = obj.get("kind")
        api_version = obj.get("apiVersion")
        if not kind:
            raise errors.bad_request("Object 'Kind' is missing in '%s'" % dumps(obj).decode()[:1024])
        if not api_version:
            raise errors.bad_request("Object 'apiVersion' is missing in '%s'" % dumps(obj).decode()[:1024])
        if kind != expected_kind:
            raise errors.bad_request("the object provided is unrecognized (must be of type %s): kind %s in the "
                                     "data does not match the expected kind %s" % (expected_kind, kind, expected_kind))
        if api_version != expected_version:
            raise errors.bad_request("the API version in the data (%s) does not match the expected API version (%s)"
                                     % (api_version, expected_version))
        if "metadata" in obj and not isinstance(obj["metadata"], dict):
            raise errors.bad_request("metadata: expected object, got %s" % type(obj["metadata"]).__name__)

    def unknown_fields(self, rtype, version, obj):
        paths = []
        meta = obj.get("metadata") or {}
        message = protobuf.message_for(rtype.api_version(version), rtype.kind) if rtype.builtin else None
        if message is not None:
            # the Go type's fields, from the same k8s.io/api descriptors kubectl is built with
            return protobuf.unknown_json_fields(obj, message)
        if rtype.builtin:
            known = BUILTIN_FIELDS.get((rtype.group, rtype.kind))
            if known is not None:
                paths.extend(k for k in obj if k not in TOP_FIELDS and k not in known)
        else:
            info = rtype.version(version)
            if info is not None and info.schema is not None:
                paths.extend(info.schema.unknown_fields(obj))
        paths.extend("metadata." + k for k in meta if k not in META_FIELDS)
        return paths

    def field_validation(self, rtype, version, obj, opts, duplicates=()):
        """Decoding into the Go type (built-ins: type errors always fail), then fieldValidation: Strict fails
        (in the form the real handler reports it), Warn adds warnings."""
        message = protobuf.message_for(rtype.api_version(version), rtype.kind) if rtype.builtin else None
        type_problem = protobuf.type_error(obj, message) if message else None
        if type_problem:
            self.decode_failure(rtype, obj, opts, type_problem)
        if opts.field_validation == "Ignore":
            return
        problems = ['duplicate field "%s"' % d for d in duplicates]
        problems += ['unknown field "%s"' % p for p in self.unknown_fields(rtype, version, obj)]
        if not problems:
            return
        if opts.field_validation != "Strict":
            opts.warnings.extend(problems)
            return
        self.decode_failure(rtype, obj, opts, "strict decoding error: " + ", ".join(problems))

    @staticmethod
    def decode_failure(rtype, obj, opts, detail):
        """The error a body that does not decode gets: 400 from create/update, 422 "patch" from PATCH."""
        if opts.patch_type == "strategic":
            # applyPatchToObject: field.Invalid(patch, fmt.Sprintf("%+v", patchMap), ...)
            raise errors.invalid("", "", "", [errors.field_invalid("patch", go_map(opts.patch_doc), detail)])
        if opts.patch_type:
            # jsonPatcher: field.Invalid(patch, string(patchedObjJS), ...) in an Invalid with no kind/name
            raise errors.invalid("", "", "", [errors.field_invalid("patch", dumps(obj).decode(), detail)])
        # transformDecodeError: the kind and version the body declared
        body_version = str(obj.get("apiVersion", "")).rpartition("/")[2]
        raise errors.bad_request('%s in version "%s" cannot be handled as a %s: %s'
                                 % (obj.get("kind", rtype.kind), body_version, rtype.kind, detail))

    def drop_undeclared(self, rtype, version, obj):
        """Built-ins: fields the Go type does not declare are lost in decoding (CRs are pruned by schema)."""
        message = protobuf.message_for(rtype.api_version(version), rtype.kind) if rtype.builtin else None
        return protobuf.prune_unknown(obj, message) if message else obj

    def typed_patch_errors(self, rtype, version, namespace, name, applied):
        """Server-side apply converts the configuration to the type first: undeclared fields are a 500."""
        paths = self.unknown_fields(rtype, version, applied)
        if not paths:
            return
        typeinfo = self.typeinfo_for(rtype, version)
        rendered = [".%s: field not declared in schema" % smd_path(p, applied, typeinfo) for p in paths]
        text = rendered[0] if len(rendered) == 1 else "errors:\n  " + "\n  ".join(rendered)
        raise errors.ApiError(500, "", "failed to create typed patch object (%s/%s; %s, Kind=%s): %s" % (
            namespace, name, rtype.api_version(version) if rtype.group else "/" + version, rtype.kind, text))

    def apply_schema(self, rtype, version, obj, name):
        """CRs: prune, default and validate against the version's schema (422 Invalid on violations)."""
        if rtype.builtin:
            return obj
        info = rtype.version(version)
        if info is None or info.schema is None:
            return obj
        obj = info.schema.apply_defaults(info.schema.prune(obj))
        causes = info.schema.validate(obj)
        if causes:
            raise errors.invalid(rtype.group, rtype.kind, name, causes)
        return obj

    def validate(self, rtype, obj, old):
        meta = obj["metadata"]
        causes = validate_object_meta(meta, rtype.name_rule, rtype.namespaced)
        if rtype.builtin:
            causes.extend(strategies.validate(rtype, obj, old))
        if old is not None:
            old_meta = old["metadata"]
            if old_meta.get("deletionTimestamp"):
                added = [f for f in meta.get("finalizers") or [] if f not in (old_meta.get("finalizers") or [])]
                if added:
                    causes.append(errors.field_forbidden(
                        "metadata.finalizers", "no new finalizers can be added if the object is being deleted, "
                        "found new finalizers []string{%s}" % ", ".join('"%s"' % f for f in added)))
        if causes:
            raise errors.invalid(rtype.group, rtype.kind, meta.get("name", ""), causes)

    def check_namespace(self, rtype, namespace, name, creating=True):
        if not rtype.namespaced:
            return
        ns = self.store.get(("", "namespaces"), "", namespace)
        if ns is None:
            raise errors.not_found("", "namespaces", namespace)
        if creating and ns["metadata"].get("deletionTimestamp"):
            err = errors.forbidden("unable to create new content in namespace %s because it is being terminated"
                                   % namespace, rtype.group, rtype.plural, name)
            err.details.setdefault("causes", []).append(
                {"reason": "NamespaceTerminating", "message": "namespace %s is being terminated" % namespace,
                 "field": "metadata.namespace"})
            raise err

    def managed_fields(self, rtype, version, old, new, manager, operation, subresource):
        if wiring.ssa is None:
            return new["metadata"].get("managedFields")
        return wiring.ssa.update_managed_fields(old, new, manager, operation, subresource,
                                                self.typeinfo_for(rtype, version),
                                                ignored_paths=self.reset_fields(rtype, version, new, subresource))

    def reset_fields(self, rtype, version, obj, subresource):
        """Fields a write cannot own (the strategy resets them): .status on the main resource when the
        status subresource exists; everything but .status on /status."""
        if subresource == "status":
            return sorted(k for k in obj if k not in ("apiVersion", "kind", "status")) + ["metadata"]
        if rtype.has_status(version):
            return ["status"]
        return []

    # --- create -----------------------------------------------------------------------------------
    async def create(self, rtype, version, namespace, obj, opts, duplicates=(), managed=None):
        """Create; returns the stored object converted to `version` (the dry-run result when asked)."""
        self.check_type(rtype, version, obj)
        meta = obj.setdefault("metadata", {})
        if rtype.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                         "sent on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise errors.bad_request("resourceVersion should not be set on objects to be created")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choice(GENERATE_CHARS) for _round in range(5))
        self.field_validation(rtype, version, obj, opts, duplicates)
        obj = self.drop_undeclared(rtype, version, obj)
        meta = obj["metadata"]
        for key in ("uid", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            meta.pop(key, None)
        if rtype.builtin:
            strategies.prepare_create(rtype, obj)
        elif rtype.has_status(version):
            obj.pop("status", None)
        obj = self.apply_schema(rtype, version, obj, meta.get("name", ""))
        meta = obj["metadata"]
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if rtype.tracks_generation:
            meta["generation"] = 1
        self.validate(rtype, obj, None)
        self.check_namespace(rtype, namespace, meta["name"])
        if managed is not None:
            meta["managedFields"] = managed
        else:
            manager = opts.field_manager or default_manager(opts.user_agent)
            fields = self.managed_fields(rtype, version, None, obj, manager, "Update", None)
            if fields is not None:
                meta["managedFields"] = fields
        key = rtype.storage_group_resource
        if self.store.get(key, namespace if rtype.namespaced else "", meta["name"]) is not None:
            raise errors.already_exists(rtype.group, rtype.plural, meta["name"])
        stored = await self.to_storage(rtype, obj)
        if opts.dry_run:
            return obj
        if self.hooks is not None:
            self.hooks.before_create(rtype, stored)
        self.store.create(key, stored)
        if self.hooks is not None:
            self.hooks.after_write(rtype, None, stored)
        return await self.to_version(rtype, stored, version)

    # --- update -----------------------------------------------------------------------------------
    async def update(self, rtype, version, namespace, name, obj, opts, subresource=None, duplicates=(),
                     managed=None, operation="Update", old=None):
        """PUT semantics (also the tail of PATCH); returns (object, created)."""
        self.check_type(rtype, version, obj)
        meta = obj.setdefault("metadata", {})
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                                     % (meta["name"], name))
        if rtype.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
            raise errors.bad_request("the namespace of the provided object does not match the namespace sent "
                                     "on the request")
        key = rtype.storage_group_resource
        ns = namespace if rtype.namespaced else ""
        stored_old = old if old is not None else self.store.get(key, ns, name)
        if stored_old is None:
            if rtype.allow_create_on_update and not subresource:
                meta["name"] = name
                meta.pop("resourceVersion", None)
                return await self.create(rtype, version, namespace, obj, opts, duplicates, managed), True
            raise errors.not_found(rtype.group, rtype.plural, name)
        old_v = await self.to_version(rtype, stored_old, version)
        old_meta = old_v["metadata"]
        rv = meta.get("resourceVersion")
        if not rv:
            if not rtype.allow_unconditional_update:
                raise errors.invalid(rtype.group, rtype.kind, name, [
                    errors.cause(errors.FIELD_INVALID, "metadata.resourceVersion",
                                 "Invalid value: 0x0: must be specified for an update")])
        elif rv != old_meta["resourceVersion"]:
            raise errors.conflict(rtype.group, rtype.plural, name)
        self.field_validation(rtype, version, obj, opts, duplicates)
        obj = self.drop_undeclared(rtype, version, obj)
        meta = obj["metadata"]
        if subresource == "status":
            status = obj.get("status")
            new = clone(old_v)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            if "managedFields" in meta:
                new["metadata"]["managedFields"] = meta["managedFields"]
            obj = new
        else:
            if rtype.has_status(version):
                if "status" in old_v:
                    obj["status"] = old_v["status"]
                else:
                    obj.pop("status", None)
            if rtype.builtin:
                strategies.prepare_update(rtype, obj, old_v)
        obj = self.apply_schema(rtype, version, obj, name)
        meta = obj["metadata"]
        meta["name"] = name
        if rtype.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        for keep in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            if keep in old_meta:
                meta[keep] = old_meta[keep]
            else:
                meta.pop(keep, None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if rtype.tracks_generation:
            generation = old_meta.get("generation", 1)
            if strategies.spec_of(rtype, obj) != strategies.spec_of(rtype, old_v):
                generation += 1
            meta["generation"] = generation
        else:
            meta.pop("generation", None)
        for empty in ("labels", "annotations", "finalizers", "ownerReferences"):
            if empty in meta and not meta[empty]:
                del meta[empty]
        self.validate(rtype, obj, old_v)
        if managed is not None:
            meta["managedFields"] = managed
        else:
            manager = opts.field_manager or default_manager(opts.user_agent)
            fields = self.managed_fields(rtype, version, old_v, obj, manager, operation, subresource)
            if fields is not None:
                meta["managedFields"] = fields
            elif "managedFields" in old_meta and "managedFields" not in meta:
                meta["managedFields"] = old_meta["managedFields"]
        if obj == old_v:
            return old_v, False
        stored = await self.to_storage(rtype, obj)
        if opts.dry_run:
            return obj, False
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and not self._graceful_pending(rtype, obj):
            final = self.store.delete(key, ns, name)
            if self.hooks is not None:
                self.hooks.after_delete(rtype, final)
            return await self.to_version(rtype, final, version), False
        self.store.update(key, stored)
        if self.hooks is not None:
            self.hooks.after_write(rtype, stored_old, stored)
        return await self.to_version(rtype, stored, version), False

    def _graceful_pending(self, rtype, obj):
        """Pods (and namespaces) wait for their own controller even without finalizers."""
        if rtype.group == "" and rtype.kind == "Pod":
            return obj["metadata"].get("deletionGracePeriodSeconds", 0) > 0
        if rtype.group == "" and rtype.kind == "Namespace":
            return bool((obj.get("spec") or {}).get("finalizers"))
        return False

    # --- patch ------------------------------------------------------------------------------------
    async def patch(self, rtype, version, namespace, name, patch_type, patch_doc, opts, subresource=None,
                    duplicates=()):
        key = rtype.storage_group_resource
        ns = namespace if rtype.namespaced else ""
        stored_old = self.store.get(key, ns, name)
        if patch_type == "apply":
            return await self._apply(rtype, version, namespace, name, patch_doc, opts, subresource, stored_old,
                                     duplicates)
        if stored_old is None:
            raise errors.not_found(rtype.group, rtype.plural, name)
        opts.patch_type, opts.patch_doc = patch_type, patch_doc
        old_v = await self.to_version(rtype, stored_old, version)
        if patch_type == "json":
            patched = wiring.json_patch(old_v, patch_doc)
        elif patch_type == "merge":
            if not isinstance(patch_doc, dict):
                raise errors.bad_request("json: cannot unmarshal %s into Go value of type map[string]interface {}"
                                         % type(patch_doc).__name__)
            patched = wiring.merge_patch(old_v, patch_doc)
        elif patch_type == "strategic":
            if wiring.patch is None:
                raise errors.service_unavailable("strategic merge patch needs tests/kubeapi/patch.py")
            patched = wiring.patch.strategic_merge_patch(old_v, patch_doc, self.typeinfo_for(rtype, version))
        else:
            raise errors.unsupported_media_type(patch_type)
        if not isinstance(patched, dict):
            raise errors.bad_request("the patch produced an invalid object")
        if patched is old_v:
            patched = clone(old_v)
        patched.setdefault("metadata", {})
        if not isinstance(patched["metadata"], dict):
            raise errors.bad_request("metadata: expected object")
        if "resourceVersion" not in (patch_doc.get("metadata") or {} if isinstance(patch_doc, dict) else {}) \
                and patch_type != "json":
            patched["metadata"]["resourceVersion"] = old_v["metadata"]["resourceVersion"]
        patched.setdefault("apiVersion", old_v.get("apiVersion"))
        patched.setdefault("kind", old_v.get("kind"))
        obj, _unused = await self.update(rtype, version, namespace, name, patched, opts, subresource, duplicates,
                                         old=stored_old)
        return obj, False

    async def _apply(self, rtype, version, namespace, name, applied, opts, subresource, stored_old, duplicates):
        if not isinstance(applied, dict):
            raise errors.bad_request("error decoding YAML: the applied configuration must be an object")
        if not opts.field_manager:
            raise errors.bad_request("PATCH, application/apply-patch+yaml requires a non-empty fieldManager")
        if wiring.ssa is None:
            raise errors.service_unavailable("server-side apply needs tests/kubeapi/ssa.py")
        self.check_type(rtype, version, applied)
        meta = applied.setdefault("metadata", {})
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                                     % (meta["name"], name))
        if meta.get("managedFields"):
            raise errors.bad_request("metadata.managedFields must be nil")
        meta["name"] = name
        self.typed_patch_errors(rtype, version, namespace if rtype.namespaced else "", name, applied)
        self.field_validation(rtype, version, applied, opts, duplicates)
        typeinfo = self.typeinfo_for(rtype, version)
        ignored = self.reset_fields(rtype, version, applied, subresource)
        if stored_old is None:
            if subresource:
                raise errors.not_found(rtype.group, rtype.plural, name)
            result = wiring.ssa.apply(None, applied, opts.field_manager, opts.force, typeinfo,
                                      ignored_paths=ignored)
            managed = result["metadata"].get("managedFields")
            result["metadata"].pop("resourceVersion", None)
            strict = WriteOptions(opts.dry_run, opts.field_manager, "Ignore", opts.force, opts.user,
                                  opts.user_agent, opts.warnings)
            return await self.create(rtype, version, namespace, result, strict, managed=managed), True
        old_v = await self.to_version(rtype, stored_old, version)
        if meta.get("resourceVersion") and meta["resourceVersion"] != old_v["metadata"]["resourceVersion"]:
            raise errors.conflict(rtype.group, rtype.plural, name)
        result = wiring.ssa.apply(old_v, applied, opts.field_manager, opts.force, typeinfo,
                                  subresource=subresource or "", ignored_paths=ignored)
        result["metadata"]["resourceVersion"] = old_v["metadata"]["resourceVersion"]
        managed = result["metadata"].get("managedFields")
        lenient = WriteOptions(opts.dry_run, opts.field_manager, "Ignore", opts.force, opts.user, opts.user_agent,
                               opts.warnings)
        obj, _unused = await self.update(rtype, version, namespace, name, result, lenient, subresource, managed=managed,
                                         operation="Apply", old=stored_old)
        return obj, False

    # --- delete -----------------------------------------------------------------------------------
    async def delete(self, rtype, version, namespace, name, options, dry_run=False):
        """Returns (object_or_None_when_gone, final_object): the object when it still exists (finalizers)."""
        key = rtype.storage_group_resource
        ns = namespace if rtype.namespaced else ""
        old = self.store.get(key, ns, name)
        if old is None:
            raise errors.not_found(rtype.group, rtype.plural, name)
        options = options or {}
        pre = options.get("preconditions") or {}
        old_meta = old["metadata"]
        if pre.get("uid") and pre["uid"] != old_meta.get("uid"):
            raise errors.conflict(rtype.group, rtype.plural, name,
                                  "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                                  % (pre["uid"], old_meta.get("uid")))
        if pre.get("resourceVersion") and pre["resourceVersion"] != old_meta.get("resourceVersion"):
            raise errors.conflict(rtype.group, rtype.plural, name,
                                  "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in "
                                  "object meta: %s" % (pre["resourceVersion"], old_meta.get("resourceVersion")))
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        if policy not in (None, "Orphan", "Foreground", "Background"):
            raise errors.invalid("meta.k8s.io", "DeleteOptions", "", [errors.field_not_supported(
                "propagationPolicy", policy, ["Foreground", "Background", "Orphan", "nil"])])
        grace = options.get("gracePeriodSeconds")
        finalizers = list(old_meta.get("finalizers") or [])
        is_pod = rtype.group == "" and rtype.kind == "Pod"
        is_namespace = rtype.group == "" and rtype.kind == "Namespace"
        if old_meta.get("deletionTimestamp"):
            if is_pod and grace == 0 and not finalizers and not dry_run:
                final = self.store.delete(key, ns, name)
                self.hooks and self.hooks.after_delete(rtype, final)
                return None, await self.to_version(rtype, final, version)
            return await self.to_version(rtype, old, version), None
        if policy == "Orphan" and FINALIZER_ORPHAN not in finalizers:
            finalizers.append(FINALIZER_ORPHAN)
        if policy == "Foreground" and FINALIZER_FOREGROUND not in finalizers:
            finalizers.append(FINALIZER_FOREGROUND)
        pod_grace = 0
        if is_pod:
            pod_grace = grace if grace is not None else (old.get("spec") or {}).get("terminationGracePeriodSeconds",
                                                                                    30)
            if not (old.get("spec") or {}).get("nodeName") or (old.get("status") or {}).get("phase") in (
                    "Succeeded", "Failed"):
                pod_grace = 0
        namespace_pending = is_namespace and bool((old.get("spec") or {}).get("finalizers"))
        if finalizers or pod_grace or namespace_pending:
            obj = clone(old)
            meta = obj["metadata"]
            meta["deletionTimestamp"] = now_rfc3339() if not pod_grace else (
                datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=pod_grace)
            ).strftime("%Y-%m-%dT%H:%M:%SZ")
            meta["deletionGracePeriodSeconds"] = pod_grace
            if finalizers:
                meta["finalizers"] = finalizers
            if "generation" in meta:
                meta["generation"] += 1
            if is_namespace:
                obj.setdefault("status", {})["phase"] = "Terminating"
            if dry_run:
                return await self.to_version(rtype, obj, version), None
            self.store.update(key, obj)
            if self.hooks is not None:
                self.hooks.after_write(rtype, old, obj)
            return await self.to_version(rtype, obj, version), None
        if dry_run:
            return None, await self.to_version(rtype, old, version)
        final = self.store.delete(key, ns, name)
        if self.hooks is not None:
            self.hooks.after_delete(rtype, final)
        return None, await self.to_version(rtype, final, version)


def event_to_group(obj, group):
    """Convert an Event between core/v1 and events.k8s.io/v1 (they share storage, as in kube-apiserver)."""
    pairs = [("involvedObject", "regarding"), ("message", "note"), ("source", "deprecatedSource"),
             ("firstTimestamp", "deprecatedFirstTimestamp"), ("lastTimestamp", "deprecatedLastTimestamp"),
             ("count", "deprecatedCount"), ("reportingComponent", "reportingController")]
    result = dict(obj)
    if group == "events.k8s.io":
        if obj.get("apiVersion") == "events.k8s.io/v1":
            return obj
        result["apiVersion"] = "events.k8s.io/v1"
        for core, new in pairs:
            if core in result:
                result[new] = result.pop(core)
    else:
        if obj.get("apiVersion") == "v1":
            return obj
        result["apiVersion"] = "v1"
        for core, new in pairs:
            if new in result:
                result[core] = result.pop(new)
    return result


_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def smd_path(path, obj, typeinfo):
    """A strict-decoding path ("spec.containers[0].foo") as structured-merge-diff prints it
    ("spec.containers[name=\"c\"].foo"): list-map items by their keys."""
    node = typeinfo.root if typeinfo is not None else None
    value = obj
    out = []
    for field_name, index in _PATH_TOKEN.findall(path):
        if field_name:
            out.append(("." if out else "") + field_name)
            node = node.resolve(value).child(field_name) if node is not None else None
            value = value.get(field_name) if isinstance(value, dict) else None
            continue
        position = int(index)
        item = value[position] if isinstance(value, list) and position < len(value) else None
        list_node = node.resolve(value) if node is not None else None
        keys = list_node.list_keys if list_node is not None and list_node.list_type == "map" else ()
        defaults = list_node.key_defaults if keys else {}
        if keys and isinstance(item, dict) and all(k in item or k in defaults for k in keys):
            out.append("[%s]" % ",".join("%s=%s" % (k, json.dumps(item.get(k, defaults.get(k)))) for k in keys))
        else:
            out.append("[%d]" % position)
        node = list_node.item() if list_node is not None else None
        value = item
    return "".join(out)


def go_map(value):
    """Go's %+v of a decoded JSON value (map[a:1 b:map[c:true]])."""
    if isinstance(value, dict):
        return "map[" + " ".join("%s:%s" % (k, go_map(value[k])) for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_map(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    return str(value)
