"""The translating API proxy: the aiohttp handler and everything it does over the network.

Per request: routing decides where it goes (the path checked and mapped to the private groups, the served
version, the headers), translation rewrites the bodies both ways (the collection's core only), this module
forwards with the client's own Authorization, answers, and relays watches event by event (watch); budget
bounds the body bytes in flight. The translation itself is the collection's core (translate.groups /
translate.versions).
"""
import asyncio
import contextvars
import functools
import itertools
import os
import random
import re
import time

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, istr

from capi_proxy import bodies, metrics as metric_labels, nesting

from capi_proxy.proxy import crdview, openapi, routing, watch
from capi_proxy.proxy.mode import ModeFollower, older_than
from capi_proxy.proxy.budget import DEFAULT_MAX_INFLIGHT_BYTES, RETRY_AFTER_SECONDS, ByteBudget
from capi_proxy.core import DEFAULT_GROUP_MAP, TO_STANDARD, translate_text
from capi_proxy.errors import ProxyError, status_bytes
from capi_proxy.proxy.memory import DEFAULT_DELAY_SECONDS, Trimmer
from capi_proxy.proxy.pathing import replace_segment
from capi_proxy.serving import DIRECT_HANDLER, direct_handler, read_body, status_errors
from capi_proxy.proxy.translation import CONVERTED_SUBRESOURCES, Translator
from capi_proxy.upstream import TimedCache, UpstreamClient, load_contract_crds, load_index
from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import PROXY_PASSTHROUGH, PROXY_TRANSLATE

_RESPONSE_DROP = frozenset(("connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding",
                            "date", "server"))
# multidict's case-insensitive keys, folded once (not per lookup)
_RESPONSE_DROP_NAMES = tuple(istr(name) for name in sorted(_RESPONSE_DROP))
_ETAG, _WARNING, _LOCATION = istr("etag"), istr("warning"), istr("location")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_BODY_METHODS = frozenset(("POST", "PUT", "PATCH", "DELETE"))
# An adapted patch is a read and a write with the read's resourceVersion; a write between the two is a conflict. The
# API server's own patch (storage GuaranteedUpdate) retries a conflict until it wins, so a client that sent no
# resourceVersion never sees one: nor may it here. Retried until --upstream-timeout has passed (then the last 409),
# after a short random pause that grows with the attempts, so that two writers in step fall out of step.
_PATCH_RETRY_PAUSE_SECONDS = 0.002
_PATCH_RETRY_PAUSE_MAX_SECONDS = 0.05
# The current request's _Tally (its task's): handle sets it, _send and _respond add to it, _answered counts it.
# _send and _respond run only inside handle (a request's task), so it is always set there.
_TALLY = contextvars.ContextVar("capi_proxy_tally")
# The body bytes the current request holds of the in-flight budget (budget.Hold): handle sets and releases it.
_HOLD = contextvars.ContextVar("capi_proxy_hold")
_READ_METHODS = frozenset(("GET", "HEAD"))
_ROUTES_REMEMBERED = 4096  # paths name objects: the memo of their routes is bounded (cleared when full)
_GROUP_LABELS_REMEMBERED = 1024  # groups are named by clients: the memo of their labels is bounded


class _Tally(object):
    """What one request is counted with once its answer has been written (Proxy._answered), so that the metrics are
    not on the way of the answer: the seconds it waited for the API server (each wait with its verb), and the body
    bytes of the answer _respond made (None when no answer came from there: health checks, Status errors)."""

    __slots__ = ("waits", "answer_bytes")

    def __init__(self):
        self.waits = []  # verb, seconds, verb, seconds, ... of each upstream request
        self.answer_bytes = None

    @property
    def upstream(self):
        """The seconds the request waited for the API server, all its upstream requests together."""
        return sum(self.waits[1::2])


