"""`capi-proxy` (python -m capi_proxy): the proxy's command line and its start.

Nothing imported here at module level imports aiohttp: run_proxy points OpenSSL's default trust store at nothing
(kubeconfig.trust_only_the_named_ca) before aiohttp builds its default contexts, which would otherwise each load the
system bundle (about 1.5 MB of RSS per sidecar).
"""
import argparse
import asyncio
import gc
import ipaddress
import os
import ssl

from capi_proxy.cli import address, extra_group, positive, server_tls
from capi_proxy.core import GroupMap
from capi_proxy.kubeconfig import KubeconfigError, Upstream, trust_only_the_named_ca
from capi_proxy.logs import LEVELS, JsonLogger
from capi_proxy.proxy.budget import DEFAULT_MAX_INFLIGHT_BYTES
from capi_proxy.proxy.memory import DEFAULT_DELAY_SECONDS
from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import PROXY_MODES, PROXY_TRANSLATE


def config_map_reference(value):
    """'NAMESPACE/NAME' -> (namespace, name); ValueError naming the expected form."""
    namespace, slash, name = (value or "").partition("/")
    if not slash or not namespace or not name or "/" in name:
        raise ValueError("expected NAMESPACE/NAME of the mode ConfigMap, got %r" % value)
    return namespace, name


