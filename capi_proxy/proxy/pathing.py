"""Request paths: hardening (no dot segments or encoded tricks) and what a path addresses. Pure.

The proxy checks the raw path *before* translating it and forwards exactly the checked bytes, so
what the client addressed and what the API server serves are the same resource modulo the group.
"""
import re

from capi_proxy.errors import ProxyError

# Percent-encodings that could change how the server splits or resolves the path.
_DANGEROUS_ENCODINGS = re.compile(r"%(2e|2f|5c|25|00)", re.IGNORECASE)
_BAD_PERCENT = re.compile(r"%(?![0-9a-fA-F]{2})")
_BAD_CHARACTERS = re.compile(r"[\x00-\x20\x7f\\]")  # whitespace, control characters, backslash
# A path every check below passes, in one match: '/'-separated non-empty segments of characters that are neither
# whitespace, control characters, a backslash nor '%', none of them '.' or '..', at most one trailing slash. Most
# requests are such paths; the others go through the checks one by one (which name what is wrong).
_PLAIN_PATH = re.compile(r"(?:/(?!\.\.?(?:/|$))[^\x00-\x20\x7f\\%/]+)+/?")
_NAMESPACE_SUBRESOURCES = frozenset(("status", "finalize"))
_WATCH_VALUES = frozenset(("true", "1"))


def check_path(raw_path):
    """Raise ProxyError(400) unless raw_path (no query) is a plain absolute path without tricks."""
    if _PLAIN_PATH.fullmatch(raw_path):
        return
    problem = None
    if not raw_path.startswith("/"):
        problem = "it does not start with '/'"
    elif _BAD_CHARACTERS.search(raw_path):
        problem = "it contains whitespace, control characters or a backslash"
    elif _DANGEROUS_ENCODINGS.search(raw_path):
        problem = "it contains an encoded '.', '/', '\\', '%' or NUL"
    elif _BAD_PERCENT.search(raw_path):
        problem = "it contains a '%' that is not followed by two hex digits"
    else:
        segments = raw_path.split("/")[1:]
        if raw_path.endswith("/"):
            segments = segments[:-1]  # one trailing slash is harmless ("/apis/")
        if any(segment in (".", "..") for segment in segments):
            problem = "it contains a '.' or '..' segment"
        elif any(segment == "" for segment in segments):
            problem = "it contains an empty segment ('//')"
    if problem is not None:
        raise ProxyError(400, "request path %r refused: %s; send the canonical API path (e.g. "
                              "/apis/cluster.x-k8s.io/v1beta2/namespaces/NS/machines/NAME)" % (raw_path[:200], problem))


class Target(object):
    """What a Kubernetes API path addresses (as k8s.io/apiserver RequestInfoFactory sees it)."""

    __slots__ = ("path", "prefix", "group", "version", "namespace", "resource", "name", "subresource",
                 "watch", "verb", "version_index", "segments")

    def __init__(self):
        self.path = ""
        self.prefix = None  # "api", "apis" or None (non-resource paths such as /version, /openapi)
        self.group = None
        self.version = None
        self.namespace = None
        self.resource = None
        self.name = None
        self.subresource = None
        self.watch = False
        self.verb = None
        self.version_index = None
        self.segments = []

    @property
    def is_resource(self):
        return self.resource is not None

    def __repr__(self):
        return "Target(%s %s/%s ns=%s %s/%s/%s)" % (self.verb, self.group, self.version, self.namespace,
                                                    self.resource, self.name, self.subresource)


def parse_target(path, method, query):
    """A Target for an already checked path; query is a mapping of the query parameters."""
    target = Target()
    target.path = path
    segments = [segment for segment in path.split("/") if segment]
    target.segments = segments
    if segments and segments[0] == "api":
        target.prefix, target.group, rest, target.version_index = "api", "", segments[1:], 1
    elif segments and segments[0] == "apis":
        target.prefix = "apis"
        target.group = segments[1] if len(segments) > 1 else None
        rest, target.version_index = segments[2:], 2
    else:
        target.verb = method.lower()
        return target
    if not rest:
        target.verb = "get"
        return target
    target.version = rest[0]
    parts = rest[1:]
    if parts and parts[0] == "watch":
        target.watch = True
        parts = parts[1:]
    if parts and parts[0] == "namespaces" and len(parts) >= 2:
        target.namespace = parts[1]
        if len(parts) > 2 and parts[2] not in _NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
    if parts:
        target.resource = parts[0]
        target.name = parts[1] if len(parts) > 1 else None
        target.subresource = "/".join(parts[2:]) or None
    if str(query.get("watch", "")).lower() in _WATCH_VALUES:
        target.watch = True
    target.verb = _verb(method, target)
    return target


def _verb(method, target):
    method = method.upper()
    if target.watch:
        return "watch"
    if method in ("GET", "HEAD"):
        return "get" if target.name else "list"
    if method == "DELETE":
        return "delete" if target.name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def replace_segment(path, index, value):
    """path with its index-th non-empty segment replaced (the path was checked: no empty segments)."""
    trailing = path.endswith("/") and len(path) > 1
    segments = [segment for segment in path.split("/") if segment]
    segments[index] = value
    return "/" + "/".join(segments) + ("/" if trailing else "")
