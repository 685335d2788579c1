"""The floor of the proxy's GET figure: the thinnest relay aiohttp allows, measured in the same run as the proxy.

One aiohttp server whose only handler forwards the path and the Authorization header to the API server on a pooled
aiohttp client session set up as the proxy's (TLS with the cluster's CA, no decompression, 16 KiB reads, no cookie
jar) and hands the body back: no routing, translation, logging, metrics or byte budget. What the proxy adds on top
of this relay is its own work; what this relay adds over direct requests is the second loopback hop itself
(aiohttp's server and client and asyncio's TLS, in Python).

    python -m benchmarks.thin_relay --server URL --ca FILE --port PORT   (prints "ready" once it listens)
"""
import argparse
import asyncio
import ssl
import sys

import aiohttp
import yarl
from aiohttp import web


def parser():
    arguments = argparse.ArgumentParser(prog="python -m benchmarks.thin_relay", description=__doc__.splitlines()[0])
    arguments.add_argument("--server", required=True, help="the API server's URL (https://host:port)")
    arguments.add_argument("--ca", required=True, help="the CA file the API server's certificate is checked with")
    arguments.add_argument("--port", type=int, required=True, help="the loopback port to listen on")
    return arguments


async def serve(server, ca_file, port):
    connector = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=ca_file), limit=0)
    session = aiohttp.ClientSession(connector=connector, auto_decompress=False, read_bufsize=16 * 1024,
                                    cookie_jar=aiohttp.DummyCookieJar())

    async def relay(request):
        headers = {"Authorization": request.headers.get("Authorization", ""), "Accept": "application/json",
                   "Accept-Encoding": "identity"}
        async with session.get(yarl.URL(server + request.raw_path, encoded=True), headers=headers) as upstream:
            body = await upstream.read()
            return web.Response(status=upstream.status, body=body, content_type="application/json")

    runner = web.ServerRunner(web.Server(relay), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    print("ready", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await session.close()
        await runner.cleanup()


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        asyncio.run(serve(args.server, args.ca, args.port))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
