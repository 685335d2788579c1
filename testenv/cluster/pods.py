"""Pods as a kubelet runs them, for the test bed: the node `netns-node-0` and every Pod scheduled to it, or the Pods
of known images on every KWOK node.

KWOK marks Pods Running and Ready without running anything. The Pods on this node run for real instead:
- one Linux network namespace per Pod (`ip netns`), joined to a bridge of this cluster's own (testenv.cluster
  PodNetwork: a /16 of 10.200-249.x.x used only inside namespaces the test bed made) by a veth pair; the Pod's
  containers share it; the pod IP goes into the Pod's status, so the endpoints controller puts it behind Services;
- each container is a process started in that namespace with its volumes at their mountPaths (configMap, secret,
  projected service-account token with the cluster CA, downwardAPI, emptyDir; testenv.cluster.podexec) and the
  Pod's /etc/hosts, in which kubernetes.default.svc names the bridge's address: this process relays that address's
  port 443 to kube-apiserver, as kube-proxy routes the kubernetes Service (KUBERNETES_SERVICE_HOST/PORT say the same);
- liveness, readiness and startup probes (httpGet, tcpSocket, exec) are sent from outside the Pod to the pod IP on
  each probe's period, as the kubelet's prober does; a container whose liveness (or startup) fails is killed and
  restarted (restartCount, CrashLoopBackOff's doubling delay), a process that exits is restarted the same way, and
  readiness sets the container's and the Pod's Ready;
- a Pod being deleted gets SIGTERM, its grace period, SIGKILL, then is removed from the API, as the kubelet does;
- without kube-apiserver (stopped, restarting) the Pods go on: their processes, namespaces and probes do not need it;
  what does (the watch, statuses, volumes, deletions) is tried again with the reflector's doubling delay, then the
  Pods are listed and watched again, and a Pod status another writer changed is sent again (Retry, PodRun.observed).

Images: IMAGES says which command runs a container of a known image (the proxy's `capi-proxy`); a container of any
other image runs testenv.cluster.standin, which answers on the container's declared ports and nothing else.

Two modes. Own node (`--node`, start_cluster(pods="netns")): this registers the node, keeps its Lease and runs every
Pod scheduled to it. Hybrid (`--kwok-nodes`, the default of start_cluster): KWOK keeps its nodes and fakes the Pods
of the fixtures, and this runs, on whichever KWOK node the scheduler chose, every Pod with a container of a known
image: what the collection deploys (the proxy sidecar, the conversion shim) always runs for real; KWOK's stages leave
those Pods alone (kwok_exclusion).

    python -m testenv.cluster.pods --kubeconfig K (--node netns-node-0 | --kwok-nodes) --bridge B --gateway IP
        --prefix 16 --apiserver-port PORT --state-dir DIR --health-port PORT [--images FILE.json]

Not done (no test needs them yet): init containers, envFrom, runAsUser (containers run as root), resource limits,
volume updates after start, hostNetwork Pods, gRPC probes.
"""
import argparse
import base64
import datetime
import http.client
import ipaddress
import json
import logging
import os
import re
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import urllib3

from testenv.cluster.cluster import KWOK_NODE_ANNOTATION, _signal_group as signal_group, die_with_parent

REPO_ROOT = Path(__file__).resolve().parents[2]
LOG = logging.getLogger("testenv.pods")
KUBELET_VERSION = "v1.34.4"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
PROXY_VENV = REPO_ROOT / ".build" / "proxy-venv"  # `make proxy-venv`: the package of the built collection tarball
PROXY_SOURCES = ("capi_proxy", "plugins/module_utils/translate", "plugins/module_utils/merge_patch.py",
                 "plugins/module_utils/hypershift.py", "plugins/module_utils/state/machine.py", "pyproject.toml",
                 "galaxy.yml", "requirements.txt")  # the Makefile's PROXY_SOURCES


def proxy_entrypoint():
    """The proxy image's entrypoint here: the `capi-proxy` of the package installed from the built collection tarball
    (`make proxy-venv`, what `make test` and `make demo` run), unless the checkout's proxy sources are newer than that
    install; then the checkout's `python -m capi_proxy` (and the runner's log says so)."""
    stamp = PROXY_VENV / ".installed"
    if stamp.exists():
        installed = stamp.stat().st_mtime
        newest = max(path.stat().st_mtime for source in PROXY_SOURCES for path in
                     ([REPO_ROOT / source] if (REPO_ROOT / source).is_file() else (REPO_ROOT / source).rglob("*.py")))
        if newest <= installed:
            return {"entrypoint": [str(PROXY_VENV / "bin" / "capi-proxy")], "env": {}, "from": "installed package"}
    return {"entrypoint": [sys.executable, "-m", "capi_proxy"], "env": {"PYTHONPATH": str(REPO_ROOT)},
            "from": "checkout (make proxy-venv installs the package)"}


# image repository (its last path element, no tag or digest) -> how a container of it starts: the image's entrypoint
# and environment
IMAGES = {"capi-proxy": proxy_entrypoint()}
BACKOFF_START, BACKOFF_MAX = 10.0, 300.0
TICK = 0.2  # seconds between two looks at a Pod's containers and probes
# the delay before a failed API call is tried again: client-go's reflector starts at 0.8 s and doubles; its 30 s cap is
# cut here to 5 s, so that a Pod created after kube-apiserver is back runs within seconds in a test
RETRY_START, RETRY_MAX = 0.8, 5.0
# the Pod conditions PodRun.status sets, as the kubelet does; others (DisruptionTarget, readiness gates) are not ours
KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled")


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ip(*args, check=True):
    result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise RuntimeError("ip %s failed: %s" % (" ".join(args), result.stderr.strip()))
    return result


