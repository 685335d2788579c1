"""The aiohttp application: TLS, authentication, fault injection, request log, routing and errors.

Resource verbs live in handlers_resource.py, reads and watches in handlers_read.py, the object
semantics in api.py.
"""
import asyncio
import base64
import json
import logging
import os
import secrets
import signal
import ssl
import tempfile
import time

import yaml
from aiohttp import web

from testenv import certs

from . import discovery, errors, openapi, wiring
from .api import ObjectApi
from .controllers import Controllers
from .conversion import Converter
from .handlers_read import ReadHandlers
from .handlers_resource import ResourceHandlers
from .registry import Registry
from .seeding import load_seed_dirs
from .store import Persister, Store, dumps

LOG = logging.getLogger("kubeapi.server")
NAMESPACE_SUBRESOURCES = ("status", "finalize")
ADMIN_PREFIX = "/kubeapi/v1/"
PUBLIC_PATHS = ("/version", "/healthz", "/livez", "/readyz")


class RequestInfo:
    __slots__ = ("path", "resource_request", "verb", "api_prefix", "group", "version", "resource", "subresource",
                 "namespace", "name", "watch_path", "parts")

    def __init__(self, path):
        self.path = path
        self.resource_request = False
        self.verb = ""
        self.api_prefix = ""
        self.group = ""
        self.version = ""
        self.resource = ""
        self.subresource = ""
        self.namespace = ""
        self.name = ""
        self.watch_path = False
        self.parts = []


def parse_request(method, path, query):
    """RequestInfoFactory: which resource/verb a request is about."""
    info = RequestInfo(path)
    parts = path.strip("/").split("/")
    info.verb = method.lower()
    if not parts or parts[0] not in ("api", "apis") or parts == [""]:
        return info
    info.api_prefix = parts[0]
    if parts[0] == "api":
        if len(parts) < 3:
            info.parts = parts
            return info
        info.version = parts[1]
        rest = parts[2:]
    else:
        if len(parts) < 4:
            info.parts = parts
            return info
        info.group, info.version = parts[1], parts[2]
        rest = parts[3:]
    info.resource_request = True
    if rest and rest[0] == "watch":
        info.watch_path = True
        rest = rest[1:]
    if len(rest) > 1 and rest[0] == "namespaces":
        info.namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    if not rest or not rest[0]:
        info.resource_request = False
        info.parts = parts
        return info
    info.resource = rest[0]
    if len(rest) > 1:
        info.name = rest[1]
    if len(rest) > 2:
        info.subresource = rest[2]
    if len(rest) > 3:
        info.subresource = "/".join(rest[2:])
    watch = info.watch_path or query.get("watch") in ("true", "1")
    if method == "GET":
        info.verb = "watch" if watch else ("get" if info.name else "list")
    elif method == "HEAD":
        info.verb = "get" if info.name else "list"
    elif method == "POST":
        info.verb = "create"
    elif method == "PUT":
        info.verb = "update"
    elif method == "PATCH":
        info.verb = "patch"
    elif method == "DELETE":
        info.verb = "delete" if info.name else "deletecollection"
    return info


class Options:
    def __init__(self, kubeconfig, port=0, seeds=(), state_file=None, deployment_delay=0.2, pod_grace_delay=0.2,
                 gc_delay=0.05, watch_history=10000, bookmark_interval=1.0, persist_delay=0.2, host="127.0.0.1"):
        self.kubeconfig = kubeconfig
        self.port = port
        self.seeds = list(seeds or [])
        self.state_file = state_file
        self.deployment_delay = deployment_delay
        self.pod_grace_delay = pod_grace_delay
        self.gc_delay = gc_delay
        self.watch_history = watch_history
        self.bookmark_interval = bookmark_interval
        self.persist_delay = persist_delay
        self.host = host


