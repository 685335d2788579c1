"""The proxy sidecar's memory in a real container, at the limit and request the api_proxy role ships.

A real node (testenv/cluster/node.py: kubelet v1.34.4, containerd, runc) runs one Pod whose container is the sidecar
exactly as the role renders it (hcp/sidecar.py sidecar_container with the role's defaults: the image built from the
collection tarball, USER 1001, read-only root, no capabilities, `private_capi_proxy_resources`), translating for the
pod's own ServiceAccount. From inside the Pod's network namespace (the proxy listens on its loopback), as CAPI
controllers beside it would: 200 watches of the Machines open from a LIST's resourceVersion, then while they are
open a LIST of all 5,000 Machines at v1beta2 and one at v1beta1 (every item converted by the proxy's version
adaptation), then a change to 200 Machines (an event on every watch). Printed: the proxy process's peak RSS (VmHWM),
the container cgroup's peak (memory.max_usage_in_bytes: RSS and page cache), both against the shipped request and
limit, and whether the kernel OOM-killed it (restartCount, lastState).

    python -m benchmarks sidecar_memory
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _path in (os.path.join(REPO_ROOT, ".collections"), REPO_ROOT):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import sidecar  # noqa: E402  pylint: disable=wrong-import-position
from testenv.client import wait_for  # noqa: E402  pylint: disable=wrong-import-position
from testenv.cluster.convert import WEBHOOK_PLACEHOLDER  # noqa: E402  pylint: disable=wrong-import-position
from testenv.cluster.testing import container_processes, start_cluster  # noqa: E402  pylint: disable=wrong-import-position
from testenv import proxy_stack as support  # noqa: E402  pylint: disable=wrong-import-position

NAMESPACE = "bench"
POD = "capi-sidecar"
MACHINES = 5000
WATCHERS = 200
PRIVATE_MACHINES = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/%s/machines" % NAMESPACE
UNITS = {"Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3}
# run inside the Pod's network namespace by the venv's Python (aiohttp): the load, as controllers beside the sidecar
LOAD = r"""
import asyncio, json, sys
import aiohttp
base, watchers, changes_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
path = "/apis/cluster.x-k8s.io/%s/namespaces/bench/machines"
async def main():
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as session:
        async with session.get(base + path % "v1beta2", params={"limit": "1"}) as answer:
            version = (await answer.json())["metadata"]["resourceVersion"]
        opened, received = asyncio.Event(), [0] * watchers
        started = [0]
        async def watch(index):
            params = {"watch": "1", "resourceVersion": version, "timeoutSeconds": "600"}
            async with session.get(base + path % "v1beta2", params=params) as answer:
                started[0] += 1
                if started[0] == watchers:
                    opened.set()
                async for _line in answer.content:
                    received[index] += 1
                    if received[index] >= 1 and all(received):
                        return
        tasks = [asyncio.ensure_future(watch(index)) for index in range(watchers)]
        await asyncio.wait_for(opened.wait(), 120)
        items = {}
        for version_name in ("v1beta2", "v1beta1"):
            async with session.get(base + path % version_name) as answer:
                items[version_name] = len((await answer.json())["items"])
        with open(changes_file, "w") as handle:  # the host writes the changes now, and waits for the watches
            handle.write("go")
        await asyncio.wait_for(asyncio.gather(*tasks), 300)
        print(json.dumps({"listed": items, "events": sum(received)}))
