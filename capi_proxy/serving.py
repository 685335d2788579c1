"""Serving aiohttp apps for the proxy and the shim: the listeners, signal handling, the metrics app."""
import asyncio
import signal

from aiohttp import web


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
