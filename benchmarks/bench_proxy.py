"""The translating API proxy in front of a real kube-apiserver (testenv/cluster), side by side with direct requests.

Figures, each printed with its target and ratio: added latency per GET (p50/p99, proxy vs direct, plus
the proxy's own time from its Server-Timing header and its CPU per request, and beside it the floor: what the
thinnest aiohttp relay of the API server's answer, benchmarks/thin_relay.py, adds in the same batches; issue 48's
target is the proxy's added p50 at most GET_FLOOR_FACTOR times the relay's; the body-only relay, which hands back
none of the answer's headers, is reported beside it), LIST of 500 Machines
(ratio, with the untranslated relay and where the translation time goes), 200 concurrent watches
receiving 10,000 events (none lost, delay p50/p99, also direct), the proxy's RSS at start, with the
200 watches open and after the load (the issue's target: under 50 MB once the load is over; the proxy gives
freed memory back to the system three seconds after a burst), and the memory of one upstream TLS connection.
The proxy runs as the sidecar does (--log-level info: a JSON log line per write, watch or failed request;
the reads that succeed are debug lines). "direct" is kube-apiserver
v1.34 built from upstream (etcd, the audit log on, no controllers: nothing else asks it anything during the
run), with the private CAPI CRDs as crd_render renders them; their conversion webhook is the collection's shim
(testenv/cluster/convert.py), Machines are served in v1beta2 only, so no request of the run converts, except the
last: the same 200 watches as a v1beta1 client makes them, every event converted by the proxy's version adaptation
(events lost, delay p50/p99; measured after the RSS figures). The run ends with issue 48's four targets, one
"target: ... | measured: ... | PASS|FAIL" line each.

Beside each summary figure, "was on tests/kubeapi" is the same figure measured at 8afd1a1, when "direct" was the
collection's imitation of kube-apiserver (it answered GETs and LISTs from cached bytes, so its direct LIST was far
faster than a real server's and the LIST ratio could not be judged against it), on the same 2-core machine when it
was quiet (load 1.0): was on tests/kubeapi: GET added p50 0.531 ms (direct p50 0.288 ms), LIST ratio 3.90 (direct
1.5 ms, proxy 5.9 ms), watch events lost 0 (delay p99 48 ms), RSS after the load 46.9 MB, with 200 watches open
57.9 MB.
"""
import asyncio
import gc
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import aiohttp

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _path in (os.path.join(REPO_ROOT, ".collections"), REPO_ROOT):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from capi_proxy import bodies  # noqa: E402  pylint: disable=wrong-import-position
from capi_proxy.core import TO_STANDARD  # noqa: E402  pylint: disable=wrong-import-position
from capi_proxy.proxy.memory import DEFAULT_DELAY_SECONDS  # noqa: E402  pylint: disable=wrong-import-position
from capi_proxy.proxy.translation import gc_paused  # noqa: E402  pylint: disable=wrong-import-position
from capi_proxy.upstream import TLS_READ_BUFFER_BYTES  # noqa: E402  pylint: disable=wrong-import-position
from testenv.cluster.cluster import free_port, terminate  # noqa: E402  pylint: disable=wrong-import-position
from testenv.cluster.convert import WEBHOOK_PLACEHOLDER  # noqa: E402  pylint: disable=wrong-import-position
from testenv.cluster.testing import start_cluster  # noqa: E402  pylint: disable=wrong-import-position
from testenv import proxy_stack as support  # noqa: E402  pylint: disable=wrong-import-position