class KubeApiServer:
    def __init__(self, options):
        self.options = options
        self.store = Store(history_size=options.watch_history)
        self.persister = Persister(self.store, options.state_file, options.persist_delay)
        self.store.on_change = self.persister.mark_dirty
        self.registry = Registry(wiring.schema, wiring.typeinfo)
        self.converter = Converter()
        self.controllers = Controllers(self)
        self.api = ObjectApi(self.store, self.registry, self.converter, self.controllers)
        self.faults = wiring.faults.FaultInjector() if wiring.faults else wiring.FallbackFaults()
        self.request_log = wiring.faults.RequestLog() if wiring.faults else wiring.FallbackRequestLog()
        self.read = ReadHandlers(self)
        self.resources = ResourceHandlers(self)
        self.runner = None
        self.port = None
        self.admin_token = None
        self.authenticator = None
        self.authorizer = None
        self.started = time.time()
        self._auth_cache = {}
        self._hang_codes = {}         # fault rule id -> code, for hang rules posted with an explicit code
        self._stop = asyncio.Event()

    # --- lifecycle --------------------------------------------------------------------------------
    def _init_security(self):
        extra = self.store.extra_state
        if "tls" not in extra:
            extra["tls"] = certs.generate()
        if "signing_key" not in extra:
            extra["signing_key"] = base64.b64encode(secrets.token_bytes(32)).decode()
        if "tokens" not in extra:
            if wiring.auth is not None:
                tokens, admin = wiring.auth.default_tokens()
            else:
                admin = secrets.token_urlsafe(32)
                tokens = {admin: wiring.make_user("kubernetes-admin", ["system:masters"])}
            extra["tokens"] = {t: wiring.user_to_dict(u) for t, u in tokens.items()}
            extra["admin_token"] = admin
        self.admin_token = extra["admin_token"]
        tokens = {t: wiring.make_user(d["username"], d["groups"], d.get("uid", ""), d.get("extra"))
                  for t, d in extra["tokens"].items()}
        signing_key = base64.b64decode(extra["signing_key"])

        def lookup(namespace, name):
            return self.store.get(("", "serviceaccounts"), namespace, name)

        if wiring.auth is not None:
            self.authenticator = wiring.auth.Authenticator(tokens, signing_key, lookup)
        else:
            self.authenticator = wiring.FallbackAuthenticator(tokens, signing_key, lookup)

        def list_objects(group, resource, namespace):
            return self.store.list((group, resource), namespace)

        if wiring.rbac is not None:
            # the RBAC index is rebuilt only after RBAC objects change
            self.authorizer = wiring.rbac.Authorizer(
                list_objects, cache_key=lambda: self.store.group_revisions[wiring.rbac.RBAC_GROUP])
        else:
            self.authorizer = wiring.FallbackAuthorizer(list_objects)
        self.persister.mark_dirty()

    def static_tokens(self):
        """{username: token} of the static users (tests use them to act as alice/bob/carol)."""
        return {d["username"]: t for t, d in self.store.extra_state.get("tokens", {}).items()}

    async def start(self):
        missing = wiring.missing()
        if missing:
            LOG.warning("running without: %s", ", ".join("%s (%s)" % kv for kv in sorted(missing.items())))
        restored = self.persister.load()
        if restored:
            LOG.info("restored %d objects at resourceVersion %d from %s",
                     sum(len(b) for b in self.store.buckets.values()), self.store.rv, self.options.state_file)
            for crd in self.store.list(("apiextensions.k8s.io", "customresourcedefinitions")):
                self.registry.register_crd(crd)
        self._init_security()
        await self.controllers.bootstrap(restored)
        if self.options.seeds:
            await load_seed_dirs(self, self.options.seeds)
        self.controllers.start()
        app = web.Application(client_max_size=64 * 1024 * 1024, handler_args={"max_field_size": 65536})
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self.runner.setup()
        ssl_context = self._ssl_context()
        site = web.TCPSite(self.runner, self.options.host, self.options.port or 0, ssl_context=ssl_context,
                           backlog=1024)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        self.persister.flush()
        self.write_kubeconfig(self.options.kubeconfig)
        LOG.info("serving on https://%s:%d", self.options.host, self.port)

    def _ssl_context(self):
        tls = self.store.extra_state["tls"]
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with tempfile.TemporaryDirectory() as tmp:
            cert_path, key_path = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
            with open(cert_path, "w") as handle:
                handle.write(tls["cert"] + tls["ca_cert"])
            with open(key_path, "w") as handle:
                handle.write(tls["key"])
            context.load_cert_chain(cert_path, key_path)
        context.set_alpn_protocols(["http/1.1"])
        return context

    @property
    def url(self):
        return "https://%s:%d" % (self.options.host, self.port)

    def kubeconfig_dict(self, token=None, user="kubeapi"):
        ca = base64.b64encode(self.store.extra_state["tls"]["ca_cert"].encode()).decode()
        return {"apiVersion": "v1", "kind": "Config", "preferences": {},
                "clusters": [{"name": "kubeapi", "cluster": {"server": self.url, "certificate-authority-data": ca}}],
                "users": [{"name": user, "user": {"token": token or self.admin_token}}],
                "contexts": [{"name": "kubeapi", "context": {"cluster": "kubeapi", "user": user,
                                                             "namespace": "default"}}],
                "current-context": "kubeapi"}

    def write_kubeconfig(self, path):
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".kubeconfig-", dir=directory)
        with os.fdopen(fd, "w") as handle:
            yaml.safe_dump(self.kubeconfig_dict(), handle, default_flow_style=False)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)

    async def stop(self):
        await self.controllers.stop()
        await self.read.close_watches()
        if self.runner is not None:
            await self.runner.cleanup()
        await self.converter.close()
        self.persister.dirty = True
        self.persister.flush()

    async def serve_forever(self):
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stop.set)
        await self.start()
        await self._stop.wait()
        LOG.info("stopping")
        await self.stop()

    # --- request handling -------------------------------------------------------------------------
    async def handle(self, request):
        path = request.path
        query = request.query
        if path.startswith(ADMIN_PREFIX):
            return await self._admin(request)
        info = parse_request(request.method, path, query)
        user = self._authenticate(request)
        if user is None:
            response = self.error_response(errors.unauthorized(), request)
            self.request_log.record(info.verb, info.group, info.resource, info.subresource, info.namespace,
                                    info.name, 401, "")
            return response
        code = 500
        try:
            # non-resource requests are keyed by their path (faults.py convention)
            rule = self.faults.match(info.verb, info.group, info.resource if info.resource_request else path,
                                     info.subresource, info.namespace, info.name)
            if rule:
                response = await self._fault(request, rule)
                if response is not None:
                    code = response.status
                    return response
            self._authorize(user, info)
            response = await self.dispatch(request, info, user)
            code = response.status
            return response
        except errors.ApiError as err:
            code = err.code
            return self.error_response(err, request)
        except (ConnectionResetError, asyncio.CancelledError):
            code = 499
            raise
        except Exception as exc:  # never crash: answer 500 and keep serving
            LOG.exception("internal error on %s %s", request.method, request.path_qs)
            code = 500
            return self.error_response(errors.internal(str(exc) or exc.__class__.__name__), request)
        finally:
            self.request_log.record(info.verb, info.group, info.resource if info.resource_request else path,
                                    info.subresource, info.namespace, info.name, code, user.username)

    def _authenticate(self, request):
        header = request.headers.get("Authorization")
        if wiring.auth is not None:
            if not header:
                return self.authenticator.authenticate(header, allow_anonymous=True)
            # a one-second cache keeps token checks (HMAC, user copies) off the hot read path
            now = time.monotonic()
            cached = self._auth_cache.get(header)
            if cached is not None and cached[1] > now:
                return cached[0]
            user = self.authenticator.authenticate(header, allow_anonymous=False)
            if len(self._auth_cache) > 1000:
                self._auth_cache.clear()
            self._auth_cache[header] = (user, now + 1.0)
            return user
        user = self.authenticator.authenticate(header)
        if user is None and not header:
            return wiring.make_user("system:anonymous", ["system:unauthenticated"])
        return user

    def _authorize(self, user, info):
        attrs = wiring.request_attributes(
            verb=info.verb, api_group=info.group, resource=info.resource, subresource=info.subresource,
            namespace=info.namespace, name=info.name, path=info.path, resource_request=info.resource_request)
        if not info.resource_request and info.path in PUBLIC_PATHS:
            return
        allowed, _reason = self.authorizer.authorize(user, attrs)
        if allowed:
            return
        message = self.authorizer.forbidden_message(user, attrs)
        if info.resource_request:
            raise errors.forbidden(message, info.group, info.resource, info.name)
        raise errors.ApiError(403, "Forbidden", "forbidden: " + message, {})

    async def _fault(self, request, rule):
        action = rule.get("action")
        if action == "drop":
            transport = request.transport
            if transport is not None:
                transport.abort()
            raise asyncio.CancelledError()
        if action == "hang":
            await asyncio.sleep(float(rule.get("seconds", 5)))
            code = self._hang_codes.get(rule.get("id"))
            if code:
                return self.error_response(errors.status_for_code(
                    int(code), rule.get("message") or "injected fault after %ss" % rule.get("seconds")), request)
            return None
        if action == "error":
            code = int(rule.get("code", 500))
            return self.error_response(errors.status_for_code(code, rule.get("message") or "injected fault"),
                                       request)
        return None

    async def _admin(self, request):
        user = self._authenticate(request)
        if user is None:
            return self.error_response(errors.unauthorized(), request)
        if "system:masters" not in user.groups:
            return self.error_response(errors.forbidden(
                'User "%s" cannot use the kubeapi admin endpoints (system:masters only)' % user.username), request)
        tail = request.path[len(ADMIN_PREFIX):].strip("/")
        try:
            if tail == "faults":
                if request.method == "GET":
                    return self.json_response({"items": self.faults.list()})
                if request.method == "POST":
                    posted = json.loads(await request.read())
                    added = self.faults.add(posted)
                    if isinstance(posted, dict) and "code" in posted:
                        self._hang_codes[added["id"]] = added["code"]   # hang, then answer this code
                    return self.json_response(added, 201)
                if request.method == "DELETE":
                    self.faults.clear()
                    return self.json_response({"items": []})
            if tail.startswith("faults/") and request.method == "DELETE":
                self.faults.remove(tail.split("/", 1)[1])
                return self.json_response({"items": self.faults.list()})
            if tail == "requests":
                if request.method == "GET":
                    since = int(request.query.get("since", "0") or 0)
                    body = dict(self.request_log.counts())
                    body["entries"] = self.request_log.entries(since)
                    return self.json_response(body)
                if request.method == "DELETE":
                    self.request_log.reset()
                    return self.json_response({"total": 0})
            if tail == "state" and request.method == "GET":
                return self.json_response({"resourceVersion": self.store.rv, "oldestWatchResourceVersion":
                                           self.store.oldest_rv(), "missingModules": wiring.missing(),
                                           "tokens": self.static_tokens()})
        except errors.ApiError as err:
            return self.error_response(err, request)
        except (ValueError, KeyError, TypeError) as exc:
            return self.error_response(errors.bad_request("invalid admin request: %s" % exc), request)
        return self.error_response(errors.route_not_found(), request)

    async def dispatch(self, request, info, user):
        if not info.resource_request:
            return await self._non_resource(request, info)
        rtype = self.registry.lookup(info.group, info.version, info.resource)
        if rtype is None:
            raise errors.route_not_found()
        return await self.resources.handle(request, info, rtype, user)

    async def _non_resource(self, request, info):
        path = info.path.rstrip("/") or "/"
        accept = request.headers.get("Accept", "")
        if request.method not in ("GET", "HEAD"):
            if path in ("/api", "/apis") or path.startswith("/api/") or path.startswith("/apis/"):
                raise errors.method_not_allowed()
            raise errors.route_not_found()
        if path == "/version":
            return self.json_response(discovery.VERSION_INFO)
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok", content_type="text/plain")
        if path == "/api":
            aggregated = discovery.wants_aggregated(accept)
            if aggregated:
                return self.json_response(discovery.aggregated(self.registry, True, _agg_version(aggregated)),
                                          content_type=aggregated)
            return self.json_response(discovery.api_versions("%s:%d" % (self.options.host, self.port)))
        if path == "/apis":
            aggregated = discovery.wants_aggregated(accept)
            if aggregated:
                return self.json_response(discovery.aggregated(self.registry, False, _agg_version(aggregated)),
                                          content_type=aggregated)
            return self.json_response(discovery.api_group_list(self.registry))
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) == 2:
            if parts[1] != "v1":
                raise errors.route_not_found()
            return self.json_response(discovery.resource_list(self.registry, "", "v1"))
        if parts[0] == "apis" and len(parts) == 2:
            doc = discovery.api_group(self.registry, parts[1])
            if doc is None:
                raise errors.route_not_found()
            return self.json_response(doc)
        if parts[0] == "apis" and len(parts) == 3:
            if parts[2] not in (self.registry.groups().get(parts[1]) or []):
                raise errors.route_not_found()
            return self.json_response(discovery.resource_list(self.registry, parts[1], parts[2]))
        if parts == ["openapi", "v2"] and "protobuf" in accept:
            response = web.Response(body=openapi.empty_v2_protobuf())
            response.headers["Content-Type"] = openapi.OPENAPI_V2_PROTOBUF
            return response
        if parts[0] == "openapi":
            doc = openapi.document(self, parts[1:], request.query)
            if doc is None:
                raise errors.route_not_found()
            return self.json_response(doc)
        raise errors.route_not_found()

    # --- responses --------------------------------------------------------------------------------
    def json_response(self, body, status=200, content_type="application/json", headers=None):
        data = body if isinstance(body, bytes) else dumps(body)
        response = web.Response(body=data, status=status, headers=headers)
        response.content_type = content_type.split(";")[0]
        if ";" in content_type:
            response.headers["Content-Type"] = content_type
        return response

    def error_response(self, err, request=None):
        headers = dict(err.headers)
        if err.code == 401:
            headers.setdefault("WWW-Authenticate", 'Bearer realm="kubernetes"')
        if err.code in (429, 503, 504) and err.details and err.details.get("retryAfterSeconds"):
            headers["Retry-After"] = str(err.details["retryAfterSeconds"])
        return self.json_response(err.status_body(), err.code, headers=headers)


def _agg_version(content_type):
    return "apidiscovery.k8s.io/v2" if "v=v2;" in content_type + ";" else "apidiscovery.k8s.io/v2beta1"
