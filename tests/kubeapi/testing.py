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
import http.client
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time

import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
START_TIMEOUT = 60.0


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "Response(%d, %r)" % (self.status, self.body[:300])


class Server:
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

    # --- raw HTTP ---------------------------------------------------------------------------------
    def request(self, method, path, body=None, token=None, headers=None, content_type=None, timeout=30):
        """One HTTPS request; body may be bytes, str or a JSON-able object. token=False sends no credentials."""
        connection = http.client.HTTPSConnection(self.host, self.port, context=self.ssl_context, timeout=timeout)
        all_headers = {"Accept": "application/json"}
        if token is not False:
            all_headers["Authorization"] = "Bearer " + (token or self.admin_token)
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if body is not None:
            all_headers["Content-Type"] = content_type or "application/json"
        all_headers.update(headers or {})
        try:
            connection.request(method, path, body=body, headers=all_headers)
            response = connection.getresponse()
            return Response(response.status, response.headers, response.read())
        finally:
            connection.close()

    def watch_lines(self, path, token=None, timeout=30, max_events=None):
        """The decoded events of a watch request (until the server ends it or max_events arrive)."""
        connection = http.client.HTTPSConnection(self.host, self.port, context=self.ssl_context, timeout=timeout)
        connection.request("GET", path, headers={"Authorization": "Bearer " + (token or self.admin_token),
                                                 "Accept": "application/json"})
        response = connection.getresponse()
        events = []
        try:
            while max_events is None or len(events) < max_events:
                line = response.readline()
                if not line:
                    break
                if line.strip():
                    events.append(json.loads(line))
        finally:
            connection.close()
        return events

    # --- kubectl ----------------------------------------------------------------------------------
    def kubectl(self, *args, check=True, input=None, token=None, timeout=60):
        binary = shutil.which("kubectl")
        if binary is None:
            raise RuntimeError("kubectl is not on the PATH: install kubectl 1.32+ to run the kubectl tests")
        command = [binary, "--kubeconfig", self.kubeconfig, "--cache-dir", self.kubectl_cache]
        if token:
            command += ["--token", token]
        command += list(args)
        result = subprocess.run(command, input=input, capture_output=True, text=True, timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise AssertionError("kubectl %s failed (%d):\nstdout: %s\nstderr: %s"
                                 % (" ".join(args), result.returncode, result.stdout, result.stderr))
        return result

    def kubectl_json(self, *args, **kwargs):
        return json.loads(self.kubectl(*(list(args) + ["-o", "json"]), **kwargs).stdout)

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

    # --- clients ----------------------------------------------------------------------------------
    def api_client(self, token=None):
        """A kubernetes.client.ApiClient for this server (admin unless token is given)."""
        from kubernetes import client, config
        configuration = client.Configuration()
        config.load_kube_config(config_file=self.kubeconfig, client_configuration=configuration)
        if token:
            configuration.api_key = {"authorization": "Bearer " + token}
        return client.ApiClient(configuration)

    def log(self):
        with open(self.log_path, "r", errors="replace") as handle:
            return handle.read()

    def alive(self):
        return self.process.poll() is None

    def stop(self, timeout=20):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


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


def wait_for(predicate, what, timeout=10):
    """Poll predicate until it returns a truthy value (returned), failing the test after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(0.05)
