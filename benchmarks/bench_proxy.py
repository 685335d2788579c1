"""The translating API proxy against tests/kubeapi on loopback, side by side with direct requests.

Figures: added latency per GET (p50/p99, proxy vs direct), LIST of 500 Machines (ratio), 200
concurrent watches receiving 10,000 events (none lost, delay p50/p99), proxy RSS after the load.
The local server itself does ~1,000 GET/s, so absolute numbers are the server's; the proxy's share
is the difference of medians over many sequential keep-alive requests.
"""
import asyncio
import http.client
import json
import os
import statistics
import sys
import tempfile
import time

import aiohttp

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _path in (os.path.join(REPO_ROOT, ".collections"), REPO_ROOT):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from tests.integration.proxy import support  # noqa: E402  pylint: disable=wrong-import-position
from tests.kubeapi.testing import start_server  # noqa: E402  pylint: disable=wrong-import-position

NAMESPACE = "bench"
PRIVATE_MACHINES = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/%s/machines" % NAMESPACE
MACHINES = "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/machines" % NAMESPACE
GET_ROUNDS = 1500
LIST_ROUNDS = 15
WATCHERS = 200
EVENTS_PER_WATCHER = 50


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def machine(name):
    return {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Machine",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"cluster.x-k8s.io/cluster-name": "bench"}},
            "spec": {"clusterName": "bench", "bootstrap": {"dataSecretName": "user-data"},
                     "infrastructureRef": {"apiGroup": "infrastructure.cluster.hypershift.openshift.io",
                                           "kind": "AWSMachine", "name": name}}}


class Timer(object):
    """Sequential GETs on one keep-alive connection; returns per-request seconds."""

    def __init__(self, connection, token):
        self.connection = connection
        self.headers = {"Authorization": "Bearer " + token, "Accept": "application/json"}

    def run(self, path, rounds):
        samples = []
        for _round in range(rounds):
            started = time.perf_counter()
            self.connection.request("GET", path, headers=self.headers)
            response = self.connection.getresponse()
            body = response.read()
            samples.append(time.perf_counter() - started)
            if response.status != 200:
                raise RuntimeError("GET %s answered %s: %s" % (path, response.status, body[:200]))
        return samples


