"""Shared command-line helpers of the proxy and the shim: addresses, numbers, serving aiohttp apps."""
import argparse
import asyncio
import signal

from aiohttp import web


def address(value):
    """'127.0.0.1:8080', '[::1]:8080' or ':8080' (loopback) -> (host, port)."""
    host, colon, port = value.rpartition(":")
    if not colon or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError("expected HOST:PORT such as 127.0.0.1:8080, got %r" % value)
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def positive(kind):
    def parse(value):
        number = kind(value)
        if number <= 0:
            raise argparse.ArgumentTypeError("expected a positive number, got %r" % value)
        return number
    return parse


def extra_group(value):
    standard, equals, private = value.partition("=")
    if not equals:
        raise argparse.ArgumentTypeError("expected STANDARD_GROUP=PRIVATE_GROUP, got %r" % value)
    return standard, private


async def serve(apps, logger, component):
    """Run aiohttp apps [(app, (host, port))] until SIGTERM/SIGINT, then shut down cleanly."""
    runners = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        for app, (host, port), ssl_context in apps:
            runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
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
        return web.Response(text=metrics_registry.render(), content_type="text/plain",
                            headers={"X-Content-Type-Options": "nosniff"}, charset="utf-8")

    async def healthz(_request):
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz or healthz)
    return app
