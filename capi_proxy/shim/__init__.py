"""The conversion webhook shim for the private CRDs (ConversionReview v1 over TLS); with --standard-groups also for
the standard CAPI CRDs, standing in for the HyperShift operator's own /convert.

private -> standard group (core translate_object), convert the version, standard -> private:
* the CAPI core group: core convert_object, or the standard CAPI webhook at --delegate-url (with retries);
* any other group (infrastructure, bootstrap, control-plane, ipam, addons): as the provider's standard CRD says
  (read with --kubeconfig): through the webhook its spec.conversion names (with retries), or, when it has none,
  only the apiVersion changes, as kube-apiserver does for strategy None.
Failures come back as a ConversionReview with result.status "Failure" and a message naming the object and what to do.
"""
import argparse
import asyncio
import base64
import binascii
import ssl
import time

import aiohttp
from aiohttp import web

from capi_proxy import bodies, nesting
from capi_proxy.cli import address, extra_group, positive, server_tls
from capi_proxy.core import (TO_PRIVATE, TO_STANDARD, CapiTranslationError, GroupMap, convert_object, converts_group,
                             translate_object)
from capi_proxy.errors import ProxyError
from capi_proxy.kubeconfig import KubeconfigError, Upstream
from capi_proxy.logs import LEVELS, JsonLogger
from capi_proxy.metrics import Counter, Histogram, Registry
from capi_proxy.serving import metrics_app, read_body, serve, status_errors, status_response
from capi_proxy.upstream import TimedCache, UpstreamClient, load_contract_crds

REVIEW_API_VERSION = "apiextensions.k8s.io/v1"
MAX_REVIEW_BYTES = 32 * 1024 * 1024
_RETRYABLE_STATUSES = frozenset((429, 500, 502, 503, 504))


class ShimError(Exception):
    """A review that gets result Failure (the message is what the API server logs and returns)."""


class NotAReview(Exception):
    """A body that is no ConversionReview at all: answered with a 400 Status (there is no uid to answer)."""


def ref_version(value):
    key, equals, version = value.partition("=")
    if not equals or key.count("/") != 1 or not version:
        raise argparse.ArgumentTypeError("expected GROUP/KIND=VERSION such as "
                                         "infrastructure.cluster.x-k8s.io/AWSCluster=v1beta2, got %r" % value)
    return key, version


def shim_parser():
    parser = argparse.ArgumentParser(prog="python -m capi_proxy shim", description=(
        "Conversion webhook (ConversionReview v1) for the private CAPI CRDs: POST /convert over TLS."))
    parser.add_argument("--listen", type=address, default=("127.0.0.1", 9443), help="HOST:PORT (default 127.0.0.1:9443)")
    parser.add_argument("--tls-cert", required=True, help="PEM serving certificate (chain)")
    parser.add_argument("--tls-key", required=True, help="PEM private key")
    parser.add_argument("--delegate-url", help="the CAPI core group's conversion webhook URL (https://.../convert) to delegate to "
                        "(default: convert locally; other groups convert as their standard CRDs say)")
    parser.add_argument("--delegate-ca", help="PEM CA that verifies the delegate (default: system trust)")
    parser.add_argument("--delegate-retries", type=int, default=3, help="attempts on transient delegate failures")
    parser.add_argument("--delegate-timeout", type=positive(float), default=10.0, help="seconds per delegate attempt")
    parser.add_argument("--kubeconfig", help="read CRD contract labels from this cluster (for v1beta2 -> v1beta1 refs)")
    parser.add_argument("--ref-version", type=ref_version, action="append", default=[],
                        help="GROUP/KIND=VERSION for contract references (repeatable; wins over CRD labels)")
    parser.add_argument("--extra-group", type=extra_group, action="append", default=[],
                        help="STANDARD=PRIVATE group pair outside the *.cluster.x-k8s.io pattern (repeatable)")
    parser.add_argument("--standard-groups", action="store_true",
                        help="also convert reviews of the standard CAPI CRDs (cluster.x-k8s.io and its providers), "
                             "as the HyperShift operator's /convert does for the CRDs it installs")
    parser.add_argument("--metrics-listen", type=address, help="HOST:PORT for Prometheus /metrics")
    parser.add_argument("--crd-ttl", type=positive(float), default=60.0, help="seconds CRD labels are cached")
    parser.add_argument("--idle-timeout", type=positive(float), default=60.0,
                        help="seconds a connection may stay without a complete request head before it is closed")
    parser.add_argument("--log-level", choices=sorted(LEVELS), default="info")
    return parser


