"""Where a request goes: the path checked and mapped to the private groups (the core's translate_path), the
version it is served in, and the headers that go with it. No I/O but the discovery cache it is handed."""
import re

from multidict import CIMultiDict, istr

from capi_proxy.proxy import openapi
from capi_proxy.core import TO_PRIVATE, translate_path
from capi_proxy.errors import ProxyError
from capi_proxy.proxy.pathing import check_path, parse_target, replace_segment

_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")
_HOP_BY_HOP = frozenset(("connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                         "transfer-encoding", "upgrade", "host", "content-length", "accept-encoding", "authorization"))
_HOP_BY_HOP_NAMES = tuple(istr(name) for name in sorted(_HOP_BY_HOP))  # multidict's case-insensitive keys


class Route(object):
    """Where one request goes upstream and how its answer is translated."""

    __slots__ = ("mode", "target", "upstream_path", "client_version", "served_version", "private_group", "local_selector")

    def __init__(self, mode, target, upstream_path):
        # capi, crd, private, passthrough, discovery-root, discovery-group, discovery-version, openapi; relay (the
        # proxy's pass-through mode: nothing translated)
        self.mode = mode
        self.target = target
        self.upstream_path = upstream_path
        self.client_version = None
        self.served_version = None
        self.private_group = None
        self.local_selector = None  # crd: label requirements the proxy judges (crdview.split_selector)

    @property
    def adapted(self):
        return self.served_version is not None

    @property
    def translated(self):
        """Whether bodies, events and headers are translated (not for a private group's request or a relay)."""
        return self.mode not in ("private", "relay")


def strip_binary_accept(accept):
    """Accept without protobuf/CBOR: only JSON can be translated (CRDs never serve protobuf anyway)."""
    accept = accept or ""
    if "protobuf" not in accept and "cbor" not in accept:  # nothing to drop: the parts joined back are accept
        return accept.strip(" ,") or "application/json"
    parts = [part for part in (accept or "").split(",") if "protobuf" not in part and "cbor" not in part]
    return ",".join(parts).strip(" ,") or "application/json"


def client_authorization(request_headers):
    """The client's one Authorization value, or None when it sent none; a present but malformed one is refused
    (never replaced by the proxy's own credentials)."""
    values = request_headers.getall("Authorization", [])
    if not values:
        return None
    if len(values) > 1:
        raise ProxyError(400, "the request carries %d Authorization headers; send exactly one" % len(values))
    scheme, _space, credentials = values[0].strip().partition(" ")
    # printable text has no control character: the regex only looks at the rest (a service account's token is a
    # kilobyte, which isprintable() reads several times faster)
    if not scheme or not credentials.strip() or (not values[0].isprintable() and _CONTROL_CHARACTER.search(values[0])):
        raise ProxyError(401, "the Authorization header is malformed: expected 'Bearer <token>'; send a valid "
                              "credential or none (the proxy then uses its own, if it was started with "
                              "--use-own-credentials)")
    return values[0]


def relay(method, raw_path, query):
    """The Route of a request in the proxy's pass-through mode: the path checked, then sent as it came."""
    check_path(raw_path)
    return Route("relay", parse_target(raw_path, method, query), raw_path)


async def route(method, raw_path, query, group_map, show_private, index_cache):
    """The Route of one request: checks the path, then decides what it addresses and where it goes upstream
    (the core's translate_path maps its group); index_cache holds the served versions for adaptation."""
    check_path(raw_path)
    target = parse_target(raw_path, method, query)
    group = target.group
    if raw_path.rstrip("/") == "/apis":
        return Route("discovery-root", target, raw_path)
    if raw_path.startswith("/openapi/v3"):
        return Route("openapi", target, openapi.upstream_path(raw_path, group_map))
    if target.prefix != "apis" or not group:
        return Route("passthrough", target, raw_path)
    if group_map.is_private(group):
        if not show_private:
            raise ProxyError(404, "the API group %s is private; the proxy serves it as %s (start the proxy with "
                                  "--show-private to reach it directly)" % (group, group_map.to_standard(group)))
        return Route("private", target, raw_path)
    if group == "apiextensions.k8s.io" and target.resource == "customresourcedefinitions":
        return Route("crd", target, translate_path(raw_path, TO_PRIVATE, group_map))
    if not group_map.is_standard(group):
        return Route("passthrough", target, raw_path)
    private_group = group_map.to_private(group)
    # translate_path(raw_path, TO_PRIVATE, group_map) of a checked path (no empty segment, no query) whose group, its
    # third segment, is a standard one: the private group in its place, nothing else to look at
    upstream_path = "/apis/" + private_group + raw_path[6 + len(group):]
    if target.version is None:
        route = Route("discovery-group", target, upstream_path)
    elif target.resource is None:
        route = Route("discovery-version", target, upstream_path)
    else:
        route = Route("capi", target, upstream_path)
        index = await index_cache.get()
        served = index.adaptation(private_group, target.version, target.resource)
        if served is None and index.entry(private_group, target.version, target.resource) is None:
            index = await index_cache.get(refresh=True)  # a CRD may have appeared since the last load
            served = index.adaptation(private_group, target.version, target.resource)
        if served is not None:
            route.client_version = target.version
            route.served_version = served
            route.upstream_path = replace_segment(upstream_path, 2, served)
    route.private_group = private_group
    return route


def upstream_headers(request, use_own_credentials, own_headers, accept=None):
    """(headers for the API server, whether they carry the proxy's own credentials): the client's headers without
    hop-by-hop ones, JSON only, its one Authorization or, when it sent none and use_own_credentials, own_headers().
    accept: the Accept to send instead of the client's (the proxy passes the client's own, stripped, for a path it
    knows is an API path)."""
    headers = CIMultiDict(request.headers)  # copied in C, then the hop-by-hop names taken out (in C): same order
    for name in _HOP_BY_HOP_NAMES:
        if name in headers:
            del headers[name]
    if accept:
        headers["Accept"] = accept
    elif request.path.startswith(("/api/", "/apis/")) or request.path in ("/api", "/apis"):
        headers["Accept"] = strip_binary_accept(request.headers.get("Accept"))
    headers["Accept-Encoding"] = "identity"
    own = False
    authorization = client_authorization(request.headers)
    if authorization is not None:
        headers["Authorization"] = authorization
    elif use_own_credentials:
        headers.update(own_headers())
        own = True
    return headers, own
