"""The conversion shim as the webhook of private CRDs in a real kube-apiserver, and its delegate mode."""
import json
import ssl
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions import convert_object
from testenv import proxy_stack as support

PRIVATE_MHC = "/apis/cluster.hypershift.openshift.io/%s/namespaces/hcp/machinehealthchecks"


def mhc_v1beta1(name):
    return {"apiVersion": "cluster.hypershift.openshift.io/v1beta1", "kind": "MachineHealthCheck",
            "metadata": {"name": name, "namespace": "hcp"},
            "spec": {"clusterName": "c", "maxUnhealthy": "40%", "nodeStartupTimeout": "20m0s",
                     "selector": {"matchLabels": {"pool": name}},
                     "unhealthyConditions": [{"type": "Ready", "status": "Unknown", "timeout": "8m0s"}]}}


def test_store_in_v1beta1_read_v1beta2_and_back(stack):
    server = stack.server
    sent = mhc_v1beta1("mhc-a")
    created = server.request("POST", PRIVATE_MHC % "v1beta1", sent)
    assert created.status == 201, created
    hub = server.request("GET", (PRIVATE_MHC % "v1beta2") + "/mhc-a").json()
    assert hub["apiVersion"] == "cluster.hypershift.openshift.io/v1beta2"
    assert hub["spec"]["checks"]["nodeStartupTimeoutSeconds"] == 1200  # converted by the shim, not renamed
    assert hub["spec"]["remediation"]["triggerIf"]["unhealthyLessThanOrEqualTo"] == "40%"
    back = server.request("GET", (PRIVATE_MHC % "v1beta1") + "/mhc-a").json()
    assert back["spec"] == sent["spec"]
    assert "cluster.x-k8s.io/conversion-data" not in (back["metadata"].get("annotations") or {})


def test_store_in_v1beta2_read_v1beta1_and_back(stack):
    server = stack.server
    sent = {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": "shim-c", "namespace": "hcp"},
            "spec": {"paused": True, "infrastructureRef": {"apiGroup": "infrastructure.cluster.hypershift.openshift.io",
                                                           "kind": "AWSCluster", "name": "shim-c"}}}
    assert server.request("POST", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/hcp/clusters", sent).status == 201
    old = server.request("GET", "/apis/cluster.hypershift.openshift.io/v1beta1/namespaces/hcp/clusters/shim-c").json()
    assert old["spec"]["infrastructureRef"]["apiVersion"] == "infrastructure.cluster.hypershift.openshift.io/v1beta2"
    assert old["spec"]["paused"] is True
    again = server.request("GET", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/hcp/clusters/shim-c").json()
    assert again["spec"] == sent["spec"]


def _review(objects, desired, uid="u-1"):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects}}


def _post(url, body, ca_pem):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url + "/convert", data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30, context=ssl.create_default_context(cadata=ca_pem)) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_malformed_and_unsupported_reviews_fail_clearly(stack):
    status, body = _post(stack.shim.url, b"{not json", stack.ca_pem)
    assert status == 400 and "ConversionReview" in body["message"]
    status, body = _post(stack.shim.url, {"kind": "ConversionReview"}, stack.ca_pem)
    assert status == 400 and "request.uid" in body["message"]
    status, body = _post(stack.shim.url, _review([mhc_v1beta1("x")], "cluster.hypershift.openshift.io/v1alpha4"),
                         stack.ca_pem)
    assert status == 200 and body["response"]["result"]["status"] == "Failure"
    assert "v1alpha4" in body["response"]["result"]["message"] and body["response"]["uid"] == "u-1"
    status, body = _post(stack.shim.url, _review([mhc_v1beta1("x")], "cluster.x-k8s.io/v1beta2"), stack.ca_pem)
    assert body["response"]["result"]["status"] == "Failure" and "private" in body["response"]["result"]["message"]


class _StandardWebhook(BaseHTTPRequestHandler):
    """Stands in for CAPI's own conversion webhook: converts standard-group reviews; fails the first call."""

    calls = []

    def do_POST(self):  # noqa: N802 (http.server naming)
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.calls.append(review)
        if len(self.calls) == 1:
            self.send_response(503)
            self.end_headers()
            return
        version = review["request"]["desiredAPIVersion"].split("/")[1]
        converted = [convert_object(obj, version) for obj in review["request"]["objects"]]
        body = json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                           "response": {"uid": review["request"]["uid"], "result": {"status": "Success"},
                                        "convertedObjects": converted}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # pylint: disable=arguments-differ
        pass


@pytest.fixture
def delegate(stack):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StandardWebhook)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(stack.cert, stack.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _StandardWebhook.calls = []
    yield "https://127.0.0.1:%d/convert" % server.server_address[1]
    server.shutdown()
    server.server_close()


def test_delegate_mode_translates_and_retries(stack, delegate, tmp_path):
    ca_path = str(tmp_path / "ca.pem")
    with open(ca_path, "w") as handle:
        handle.write(stack.ca_pem)
    shim = support.start_shim(tmp_path, stack.cert, stack.key, stack.ca_pem, "--delegate-url", delegate,
                              "--delegate-ca", ca_path)
    try:
        status, body = _post(shim.url, _review([mhc_v1beta1("d")], "cluster.hypershift.openshift.io/v1beta2"),
                             stack.ca_pem)
    finally:
        assert shim.stop() == 0
    assert status == 200 and body["response"]["result"]["status"] == "Success", body
    assert len(_StandardWebhook.calls) == 2  # one 503, one retry
    forwarded = _StandardWebhook.calls[1]["request"]
    assert forwarded["desiredAPIVersion"] == "cluster.x-k8s.io/v1beta2"
    assert forwarded["objects"][0]["apiVersion"] == "cluster.x-k8s.io/v1beta1"
    converted = body["response"]["convertedObjects"][0]
    assert converted["apiVersion"] == "cluster.hypershift.openshift.io/v1beta2"
    assert converted["spec"]["checks"]["nodeStartupTimeoutSeconds"] == 1200
