"""The real Cluster API controllers for end-to-end tests: the core manager and the Docker provider (CAPD) with its
in-memory backend, built from upstream by testenv/cluster/build.py, run as local processes with a kubeconfig,
either straight at kube-apiserver or through capi_proxy as the sidecar runs it.

    controllers = Controllers(workdir)            # builds or finds capi-manager and capd-manager
    controllers.start(kubeconfig)                 # both managers; waits until their health endpoints answer
    objects = workload_cluster("ns", "wl", workers=2)
    ...
    controllers.stop()

The CRDs come from the Go module cache at the pinned version (`crd_documents()`), labelled with their CAPI contract
as each provider's kustomize does; the core ones convert through HyperShift's /convert stand-in
(testenv/cluster/convert.py), as a HyperShift management cluster installs them.

What the in-memory backend needs and does (measured with v1.14.2):
* a standalone control-plane Machine: the workload cluster's simulated API server starts with its "kube-apiserver
  Pod", and the core manager cannot reach a workload cluster without it;
* `<cluster>-ca` and `<cluster>-etcd` Secrets (no control plane provider makes them) and a bootstrap data Secret;
* an annotation on the DevCluster (v1.14.2 writes into a nil annotations map otherwise and panics);
* a MachineDeployment's rollout strategy spelled out: the defaulting webhook that would fill it is not registered
  (HyperShift does not register CAPI's webhooks either; its NodePool controller writes the strategy);
* one CAPD per machine: it listens on fixed ports (19000, and 20000 upwards for the workload API servers), so
  Controllers holds a file lock while CAPD runs and other test workers wait for it.
"""
import copy
import datetime
import fcntl
import os
import subprocess
import tempfile
import threading
import time
import urllib.request

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import sidecar
from testenv import certs, proxy_stack, yamlio
from testenv.cluster import build
from testenv.cluster.cluster import die_with_parent, free_port, terminate
from testenv.cluster.convert import WEBHOOK_PLACEHOLDER

CORE_MODULE = "sigs.k8s.io/cluster-api"
TEST_MODULE = "sigs.k8s.io/cluster-api/test"
CORE_CRDS = "core/config/crd/bases"
PROVIDER_CRDS = "infrastructure/docker/config/crd/bases"


class Release(object):
    """A pair of managers: the API version its controllers read and write, their binaries, the go/<moddir> that pins
    them, and the contract labels CAPD's config/crd/kustomization.yaml gives its CRDs (the core reads them by)."""

    def __init__(self, api, binaries, moddir, contract_labels):
        self.api = api
        self.binaries = dict(zip(("capi-manager", "capd-manager"), binaries))
        self.moddir = moddir
        self.contract_labels = contract_labels


RELEASES = {
    # v1.14: the controllers are cluster.x-k8s.io/v1beta2 clients
    "v1beta2": Release("v1beta2", build.CAPI_BINARIES, "capi",
                       {"cluster.x-k8s.io/v1beta1": "v1beta1", "cluster.x-k8s.io/v1beta2": "v1beta2"}),
    # v1.10: the last release whose controllers are v1beta1 clients; its CAPD serves v1beta1 only
    "v1beta1": Release("v1beta1", build.CAPI_V1BETA1_BINARIES, "capi-v1beta1", {"cluster.x-k8s.io/v1beta1": "v1beta1"}),
}
KUBERNETES_VERSION = "v1.34.4"
LOCK_PATH = os.path.join(tempfile.gettempdir(), "testenv-capd.lock")
START_TIMEOUT = 60.0
# Readiness of the in-memory machines: short, so a Machine runs within seconds of its creation
IN_MEMORY_PROVISIONING = {"vm": {"provisioning": {"startupDuration": "2s"}},
                          "node": {"provisioning": {"startupDuration": "1s"}},
                          "apiServer": {"provisioning": {"startupDuration": "1s"}},
                          "etcd": {"provisioning": {"startupDuration": "1s"}}}


def crd_documents(conversion_webhook=True, release="v1beta2"):
    """The CRDs of the core manager and of CAPD from the Go module cache (the versions go/capi*/go.mod pin).

    The core CRDs are always v1.14's, as a HyperShift management cluster installs them (v1beta2 stored, v1beta1 still
    served); with conversion_webhook they convert through convert.WEBHOOK_PLACEHOLDER (start_cluster wires the
    /convert stand-in in). The provider's come with the release's CAPD and carry its contract labels."""
    documents = []
    for module, moddir, folder, labels in ((CORE_MODULE, "capi", CORE_CRDS, None),
                                           (TEST_MODULE, RELEASES[release].moddir, PROVIDER_CRDS,
                                            RELEASES[release].contract_labels)):
        directory = build.module_dir(module, moddir) / folder
        for path in sorted(directory.glob("*.yaml")):
            crd = yamlio.load(path.read_text())
            if labels:
                crd["metadata"].setdefault("labels", {}).update(labels)
            elif conversion_webhook and len(crd["spec"]["versions"]) > 1:
                crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
                    "conversionReviewVersions": ["v1"], "clientConfig": {"url": WEBHOOK_PLACEHOLDER}}}
            documents.append(crd)
    return documents


