"""CRDs served in several versions (None and Webhook conversion), CRD deletion, seeds and restarts."""
import base64
import http.server
import json
import os
import socket
import ssl
import tempfile
import threading

import pytest

from tests.integration.conftest import CAPI_CRDS, CAPI_EXAMPLES_V1BETA2
from testenv import certs
from testenv.client import wait_for
from tests.kubeapi.testing import start_server

GROUP = "demo.example.com"


def crd(plural, kind, conversion=None):
    schema = {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"size": {"type": "integer"}, "replicas": {"type": "integer"}}}}}}
    body = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, GROUP)},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema},
                                  {"name": "v2", "served": True, "storage": False, "schema": schema}]}}
    if conversion:
        body["spec"]["conversion"] = conversion
    return body


class ConversionWebhook:
    """A real HTTPS ConversionReview endpoint: v1 spec.size <-> v2 spec.replicas; fails when told to."""

    def __init__(self):
        self.tls = certs.generate()
        self.fail_with = None
        self.reviews = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.reviews.append(review)
                request = review["request"]
                response = {"uid": request["uid"]}
                if owner.fail_with:
                    response["result"] = {"status": "Failure", "message": owner.fail_with}
                else:
                    converted = []
                    for obj in request["objects"]:
                        obj = dict(obj, apiVersion=request["desiredAPIVersion"])
                        spec = dict(obj.get("spec") or {})
                        if request["desiredAPIVersion"].endswith("/v2") and "size" in spec:
                            spec["replicas"] = spec.pop("size")
                        elif request["desiredAPIVersion"].endswith("/v1") and "replicas" in spec:
                            spec["size"] = spec.pop("replicas")
                        obj["spec"] = spec
                        converted.append(obj)
                    response.update(convertedObjects=converted, result={"status": "Success"})
                data = json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                                   "response": response}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        workdir = tempfile.mkdtemp(prefix="webhook-")
        cert, key = os.path.join(workdir, "tls.crt"), os.path.join(workdir, "tls.key")
        open(cert, "w").write(self.tls["cert"])
        open(key, "w").write(self.tls["key"])
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = "https://127.0.0.1:%d/convert" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def conversion(self):
        return {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
            "url": self.url, "caBundle": base64.b64encode(self.tls["ca_cert"].encode()).decode()}}}

    def close(self):
        self.httpd.shutdown()


@pytest.fixture(scope="module")
def webhook():
    hook = ConversionWebhook()
    yield hook
    hook.close()


def test_crd_established_and_served_in_every_version(kubeapi):
    created = kubeapi.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                              crd("gadgets", "Gadget"))
    assert created.status == 201
    wait_for(lambda: {c["type"]: c["status"] for c in kubeapi.request(
        "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets." + GROUP).json().get(
        "status", {}).get("conditions", [])} == {"Established": "True", "NamesAccepted": "True"}, "Established")
    group = kubeapi.request("GET", "/apis/" + GROUP).json()
    assert [v["version"] for v in group["versions"]] == ["v2", "v1"]
    base = "/apis/%s/%%s/namespaces/default/gadgets" % GROUP
    obj = {"apiVersion": GROUP + "/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"size": 3}}
    assert kubeapi.request("POST", base % "v1", obj).status == 201
    as_v2 = kubeapi.request("GET", base % "v2" + "/g").json()
    assert as_v2["apiVersion"] == GROUP + "/v2" and as_v2["spec"] == {"size": 3}
    listed = kubeapi.request("GET", base % "v2").json()
    assert listed["apiVersion"] == GROUP + "/v2" and listed["items"][0]["apiVersion"] == GROUP + "/v2"
    kubeapi.request("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets." + GROUP)
    wait_for(lambda: kubeapi.request("GET", base % "v1").status == 404, "the resource to stop being served")
    assert kubeapi.request("GET", "/apis/" + GROUP).status == 404
    assert kubeapi.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                           crd("gadgets", "Gadget")).status == 201
    wait_for(lambda: kubeapi.request("GET", base % "v1").status == 200, "the recreated CRD")
    assert kubeapi.request("GET", base % "v1").json()["items"] == [], "objects must go with their CRD"


def test_webhook_conversion_and_its_failure(kubeapi, webhook):
    assert kubeapi.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                           crd("widgets", "Widget", webhook.conversion())).status == 201
    base = "/apis/%s/%%s/namespaces/default/widgets" % GROUP
    wait_for(lambda: kubeapi.request("GET", base % "v2").status == 200, "the widgets resource")
    created = kubeapi.request("POST", base % "v2", {"apiVersion": GROUP + "/v2", "kind": "Widget",
                                                    "metadata": {"name": "w"}, "spec": {"replicas": 4}})
    assert created.status == 201 and created.json()["spec"] == {"replicas": 4}
    stored_v1 = kubeapi.request("GET", base % "v1" + "/w").json()
    assert stored_v1["spec"] == {"size": 4} and stored_v1["apiVersion"] == GROUP + "/v1"
    assert webhook.reviews and webhook.reviews[-1]["apiVersion"] == "apiextensions.k8s.io/v1"
    webhook.fail_with = "boom"
    try:
        failed = kubeapi.request("GET", base % "v2" + "/w")
    finally:
        webhook.fail_with = None
    assert failed.status == 500
    assert "conversion webhook for %s/v1, Kind=Widget failed: boom" % GROUP in failed.json()["message"]


def test_seeds_and_restart_keep_objects_and_resource_versions(tmp_path):
    state = tmp_path / "state.json"
    server = start_server(tmp_path, seeds=[CAPI_CRDS] + CAPI_EXAMPLES_V1BETA2, state_file=state)
    try:
        clusters = server.request("GET", "/apis/cluster.x-k8s.io/v1beta2/clusters").json()["items"]
        assert {c["metadata"]["name"] for c in clusters} >= {"my-cluster"}
        deployments = server.request("GET", "/apis/cluster.x-k8s.io/v1beta2/machinedeployments").json()["items"]
        assert deployments and deployments[0]["spec"]["clusterName"] == "my-cluster"
        assert "skipped DockerCluster" in server.log()
        server.request("POST", "/api/v1/namespaces/default/configmaps",
                       {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}, "data": {"a": "b"}})
        before = server.request("GET", "/api/v1/namespaces/default/configmaps/kept").json()
        list_rv = int(server.request("GET", "/api/v1/namespaces").json()["metadata"]["resourceVersion"])
    finally:
        assert server.stop() == 0
    assert json.loads(state.read_text())["resourceVersion"] >= list_rv
    with socket.socket() as probe:  # a free port for the --port contract
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    again = start_server(tmp_path, state_file=state, name="again", port=port)
    try:
        assert again.url == "https://127.0.0.1:%d" % port
        after = again.request("GET", "/api/v1/namespaces/default/configmaps/kept").json()
        assert after["metadata"] == before["metadata"]
        assert again.request("GET", "/apis/cluster.x-k8s.io/v1beta1/clusters/".rstrip("/")).status == 200
        new = again.request("POST", "/api/v1/namespaces/default/configmaps",
                            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "new"}}).json()
        assert int(new["metadata"]["resourceVersion"]) > list_rv
        assert again.kubectl("get", "clusters", "-A", "-o", "name").stdout.strip() != ""
    finally:
        assert again.stop() == 0
