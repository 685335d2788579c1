"""Generated bodies against the running proxy and shim: any depth and size, invalid UTF-8, huge numbers, duplicate
keys, junk. The processes never die, every answer is a Kubernetes Status or the translated object (a
ConversionReview for the shim), and the proxy's memory stays bounded."""
import json
import ssl
import urllib.request

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capi_proxy import nesting
from testenv.proxy_stack import http
from tests.unit.strategies import json_holes as holes

MACHINES = "/apis/cluster.x-k8s.io/v1beta2/namespaces/hcp/machines"
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
                derandomize=True)


def machine_text(name, hole):
    """A standard-group Machine whose spec.extra is the raw JSON text hole (anything, valid or not)."""
    text = json.dumps({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                       "metadata": {"name": name, "namespace": "hcp"},
                       "spec": {"clusterName": "c", "bootstrap": {"dataSecretName": "s"},
                                "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                                      "kind": "AWSMachine", "name": name},
                                "extra": "HOLE"}})
    return text.encode().replace(b'"HOLE"', hole)


def is_status_or(document, kind):
    return isinstance(document, dict) and document.get("kind") in ("Status", kind)


@FUZZ
@given(hole=holes())
def test_proxy_body_path_answers_every_generated_body(stack, hole):
    body = machine_text("fuzz", hole)
    status, headers, answer = http("POST", stack.plain_proxy.url + MACHINES + "?dryRun=All", body,
                                   stack.server.admin_token, timeout=60)
    assert headers.get("Content-Type", "").startswith("application/json"), (status, answer[:300])
    document = nesting.on_deep_thread(json.loads, answer)  # the answer may be as deep as the API server allows
    assert is_status_or(document, "Machine"), answer[:300]
    if document["kind"] == "Machine":
        assert document["apiVersion"] == "cluster.x-k8s.io/v1beta2"
        assert document["spec"]["infrastructureRef"]["apiGroup"] == "infrastructure.cluster.x-k8s.io"
    else:  # the API server's own refusal or the proxy's, never a crash
        assert document["code"] == status and "the proxy failed" not in document["message"], answer[:300]
    assert stack.plain_proxy.alive()


def test_proxy_memory_stays_bounded_after_the_fuzzing(stack):
    with open("/proc/%d/status" % stack.plain_proxy.process.pid) as handle:
        rss_mb = [int(line.split()[1]) / 1024.0 for line in handle if line.startswith("VmRSS:")][0]
    assert rss_mb < 150, "the proxy holds %.0f MB" % rss_mb
    assert http("GET", stack.plain_proxy.url + "/healthz")[0] == 200


def review_text(uid, objects_text):
    text = json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                       "request": {"uid": uid, "desiredAPIVersion": "cluster.hypershift.openshift.io/v1beta1",
                                   "objects": "HOLE"}})
    return text.encode().replace(b'"HOLE"', objects_text)


@FUZZ
@given(hole=holes(), wrap=st.booleans())
def test_shim_answers_every_generated_review(stack, hole, wrap):
    objects = b"[" + machine_text("m", hole).replace(b"cluster.x-k8s.io", b"cluster.hypershift.openshift.io") + b"]" \
        if wrap else hole
    request = urllib.request.Request(stack.shim.url + "/convert", data=review_text("u-1", objects), method="POST",
                                     headers={"Content-Type": "application/json"})
    context = ssl.create_default_context(cadata=stack.ca_pem)
    try:
        with urllib.request.urlopen(request, context=context, timeout=60) as response:
            status, answer = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, answer = error.code, error.read()
    document = nesting.on_deep_thread(json.loads, answer)  # the answer may be as deep as the API server allows
    if status == 200:
        assert document["kind"] == "ConversionReview" and document["response"]["uid"] == "u-1", answer[:300]
        assert document["response"]["result"]["status"] in ("Success", "Failure")
    else:
        assert status in (400, 413) and document["kind"] == "Status", answer[:300]
    assert stack.shim.alive()
