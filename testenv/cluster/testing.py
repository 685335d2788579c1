"""A real control plane for tests, the demo and the benchmarks, with the surface the tests use.

    server = start_cluster(workdir, crds=[...])   # etcd, kube-apiserver, controllers, a real node
    server.kubeconfig, server.url, server.ca_file, server.admin_token, server.token_for("alice")
    server.request(...), server.kubectl(...), server.api_client()   (testenv.client.ServerClient)
    server.request_counts(since=0), server.reset_requests()       (from kube-apiserver's own audit log)
    server.stop_apiserver(), server.start_apiserver()              kube-apiserver alone away and back (same port, etcd)
    server.stop()                                                  -> 0 once every process is gone

CRDs passed to start_cluster are installed (and Established) before kube-controller-manager starts, so the
garbage collector watches them from its first discovery instead of after its 30-second resync. They are installed
once per machine and CRD set (etcd_seed): the control plane's etcd starts from a copy of a data directory in which
kube-apiserver stored them, and only the CRDs that convert through the cluster's own /convert are written again.
"""
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import ssl
import time
import urllib.parse
import uuid
from pathlib import Path

import yaml

from testenv.client import ServerClient
from testenv.faults import RequestLog

from .build import cache_root, ensure_binaries
from .cluster import KWOK_TAINT, Cluster, fake_node_name
from .convert import ConvertWebhook, needs_webhook, wire

ESTABLISH_TIMEOUT = 60.0
# what etcd_seed's key covers besides the CRDs and the binaries: bump it when the seed is made another way
SEED_FORMAT = 1


def _kube_api(kubeconfig):
    from kubernetes import client, config
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    return client.ApiClient(configuration)


