"""Server-side apply and field ownership (metadata.managedFields), after structured-merge-diff.

Field sets are Python sets of paths; a path is a tuple of elements ("f", name) for fields and map
keys, ("k", '{"name":"c"}') for list-map items, ("v", '"x"') for set items. FieldsV1 encodes such a
set as nested objects ("f:spec", "k:{...}", "v:...", "." when a non-leaf path is itself owned).

- apply(): live.Merge(applied) by the type's list/map semantics (TypeInfo), the applier's set is the
  applied configuration's field set; fields the applier applied last time but omits now are removed
  unless some manager still owns them (or something below them); then fields whose value changes and
  that other managers own are conflicts: 409 with one FieldManagerConflict cause per field, unless
  force=True, which takes them over. Applying values equal to the live ones shares ownership.
- update_managed_fields(): for create/update/patch (operation "Update"): the manager gains every
  field it added or changed, and loses fields it removed; other managers lose what it changed.

Managers are keyed by (manager, operation, subresource); entries come out sorted like the real
server (operation, time, manager, apiVersion, subresource). Fields the server owns are never
recorded (apiVersion, kind, metadata.name/namespace/uid/resourceVersion/generation/
creationTimestamp/selfLink/managedFields). `ignored_paths` lets the caller leave out fields reset by
the subresource split (e.g. ("status",) for main-resource writes when /status exists).

Limits: no version conversion of field sets (all managers are assumed to use the same apiVersion);
an applier's time is not updated by a no-op apply (as on a real server); list items without a key
in a list-map are not addressable (the applied configuration is then rejected with 400);
managedFields sent by clients in updates are ignored (ownership is always recomputed).
Pure except for the default `now` (the current UTC time) when the caller does not pass one.
"""
import copy
import json
from datetime import datetime, timezone

from .errors import ApiError, bad_request
from .patch import json_equal
from .typeinfo import LIST, OBJECT, BUILTIN_ZERO_VALUES, list_item_key

STRIPPED = {(), (("f", "apiVersion"),), (("f", "kind"),), (("f", "metadata"),)} | {
    (("f", "metadata"), ("f", name)) for name in (
        "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName", "generation",
        "managedFields", "resourceVersion")}
_MANAGED_PREFIX = (("f", "metadata"), ("f", "managedFields"))


def _now(now):
    if now:
        return now
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------
# Field sets

def _element(node, item):
    ident = list_item_key(node, item)
    return ident


def field_set(value, node, path=(), out=None):
    """The set of paths a configuration sets (structured-merge-diff ToFieldSet)."""
    out = set() if out is None else out
    node = node.resolve(value)
    if node.kind == OBJECT and isinstance(value, dict):
        if node.map_type == "atomic":
            out.add(path)
            return out
        for key, sub in value.items():
            child_path = path + (("f", key),)
            field_set(sub, node.child(key), child_path, out)
            if sub is None or (isinstance(sub, dict) and not sub) or not node.is_struct_field(key):
                out.add(child_path)
    elif node.kind == LIST and isinstance(value, list):
        if node.list_type == "atomic":
            out.add(path)
            return out
        for item in value:
            element = _element(node, item)
            if element is None:
                out.add(path)
                continue
            child_path = path + (element,)
            field_set(item, node.item(), child_path, out)
            out.add(child_path)
    else:
        out.add(path)
    return out


def _filter(paths, ignored):
    kept = set()
    for path in paths:
        if path in STRIPPED or path[:2] == _MANAGED_PREFIX:
            continue
        if any(path[:len(prefix)] == prefix for prefix in ignored):
            continue
        kept.add(path)
    return kept


def _ignored(ignored_paths):
    out = []
    for entry in ignored_paths or ():
        parts = entry.split(".") if isinstance(entry, str) else list(entry)
        out.append(tuple(("f", p) for p in parts))
    return out


def compare(lhs, rhs, node):
    """(added, modified, removed) paths from lhs to rhs (structured-merge-diff Compare)."""
    res = (set(), set(), set())
    _compare(lhs, rhs, True, True, node, (), res)
    return res


_ABSENT = object()


