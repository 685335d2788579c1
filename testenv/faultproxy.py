"""A fault-injecting HTTPS proxy in front of a real kube-apiserver, for tests.

A real apiserver cannot be told to hang, drop a connection or fail a read; this proxy can. It forwards every
request (any method, body and headers; watches and other long-lived responses stream through as they come)
to the apiserver unless a fault rule fires first. The rules are testenv/faults.py's: "error" answers a
metav1.Status with the rule's code, "hang" waits `seconds` and then forwards (or answers `code` if the rule
was added with one), "drop" closes the connection unanswered.
Every request is also counted in a RequestLog (user is always "": the proxy does not authenticate).

    proxy = start_fault_proxy(cluster, tmp_path)          # or FaultProxy(upstream, ca, cert, key).start()
    proxy.kubeconfig(tmp_path / "alice.kubeconfig", cluster.tokens["alice"])
    proxy.add_fault({"verb": "get", "resource": "configmaps", "code": 503})
    proxy.request_counts(); proxy.clear_faults(); proxy.stop()

TLS ends at the proxy (its certificate is signed by the cluster CA for 127.0.0.1, so clients verify it with
the cluster's ca.crt) and starts again towards the apiserver, which is verified with the same CA. The
client's Authorization header goes through unchanged, so clients authenticate with bearer tokens (the
Cluster's static tokens): a client certificate cannot pass through a TLS terminator. No websockets/SPDY
upgrades (exec, attach, port-forward). The proxy runs on its own event loop in a background thread, so
sync tests call it directly.
"""
import asyncio
import base64
import io
import json
import os
import socket
import ssl
import threading
from pathlib import Path

import aiohttp
import yarl
from aiohttp import web

from testenv.faults import REASONS, FaultInjector, RequestLog, request_info

# hop-by-hop headers (RFC 9110 7.6.1) and the ones each side of the proxy sets itself
_SKIPPED_HEADERS = frozenset(("connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                              "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host",
                              "content-length"))
_DETAILED_CODES = (403, 404, 409, 422)
DROPPED = 499       # the request log's code for a dropped request (nginx's 'client closed request')
UPSTREAM_DOWN = 503


