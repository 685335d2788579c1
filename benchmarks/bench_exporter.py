"""The fleet exporter with 1,000 HostedClusters: series per HostedCluster and in total, the exporter's RSS, one scrape.

Against a real control plane (testenv/cluster: etcd and kube-apiserver v1.34, HyperShift's HostedCluster CRD, no
controllers): 1,000 HostedClusters created through the API (as testenv/hcp/fleet.py builds them), in the mix a fleet
has mid-run (legacy, in-progress, migrated, failed, one invalid), their migration annotations written by the state
machine itself (machine.plan_transition). Then `capi-proxy exporter` (the installed package of `make proxy-venv`, else the
checkout's) lists and watches them as a host process on loopback; the figures are read once it is ready:

* series: sample lines of one /metrics scrape, per HostedCluster (those that carry its namespace and name) and in total;
* RSS: the exporter process's VmRSS and VmHWM (peak) from /proc, after the list and after 20 scrapes;
* scrape: wall time of one GET /metrics (median of 20), the body's size.

    python -m benchmarks exporter
    PRIVATE_CAPI_BENCH_EXPORTER=200 python -m benchmarks exporter     # another fleet size (default 1000)
    PRIVATE_CAPI_BENCH_EXPORTER_FED=1 python -m benchmarks exporter   # no server: the exporter's cache fed the objects
                                                                      # in this process (RSS of this process, so
                                                                      # Python and the test bed included)

Measured at the commit that added it (2 cores shared with other work, the real control plane, the installed package):

    1,000 HostedClusters: created in 14.0 s, listed 2.3 s after the exporter started; 7,333 series, 7.30 per
        HostedCluster, 33 fleet-wide; scrape 68 ms, 776 kB; RSS 83.2 MiB after the list, 83.7 MiB (peak 86.0) after
        20 scrapes
    1 HostedCluster (the baseline): 36 series; RSS 70.8 MiB
    10,000 HostedClusters: listed in 14.1 s; 73,033 series; scrape 2.29 s, 7.7 MB; RSS 93.4 MiB after the list,
        103.8 MiB (peak 124.7) after 20 scrapes
"""
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from capi_proxy import exporter
from capi_proxy.metrics import Registry
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine
from testenv import REPO_ROOT, yamlio
from testenv.client import wait_for
from testenv.hcp import fleet

CRD = os.path.join(REPO_ROOT, "testenv", "upstream", "hypershift", "crds", "hostedclusters-Hypershift-Default.crd.yaml")
NAMESPACES = ("clusters", "clusters-eu", "clusters-us")
T0 = datetime.datetime(2026, 11, 1, 12, 0, tzinfo=datetime.timezone.utc)
# of every 20 HostedClusters: 8 legacy, 1 in progress, 9 migrated, 2 failed (one in the whole fleet: invalid)
MIX = ("legacy",) * 8 + ("in-progress",) + ("migrated",) * 9 + ("failed",) * 2


def fleet_size():
    return int(os.environ.get("PRIVATE_CAPI_BENCH_EXPORTER", "1000"))


def _at(seconds):
    return T0 + datetime.timedelta(seconds=seconds)


def annotated(index):
    """The index-th HostedCluster of the fleet, its annotations those the state machine writes for its state."""
    namespace, name = NAMESPACES[index % len(NAMESPACES)], "hc-%04d" % index
    hostedcluster = fleet.hostedcluster_objects("AWS", namespace, name, state="legacy")[0]
    hostedcluster.pop("status", None)
    state = MIX[index % len(MIX)]
    run = "bench-%02d" % (index % 7)
    moves = {"legacy": [], "in-progress": [("in-progress", 60, {})],
             "migrated": [("in-progress", 60, {}), ("migrated", 60 + 120 + index % 900, {})],
             "failed": [("in-progress", 60, {}), ("failed", 300, {"reason": "copy: refused (%d)" % (index % 3)})]}[state]
    for requested, seconds, options in moves:
        hostedcluster = machine.plan_transition(hostedcluster, requested, run, _at(seconds), **options).updated_object()
    if index == 1:
        hostedcluster["metadata"]["annotations"][machine.PRIVATE_TYPES_ANNOTATION] = "true"  # with scope legacy: invalid
    return hostedcluster