class Options(object):
    """Command-line settings of the proxy (see __main__)."""

    def __init__(self, show_private=False, use_own_credentials=False, max_body_bytes=3 * 1024 * 1024,
                 upstream_timeout=60.0, max_event_bytes=watch.DEFAULT_MAX_EVENT_BYTES, discovery_ttl=30.0,
                 group_map=None, memory_trim_delay=DEFAULT_DELAY_SECONDS,
                 max_inflight_bytes=DEFAULT_MAX_INFLIGHT_BYTES, mode=PROXY_TRANSLATE, mode_config_map=None,
                 pod_name=""):
        self.show_private = show_private
        self.use_own_credentials = use_own_credentials
        self.max_body_bytes = max_body_bytes
        self.upstream_timeout = upstream_timeout
        self.max_event_bytes = max_event_bytes
        self.discovery_ttl = discovery_ttl
        self.group_map = group_map or DEFAULT_GROUP_MAP
        self.memory_trim_delay = memory_trim_delay  # 0 or less: never trim
        self.max_inflight_bytes = max_inflight_bytes
        self.mode = mode  # without mode_config_map: fixed
        self.mode_config_map = mode_config_map  # (namespace, name): the mode follows that ConfigMap (mode.py)
        self.pod_name = pod_name  # the Pod this sidecar runs in: the key of its acknowledgement


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
        self.translator = Translator(self.group_map, options.show_private, self.crds, metrics)
        self._ready = (0.0, False)
        self._request_ids = ("%s%%08x" % os.urandom(4).hex(), itertools.count(1))  # unique per process, no syscall
        self._request_timeout = aiohttp.ClientTimeout(total=options.upstream_timeout)
        self.trimmer = Trimmer(asyncio.get_running_loop, options.memory_trim_delay,
                               on_trim=metrics.memory_trims.inc)
        # the gauge reads the budget when scraped: three updates per request less
        self.budget = ByteBudget(options.max_inflight_bytes, on_refusal=metrics.budget_refusals.inc)
        metrics.inflight_bytes.track(lambda: self.budget.used)
        self._group_labels = (None, {})  # (the index they were drawn from, {group: label})
        self._routes = (None, {})  # (the index they were drawn from, {(method, path, watch): Route}), see _route
        self.follower = None
        self._follower_task = None
        if options.mode_config_map:
            self.follower = ModeFollower(self.client, options.mode_config_map[0], options.mode_config_map[1],
                                         options.pod_name, logger, self._mode_changed)
        self._open_watches = {}  # {upstream answer: ended by a new mode} of the watches relayed now

    @property
    def mode(self):
        """translate or passthrough; None while the mode ConfigMap has not been read."""
        return self.follower.mode if self.follower is not None else self.options.mode

    def _mode_changed(self, old, new):
        """A new mode: every open watch ends (with 410 Expired, _watch), so that its client re-lists in it."""
        for upstream_response in list(self._open_watches):
            self._open_watches[upstream_response] = True
            upstream_response.close()
        self.metrics.mode.set(1, new)
        if old is not None:
            self.metrics.mode.set(0, old)

    # ---- lifecycle ------------------------------------------------------------------------------
    def application(self):
        app = web.Application(client_max_size=self.options.max_body_bytes + 1, middlewares=[status_errors])
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app[DIRECT_HANDLER] = direct_handler(self.handle)  # served without the router: one route, every request
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, _app):
        await self.client.start()
        if self.follower is not None:
            self._follower_task = asyncio.get_running_loop().create_task(self.follower.run())
        else:
            self.metrics.mode.set(1, self.options.mode)

    async def _on_cleanup(self, _app):
        self.trimmer.cancel()
        if self._follower_task is not None:
            self._follower_task.cancel()
        await self.client.close()

    # ---- entry point ----------------------------------------------------------------------------
    async def handle(self, request):
        started = time.perf_counter()
        tally = _Tally()
        _TALLY.set(tally)
        hold = self.budget.hold()
        _HOLD.set(hold)
        request_id = request.headers.get("X-Request-Id")
        if not request_id or not _REQUEST_ID.match(request_id):
            request_id = self._request_ids[0] % next(self._request_ids[1])
        raw_path = request.raw_path.partition("?")[0]
        info = {"group": "", "verb": request.method.lower(), "adapted": None, "streamed": None}
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
            self._count_tally(tally)  # no answer to wait for: what it waited for upstream is counted now
            self.logger.info("client went away", request_id=request_id, method=request.method, path=raw_path)
            raise
        except Exception as exc:  # pylint: disable=broad-except  # the proxy answers, it never dies on one request
            self.logger.error("unexpected error", request_id=request_id, error=repr(exc)[:500])
            response = self._status(500, "the proxy failed on this request (%s); see its log, request id %s"
                                    % (type(exc).__name__, request_id))
        duration = time.perf_counter() - started
        own = None
        if not response.prepared:  # not a watch: the whole answer is ready, so is the time the proxy took
            upstream = tally.upstream
            own = duration - upstream
            response.headers["X-Request-Id"] = request_id
            response.headers["Server-Timing"] = "proxy;dur=%.3f, upstream;dur=%.3f" % (own * 1e3, upstream * 1e3)
        # aiohttp writes the answer in this request's own task once the handler returns: when the task is done, the
        # answer is with the socket, its bytes are released, and the request is counted and logged (one callback)
        asyncio.current_task().add_done_callback(functools.partial(
            self._answered, hold, tally, request, raw_path, request_id, info, response.status, duration, own))
        return response

    def _answered(self, hold, tally, request, raw_path, request_id, info, code, duration, own, _task):
        """The answer's bytes released, then the metrics and the log line of the answered request.

        The log line of a read that succeeded (GET or HEAD, a LIST included, not a watch, answered below 400) is a
        debug line: at the default level (info) the log holds every write, watch and failure; the reads are counted
        in hypershift_api_proxy_requests_total and their time in the duration histograms."""
        hold.release()
        metrics = self.metrics
        self._count_tally(tally)
        verb_label = metric_labels.verb_label(info["verb"])
        if own is not None:  # not a watch
            metrics.own_seconds.observe(own, verb_label)
            metrics.request_seconds.observe(duration, verb_label)
        metrics.requests.inc(self._group_label(info["group"]), verb_label, str(code))
        level = "debug" if code < 400 and request.method in _READ_METHODS and info["verb"] != "watch" else "info"
        if self.logger.enabled(level):
            self.logger.write(level, "request", {
                "request_id": request_id, "method": request.method, "path": raw_path, "verb": info["verb"],
                "group": info["group"], "code": code, "adapted": info["adapted"], "streamed": info["streamed"],
                "duration_ms": round(duration * 1000, 3), "upstream_ms": round(tally.upstream * 1000, 3),
                "user_agent": request.headers.get("User-Agent", "")[:80]})

    def _count_tally(self, tally):
        """The request's upstream waits and answer bytes into their metrics."""
        waits = tally.waits
        for index in range(0, len(waits), 2):
            self.metrics.upstream_seconds.observe(waits[index + 1], metric_labels.verb_label(waits[index]))
        if tally.answer_bytes is not None:
            self.metrics.bytes.inc("response", amount=tally.answer_bytes)

    def _group_label(self, group):
        index = self.index.value
        drawn_from, labels = self._group_labels
        if drawn_from is not index:  # a new index may serve other groups
            labels = {}
            self._group_labels = (index, labels)
        label = labels.get(group)
        if label is None:
            label = metric_labels.group_label(group, index.versions if index is not None else (), self.group_map)
            if len(labels) < _GROUP_LABELS_REMEMBERED:
                labels[group] = label
        return label

    def _status(self, code, message, reason=None):
        return web.Response(status=code, body=status_bytes(code, message, reason), content_type="application/json")

    async def readyz(self, _request=None):
        """200 when the mode is known and the API server answers its /readyz (cached for a second), else 503 with a
        Status."""
        if self.mode is None:
            return self._status(503, self._unknown_mode())
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

    async def _read_body(self, request):
        body = await read_body(request, self.options.max_body_bytes, "the request body (--max-body-bytes)",
                               on_chunk=_HOLD.get().take)
        self.metrics.bytes.inc("request", amount=len(body))
        return body

    def _unknown_mode(self):
        return ("the proxy does not know its mode yet: it follows data.mode (%s) of the %s, which it could not read "
                "or which names no mode (%s); create or fix it, or see the proxy's log"
                % (" or ".join((PROXY_PASSTHROUGH, PROXY_TRANSLATE)), self.follower.described, self.follower.problem))

    # ---- the proxy path -------------------------------------------------------------------------
    async def _proxy(self, request, raw_path, request_id, info):
        if request.headers.get("Upgrade"):
            raise ProxyError(501, "connection upgrades (exec, attach, port-forward) are not proxied; "
                                  "talk to the API server directly for those")
        mode = self.mode
        if mode is None:
            raise ProxyError(503, self._unknown_mode())
        # a request without a query is no watch: its query is not parsed (a sidecar follows its mode: every request)
        if self.follower is not None and "?" in request.raw_path and request.query.get("watch") in ("1", "true") \
                and older_than(request.query.get("resourceVersion", ""), self.follower.revision):
            raise ProxyError(410, "the proxy changed its mode (%s) after resourceVersion %s: list again"
                                  % (mode, request.query.get("resourceVersion")), "Expired")
        method = request.method
        if mode == PROXY_PASSTHROUGH:
            route = routing.relay(method, raw_path, request.query)
        else:
            route = self._remembered_route(method, raw_path, request)
            if route is None:
                route = await self._route(method, raw_path, request.query)
        target = route.target
        info["group"] = target.group or ""
        info["verb"] = target.verb or method.lower()
        adapted = route.adapted
        if adapted:
            info["adapted"] = "%s->%s" % (route.client_version, route.served_version)
            self.metrics.adaptations.inc(route.client_version, route.served_version)
        body = await self._read_body(request) if method in _BODY_METHODS else b""
        if adapted:
            await self._load_crds(request_id)
        query = request.raw_path.partition("?")[2]
        if route.mode == "crd" and query:
            query, route.local_selector = crdview.split_selector(query)
        headers, own = routing.upstream_headers(request, self.options.use_own_credentials,
                                                self.client.upstream.own_headers)
        if route.mode.startswith("discovery"):
            headers.popall("If-None-Match", None)
            return await self._discovery(route, request, headers, own, query)
        if adapted and method == "PATCH" and target.subresource in CONVERTED_SUBRESOURCES:
            content_type = request.headers.get("Content-Type", "")
            if bodies.media_type(content_type) != bodies.APPLY_PATCH:
                return await self._patch_adapted(route, body, content_type, headers, own, query)
        if body and route.translated:
            body = self.translator.request_body(route, body, request.headers.get("Content-Type", ""))
        url_path = route.upstream_path + ("?" + query if query else "")
        if target.watch:
            return await self._watch(request, route, url_path, headers, own)
        stream = self.translator.list_stream(route) if method == "GET" and target.verb == "list" else None
        status, response_headers, raw = await self._send(method, url_path, headers, own, body, info["verb"], stream)
        translated = None
        if stream is not None and status == 200:
            translated = self.translator.streamed_body(stream, response_headers.get("Content-Type", ""))
            info["streamed"] = translated is not None
        return self._respond(route, status, response_headers, raw, translated=translated)

    def _remembered_route(self, method, raw_path, request):
        """The Route _route remembered for this request, or None. Not a coroutine, and the query is only parsed when
        the request has one: the memo's hit (nearly every request) costs a GET no coroutine of its own."""
        drawn_from, routes = self._routes
        index_cache = self.index
        if drawn_from is None or drawn_from is not index_cache.value \
                or time.monotonic() - index_cache.loaded_at > index_cache.ttl:
            return None
        return routes.get((method, raw_path, request.query.get("watch") if "?" in request.raw_path else None))

    async def _route(self, method, raw_path, query):
        """routing.route(), remembered for a standard CAPI resource's path while the discovery index it was drawn from
        is current (a Route of that mode is never changed once made; the index decides its served version); see
        _remembered_route."""
        index_cache = self.index
        key = (method, raw_path, query.get("watch"))
        drawn_from, routes = self._routes
        route = await routing.route(method, raw_path, query, self.group_map, self.options.show_private, index_cache)
        if route.mode == "capi":
            index = index_cache.value  # routing may have loaded it again
            if drawn_from is not index:
                routes = {}
                self._routes = (index, routes)
            if len(routes) >= _ROUTES_REMEMBERED:
                routes.clear()
            routes[key] = route
        return route

    async def _load_crds(self, request_id):
        """Contract labels for down-conversion; without them conversion fails later with a clear message."""
        try:
            await self.crds.get()
        except Exception as exc:  # pylint: disable=broad-except
            self.logger.warning("cannot read CRD contract labels", request_id=request_id, error=str(exc)[:300])

    async def _send(self, method, url_path, headers, own, body, verb, stream=None):
        """(status, headers, body) from the API server; ProxyError 502/503/504 with a Status when it fails.

        stream: a ListStream fed with a 200 JSON answer's bytes as they arrive (its translation overlaps the
        server's encoding, and counts in the upstream time)."""
        started = time.perf_counter()
        try:
            async with self.client.session(own).request(method, self.client.url(url_path), headers=headers,
                                                        data=body or None, timeout=self._request_timeout,
                                                        allow_redirects=False) as response:
                on_chunk = None
                if stream is not None and response.status == 200 and "json" in response.headers.get("Content-Type", ""):
                    on_chunk = functools.partial(self.translator.feed, stream)
                length = response.content_length
                if length is not None and on_chunk is None:  # _read_held's first case, without a coroutine of its own
                    _HOLD.get().take(length, method in _READ_METHODS)
                    raw = await response.read()
                else:
                    raw = await _read_held(response, _HOLD.get(), refusable=method in _READ_METHODS, on_chunk=on_chunk)
                _TALLY.get().waits += (verb, time.perf_counter() - started)  # counted once the answer is written
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
        if translated is None and route.translated:
            body = self.translator.response_body(route, upstream_headers.get("Content-Type", ""), raw)
        headers = self._response_headers(route, upstream_headers, drop_etag=body is not raw)
        if body is not raw:
            _HOLD.get().take(len(body), refusable=route.target.verb in ("get", "list"))
        response = web.Response(status=status, body=body, headers=headers)
        tally = _TALLY.get()  # counted once the answer is written
        tally.answer_bytes = len(body) + (tally.answer_bytes or 0)
        self.trimmer.released_body(len(raw))
        return response

    def _response_headers(self, route, upstream_headers, drop_etag=False):
        """The API server's headers for the client: hop-by-hop ones dropped (and the ETag of a rewritten body);
        Warning headers (a deprecated version, an unknown field) name the groups as the client does.

        Without a Warning or Location header to rewrite (nearly every answer) multidict copies them and takes the
        dropped names out (case-insensitively, in C): the same names, values and order as the loop below, which cost
        a GET about 200 bytecodes (each of kube-apiserver's seven headers lowered and looked up); 15,000 -> 7,000
        instructions per GET (callgrind)."""
        if not (route.translated and (_WARNING in upstream_headers or _LOCATION in upstream_headers)):
            headers = CIMultiDict(upstream_headers)
            for name in _RESPONSE_DROP_NAMES:
                if name in headers:
                    del headers[name]  # every value of that name
            if drop_etag and _ETAG in headers:
                del headers[_ETAG]
            return headers
        headers = []
        for name, value in upstream_headers.items():
            lowered = name.lower()
            if lowered in _RESPONSE_DROP or (drop_etag and lowered == "etag"):
                continue
            if lowered == "warning" and route.translated:
                value = translate_text(value, TO_STANDARD, self.group_map)
            elif lowered == "location" and route.translated:  # a redirect to a private path: the client's
                value = openapi.client_location(value, self.group_map)
            headers.append((name, value))
        return headers

    # ---- version adaptation of PATCH: read, patch in the client's version, convert, write -----------
    async def _patch_adapted(self, route, body, content_type, headers, own, query):
        try:
            patch_document = nesting.run(bodies.decode, body, content_type, "the patch")
        except nesting.DocumentTooDeep as exc:
            raise ProxyError(400, "cannot apply the patch: %s" % exc)
        get_headers = CIMultiDict(headers)
        get_headers.popall("Content-Type", None)
        get_path = route.upstream_path if route.target.subresource is None else route.upstream_path.rsplit("/", 1)[0]
        put_headers = CIMultiDict(headers)
        put_headers["Content-Type"] = "application/json"
        url_path = route.upstream_path + ("?" + query if query else "")
        deadline = time.monotonic() + self.options.upstream_timeout
        hold = _HOLD.get()
        held_before = hold.held  # the patch itself; each attempt's read and write are given back before the next
        attempt = 0
        while True:
            status, response_headers, raw = await self._send("GET", get_path, get_headers, own, b"", "get")
            if status != 200:
                return self._respond(route, status, response_headers, raw)
            try:
                served, explicit_version = nesting.run(self.translator.patched_bytes, raw, route, patch_document, content_type)
            except nesting.DocumentTooDeep as exc:
                raise ProxyError(400, "cannot apply the patch: %s" % exc)
            status, response_headers, raw = await self._send("PUT", url_path, put_headers, own, served, "patch")
            # a conflict on the resourceVersion the client sent is its answer (it asked for the lock)
            if status != 409 or explicit_version or time.monotonic() >= deadline:
                return self._respond(route, status, response_headers, raw)
            attempt += 1
            self.metrics.patch_conflicts.inc()
            hold.shrink_to(held_before)
            await asyncio.sleep(random.uniform(0, min(_PATCH_RETRY_PAUSE_MAX_SECONDS, _PATCH_RETRY_PAUSE_SECONDS * attempt)))

    # ---- discovery ------------------------------------------------------------------------------
    async def _discovery(self, route, request, headers, own, query):
        index = await self.index.get()
        target = route.target
        if route.mode != "discovery-root" and (route.private_group not in index.versions or (
                route.mode == "discovery-version" and (route.private_group, target.version) not in index.resources)):
            index = await self.index.get(refresh=True)  # a miss: a CRD may have appeared since the last load
        elif route.mode == "discovery-root" and "apidiscovery" not in (request.headers.get("Accept") or ""):
            index = await self.index.get(refresh=True)  # a group list is not the index's source: at most 1/s
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
        translated = self.translator.depth_safe_response(self.translator.discovery_bytes, raw, route, index, upstream_path,
                                                         self.index.put)
        return self._respond(route, status, response_headers, raw, translated=translated)

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
            response = web.StreamResponse(status=200, headers=self._response_headers(route, upstream_response.headers))
            response.enable_chunked_encoding()
            await response.prepare(request)
            self.metrics.open_watches.inc()
            self._open_watches[upstream_response] = False
            try:
                try:
                    await watch.relay_events(upstream_response, response,
                                             lambda line: self.translator.event(route, line), self.options.max_event_bytes,
                                             on_event=lambda count: self.metrics.watch_events.inc(amount=count))
                except (aiohttp.ClientError, OSError):
                    if not self._open_watches.get(upstream_response):
                        raise
                if self._open_watches.get(upstream_response):  # the mode changed (_mode_changed closed the upstream stream)
                    await response.write(watch.error_event(410, "the proxy changed its mode to %s: list again"
                                                           % self.mode, "Expired"))
                await response.write_eof()
            except (ConnectionResetError, aiohttp.ClientError, OSError):
                pass  # one side went away: leaving the block closes the upstream connection
            finally:
                self._open_watches.pop(upstream_response, None)
                self.metrics.open_watches.dec()
                self.trimmer.released()
            return response


async def _read_held(response, hold, refusable, on_chunk=None):
    """The upstream answer's body, its bytes counted in hold as they arrive (ProxyError 429 past the budget);
    on_chunk(bytes) sees each piece as it comes."""
    length = response.content_length
    if length is not None:
        hold.take(length, refusable)
        if on_chunk is None:
            return await response.read()
    chunks = []
    async for chunk in response.content.iter_chunked(256 * 1024):
        if length is None:
            hold.take(len(chunk), refusable)
        chunks.append(chunk)
        if on_chunk is not None:
            on_chunk(chunk)
    return b"".join(chunks)