class Shim(object):
    def __init__(self, args, logger):
        self.logger = logger
        self.group_map = GroupMap(dict(args.extra_group))
        self.ref_versions = dict(args.ref_version)
        self.standard_groups = args.standard_groups
        self.delegate_url = args.delegate_url
        self.delegate_retries = max(1, args.delegate_retries)
        self.delegate_timeout = args.delegate_timeout
        self.delegate_ssl = ssl.create_default_context(cafile=args.delegate_ca) if args.delegate_ca else \
            ssl.create_default_context()
        self.provider_ssl = {}  # caBundle -> SSLContext, for the providers' own webhooks
        self.session = None
        self.client = UpstreamClient(Upstream(args.kubeconfig), 30.0) if args.kubeconfig else None
        self.crds = TimedCache(lambda: load_contract_crds(self.client, self.group_map), args.crd_ttl) \
            if self.client else None
        self.registry = Registry()
        self.reviews = Counter(self.registry, "hypershift_conversion_webhook_requests_total",
                               "Conversion reviews answered, by result (Success, Failure) and mode.", ("result", "mode"))
        self.seconds = Histogram(self.registry, "hypershift_conversion_webhook_duration_seconds",
                                 "Time to answer one conversion review.", ("mode",))
        self.delegate_errors = Counter(self.registry, "hypershift_conversion_webhook_delegate_errors_total",
                                       "Failed attempts to reach the delegate webhook.", ("reason",))

    def application(self):
        app = web.Application(client_max_size=MAX_REVIEW_BYTES, middlewares=[status_errors])
        app.router.add_post("/convert", self.handle)
        app.router.add_get("/healthz", lambda _request: web.Response(text="ok"))
        app.router.add_get("/readyz", lambda _request: web.Response(text="ok"))
        app.on_startup.append(self._startup)
        app.on_cleanup.append(self._cleanup)
        return app

    async def _startup(self, _app):
        self.session = aiohttp.ClientSession()
        if self.client:
            await self.client.start()

    async def _cleanup(self, _app):
        await self.session.close()
        if self.client:
            await self.client.close()

    async def handle(self, request):
        started = time.perf_counter()
        mode = "delegate" if self.delegate_url else "local"
        try:
            raw = await read_body(request, MAX_REVIEW_BYTES, "the ConversionReview")
            uid, desired, standard, problem = nesting.run(self._decode, raw)
            if problem is None:
                body, result = await self._answer(uid, desired, standard)
            else:
                body, result = self._failure(uid, problem), "Failure"
        except ProxyError as exc:
            return status_response(exc.code, exc.message)
        except NotAReview as exc:
            return status_response(400, str(exc))
        except nesting.DocumentTooDeep as exc:
            return status_response(400, "the ConversionReview is refused: %s" % exc)
        self.seconds.observe(time.perf_counter() - started, mode)
        self.reviews.inc(result, mode)
        return web.Response(body=body, content_type="application/json")

    def _decode(self, raw):
        """(uid, desired apiVersion, the review in the standard groups, None) or (uid, None, None, problem)."""
        try:
            review = bodies.loads(raw)
        except ValueError as exc:
            raise NotAReview("the body is not JSON (%s); send a ConversionReview v1" % str(exc)[:200])
        request = review.get("request") if isinstance(review, dict) else None
        uid = request.get("uid") if isinstance(request, dict) else None
        if not isinstance(uid, str) or not uid:
            raise NotAReview("not a ConversionReview: request.uid is missing; send a ConversionReview "
                             "(apiVersion %s) with request.uid" % REVIEW_API_VERSION)
        try:
            desired = self._check(review)
            return uid, desired, translate_object(review, TO_STANDARD, self.group_map), None
        except ShimError as exc:
            return uid, None, None, str(exc)
        except CapiTranslationError as exc:
            return uid, None, None, "cannot translate the review to the standard groups: %s" % exc

    async def _answer(self, uid, desired, standard):
        """(response body, result): the converted objects, or a Failure naming the object and what to do."""
        try:
            group = desired.split("/")[0]
            if self.group_map.is_private(group) and not converts_group(group, self.group_map):
                converted = await self._convert_as_provider(standard)  # not for standard groups: this shim may be their webhook
            elif self.delegate_url:
                converted = await self._delegate(standard, self.delegate_url, self.delegate_ssl)
            else:
                crds = await self.crds.get() if self.crds else None
                converted = nesting.run(self._convert_locally, standard["request"], desired, crds, kind=nesting.TREE)
            private = self.group_map.is_private(group)
            return nesting.run(self._success, converted, uid, private, kind=nesting.TREE), "Success"
        except ShimError as exc:
            return self._failure(uid, str(exc)), "Failure"

    def _success(self, converted, uid, private=True):
        try:
            objects = [translate_object(obj, TO_PRIVATE, self.group_map) if private else obj for obj in converted]
        except CapiTranslationError as exc:
            raise ShimError("cannot translate the converted objects back to the private groups: %s" % exc)
        return bodies.dumps(self._review({"uid": uid, "result": {"status": "Success"}, "convertedObjects": objects}))

    def _failure(self, uid, message):
        self.logger.warning("conversion failed", uid=uid, error=message)
        return bodies.dumps(self._review({"uid": uid, "result": {"status": "Failure", "message": message}}))

    @staticmethod
    def _review(response):
        return {"apiVersion": REVIEW_API_VERSION, "kind": "ConversionReview", "response": response}

    def _check(self, review):
        if review.get("apiVersion") != REVIEW_API_VERSION or review.get("kind") != "ConversionReview":
            raise ShimError("expected a ConversionReview of %s, got %s %s; register the shim with "
                            "conversionReviewVersions [v1]" % (REVIEW_API_VERSION, review.get("apiVersion"), review.get("kind")))
        request = review["request"]
        desired = request.get("desiredAPIVersion")
        if not isinstance(desired, str) or desired.count("/") != 1:
            raise ShimError("request.desiredAPIVersion is %r, expected GROUP/VERSION" % (desired,))
        group = desired.split("/")[0]
        if not (self.group_map.is_private(group) or self.standard_groups and self.group_map.is_standard(group)):
            served = "the private *.cluster.hypershift.openshift.io CRDs" + (
                " and the standard CAPI ones" if self.standard_groups else " (--standard-groups adds the standard ones)")
            raise ShimError("request.desiredAPIVersion %s is not a CAPI group this shim converts; it serves %s"
                            % (desired, served))
        if not isinstance(request.get("objects"), list):
            raise ShimError("request.objects must be a list of objects")
        return desired

    def _convert_locally(self, request, desired, crds):
        version = desired.split("/")[1]
        desired_standard = self.group_map.to_standard(desired.split("/")[0])
        converted = []
        for position, obj in enumerate(request["objects"]):
            api_version = obj.get("apiVersion") if isinstance(obj, dict) else None
            if not isinstance(api_version, str) or api_version.split("/")[0] != desired_standard:
                raise ShimError("objects[%d] has apiVersion %r, expected group %s (the CRD's own group)"
                                % (position, api_version, self.group_map.to_private(desired_standard)))
            try:
                converted.append(convert_object(obj, version, ref_versions=self.ref_versions, crds=crds,
                                                group_map=self.group_map))
            except CapiTranslationError as exc:  # ConversionError included
                raise ShimError("objects[%d]: %s" % (position, exc))
        return converted

    async def _convert_as_provider(self, standard_review):
        """A provider group's objects, converted as its standard CRD says: its own webhook, or a new apiVersion."""
        request = standard_review["request"]
        desired = request["desiredAPIVersion"]
        group = desired.split("/")[0]
        kinds = sorted({obj.get("kind") for obj in request["objects"] if isinstance(obj, dict)}, key=str)
        if not kinds:
            return []
        for position, obj in enumerate(request["objects"]):
            api_version = obj.get("apiVersion") if isinstance(obj, dict) else None
            if not isinstance(api_version, str) or api_version.split("/")[0] != group:
                raise ShimError("objects[%d] has apiVersion %r, expected group %s (the CRD's own group)"
                                % (position, api_version, self.group_map.to_private(group)))
        if self.crds is None:
            raise ShimError("%s %s: the shim converts a provider's objects as the provider's standard CRD says, and "
                            "reads it with --kubeconfig; start the shim with --kubeconfig (roles/conversion_shim does)"
                            % (self.group_map.to_private(group), "/".join(map(str, kinds))))
        found = None
        for refresh in (False, True):  # a provider installed since the last load: read the CRDs again, once
            found = [crd for crd in await self.crds.get(refresh=refresh)
                     if crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == kinds[0]]
            if found:
                break
        if not found:
            raise ShimError("%s, kind %s: the standard CRD of this kind in %s is not on the cluster, and the shim "
                            "converts a provider's objects as that CRD says; install the provider's CRDs"
                            % (self.group_map.to_private(group), kinds[0], group))
        conversion = found[0]["spec"].get("conversion")
        if conversion is None:  # strategy None, as kube-apiserver converts the standard CRD: the apiVersion only
            return [dict(obj, apiVersion=desired) for obj in request["objects"]]
        url, context = self._provider_webhook(found[0]["metadata"]["name"], conversion["webhook"]["clientConfig"])
        return await self._delegate(standard_review, url, context)

    def _provider_webhook(self, crd_name, config):
        """(URL, SSLContext) of the webhook a standard CRD's clientConfig names (a Service by its cluster DNS name)."""
        service = config.get("service")
        if service:
            url = "https://%s.%s.svc:%d%s" % (service.get("name"), service.get("namespace"),
                                              int(service.get("port") or 443), service.get("path") or "")
        elif config.get("url"):
            url = config["url"]
        else:
            raise ShimError("the standard CRD %s converts through a webhook without a service or url; fix its "
                            "spec.conversion.webhook.clientConfig" % crd_name)
        bundle = config.get("caBundle") or ""
        if bundle not in self.provider_ssl:
            try:
                pem = base64.b64decode(bundle, validate=True).decode("ascii") if bundle else None
                self.provider_ssl[bundle] = ssl.create_default_context(cadata=pem) if pem else \
                    ssl.create_default_context()
            except (binascii.Error, UnicodeDecodeError, ssl.SSLError, ValueError) as exc:
                raise ShimError("the standard CRD %s has a conversion caBundle that is not a base64 PEM CA (%s); "
                                "fix its spec.conversion.webhook.clientConfig.caBundle" % (crd_name, exc))
        return url, self.provider_ssl[bundle]

    async def _delegate(self, standard_review, url, context):
        timeout = aiohttp.ClientTimeout(total=self.delegate_timeout)
        payload = nesting.run(bodies.dumps, standard_review, kind=nesting.TREE)
        last_problem = None
        for attempt in range(self.delegate_retries):
            if attempt:
                await asyncio.sleep(min(2.0, 0.2 * 2 ** attempt))
            try:
                async with self.session.post(url, data=payload, timeout=timeout,
                                             headers={"Content-Type": "application/json"},
                                             ssl=context if url.startswith("https") else None
                                             ) as response:
                    raw = await response.read()
                    text = raw[:300].decode("utf-8", "replace")
                    if response.status in _RETRYABLE_STATUSES:
                        last_problem = "HTTP %d: %s" % (response.status, text[:200])
                        self.delegate_errors.inc("status")
                        continue
                    if response.status != 200:
                        raise ShimError("the delegate webhook %s answered HTTP %d: %s"
                                        % (url, response.status, text[:300]))
                    answer = nesting.run(bodies.loads, raw)
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
                last_problem = "%s: %s" % (type(exc).__name__, exc)
                self.delegate_errors.inc("connection")
                continue
            except ValueError as exc:  # nesting.DocumentTooDeep included
                raise ShimError("the delegate webhook %s answered with a body that is not usable JSON (%s)"
                                % (url, str(exc)[:200]))
            response_body = answer.get("response") if isinstance(answer, dict) else None
            if not isinstance(response_body, dict) or response_body.get("uid") != standard_review["request"]["uid"]:
                raise ShimError("the delegate webhook %s answered without the review's uid; it is not a "
                                "ConversionReview v1 webhook" % url)
            result = response_body.get("result") or {}
            if result.get("status") != "Success":
                raise ShimError("the delegate webhook %s refused the conversion: %s"
                                % (url, result.get("message", "no message")))
            return response_body.get("convertedObjects") or []
        raise ShimError("the delegate webhook %s failed %d times (last: %s); check that it runs and is reachable"
                        % (url, self.delegate_retries, last_problem))


def run_shim(argv):
    args = shim_parser().parse_args(argv)
    logger = JsonLogger(args.log_level, component="capi-conversion-shim")
    try:
        shim = Shim(args, logger)
        tls = server_tls(args.tls_cert, args.tls_key)
    except (KubeconfigError, ValueError, OSError, ssl.SSLError) as exc:
        logger.error("cannot start", error=str(exc))
        return 2
    apps = [(shim.application(), args.listen, tls)]
    if args.metrics_listen:
        apps.append((metrics_app(shim.registry), args.metrics_listen, None))
    try:
        asyncio.run(serve(apps, logger, "capi-conversion-shim", idle_timeout=args.idle_timeout))
    finally:
        logger.flush()  # lines of the loop's last turn
    return 0