def _samples(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def _per_cluster(samples, count):
    mine = [line for line in samples if 'name="hc-' in line]
    return len(mine) / float(count), len(mine)


def _rss(pid):
    fields = {}
    with open("/proc/%d/status" % pid) as handle:
        for line in handle:
            key, _colon, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) / 1024.0
    return fields


def _print(mode, count, text, scrape_seconds, rss_listed, rss_scraped):
    samples = _samples(text)
    per_cluster, cluster_samples = _per_cluster(samples, count)
    print("mode: %s" % mode)
    print("HostedClusters: %d (%s)" % (count, ", ".join("%s %d" % (state, MIX.count(state) * count // len(MIX))
                                                        for state in ("legacy", "in-progress", "migrated", "failed"))))
    print("series total: %d; carrying a HostedCluster's name: %d (%.2f per HostedCluster); fleet-wide: %d"
          % (len(samples), cluster_samples, per_cluster, len(samples) - cluster_samples))
    print("scrape: %.1f ms median of 20, %d bytes" % (scrape_seconds * 1000, len(text.encode())))
    print("RSS after the list: %.1f MiB (peak %.1f MiB); after 20 scrapes: %.1f MiB (peak %.1f MiB)"
          % (rss_listed["VmRSS"], rss_listed["VmHWM"], rss_scraped["VmRSS"], rss_scraped["VmHWM"]))


def fed(count):
    """No server: the objects go straight into the exporter's cache in this process."""
    cache = exporter.FleetCache()
    cache.replace([annotated(index) for index in range(count)])
    registry = Registry()
    registry.collectors.register(exporter.FleetCollector(cache))
    listed = _rss(os.getpid())
    times = []
    for _ in range(20):
        started = time.perf_counter()
        text = registry.render()
        times.append(time.perf_counter() - started)
    _print("fed (no server; RSS of the benchmark process)", count, text, statistics.median(times), listed,
           _rss(os.getpid()))


def _create_all(kubeconfig, objects):
    from kubernetes import client, config  # pylint: disable=import-outside-toplevel
    api = client.CustomObjectsApi(config.new_client_from_config(config_file=kubeconfig))
    core = client.CoreV1Api(api.api_client)
    for namespace in NAMESPACES:
        core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})

    def create(obj):
        api.create_namespaced_custom_object("hypershift.openshift.io", "v1beta1", obj["metadata"]["namespace"],
                                            "hostedclusters", obj)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, objects))


def served(count):
    # pylint: disable=import-outside-toplevel
    from testenv.cluster.testing import start_cluster
    from tests.integration.monitoring.support import start_exporter
    # pylint: enable=import-outside-toplevel
    with open(CRD) as handle:
        crds = yamlio.load_all(handle)
    workdir = tempfile.mkdtemp(prefix="bench-exporter-")
    server = start_cluster(os.path.join(workdir, "cluster"), crds=crds, components=(), pods="kwok-only")
    process = None
    try:
        started = time.perf_counter()
        _create_all(server.kubeconfig, [annotated(index) for index in range(count)])
        print("created %d HostedClusters in %.1f s" % (count, time.perf_counter() - started))
        process, metrics_url = start_exporter(server.kubeconfig, workdir)
        base = metrics_url.rsplit("/", 1)[0]

        def ready():
            try:
                with urllib.request.urlopen(base + "/readyz", timeout=2) as response:
                    return response.status == 200
            except OSError:
                return False
        started = time.perf_counter()
        wait_for(ready, "the exporter to list %d HostedClusters (log: %s)" % (count, process.log_path), timeout=300,
                 interval=0.2)
        print("exporter ready (listed) %.1f s after it started" % (time.perf_counter() - started))
        listed = _rss(process.popen.pid)
        times = []
        for _ in range(20):
            started = time.perf_counter()
            with urllib.request.urlopen(metrics_url, timeout=30) as response:
                text = response.read().decode()
            times.append(time.perf_counter() - started)
        _print("real control plane (kube-apiserver v1.34; the exporter a host process)", count, text,
               statistics.median(times), listed, _rss(process.popen.pid))
    finally:
        if process is not None:
            process.stop()
        server.stop()
        subprocess.run(["rm", "-rf", workdir], check=False)


def main():
    count = fleet_size()
    if os.environ.get("PRIVATE_CAPI_BENCH_EXPORTER_FED"):
        fed(count)
    else:
        served(count)


if __name__ == "__main__":
    sys.path.insert(0, REPO_ROOT)
    main()