NAMESPACE = "bench"
PRIVATE_MACHINES = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/%s/machines" % NAMESPACE
MACHINES = "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/machines" % NAMESPACE
# served v1beta2 only: a v1beta1 client's watch is converted event by event by the proxy's version adaptation
MACHINES_V1BETA1 = "/apis/cluster.x-k8s.io/v1beta1/namespaces/%s/machines" % NAMESPACE
GET_ROUNDS = 1500
LIST_ROUNDS = 30
WATCHERS = 200
EVENTS_PER_WATCHER = 50
TLS_PROBE_CONNECTIONS = 200
SERVED_TIMEOUT = 60.0
# Issue 48: what the proxy adds to a GET may be at most this multiple of what the thinnest aiohttp relay of the API
# server's answer adds (the floor, benchmarks/thin_relay.py), both measured in the same interleaved batches of the run
GET_FLOOR_FACTOR = 1.25
# The summary's figures as this benchmark measured them at 8afd1a1 against tests/kubeapi (python -m benchmarks proxy)
KUBEAPI_8AFD1A1 = {"GET added latency p50": 0.531, "LIST 500 Machines proxy/direct": 3.899, "watch events lost": 0,
                   "RSS after the load": 46.879, "RSS with %d watches open" % WATCHERS: 57.871}


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def machine(name):
    return {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Machine",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"cluster.x-k8s.io/cluster-name": "bench"}},
            "spec": {"clusterName": "bench", "bootstrap": {"dataSecretName": "user-data"},
                     "infrastructureRef": {"apiGroup": "infrastructure.cluster.hypershift.openshift.io",
                                           "kind": "AWSMachine", "name": name}}}


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def cpu_seconds(pid):
    """User plus system CPU time the process has used (from /proc, independent of how busy the machine is)."""
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))


def server_timing(value, name):
    for part in (value or "").split(","):
        metric, _semicolon, duration = part.strip().partition(";dur=")
        if metric == name and duration:
            return float(duration) / 1e3
    return None


class Timer(object):
    """Sequential GETs on one keep-alive connection: per-request seconds and the proxy's own seconds."""

    def __init__(self, connection, token):
        self.connection = connection
        self.headers = {"Authorization": "Bearer " + token, "Accept": "application/json"}
        self.own = []

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
            own = server_timing(response.getheader("Server-Timing"), "proxy")
            if own is not None:
                self.own.append(own)
        return samples


def timers(server, proxy_url):
    direct = Timer(http.client.HTTPSConnection(server.host, server.port, context=server.ssl_context), server.admin_token)
    host, port = proxy_url[len("http://"):].split(":")
    return direct, Timer(http.client.HTTPConnection(host, int(port)), server.admin_token)


def interleaved(direct, proxied, pid, direct_path, proxy_path, batches, batch, floors=()):
    """Alternating batches (all see the same machine load); (direct, proxy samples, proxy CPU per request, [each
    floor's samples], [each floor's CPU per request]): floors are (Timer, path, pid) of thin relays. Each batch
    starts with direct; the proxy and the floors then take turns at going first (none always follows another)."""
    runners = [(proxied, proxy_path, pid)] + list(floors)
    samples = [[] for _runner in runners]
    cpu = [0.0 for _runner in runners]
    direct_samples = []
    for batch_index in range(batches):
        direct_samples += direct.run(direct_path, batch)
        for turn in range(len(runners)):
            index = (batch_index + turn) % len(runners)
            timer, path, runner_pid = runners[index]
            before = cpu_seconds(runner_pid)
            samples[index] += timer.run(path, batch)
            cpu[index] += cpu_seconds(runner_pid) - before
    per_request = [total / len(taken) for total, taken in zip(cpu, samples)]
    return direct_samples, samples[0], per_request[0], samples[1:], per_request[1:]


