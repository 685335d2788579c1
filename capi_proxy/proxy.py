"""The translating API proxy: aiohttp server, one handler, streaming watches.

Per request: check the path (pathing), decide what it addresses, translate the path and the body to
the private groups (bodies, adaptation), forward with the client's own Authorization, translate the
answer back (bodies, discovery, adaptation) and stream watches event by event (watch). The
translation itself is the collection's core (capi_groups / capi_versions) only.
"""
import asyncio
import collections
import contextlib
import contextvars
import gc
import itertools
import os
import re
import time

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from capi_proxy import bodies, discovery, metrics as metric_labels, nesting, openapi, watch
from capi_proxy.adaptation import apply_patch, convert_document
from capi_proxy.core import (
    DEFAULT_GROUP_MAP,
    TO_PRIVATE,
    TO_STANDARD,
    CapiTranslationError,
    translate_object,
    translate_path,
)
from capi_proxy.budget import DEFAULT_MAX_INFLIGHT_BYTES, RETRY_AFTER_SECONDS, ByteBudget
from capi_proxy.errors import ProxyError, status_bytes
from capi_proxy.memory import DEFAULT_DELAY_SECONDS, Trimmer
from capi_proxy.pathing import check_path, parse_target, replace_segment
from capi_proxy.serving import read_body, status_errors
from capi_proxy.upstream import TimedCache, UpstreamClient, load_contract_crds, load_index