def bench_get(server, proxy_url):
    direct = Timer(http.client.HTTPSConnection(server.host, server.port, context=server.ssl_context), server.admin_token)
    host, port = proxy_url[len("http://"):].split(":")
    proxied = Timer(http.client.HTTPConnection(host, int(port)), server.admin_token)
    path_direct = PRIVATE_MACHINES + "/m-0"
    path_proxy = MACHINES + "/m-0"
    direct.run(path_direct, 100)
    proxied.run(path_proxy, 100)  # warm both
    direct_samples, proxy_samples = [], []
    for _batch in range(5):  # interleaved batches: both see the same machine load
        direct_samples += direct.run(path_direct, GET_ROUNDS // 5)
        proxy_samples += proxied.run(path_proxy, GET_ROUNDS // 5)
    d50, p50 = statistics.median(direct_samples), statistics.median(proxy_samples)
    d99, p99 = percentile(direct_samples, 0.99), percentile(proxy_samples, 0.99)
    print("GET one Machine, %d sequential keep-alive requests each:" % GET_ROUNDS)
    print("  direct  p50 %.3f ms  p99 %.3f ms" % (d50 * 1e3, d99 * 1e3))
    print("  proxy   p50 %.3f ms  p99 %.3f ms" % (p50 * 1e3, p99 * 1e3))
    print("  added   p50 %.3f ms  p99 %.3f ms  ratio p50 %.2f  (target: added p50 < 1 ms)"
          % ((p50 - d50) * 1e3, (p99 - d99) * 1e3, p50 / d50))


def bench_list(server, proxy_url):
    direct = Timer(http.client.HTTPSConnection(server.host, server.port, context=server.ssl_context), server.admin_token)
    host, port = proxy_url[len("http://"):].split(":")
    proxied = Timer(http.client.HTTPConnection(host, int(port)), server.admin_token)
    direct_samples, proxy_samples = [], []
    for _round in range(LIST_ROUNDS):
        direct_samples += direct.run(PRIVATE_MACHINES, 1)
        proxy_samples += proxied.run(MACHINES, 1)
    d50, p50 = statistics.median(direct_samples), statistics.median(proxy_samples)
    print("LIST 500 Machines, %d rounds: direct %.1f ms, proxy %.1f ms, ratio %.2f (target <= 1.3)"
          % (LIST_ROUNDS, d50 * 1e3, p50 * 1e3, p50 / d50))


async def bench_watches(server, proxy_url):
    headers = {"Authorization": "Bearer " + server.admin_token}
    connector = aiohttp.TCPConnector(limit=0)
    received = [[] for _watcher in range(WATCHERS)]
    ready = asyncio.Event()
    opened = [0]

    async with aiohttp.ClientSession(connector=connector) as session:
        async def watch(index):
            url = proxy_url + MACHINES + "?watch=1&fieldSelector=metadata.name%3Dm-1"
            async with session.get(url + "&resourceVersion=%s" % start_version, headers=headers,
                                   timeout=aiohttp.ClientTimeout(total=None)) as response:
                opened[0] += 1
                if opened[0] == WATCHERS:
                    ready.set()
                async for line in response.content:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    sent = float(event["object"]["metadata"]["annotations"]["bench/sent"])
                    received[index].append(time.time() - sent)
                    if len(received[index]) >= EVENTS_PER_WATCHER:
                        return

        start_version = server.request("GET", PRIVATE_MACHINES + "/m-1").json()["metadata"]["resourceVersion"]
        tasks = [asyncio.ensure_future(watch(index)) for index in range(WATCHERS)]
        await asyncio.wait_for(ready.wait(), 60)
        await asyncio.sleep(0.5)
        ssl_context = server.ssl_context
        started = time.perf_counter()
        for number in range(EVENTS_PER_WATCHER):
            patch = {"metadata": {"annotations": {"bench/sent": repr(time.time()), "bench/n": str(number)}}}
            async with session.patch(server.url + PRIVATE_MACHINES + "/m-1", json=patch, ssl=ssl_context,
                                     headers=dict(headers, **{"Content-Type": "application/merge-patch+json"})) as response:
                await response.read()
            await asyncio.sleep(0.02)
        await asyncio.wait_for(asyncio.gather(*tasks), 120)
        elapsed = time.perf_counter() - started
    delays = [delay for per_watcher in received for delay in per_watcher]
    lost = WATCHERS * EVENTS_PER_WATCHER - len(delays)
    figures = (WATCHERS, len(delays), elapsed, lost, statistics.median(delays) * 1e3, percentile(delays, 0.99) * 1e3)
    print("%d concurrent watches through the proxy, %d events in total in %.1f s: lost %d, delay p50 %.1f ms, "
          "p99 %.1f ms" % figures)


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def main():
    workdir = tempfile.mkdtemp(prefix="bench-proxy-")
    seed = support.write_seed(os.path.join(workdir, "seed"), support.render_private_crds() + [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])
    server = start_server(workdir, seeds=[seed], extra_args=["--log-level", "WARNING"])
    proxy = None
    try:
        for index in range(500):
            response = server.request("POST", PRIVATE_MACHINES, machine("m-%d" % index))
            if response.status != 201:
                raise RuntimeError("seeding Machine m-%d failed: %r" % (index, response))
        proxy = support.start_proxy(workdir, server.kubeconfig, "--log-level", "warning", name="bench-proxy")
        print("proxy RSS at start: %.1f MB" % rss_mb(proxy.process.pid))
        bench_get(server, proxy.url)
        bench_list(server, proxy.url)
        asyncio.run(bench_watches(server, proxy.url))
        print("proxy RSS after the load: %.1f MB (target < 50 MB; the enhancement estimates 50-100 MB)"
              % rss_mb(proxy.process.pid))
    finally:
        if proxy is not None:
            proxy.stop()
        server.stop()


if __name__ == "__main__":
    main()
