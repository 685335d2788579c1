"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch.

Errors are raised as ApiError the way kube-apiserver answers them
(staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go):
- a JSON patch that is not a JSON array of operations: 400 BadRequest;
- more than 10000 operations: 413 "The allowed maximum operations in a JSON patch is 10000, got N";
- an operation that cannot be applied (failed `test`, missing path, unknown op): 422 Invalid with the
  generic "the server rejected our request due to an error in our request" (the real server drops
  the json-patch library's text; it is kept on the exception as `.detail` for logs);
- strategic merge patch format errors: 400; content not matching $retainKeys: 422; a list item
  without its merge key or an unknown $patch directive: 500, as on a real server.
The server answers 415 for strategic merge patch on custom resources; the caller checks that.

Strategic merge patch follows k8s.io/apimachinery/pkg/util/strategicpatch: maps merge recursively
and `null` deletes; lists merge only where the Go type says patchStrategy=merge (by patchMergeKey for
lists of objects, as a deduplicated union for lists of scalars), other lists are replaced;
directives `$patch: replace|delete|merge` (in maps and as list elements), `$setElementOrder/<list>`,
`$deleteFromPrimitiveList/<list>`, `$retainKeys`. Element order: items named in the patch (or in
$setElementOrder) come in that order, items only on the server keep their relative position.
Pure: inputs are never mutated.
"""
import copy
import json

from .errors import ApiError, bad_request, internal, request_entity_too_large

MAX_JSON_PATCH_OPERATIONS = 10000
REJECTED_MESSAGE = "the server rejected our request due to an error in our request"


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# ---------------------------------------------------------------------------------------------
# RFC 6902

class _PatchFailed(Exception):
    pass


def _rejected(detail):
    err = ApiError(422, "Invalid", REJECTED_MESSAGE, {})
    err.detail = detail
    return err


def _pointer(path):
    if not isinstance(path, str):
        raise _PatchFailed("path is not a string: %r" % (path,))
    if path == "":
        return []
    if not path.startswith("/"):
        raise _PatchFailed("invalid JSON pointer %r: must start with '/'" % path)
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(container, token, path, allow_end):
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise _PatchFailed("invalid array index %r in %s" % (token, path))
    idx = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if idx > limit:
        raise _PatchFailed("array index %d out of bounds in %s" % (idx, path))
    return idx


def _parent(doc, tokens, path, op):
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, path, False)]
        else:
            raise _PatchFailed("%s operation does not apply: doc is missing path: %s" % (op, path))
    return node


def _get(doc, path, op):
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, path, op)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, path, False)]
    raise _PatchFailed("%s operation does not apply: doc is missing path: %s" % (op, path))


def _add(doc, path, value, op="add"):
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, path, op)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, path, True), value)
    else:
        raise _PatchFailed("%s operation does not apply: doc is missing path: %s" % (op, path))
    return doc


def _remove(doc, path, op="remove"):
    tokens = _pointer(path)
    if not tokens:
        raise _PatchFailed("%s operation does not apply: cannot remove the whole document" % op)
    parent = _parent(doc, tokens, path, op)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, path, False))
    raise _PatchFailed("%s operation does not apply: doc is missing path: %s" % (op, path))


def json_equal(a, b):
    """JSON value equality: 1 == 1.0, but true != 1 and key order does not matter."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def json_patch(target, operations):
    """RFC 6902 JSON patch applied to a copy of target."""
    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        raise bad_request("json: cannot unmarshal %s into Go value of type jsonpatch.Patch"
                          % _json_kind(operations))
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise request_entity_too_large_message(len(operations))
    doc = copy.deepcopy(target)
    for operation in operations:
        op = operation.get("op")
        try:
            path = operation.get("path")
            if op in ("add", "replace", "test") and "value" not in operation:
                raise _PatchFailed("%s operation is missing value" % op)
            value = copy.deepcopy(operation.get("value"))
            if op == "add":
                doc = _add(doc, path, value)
            elif op == "remove":
                _remove(doc, path)
            elif op == "replace":
                _get(doc, path, "replace")
                if _pointer(path):
                    _remove(doc, path, "replace")
                doc = _add(doc, path, value, "replace")
            elif op == "move":
                source = operation.get("from")
                if path != source and isinstance(path, str) and isinstance(source, str) and \
                        path.startswith(source + "/"):
                    raise _PatchFailed("move operation does not apply: from %s is a parent of path %s"
                                       % (source, path))
                moved = _remove(doc, source, "move")
                doc = _add(doc, path, moved, "move")
            elif op == "copy":
                doc = _add(doc, path, copy.deepcopy(_get(doc, operation.get("from"), "copy")), "copy")
            elif op == "test":
                try:
                    current = _get(doc, path, "test")
                except _PatchFailed:
                    current = _PatchFailed
                if current is _PatchFailed or not json_equal(current, value):
                    raise _PatchFailed("testing value %s failed" % path)
            else:
                raise _PatchFailed("Unexpected kind: %s" % op)
        except _PatchFailed as exc:
            raise _rejected(str(exc)) from None
    return doc


def request_entity_too_large_message(count):
    err = request_entity_too_large()
    err.message = "The allowed maximum operations in a JSON patch is %d, got %d" % (MAX_JSON_PATCH_OPERATIONS,
                                                                                    count)
    return err


def _json_kind(value):
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if value is None:
        return "null"
    return "number"


# ---------------------------------------------------------------------------------------------
# Strategic merge patch

_DELETE = object()
SET_ORDER = "$setElementOrder/"
DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


def strategic_merge_patch(target, patch, typeinfo):
    """Strategic merge patch of a built-in object (typeinfo from TypeInfo.for_builtin)."""
    if not isinstance(patch, dict):
        raise bad_request("invalid JSON document")
    merged = _smp_map(target if isinstance(target, dict) else {}, patch, typeinfo.root)
    return {} if merged is _DELETE else merged


def _strip(value):
    """A patch value as stored: directives removed."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value if not (isinstance(v, dict) and "$patch" in v and len(v) == 1)]
    return copy.deepcopy(value)


def _smp_map(original, patch, node):  # noqa: C901 - one branch per directive
    directive = patch.get("$patch")
    if directive == "replace":
        return _strip(patch)
    if directive == "delete":
        return _DELETE
    if directive not in (None, "merge"):
        raise internal("unknown patch type: %s in map: %s" % (directive, _go_map(patch)))
    result = copy.deepcopy(original)
    retain = patch.get("$retainKeys")
    if retain is not None:
        if not isinstance(retain, list):
            raise bad_request("invalid patch format of retainKeys")
        for key in patch:
            if not key.startswith("$") and key not in retain:
                raise ApiError(422, "Invalid", REJECTED_MESSAGE, {})
        result = {k: v for k, v in result.items() if k in retain}
    orders, deletions = {}, {}
    for key, value in patch.items():
        if key.startswith(SET_ORDER):
            if not isinstance(value, list):
                raise bad_request("invalid patch format of setElementOrder list")
            orders[key[len(SET_ORDER):]] = value
        elif key.startswith(DELETE_PRIMITIVE):
            if not isinstance(value, list):
                raise bad_request("invalid patch format of primitive list")
            deletions[key[len(DELETE_PRIMITIVE):]] = value
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
            continue
        current = result.get(key)
        child = node.child(key).resolve(value)
        if isinstance(value, dict):
            merged = _smp_map(current if isinstance(current, dict) else {}, value, child)
            if merged is _DELETE:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _smp_list(current if isinstance(current, list) else [], value, child,
                                    orders.pop(key, None))
        else:
            result[key] = copy.deepcopy(value)
    for key, values in deletions.items():
        if isinstance(result.get(key), list):
            result[key] = [v for v in result[key] if not any(json_equal(v, d) for d in values)]
    for key, order in orders.items():  # $setElementOrder for a list the patch does not change
        if isinstance(result.get(key), list):
            child = node.child(key)
            result[key] = _ordered(result[key], order, original.get(key) or [], child.merge_key)
    return result


def _smp_list(original, patch, node, order):
    if "merge" not in node.patch_strategy:
        return _strip(patch)
    if any(isinstance(v, dict) and v.get("$patch") == "replace" for v in patch):
        return _strip([v for v in patch if not (isinstance(v, dict) and v.get("$patch") == "replace")])
    key = node.merge_key
    is_maps = any(isinstance(v, dict) for v in patch + original)
    if not is_maps or not key:
        merged = list(original)
        for value in patch:
            if not any(json_equal(value, have) for have in merged):
                merged.append(copy.deepcopy(value))
        return _ordered(merged, order if order is not None else patch, original, None)
    merged = [copy.deepcopy(v) for v in original]
    named = []
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request("invalid JSON document")
        if key not in item:
            raise internal("map: %s does not contain declared merge key: %s" % (_go_map(item), key))
        if item.get("$patch") == "delete":
            merged = [m for m in merged if not (isinstance(m, dict) and json_equal(m.get(key), item[key]))]
            continue
        named.append(item[key])
        for i, have in enumerate(merged):
            if isinstance(have, dict) and json_equal(have.get(key), item[key]):
                merged[i] = _smp_map(have, item, node.item())
                break
        else:
            merged.append(_strip(item))
    patch_order = order if order is not None else [{key: k} for k in named]
    return _ordered(merged, patch_order, original, key)


def _ordered(items, order, server, key):
    """Items named in `order` in that order; the others interleaved by their `server` positions."""
    def ident(value):
        if key and isinstance(value, dict):
            return json.dumps(value.get(key), sort_keys=True)
        return json.dumps(value, sort_keys=True)

    order_index = {}
    for i, entry in enumerate(order):
        order_index.setdefault(ident(entry), i)
    server_index = {}
    for i, entry in enumerate(server):
        server_index.setdefault(ident(entry), i)
    named = sorted((v for v in items if ident(v) in order_index), key=lambda v: order_index[ident(v)])
    others = sorted((v for v in items if ident(v) not in order_index),
                    key=lambda v: server_index.get(ident(v), len(server)))
    out, i, j = [], 0, 0
    while i < len(others) or j < len(named):
        if i >= len(others):
            out.append(named[j])
            j += 1
        elif j >= len(named):
            out.append(others[i])
            i += 1
        else:
            li, ri = server_index.get(ident(others[i])), server_index.get(ident(named[j]))
            if li is not None and ri is not None and li < ri:
                out.append(others[i])
                i += 1
            else:
                out.append(named[j])
                j += 1
    return out


def _go_map(value):
    """Go's %v of a map, as the strategicpatch error texts print it."""
    if isinstance(value, dict):
        return "map[" + " ".join("%s:%s" % (k, _go_map(value[k])) for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_map(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    return str(value)
