"""The floor of the proxy's GET figure: the thinnest relay aiohttp allows, measured in the same run as the proxy.

One aiohttp server whose only handler forwards the path and the Authorization header to the API server on the proxy's
own upstream session (capi_proxy.upstream.UpstreamClient from the same kubeconfig: TLS with its CA, no
decompression, 16 KiB reads, no cookie jar) and hands the API server's answer back - its status, its headers (but
the connection's own: Connection, Keep-Alive, Transfer-Encoding, Content-Length, Content-Encoding, Date and Server,
which aiohttp writes itself) and its body: no routing, translation, logging, metrics or byte budget. What the proxy
adds on top of this relay is its own work; what this relay adds over direct requests is the second loopback hop
itself (aiohttp's server and client and asyncio's TLS, in Python).

--body-only hands back the status and the body alone, with a constant Content-Type, as this relay did before
2026-11-30: a thinner floor than any relay of the API's answer (the client never sees Audit-Id, Cache-Control or the
API server's Content-Type), and cheaper for the client as well, whose HTTP parser reads five headers fewer
(Python's http.client: 11.6 against 20.2 us per answer).

    python -m benchmarks.thin_relay --kubeconfig PATH --port PORT [--body-only]   (prints "ready" once it listens)
"""
import argparse
import asyncio
import sys

from aiohttp import web
from multidict import CIMultiDict

from capi_proxy.kubeconfig import Upstream
from capi_proxy.proxy.relay import _RESPONSE_DROP_NAMES  # the connection's own headers, as the proxy drops them
from capi_proxy.upstream import UpstreamClient, limit_tls_read_buffer


def parser():
    arguments = argparse.ArgumentParser(prog="python -m benchmarks.thin_relay", description=__doc__.splitlines()[0])
    arguments.add_argument("--kubeconfig", required=True, help="the API server's kubeconfig, as the proxy is given it")
    arguments.add_argument("--port", type=int, required=True, help="the loopback port to listen on")
    arguments.add_argument("--body-only", action="store_true",
                           help="hand back the status and body alone (no header of the API server's answer)")
    return arguments


async def serve(kubeconfig, port, body_only=False):
    client = UpstreamClient(Upstream(kubeconfig), timeout=60.0)
    await client.start()
    session = client.session(own_credentials=False)

    async def relay(request):
        headers = {"Authorization": request.headers.get("Authorization", ""), "Accept": "application/json",
                   "Accept-Encoding": "identity"}
        async with session.get(client.url(request.raw_path), headers=headers) as upstream:
            body = await upstream.read()
            if body_only:
                return web.Response(status=upstream.status, body=body, content_type="application/json")
            headers = CIMultiDict(upstream.headers)
            for name in _RESPONSE_DROP_NAMES:
                headers.popall(name, None)
            return web.Response(status=upstream.status, body=body, headers=headers)

    runner = web.ServerRunner(web.Server(relay), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    print("ready", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await client.close()
        await runner.cleanup()


def main(argv=None):
    args = parser().parse_args(argv)
    limit_tls_read_buffer()  # as the proxy does before it serves
    try:
        asyncio.run(serve(args.kubeconfig, args.port, args.body_only))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