def _compare(lhs, rhs, lhs_here, rhs_here, node, path, res):  # noqa: C901
    added, modified, removed = res
    node = node.resolve(rhs if rhs_here and rhs is not None else lhs)
    if lhs_here and lhs is None and isinstance(rhs, (dict, list)):
        lhs = type(rhs)()  # a null the zero value holds: present, empty
    if rhs_here and rhs is None and isinstance(lhs, (dict, list)):
        rhs = type(lhs)()
    ldict, rdict = isinstance(lhs, dict) and lhs_here, isinstance(rhs, dict) and rhs_here
    llist, rlist = isinstance(lhs, list) and lhs_here, isinstance(rhs, list) and rhs_here
    leaf = True
    if node.kind == OBJECT and (ldict or rdict) and (ldict or not lhs_here) and (rdict or not rhs_here):
        both_empty = not (lhs if ldict else None) and not (rhs if rdict else None)
        if node.map_type != "atomic" and not both_empty:
            leaf = False
            left, right = (lhs if ldict else {}), (rhs if rdict else {})
            for key in list(left) + [k for k in right if k not in left]:
                _compare(left.get(key), right.get(key), key in left, key in right, node.child(key),
                         path + (("f", key),), res)
    elif node.kind == LIST and node.list_type != "atomic" and (llist or rlist) and \
            (llist or not lhs_here) and (rlist or not rhs_here):
        left = _index_items(node, lhs if llist else [])
        right = _index_items(node, rhs if rlist else [])
        if left is not None and right is not None:
            leaf = False
            for element in list(left) + [e for e in right if e not in left]:
                _compare(left.get(element), right.get(element), element in left, element in right,
                         node.item(), path + (element,), res)
                if element not in left:
                    added.add(path + (element,))
                elif element not in right:
                    removed.add(path + (element,))
    if leaf:
        if not lhs_here and rhs_here:
            added.add(path)
        elif lhs_here and not rhs_here:
            removed.add(path)
        elif lhs_here and rhs_here and not json_equal(lhs, rhs):
            modified.add(path)
    elif not lhs_here:
        added.add(path)
    elif not rhs_here:
        removed.add(path)


def _index_items(node, items):
    out = {}
    for item in items:
        element = _element(node, item)
        if element is None:
            return None
        out.setdefault(element, item)
    return out


# ---------------------------------------------------------------------------------------------
# FieldsV1

def _encode_element(element):
    kind, value = element
    return "%s:%s" % ({"f": "f", "k": "k", "v": "v", "i": "i"}[kind], value)


def _decode_element(text):
    kind, _separator, value = text.partition(":")
    return (kind, value)


_ORDER = {"f": 0, "v": 1, "k": 2, "i": 3}


def encode_fields(paths):
    """FieldsV1 object of a path set ("." marks owned non-leaf paths; children sorted)."""
    tree = {}
    members = set(paths)
    for path in members:
        node = tree
        for element in path:
            node = node.setdefault(element, {})

    def render(node, prefix):
        out = {}
        if node and prefix in members:
            out["."] = {}
        for element in sorted(node, key=lambda e: (_ORDER.get(e[0], 9), e[1])):
            out[_encode_element(element)] = render(node[element], prefix + (element,))
        return out

    return render(tree, ())


def decode_fields(fields_v1, prefix=()):
    """Path set of a FieldsV1 object."""
    out = set()
    if not isinstance(fields_v1, dict):
        return out
    for key, sub in fields_v1.items():
        if key == ".":
            out.add(prefix)
            continue
        path = prefix + (_decode_element(key),)
        if not sub:
            out.add(path)
        else:
            out |= decode_fields(sub, path)
    return out


def path_string(path):
    """structured-merge-diff Path.String(): .spec.containers[name="c"].image, .finalizers[="x"]."""
    parts = []
    for kind, value in path:
        if kind == "f":
            parts.append("." + value)
        elif kind == "k":
            key = json.loads(value)
            parts.append("[" + ",".join("%s=%s" % (k, json.dumps(key[k], ensure_ascii=False))
                                        for k in sorted(key)) + "]")
        elif kind == "v":
            parts.append("[=" + value + "]")
        else:
            parts.append("[%s]" % value)
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# Managers

def _managers(obj):
    """{(manager, operation, subresource): {"set": paths, "apiVersion": .., "time": ..}} of an object."""
    out = {}
    entries = ((obj or {}).get("metadata") or {}).get("managedFields") or []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        key = (entry.get("manager", ""), entry.get("operation", ""), entry.get("subresource", ""))
        paths = decode_fields(entry.get("fieldsV1") or {})
        if key in out:
            out[key]["set"] |= paths
        else:
            out[key] = {"set": paths, "apiVersion": entry.get("apiVersion", ""), "time": entry.get("time")}
    return out


def _encode_managers(managers):
    entries = []
    for (manager, operation, subresource), info in managers.items():
        if not info["set"]:
            continue
        entry = {"manager": manager, "operation": operation, "apiVersion": info["apiVersion"]}
        if info.get("time"):
            entry["time"] = info["time"]
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = encode_fields(info["set"])
        if subresource:
            entry["subresource"] = subresource
        entries.append(entry)
    entries.sort(key=lambda e: (e["operation"], e.get("time") or "", e["manager"], e["apiVersion"],
                                e.get("subresource", "")))
    return entries