_HOP_BY_HOP = frozenset(("connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                         "transfer-encoding", "upgrade", "host", "content-length", "accept-encoding", "authorization"))
_RESPONSE_DROP = frozenset(("connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding",
                            "date", "server"))
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_BODY_METHODS = frozenset(("POST", "PUT", "PATCH", "DELETE"))
_CONVERTED_SUBRESOURCES = (None, "status")
_MAX_PATCH_ATTEMPTS = 5
# Every watcher of a resource receives the same event bytes: translate each distinct line once.
_EVENT_CACHE_ENTRIES = 512
_EVENT_CACHE_BYTES = 4 * 1024 * 1024  # lines and translations together: a bound on the cache's memory
_EVENT_CACHE_MAX_LINE = 256 * 1024
# Seconds the current request (its task) waited for the API server: handle sets it, _send adds to it.
_UPSTREAM_WAIT = contextvars.ContextVar("capi_proxy_upstream_wait")
# The body bytes the current request holds of the in-flight budget (budget.Hold): handle sets and releases it.
_HOLD = contextvars.ContextVar("capi_proxy_hold")
_READ_METHODS = frozenset(("GET", "HEAD"))


@contextlib.contextmanager
def gc_paused():
    """The cycle collector paused while a parsed JSON tree lives: trees are acyclic, reference counting frees
    them, and a 500-item list would otherwise set off several full-heap collections (7 ms of 11)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Options(object):
    """Command-line settings of the proxy (see __main__)."""

    def __init__(self, show_private=False, use_own_credentials=False, max_body_bytes=3 * 1024 * 1024,
                 upstream_timeout=60.0, max_event_bytes=watch.DEFAULT_MAX_EVENT_BYTES, discovery_ttl=30.0,
                 group_map=None, memory_trim_delay=DEFAULT_DELAY_SECONDS,
                 max_inflight_bytes=DEFAULT_MAX_INFLIGHT_BYTES):
        self.show_private = show_private
        self.use_own_credentials = use_own_credentials
        self.max_body_bytes = max_body_bytes
        self.upstream_timeout = upstream_timeout
        self.max_event_bytes = max_event_bytes
        self.discovery_ttl = discovery_ttl
        self.group_map = group_map or DEFAULT_GROUP_MAP
        self.memory_trim_delay = memory_trim_delay  # 0 or less: never trim
        self.max_inflight_bytes = max_inflight_bytes


class Route(object):
    """Where one request goes upstream and how its answer is translated."""

    __slots__ = ("mode", "target", "upstream_path", "client_version", "served_version", "private_group")

    def __init__(self, mode, target, upstream_path):
        self.mode = mode  # capi, crd, private, passthrough, discovery-root, discovery-group, discovery-version, openapi
        self.target = target
        self.upstream_path = upstream_path
        self.client_version = None
        self.served_version = None
        self.private_group = None

    @property
    def adapted(self):
        return self.served_version is not None


def _strip_binary_accept(accept):
    """Accept without protobuf/CBOR: only JSON can be translated (CRDs never serve protobuf anyway)."""
    parts = [part for part in (accept or "").split(",") if "protobuf" not in part and "cbor" not in part]
    return ",".join(parts).strip(" ,") or "application/json"


def _client_authorization(request_headers):
    """The client's one Authorization value, or None when it sent none; a present but malformed one is refused
    (never replaced by the proxy's own credentials)."""
    values = request_headers.getall("Authorization", [])
    if not values:
        return None
    if len(values) > 1:
        raise ProxyError(400, "the request carries %d Authorization headers; send exactly one" % len(values))
    scheme, _space, credentials = values[0].strip().partition(" ")
    if not scheme or not credentials.strip() or any(ord(char) < 32 or ord(char) == 127 for char in values[0]):
        raise ProxyError(401, "the Authorization header is malformed: expected 'Bearer <token>'; send a valid "
                              "credential or none (the proxy then uses its own, if it was started with "
                              "--use-own-credentials)")
    return values[0]


class Proxy(object):
    def __init__(self, upstream, options, logger, metrics):
        self.options = options
        self.group_map = options.group_map
        self.client = UpstreamClient(upstream, options.upstream_timeout)
        self.logger = logger
        self.metrics = metrics
        self.index = TimedCache(lambda: load_index(self.client, self.group_map), options.discovery_ttl)
        self.crds = TimedCache(lambda: load_contract_crds(self.client, self.group_map, self.index),
                               options.discovery_ttl)
        self.to_private_markers = bodies.markers(self.group_map, TO_PRIVATE)
        self.to_standard_markers = bodies.markers(self.group_map, TO_STANDARD)
        self._ready = (0.0, False)
        self._event_cache = collections.OrderedDict()
        self._event_cache_bytes = 0
        self._request_ids = ("%s%%08x" % os.urandom(4).hex(), itertools.count(1))  # unique per process, no syscall
        self._request_timeout = aiohttp.ClientTimeout(total=options.upstream_timeout)
        self.trimmer = Trimmer(asyncio.get_running_loop, options.memory_trim_delay,
                               on_trim=metrics.memory_trims.inc)
        self.budget = ByteBudget(options.max_inflight_bytes, on_change=metrics.inflight_bytes.set,
                                 on_refusal=metrics.budget_refusals.inc)

    # ---- lifecycle ------------------------------------------------------------------------------
    def application(self):
        app = web.Application(client_max_size=self.options.max_body_bytes + 1, middlewares=[status_errors])
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, _app):
        await self.client.start()

    async def _on_cleanup(self, _app):
        self.trimmer.cancel()
        await self.client.close()

    # ---- entry point ----------------------------------------------------------------------------
    async def handle(self, request):
        started = time.perf_counter()
        upstream_wait = [0.0]
        _UPSTREAM_WAIT.set(upstream_wait)
        hold = self.budget.hold()
        _HOLD.set(hold)
        request_id = request.headers.get("X-Request-Id", "")
        if not _REQUEST_ID.match(request_id):
            request_id = self._request_ids[0] % next(self._request_ids[1])
        raw_path = request.raw_path.partition("?")[0]
        info = {"group": "", "verb": request.method.lower(), "adapted": None}
        try:
            if raw_path in ("/healthz", "/livez"):
                response = web.Response(text="ok")
            elif raw_path == "/readyz":
                response = await self.readyz()
            else:
                response = await self._proxy(request, raw_path, request_id, info)
        except ProxyError as exc:
            response = self._status(exc.code, exc.message, exc.reason)
            if exc.code == 429:
                response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        except asyncio.CancelledError:
            hold.release()
            self.logger.info("client went away", request_id=request_id, method=request.method, path=raw_path)
            raise
        except Exception as exc:  # pylint: disable=broad-except  # the proxy answers, it never dies on one request
            self.logger.error("unexpected error", request_id=request_id, error=repr(exc)[:500])
            response = self._status(500, "the proxy failed on this request (%s); see its log, request id %s"
                                    % (type(exc).__name__, request_id))
        duration = time.perf_counter() - started
        if not response.prepared:  # not a watch: the whole answer is ready, so is the time the proxy took
            own = duration - upstream_wait[0]
            response.headers["X-Request-Id"] = request_id
            response.headers["Server-Timing"] = "proxy;dur=%.3f, upstream;dur=%.3f" % (own * 1e3, upstream_wait[0] * 1e3)
            self.metrics.own_seconds.observe(own, metric_labels.verb_label(info["verb"]))
        code = response.status
        verb_label = metric_labels.verb_label(info["verb"])
        self.metrics.requests.inc(self._group_label(info["group"]), verb_label, str(code))
        if self.logger.enabled("info"):
            self.logger.info("request", request_id=request_id, method=request.method, path=raw_path,
                             verb=info["verb"], group=info["group"], code=code, adapted=info["adapted"],
                             duration_ms=round(duration * 1000, 3), upstream_ms=round(upstream_wait[0] * 1000, 3),
                             user_agent=request.headers.get("User-Agent", "")[:80])
        if hold.held:  # aiohttp writes the answer in this task once the handler returns: release after that
            asyncio.current_task().add_done_callback(lambda _task: hold.release())
        return response

    def _group_label(self, group):
        index = self.index.value
        return metric_labels.group_label(group, index.versions if index is not None else (), self.group_map)

    def _status(self, code, message, reason=None):
        return web.Response(status=code, body=status_bytes(code, message, reason), content_type="application/json")

    async def readyz(self, _request=None):
        """200 when the API server answers its /readyz (cached for a second), else 503 with a Status."""
        now = time.monotonic()
        if now - self._ready[0] > 1.0:
            try:
                status, _doc = await self.client.own_get_json("/readyz", "text/plain, application/json",
                                                              timeout=min(5.0, self.options.upstream_timeout))
                self._ready = (now, status == 200)
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
                self._ready = (now, False)
        if self._ready[1]:
            return web.Response(text="ok")
        return self._status(503, "the API server %s is not reachable or not ready" % self.client.upstream.server)

    # ---- routing --------------------------------------------------------------------------------
    async def _route(self, method, raw_path, query):
        check_path(raw_path)
        target = parse_target(raw_path, method, query)
        group_map = self.group_map
        group = target.group
        if raw_path.rstrip("/") == "/apis":
            return Route("discovery-root", target, raw_path)
        if raw_path.startswith("/openapi/v3"):
            return Route("openapi", target, openapi.upstream_path(raw_path, group_map))
        if target.prefix != "apis" or not group:
            return Route("passthrough", target, raw_path)
        if group_map.is_private(group):
            if not self.options.show_private:
                raise ProxyError(404, "the API group %s is private; the proxy serves it as %s (start the proxy with "
                                      "--show-private to reach it directly)" % (group, group_map.to_standard(group)))
            return Route("private", target, raw_path)
        if group == "apiextensions.k8s.io" and target.resource == "customresourcedefinitions":
            return Route("crd", target, translate_path(raw_path, TO_PRIVATE, group_map))
        if not group_map.is_standard(group):
            return Route("passthrough", target, raw_path)
        private_group = group_map.to_private(group)
        upstream_path = replace_segment(raw_path, 1, private_group)
        if target.version is None:
            route = Route("discovery-group", target, upstream_path)
        elif target.resource is None:
            route = Route("discovery-version", target, upstream_path)
        else:
            route = Route("capi", target, upstream_path)
            index = await self.index.get()
            served = index.adaptation(private_group, target.version, target.resource)
            if served is None and index.entry(private_group, target.version, target.resource) is None:
                index = await self.index.get(refresh=True)  # a CRD may have appeared since the last load
                served = index.adaptation(private_group, target.version, target.resource)
            if served is not None:
                route.client_version = target.version
                route.served_version = served
                route.upstream_path = replace_segment(upstream_path, 2, served)
        route.private_group = private_group
        return route

    async def _read_body(self, request):
        body = await read_body(request, self.options.max_body_bytes, "the request body (--max-body-bytes)",
                               on_chunk=_HOLD.get().take)
        self.metrics.bytes.inc("request", amount=len(body))
        return body

    def _upstream_headers(self, request, accept=None):
        headers = CIMultiDict()
        for name, value in request.headers.items():
            if name.lower() not in _HOP_BY_HOP:
                headers.add(name, value)
        if accept:
            headers["Accept"] = accept
        elif request.path.startswith(("/api/", "/apis/")) or request.path in ("/api", "/apis"):
            headers["Accept"] = _strip_binary_accept(request.headers.get("Accept"))
        headers["Accept-Encoding"] = "identity"
        own = False
        authorization = _client_authorization(request.headers)
        if authorization is not None:
            headers["Authorization"] = authorization
        elif self.options.use_own_credentials:
            headers.update(self.client.upstream.own_headers())
            own = True
        return headers, own

    # ---- the proxy path -------------------------------------------------------------------------
    async def _proxy(self, request, raw_path, request_id, info):
        if request.headers.get("Upgrade"):
            raise ProxyError(501, "connection upgrades (exec, attach, port-forward) are not proxied; "
                                  "talk to the API server directly for those")
        route = await self._route(request.method, raw_path, request.query)
        target = route.target
        info["group"] = target.group or ""
        info["verb"] = target.verb or request.method.lower()
        if route.adapted:
            info["adapted"] = "%s->%s" % (route.client_version, route.served_version)
            self.metrics.adaptations.inc(route.client_version, route.served_version)
        body = await self._read_body(request) if request.method in _BODY_METHODS else b""
        if route.adapted:
            await self._load_crds(request_id)
        query = request.raw_path.partition("?")[2]
        headers, own = self._upstream_headers(request)
        if route.mode.startswith("discovery"):
            headers.popall("If-None-Match", None)
            return await self._discovery(route, request, headers, own, query)
        content_type = request.headers.get("Content-Type", "")
        if route.adapted and request.method == "PATCH" and target.subresource in _CONVERTED_SUBRESOURCES \
                and bodies.media_type(content_type) != bodies.APPLY_PATCH:
            return await self._patch_adapted(route, body, content_type, headers, own, query)
        if body and route.mode != "private":
            body = self._translate_request_body(route, body, content_type)
        url_path = route.upstream_path + ("?" + query if query else "")
        if target.watch:
            return await self._watch(request, route, url_path, headers, own)
        status, response_headers, raw = await self._send(request.method, url_path, headers, own, body, info["verb"])
        return self._respond(route, status, response_headers, raw)

    def _translate_request_body(self, route, body, content_type):
        if not bodies.is_translatable_type(content_type):
            return body  # protobuf/CBOR bodies cannot be translated; the server judges them
        convert = route.adapted and route.target.subresource in _CONVERTED_SUBRESOURCES
        if not convert and not bodies.contains_any(body, self.to_private_markers):
            return body
        started = time.perf_counter()
        try:
            with gc_paused():
                translated = nesting.run(self._translated_request_bytes, body, route, content_type, convert,
                                         kind=nesting.YAML if bodies.is_yaml_text(body, content_type) else nesting.JSON)
        except nesting.DocumentTooDeep as exc:
            self.metrics.translation_errors.inc("request")
            raise ProxyError(400, "the request body is refused: %s" % exc)
        except ProxyError:
            self.metrics.translation_errors.inc("request")
            raise
        self.metrics.translation_seconds.observe(time.perf_counter() - started, "request")
        return translated

    def _translated_request_bytes(self, body, route, content_type, convert):
        document = bodies.decode(body, content_type, "the request body")
        document = bodies.translate_document(document, content_type, TO_PRIVATE, self.group_map)
        if convert:
            document = convert_document(document, route.served_version, self._crds_now(), code=400)
        return bodies.encode(document)

    def _crds_now(self):
        return self.crds.value or []

    async def _load_crds(self, request_id):
        """Contract labels for down-conversion; without them conversion fails later with a clear message."""
        try:
            await self.crds.get()
        except Exception as exc:  # pylint: disable=broad-except
            self.logger.warning("cannot read CRD contract labels", request_id=request_id, error=str(exc)[:300])

    async def _send(self, method, url_path, headers, own, body, verb):
        """(status, headers, body) from the API server; ProxyError 502/503/504 with a Status when it fails."""
        started = time.perf_counter()
        try:
            async with self.client.session(own).request(method, self.client.url(url_path), headers=headers,
                                                        data=body or None, timeout=self._request_timeout,
                                                        allow_redirects=False) as response:
                raw = await _read_held(response, _HOLD.get(), refusable=method in _READ_METHODS)
                waited = time.perf_counter() - started
                self.metrics.upstream_seconds.observe(waited, metric_labels.verb_label(verb))
                _UPSTREAM_WAIT.get([0.0])[0] += waited
                return response.status, response.headers, raw
        except Exception as exc:  # pylint: disable=broad-except
            raise self._upstream_failure(exc)

    def _upstream_failure(self, exc):
        server = self.client.upstream.server
        if isinstance(exc, asyncio.TimeoutError):
            self.metrics.upstream_errors.inc("timeout")
            return ProxyError(504, "the API server %s did not answer within %.1f s (--upstream-timeout); retry later"
                              % (server, self.options.upstream_timeout))
        if isinstance(exc, aiohttp.ClientConnectorError):
            self.metrics.upstream_errors.inc("unreachable")
            return ProxyError(503, "the API server %s is unreachable (%s); retry when it is back"
                              % (server, exc.os_error if exc.os_error else exc))
        if isinstance(exc, (aiohttp.ClientError, OSError)):
            self.metrics.upstream_errors.inc("broken")
            return ProxyError(502, "the API server %s closed the connection or sent an invalid response (%s); retry"
                              % (server, type(exc).__name__))
        raise exc

    # ---- responses ------------------------------------------------------------------------------
    def _respond(self, route, status, upstream_headers, raw, translated=None):
        body = raw if translated is None else translated
        if translated is None and route.mode != "private":
            body = self._translate_response_body(route, upstream_headers.get("Content-Type", ""), raw)
        headers = CIMultiDict()
        for name, value in upstream_headers.items():
            if name.lower() not in _RESPONSE_DROP and not (body is not raw and name.lower() == "etag"):
                headers.add(name, value)
        if body is not raw:
            _HOLD.get().take(len(body), refusable=route.target.verb in ("get", "list"))
        response = web.Response(status=status, body=body, headers=headers)
        self.metrics.bytes.inc("response", amount=len(body))
        self.trimmer.released_body(len(raw))
        return response

    def _translate_response_body(self, route, content_type, raw):
        if not raw or "json" not in content_type:
            return raw
        if route.mode == "openapi":
            return self._depth_safe_response(openapi.translate_response, raw, route.target.path, self.group_map,
                                             self.options.show_private)
        if not route.adapted and route.mode != "crd" and not bodies.contains_any(raw, self.to_standard_markers):
            return raw
        started = time.perf_counter()
        try:
            with gc_paused():
                translated = self._depth_safe_response(self._translated_response_bytes, raw, route)
        except ProxyError:
            self.metrics.translation_errors.inc("response")
            raise
        self.metrics.translation_seconds.observe(time.perf_counter() - started, "response")
        return translated

    @staticmethod
    def _depth_safe_response(work, raw, *args):
        """work(raw, *args) through nesting.run; too deep -> 502 (the API server never sends such a document)."""
        try:
            return nesting.run(work, raw, *args)
        except nesting.DocumentTooDeep as exc:
            raise ProxyError(502, "cannot translate the API server's response: %s" % exc)

    def _translated_response_bytes(self, raw, route):
        """The translated body; the parsed tree dies when this returns (inside gc_paused)."""
        try:
            document = bodies.loads(raw)
        except ValueError as exc:
            raise ProxyError(502, "the API server's response is not valid JSON (%s)" % str(exc)[:200])
        try:
            if route.mode == "crd":
                document = crd_view(document, self.group_map, self.options.show_private)
            else:  # the parsed tree is the proxy's own: translated where it lies, no copy
                document = bodies.translate_response(document, TO_STANDARD, self.group_map, in_place=True)
            if route.adapted:
                document = convert_document(document, route.client_version, self._crds_now())
        except CapiTranslationError as exc:
            raise ProxyError(502, "cannot translate the API server's response: %s" % exc)
        return bodies.dumps(document)

    # ---- version adaptation of PATCH: read, patch in the client's version, convert, write -----------
    async def _patch_adapted(self, route, body, content_type, headers, own, query):
        try:
            patch_document = nesting.run(bodies.decode, body, content_type, "the patch",
                                         kind=nesting.YAML if bodies.is_yaml_text(body, content_type) else nesting.JSON)
        except nesting.DocumentTooDeep as exc:
            raise ProxyError(400, "cannot apply the patch: %s" % exc)
        get_headers = CIMultiDict(headers)
        get_headers.popall("Content-Type", None)
        get_path = route.upstream_path if route.target.subresource is None else route.upstream_path.rsplit("/", 1)[0]
        for _attempt in range(_MAX_PATCH_ATTEMPTS):
            status, response_headers, raw = await self._send("GET", get_path, get_headers, own, b"", "get")
            if status != 200:
                return self._respond(route, status, response_headers, raw)
            try:
                served, explicit_version = nesting.run(self._patched_bytes, raw, route, patch_document, content_type)
            except nesting.DocumentTooDeep as exc:
                raise ProxyError(400, "cannot apply the patch: %s" % exc)
            put_headers = CIMultiDict(headers)
            put_headers["Content-Type"] = "application/json"
            url_path = route.upstream_path + ("?" + query if query else "")
            status, response_headers, raw = await self._send("PUT", url_path, put_headers, own, served, "patch")
            if status != 409 or explicit_version:
                return self._respond(route, status, response_headers, raw)
        return self._respond(route, status, response_headers, raw)

    def _patched_bytes(self, raw, route, patch_document, content_type):
        """(the object to PUT in the served version, the patch's own resourceVersion) from the current object
        (patch_document is only read: the merge and JSON patches work on copies)."""
        current = bodies.translate_response(bodies.loads(raw), TO_STANDARD, self.group_map, in_place=True)
        current = convert_document(current, route.client_version, self._crds_now())
        patched = apply_patch(current, patch_document, bodies.media_type(content_type))
        served = convert_document(patched, route.served_version, self._crds_now(), code=422)
        served = bodies.translate_document(served, "application/json", TO_PRIVATE, self.group_map)
        metadata = served.setdefault("metadata", {})
        explicit_version = ((patch_document.get("metadata") or {}).get("resourceVersion")
                            if isinstance(patch_document, dict) else None)
        metadata["resourceVersion"] = explicit_version or (current.get("metadata") or {}).get("resourceVersion")
        return bodies.encode(served), explicit_version

    # ---- discovery ------------------------------------------------------------------------------
    async def _discovery(self, route, request, headers, own, query):
        index = await self.index.get()
        target = route.target
        upstream_path = route.upstream_path
        if route.mode == "discovery-version":
            served_resources = index.resources.get((route.private_group, target.version))
            if not served_resources and index.adapted_entries(route.private_group, target.version):
                served_version = (index.versions.get(route.private_group) or [target.version])[0]
                upstream_path = replace_segment(upstream_path, 2, served_version)
        url_path = upstream_path + ("?" + query if query else "")
        status, response_headers, raw = await self._send("GET", url_path, headers, own, b"", "get")
        if status != 200 or "json" not in response_headers.get("Content-Type", ""):
            return self._respond(route, status, response_headers, raw)
        translated = self._depth_safe_response(self._discovery_bytes, raw, route, index, upstream_path)
        return self._respond(route, status, response_headers, raw, translated=translated)

    def _discovery_bytes(self, raw, route, index, upstream_path):
        group_map = self.group_map
        try:
            document = bodies.loads(raw)
        except ValueError as exc:
            raise ProxyError(502, "the API server's discovery document is not valid JSON (%s)" % str(exc)[:200])
        if not isinstance(document, dict):
            raise ProxyError(502, "the API server's discovery document is a JSON %s, not an object"
                             % type(document).__name__)
        try:
            if route.mode == "discovery-root":
                if document.get("kind") == discovery.AGGREGATED_KIND:
                    document = discovery.aggregated_to_standard(document, index, group_map, self.options.show_private)
                else:
                    document = discovery.group_list_to_standard(document, index, group_map, self.options.show_private)
            elif route.mode == "discovery-group":
                document = discovery.api_group_to_standard(document, index, group_map)
            else:
                upstream_document = document if upstream_path == route.upstream_path else None
                document = discovery.resource_list_to_standard(upstream_document, route.private_group,
                                                               route.target.version, index, group_map)
        except CapiTranslationError as exc:
            self.metrics.translation_errors.inc("response")
            raise ProxyError(502, "cannot translate the discovery document: %s" % exc)
        return bodies.dumps(document)

    # ---- watches --------------------------------------------------------------------------------
    async def _watch(self, request, route, url_path, headers, own):
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.options.upstream_timeout, sock_read=None)
        session = self.client.session(own)
        started = time.perf_counter()
        try:
            upstream_response = await asyncio.wait_for(
                session.get(self.client.url(url_path), headers=headers, timeout=timeout, allow_redirects=False),
                self.options.upstream_timeout)
        except Exception as exc:  # pylint: disable=broad-except
            raise self._upstream_failure(exc)
        self.metrics.upstream_seconds.observe(time.perf_counter() - started, "watch")
        async with upstream_response:
            if upstream_response.status != 200:
                raw = await upstream_response.read()
                return self._respond(route, upstream_response.status, upstream_response.headers, raw)
            response = web.StreamResponse(status=200)
            for name, value in upstream_response.headers.items():
                if name.lower() not in _RESPONSE_DROP:
                    response.headers.add(name, value)
            response.enable_chunked_encoding()
            await response.prepare(request)
            self.metrics.open_watches.inc()
            try:
                await watch.relay_events(upstream_response, response, lambda line: self._translate_event(route, line),
                                         self.options.max_event_bytes,
                                         on_event=lambda count: self.metrics.watch_events.inc(amount=count))
                await response.write_eof()
            except (ConnectionResetError, aiohttp.ClientError, OSError):
                pass  # one side went away: leaving the block closes the upstream connection
            finally:
                self.metrics.open_watches.dec()
                self.trimmer.released()
            return response

    def _translate_event(self, route, line):
        if route.mode == "private" or (not route.adapted and route.mode != "crd"
                                       and not bodies.contains_any(line, self.to_standard_markers)):
            return line + b"\n"
        key = (route.mode, route.client_version, route.served_version, line)
        cached = self._event_cache.get(key)
        if cached is not None:
            self._event_cache.move_to_end(key)
            return cached
        started = time.perf_counter()
        with gc_paused():
            try:
                translated = nesting.run(self._translate_event_uncached, line, route)
            except nesting.DocumentTooDeep as exc:
                self.metrics.translation_errors.inc("watch")
                raise ProxyError(500, "cannot translate a watch event: %s" % exc)
        self.metrics.translation_seconds.observe(time.perf_counter() - started, "watch")
        if len(line) <= _EVENT_CACHE_MAX_LINE:
            self._event_cache[key] = translated
            self._event_cache_bytes += len(line) + len(translated)
            while len(self._event_cache) > _EVENT_CACHE_ENTRIES or self._event_cache_bytes > _EVENT_CACHE_BYTES:
                old_key, old_translated = self._event_cache.popitem(last=False)
                self._event_cache_bytes -= len(old_key[-1]) + len(old_translated)
        return translated

    def _translate_event_uncached(self, line, route):
        try:
            event = bodies.loads(line)
            if route.mode == "crd":
                event = crd_view(event, self.group_map, self.options.show_private)
                if event is None:
                    return b""  # an event of a shadowed standard CRD: the client never sees those
            else:
                event = bodies.translate_response(event, TO_STANDARD, self.group_map, in_place=True)
            if route.adapted:
                event = convert_document(event, route.client_version, self._crds_now())
        except ValueError as exc:  # CapiTranslationError included
            self.metrics.translation_errors.inc("watch")
            raise ProxyError(500, "cannot translate a watch event: %s" % str(exc)[:300])
        return bodies.dumps(event) + b"\n"


async def _read_held(response, hold, refusable):
    """The upstream answer's body, its bytes counted in hold as they arrive (ProxyError 429 past the budget)."""
    if response.content_length is not None:
        hold.take(response.content_length, refusable)
        return await response.read()
    chunks = []
    async for chunk in response.content.iter_chunked(256 * 1024):
        hold.take(len(chunk), refusable)
        chunks.append(chunk)
    return b"".join(chunks)


def crd_view(document, group_map, show_private):
    """CRDs as the client sees them: private CRDs as the standard ones, shadowed standard CRDs hidden.

    document is the caller's own parsed tree: anything that is not a CRD is translated in place.
    """
    if document is None:
        return document
    if "type" in document and isinstance(document.get("object"), dict) and "apiVersion" not in document:
        viewed = crd_view(document["object"], group_map, show_private)
        return None if viewed is None else dict(document, object=viewed)
    if document.get("kind") == "CustomResourceDefinitionList" and isinstance(document.get("items"), list):
        items = []
        for item in document["items"]:
            group = (item.get("spec") or {}).get("group") or ""
            if group_map.is_standard(group):
                continue
            if group_map.is_private(group) and show_private:
                items.append(item)
            items.append(_standard_crd(item, group_map))
        return dict(document, items=items)
    if document.get("kind") == "CustomResourceDefinition":
        group = (document.get("spec") or {}).get("group") or ""
        if group_map.is_standard(group):
            return None
        return _standard_crd(document, group_map)
    return bodies.translate_response(document, TO_STANDARD, group_map, in_place=True)


def _standard_crd(crd, group_map):
    group = (crd.get("spec") or {}).get("group") or ""
    if not group_map.is_private(group):
        return crd
    shell = dict(crd)
    missing = [field for field in ("apiVersion", "kind") if field not in shell]
    shell.setdefault("apiVersion", "apiextensions.k8s.io/v1")
    shell.setdefault("kind", "CustomResourceDefinition")  # items of a List carry no kind
    translated = translate_object(shell, TO_STANDARD, group_map)
    for field in missing:
        del translated[field]
    names = (translated.get("spec") or {}).get("names")
    if isinstance(names, dict):
        translated["spec"]["names"] = discovery.restore_names(names)
    return translated