def install_crds(api, crds, timeout=ESTABLISH_TIMEOUT, stored=False):
    """Create (or replace) the CRDs through a kubernetes ApiClient and wait until every one is Established, as
    `kubectl apply` followed by `kubectl wait --for=condition=Established` would; returns their names. stored: they
    exist already (a seeded etcd): replaced without a create first (kube-apiserver validates a create's CRD in full
    before it finds the name taken)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException
    extensions = client.ApiextensionsV1Api(api)
    names = set()
    for crd in crds:
        name = crd["metadata"]["name"]
        names.add(name)
        if not stored:
            try:
                extensions.create_custom_resource_definition(body=crd, _preload_content=False)
                continue
            except ApiException as error:
                if error.status != 409:
                    raise
        current = json.loads(extensions.read_custom_resource_definition(name, _preload_content=False).data)
        body = dict(crd, metadata=dict(crd["metadata"], resourceVersion=current["metadata"]["resourceVersion"]))
        extensions.replace_custom_resource_definition(name, body=body, _preload_content=False)
    deadline = time.monotonic() + timeout
    while True:
        items = json.loads(extensions.list_custom_resource_definition(_preload_content=False).data)["items"]
        pending = names - {item["metadata"]["name"] for item in items if _established(item)}
        if not pending:
            return sorted(names)
        if time.monotonic() > deadline:
            raise RuntimeError("CRDs not Established after %.0fs: %s" % (timeout, ", ".join(sorted(pending))))
        time.sleep(0.1)


def etcd_seed(crds):
    """An etcd data directory in which kube-apiserver stored `crds` (as given: a conversion webhook is still the
    placeholder) and nothing else a cluster makes of its own: made once per machine, CRD set and etcd and
    kube-apiserver binaries, by a throwaway etcd and kube-apiserver (no controllers, so no ServiceAccount, ConfigMap or
    Lease of theirs), under the binary cache's etcd-seeds/; concurrent callers wait for the first.

    Installing HyperShift's 39 CRDs into a new etcd costs kube-apiserver about 13 CPU-seconds (each CRD validated,
    its CEL rules' costs estimated, its status written twice, its OpenAPI and serving information built), most of a
    test control plane's start on 2 cores; one started from the seed serves them as a restarted one does."""
    binaries = ensure_binaries(["etcd", "kube-apiserver"])
    key = hashlib.sha256(json.dumps({"format": SEED_FORMAT, "binaries": [binaries["etcd"], binaries["kube-apiserver"]],
                                     "crds": list(crds)}, sort_keys=True).encode()).hexdigest()[:32]
    root = cache_root().parent / "etcd-seeds"
    done = root / key / "etcd"
    if done.is_dir():
        return done
    root.mkdir(parents=True, exist_ok=True)
    with open(root / (key + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released with the file: a killed maker leaves no lock behind
        if done.is_dir():
            return done
        with tempfile.TemporaryDirectory(prefix=key + ".", dir=root) as scratch:
            maker = Cluster(Path(scratch) / "cluster", components=(), audit=False, binaries=binaries,
                            prepare=lambda cluster: _install_with(cluster, crds))
            with maker:
                pass
            staged = Path(scratch) / "seed"
            shutil.copytree(maker.state_dir / "etcd", staged / "etcd")
            if (root / key).exists():  # a half-made one (killed during the rename of an older format): remade
                shutil.rmtree(root / key)
            os.rename(staged, root / key)
    return done


def wait_discovered(api, crds, timeout=ESTABLISH_TIMEOUT):
    """Wait until API discovery (/apis) lists every served version of each CRD, as the controllers' discovery will
    read it (kube-apiserver started on stored CRDs adds their groups to discovery after it reports ready)."""
    wanted = {(crd["spec"]["group"], version["name"]) for crd in crds for version in crd["spec"]["versions"]
              if version.get("served", True)}
    from kubernetes import client
    apis = client.ApisApi(api)
    deadline = time.monotonic() + timeout
    while True:
        groups = apis.get_api_versions().groups
        missing = wanted - {(group.name, version.version) for group in groups for version in group.versions}
        if not missing:
            return
        if time.monotonic() > deadline:
            raise RuntimeError("CRD versions not in discovery after %.0fs: %s" % (
                timeout, ", ".join("%s/%s" % pair for pair in sorted(missing))))
        time.sleep(0.1)


def _install_with(cluster, crds):
    with _kube_api(cluster.kubeconfig) as api:
        install_crds(api, crds)


def _established(crd):
    return any(condition["type"] == "Established" and condition["status"] == "True"
               for condition in (crd.get("status") or {}).get("conditions") or ())


class RealServer(ServerClient):
    """A started testenv Cluster seen through the test-server interface."""

    def __init__(self, cluster, workdir):
        self.cluster = cluster
        self.workdir = str(workdir)
        self.kubeconfig = str(cluster.kubeconfig)
        self.url = cluster.server
        self.host, port = self.url[len("https://"):].rsplit(":", 1)
        self.port = int(port)
        self.ca_file = str(cluster.pki.path("ca.crt"))
        self.admin_token = cluster.admin_token
        self.ssl_context = ssl.create_default_context(cafile=self.ca_file)
        self.kubectl_cache = os.path.join(self.workdir, "kubectl-cache")
        self._requests = RequestLog()
        self._audit_offset = 0
        self.stopped_code = None
        self.direct_kubeconfig = self.kubeconfig
        self.faults = None
        self.webhook = None  # testenv.cluster.convert.ConvertWebhook when the CRDs convert by webhook

    def token_for(self, username):
        try:
            return self.cluster.tokens[username]
        except KeyError:
            raise KeyError("no static token for user %r; the cluster has: %s"
                           % (username, ", ".join(sorted(self.cluster.tokens)))) from None

    def kubeconfig_for(self, username, path=None):
        """A kubeconfig that authenticates as `username` with its static token (no client certificate)."""
        return self.token_kubeconfig(username, self.token_for(username), path)

    def token_kubeconfig(self, name, token, path=None):
        """A kubeconfig (workdir/<name>.kubeconfig unless path) that authenticates with a bearer token, e.g. a
        ServiceAccount's from a TokenRequest (no client certificate)."""
        path = path or os.path.join(self.workdir, "%s.kubeconfig" % name)
        config = {"apiVersion": "v1", "kind": "Config", "current-context": name,
                  "clusters": [{"name": "testenv", "cluster": {"server": self.url,
                                                               "certificate-authority": self.ca_file}}],
                  "users": [{"name": name, "user": {"token": token}}],
                  "contexts": [{"name": name, "context": {"cluster": "testenv", "user": name}}]}
        with open(path, "w") as handle:
            yaml.safe_dump(config, handle)
        return path

    # --- faults: a fault-injecting proxy in front of kube-apiserver (testenv/faultproxy.py) ----------------
    def enable_faults(self):
        """Put the fault proxy in front: from now on `kubeconfig` (and request/kubectl/api_client) go through it with
        the admin's bearer token, and add_fault/clear_faults take testenv/faults.py's rules. The direct kubeconfig
        stays in `direct_kubeconfig`. Returns self."""
        if self.faults is None:
            from testenv.faultproxy import start_fault_proxy
            self.faults = start_fault_proxy(self.cluster, self.workdir)
            self.kubeconfig = str(self.faults.kubeconfig(os.path.join(self.workdir, "faulty.kubeconfig"),
                                                         self.admin_token, self.ca_file))
            self.url = self.faults.url
            self.host, port = self.url[len("https://"):].rsplit(":", 1)
            self.port = int(port)
        return self

    def add_fault(self, rule):
        return self._fault_proxy().add_fault(rule)

    def clear_faults(self):
        return self._fault_proxy().clear_faults()

    def release_hangs(self):
        return self._fault_proxy().release_hangs()

    def _fault_proxy(self):
        if self.faults is None:
            raise AssertionError("faults need the fault proxy: call server.enable_faults() before the run")
        return self.faults

    # --- the request log: kube-apiserver's audit log (Metadata level, clients only) ---------------------
    def _read_audit(self, timeout=10):
        """Record every audit event written so far; a marker request makes sure the log has caught up."""
        marker = "/version?testenv-audit-marker=" + uuid.uuid4().hex
        self.request("GET", marker)
        deadline = time.monotonic() + timeout
        while True:
            with open(self.cluster.audit_log, "rb") as handle:
                handle.seek(self._audit_offset)
                data = handle.read()
            complete = data[:data.rfind(b"\n") + 1]
            seen = False
            for line in complete.splitlines():
                event = json.loads(line)
                if event.get("requestURI") == marker:
                    seen = True
                    continue
                self._record(event)
            self._audit_offset += len(complete)
            if seen:
                return
            if time.monotonic() > deadline:
                raise AssertionError("the audit log %s did not catch up within %ss" % (self.cluster.audit_log, timeout))
            time.sleep(0.02)

    def _record(self, event):
        ref = event.get("objectRef") or {}
        resource = ref.get("resource") or event["requestURI"].split("?", 1)[0]
        options = event.get("requestObject") or {}  # a DELETE's DeleteOptions (Request level, see AUDIT_POLICY)
        dry_run = "dryRun=All" in event["requestURI"] or "All" in (options.get("dryRun") or ())
        self._requests.record(event["verb"], ref.get("apiGroup", ""), resource, ref.get("subresource", ""),
                              ref.get("namespace", ""), ref.get("name", ""),
                              (event.get("responseStatus") or {}).get("code", 0),
                              (event.get("user") or {}).get("username", ""), dry_run=dry_run)

    def request_counts(self, since=0):
        """The requests clients made: from the audit log, or with the fault proxy in front from its own log, which
        also holds the requests it answered itself (injected errors and drops never reach kube-apiserver)."""
        if self.faults is not None:
            return self.faults.request_counts(since)
        self._read_audit()
        body = dict(self._requests.counts())
        body["entries"] = self._requests.entries(since)
        return body

    def reset_requests(self):
        if self.faults is not None:
            self.faults.reset_requests()
            return
        self._read_audit()
        self._requests.reset()

    # --- life -------------------------------------------------------------------------------------
    def log(self):
        """The last lines of every component's log."""
        logs = ["== %s (%s)\n%s" % (proc.name, proc.log, proc.tail(40)) for proc in self.cluster.processes]
        if self.webhook is not None:
            logs.append("== convert webhook (%s)\n%s" % (
                self.webhook.log_path, self.webhook.log_path.read_text(errors="replace")[-3000:]))
        return "\n".join(logs)

    def conversion_failures(self, group_suffix="cluster.hypershift.openshift.io"):
        """kube-apiserver's log lines of failed conversions (its conversion webhook calls, its watch cache's lists
        and watches) of the groups ending with `group_suffix`."""
        path = self.cluster.state_dir / "logs" / "kube-apiserver.log"
        failed = ("conversion webhook for", "ListAndWatch", "failed to list", "conversion")
        return [line for line in path.read_text(errors="replace").splitlines()
                if group_suffix in line and any(word in line for word in failed)
                and ("failed" in line or "error" in line.lower())]

    def stop_apiserver(self, timeout=15):
        """Stop this control plane's kube-apiserver process alone (SIGTERM, then SIGKILL after timeout); etcd and the
        other components keep running. Clients then get connection refused at `url` (or, with the fault proxy in
        front, its 503) until start_apiserver. Returns kube-apiserver's exit code."""
        return self.cluster.stop_apiserver(timeout)

    def start_apiserver(self):
        """Start the kube-apiserver stopped by stop_apiserver again: same port, certificates and etcd data; returns
        once it is ready."""
        self.cluster.restart_apiserver()

    def alive(self):
        return (bool(self.cluster.processes) and all(proc.alive() for proc in self.cluster.processes)
                and (self.webhook is None or self.webhook.alive()))

    def stop(self, timeout=15):
        """Stop every process; 0 when all were alive until now and are gone, else 1."""
        if self.stopped_code is None:
            healthy = self.alive()
            if self.faults is not None:
                self.faults.stop()
            self.cluster.stop(timeout)
            if self.webhook is not None:
                self.webhook.stop()
            self.stopped_code = 0 if healthy else 1
        return self.stopped_code


def start_cluster(workdir, crds=(), fake_nodes=1, components=("kube-controller-manager", "kube-scheduler", "kwok"),
                  pods="node", nodes=1, node_images=(), bulk_nodes=0):
    """Start a control plane in workdir with `crds` installed before the controllers; a RealServer.

    pods="node" (the default): `nodes` real nodes (testenv.cluster.node: kubelet, containerd, kube-proxy, CoreDNS)
    and no KWOK; every Pod runs for real. The collection's image (images.proxy_archive(): the proxy, the shim, the
    exporter) and the archives of node_images are side-loaded into each node: a Pod of another image fails to pull
    (no registry), so a fixture names its images there (testenv.capi.node_images). With bulk_nodes, KWOK runs beside
    the real nodes with that many Nodes of its own, tainted (KWOK_TAINT): the scheduler puts nothing there, a
    fixture binds its bulk by nodeName (testenv.hcp.fleet on_fake_nodes), and every other Pod (what the collection
    deploys) runs on the real nodes. pods="kwok-only": KWOK alone with `fake_nodes` Nodes, nothing runs (fleets too large for
    the machine, tests of the API alone)."""
    real_nodes, taints = 0, None
    if pods == "node":
        from .images import proxy_archive  # pylint: disable=import-outside-toplevel
        components, real_nodes = tuple(c for c in components if c != "kwok" or bulk_nodes), nodes
        fake_nodes, taints = bulk_nodes, [KWOK_TAINT]
        node_images = list(dict.fromkeys([proxy_archive(), *node_images]))
    elif pods != "kwok-only":
        raise ValueError("pods must be 'node' or 'kwok-only', not %r" % (pods,))
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    crds = list(crds)
    webhooks = []

    def prepare(cluster):
        if not crds:
            return
        with _kube_api(cluster.kubeconfig) as api:
            if needs_webhook(crds):  # HyperShift's /convert, before any object needs converting
                webhooks.append(ConvertWebhook(cluster).start())
                # the seed stored every CRD as given: only those wire() pointed at this cluster's /convert change
                install_crds(api, [crd for crd, given in zip(wire(crds, webhooks[0]), crds) if crd is not given],
                             stored=True)
            wait_discovered(api, crds)

    cluster = Cluster(workdir / "cluster", kubeconfig=workdir / "kubeconfig", components=tuple(components),
                      prepare=prepare, nodes=real_nodes, node_images=[Path(a) for a in node_images],
                      etcd_seed=etcd_seed(crds) if crds else None)
    try:
        cluster.start()
        for index in range(fake_nodes if "kwok" in components else 0):
            cluster.create_fake_node(fake_node_name(index), taints=taints)
    except BaseException:
        cluster.stop()
        for webhook in webhooks:
            webhook.stop()
        raise
    server = RealServer(cluster, workdir)
    server.webhook = webhooks[0] if webhooks else None
    return server


def containers_named(server, name):
    """{pod namespace/name: container status} of every container called `name` in the live Pods of the cluster (what
    a test or the demo checks at its end: Ready, restartCount)."""
    pods = server.request("GET", "/api/v1/pods").json()["items"]
    return {"%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"]): status
            for pod in pods if not pod["metadata"].get("deletionTimestamp")
            for status in (pod.get("status") or {}).get("containerStatuses") or () if status["name"] == name}