def _config_map(value):
    try:
        return config_map_reference(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def proxy_parser():
    parser = argparse.ArgumentParser(prog="python -m capi_proxy", description=(
        "Translating Kubernetes API proxy: clients speak cluster.x-k8s.io, the API server holds "
        "cluster.hypershift.openshift.io. `python -m capi_proxy shim --help` for the conversion webhook, "
        "`python -m capi_proxy exporter --help` for the fleet's migration metrics."))
    parser.add_argument("--kubeconfig", required=True, help="kubeconfig of the upstream API server (its CA verifies TLS)")
    parser.add_argument("--listen", type=address, default=("127.0.0.1", 8080),
                        help="HOST:PORT to serve plain HTTP on (default 127.0.0.1:8080; loopback unless named)")
    parser.add_argument("--tls-cert", help=(
        "PEM serving certificate (chain): serve HTTPS on --listen instead of HTTP (a HostedCluster's shared proxy: "
        "each client sends its own token, which client-go does over HTTPS only); with --tls-key"))
    parser.add_argument("--tls-key", help="PEM key of --tls-cert")
    parser.add_argument("--metrics-listen", type=address, help="HOST:PORT for Prometheus /metrics (off when absent)")
    parser.add_argument("--show-private", action="store_true", help="also show and serve the private groups as they are")
    parser.add_argument("--use-own-credentials", action="store_true", help=(
        "send the kubeconfig's credentials on requests that carry no Authorization header (the pod's service "
        "account, as in the enhancement); without it such requests go upstream anonymous"))
    parser.add_argument("--max-body-bytes", type=positive(int), default=3 * 1024 * 1024, help="request body limit")
    parser.add_argument("--max-inflight-bytes", type=positive(int), default=DEFAULT_MAX_INFLIGHT_BYTES, help=(
        "body bytes all requests in flight may hold at once; past it reads get 429 with Retry-After "
        "(default 64 MiB; one request alone may exceed it)"))
    parser.add_argument("--idle-timeout", type=positive(float), default=60.0, help=(
        "seconds a client connection may stay without a complete request head (idle keep-alive, slow or "
        "half-open clients) before it is closed"))
    parser.add_argument("--max-event-bytes", type=positive(int), default=16 * 1024 * 1024, help="one watch event's limit")
    parser.add_argument("--upstream-timeout", type=positive(float), default=60.0,
                        help="seconds to wait for the API server (non-watch requests; watch headers)")
    parser.add_argument("--discovery-ttl", type=positive(float), default=30.0, help="seconds the served-versions index is kept")
    parser.add_argument("--extra-group", type=extra_group, action="append", default=[],
                        help="STANDARD=PRIVATE group pair outside the *.cluster.x-k8s.io pattern (repeatable)")
    parser.add_argument("--memory-trim-delay", type=float, default=DEFAULT_DELAY_SECONDS, help=(
        "seconds after a large body or a closed watch before freed memory is given back to the system "
        "(glibc malloc_trim; 0 or less turns it off)"))
    parser.add_argument("--mode", choices=PROXY_MODES, default=PROXY_TRANSLATE, help=(
        "translate: serve the standard CAPI groups from the private ones; passthrough: relay every request and "
        "answer unchanged (default translate; fixed unless --mode-config-map)"))
    parser.add_argument("--mode-config-map", type=_config_map, metavar="NAMESPACE/NAME", help=(
        "follow the mode live from data.mode of this ConfigMap (read and watched with the kubeconfig's own "
        "credentials; --mode is then unused): until it is read, /readyz and every request answer 503; on a change "
        "open watches end with 410 Expired, and the mode applied is acknowledged in data.applied.<--pod-name>"))
    parser.add_argument("--pod-name", default=os.environ.get("POD_NAME", ""), help=(
        "the Pod this proxy runs in (default: the POD_NAME environment variable), the key of its acknowledgement"))
    parser.add_argument("--log-level", choices=sorted(LEVELS), default="info")
    return parser


def is_loopback(host):
    """Whether HOST of --listen reaches this machine (or this Pod) only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_listen(args):
    """ValueError when the listener the options describe would lend the proxy's identity to others, or lacks half
    of its TLS pair."""
    if bool(args.tls_cert) != bool(args.tls_key):
        raise ValueError("--tls-cert and --tls-key go together: give both (HTTPS) or neither (HTTP)")
    if args.use_own_credentials and not is_loopback(args.listen[0]):
        raise ValueError("--use-own-credentials sends the proxy's own credentials for any caller without a token, so "
                         "it is refused on --listen %s:%s: listen on loopback (127.0.0.1, a sidecar's Pod alone "
                         "reaches it), or leave --use-own-credentials out and serve TLS (--tls-cert, --tls-key) so "
                         "that each client sends its own token" % tuple(args.listen))


def run_proxy(argv):
    args = proxy_parser().parse_args(argv)
    logger = JsonLogger(args.log_level)
    try:
        check_listen(args)
        upstream = Upstream(args.kubeconfig)
        group_map = GroupMap(dict(args.extra_group))
        tls = server_tls(args.tls_cert, args.tls_key) if args.tls_cert else None
    except (KubeconfigError, ValueError, OSError, ssl.SSLError) as exc:
        logger.error("cannot start", error=str(exc))
        return 2
    trust_only_the_named_ca(upstream)  # before aiohttp is imported (below): its default contexts load no bundle
    # pylint: disable=import-outside-toplevel
    from capi_proxy.metrics import ProxyMetrics
    from capi_proxy.proxy.relay import Options, Proxy
    from capi_proxy.serving import metrics_app, serve
    from capi_proxy.upstream import limit_tls_read_buffer
    # pylint: enable=import-outside-toplevel
    metrics = ProxyMetrics()
    options = Options(show_private=args.show_private, use_own_credentials=args.use_own_credentials,
                      max_body_bytes=args.max_body_bytes, upstream_timeout=args.upstream_timeout,
                      max_event_bytes=args.max_event_bytes, discovery_ttl=args.discovery_ttl, group_map=group_map,
                      memory_trim_delay=args.memory_trim_delay, max_inflight_bytes=args.max_inflight_bytes,
                      mode=args.mode, mode_config_map=args.mode_config_map, pod_name=args.pod_name)
    proxy = Proxy(upstream, options, logger, metrics)
    apps = [(proxy.application(), args.listen, tls)]
    if args.metrics_listen:
        apps.append((metrics_app(metrics.registry, proxy.readyz), args.metrics_listen, None))
    logger.info("starting", upstream=upstream.server, show_private=args.show_private,
                use_own_credentials=args.use_own_credentials, tls=tls is not None,
                mode="/".join(args.mode_config_map) if args.mode_config_map else args.mode)
    limit_tls_read_buffer()
    gc.collect()
    gc.freeze()  # modules and settings live forever: keep them out of every later full collection
    try:
        asyncio.run(serve(apps, logger, "capi-proxy", idle_timeout=args.idle_timeout))
    finally:
        logger.flush()  # lines of the loop's last turn
    return 0