def _rsa_ca(common_name):
    """(cert PEM, key PEM) of a self-signed RSA CA, as kubeadm makes the cluster and etcd CAs."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem.decode()


def _secret(namespace, name, cluster, data, secret_type="cluster.x-k8s.io/secret"):
    return {"apiVersion": "v1", "kind": "Secret", "type": secret_type,
            "metadata": {"name": name, "namespace": namespace, "labels": {"cluster.x-k8s.io/cluster-name": cluster}},
            "stringData": data}


def workload_cluster(namespace, name, workers=2, api="v1beta2"):
    """The objects of a workload cluster on CAPD's in-memory backend, as a client of `api` writes them (a v1beta2 one:
    refs by apiGroup, rollout.strategy; a v1beta1 one, CAPI v1.10 or older: refs by apiVersion and namespace,
    strategy): a Cluster and its DevCluster, one standalone control-plane Machine, a MachineDeployment of `workers`
    with its DevMachineTemplate, and the Secrets a control plane provider would otherwise make."""
    labels = {"cluster.x-k8s.io/cluster-name": name}
    md_labels = dict(labels, **{"cluster.x-k8s.io/deployment-name": name + "-md-0"})
    infra = "infrastructure.cluster.x-k8s.io/" + api

    def ref(kind, ref_name):
        if api == "v1beta1":
            return {"apiVersion": infra, "kind": kind, "name": ref_name, "namespace": namespace}
        return {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": kind, "name": ref_name}

    def machine_spec(infrastructure_ref):
        return {"clusterName": name, "version": KUBERNETES_VERSION,
                "bootstrap": {"dataSecretName": name + "-bootstrap"}, "infrastructureRef": infrastructure_ref}

    rolling = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    strategy = {"strategy": rolling} if api == "v1beta1" else {"rollout": {"strategy": rolling}}
    objects = [_secret(namespace, name + "-%s" % part, name, dict(zip(("tls.crt", "tls.key"), _rsa_ca(name + "-" + part))))
               for part in ("ca", "etcd")]
    objects.append(_secret(namespace, name + "-bootstrap", name, {"format": "cloud-config", "value": "#cloud-config\n"}))
    objects += [
        {"apiVersion": "cluster.x-k8s.io/" + api, "kind": "Cluster", "metadata": {"name": name, "namespace": namespace},
         "spec": {"clusterNetwork": {"services": {"cidrBlocks": ["10.128.0.0/12"]},
                                     "pods": {"cidrBlocks": ["192.168.0.0/16"]}, "serviceDomain": "cluster.local"},
                  "infrastructureRef": ref("DevCluster", name)}},
        {"apiVersion": infra, "kind": "DevCluster",
         "metadata": {"name": name, "namespace": namespace, "annotations": {"testenv/capd": "in-memory"}},
         "spec": {"backend": {"inMemory": {}}}},
        {"apiVersion": "cluster.x-k8s.io/" + api, "kind": "Machine",
         "metadata": {"name": name + "-cp-0", "namespace": namespace,
                      "labels": dict(labels, **{"cluster.x-k8s.io/control-plane": ""})},
         "spec": machine_spec(ref("DevMachine", name + "-cp-0"))},
        {"apiVersion": infra, "kind": "DevMachine", "metadata": {"name": name + "-cp-0", "namespace": namespace},
         "spec": {"backend": {"inMemory": copy.deepcopy(IN_MEMORY_PROVISIONING)}}},
        {"apiVersion": infra, "kind": "DevMachineTemplate", "metadata": {"name": name + "-worker", "namespace": namespace},
         "spec": {"template": {"spec": {"backend": {"inMemory": copy.deepcopy(IN_MEMORY_PROVISIONING)}}}}},
        {"apiVersion": "cluster.x-k8s.io/" + api, "kind": "MachineDeployment",
         "metadata": {"name": name + "-md-0", "namespace": namespace},
         # two dicts: a label added to the template alone must not land in the selector too
         "spec": dict(strategy, clusterName=name, replicas=workers, selector={"matchLabels": dict(md_labels)},
                      template={"metadata": {"labels": dict(md_labels)},
                                "spec": machine_spec(ref("DevMachineTemplate", name + "-worker"))})},
    ]
    return objects


class Manager(object):
    """One manager process (capi-manager or capd-manager) with its log file."""

    def __init__(self, name, command, log_path, health_url, env=None):
        self.name = name
        self.log_path = log_path
        self.health_url = health_url
        with open(log_path, "ab") as log:
            log.write(("--- %s %s\n" % (time.strftime("%H:%M:%S"), " ".join(command))).encode())
            log.flush()
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                            preexec_fn=die_with_parent)

    def healthy(self):
        try:
            with urllib.request.urlopen(self.health_url, timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def stop(self):
        return terminate(self.process)


MANAGERS = ("capi-manager", "capd-manager")
# POD_IP: CAPD hosts each workload cluster's simulated API server there
MANAGER_ENV = {"capi-manager": {}, "capd-manager": {"POD_IP": "127.0.0.1"}}


class Controllers(object):
    """capi-manager and capd-manager as local processes. start(kubeconfig) after stop() moves them, for example
    from the API server to the proxy; each can be started and stopped alone (names=...). Logs accumulate in
    <workdir>/<name>.log across starts, one header line per start."""

    def __init__(self, workdir, release="v1beta2"):
        self.workdir = str(workdir)
        os.makedirs(self.workdir, exist_ok=True)
        self.release = RELEASES[release]
        found = build.ensure_binaries(self.release.binaries.values())
        self.binaries = {name: found[binary] for name, binary in self.release.binaries.items()}
        self.cert_dir = os.path.join(self.workdir, "webhook-certs")
        os.makedirs(self.cert_dir, exist_ok=True)
        material = certs.generate()  # the managers refuse to start without a serving certificate
        for file_name, pem in (("tls.crt", material["cert"]), ("tls.key", material["key"])):
            with open(os.path.join(self.cert_dir, file_name), "w") as handle:
                handle.write(pem)
        self.managers = {}
        self._lock = None

    def log_path(self, name):
        return os.path.join(self.workdir, name + ".log")

    def start(self, kubeconfig, names=MANAGERS, timeout=START_TIMEOUT):
        """Start the named managers with kubeconfig and wait until their health endpoints answer."""
        running = [name for name in names if name in self.managers]
        if running:
            raise RuntimeError("%s running; stop() first" % ", ".join(running))
        if self._lock is None:  # CAPD's fixed ports: one at a time on this machine
            self._lock = open(LOCK_PATH, "w")
            fcntl.flock(self._lock, fcntl.LOCK_EX)
        for name in names:
            health = free_port()
            command = [self.binaries[name], "--kubeconfig", kubeconfig, "--leader-elect=false",
                       "--webhook-port", str(free_port()), "--webhook-cert-dir", self.cert_dir,
                       "--health-addr", "127.0.0.1:%d" % health,
                       "--diagnostics-address", "127.0.0.1:%d" % free_port(), "--insecure-diagnostics"]
            self.managers[name] = Manager(name, command, self.log_path(name), "http://127.0.0.1:%d/healthz" % health,
                                          dict(os.environ, **MANAGER_ENV[name]))
        deadline = time.monotonic() + timeout
        for name in names:
            manager = self.managers[name]
            while not manager.healthy():
                if manager.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("%s did not become healthy (exit %s); its log: %s\n%s"
                                       % (name, manager.process.poll(), manager.log_path, self.log(name)[-3000:]))
                time.sleep(0.2)
        return self

    def stop(self, names=MANAGERS):
        """SIGTERM the named managers (SIGKILL after a grace period); returns their exit codes."""
        return [self.managers.pop(name).stop() for name in names if name in self.managers]

    def close(self):
        self.stop()
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def log(self, name):
        try:
            with open(self.log_path(name), errors="replace") as handle:
                return handle.read()
        except FileNotFoundError:
            return ""


SIDECAR = sidecar.CONTAINER_NAME  # the container the api_proxy role puts in
# the sidecar's arguments that name pod paths and ports; the stand-in gives the local process its own
POD_ONLY_ARGS = ("--kubeconfig", "--listen", "--metrics-listen")
HCP_DEPLOYMENTS = {"cluster-api": "capi-manager", "capi-provider": "capd-manager"}


FINALIZER = "testenv.capi/kubelet"  # holds a Pod until the process it stands for has stopped


class Kubelet(object):
    """Stands in for the kubelet of the CAPI Deployments of one HCP namespace, for the real controllers.

    KWOK runs the Deployments' Pods (they become Ready at once); this runs, for the newest live Pod of each Deployment
    (cluster-api: the core manager, capi-provider: CAPD), the manager as a local process: straight at kube-apiserver,
    or, when the Pod has the collection's sidecar, beside a local capi_proxy started with the sidecar's own arguments
    (its pod paths and ports replaced) and through it. A new Pod restarts the process, as a rollout does. Each Pod it
    runs for carries a finalizer until the process has stopped, so a Pod is gone only once its containers are, as
    with a real kubelet's graceful termination (KWOK alone deletes Pods at once, while the manager still writes).
    `events` records (seconds since start, Deployment, "stopped" | "direct" | "proxy")."""

    def __init__(self, server, controllers, namespace, workdir, deployments=None, poll_seconds=0.3):
        self.server = server
        self.controllers = controllers
        self.namespace = namespace
        self.workdir = str(workdir)
        self.deployments = dict(deployments or HCP_DEPLOYMENTS)
        self.poll_seconds = poll_seconds
        self.events = []
        self.errors = []
        self._state = {name: None for name in self.deployments}  # (pod uid, mode...) of the running process
        self._proxies = {}
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kubelet-" + namespace, daemon=True)

    def start(self):
        self._sync()  # the first start happens before start() returns
        self._thread.start()
        return self

    @staticmethod
    def _mode(pod):
        for container in pod.get("spec", {}).get("containers", []):
            if container["name"] == SIDECAR:
                return ("proxy",) + tuple(arg for arg in container.get("args", [])
                                          if arg.split("=", 1)[0] not in POD_ONLY_ARGS)
        return ("direct",)

    def _pod_path(self, pod=None):
        path = "/api/v1/namespaces/%s/pods" % self.namespace
        return path if pod is None else path + "/" + pod["metadata"]["name"]

    def _pods(self, deployment):
        return self.server.request("GET", self._pod_path() + "?labelSelector=app%3D" + deployment).json()["items"]

    def _release(self, pods):
        """Take this stand-in's finalizer off the pods that hold it."""
        for pod in pods:
            finalizers = pod["metadata"].get("finalizers") or []
            if FINALIZER in finalizers:
                self._set_finalizers(pod, [f for f in finalizers if f != FINALIZER])

    def _set_finalizers(self, pod, finalizers):
        response = self.server.request("PATCH", self._pod_path(pod), {"metadata": {"finalizers": finalizers}},
                                       content_type="application/merge-patch+json")
        if response.status not in (200, 404):
            raise RuntimeError("patching the finalizers of Pod %s: %r" % (pod["metadata"]["name"], response))

    def _sync(self):
        for name, manager in self.deployments.items():
            pods = self._pods(name)
            live = sorted((pod for pod in pods if "deletionTimestamp" not in pod["metadata"]),
                          key=lambda pod: (pod["metadata"]["creationTimestamp"], pod["metadata"]["name"]))
            for pod in live:
                finalizers = pod["metadata"].get("finalizers") or []
                if FINALIZER not in finalizers:
                    self._set_finalizers(pod, finalizers + [FINALIZER])
            desired = ((live[-1]["metadata"]["uid"],) + self._mode(live[-1])) if live else None
            if desired != self._state[name]:
                self.controllers.stop(names=(manager,))
                proxy = self._proxies.pop(name, None)
                if proxy is not None:
                    proxy.stop()
                self._state[name] = None
                mode = "stopped" if desired is None else desired[1]
                if mode == "direct":
                    self.controllers.start(self.server.kubeconfig, names=(manager,))
                elif mode == "proxy":
                    proxy = proxy_stack.start_proxy(self.workdir, self.server.kubeconfig, *desired[2:],
                                                    name="%s-proxy" % name)
                    self._proxies[name] = proxy
                    kubeconfig = proxy_stack.proxy_kubeconfig(self.workdir, proxy.url, self.server.admin_token,
                                                              name="%s-via-proxy" % name)
                    self.controllers.start(kubeconfig, names=(manager,))
                self._state[name] = desired
                self.events.append((round(time.monotonic() - self._started, 1), name, mode))
            running_for = self._state[name][0] if self._state[name] else None
            self._release(pod for pod in pods
                          if "deletionTimestamp" in pod["metadata"] and pod["metadata"]["uid"] != running_for)

    def _run(self):
        while not self._stop.wait(self.poll_seconds):
            try:
                self._sync()
            except Exception as error:  # pylint: disable=broad-except  # reported by stop(), never lost
                self.errors.append(repr(error))

    def stop(self):
        """Stop following; stop the managers and proxies; returns the errors seen (none expected)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(30)
        self.controllers.stop()
        for proxy in self._proxies.values():
            proxy.stop()
        self._proxies = {}
        for name in self.deployments:  # nothing runs any more: no Pod stays held
            self._release(self._pods(name))
        return self.errors