class ThinRelay(object):
    """benchmarks/thin_relay.py in a process of its own: the floor of the GET figure (body_only: the thinner one that
    hands back no header of the API server's answer, reported beside it)."""

    def __init__(self, server, body_only=False):
        self.port = free_port()
        self.process = subprocess.Popen([sys.executable, "-m", "benchmarks.thin_relay", "--kubeconfig",
                                         str(server.kubeconfig), "--port", str(self.port)]
                                        + (["--body-only"] if body_only else []),
                                        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = self.process.stdout.readline()
        if line.strip() != "ready":
            self.stop()
            raise RuntimeError("benchmarks.thin_relay did not start: %s%s" % (line, self.process.stdout.read()[-2000:]))

    def timer(self, token):
        return Timer(http.client.HTTPConnection("127.0.0.1", self.port), token)

    def stop(self):
        terminate(self.process, timeout=10)
        self.process.stdout.close()


def bench_get(server, proxy):
    direct, proxied = timers(server, proxy.url)
    relays = []
    try:
        relays.append(ThinRelay(server))
        relays.append(ThinRelay(server, body_only=True))
        floors = [(relay.timer(server.admin_token), PRIVATE_MACHINES + "/m-0", relay.process.pid) for relay in relays]
        direct.run(PRIVATE_MACHINES + "/m-0", 100)
        proxied.run(MACHINES + "/m-0", 100)  # warm them all
        for floor in floors:
            floor[0].run(floor[1], 100)
        proxied.own = []
        direct_samples, proxy_samples, cpu, floor_samples, floor_cpus = interleaved(
            direct, proxied, proxy.process.pid, PRIVATE_MACHINES + "/m-0", MACHINES + "/m-0", 10, GET_ROUNDS // 10,
            floors=floors)
    finally:
        for relay in relays:
            relay.stop()
    (floor_samples, body_only_samples), (floor_cpu, body_only_cpu) = floor_samples, floor_cpus
    d50, p50, f50, b50 = (statistics.median(samples)
                          for samples in (direct_samples, proxy_samples, floor_samples, body_only_samples))
    d99, p99 = percentile(direct_samples, 0.99), percentile(proxy_samples, 0.99)
    own50 = statistics.median(proxied.own)
    print("GET one Machine, %d sequential keep-alive requests each (interleaved batches):" % GET_ROUNDS)
    print("  direct  p50 %.3f ms  p99 %.3f ms" % (d50 * 1e3, d99 * 1e3))
    print("  proxy   p50 %.3f ms  p99 %.3f ms" % (p50 * 1e3, p99 * 1e3))
    print("  added   p50 %.3f ms  p99 %.3f ms  ratio p50 %.2f" % ((p50 - d50) * 1e3, (p99 - d99) * 1e3, p50 / d50))
    print("  inside the proxy: own time p50 %.3f ms (Server-Timing: handler without the upstream round trip), "
          "CPU %.3f ms per request (aiohttp server + client + handler); the rest of the added time is the "
          "second loopback hop" % (own50 * 1e3, cpu * 1e3))
    print("  the floor, same batches: the thinnest aiohttp relay of the API server's answer (benchmarks/thin_relay.py: "
          "status, headers and body; no routing, translation, log or metrics) adds p50 %.3f ms (CPU %.3f ms per "
          "request); the proxy's own work adds %.3f ms on top (CPU %.3f ms per request)"
          % ((f50 - d50) * 1e3, floor_cpu * 1e3, (p50 - f50) * 1e3, (cpu - floor_cpu) * 1e3))
    print("  reported beside it, same batches: the body-only relay (--body-only: none of the answer's headers, so "
          "also less for the client to parse) adds p50 %.3f ms (CPU %.3f ms per request): the proxy's added p50 "
          "is %.2fx that" % ((b50 - d50) * 1e3, body_only_cpu * 1e3, (p50 - d50) / (b50 - d50) if b50 > d50 else
                             float("inf")))
    return {"added_p50_ms": (p50 - d50) * 1e3, "ratio": p50 / d50, "own_p50_ms": own50 * 1e3, "cpu_ms": cpu * 1e3,
            "floor_p50_ms": (f50 - d50) * 1e3, "floor_cpu_ms": floor_cpu * 1e3,
            "body_only_p50_ms": (b50 - d50) * 1e3}


def translation_breakdown(raw, rounds=20):
    """Milliseconds of CPU per step of the proxy's LIST translation, run here on the same bytes."""
    steps = {"parse (orjson + exactness check)": [], "translate in place": [], "encode": [], "free the tree": []}
    for _round in range(rounds):
        with gc_paused():
            started = time.process_time()
            document = bodies.loads(raw)
            parsed = time.process_time()
            bodies.translate_response(document, TO_STANDARD, in_place=True)
            translated = time.process_time()
            bodies.dumps(document)
            encoded = time.process_time()
            del document
            freed = time.process_time()
        for name, seconds in zip(steps, (parsed - started, translated - parsed, encoded - translated, freed - encoded)):
            steps[name].append(seconds)
    return {name: statistics.median(samples) * 1e3 for name, samples in steps.items()}


def client_list_ratio(server, proxy, rounds=LIST_ROUNDS):
    """The same LIST as the official kubernetes client returns it to a Python controller (CustomObjectsApi: the
    request, the transfer and json decoding), direct and through the proxy, interleaved: (direct s, proxy s)."""
    import kubernetes  # pylint: disable=import-outside-toplevel  # only this figure needs the client
    from kubernetes.config.kube_config import load_kube_config  # pylint: disable=import-outside-toplevel

    def api(kubeconfig):
        configuration = kubernetes.client.Configuration()
        load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        return kubernetes.client.CustomObjectsApi(kubernetes.client.ApiClient(configuration))

    workdir = os.path.dirname(server.kubeconfig)
    direct = api(server.kubeconfig)
    proxied = api(support.proxy_kubeconfig(workdir, proxy.url, server.admin_token, name="bench-client"))
    calls = ((direct, "cluster.hypershift.openshift.io"), (proxied, "cluster.x-k8s.io"))
    samples = ([], [])
    for round_index in range(rounds + 2):
        for index, (client, group) in enumerate(calls):
            started = time.perf_counter()
            listed = client.list_namespaced_custom_object(group, "v1beta2", NAMESPACE, "machines")
            if round_index >= 2:  # the first two warm connections and caches
                samples[index].append(time.perf_counter() - started)
            if len(listed["items"]) != 500 or listed["apiVersion"] != group + "/v1beta2":
                raise RuntimeError("the client's LIST of %s answered %d items, %s"
                                   % (group, len(listed["items"]), listed["apiVersion"]))
    return statistics.median(samples[0]), statistics.median(samples[1])


def bench_list(server, proxy):
    direct, proxied = timers(server, proxy.url)
    for timer, path in ((direct, PRIVATE_MACHINES), (proxied, MACHINES), (proxied, PRIVATE_MACHINES)):
        timer.run(path, 2)
    proxied.own = []
    direct_samples, proxy_samples, cpu, _none, _none = interleaved(direct, proxied, proxy.process.pid, PRIVATE_MACHINES,
                                                                   MACHINES, LIST_ROUNDS, 1)
    own50 = statistics.median(proxied.own)
    relay_direct, relay_samples, relay_cpu, _none, _none = interleaved(direct, proxied, proxy.process.pid,
                                                                       PRIVATE_MACHINES, PRIVATE_MACHINES,
                                                                       LIST_ROUNDS // 2, 1)
    d50, p50 = statistics.median(direct_samples), statistics.median(proxy_samples)
    r50 = statistics.median(relay_samples) / statistics.median(relay_direct)
    raw = server.request("GET", PRIVATE_MACHINES).body
    steps = translation_breakdown(raw)
    print("LIST 500 Machines (%d KB), %d interleaved rounds: direct %.1f ms, proxy %.1f ms, ratio %.2f"
          % (len(raw) // 1024, LIST_ROUNDS, d50 * 1e3, p50 * 1e3, p50 / d50))
    print("  untranslated relay through the proxy (private path, --show-private): ratio %.2f, proxy CPU %.2f ms"
          % (r50, relay_cpu * 1e3))
    print("  translated: proxy own time p50 %.2f ms, CPU %.2f ms per LIST; the translation, step by step "
          "(CPU ms, this process, same bytes): %s" % (own50 * 1e3, cpu * 1e3,
                                                      ", ".join("%s %.2f" % pair for pair in steps.items())))
    client_direct, client_proxy = client_list_ratio(server, proxy)
    print("  as a Python controller sees it (kubernetes client CustomObjectsApi, request + transfer + decoding): "
          "direct %.1f ms, proxy %.1f ms, ratio %.2f (reported: the target above is the raw-bytes ratio)"
          % (client_direct * 1e3, client_proxy * 1e3, client_proxy / client_direct))
    return {"ratio": p50 / d50, "direct_ms": d50 * 1e3, "proxy_ms": p50 * 1e3, "relay_ratio": r50, "cpu_ms": cpu * 1e3, "steps": steps,
            "client_ratio": client_proxy / client_direct}


async def watch_load(base_url, server, ssl_context, sample_rss=None, path=None):
    """WATCHERS watches of one Machine, EVENTS_PER_WATCHER patches: (lost, delays, RSS with all watches open).

    path: the Machines' collection to watch (default: the standard v1beta2 one through the proxy, the private one
    direct)."""
    headers = {"Authorization": "Bearer " + server.admin_token}
    received = [[] for _watcher in range(WATCHERS)]
    ready = asyncio.Event()
    opened = [0]
    rss_open = []
    # From the collection's current version: starting at m-1's creation would make the server replay (and filter)
    # the 498 later creations for each of the 200 watchers first, seconds of server time that is not the proxy's.
    start_version = server.request("GET", PRIVATE_MACHINES + "?limit=1").json()["metadata"]["resourceVersion"]
    path = path or (MACHINES if base_url != server.url else PRIVATE_MACHINES)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async def watch(index):
            url = base_url + path + "?watch=1&fieldSelector=metadata.name%3Dm-1&resourceVersion=" + start_version
            async with session.get(url, headers=headers, ssl=ssl_context if base_url.startswith("https") else None,
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

        tasks = [asyncio.ensure_future(watch(index)) for index in range(WATCHERS)]
        await asyncio.wait_for(ready.wait(), 60)
        await asyncio.sleep(0.5)
        for number in range(EVENTS_PER_WATCHER):
            patch = {"metadata": {"annotations": {"bench/sent": repr(time.time()), "bench/n": str(number)}}}
            async with session.patch(server.url + PRIVATE_MACHINES + "/m-1", json=patch, ssl=ssl_context,
                                     headers=dict(headers, **{"Content-Type": "application/merge-patch+json"})) as response:
                await response.read()
            if sample_rss and number == EVENTS_PER_WATCHER // 2:
                rss_open.append(sample_rss())
            await asyncio.sleep(0.02)
        await asyncio.wait_for(asyncio.gather(*tasks), 120)
        if sample_rss:
            rss_open.append(sample_rss())  # every watch still open: the streams end when this block closes
    delays = [delay for per_watcher in received for delay in per_watcher]
    return WATCHERS * EVENTS_PER_WATCHER - len(delays), delays, max(rss_open) if rss_open else None


def tls_connection_kb(server):
    """KB of RSS per idle TLS connection to the server, opened by bare asyncio with the proxy's buffer setting."""
    code = """if True:
        import asyncio, ssl, sys
        sys.path[:0] = %r
        from capi_proxy.upstream import limit_tls_read_buffer
        limit_tls_read_buffer()
        def rss():
            return int([l for l in open("/proc/self/status") if l.startswith("VmRSS")][0].split()[1])
        async def main():
            context = ssl.create_default_context(cafile=%r)
            await asyncio.open_connection(%r, %d, ssl=context)
            before = rss()
            streams = [await asyncio.open_connection(%r, %d, ssl=context) for _i in range(%d)]
            print((rss() - before) / float(len(streams)))
        asyncio.run(main())
    """ % ([os.path.join(REPO_ROOT, ".collections"), REPO_ROOT], server.ca_file, server.host, server.port,
           server.host, server.port, TLS_PROBE_CONNECTIONS)
    return float(subprocess.check_output([sys.executable, "-c", code], cwd=REPO_ROOT).decode().strip())


def bench_watches(server, proxy):
    pid = proxy.process.pid
    before = rss_mb(pid)
    lost, delays, rss_open = asyncio.run(watch_load(proxy.url, server, server.ssl_context, lambda: rss_mb(pid)))
    direct_lost, direct_delays, _none = asyncio.run(watch_load(server.url, server, server.ssl_context))
    print("%d concurrent watches, %d events each: proxy lost %d, delay p50 %.1f ms, p99 %.1f ms; "
          "direct lost %d, delay p50 %.1f ms, p99 %.1f ms"
          % (WATCHERS, EVENTS_PER_WATCHER, lost, statistics.median(delays) * 1e3, percentile(delays, 0.99) * 1e3,
             direct_lost, statistics.median(direct_delays) * 1e3, percentile(direct_delays, 0.99) * 1e3))
    per_watch = (rss_open - before) * 1024 / WATCHERS
    return {"lost": lost, "p99_ms": percentile(delays, 0.99) * 1e3, "rss_open": rss_open, "per_watch_kb": per_watch}


def bench_adapted_watches(server, proxy):
    """The same watches as a v1beta1 client of a v1beta2-only Machine sees them through the proxy (every event
    converted): lost events and delay, reported (the e2e run through the adaptation relies on it keeping up)."""
    lost, delays, _none = asyncio.run(watch_load(proxy.url, server, server.ssl_context, path=MACHINES_V1BETA1))
    print("%d concurrent v1beta1 watches through the version adaptation, %d events each: lost %d, delay p50 %.1f ms, "
          "p99 %.1f ms" % (WATCHERS, EVENTS_PER_WATCHER, lost, statistics.median(delays) * 1e3,
                           percentile(delays, 0.99) * 1e3))
    return {"lost": lost, "p99_ms": percentile(delays, 0.99) * 1e3}


def private_crds():
    """The private CAPI CRDs as crd_render renders them, the multi-version ones converting through the placeholder
    that start_cluster wires to the collection's shim (kube-apiserver refuses a Webhook strategy without a URL)."""
    return support.render_private_crds(WEBHOOK_PLACEHOLDER)


def was(name, unit):
    value = KUBEAPI_8AFD1A1.get(name)
    return "was on tests/kubeapi: %s" % ("-" if value is None else ("%g %s" % (value, unit)).strip())


def main():
    workdir = tempfile.mkdtemp(prefix="bench-proxy-")
    # kube-apiserver and etcd only: no controller asks the server anything while the figures are taken
    crds = private_crds()
    server = start_cluster(os.path.join(workdir, "cluster"), crds=crds, components=(), pods="kwok-only")
    proxy = None
    try:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        response = server.request("POST", "/api/v1/namespaces", namespace)
        if response.status != 201:
            raise RuntimeError("creating namespace %s failed: %r" % (NAMESPACE, response))
        support.wait_served(server, crds, timeout=SERVED_TIMEOUT)
        for index in range(500):
            response = server.request("POST", PRIVATE_MACHINES, machine("m-%d" % index))
            if response.status != 201:
                raise RuntimeError("seeding Machine m-%d failed: %r" % (index, response))
        print("direct: kube-apiserver %s (testenv/cluster: etcd, audit log, no controllers), %d private CRDs, "
              "500 Machines; %d CPU cores" % (server.request("GET", "/version").json().get("gitVersion"), len(crds),
                                              os.cpu_count() or 0))
        proxy = support.start_proxy(workdir, server.kubeconfig, "--log-level", "info", "--show-private",
                                    name="bench-proxy")
        pid = proxy.process.pid
        rss_start = rss_mb(pid)
        print("proxy RSS at start: %.1f MB" % rss_start)
        get = bench_get(server, proxy)
        listing = bench_list(server, proxy)
        rss_requests = rss_mb(pid)
        print("proxy RSS after the GETs and LISTs: %.1f MB" % rss_requests)
        watches = bench_watches(server, proxy)
        time.sleep(DEFAULT_DELAY_SECONDS + 1.5)  # the proxy's trim runs --memory-trim-delay after the last watch closed
        rss_after = rss_mb(pid)
        tls_kb = tls_connection_kb(server)
        print("proxy RSS with %d watches open: %.1f MB (%.0f KB per watch: a client socket, an upstream TLS "
              "connection, their aiohttp objects); after the load: %.1f MB; one idle TLS connection alone "
              "(asyncio, %d KiB read buffer): %.0f KB"
              % (WATCHERS, watches["rss_open"], watches["per_watch_kb"], rss_after, TLS_READ_BUFFER_BYTES // 1024,
                 tls_kb))
        adapted = bench_adapted_watches(server, proxy)
        relative = get["added_p50_ms"] / get["floor_p50_ms"] if get["floor_p50_ms"] > 0 else float("inf")
        rows = [  # (figure, measured, unit, target or None (reported), strictly below)
            ("GET added p50 / thin relay's", relative, "x", GET_FLOOR_FACTOR, False),
            ("GET added latency p50", get["added_p50_ms"], "ms", None, True),
            ("GET added p50, thin relay", get["floor_p50_ms"], "ms", None, True),
            ("GET added p50 / body-only relay's", get["added_p50_ms"] / get["body_only_p50_ms"]
             if get["body_only_p50_ms"] > 0 else float("inf"), "x", None, True),
            ("GET CPU per request / relay's", get["cpu_ms"] / get["floor_cpu_ms"] if get["floor_cpu_ms"] else float("nan"),
             "x", None, True),
            ("LIST 500 Machines proxy/direct", listing["ratio"], "", 1.3, False),
            ("watch events lost", watches["lost"], "", 0, False),
            ("adapted v1beta1 watch events lost", adapted["lost"], "", 0, False),
            ("RSS after the load", rss_after, "MB", 50.0, True),
            ("RSS with %d watches open" % WATCHERS, watches["rss_open"], "MB", None, True),
        ]
        print("summary: figure, measured, target, measured/target, verdict (watch delay p99 %.0f ms and the RSS "
              "while all %d watches are open: reported against the design's 50-100 MB estimate, no target)"
              % (watches["p99_ms"], WATCHERS))
        for name, measured, unit, target, strict in rows:
            if target is None:
                print("  %-34s %9.3f %-2s  reported                     %s" % (name, measured, unit, was(name, unit)))
                continue
            met = measured < target if strict else measured <= target
            print("  %-34s %9.3f %-2s  target %s %-6s  %s  %-6s  %s" % (
                name, measured, unit, "<" if strict else "<=", "%g %s" % (target, unit),
                "%5.2f" % (measured / target) if target else "  -  ", "met" if met else "MISSED", was(name, unit)))
        targets = [  # issue 48: (target, measured, met)
            ("GET added p50 <= %.2fx the thin relay's added p50 (%.3f ms, same batches)"
             % (GET_FLOOR_FACTOR, get["floor_p50_ms"]),
             "%.3f ms = %.2fx" % (get["added_p50_ms"], relative), relative <= GET_FLOOR_FACTOR),
            ("LIST 500 Machines <= 1.30x direct (%.1f ms)" % listing["direct_ms"],
             "%.1f ms = %.2fx" % (listing["proxy_ms"], listing["ratio"]), listing["ratio"] <= 1.3),
            ("RSS after the load < 50 MB", "%.1f MB" % rss_after, rss_after < 50.0),
            ("watch events lost = 0 (%d watches x %d events)" % (WATCHERS, EVENTS_PER_WATCHER),
             "%d" % watches["lost"], watches["lost"] == 0),
        ]
        print("targets (issue 48):")
        for target, measured, met in targets:
            print("  target: %-70s | measured: %-18s | %s" % (target, measured, "PASS" if met else "FAIL"))
        print("targets: %d of %d PASS" % (sum(1 for _t, _m, met in targets if met), len(targets)))
    finally:
        if proxy is not None:
            proxy.stop()
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        gc.collect()


if __name__ == "__main__":
    main()
