"""Structural-schema engine for CRD openAPIV3Schema: unknown fields, pruning, defaulting, validation.

Follows kube-apiserver (apiextensions-apiserver pkg/apiserver/schema/{pruning,defaulting,objectmeta,
listtype} and k8s.io/kube-openapi pkg/validation) so answers and messages match a real server:

- unknown_fields(): what strict decoding reports (`unknown field "spec.foo"`): unknown ObjectMeta
  fields first ("metadata.foo", "metadata.ownerReferences[0].bar"), then the pruned paths sorted
  ("spec.foo", "spec.items[0].bar", "spec.map.key.x"), then unknown fields of embedded ObjectMeta.
- prune(): drops undeclared fields (x-kubernetes-preserve-unknown-fields keeps them, declared ones
  below are still pruned), keeps apiVersion/kind/metadata at the root and in
  x-kubernetes-embedded-resource objects, drops unknown ObjectMeta fields, and drops `null` for
  non-nullable fields without a default (PruneNonNullableNullsWithoutDefaults).
- apply_defaults(): `default` where the parent exists (also replacing null of non-nullable fields),
  inside items and additionalProperties; defaults are themselves pruned when compiled.
- validate(): kube-openapi checks in its order (type, allOf/anyOf/oneOf/not, string length/pattern,
  format, number bounds/multipleOf, items/minItems/maxItems/uniqueItems, enum, properties/required),
  then embedded-resource apiVersion/kind checks, then x-kubernetes-list-type set/map uniqueness.
  Causes are {"reason", "message", "field"} with the field.Error wording of kubectl-1.33-era servers
  (e.g. `Invalid value: "string": spec.replicas in body must be of type integer: "string"`,
  `Unsupported value: "x": supported values: "a", "b"`, `Too long: may not be more than 5 bytes`).
  Only the formats CRDs validate are checked (date-time, date, duration, uri, hostname, ipv4, ipv6,
  cidr, mac, uuid*, byte, email...); int32/int64 are not range-checked, as on a real server.

Not implemented: x-kubernetes-validations (CEL) rules are ignored (never faked); validation
ratcheting; full ObjectMeta validation of embedded resources (only apiVersion/kind); the exact
"best failure" choice of anyOf/oneOf (go-openapi's MatchCount) is approximated by the branch with the
fewest errors. Property errors come in schema declaration order (the real server iterates Go maps).

validate() expects an object already pruned and defaulted (as the server does before validating).
Pure: inputs are never mutated; compiled schemas are cached per schema object.
"""
import copy
import json
import re

from .fielderrors import (FORMAT_NAMES, err_duplicate, err_invalid, err_not_supported, err_required,
                          err_too_long, err_too_many, err_type, format_ok, go_float, go_quote)
from .goregex import to_python_regex
from .typeinfo import TypeInfo