asyncio.run(main())
"""


def quantity_bytes(text):
    text = str(text)
    for suffix, factor in UNITS.items():
        if text.endswith(suffix):
            return int(float(text[:-len(suffix)]) * factor)
    return int(text)


def role_settings(image):
    """hcp/sidecar.py's settings from roles/api_proxy/defaults/main.yml, as the role passes them (its probes' port
    template filled in), following no mode (the sidecar translates from its start)."""
    with open(os.path.join(REPO_ROOT, "roles", "api_proxy", "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    settings = {name: defaults["private_capi_proxy_" + name] for name in sidecar.SETTINGS}
    for probe in ("liveness_probe", "readiness_probe"):
        settings[probe]["httpGet"]["port"] = int(settings["metrics_port"])
    settings.update(image=image, follow_mode=False)
    return settings


def machine(index):
    name = "m-%d" % index
    return {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Machine",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"cluster.x-k8s.io/cluster-name": "bench"}},
            "spec": {"clusterName": "bench", "bootstrap": {"dataSecretName": "user-data"},
                     "infrastructureRef": {"apiGroup": "infrastructure.cluster.hypershift.openshift.io",
                                           "kind": "AWSMachine", "name": name}}}


def create(server, path, body):
    answer = server.request("POST", path, body)
    if answer.status != 201:
        raise RuntimeError("creating %s %s: %r" % (body["kind"], body["metadata"]["name"], answer))


def objects(settings):
    """The Pod with the sidecar, its ServiceAccount (allowed everything in the namespace and reading CRDs: the role's
    rules are narrower, memory does not depend on them) and the kubeconfig ConfigMap the role creates."""
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": POD, "namespace": NAMESPACE}}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "bench-sidecar"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
               "subjects": [{"kind": "ServiceAccount", "name": POD, "namespace": NAMESPACE}]}
    config = sidecar.kubeconfig_config_map(NAMESPACE, settings["config_map_name"], settings["port"],
                                           "https://kubernetes.default.svc")
    container = sidecar.sidecar_container(settings, NAMESPACE)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD, "namespace": NAMESPACE},
           "spec": {"serviceAccountName": POD, "containers": [container],
                    "volumes": [{"name": container["volumeMounts"][0]["name"],
                                 "configMap": {"name": settings["config_map_name"]}}]}}
    return account, binding, config, pod


def proxy_pid(pod):
    pids = container_processes(pod, sidecar.CONTAINER_NAME)
    if not pids:
        raise RuntimeError("no process of the sidecar container in Pod %s" % POD)
    return pids[0]


def peak_rss_mb(pid):
    for line in Path("/proc/%d/status" % pid).read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def cgroup_peak_mb(pod, container_id):
    found = list(Path("/sys/fs/cgroup/memory").glob("*/kubepods/**/pod%s/%s/memory.max_usage_in_bytes"
                                                    % (pod["metadata"]["uid"], container_id)))
    return int(found[0].read_text()) / 1024.0 ** 2 if found else float("nan")


def main():
    workdir = tempfile.mkdtemp(prefix="bench-sidecar-")
    crds = support.render_private_crds(WEBHOOK_PLACEHOLDER)
    server = start_cluster(os.path.join(workdir, "cluster"), crds=crds)
    try:
        from testenv.cluster.images import proxy_image  # pylint: disable=import-outside-toplevel
        settings = role_settings(proxy_image())
        create(server, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        support.wait_served(server, crds, timeout=60)
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda index: create(server, PRIVATE_MACHINES, machine(index)), range(MACHINES)))
        print("%d private Machines created in %.1f s" % (MACHINES, time.monotonic() - started))
        account, binding, config, pod = objects(settings)
        for path, body in (("/api/v1/namespaces/%s/serviceaccounts" % NAMESPACE, account),
                           ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding),
                           ("/api/v1/namespaces/%s/configmaps" % NAMESPACE, config),
                           ("/api/v1/namespaces/%s/pods" % NAMESPACE, pod)):
            create(server, path, body)
        pod_path = "/api/v1/namespaces/%s/pods/%s" % (NAMESPACE, POD)

        def ready():
            live = server.request("GET", pod_path).json()
            return live if any(c["type"] == "Ready" and c["status"] == "True"
                               for c in live.get("status", {}).get("conditions") or ()) else None
        live = wait_for(ready, "the sidecar's Pod to be Ready", timeout=120, interval=0.5)
        pid = proxy_pid(live)
        status = live["status"]["containerStatuses"][0]
        container_id = status["containerID"].split("://", 1)[1]
        at_start = peak_rss_mb(pid)
        changes = os.path.join(workdir, "changes")
        load = subprocess.Popen(["nsenter", "-t", str(pid), "-n", "--", sys.executable, "-c", LOAD,
                                 "http://127.0.0.1:%s" % settings["port"], str(WATCHERS), changes],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: os.path.exists(changes) or load.poll() is not None, "the LISTs through the sidecar",
                 timeout=600, interval=0.5)
        patch = {"metadata": {"labels": {"bench": "changed"}}}
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda index: server.request("PATCH", PRIVATE_MACHINES + "/m-%d" % index, patch,
                                                       content_type="application/merge-patch+json"),
                          range(WATCHERS)))
        out, err = load.communicate(timeout=600)
        if load.returncode != 0:
            raise RuntimeError("the load failed: %s" % err[-2000:])
        result = json.loads(out.strip().splitlines()[-1])
        live = server.request("GET", pod_path).json()
        status = live["status"]["containerStatuses"][0]
        peak = peak_rss_mb(pid) if os.path.exists("/proc/%d" % pid) else float("nan")
        cgroup = cgroup_peak_mb(live, container_id)
        request = quantity_bytes(settings["resources"]["requests"]["memory"]) / 1024.0 ** 2
        limit = quantity_bytes(settings["resources"]["limits"]["memory"]) / 1024.0 ** 2
        killed = status["restartCount"] or (status.get("lastState") or {}).get("terminated", {}).get("reason")
        print("load: %d watches, LIST of %s Machines (v1beta2, v1beta1), %d watch events received"
              % (WATCHERS, result["listed"], result["events"]))
        print("summary: figure, measured, against the role's request %.0f MiB and limit %.0f MiB" % (request, limit))
        print("  %-40s %7.1f MiB" % ("proxy RSS at Ready (VmHWM)", at_start))
        print("  %-40s %7.1f MiB  %.2fx request, %.2fx limit" % ("proxy peak RSS under the load (VmHWM)", peak,
                                                                   peak / request, peak / limit))
        print("  %-40s %7.1f MiB  %.2fx limit" % ("container cgroup peak (RSS + cache)", cgroup, cgroup / limit))
        print("  %-40s %s" % ("OOM-killed or restarted", killed or "no"))
        print("  target: not OOM-killed at the shipped limit | measured: %s | %s"
              % ("restarted: %s" % killed if killed else "never", "FAIL" if killed else "PASS"))
        return 1 if killed else 0
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