def pod_is_ready(pod):
    """Whether the Pod's Ready condition is True (every container Ready)."""
    return any(condition["type"] == "Ready" and condition["status"] == "True"
               for condition in (pod.get("status") or {}).get("conditions") or ())


def ready_pod(server, namespace, selector, timeout=90):
    """A Pod of namespace matching the label selector that is not being deleted and whose Ready condition is True
    (every container Ready), waited for up to timeout seconds; the failure lists the Pods and their conditions."""
    deadline = time.monotonic() + timeout
    while True:
        pods = server.request("GET", "/api/v1/namespaces/%s/pods?labelSelector=%s" % (
            namespace, urllib.parse.quote(selector))).json()["items"]
        ready = [pod for pod in pods if not pod["metadata"].get("deletionTimestamp") and pod_is_ready(pod)]
        if ready:
            return ready[0]
        if time.monotonic() > deadline:
            raise AssertionError("no Ready Pod %s in %s after %d s: %s" % (selector, namespace, timeout, json.dumps(
                [(pod["metadata"]["name"], pod.get("status")) for pod in pods], default=str)[:4000]))
        time.sleep(1)


def unwell(statuses):
    """The entries of containers_named() that are not Ready or were restarted, one line each."""
    return ["%s: ready %s, restartCount %d%s" % (
        pod, status["ready"], status["restartCount"],
        (", last state %s" % json.dumps(status["lastState"])) if status.get("lastState") else "")
        for pod, status in sorted(statuses.items()) if not status["ready"] or status["restartCount"]]


