"""Serving aiohttp apps for the proxy and the shim: the listeners, signal handling, the metrics app, and the
answers aiohttp would otherwise write itself (parser errors, 404/405/413) as Kubernetes Status bodies."""
import asyncio
import logging
import signal

from aiohttp import web, web_protocol, web_server, web_urldispatcher

from capi_proxy.errors import ProxyError, status_bytes

DEFAULT_IDLE_TIMEOUT = 60.0


def status_response(code, message):
    return web.Response(status=code, body=status_bytes(code, message), content_type="application/json")


def _first_words(exc):
    """What went wrong, without the raw request bytes aiohttp quotes after it (they may hold a credential)."""
    text = str(getattr(exc, "message", "") or "").splitlines()[0] if getattr(exc, "message", "") else ""
    return (text.split(":", 1)[0].strip() or type(exc).__name__)[:120]


async def read_body(request, limit, what="the request body", on_chunk=None):
    """The whole body, read in chunks (on_chunk(size) for each); ProxyError 413 once it is known to exceed limit."""
    if request.content_length is not None and request.content_length > limit:
        raise ProxyError(413, "%s of %d bytes exceeds the limit of %d bytes" % (what, request.content_length, limit))
    chunks = []
    size = 0
    async for chunk in request.content.iter_chunked(65536):
        size += len(chunk)
        if size > limit:
            raise ProxyError(413, "%s exceeds the limit of %d bytes" % (what, limit))
        if on_chunk is not None:
            on_chunk(len(chunk))
        chunks.append(chunk)
    return b"".join(chunks)


class StatusRequestHandler(web_protocol.RequestHandler):
    """aiohttp's connection handler, answering requests its parser refused with a Status, logged in one line."""

    def handle_error(self, request, status=500, exc=None, message=None):
        reason = _first_words(exc) if exc is not None else "timed out"
        if status < 500:
            text = "the request is not valid HTTP/1.1 (%s); send a well-formed request" % reason
        else:
            text = "the server could not answer this request (%s); see its log" % reason
        self.logger.warning("refused a request aiohttp could not handle: HTTP %d, %s (%s)",
                            status, reason, type(exc).__name__ if exc is not None else "-")
        if request.writer.output_size > 0:
            raise ConnectionError("the response has begun; no Status can follow it")
        response = status_response(status, text)
        response.force_close()
        return response


class _StatusServer(web_server.Server):
    def __call__(self):
        return StatusRequestHandler(self, loop=self._loop, **self._kwargs)


# An app whose every request goes to one handler may name it here (app[DIRECT_HANDLER] = handler): its connections
# then call it without the router and the middleware chain (the proxy: a catch-all route, served on every request).
# The handler itself must do what those would: see direct_handler.
DIRECT_HANDLER = web.AppKey("direct_handler", object)


class StatusAppRunner(web.AppRunner):
    """AppRunner whose connections answer parser errors with a Status (aiohttp has no hook for that)."""

    async def _make_server(self):
        server = await super()._make_server()
        server.__class__ = _StatusServer  # same state, one overridden factory method (aiohttp pinned)
        direct = self._app.get(DIRECT_HANDLER)
        if direct is not None:  # read by each connection as it opens: none has yet
            server.request_handler = direct
        return server


def direct_handler(handler):
    """handler (which never raises web.HTTPException) as an app's DIRECT_HANDLER, with what the app did around it, in
    the same order: the Expect header answered as Application._handle answers it, then status_errors' refusal of
    HTTP/0.9."""
    expect_handler = web_urldispatcher._default_expect_handler  # pylint: disable=protected-access  # the app's own

    async def direct(request):
        if request.headers.get("Expect"):
            response = await expect_handler(request)
            await request.writer.drain()
            if response is not None:
                return response
        if request.version < (1, 0):
            return await status_errors(request, handler)
        return await handler(request)
    return direct


@web.middleware
async def status_errors(request, handler):
    """Every answer a Kubernetes client can parse: aiohttp's own 404/405/413 and HTTP/0.9 become Status bodies."""
    if request.version < (1, 0):
        response = status_response(400, "the request line has no HTTP version (HTTP/0.9 is not served); send "
                                        "HTTP/1.1")
        response.force_close()
        return response
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        response = status_response(exc.status, "%s: %s" % (exc.reason, exc.text or exc.reason))
        if exc.status == 413:
            response.force_close()
        return response


class _LibraryLogs(logging.Handler):
    """aiohttp's and asyncio's log records as the project's JSON lines: the message only, scrubbed, no traceback
    (a traceback of a parser error quotes the raw request, credentials included)."""

    def __init__(self, json_logger):
        super().__init__(logging.WARNING)
        self.json_logger = json_logger

    def emit(self, record):
        try:
            message = record.getMessage()
        except Exception:  # pylint: disable=broad-except
            message = str(record.msg)
        fields = {"logger": record.name}
        if record.exc_info and record.exc_info[1] is not None:
            fields["error"] = "%s: %s" % (type(record.exc_info[1]).__name__, _first_words(record.exc_info[1]))
        level = "error" if record.levelno >= logging.ERROR else "warning"
        self.json_logger.log(level, message[:500], **fields)


def route_library_logs(json_logger):
    for name in ("aiohttp", "asyncio"):
        library = logging.getLogger(name)
        library.handlers[:] = [_LibraryLogs(json_logger)]
        library.propagate = False


async def serve(apps, logger, component, idle_timeout=DEFAULT_IDLE_TIMEOUT):
    """Run aiohttp apps [(app, (host, port), ssl_context)] until SIGTERM/SIGINT, then shut down cleanly.

    idle_timeout: seconds a connection may wait without a whole request head (keep-alive between requests,
    or headers still arriving: a slow or half-open client) before it is closed.
    """
    route_library_logs(logger)
    runners = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        for app, (host, port), ssl_context in apps:
            runner = StatusAppRunner(app, handler_cancellation=True, access_log=None, keepalive_timeout=idle_timeout)
            await runner.setup()
            runners.append(runner)
            site = web.TCPSite(runner, host, port, ssl_context=ssl_context, backlog=1024)
            await site.start()
            bound = runner.addresses[-1] if runner.addresses else (host, port)
            logger.info("listening", component=component, address="%s:%s" % tuple(bound[:2]),
                        tls=ssl_context is not None)
        await stop.wait()
        logger.info("stopping", component=component)
    finally:
        for runner in reversed(runners):
            await runner.cleanup()


def metrics_app(metrics_registry, readyz=None):
    """/metrics, plus /healthz and /readyz so that kubelet probes reach them on the pod IP while the
    proxy itself listens on loopback only."""
    async def metrics(_request):
        body, content_type = metrics_registry.exposition()
        return web.Response(body=body, headers={"Content-Type": content_type, "X-Content-Type-Options": "nosniff"})

    async def healthz(_request):
        return web.Response(text="ok")

    app = web.Application(middlewares=[status_errors])
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz or healthz)
    return app