OBJECT_META_FIELDS = frozenset((
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields"))
OWNER_REFERENCE_FIELDS = frozenset(("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"))
MANAGED_FIELDS_ENTRY_FIELDS = frozenset(("manager", "operation", "apiVersion", "time", "fieldsType",
                                         "fieldsV1", "subresource"))
META_FIELDS = ("apiVersion", "kind", "metadata")
SUPPORTED_FORMATS = frozenset((
    "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3", "uuid4",
    "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor", "byte", "password",
    "date", "duration", "datetime"))


# ---------------------------------------------------------------------------------------------
# Compiled schema nodes

class _Node:
    __slots__ = ("types", "nullable", "props", "addl", "items", "required", "enum", "pattern", "pattern_src",
                 "max_len", "min_len", "minimum", "maximum", "excl_min", "excl_max", "multiple_of",
                 "min_items", "max_items", "unique", "min_props", "max_props", "fmt", "preserve", "embedded",
                 "list_type", "list_keys", "has_default", "default", "all_of", "any_of", "one_of", "not_")


_PATTERNS = {}


def _regex(pattern):
    compiled = _PATTERNS.get(pattern)
    if compiled is None:
        try:
            compiled = re.compile(to_python_regex(pattern))
        except (re.error, ValueError):
            compiled = re.compile(re.escape(pattern))  # the server rejects such CRDs; never crash here
        _PATTERNS[pattern] = compiled
    return compiled


def _compile(schema):
    node = _Node()
    schema = schema if isinstance(schema, dict) else {}
    stype = schema.get("type")
    node.types = (("integer", "string") if schema.get("x-kubernetes-int-or-string")
                  else ((stype,) if stype else ()))
    node.nullable = bool(schema.get("nullable"))
    node.props = {name: _compile(sub) for name, sub in (schema.get("properties") or {}).items()}
    addl = schema.get("additionalProperties")
    node.addl = _compile(addl) if isinstance(addl, dict) else (True if addl is True else None)
    items = schema.get("items")
    node.items = _compile(items) if isinstance(items, dict) else None
    node.required = tuple(schema.get("required") or ())
    node.enum = schema.get("enum")
    node.pattern_src = schema.get("pattern")
    node.pattern = _regex(node.pattern_src) if node.pattern_src else None
    node.max_len, node.min_len = schema.get("maxLength"), schema.get("minLength")
    node.minimum, node.maximum = schema.get("minimum"), schema.get("maximum")
    node.excl_min, node.excl_max = bool(schema.get("exclusiveMinimum")), bool(schema.get("exclusiveMaximum"))
    node.multiple_of = schema.get("multipleOf")
    node.min_items, node.max_items = schema.get("minItems"), schema.get("maxItems")
    node.unique = bool(schema.get("uniqueItems"))
    node.min_props, node.max_props = schema.get("minProperties"), schema.get("maxProperties")
    fmt = (schema.get("format") or "").replace("-", "")
    node.fmt = fmt if fmt in SUPPORTED_FORMATS else None
    node.preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    node.embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    node.list_type = schema.get("x-kubernetes-list-type")
    node.list_keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
    node.all_of = [_compile(s) for s in schema.get("allOf") or ()]
    node.any_of = [_compile(s) for s in schema.get("anyOf") or ()]
    node.one_of = [_compile(s) for s in schema.get("oneOf") or ()]
    node.not_ = _compile(schema["not"]) if isinstance(schema.get("not"), dict) else None
    node.has_default = "default" in schema
    node.default = _prune(schema["default"], node, [], None, False) if node.has_default else None
    return node


# ---------------------------------------------------------------------------------------------
# Pruning (pruning/algorithm.go + defaulting/prunenulls.go + objectmeta coercion)

def _join(path):
    return "".join(path)


def _prune_object_meta(meta, prefix, record):
    """Keep only ObjectMeta fields (the typed round trip the server does); record unknown paths."""
    if not isinstance(meta, dict):
        return meta
    out = {}
    for key, value in meta.items():
        if key not in OBJECT_META_FIELDS:
            if record is not None:
                record.append("%s.%s" % (prefix, key))
            continue
        if value is None:
            continue
        if key in ("ownerReferences", "managedFields") and isinstance(value, list):
            known = OWNER_REFERENCE_FIELDS if key == "ownerReferences" else MANAGED_FIELDS_ENTRY_FIELDS
            items = []
            for i, item in enumerate(value):
                if isinstance(item, dict):
                    for sub in item:
                        if sub not in known and record is not None:
                            record.append("%s.%s[%d].%s" % (prefix, key, i, sub))
                    item = {k: v for k, v in item.items() if k in known}
                items.append(item)
            value = items
        out[key] = value
    return out


def _drop_null(value, schema):
    """PruneNonNullableNullsWithoutDefaults: a null field of a non-nullable schema without default."""
    return value is None and schema is not None and not schema.nullable and not schema.has_default


def _prune(x, s, path, record, embedded_root, meta_record=None, skip=False):
    """Pruned copy of x under compiled schema s. `path` is a list of path fragments (for records).

    skip: the value sits below a preserve-unknown-fields array (skipPrune): undeclared keys are kept.
    """
    if isinstance(x, dict):
        if s is None:
            if record is not None:
                record.extend(_join(path + (["." if path else ""] + [k])) for k in x)
            return {}
        embedded = s.embedded or embedded_root
        out = {}
        for key, value in x.items():
            if embedded and key in META_FIELDS:
                sub = s.props.get(key)
                if _drop_null(value, sub):
                    continue
                if key == "metadata" and isinstance(value, dict):
                    prefix = _join(path + ([".metadata"] if path else ["metadata"]))
                    value = _prune_object_meta(value, prefix, meta_record)
                out[key] = value
                continue
            sub = s.props.get(key)
            if sub is None and s.addl is not None:
                sub = s.addl if s.addl is not True else None
                declared = True
            else:
                declared = sub is not None
            if declared:
                if _drop_null(value, sub):
                    continue
                child_path = path + ([".", key] if path else [key])
                out[key] = _prune(value, sub, child_path, record, False, meta_record)
            elif s.preserve or skip:
                out[key] = value  # x-kubernetes-preserve-unknown-fields: unknown subtree kept as is
            else:
                if record is not None:
                    record.append(_join(path + ([".", key] if path else [key])))
        return out
    if isinstance(x, list):
        items = s.items if s is not None else None
        keep = s is not None and (s.preserve or skip)
        if keep and items is None:
            return list(x)
        return [_prune(v, items, path + ["[%d]" % i], record, False, meta_record, keep) for i, v in enumerate(x)]
    return x


# ---------------------------------------------------------------------------------------------
# Defaulting (defaulting/algorithm.go)

def _default(x, s):
    if s is None:
        return x
    if isinstance(x, dict):
        out = dict(x)
        for key, prop in s.props.items():
            if prop.has_default and (key not in out or (out[key] is None and not prop.nullable)):
                out[key] = copy.deepcopy(prop.default)
        for key, value in out.items():
            prop = s.props.get(key)
            if prop is not None:
                out[key] = _default(value, prop)
            elif isinstance(s.addl, _Node):
                if value is None and not s.addl.nullable and s.addl.has_default:
                    value = copy.deepcopy(s.addl.default)
                out[key] = _default(value, s.addl)
        return out
    if isinstance(x, list) and s.items is not None:
        out = []
        for value in x:
            if value is None and not s.items.nullable and s.items.has_default:
                value = copy.deepcopy(s.items.default)
            out.append(_default(value, s.items))
        return out
    return x


# ---------------------------------------------------------------------------------------------
# Validation (kube-openapi validate, converted like apiextensions kubeOpenAPIResultToFieldErrors)

def _json_type(data):
    if isinstance(data, bool):
        return "boolean"
    if isinstance(data, str):
        return "string"
    if isinstance(data, int):
        return "integer"
    if isinstance(data, float):
        return "number"
    if isinstance(data, list):
        return "array"
    if isinstance(data, dict):
        return "object"
    return "null"


def _field(name):
    """errPath of kubeOpenAPIResultToFieldErrors: the go-openapi name without one leading '.'."""
    return name[1:] if name.startswith(".") else name


def _num(value):
    """%v of a schema bound (float64 in the Go schema)."""
    return go_float(float(value))


def _validate(s, data, path, errs):  # noqa: C901 - mirrors SchemaValidator's validator chain
    if data is None:
        if s.types and not s.nullable:
            name = ",".join(s.types)
            errs.append(err_type(_field(path), "null", '%s in body must be of type %s: "null"' % (path, name)))
        if s.enum:
            _validate_enum(s, data, path, errs)
        return
    jtype = _json_type(data)
    if s.types:
        ok = jtype in s.types or (jtype == "number" and "integer" in s.types and float(data).is_integer()) or (
            jtype == "integer" and "number" in s.types)
        if not ok:
            errs.append(err_type(_field(path), jtype, '%s in body must be of type %s: "%s"'
                                 % (path, ",".join(s.types), jtype)))
    if s.all_of or s.any_of or s.one_of or s.not_ is not None:
        _validate_props(s, data, path, errs)
    if jtype == "string":
        if s.max_len is not None and len(data) > s.max_len:
            errs.append(err_too_long(_field(path), s.max_len))
        elif s.min_len is not None and len(data) < s.min_len:
            errs.append(err_invalid(_field(path), data, "%s in body should be at least %d chars long"
                                    % (path, s.min_len)))
        elif s.pattern is not None and not s.pattern.search(data):
            errs.append(err_invalid(_field(path), data, "%s in body should match '%s'" % (path, s.pattern_src)))
        if s.fmt is not None and not format_ok(s.fmt, data):
            name = FORMAT_NAMES.get(s.fmt, s.fmt)
            errs.append(err_type(_field(path), data, "%s in body must be of type %s: %s"
                                 % (path, name, go_quote(data))))
    elif jtype in ("integer", "number"):
        _validate_number(s, data, path, errs)
    elif jtype == "array":
        if s.items is not None:
            for i, item in enumerate(data):
                _validate(s.items, item, "%s[%d]" % (path, i), errs)
        if s.min_items is not None and len(data) < s.min_items:
            errs.append(err_invalid(_field(path), len(data), "%s in body should have at least %d items"
                                    % (path, s.min_items)))
        if s.max_items is not None and len(data) > s.max_items:
            errs.append(err_too_many(_field(path), len(data), s.max_items))
        if s.unique and len({json.dumps(v, sort_keys=True) for v in data}) != len(data):
            errs.append(err_invalid(_field(path), "", "%s in body shouldn't contain duplicates" % path))
    if s.enum:
        _validate_enum(s, data, path, errs)
    if jtype == "object":
        _validate_object(s, data, path, errs)


def _validate_enum(s, data, path, errs):
    for allowed in s.enum:
        if allowed == data and type(allowed) is type(data) or (
                isinstance(allowed, (int, float)) and not isinstance(allowed, bool)
                and isinstance(data, (int, float)) and not isinstance(data, bool) and allowed == data):
            return
    values = [v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for v in s.enum]
    errs.append(err_not_supported(_field(path), data, values))


def _validate_number(s, data, path, errs):
    if s.multiple_of:
        quotient = data / s.multiple_of
        if abs(quotient - round(quotient)) > 1e-9:
            errs.append(err_invalid(_field(path), data, "%s in body should be a multiple of %s"
                                    % (path, _num(s.multiple_of))))
    if s.minimum is not None and (data < s.minimum or (s.excl_min and data == s.minimum)):
        errs.append(err_invalid(_field(path), data, "%s in body should be greater than %s%s"
                                % (path, "" if s.excl_min else "or equal to ", _num(s.minimum))))
    if s.maximum is not None and (data > s.maximum or (s.excl_max and data == s.maximum)):
        errs.append(err_invalid(_field(path), data, "%s in body should be less than %s%s"
                                % (path, "" if s.excl_max else "or equal to ", _num(s.maximum))))


def _validate_object(s, data, path, errs):
    count = len(data)
    if s.min_props is not None and count < s.min_props:
        errs.append(err_invalid(_field(path), count, "%s in body should have at least %d properties"
                                % (path, s.min_props)))
        return
    if s.max_props is not None and count > s.max_props:
        errs.append(err_too_many(_field(path), count, s.max_props))
        return
    if isinstance(s.addl, _Node):
        for key, value in data.items():
            if key not in s.props:
                _validate(s.addl, value, path + "." + key, errs)
    for name, prop in s.props.items():
        if name in data:
            _validate(prop, data[name], (path + "." + name) if path else name, errs)
    for name in s.required:
        if name not in data:
            errs.append(err_required(_field(path + "." + name)))


def _validate_props(s, data, path, errs):
    composite = []
    if s.any_of:
        best = None
        for branch in s.any_of:
            branch_errs = []
            _validate(branch, data, path, branch_errs)
            if not branch_errs:
                best = None
                break
            if best is None or len(branch_errs) < len(best):
                best = branch_errs
        else:
            composite.append("%s must validate at least one schema (anyOf)" % go_quote(path))
        if best:
            composite.append(best)
    if s.one_of:
        valid, best = 0, None
        for branch in s.one_of:
            branch_errs = []
            _validate(branch, data, path, branch_errs)
            if not branch_errs:
                valid += 1
            elif valid == 0 and (best is None or len(branch_errs) < len(best)):
                best = branch_errs
        if valid != 1:
            extra = "Found none valid" if valid == 0 else "Found %d valid alternatives" % valid
            composite.append("%s must validate one and only one schema (oneOf). %s" % (go_quote(path), extra))
            if valid == 0 and best:
                composite.append(best)
    if s.all_of:
        passed = 0
        for branch in s.all_of:
            branch_errs = []
            _validate(branch, data, path, branch_errs)
            if not branch_errs:
                passed += 1
            composite.append(branch_errs)
        if passed != len(s.all_of):
            composite.append("%s must validate all the schemas (allOf)%s"
                             % (go_quote(path), ". None validated" if passed == 0 else ""))
    if s.not_ is not None:
        branch_errs = []
        _validate(s.not_, data, path, branch_errs)
        if not branch_errs:
            composite.append("%s must not validate the schema (not)" % go_quote(path))
    for entry in composite:
        if isinstance(entry, str):  # errors.New results become field.Invalid(nil, "", msg)
            errs.append(err_invalid("", "", entry))
        else:
            errs.extend(entry)


# ---------------------------------------------------------------------------------------------
# Embedded resources (objectmeta/validation.go) and list-type invariants (listtype/validation.go)

def _child(path, name):
    return "%s.%s" % (path, name) if path else name


def _validate_embedded(x, s, path, errs):
    if s is None:
        return
    if isinstance(x, dict):
        if s.embedded:
            for name in ("apiVersion", "kind"):
                value = x.get(name)
                if name not in x or value == "":
                    errs.append(err_required(_child(path, name)))
                elif not isinstance(value, str):
                    errs.append(err_invalid(_child(path, name), value, "must be a string"))
        for key, value in x.items():
            sub = s.props.get(key)
            if sub is not None:
                _validate_embedded(value, sub, _child(path, key), errs)
            elif isinstance(s.addl, _Node):
                _validate_embedded(value, s.addl, "%s[%s]" % (path, key), errs)
    elif isinstance(x, list):
        for i, value in enumerate(x):
            _validate_embedded(value, s.items, "%s[%d]" % (path, i), errs)


_UNSPECIFIED = object()


def _validate_lists(x, s, path, errs):
    if s is None:
        return
    if isinstance(x, dict):
        if isinstance(s.addl, _Node):
            for key, value in x.items():
                if key not in s.props:
                    _validate_lists(value, s.addl, "%s[%s]" % (path, key), errs)
        for key, value in x.items():
            sub = s.props.get(key)
            if sub is not None:
                _validate_lists(value, sub, _child(path, key), errs)
    elif isinstance(x, list):
        if s.list_type == "set":
            for i in _duplicates([json.dumps(v, sort_keys=True) for v in x]):
                errs.append(err_duplicate("%s[%d]" % (path, i), x[i]))
        elif s.list_type == "map":
            bad = [i for i, v in enumerate(x) if v is not None and not isinstance(v, dict)]
            if bad:
                errs.append(err_invalid("%s[%d]" % (path, bad[0]), x[bad[0]],
                                        "must be an object for an array of list-type map"))
            elif len(x) > 1:
                keys = []
                for item in x:
                    key = {k: item[k] for k in s.list_keys if isinstance(item, dict) and k in item}
                    keys.append(key)
                for i in _duplicates([json.dumps(k, sort_keys=True) for k in keys]):
                    errs.append(err_duplicate("%s[%d]" % (path, i), keys[i]))
        for i, value in enumerate(x):
            _validate_lists(value, s.items, "%s[%d]" % (path, i), errs)


def _duplicates(identities):
    """Indexes of the second appearance of each repeated identity (validateListSet)."""
    seen, out = {}, []
    for i, ident in enumerate(identities):
        seen[ident] = seen.get(ident, 0) + 1
        if seen[ident] == 2:
            out.append(i)
    return out


# ---------------------------------------------------------------------------------------------

class StructuralSchema:
    """A CRD version's openAPIV3Schema, compiled once (see module docstring)."""

    _cache = {}

    def __init__(self, openapi_v3_schema):
        self.source = openapi_v3_schema or {}
        cached = StructuralSchema._cache.get(id(openapi_v3_schema))
        if cached is not None and cached[0] is openapi_v3_schema:
            self.root = cached[1]
        else:
            self.root = _compile(self.source)
            if len(StructuralSchema._cache) > 512:
                StructuralSchema._cache.clear()
            StructuralSchema._cache[id(openapi_v3_schema)] = (openapi_v3_schema, self.root)
        self._typeinfo = None

    @property
    def typeinfo(self):
        if self._typeinfo is None:
            self._typeinfo = TypeInfo.for_crd_schema(self.source)
        return self._typeinfo

    def unknown_fields(self, obj):
        """Paths strict field validation reports as `unknown field "<path>"`, in the server's order."""
        meta_paths, pruned_paths, embedded_paths = [], [], []
        if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            _prune_object_meta(obj["metadata"], "metadata", meta_paths)
        _prune(obj, self.root, [], pruned_paths, True, embedded_paths)
        embedded_paths = [p for p in embedded_paths if not p.startswith("metadata.")]
        return meta_paths + sorted(pruned_paths) + embedded_paths

    def prune(self, obj):
        """Copy of obj without undeclared fields (and without nulls of non-nullable, non-defaulted fields)."""
        if not isinstance(obj, dict):
            return copy.deepcopy(obj)
        return copy.deepcopy(_prune(obj, self.root, [], None, True))

    def apply_defaults(self, obj):
        """Copy of obj with the schema's defaults applied."""
        return _default(copy.deepcopy(obj), self.root)

    def validate(self, obj):
        """Causes (schema, embedded resources, list-type invariants) for an already pruned+defaulted obj."""
        errs = []
        _validate(self.root, obj, "", errs)
        _validate_embedded(obj, self.root, "", errs)
        _validate_lists(obj, self.root, "", errs)
        return errs

    def prune_and_unknown(self, obj):
        """(pruned copy, unknown field paths) in one pass."""
        return self.prune(obj), self.unknown_fields(obj)


def compile_check(openapi_v3_schema):
    """Compile a schema (raises on a schema this engine cannot handle); used by tests over real CRDs."""
    return StructuralSchema(openapi_v3_schema)
