"""The client side of a test control plane: raw HTTPS requests, watches, kubectl and a kubernetes ApiClient.

`ServerClient` needs `host`, `port`, `ssl_context` (trusting the server's CA), `admin_token`, `kubeconfig` and
`kubectl_cache` from its subclass, testenv.cluster.testing.RealServer (the real control plane).
"""
import http.client
import json
import shutil
import subprocess
import time


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "Response(%d, %r)" % (self.status, self.body[:300])


class ServerClient:
    host = port = ssl_context = admin_token = kubeconfig = kubectl_cache = None

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

    # --- clients ----------------------------------------------------------------------------------
    def api_client(self, token=None):
        """A kubernetes.client.ApiClient for this server (admin unless token is given)."""
        from kubernetes import client, config
        configuration = client.Configuration()
        config.load_kube_config(config_file=self.kubeconfig, client_configuration=configuration)
        if token:
            configuration.api_key = {"authorization": "Bearer " + token}
            configuration.cert_file = configuration.key_file = None
        return client.ApiClient(configuration)


class KubeconfigServer:
    """ServerClient's request() for a cluster known only by a kubeconfig (a kind cluster's: a client certificate),
    through the official client's ApiClient (testenv.hcp.build.RestSession): for the helpers written against a test
    control plane (testenv.capi_hosted, testenv.hcp.fleet.deployments_settled)."""

    def __init__(self, kubeconfig):
        from testenv.hcp.build import RestSession  # pylint: disable=import-outside-toplevel
        self.kubeconfig = kubeconfig
        self.session = RestSession(kubeconfig)

    def request(self, method, path, body=None):
        """One request (PATCH: a merge patch); never raises on a status."""
        status, data = self.session.request(method, path, body, expect=None)
        return Response(status, {}, json.dumps(data).encode())


def wait_for(predicate, what, timeout=30, interval=0.05):
    """Poll predicate every interval seconds until it returns a truthy value (returned), failing the test after
    timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out waiting for " + what
        time.sleep(interval)
