"""Start the local API server in a subprocess for tests, and talk to it.

    server = start_server(tmp_path, seeds=[...], state_file=None, extra_args=())
    server.kubeconfig, server.url, server.admin_token, server.ca_file
    server.request("GET", "/api/v1/namespaces")      -> Response(status, headers, body bytes, .json())
    server.kubectl("get", "ns", "-o", "json")         -> CompletedProcess (check=True by default)
    server.token_for("alice")                          -> bearer token of a static test user
    server.add_fault({...}); server.clear_faults(); server.request_counts(); server.reset_requests()
    server.stop()                                      -> exit code (0 on a clean SIGTERM shutdown)

The pytest fixture `kubeapi` (module scope) lives in tests/integration/conftest.py.
"""
import base64
import os
import ssl
import subprocess
import sys
import tempfile
import time

import yaml

from testenv.client import ServerClient
from testenv.cluster.cluster import terminate

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
START_TIMEOUT = 60.0


class Server(ServerClient):
    def __init__(self, process, workdir, kubeconfig, log_path, args):
        self.process = process
        self.workdir = workdir
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.args = args
        config = yaml.safe_load(open(kubeconfig))
        cluster = config["clusters"][0]["cluster"]
        self.url = cluster["server"]
        self.host, port = self.url[len("https://"):].rsplit(":", 1)
        self.port = int(port)
        self.admin_token = config["users"][0]["user"]["token"]
        self.ca_file = os.path.join(workdir, "ca.crt")
        with open(self.ca_file, "wb") as handle:
            handle.write(base64.b64decode(cluster["certificate-authority-data"]))
        self.ssl_context = ssl.create_default_context(cafile=self.ca_file)
        self.kubectl_cache = os.path.join(workdir, "kubectl-cache")
        self._tokens = None

    # --- admin endpoints --------------------------------------------------------------------------
    def _admin(self, method, tail, body=None):
        response = self.request(method, "/kubeapi/v1/" + tail, body)
        if response.status >= 300:
            raise AssertionError("admin %s %s failed: %r" % (method, tail, response))
        return response.json()

    def token_for(self, username):
        if self._tokens is None:
            self._tokens = self._admin("GET", "state")["tokens"]
        return self._tokens[username]

    def state(self):
        return self._admin("GET", "state")

    def add_fault(self, rule):
        return self._admin("POST", "faults", rule)

    def clear_faults(self):
        return self._admin("DELETE", "faults")

    def request_counts(self, since=0):
        return self._admin("GET", "requests?since=%d" % since)

    def reset_requests(self):
        return self._admin("DELETE", "requests")

    def log(self):
        with open(self.log_path, "r", errors="replace") as handle:
            return handle.read()

    def alive(self):
        return self.process.poll() is None

    def stop(self, timeout=20):
        return terminate(self.process, timeout)


def start_server(tmp_path, seeds=(), state_file=None, extra_args=(), port=0, name="kubeapi"):
    """Start `python -m tests.kubeapi serve` and wait for its kubeconfig; raises with the log on failure."""
    workdir = os.path.join(str(tmp_path), name)
    os.makedirs(workdir, exist_ok=True)
    kubeconfig = os.path.join(workdir, "kubeconfig")
    if os.path.exists(kubeconfig):
        os.unlink(kubeconfig)
    log_path = os.path.join(workdir, "server.log")
    args = [sys.executable, "-m", "tests.kubeapi", "serve", "--kubeconfig", kubeconfig]
    if port:
        args += ["--port", str(port)]
    for seed in seeds:
        args += ["--seed", str(seed)]
    if state_file:
        args += ["--state-file", str(state_file)]
    args += list(extra_args)
    log = open(log_path, "ab")
    process = subprocess.Popen(args, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    deadline = time.monotonic() + START_TIMEOUT
    while not os.path.exists(kubeconfig):
        if process.poll() is not None:
            raise RuntimeError("kubeapi exited with %s before it was ready:\n%s"
                               % (process.returncode, open(log_path, errors="replace").read()))
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("kubeapi was not ready after %ss:\n%s"
                               % (START_TIMEOUT, open(log_path, errors="replace").read()))
        time.sleep(0.05)
    return Server(process, workdir, kubeconfig, log_path, args)


def temp_server(**kwargs):
    """start_server in a fresh temporary directory (scripts and benchmarks)."""
    return start_server(tempfile.mkdtemp(prefix="kubeapi-"), **kwargs)
