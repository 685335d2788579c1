"""Helpers for the proxy's end-to-end tests: private CRDs, the shim and the proxy as subprocesses."""
import base64
import glob
import json
import os
import subprocess
import sys
import time
import urllib.request

import yaml

from ansible_collections.hypershift.private_capi.plugins.module_utils.crds import render as crd_render
from testenv import certs, upstream, yamlio
from testenv.cluster.cluster import free_port, terminate
from testenv import REPO_ROOT

CAPI_CRDS = sorted(glob.glob(os.path.join(upstream.CAPI_CRDS, "*.yaml")))
AWS_CRDS = sorted(glob.glob(os.path.join(upstream.AWS_CRDS, "*.yaml")))
# HyperShift labels its provider CRDs with the CAPI contract (openshift/hypershift cmd/install/assets/crds); CAPI reads them.
CONTRACT_LABELS = {"cluster.x-k8s.io/v1beta2": "v1beta2"}
ONLY_V1BETA2 = ("machines",)  # served only as v1beta2 (v1beta1 clients need the proxy's adaptation)
ONLY_V1BETA1 = ("machinesets",)  # served and stored only as v1beta1 (like hypershift release-4.22)
START_TIMEOUT = 30.0


def _documents(paths):
    for path in paths:
        with open(path) as handle:
            for index, document in enumerate(yamlio.documents(handle)):
                if document:
                    yield os.path.basename(path), index, document


def _only(crd, version):
    for entry in crd["spec"]["versions"]:
        entry["served"] = entry["name"] == version
        entry["storage"] = entry["name"] == version
    crd["spec"]["conversion"] = {"strategy": "None"}


def render_private_crds(webhook_url=None, ca_bundle_pem=None):
    """The private twins of the CAPI core CRDs and the AWS provider CRDs, as crd_render renders them."""
    options = crd_render.RenderOptions(webhook_url=webhook_url, webhook_ca_bundle=ca_bundle_pem)
    result = crd_render.render_all(_documents(CAPI_CRDS + AWS_CRDS), options)
    crds = []
    for crd in result.rendered:
        plural = crd["spec"]["names"]["plural"]
        if crd["spec"]["group"].startswith("infrastructure."):
            crd["metadata"].setdefault("labels", {}).update(CONTRACT_LABELS)
        if plural in ONLY_V1BETA2 and crd["spec"]["group"] == "cluster.hypershift.openshift.io":
            _only(crd, "v1beta2")
        if plural in ONLY_V1BETA1 and crd["spec"]["group"] == "cluster.hypershift.openshift.io":
            _only(crd, "v1beta1")
        crds.append(crd)
    return crds


def write_seed(directory, documents):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "seed.yaml")
    with open(path, "w") as handle:
        yamlio.dump_all(documents, handle)
    return path


def write_tls(directory):
    """(cert path, key path, CA PEM) for a 127.0.0.1 serving certificate (IP SAN 127.0.0.1, as kube-apiserver
    verifies a webhook at https://127.0.0.1:PORT), signed by a CA of its own: the CA PEM is the CRDs' caBundle."""
    material = certs.generate()
    cert_path = os.path.join(directory, "shim.crt")
    key_path = os.path.join(directory, "shim.key")
    with open(cert_path, "w") as handle:
        handle.write(material["cert"])
    with open(key_path, "w") as handle:
        handle.write(material["key"])
    return cert_path, key_path, material["ca_cert"]


def create_namespace(server, name):
    """Create a Namespace on the server (201, or 409 when it exists)."""
    response = server.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                             "metadata": {"name": name}})
    assert response.status in (201, 409), response
    return name


def wait_served(server, crds, timeout=START_TIMEOUT):
    """Until every served version of every CRD answers a LIST with 200: a new CRD's watch cache answers 429
    ("storage is (re)initializing") for a moment after it is Established."""
    pending = ["/apis/%s/%s/%s" % (crd["spec"]["group"], version["name"], crd["spec"]["names"]["plural"])
               for crd in crds for version in crd["spec"]["versions"] if version.get("served")]
    deadline = time.monotonic() + timeout
    while pending:
        pending = [path for path in pending if server.request("GET", path + "?limit=1").status != 200]
        if pending and time.monotonic() > deadline:
            raise RuntimeError("not served after %ss: %s" % (timeout, ", ".join(pending)))
        if pending:
            time.sleep(0.1)