def image_repository(image):
    """quay.io/hypershift/capi-proxy:0.1.0 -> capi-proxy (the last path element, without tag or digest)."""
    name = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return name.split(":", 1)[0]


def expand(text, env):
    """The kubelet's $(VAR) expansion in command, args and env values ($$ escapes)."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda match: "$" if match.group(0) == "$$" else env.get(match.group(1), match.group(0)), text)


def runs_for_real(pod, images):
    """On a KWOK node (hybrid mode): does this Pod run here rather than in KWOK? When a container's image is one the
    test bed can run (IMAGES: what the collection deploys), matched as KWOK's stages match it (kwok_exclusion):
    the repository's last path element followed by a tag or digest."""
    return any(("/%s:" % name) in image or ("/%s@" % name) in image
               for container in pod["spec"]["containers"] for image in [container.get("image", "")]
               for name in images)


def kwok_exclusion(images):
    """The KWOK stage matchExpression that leaves alone the Pods runs_for_real() takes (by image repository)."""
    tests = " or ".join('contains("/%s:") or contains("/%s@")' % (name, name) for name in sorted(images))
    return ("    - key: '.spec.containers.[] | select(.image | %s) | .name'\n"
            "      operator: 'DoesNotExist'\n" % tests)


def container_argv(container, images):
    """The argv a container starts with: command + args (or the image's entrypoint + args), or the stand-in."""
    image = images.get(image_repository(container.get("image", "")))
    if image is None:
        ports = [str(port["containerPort"]) for port in container.get("ports") or ()
                 if port.get("protocol", "TCP") == "TCP"]
        return [sys.executable, "-m", "testenv.cluster.standin", *ports], {"PYTHONPATH": str(REPO_ROOT)}
    command = container.get("command") or image["entrypoint"]
    return list(command) + list(container.get("args") or ()), dict(image.get("env") or {})


def probe_port(container, port):
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for declared in container.get("ports") or ():
        if declared.get("name") == port:
            return int(declared["containerPort"])
    raise ValueError("port %r is not a port of container %s" % (port, container["name"]))


class ApiUnreachable(ConnectionError):
    """kube-apiserver did not answer (connection refused or reset, a watch cut off): the call is tried again later."""


class Retry:
    """The failures in a row of one kind of API call: when to try again (RETRY_START doubling up to RETRY_MAX) and one
    log line when they start and one when they end, not one per try."""

    def __init__(self, what):
        self.what = what
        self.failures = 0
        self.due = 0.0

    def ready(self):
        return time.monotonic() >= self.due

    def failed(self, error):
        """Record a failure; the seconds to wait before the next try."""
        delay = min(RETRY_MAX, RETRY_START * 2 ** self.failures)
        if not self.failures:
            LOG.warning("%s failed (%s); trying again, at most every %.0f s", self.what, error, RETRY_MAX)
        self.failures += 1
        self.due = time.monotonic() + delay
        return delay

    def succeeded(self):
        if self.failures:
            LOG.info("%s succeeded again after %d failures", self.what, self.failures)
        self.failures, self.due = 0, 0.0