def _print_manager(key, info):
    manager, operation, subresource = key
    text = json.dumps(manager)
    if subresource:
        text += " with subresource %s" % json.dumps(subresource)
    if operation == "Update":
        text += " using %s" % info["apiVersion"]
        if info.get("time"):
            text += " at %s" % info["time"]
    return text


def _conflict_error(conflicts):
    """409 like fieldmanager NewConflictError: one cause per field, message per manager."""
    causes, lines = [], []
    for key, info, paths in conflicts:
        for path in sorted(paths, key=path_string):
            causes.append({"reason": "FieldManagerConflict",
                           "message": "conflict with %s" % _print_manager(key, info),
                           "field": path_string(path)})
    if len(causes) == 1:
        message = "Apply failed with 1 conflict: %s: %s" % (causes[0]["message"], causes[0]["field"])
    else:
        for key, info, paths in sorted(conflicts, key=lambda c: c[0][0]):
            lines.append("conflicts with %s:" % _print_manager(key, info))
            lines.extend("- %s" % path_string(p) for p in sorted(paths, key=path_string))
        message = "Apply failed with %d conflicts: %s" % (len(causes), "\n".join(lines))
    return ApiError(409, "Conflict", message, {"causes": causes})


# ---------------------------------------------------------------------------------------------
# Merge and prune

def merge(live, config, node):
    """live.Merge(config): config wins, maps merge, list-maps/sets merge by item identity."""
    node = node.resolve(config)
    if node.kind == OBJECT and isinstance(config, dict):
        if node.map_type == "atomic" or not isinstance(live, dict):
            return copy.deepcopy(config)
        out = dict(live)
        for key, value in config.items():
            out[key] = merge(live[key], value, node.child(key)) if key in live else copy.deepcopy(value)
        return out
    if node.kind == LIST and isinstance(config, list) and node.list_type != "atomic" and isinstance(live, list):
        return _merge_list(live, config, node)
    return copy.deepcopy(config)


def _merge_list(live, config, node):
    """structured-merge-diff's list merge: applied order wins, live-only items keep their place."""
    left = [(_element(node, v), v) for v in live]
    right = [(_element(node, v), v) for v in config]
    if any(e is None for e, _value in left) or any(e is None for e, _value in right):
        return copy.deepcopy(config)
    left_map = dict(reversed(left))
    right_map = dict(reversed(right))
    shared = iter([e for e, _value in right if e in left_map])
    wanted = next(shared, None)  # the shared item expected next, in applied order
    out, merged_right, li, ri = [], set(), 0, 0
    while li < len(left) or ri < len(right):
        if li < len(left) and ri < len(right):
            element = left[li][0]
            if element == right[ri][0]:
                merged_right.add(element)
                out.append(merge(left_map[element], right_map[element], node.item()))
                li, ri = li + 1, ri + 1
                wanted = next(shared, None)
                continue
            if element in right_map and wanted is not None and wanted != element:
                li += 1  # shared item, but not the one wanted in this round
                continue
        if li < len(left):
            element = left[li][0]
            if element not in right_map:
                out.append(copy.deepcopy(left[li][1]))
                li += 1
                continue
            if element in merged_right:
                li += 1
                continue
        if ri < len(right):
            element = right[ri][0]
            merged_right.add(element)
            out.append(merge(left_map[element], right_map[element], node.item()) if element in left_map
                       else copy.deepcopy(right_map[element]))
            ri += 1
            if wanted is not None and wanted == element:
                wanted = next(shared, None)
    return out


def _remove_paths(value, node, paths, keep, path=()):
    """Copy of value without the paths in `paths` (unless kept: owned at or below by someone)."""
    node = node.resolve(value)
    if node.kind == OBJECT and isinstance(value, dict) and node.map_type != "atomic":
        out = {}
        for key, sub in value.items():
            child = path + (("f", key),)
            if child in paths and not keep(child):
                continue
            out[key] = _remove_paths(sub, node.child(key), paths, keep, child)
        return out
    if node.kind == LIST and isinstance(value, list) and node.list_type != "atomic":
        out = []
        for item in value:
            element = _element(node, item)
            child = path + (element,) if element is not None else None
            if child is not None and child in paths and not keep(child):
                continue
            out.append(_remove_paths(item, node.item(), paths, keep, child) if child else item)
        return out
    return value


def _owned_prefixes(managers):
    """Every owned path and all its ancestors: a path is 'kept' if it or something below is owned."""
    owned = set()
    for info in managers.values():
        for path in info["set"]:
            for i in range(len(path) + 1):
                owned.add(path[:i])
    return owned


# ---------------------------------------------------------------------------------------------