class Process(object):
    """A `python -m capi_proxy ...` subprocess with its stderr in a file."""

    def __init__(self, args, log_path, url):
        self.args = args
        self.log_path = log_path
        self.url = url
        log = open(log_path, "ab")
        self.process = subprocess.Popen([sys.executable, "-m", "capi_proxy"] + args, cwd=REPO_ROOT,
                                        stdout=log, stderr=subprocess.STDOUT)
        log.close()

    def log(self):
        with open(self.log_path, errors="replace") as handle:
            return handle.read()

    def log_records(self):
        return [json.loads(line) for line in self.log().splitlines() if line.startswith("{")]

    def wait_log_records(self, wanted, timeout=5.0):
        """The log records for which wanted(record) holds, once there is one (the proxy writes a request's line just
        after its answer, at the next turn of its event loop); [] after timeout seconds without."""
        deadline = time.monotonic() + timeout
        while True:
            records = [record for record in self.log_records() if wanted(record)]
            if records or time.monotonic() > deadline:
                return records
            time.sleep(0.02)

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        return terminate(self.process)


def wait_healthy(process):
    """process once its /healthz answers 200 (processes start in parallel and are awaited one by one)."""
    health_url = process.health_url
    context = getattr(process, "health_context", None)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if not process.alive():
            raise RuntimeError("%s exited (%s):\n%s" % (process.args, process.process.returncode, process.log()))
        try:
            with urllib.request.urlopen(health_url, timeout=2, context=context) as response:
                if response.status == 200:
                    return process
        except OSError:
            pass
        if time.monotonic() > deadline:
            process.stop()
            raise RuntimeError("%s not healthy after %ss:\n%s" % (process.args, START_TIMEOUT, process.log()))
        time.sleep(0.05)


def start_proxy(workdir, kubeconfig, *extra, name="proxy", wait=True):
    port = free_port()
    metrics_port = free_port()
    args = ["--kubeconfig", kubeconfig, "--listen", "127.0.0.1:%d" % port,
            "--metrics-listen", "127.0.0.1:%d" % metrics_port] + list(extra)
    process = Process(args, os.path.join(str(workdir), name + ".log"), "http://127.0.0.1:%d" % port)
    process.metrics_url = "http://127.0.0.1:%d/metrics" % metrics_port
    process.health_url = process.url + "/healthz"
    return wait_healthy(process) if wait else process


def start_shim(workdir, cert_path, key_path, ca_pem, *extra, port=None, wait=True, name=None):
    import ssl  # pylint: disable=import-outside-toplevel
    port = port or free_port()
    args = ["shim", "--listen", "127.0.0.1:%d" % port, "--tls-cert", cert_path, "--tls-key", key_path] + list(extra)
    process = Process(args, os.path.join(str(workdir), "%s.log" % (name or "shim-%d" % port)),
                      "https://127.0.0.1:%d" % port)
    process.health_url = process.url + "/healthz"
    process.health_context = ssl.create_default_context(cadata=ca_pem)
    return wait_healthy(process) if wait else process


def proxy_kubeconfig(directory, proxy_url, token, name="through-proxy"):
    """A kubeconfig for kubectl and the Python client that points at the proxy (plain HTTP, bearer token)."""
    path = os.path.join(str(directory), name + ".kubeconfig")
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "proxy",
              "clusters": [{"name": "proxy", "cluster": {"server": proxy_url}}],
              "users": [{"name": "user", "user": {"token": token}}],
              "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "user", "namespace": "default"}}]}
    with open(path, "w") as handle:
        yaml.safe_dump(config, handle)
    return path


def http(method, url, body=None, token=None, headers=None, timeout=30):
    """(status, headers, body bytes) of one plain HTTP request (no redirects followed)."""
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", "Bearer " + token)
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def b64(text):
    return base64.b64encode(text.encode()).decode()


def raw_request(url, method, path, token=None):
    """(status, body) of a request with any method and a path sent byte for byte (http.client normalises nothing)."""
    import http.client  # pylint: disable=import-outside-toplevel
    host, port = url[len("http://"):].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        if token:
            connection.putheader("Authorization", "Bearer " + token)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()