def _cgroup_pids(pod, container="*"):
    """The host pids in a Pod's cgroups on a real node (cgroupfs driver: /<node>/kubepods/[<qos>/]pod<uid>/<container
    id>, in the pids hierarchy): every container's, or the one of container ID `container`. The tree changes under the
    walk (Pods come and go, this one too: CI of f3312e2, 2026-12-02, saw a pathlib glob fail on a removed Pod's
    directory), so each step reads one known directory and a directory that went away holds no pids."""
    pids, root = [], "/sys/fs/cgroup/pids"
    for node in _listdir(root):
        for qos in ("", "besteffort", "burstable"):
            pod_dir = os.path.join(root, node, "kubepods", qos, "pod%s" % pod["metadata"]["uid"])
            for container_id in (_listdir(pod_dir) if container == "*" else (container,)):
                try:
                    with open(os.path.join(pod_dir, container_id, "cgroup.procs"), encoding="ascii") as procs:
                        pids.extend(int(pid) for pid in procs.read().split())
                except OSError:
                    pass
    return pids


def _listdir(path):
    """The names of the directories in path; [] when it is gone or is not a directory."""
    try:
        return [entry.name for entry in os.scandir(path) if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def pod_processes(pod):
    """The host pids of the processes of a Pod on a real node (its pause container's included)."""
    return _cgroup_pids(pod)


def container_processes(pod, name):
    """The host pids of the processes of the Pod's running container `name` (containerd's), as the Pod's status
    names it; [] when it has none."""
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        runtime, _sep, container_id = (status.get("containerID") or "").partition("://")
        if status["name"] == name and runtime == "containerd":
            return _cgroup_pids(pod, container_id)
    return []


def container_uids(pod):
    """{container name: the uid its processes run as on the host} for a Pod's running containers on a real node."""
    uids = {}
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        for pid in container_processes(pod, status["name"]):
            try:
                status_lines = Path("/proc/%d/status" % pid).read_text().splitlines()
            except OSError:
                continue
            uids[status["name"]] = int(next(line for line in status_lines if line.startswith("Uid:")).split()[1])
            break
    return uids


def _comm(pid):
    try:
        return Path("/proc/%d/comm" % pid).read_text().strip()
    except OSError:
        return None


def get_in_pod(pod, url, timeout=30):
    """GET `url` from inside the Pod's network namespace, as its containers would (its loopback included):
    (status, body). It enters through the Pod's pause process, which holds the namespace for the Pod's whole life (a
    container's process may be gone by the time nsenter opens it), and a failure names what nsenter or the request
    said."""
    import subprocess  # pylint: disable=import-outside-toplevel
    import sys  # pylint: disable=import-outside-toplevel
    name = "%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"])
    # (pid, command name) of the Pod's live processes, its pause process first; a pid gone since the cgroup was read
    # has no name
    processes = sorted(((pid, _comm(pid)) for pid in pod_processes(pod)), key=lambda process: process[1] != "pause")
    processes = [(pid, comm) for pid, comm in processes if comm is not None]
    if not processes:
        raise AssertionError("no process of Pod %s on a real node" % name)
    script = ("import sys, urllib.request, urllib.error\n"
              "try:\n    r = urllib.request.urlopen(sys.argv[1], timeout=%d); print(r.status); print(r.read().decode())\n"
              "except urllib.error.HTTPError as e:\n    print(e.code); print(e.read().decode())\n" % timeout)
    failures = []
    for pid, comm in processes[:3]:
        result = subprocess.run(["nsenter", "-t", str(pid), "-n", "--", sys.executable, "-c", script, url],
                                capture_output=True, text=True, timeout=timeout + 30, check=False)
        if result.returncode == 0:
            status, _newline, body = result.stdout.partition("\n")
            return int(status), body
        failures.append("pid %d (%s): exit %d: %s" % (pid, comm, result.returncode, result.stderr.strip()[-1500:]))
    raise AssertionError("GET %s in Pod %s failed: %s; its containers: %s" % (
        url, name, "; ".join(failures), json.dumps(
            (pod.get("status") or {}).get("containerStatuses"), default=str)[:3000]))