def status_body(code, message, info=None):
    """The metav1.Status the apiserver answers for `code`: reason from the code, details as the errors
    package fills them (name, group and kind for 403/404/409/422; retryAfterSeconds 1 for 429)."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": REASONS.get(code, "Unknown"), "code": code}
    details = {}
    if info is not None and info.resource_request and code in _DETAILED_CODES:
        details = {"name": info.name, "group": info.group, "kind": info.resource}
    if code == 429:
        details["retryAfterSeconds"] = 1
    details = {key: value for key, value in details.items() if value != ""}
    if details:
        body["details"] = details
    return body


def _status_response(code, message, info=None):
    headers = {"Retry-After": "1"} if code == 429 else None
    return web.json_response(status_body(code, message, info), status=code, headers=headers)


class FaultProxy:
    """The proxy; start() runs it, the other methods are its control API (callable from any thread)."""

    def __init__(self, upstream_url, ca_file, cert_file, key_file, port=0):
        self.upstream_url = str(upstream_url).rstrip("/")
        self.ca_file = str(ca_file)
        self.cert_file = str(cert_file)
        self.key_file = str(key_file)
        self.port = port
        self.injector = FaultInjector()
        self.request_log = RequestLog()
        self._hang_codes = set()    # ids of hang rules added with a code: hang, then answer it
        self._hang_released = None  # asyncio.Event (in the proxy's loop) that release_hangs sets
        self._loop = None
        self._thread = None
        self._session = None
        self._runner = None
        self._handlers = set()      # tasks serving a request

    @property
    def url(self):
        return "https://127.0.0.1:%d" % self.port

    # --- life cycle ---------------------------------------------------------------------------------------
    def start(self):
        """Listen on 127.0.0.1:port (0 = a free port, see .port/.url); returns self."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="faultproxy", daemon=True)
        self._thread.start()
        try:
            self._call(self._start())
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        """Close the listener, the upstream connections and any open (watch) responses; idempotent."""
        if self._loop is None:
            return
        try:
            if self._thread.is_alive():
                self._call(self._stop())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop.close()
            self._loop = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _call(self, coroutine, timeout=30):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    async def _start(self):
        upstream_tls = ssl.create_default_context(cafile=self.ca_file)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=upstream_tls, limit=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            auto_decompress=False,                       # bytes pass through as the apiserver encoded them
            cookie_jar=aiohttp.DummyCookieJar())
        server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_tls.load_cert_chain(self.cert_file, self.key_file)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        # handler_cancellation: a client that goes away cancels its handler, which closes the upstream request
        self._runner = web.ServerRunner(web.Server(self._handle, handler_cancellation=True), shutdown_timeout=1.0)
        await self._runner.setup()
        await web.SockSite(self._runner, sock, ssl_context=server_tls).start()

    async def _stop(self):
        runner, self._runner = self._runner, None
        # closing a TLS connection waits for the peer's close_notify: the client ones are aborted at the end
        clients = [handler.transport for handler in runner.server.connections if handler.transport] if runner else []
        for task in list(self._handlers):      # open watches and hangs end now, not after shutdown_timeout
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
        if runner is not None:
            await runner.cleanup()
        for transport in clients:
            transport.abort()
        await asyncio.sleep(0.1)               # lets the TLS connections to the apiserver finish closing

    async def _hang(self, seconds):
        """Hold a request `seconds`, or until release_hangs."""
        if self._hang_released is None:
            self._hang_released = asyncio.Event()
        try:
            await asyncio.wait_for(self._hang_released.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    # --- control API ---------------------------------------------------------------------------------------
    def release_hangs(self):
        """End every hang holding a request now: each goes on as if its seconds had passed (forwarded, or answered
        with its code). Later hangs hold again."""
        def release():
            if self._hang_released is not None:
                self._hang_released.set()
                self._hang_released = None
        self._loop.call_soon_threadsafe(release)

    def add_fault(self, rule):
        """Add a rule (testenv/faults.py format; ValueError when bad); returns it with defaults, id, hits."""
        added = self.injector.add(rule)
        if added["action"] == "hang" and "code" in rule:
            self._hang_codes.add(added["id"])
        return added

    def remove_fault(self, rule_id):
        self.injector.remove(rule_id)

    def clear_faults(self):
        self.injector.clear()
        self._hang_codes.clear()

    def faults(self):
        """The rules with their hits, fired and remaining counts."""
        return self.injector.list()

    def request_counts(self, since=0):
        """{"total", "by_verb", "by_resource", "mutating", "by_code", "entries"} (entries with seq > since)."""
        body = self.request_log.counts()
        body["entries"] = self.request_log.entries(since)
        return body

    def reset_requests(self):
        self.request_log.reset()

    def kubeconfig(self, path, token, ca_file=None):
        """Write a kubeconfig for the proxy authenticating with a bearer token; returns its Path."""
        with open(ca_file or self.ca_file, "rb") as handle:
            ca_data = base64.b64encode(handle.read()).decode()
        config = {"apiVersion": "v1", "kind": "Config", "preferences": {},
                  "clusters": [{"name": "faultproxy", "cluster": {"server": self.url,
                                                                  "certificate-authority-data": ca_data}}],
                  "users": [{"name": "faultproxy", "user": {"token": token}}],
                  "contexts": [{"name": "faultproxy", "context": {"cluster": "faultproxy", "user": "faultproxy"}}],
                  "current-context": "faultproxy"}
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(config, indent=2) + "\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
        return path

    # --- serving -------------------------------------------------------------------------------------------
    async def _handle(self, request):
        task = asyncio.current_task()
        self._handlers.add(task)
        try:
            return await self._serve(request)
        finally:
            self._handlers.discard(task)

    async def _serve(self, request):
        info = request_info(request.method, request.path, request.query_string)
        rule = self.injector.match(*info.match_args())
        if rule is not None and rule["action"] == "drop":
            self.request_log.record(*info.match_args(), DROPPED, "")
            if request.transport is not None:
                request.transport.abort()
            raise asyncio.CancelledError()      # aiohttp ends the request without writing an answer
        if rule is not None and rule["action"] == "hang":
            await self._hang(rule["seconds"])
            if rule["id"] not in self._hang_codes:
                rule = None
        if rule is not None:
            self.request_log.record(*info.match_args(), rule["code"], "")
            return _status_response(rule["code"], rule["message"], info)
        return await self._forward(request, info)

    async def _forward(self, request, info):
        headers = [(key, value) for key, value in request.headers.items() if key.lower() not in _SKIPPED_HEADERS]
        body = await request.content.read()
        # as the audit log tells it (testing.py): dryRun=All in the query, or in a DELETE's DeleteOptions body
        dry_run = "dryRun=All" in request.query_string or (
            request.method == "DELETE" and b'"dryRun"' in body and b'"All"' in body)
        if len(body) > 1024 * 1024:
            body = io.BytesIO(body)             # aiohttp warns that large bytes bodies would block the loop
        try:
            upstream = await self._session.request(
                request.method, yarl.URL(self.upstream_url + request.raw_path, encoded=True), headers=headers,
                data=body if body or request.method in ("POST", "PUT", "PATCH") else None,
                allow_redirects=False, skip_auto_headers=("Accept-Encoding", "User-Agent", "Content-Type"))
        except (aiohttp.ClientError, OSError) as exc:
            self.request_log.record(*info.match_args(), UPSTREAM_DOWN, "")
            return _status_response(UPSTREAM_DOWN, "fault proxy: %s is unreachable: %s" % (self.upstream_url, exc))
        async with upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for key, value in upstream.headers.items():
                if key.lower() not in _SKIPPED_HEADERS:
                    response.headers.add(key, value)
            if upstream.content_length is not None:     # else chunked, as watches are
                response.content_length = upstream.content_length
            self.request_log.record(*info.match_args(), upstream.status, "", dry_run=dry_run)
            await response.prepare(request)
            try:
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
            except (aiohttp.ClientError, OSError):
                # the apiserver (or the proxy's stop) broke the stream: break the client's too
                if request.transport is not None:
                    request.transport.abort()
                return response
            await response.write_eof()
            return response


def start_fault_proxy(cluster, workdir, port=0):
    """A started FaultProxy in front of a started testenv.cluster Cluster, its server certificate (signed by
    the cluster CA, for 127.0.0.1 and localhost) in workdir as faultproxy-server.{crt,key}."""
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    name = str(workdir / "faultproxy-server")     # an absolute name: make_cert writes it there, not in the PKI dir
    cluster.pki.make_cert(name, "/CN=testenv-faultproxy", server_sans=["IP:127.0.0.1", "DNS:localhost"])
    return FaultProxy(cluster.server, cluster.pki.path("ca.crt"), name + ".crt", name + ".key", port).start()
