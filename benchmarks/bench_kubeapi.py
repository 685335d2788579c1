"""Local API server (tests/kubeapi) throughput: simple GETs/s and LIST of 5,000 objects.

The server runs in its own process (one asyncio loop = one core); the client is this process, using
aiohttp with keep-alive connections, plus the kubernetes Python client for the LIST.
"""
import asyncio
import json
import os
import ssl
import time

import aiohttp

from tests.kubeapi.testing import temp_server

GET_SECONDS = 3.0
LIST_SIZE = 5000


async def _gets(server, concurrency, seconds):
    context = ssl.create_default_context(cafile=server.ca_file)
    headers = {"Authorization": "Bearer " + server.admin_token, "Accept": "application/json"}
    url = server.url + "/api/v1/namespaces/default/configmaps/bench-target"
    connector = aiohttp.TCPConnector(ssl=context, limit=concurrency)
    count = 0
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        deadline = time.perf_counter() + seconds

        async def worker():
            nonlocal count
            while time.perf_counter() < deadline:
                async with session.get(url) as response:
                    await response.read()
                    assert response.status == 200, response.status
                count += 1
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _round in range(concurrency)))
        return count / (time.perf_counter() - started)


async def _create_many(server, count, concurrency=16):
    context = ssl.create_default_context(cafile=server.ca_file)
    headers = {"Authorization": "Bearer " + server.admin_token, "Content-Type": "application/json"}
    url = server.url + "/api/v1/namespaces/bench/configmaps"
    connector = aiohttp.TCPConnector(ssl=context, limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        queue = list(range(count))

        async def worker():
            while queue:
                index = queue.pop()
                body = {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "cm-%05d" % index, "labels": {"bench": "yes", "n": str(index % 10)}},
                        "data": {"key": "value-%d" % index}}
                async with session.post(url, data=json.dumps(body)) as response:
                    await response.read()
                    assert response.status == 201, response.status
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _round in range(concurrency)))
        return count / (time.perf_counter() - started)


async def _list(server, path, accept="application/json"):
    context = ssl.create_default_context(cafile=server.ca_file)
    headers = {"Authorization": "Bearer " + server.admin_token, "Accept": accept}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context), headers=headers) as session:
        timings = []
        size = 0
        for _round in range(5):
            started = time.perf_counter()
            async with session.get(server.url + path) as response:
                body = await response.read()
                assert response.status == 200, response.status
            timings.append(time.perf_counter() - started)
            size = len(body)
        return min(timings), sorted(timings)[len(timings) // 2], size


def _cpu_seconds(pid):
    """utime+stime of a process (Linux /proc), to express throughput per server core-second."""
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    server = temp_server()
    try:
        server.request("POST", "/api/v1/namespaces/default/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench-target"}, "data": {"a": "b"}})
        server.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": "bench"}})
        single = asyncio.run(_gets(server, 1, GET_SECONDS))
        cpu_before = _cpu_seconds(server.process.pid)
        started = time.perf_counter()
        parallel = asyncio.run(_gets(server, 8, GET_SECONDS))
        requests = parallel * (time.perf_counter() - started)
        per_core = requests / max(_cpu_seconds(server.process.pid) - cpu_before, 1e-3)
        print("GET configmap, 1 keep-alive connection:  %7.0f requests/s" % single)
        print("GET configmap, 8 keep-alive connections: %7.0f requests/s (client shares the 2 cores)" % parallel)
        print("GET configmap per server CPU-second:     %7.0f requests/s  (target >= 1000/s on one core)" % per_core)
        creates = asyncio.run(_create_many(server, LIST_SIZE))
        print("POST configmap (16 connections):          %7.0f creates/s" % creates)
        best, median, size = asyncio.run(_list(server, "/api/v1/namespaces/bench/configmaps"))
        print("LIST %d configmaps (JSON, %.1f MB):      best %6.1f ms, median %6.1f ms"
              % (LIST_SIZE, size / 1e6, best * 1000, median * 1000))
        best, median, _unused = asyncio.run(_list(server, "/api/v1/namespaces/bench/configmaps?labelSelector=n%3D3"))
        print("LIST with labelSelector (500 of %d):    best %6.1f ms, median %6.1f ms" % (LIST_SIZE, best * 1000,
                                                                                          median * 1000))
        best, median, _unused = asyncio.run(_list(server, "/api/v1/namespaces/bench/configmaps",
                                            "application/json;as=Table;v=v1;g=meta.k8s.io"))
        print("LIST %d configmaps as Table (kubectl get): best %6.1f ms, median %6.1f ms" % (LIST_SIZE, best * 1000,
                                                                                             median * 1000))
        from kubernetes import client
        with server.api_client() as api:
            core = client.CoreV1Api(api)
            started = time.perf_counter()
            items = core.list_namespaced_config_map("bench", _preload_content=False)
            raw = time.perf_counter() - started
            items.release_conn()
            started = time.perf_counter()
            typed = core.list_namespaced_config_map("bench")
            decoded = time.perf_counter() - started
        print("kubernetes client LIST %d: raw %.1f ms, with model decoding %.1f ms (%d items)"
              % (LIST_SIZE, raw * 1000, decoded * 1000, len(typed.items)))
        print("ratio GET/s per server core to the 1000/s target: %.1fx" % (per_core / 1000.0))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