class Api:
    """Raw JSON requests and watches through the official client's ApiClient; ApiUnreachable when kube-apiserver does
    not answer."""

    def __init__(self, kubeconfig):
        from kubernetes import client, config
        configuration = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        configuration.connection_pool_maxsize = 32
        configuration.retries = False
        self.client = client.ApiClient(configuration)

    def request(self, method, path, body=None, expect=(200, 201), content_type=None, timeout=30):
        from kubernetes.client.rest import ApiException
        headers = {"Accept": "application/json",
                   "Content-Type": content_type or ("application/merge-patch+json" if method == "PATCH"
                                                    else "application/json")}
        request = self.client.param_serialize(method, path, body=body, auth_settings=["BearerToken"],
                                              header_params=headers)
        try:
            response = self.client.call_api(*request, _request_timeout=timeout)
            response.read()
            status, raw = response.status, response.data
        except ApiException as error:
            status, raw = error.status, error.body
        except urllib3.exceptions.HTTPError as error:
            raise ApiUnreachable("%s %s: %s" % (method, path, error)) from error
        data = json.loads(raw) if raw else {}
        if expect and status not in expect:
            raise RuntimeError("%s %s -> %d: %s" % (method, path, status, data.get("message", data)))
        return status, data

    def watch(self, path, timeout):
        """The events of a watch (dicts), until the server ends it."""
        request = self.client.param_serialize("GET", path, auth_settings=["BearerToken"],
                                              header_params={"Accept": "application/json"})
        try:
            response = self.client.call_api(*request, _request_timeout=(10, timeout + 30)).response
        except urllib3.exceptions.HTTPError as error:
            raise ApiUnreachable("watch %s: %s" % (path, error)) from error
        buffer = b""
        try:
            if response.status != 200:  # a 429 while its watch cache fills after a restart, a 410 for an old version
                raise RuntimeError("watch %s -> %d: %s" % (path, response.status, response.read()[:300]))
            for chunk in response.stream(65536, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        except urllib3.exceptions.HTTPError as error:
            raise ApiUnreachable("watch %s cut off: %s" % (path, error)) from error
        finally:
            response.release_conn()


class Relay(socketserver.ThreadingMixIn, socketserver.TCPServer):
    """The kubernetes Service's address inside the pod network (the bridge's address, port 443) relayed to
    kube-apiserver on loopback: what kube-proxy does for the Service in a cluster."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, listen, target):
        self.target = target
        super().__init__(listen, _RelayHandler)


class _RelayHandler(socketserver.BaseRequestHandler):
    def handle(self):
        try:
            upstream = socket.create_connection(self.server.target, timeout=10)
        except OSError:
            return
        upstream.settimeout(None)

        def pump(source, sink):
            try:
                while True:
                    data = source.recv(65536)
                    if not data:
                        break
                    sink.sendall(data)
            except OSError:
                pass
            finally:
                for sock in (source, sink):
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        other = threading.Thread(target=pump, args=(upstream, self.request), daemon=True)
        other.start()
        pump(self.request, upstream)
        other.join()
        upstream.close()


class Probe:
    """One probe of one container, with the prober worker's counters."""

    def __init__(self, kind, spec, container, started):
        self.kind, self.spec, self.container = kind, spec, container
        self.period = float(spec.get("periodSeconds", 10))
        self.timeout = float(spec.get("timeoutSeconds", 1))
        self.failure_threshold = int(spec.get("failureThreshold", 3))
        self.success_threshold = int(spec.get("successThreshold", 1))
        self.due = started + float(spec.get("initialDelaySeconds", 0))
        self.failures = self.successes = 0
        self.passing = False
        self.sent = self.passed = 0
        self.last_message = ""

    def run(self, pod_ip, pid):
        self.sent += 1
        try:
            ok, message = self._attempt(pod_ip, pid)
        except Exception as error:  # pylint: disable=broad-except
            ok, message = False, "%s: %s" % (type(error).__name__, error)
        self.last_message = message
        if ok:
            self.passed += 1
            self.successes, self.failures = self.successes + 1, 0
            if self.successes >= self.success_threshold:
                self.passing = True
        else:
            self.failures, self.successes = self.failures + 1, 0
            if self.failures >= self.failure_threshold:
                self.passing = False
        return ok

    def _attempt(self, pod_ip, pid):
        spec = self.spec
        if "httpGet" in spec:
            get = spec["httpGet"]
            port = probe_port(self.container, get["port"])
            host = get.get("host") or pod_ip
            if get.get("scheme", "HTTP").upper() == "HTTPS":
                context = ssl.create_default_context()
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
                connection = http.client.HTTPSConnection(host, port, timeout=self.timeout, context=context)
            else:
                connection = http.client.HTTPConnection(host, port, timeout=self.timeout)
            headers = {"User-Agent": "kube-probe/1.34", "Accept": "*/*"}
            headers.update({header["name"]: header["value"] for header in get.get("httpHeaders") or ()})
            try:
                connection.request("GET", get.get("path") or "/", headers=headers)
                status = connection.getresponse().status
            finally:
                connection.close()
            return 200 <= status < 400, "HTTP %d from %s:%d%s" % (status, host, port, get.get("path") or "/")
        if "tcpSocket" in spec:
            port = probe_port(self.container, spec["tcpSocket"]["port"])
            with socket.create_connection((spec["tcpSocket"].get("host") or pod_ip, port), timeout=self.timeout):
                return True, "connected to %s:%d" % (pod_ip, port)
        if "exec" in spec:
            result = subprocess.run(["nsenter", "-t", str(pid), "-n", "-m", "--", *spec["exec"]["command"]],
                                    capture_output=True, timeout=self.timeout, check=False)
            return result.returncode == 0, "exit %d" % result.returncode
        return False, "unsupported probe %s" % sorted(spec)


class Container:
    def __init__(self, spec):
        self.spec = spec
        self.name = spec["name"]
        self.popen = None
        self.started_at = None
        self.restart_count = 0
        self.next_start = 0.0
        self.last_state = {}
        self.probes = {}
        self.started = False  # the startup probe has passed (or there is none)
        self.kill_reason = ""

    def alive(self):
        return self.popen is not None and self.popen.poll() is None

    def ready(self):
        readiness = self.probes.get("readiness")
        return self.alive() and self.started and (readiness is None or readiness.passing)

    def state(self):
        if self.alive():
            return {"running": {"startedAt": self.started_at}}
        if self.restart_count or self.last_state:
            return {"waiting": {"reason": "CrashLoopBackOff",
                                "message": "back-off restarting failed container %s" % self.name}}
        return {"waiting": {"reason": "ContainerCreating"}}


class PodRun(threading.Thread):
    """One Pod on this node: its namespace, volumes, containers, probes and status, until it is deleted."""

    def __init__(self, runner, pod):
        super().__init__(daemon=True, name="pod-%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"]))
        self.runner = runner
        self.pod = pod
        self.uid = pod["metadata"]["uid"]
        self.namespace, self.name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        self.dir = runner.state_dir / "pods" / ("%s_%s_%s" % (self.namespace, self.name, self.uid[:8]))
        self.netns = "%s-%s" % (runner.bridge, self.uid[:8])
        self.veth = "%sv%s" % (runner.bridge[-4:], self.uid[:6])
        self.pod_ip = None
        self.containers = [Container(spec) for spec in pod["spec"]["containers"]]
        self.deleting = threading.Event()
        self.gone = threading.Event()
        self.sent_status = None
        self.status_retry = Retry("status of pod %s/%s" % (self.namespace, self.name))
        self.started_at = now_rfc3339()
        self.conditions = {}

    # ---- the network
    def _network_up(self):
        self.pod_ip = self.runner.allocate_ip()
        ip("netns", "add", self.netns)
        ip("link", "add", self.veth, "type", "veth", "peer", "name", self.veth + "p")
        ip("link", "set", self.veth + "p", "netns", self.netns)
        ip("link", "set", self.veth, "master", self.runner.bridge, "up")
        ip("-n", self.netns, "link", "set", self.veth + "p", "name", "eth0")
        ip("-n", self.netns, "addr", "add", "%s/%d" % (self.pod_ip, self.runner.prefix), "dev", "eth0")
        ip("-n", self.netns, "link", "set", "eth0", "up")
        ip("-n", self.netns, "link", "set", "lo", "up")
        ip("-n", self.netns, "route", "add", "default", "via", self.runner.gateway)

    def _network_down(self):
        ip("netns", "del", self.netns, check=False)
        ip("link", "del", self.veth, check=False)
        if self.pod_ip:
            self.runner.release_ip(self.pod_ip)

    # ---- volumes
    def _write(self, directory, files, mode=0o644):
        for relative, content in files.items():
            path = directory / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content if isinstance(content, bytes) else content.encode())
            os.chmod(path, mode)

    def _keys(self, kind, name, optional):
        """The data of a ConfigMap or Secret as bytes by key (None while a required one is missing)."""
        status, body = self.runner.api.request("GET", "/api/v1/namespaces/%s/%s/%s" % (self.namespace, kind, name),
                                               expect=(200, 404))
        if status == 404:
            return {} if optional else None
        if kind == "secrets":
            return {key: base64.b64decode(value) for key, value in (body.get("data") or {}).items()}
        data = {key: value.encode() for key, value in (body.get("data") or {}).items()}
        data.update({key: base64.b64decode(value) for key, value in (body.get("binaryData") or {}).items()})
        return data

    @staticmethod
    def _select(data, items):
        if not items:
            return data
        return {item.get("path", item["key"]): data[item["key"]] for item in items if item["key"] in data}

    def _field(self, path):
        values = {"metadata.name": self.name, "metadata.namespace": self.namespace, "metadata.uid": self.uid,
                  "spec.nodeName": self.pod["spec"].get("nodeName", ""), "spec.serviceAccountName":
                  self.pod["spec"].get("serviceAccountName", "default"), "status.podIP": self.pod_ip or "",
                  "status.hostIP": self.runner.gateway}
        if path in values:
            return values[path]
        match = re.match(r"metadata\.(labels|annotations)\['(.+)'\]", path)
        if match:
            return (self.pod["metadata"].get(match.group(1)) or {}).get(match.group(2), "")
        raise ValueError("fieldRef %s is not supported by the test bed" % path)

    def _token(self, source):
        account = self.pod["spec"].get("serviceAccountName") or "default"
        spec = {"expirationSeconds": int(source.get("expirationSeconds", 3607)),
                "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": self.name, "uid": self.uid}}
        if source.get("audience"):
            spec["audiences"] = [source["audience"]]
        _status, body = self.runner.api.request(
            "POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (self.namespace, account),
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
        return body["status"]["token"]

    def _volumes(self):
        """Every volume of the Pod written under the Pod's directory: {name: path} (None while one cannot be yet)."""
        paths = {}
        for volume in self.pod["spec"].get("volumes") or ():
            path = self.dir / "volumes" / volume["name"]
            path.mkdir(parents=True, exist_ok=True)
            paths[volume["name"]] = str(path)
            if "emptyDir" in volume:
                continue
            if "hostPath" in volume:
                paths[volume["name"]] = volume["hostPath"]["path"]
                continue
            if "configMap" in volume or "secret" in volume:
                kind = "configMap" if "configMap" in volume else "secret"
                source = volume[kind]
                data = self._keys("configmaps" if kind == "configMap" else "secrets",
                                  source.get("name") or source.get("secretName"), source.get("optional", False))
                if data is None:
                    return None
                self._write(path, self._select(data, source.get("items")), source.get("defaultMode", 0o644))
                continue
            if "projected" in volume:
                files = {}
                for source in volume["projected"].get("sources") or ():
                    if "serviceAccountToken" in source:
                        files[source["serviceAccountToken"]["path"]] = self._token(source["serviceAccountToken"])
                    elif "configMap" in source or "secret" in source:
                        kind = "configMap" if "configMap" in source else "secret"
                        data = self._keys("configmaps" if kind == "configMap" else "secrets",
                                          source[kind]["name"], source[kind].get("optional", False))
                        if data is None:
                            return None
                        files.update(self._select(data, source[kind].get("items")))
                    elif "downwardAPI" in source:
                        for item in source["downwardAPI"].get("items") or ():
                            files[item["path"]] = self._field(item["fieldRef"]["fieldPath"])
                self._write(path, files, volume["projected"].get("defaultMode", 0o644))
                continue
            raise ValueError("volume %s of pod %s/%s: this kind is not supported by the test bed"
                             % (volume["name"], self.namespace, self.name))
        return paths

    def _env(self, container, image_env):
        env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOSTNAME": self.name,
               "HOME": "/root", "KUBERNETES_SERVICE_HOST": self.runner.gateway, "KUBERNETES_SERVICE_PORT": "443",
               "KUBERNETES_SERVICE_PORT_HTTPS": "443"}
        env.update(image_env)
        for variable in container.get("env") or ():
            source = variable.get("valueFrom")
            if source is None:
                env[variable["name"]] = expand(variable.get("value", ""), env)
            elif "fieldRef" in source:
                env[variable["name"]] = self._field(source["fieldRef"]["fieldPath"])
            elif "configMapKeyRef" in source or "secretKeyRef" in source:
                kind = "configMapKeyRef" if "configMapKeyRef" in source else "secretKeyRef"
                ref = source[kind]
                data = self._keys("configmaps" if kind == "configMapKeyRef" else "secrets", ref["name"],
                                  ref.get("optional", False)) or {}
                if ref["key"] in data:
                    env[variable["name"]] = data[ref["key"]].decode()
                elif not ref.get("optional", False):
                    return None  # CreateContainerConfigError: the kubelet starts it once the key exists
        return env

    # ---- containers
    def _start(self, container, volumes):
        argv, image_env = container_argv(container.spec, self.runner.images)
        env = self._env(container.spec, image_env)
        if env is None:
            container.next_start = time.monotonic() + 1
            return
        argv = [expand(arg, env) for arg in argv]
        mounts = []
        for mount in container.spec.get("volumeMounts") or ():
            source = volumes[mount["name"]]
            if mount.get("subPath"):
                source = os.path.join(source, mount["subPath"])
            mounts.append({"source": source, "target": mount["mountPath"], "readOnly": bool(mount.get("readOnly"))})
        security = container.spec.get("securityContext") or {}
        scratch = self.dir / "scratch" / ("%s-%d" % (container.name, container.restart_count))
        scratch.mkdir(parents=True, exist_ok=True)
        spec = {"argv": argv, "env": env, "workingDir": container.spec.get("workingDir") or "/", "mounts": mounts,
                "hosts": str(self.dir / "hosts"), "scratch": str(scratch),
                "imagePaths": sorted({str(REPO_ROOT), sys.prefix, sys.base_prefix}),
                "readOnlyRootFilesystem": bool(security.get("readOnlyRootFilesystem")),
                "hostname": (self.pod["spec"].get("hostname") or self.name)[:63]}
        spec_path = self.dir / ("%s.json" % container.name)
        spec_path.write_text(json.dumps(spec))
        log_path = self.dir / ("%s.log" % container.name)
        with open(log_path, "ab") as log:
            container.popen = subprocess.Popen(
                ["ip", "netns", "exec", self.netns, sys.executable, "-m", "testenv.cluster.podexec", str(spec_path)],
                cwd=str(REPO_ROOT), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env={"PATH": env["PATH"], "PYTHONPATH": str(REPO_ROOT)}, start_new_session=True,
                preexec_fn=die_with_parent)
        container.started_at = now_rfc3339()
        started = time.monotonic()
        container.probes = {kind: Probe(kind, container.spec[kind + "Probe"], container.spec, started)
                            for kind in ("startup", "liveness", "readiness") if container.spec.get(kind + "Probe")}
        container.started = "startup" not in container.probes
        LOG.info("started %s/%s container %s (restart %d) pid %s", self.namespace, self.name, container.name,
                 container.restart_count, container.popen.pid)

    def _record_exit(self, container, reason):
        code = container.popen.returncode
        container.last_state = {"terminated": {"exitCode": code if code is not None and code >= 0 else 137,
                                               "reason": reason, "startedAt": container.started_at,
                                               "finishedAt": now_rfc3339()}}
        delay = 0.0 if container.restart_count == 0 else min(BACKOFF_MAX,
                                                             BACKOFF_START * 2 ** (container.restart_count - 1))
        container.restart_count += 1
        container.next_start = time.monotonic() + delay
        container.popen = None
        container.probes = {}
        LOG.info("container %s of %s/%s ended (%s); restart %d in %.0fs", container.name, self.namespace,
                 self.name, reason, container.restart_count, delay)

    def _grace(self):
        """The Pod's grace period: the deletion's own (metadata.deletionGracePeriodSeconds) once it is being
        deleted, else spec.terminationGracePeriodSeconds."""
        seconds = self.pod["metadata"].get("deletionGracePeriodSeconds")
        if seconds is None:
            seconds = self.pod["spec"].get("terminationGracePeriodSeconds")
        return float(30 if seconds is None else seconds)

    def _kill_all(self, grace, containers=None):
        """SIGTERM to every container (or those given) at once, `grace` seconds for all of them, then SIGKILL, as the
        kubelet does."""
        live = [container for container in (self.containers if containers is None else containers)
                if container.alive()]
        for container in live:
            signal_group(container.popen, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for container in live:
            try:
                container.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                signal_group(container.popen, signal.SIGKILL)
                container.popen.wait()

    def _tick(self, volumes):
        """Start what is due, run the probes that are due, restart what died or failed liveness."""
        now = time.monotonic()
        for container in self.containers:
            if container.popen is not None and not container.alive():
                self._record_exit(container, "Error" if container.popen.returncode else "Completed")
            if container.popen is None:
                if now >= container.next_start:
                    self._start(container, volumes)
                if container.popen is None:
                    continue
            for kind in ("startup", "liveness", "readiness"):
                probe = container.probes.get(kind)
                if probe is None or now < probe.due or (kind != "startup" and not container.started):
                    continue
                if kind == "startup" and container.started:
                    continue
                probe.due = now + probe.period
                probe.run(self.pod_ip, container.popen.pid)
                failed = probe.failures >= probe.failure_threshold
                if kind == "startup" and probe.passing:
                    container.started = True
                if kind in ("startup", "liveness") and failed:
                    LOG.info("%s probe of %s/%s container %s failed %d times (%s): killing it", kind,
                             self.namespace, self.name, container.name, probe.failures, probe.last_message)
                    self._kill_all(self._grace(), [container])
                    self._record_exit(container, "Error")
                    self.runner.event(self, "Warning", "Unhealthy", "%s probe failed: %s" % (
                        kind.capitalize(), probe.last_message))
                    break

    # ---- status
    def _condition(self, kind, status):
        value = "True" if status else "False"
        previous = self.conditions.get(kind)
        if previous is None or previous["status"] != value:
            self.conditions[kind] = {"type": kind, "status": value, "lastProbeTime": None,
                                     "lastTransitionTime": now_rfc3339()}
        return self.conditions[kind]

    def status(self):
        ready = all(container.ready() for container in self.containers)
        statuses = []
        for container in self.containers:
            image = container.spec.get("image", "")
            statuses.append({
                "name": container.name, "image": image, "imageID": "testenv://" + image,
                "containerID": "testenv://%s/%s/%d" % (self.uid, container.name, container.restart_count),
                "ready": container.ready(), "started": container.alive() and container.started,
                "restartCount": container.restart_count, "state": container.state(),
                "lastState": container.last_state})
        conditions = [self._condition("PodReadyToStartContainers", self.pod_ip is not None),
                      self._condition("Initialized", True), self._condition("ContainersReady", ready),
                      self._condition("Ready", ready), self._condition("PodScheduled", True)]
        status = {"phase": "Running" if self.pod_ip else "Pending", "conditions": conditions,
                  "hostIP": self.runner.gateway, "hostIPs": [{"ip": self.runner.gateway}],
                  "startTime": self.started_at, "containerStatuses": statuses}
        if self.pod_ip:
            status.update(podIP=self.pod_ip, podIPs=[{"ip": self.pod_ip}])
        return status

    def observed(self, pod):
        """The Pod as the API holds it now. When its status is not what this sent last, another writer changed it (the
        node lifecycle controller marks the Pods of a node whose heartbeats stopped NotReady, as in a long outage of
        kube-apiserver): the next tick sends it again, as the kubelet's status manager does."""
        self.pod = pod
        if self.sent_status is not None and status_gist(pod.get("status")) != status_gist(self.sent_status):
            self.sent_status = None

    def _send_status(self):
        status = self.status()
        if status == self.sent_status:
            return
        code, _body = self.runner.api.request(
            "PATCH", "/api/v1/namespaces/%s/pods/%s/status" % (self.namespace, self.name),
            body={"metadata": {"uid": self.uid}, "status": status}, expect=(200, 404, 409))
        if code == 200:
            self.sent_status = status

    # ---- life
    def run(self):
        try:
            self._run()
        except Exception:  # pylint: disable=broad-except
            LOG.exception("pod %s/%s failed in the test bed", self.namespace, self.name)
            self._kill_all(2)
            try:  # what is left of it is not Ready: out of its Services, as a kubelet would report it
                self._send_status()
            except Exception:  # pylint: disable=broad-except
                LOG.exception("the last status of pod %s/%s was not sent", self.namespace, self.name)
        finally:
            self._kill_all(2)
            self._network_down()
            self.gone.set()

    def _run(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        volumes = None
        retry = Retry("volumes of pod %s/%s" % (self.namespace, self.name))
        while volumes is None and not self.deleting.is_set() and not self.runner.stopping.is_set():
            try:
                volumes = self._volumes()
                retry.succeeded()
            except (RuntimeError, OSError) as error:  # a Secret, ConfigMap or token not read: kube-apiserver away
                self.runner.stopping.wait(retry.failed(error))
                continue
            if volumes is None:
                time.sleep(0.5)
        if volumes is None:
            return self._finish_deletion()
        self._network_up()
        (self.dir / "hosts").write_text(
            "127.0.0.1 localhost\n::1 localhost\n%s %s\n%s kubernetes kubernetes.default kubernetes.default.svc "
            "kubernetes.default.svc.cluster.local\n" % (self.pod_ip, self.name, self.runner.gateway))
        ticks = Retry("containers of pod %s/%s" % (self.namespace, self.name))
        while not self.runner.stopping.is_set():
            if self.deleting.is_set():
                return self._finish_deletion()
            try:
                self._tick(volumes)
                ticks.succeeded()
            except (RuntimeError, OSError) as error:  # an API read lost (a container's env): the next tick tries again
                ticks.failed(error)
            if self.status_retry.ready():
                try:
                    self._send_status()
                    self.status_retry.succeeded()
                except (RuntimeError, OSError) as error:
                    self.status_retry.failed(error)
            time.sleep(TICK)
        return None

    def _finish_deletion(self):
        self._kill_all(self._grace())
        retry = Retry("deletion of pod %s/%s" % (self.namespace, self.name))
        while not self.runner.stopping.is_set():  # the containers are gone; the Pod leaves the API once it answers
            try:
                self.runner.api.request(
                    "DELETE", "/api/v1/namespaces/%s/pods/%s" % (self.namespace, self.name),
                    body={"gracePeriodSeconds": 0, "preconditions": {"uid": self.uid}}, expect=(200, 404, 409))
                return retry.succeeded()
            except (RuntimeError, OSError) as error:
                self.runner.stopping.wait(retry.failed(error))
        return None


class Runner:
    def __init__(self, args):
        self.api = Api(args.kubeconfig)
        self.hybrid = args.kwok_nodes  # the Pods of known images on every KWOK node; KWOK keeps the nodes
        self.node = None if self.hybrid else args.node
        self.kwok_nodes = {}  # hybrid: node name -> whether KWOK manages it
        self.bridge, self.gateway, self.prefix = args.bridge, args.gateway, args.prefix
        self.state_dir = Path(args.state_dir)
        self.apiserver_port = args.apiserver_port
        self.health_port = args.health_port
        self.images = dict(IMAGES)
        if args.images:
            self.images.update(json.loads(Path(args.images).read_text()))
        self.network = ipaddress.ip_network("%s/%d" % (self.gateway, self.prefix), strict=False)
        self.free_ips = [str(address) for address in self.network.hosts() if str(address) != self.gateway]
        self.ip_lock = threading.Lock()
        self.pods = {}
        self.stopping = threading.Event()

    def allocate_ip(self):
        with self.ip_lock:
            return self.free_ips.pop(0)

    def release_ip(self, address):
        with self.ip_lock:
            self.free_ips.append(address)

    def event(self, pod_run, kind, reason, message):
        body = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"generateName": pod_run.name + ".", "namespace": pod_run.namespace},
                "involvedObject": {"kind": "Pod", "namespace": pod_run.namespace, "name": pod_run.name,
                                   "uid": pod_run.uid, "apiVersion": "v1"},
                "type": kind, "reason": reason, "message": message, "source": {"component": "kubelet",
                                                                               "host": pod_run.pod["spec"]["nodeName"]},
                "firstTimestamp": now_rfc3339(), "lastTimestamp": now_rfc3339(), "count": 1}
        try:
            self.api.request("POST", "/api/v1/namespaces/%s/events" % pod_run.namespace, body=body, expect=None)
        except ApiUnreachable as error:  # the kubelet's event recorder drops what it cannot send, too
            LOG.warning("event %s of pod %s/%s not sent: %s", reason, pod_run.namespace, pod_run.name, error)

    # ---- the node
    def register(self):
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": self.node, "labels": {
                    "kubernetes.io/hostname": self.node, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                    "testenv.hypershift.openshift.io/pods": "netns"}},
                "spec": {"podCIDR": str(self.network), "podCIDRs": [str(self.network)]}}
        self.api.request("POST", "/api/v1/nodes", body=node, expect=(201, 409))
        self.heartbeat()

    def heartbeat(self):
        stamp = now_rfc3339()
        capacity = {"cpu": "16", "memory": "64Gi", "pods": "250", "ephemeral-storage": "100Gi"}
        conditions = [{"type": kind, "status": "False", "reason": reason, "lastHeartbeatTime": stamp,
                       "lastTransitionTime": stamp}
                      for kind, reason in (("MemoryPressure", "KubeletHasSufficientMemory"),
                                           ("DiskPressure", "KubeletHasNoDiskPressure"),
                                           ("PIDPressure", "KubeletHasSufficientPID"))]
        conditions.append({"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": stamp,
                           "lastTransitionTime": stamp, "message": "testenv netns kubelet is posting ready status"})
        status = {"capacity": capacity, "allocatable": capacity, "conditions": conditions,
                  "addresses": [{"type": "InternalIP", "address": self.gateway},
                                {"type": "Hostname", "address": self.node}],
                  "nodeInfo": {"kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": KUBELET_VERSION,
                               "operatingSystem": "linux", "architecture": "amd64", "containerRuntimeVersion":
                               "testenv://netns", "osImage": "testenv", "kernelVersion": os.uname().release,
                               "machineID": "", "systemUUID": "", "bootID": ""}}
        self.api.request("PATCH", "/api/v1/nodes/%s/status" % self.node, body={"status": status},
                         content_type="application/merge-patch+json")
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                 "metadata": {"name": self.node, "namespace": "kube-node-lease"},
                 "spec": {"holderIdentity": self.node, "leaseDurationSeconds": 40, "renewTime": now_micro()}}
        leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
        code, _body = self.api.request("PATCH", leases + "/" + self.node, body={"spec": lease["spec"]},
                                       expect=(200, 404))
        if code == 404:
            self.api.request("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", body=lease,
                             expect=(201, 409))

    def _heartbeats(self):
        retry = Retry("heartbeat of node %s" % self.node)
        while not self.stopping.wait(10):
            try:
                self.heartbeat()
                retry.succeeded()
            except (RuntimeError, OSError) as error:
                retry.failed(error)

    # ---- pods
    def _kwok_node(self, name):
        """Hybrid: whether KWOK manages the node (the annotation its --manage-nodes-with-annotation-selector takes),
        asked once per node that exists."""
        if name not in self.kwok_nodes:
            code, node = self.api.request("GET", "/api/v1/nodes/" + name, expect=(200, 404))
            if code == 404:
                return False
            self.kwok_nodes[name] = (node["metadata"].get("annotations") or {}).get(KWOK_NODE_ANNOTATION) == "fake"
        return self.kwok_nodes[name]

    def _pod_event(self, kind, pod):
        uid = pod["metadata"]["uid"]
        run = self.pods.get(uid)
        if run is None and self.hybrid and not (runs_for_real(pod, self.images)
                                                and self._kwok_node(pod["spec"]["nodeName"])):
            return
        if kind == "DELETED":
            if run is not None:
                run.deleting.set()
                self.pods.pop(uid, None)
            return
        if run is not None and run.gone.is_set():
            if pod["metadata"].get("deletionTimestamp"):  # its thread ended: finish the deletion for it
                self._delete_now(pod)
                self.pods.pop(uid, None)
            return
        if run is None:
            if pod["metadata"].get("deletionTimestamp"):  # never started here: nothing to stop
                self._delete_now(pod)
                return
            run = self.pods[uid] = PodRun(self, pod)
            run.start()
            return
        run.observed(pod)
        if pod["metadata"].get("deletionTimestamp"):
            run.deleting.set()

    def _delete_now(self, pod):
        path = "/api/v1/namespaces/%s/pods/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"])
        self.api.request("DELETE", path,
                         body={"gracePeriodSeconds": 0, "preconditions": {"uid": pod["metadata"]["uid"]}},
                         expect=(200, 404, 409))

    def _watch_pods(self):
        """List and watch the Pods of this node (hybrid: of KWOK's nodes) until stopped; list again after a watch ends,
        after kube-apiserver went away only once it answers again (Retry)."""
        # hybrid: every bound Pod (_pod_event keeps those of known images on KWOK's nodes)
        selector = urllib.parse.quote("spec.nodeName!=" if self.hybrid else "spec.nodeName=" + self.node)
        retry = Retry("list and watch of the pods")
        while not self.stopping.is_set():
            try:
                _status, listing = self.api.request("GET", "/api/v1/pods?fieldSelector=" + selector)
                retry.succeeded()
                seen = set()
                for pod in listing["items"]:
                    seen.add(pod["metadata"]["uid"])
                    self._pod_event("ADDED", pod)
                for uid, run in list(self.pods.items()):
                    if uid not in seen:
                        run.deleting.set()
                version = listing["metadata"]["resourceVersion"]
                for event in self.api.watch("/api/v1/pods?watch=1&allowWatchBookmarks=true&fieldSelector=%s"
                                            "&resourceVersion=%s&timeoutSeconds=300" % (selector, version), 300):
                    if self.stopping.is_set():
                        return
                    if event["type"] == "ERROR":
                        break
                    if event["type"] != "BOOKMARK":
                        self._pod_event(event["type"], event["object"])
            except (RuntimeError, OSError) as error:
                self.stopping.wait(retry.failed(error))
            except Exception:  # pylint: disable=broad-except
                LOG.exception("pod watch failed; listing again")
                self.stopping.wait(retry.failed("see above"))

    # ---- health
    def _serve_health(self):
        runner = self

        class Health(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                body = json.dumps({"pods": len([run for run in list(runner.pods.values()) if not run.gone.is_set()])})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *_args):
                pass

        server = HTTPServer(("127.0.0.1", self.health_port), Health)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    def run(self):
        for image, start in sorted(self.images.items()):
            LOG.info("image %s runs %s (%s)", image, " ".join(start["entrypoint"]), start.get("from", "given"))
        relay = Relay((self.gateway, 443), ("127.0.0.1", self.apiserver_port))
        threading.Thread(target=relay.serve_forever, daemon=True).start()
        if not self.hybrid:
            self.register()
            threading.Thread(target=self._heartbeats, daemon=True).start()
        health = self._serve_health()
        watcher = threading.Thread(target=self._watch_pods, daemon=True)
        watcher.start()
        self.stopping.wait()
        for run in list(self.pods.values()):
            run.join(timeout=10)
        health.shutdown()
        relay.shutdown()


