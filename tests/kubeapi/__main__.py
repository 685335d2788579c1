"""CLI: `python -m tests.kubeapi serve --kubeconfig PATH [--port N] [--seed DIR ...] [--state-file FILE]`."""
import argparse
import asyncio
import logging
import sys


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m tests.kubeapi", description="A local Kubernetes API server "
                                     "for tests (see tests/kubeapi/README.md).")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve until SIGTERM/SIGINT")
    serve.add_argument("--kubeconfig", required=True, help="where to write the admin kubeconfig once ready")
    serve.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    serve.add_argument("--seed", action="append", default=[], metavar="DIR",
                       help="load every YAML/JSON manifest under DIR (repeatable; CRDs, then namespaces, then the rest)")
    serve.add_argument("--state-file", help="persist objects and resourceVersions here (restored on start)")
    serve.add_argument("--deployment-delay", type=float, default=0.2,
                       help="seconds before the Deployment controller reconciles a change (default 0.2)")
    serve.add_argument("--pod-grace-delay", type=float, default=0.2,
                       help="seconds a gracefully deleted pod stays terminating (default 0.2)")
    serve.add_argument("--gc-delay", type=float, default=0.05,
                       help="seconds before the garbage collector acts on orphans (default 0.05)")
    serve.add_argument("--watch-history", type=int, default=10000,
                       help="events kept for watch resume; older resourceVersions get 410 (default 10000)")
    serve.add_argument("--bookmark-interval", type=float, default=1.0,
                       help="seconds between watch bookmarks when allowWatchBookmarks=true (default 1)")
    serve.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=getattr(logging, args.log_level), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from .server import KubeApiServer, Options
    options = Options(kubeconfig=args.kubeconfig, port=args.port, seeds=args.seed, state_file=args.state_file,
                      deployment_delay=args.deployment_delay, pod_grace_delay=args.pod_grace_delay,
                      gc_delay=args.gc_delay, watch_history=args.watch_history,
                      bookmark_interval=args.bookmark_interval)
    asyncio.run(KubeApiServer(options).serve_forever())
    return 0


if __name__ == "__main__":
    sys.exit(main())
