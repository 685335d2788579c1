"""The conversion shim as the webhook of private CRDs in a real kube-apiserver, and its delegate mode."""
import base64
import copy
import json
import os
import ssl
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions import convert_object
from testenv import proxy_stack as support
from testenv import upstream
from testenv.yamlio import load as load_yaml

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

    @staticmethod
    def convert(obj, version):
        return convert_object(obj, version)

    def do_POST(self):  # noqa: N802 (http.server naming)
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.calls.append(review)
        if len(self.calls) == 1:
            self.send_response(503)
            self.end_headers()
            return
        version = review["request"]["desiredAPIVersion"].split("/")[1]
        converted = [self.convert(obj, version) for obj in review["request"]["objects"]]
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


class _ProviderWebhook(_StandardWebhook):
    """Stands in for a provider's own conversion webhook (standard group only, as a provider's scheme decodes)."""

    calls = []

    @staticmethod
    def convert(obj, version):
        assert obj["apiVersion"].startswith("capi-provider.agent-install.openshift.io/"), obj["apiVersion"]
        group = obj["apiVersion"].split("/")[0]
        return dict(obj, apiVersion="%s/%s" % (group, version), spec=dict(obj["spec"], convertedBy="provider"))


def _serve(stack, handler):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(stack.cert, stack.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    handler.calls = []
    return server, "https://127.0.0.1:%d/convert" % server.server_address[1]


@pytest.fixture
def delegate(stack):
    server, url = _serve(stack, _StandardWebhook)
    yield url
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


AGENT_GROUPS = "capi-provider.agent-install.openshift.io=capi-provider.agent-install.hypershift.openshift.io"
AGENT_MACHINES = os.path.join(upstream.HYPERSHIFT_CRDS, "cluster-api-provider-agent",
                              "capi-provider.agent-install.openshift.io_agentmachines.yaml")


def _agent_machine(version):
    return {"apiVersion": "capi-provider.agent-install.hypershift.openshift.io/%s" % version, "kind": "AgentMachine",
            "metadata": {"name": "am-0", "namespace": "hcp", "uid": "u-am-0"}, "spec": {"agentLabelSelector": {}}}


def test_a_provider_converts_as_its_standard_crd_says_never_through_the_core_rules(stack, tmp_path):
    """Agent's CRD as HyperShift installs it (v1alpha1 and v1beta1, no webhook): the shim changes the apiVersion only,
    as kube-apiserver does; once the standard CRD names a webhook, the shim delegates to it in the standard group."""
    server = stack.server
    with open(AGENT_MACHINES) as handle:
        crd = load_yaml(handle.read())
    assert "conversion" not in crd["spec"] and len([v for v in crd["spec"]["versions"] if v["served"]]) == 2
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert server.request("POST", path, crd).status == 201
    provider, url = _serve(stack, _ProviderWebhook)
    shim = support.start_shim(tmp_path, stack.cert, stack.key, stack.ca_pem, "--kubeconfig", server.direct_kubeconfig,
                              "--extra-group", AGENT_GROUPS, "--crd-ttl", "0.2")
    try:
        desired = "capi-provider.agent-install.hypershift.openshift.io/v1beta1"
        status, body = _post(shim.url, _review([_agent_machine("v1alpha1")], desired), stack.ca_pem)
        assert status == 200 and body["response"]["result"]["status"] == "Success", body
        assert body["response"]["convertedObjects"] == [_agent_machine("v1beta1")]
        assert _ProviderWebhook.calls == []

        live = server.request("GET", path + "/" + crd["metadata"]["name"]).json()
        live["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
            "url": url, "caBundle": base64.b64encode(stack.ca_pem.encode()).decode()}}}
        assert server.request("PUT", path + "/" + crd["metadata"]["name"], live).status == 200
        time.sleep(0.5)  # past --crd-ttl
        status, body = _post(shim.url, _review([_agent_machine("v1alpha1")], desired), stack.ca_pem)
        assert status == 200 and body["response"]["result"]["status"] == "Success", body
        expected = copy.deepcopy(_agent_machine("v1beta1"))
        expected["spec"]["convertedBy"] = "provider"
        assert body["response"]["convertedObjects"] == [expected]
        assert len(_ProviderWebhook.calls) == 2  # one 503, one retry, in the standard group
        assert _ProviderWebhook.calls[1]["request"]["desiredAPIVersion"] == "capi-provider.agent-install.openshift.io/v1beta1"

        # a standard CRD of the kind is missing: a Failure that says what to install
        status, body = _post(shim.url, _review([dict(_agent_machine("v1alpha1"), kind="AgentThing")], desired),
                             stack.ca_pem)
        assert body["response"]["result"]["status"] == "Failure"
        assert "AgentThing" in body["response"]["result"]["message"]
        assert "install the provider's CRDs" in body["response"]["result"]["message"]
    finally:
        assert shim.stop() == 0
        provider.shutdown()
        provider.server_close()
        server.request("DELETE", path + "/" + crd["metadata"]["name"])