def apply(live, applied, manager, force, typeinfo, now=None, subresource="", ignored_paths=None):
    """Server-side apply of `applied` over `live` (None = create); returns the new object."""
    root = typeinfo.root
    live_obj = copy.deepcopy(live) if isinstance(live, dict) else {}
    managers = _managers(live_obj)
    live_obj.get("metadata", {}).pop("managedFields", None)
    config = copy.deepcopy(applied)
    if isinstance(config.get("metadata"), dict):
        config["metadata"].pop("managedFields", None)
    _check_keys(config, root, "")
    merged = merge(live_obj, config, root)
    ignored = _ignored(ignored_paths)
    key = (manager, "Apply", subresource or "")
    previous = managers.get(key)
    last_set = previous["set"] if previous else set()
    new_set = _filter(field_set(config, root), ignored)
    managers[key] = {"set": new_set, "apiVersion": config.get("apiVersion") or live_obj.get("apiVersion", ""),
                     "time": previous.get("time") if previous else None}
    dropped = last_set - new_set
    if dropped:
        owned = _owned_prefixes(managers)
        merged = _remove_paths(merged, root, dropped, lambda p: p in owned)
    added, modified, _removed = compare(live_obj, merged, root)
    changed = _filter(added | modified, ignored)
    conflicts = []
    for other, info in managers.items():
        if other == key:
            continue
        overlap = info["set"] & changed
        if overlap:
            conflicts.append((other, info, overlap))
    if conflicts and not force:
        raise _conflict_error(conflicts)
    for other, _info, overlap in conflicts:
        managers[other]["set"] = managers[other]["set"] - overlap
    if not json_equal(merged, live_obj):
        managers[key]["time"] = _now(now)
    merged.setdefault("metadata", {})
    merged["metadata"]["managedFields"] = _encode_managers(managers)
    if not merged["metadata"]["managedFields"]:
        del merged["metadata"]["managedFields"]
    return merged


def _check_keys(value, node, path):
    """Reject list-map items without key fields, as the typed conversion of the patch does."""
    node = node.resolve(value)
    if node.kind == OBJECT and isinstance(value, dict):
        for key, sub in value.items():
            _check_keys(sub, node.child(key), "%s.%s" % (path, key))
    elif node.kind == LIST and isinstance(value, list):
        for i, item in enumerate(value):
            if node.list_type == "map" and _element(node, item) is None:
                missing = next((k for k in node.list_keys if not isinstance(item, dict) or k not in item),
                               node.list_keys[0] if node.list_keys else "")
                raise bad_request("failed to create typed patch object: %s: element %d: associative list "
                                  "with keys has an element that omits key field %s (and doesn't have "
                                  "default value)" % (path, i, json.dumps(missing)))
            _check_keys(item, node.item(), "%s[%d]" % (path, i))


def update_managed_fields(old, new, manager, operation, subresource, typeinfo, now=None, ignored_paths=None):
    """metadata.managedFields for `new` after a create/update/patch by `manager` (old None = create)."""
    root = typeinfo.root
    managers = _managers(old)
    zero = _zero_value(typeinfo, new)
    baseline = _fill(copy.deepcopy(old), zero) if isinstance(old, dict) else zero
    current = _fill(copy.deepcopy(new), zero)
    for obj in (baseline, current):
        if isinstance(obj.get("metadata"), dict):
            obj["metadata"].pop("managedFields", None)
    ignored = _ignored(ignored_paths)
    added, modified, removed = compare(baseline, current, root)
    changed = _filter(added | modified, ignored)
    removed = _filter(removed, ignored)
    key = (manager, operation or "Update", subresource or "")
    for other, info in managers.items():
        if other != key:
            info["set"] = info["set"] - changed
    if changed or key in managers:
        previous = managers.get(key)
        paths = ((previous["set"] - removed) if previous else set()) | changed
        time = _now(now) if changed else (previous or {}).get("time")
        managers[key] = {"set": paths, "apiVersion": new.get("apiVersion", ""), "time": time}
    return _encode_managers(managers)


def _zero_value(typeinfo, new):
    """What the object looks like before a create: {} for CRDs, the Go zero value for built-ins."""
    zero = {}
    for (group, kind), value in BUILTIN_ZERO_VALUES.items():
        if typeinfo.name == ("%s/%s" % (group, kind) if group else kind):
            zero = copy.deepcopy(value)
    for name in ("apiVersion", "kind"):
        if new.get(name):
            zero[name] = new[name]
    return zero


def _fill(obj, zero):
    """obj with the Go zero value's paths it lacks (a decoded built-in always has them)."""
    for key, value in zero.items():
        if key not in obj:
            obj[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(obj[key], dict):
            _fill(obj[key], value)
    return obj