def status_gist(status):
    """What of a Pod's status the kubelet owns and another writer may change: phase, pod IP, the kubelet's
    conditions, each container's readiness and restarts."""
    status = status or {}
    return (status.get("phase"), status.get("podIP"),
            sorted((condition["type"], condition["status"]) for condition in status.get("conditions") or ()
                   if condition["type"] in KUBELET_CONDITIONS),
            sorted((container["name"], container.get("ready"), container.get("restartCount"))
                   for container in status.get("containerStatuses") or ()))


def containers_named(server, name):
    """{pod namespace/name: container status} of every container called `name` in the live Pods of the cluster (what
    a test or the demo checks at its end: Ready, restartCount)."""
    pods = server.request("GET", "/api/v1/pods").json()["items"]
    return {"%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"]): status
            for pod in pods if not pod["metadata"].get("deletionTimestamp")
            for status in (pod.get("status") or {}).get("containerStatuses") or () if status["name"] == name}


def get_in_pod(server, pod, url, timeout=30):
    """GET `url` from inside the Pod's network namespace, as its containers would: (status, body)."""
    netns = "%s-%s" % (server.cluster.pod_network.bridge, pod["metadata"]["uid"][:8])
    script = ("import sys, urllib.request, urllib.error\n"
              "try:\n    r = urllib.request.urlopen(sys.argv[1], timeout=%d); print(r.status); print(r.read().decode())\n"
              "except urllib.error.HTTPError as e:\n    print(e.code); print(e.read().decode())\n" % timeout)
    result = subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c", script, url], capture_output=True,
                            text=True, timeout=timeout + 30, check=True)
    status, _newline, body = result.stdout.partition("\n")
    return int(status), body


def unwell(statuses):
    """The entries of containers_named() that are not Ready or were restarted, one line each."""
    return ["%s: ready %s, restartCount %d%s" % (
        pod, status["ready"], status["restartCount"],
        (", last state %s" % json.dumps(status["lastState"])) if status.get("lastState") else "")
        for pod, status in sorted(statuses.items()) if not status["ready"] or status["restartCount"]]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m testenv.cluster.pods")
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--node", default="netns-node-0", help="the node this registers and runs every Pod of")
    parser.add_argument("--kwok-nodes", action="store_true",
                        help="hybrid: run only the Pods of known images, on every node KWOK manages")
    parser.add_argument("--bridge", required=True)
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--prefix", type=int, default=16)
    parser.add_argument("--apiserver-port", type=int, required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--health-port", type=int, required=True)
    parser.add_argument("--images", help="JSON file: image repository -> {entrypoint, env}")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    runner = Runner(args)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: runner.stopping.set())
    runner.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
