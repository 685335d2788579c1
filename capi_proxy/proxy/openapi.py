"""OpenAPI v3 as the client sees it: kubectl finds schemas by group/version/kind and paths by group.

Only group positions change: path keys and serverRelativeURLs (with the core's translate_path) and
the `x-kubernetes-group-version-kind` groups (with its GroupMap). Schemas are not touched.
"""
import json

from capi_proxy.core import TO_PRIVATE, TO_STANDARD, translate_path

PREFIX = "/openapi/v3"
_GVK = "x-kubernetes-group-version-kind"


def upstream_path(raw_path, group_map):
    """/openapi/v3/apis/<standard group>/<v> -> the private group's document path."""
    rest = raw_path[len(PREFIX):]
    if rest.startswith("/apis/"):
        return PREFIX + translate_path(rest, TO_PRIVATE, group_map)
    return raw_path


def client_location(location, group_map):
    """A redirect's Location as the client asks: /openapi/v3/apis/<private group>/... -> the standard group's path
    (kube-apiserver answers a document request without its hash with a 301 to the hashed URL)."""
    path, mark, query = location.partition("?")
    if path.startswith(PREFIX + "/apis/"):
        return PREFIX + translate_path(path[len(PREFIX):], TO_STANDARD, group_map) + mark + query
    if path.startswith("/apis/"):
        return translate_path(path, TO_STANDARD, group_map) + mark + query
    return location


def _path_group(path):
    segments = path.split("/")
    return segments[2] if len(segments) > 2 and segments[1] == "apis" else None


def _index(document, group_map, show_private):
    paths = {}
    for key, entry in (document.get("paths") or {}).items():
        group = _path_group("/" + key)
        if group is None or not group_map.is_mapped(group):
            paths[key] = entry
            continue
        if group_map.is_standard(group):
            continue  # shadowed by the private twin
        if show_private:
            paths[key] = entry
        url = entry.get("serverRelativeURL", "") if isinstance(entry, dict) else ""
        new_entry = dict(entry) if isinstance(entry, dict) else entry
        if url.startswith(PREFIX + "/apis/"):
            new_entry["serverRelativeURL"] = PREFIX + translate_path(url[len(PREFIX):], TO_STANDARD, group_map)
        paths[translate_path("/" + key, TO_STANDARD, group_map)[1:]] = new_entry
    return dict(document, paths=paths)


def _standard_gvk(gvk, group_map):
    if isinstance(gvk, dict) and isinstance(gvk.get("group"), str):
        return dict(gvk, group=group_map.to_standard(gvk["group"]))
    return gvk


def _retag(node, group_map):
    """node with every x-kubernetes-group-version-kind group translated (new containers, input untouched)."""
    if isinstance(node, dict):
        result = {}
        for key, value in node.items():
            if key == _GVK and isinstance(value, list):  # on schemas: a list
                result[key] = [_standard_gvk(gvk, group_map) for gvk in value]
            elif key == _GVK:  # on operations: one mapping
                result[key] = _standard_gvk(value, group_map)
            else:
                result[key] = _retag(value, group_map)
        return result
    if isinstance(node, list):
        return [_retag(value, group_map) for value in node]
    return node


def translate_response(raw, client_path, group_map, show_private):
    """The upstream OpenAPI v3 answer for client_path, as bytes, in the client's (standard) view."""
    try:
        document = json.loads(raw)
    except ValueError:
        return raw
    if not isinstance(document, dict):
        return raw
    if client_path.rstrip("/") == PREFIX:
        document = _index(document, group_map, show_private)
    elif client_path.startswith(PREFIX + "/apis/"):
        group = _path_group(client_path[len(PREFIX):])
        if group is None or not group_map.is_standard(group):
            return raw
        paths = document.get("paths")
        if isinstance(paths, dict):
            document["paths"] = {translate_path(key, TO_STANDARD, group_map) if key.startswith("/") else key: value
                                 for key, value in paths.items()}
        document = _retag(document, group_map)
    else:
        return raw
    return json.dumps(document, separators=(",", ":")).encode()
