"""Issue 16's probes, kept as regressions: deep documents, raw-socket HTTP abuse, metric cardinality, credentials,
half-open connections and the in-flight body budget. Each one failed before its fix."""
import json
import socket
import ssl
import threading
import time
import uuid

import pytest

from testenv import proxy_stack as support
from testenv.proxy_stack import http

CLUSTERS = "/apis/cluster.x-k8s.io/v1beta2/namespaces/hcp/clusters"
PRIVATE_CLUSTERS = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/hcp/clusters"
ISSUE_DEPTHS = (100, 200, 300, 400, 450, 470)  # the probe's depths: orjson 3.11.4 aborted the proxy on these


def nested(depth):
    value = []
    for _level in range(depth):
        value = [value]
    return value


def deep_cluster(name, depth):
    return {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": name, "namespace": "hcp"},
            "spec": {"topology": {"classRef": {"name": "aws"}, "version": "v1.33.0",
                                  "variables": [{"name": "deep", "value": nested(depth)}]},
                     "infrastructureRef": {"apiGroup": "infrastructure.cluster.hypershift.openshift.io",
                                           "kind": "AWSCluster", "name": name}}}


def deep_cluster_bytes(name, depth, standard=True):
    """deep_cluster as JSON text, built without recursion (the test's own json.dumps stops near 1,000 levels)."""
    text = json.dumps(deep_cluster(name, 0))
    if standard:
        text = text.replace("cluster.hypershift.openshift.io", "cluster.x-k8s.io")
    return text.replace('"value": []', '"value": ' + "[" * (depth + 1) + "]" * (depth + 1)).encode()  # as nested()


def depth_of(value):
    depth = 0
    while isinstance(value, list) and value:
        value = value[0]
        depth += 1
    return depth


def raw_exchange(url, payload, timeout=5):
    """Bytes sent on a fresh socket, everything the server answers until it closes or goes quiet."""
    host, port = url[len("http://"):].split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as connection:
        connection.sendall(payload)
        chunks = []
        try:
            while True:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                if b"\r\n\r\n" in b"".join(chunks) and _complete(b"".join(chunks)):
                    break
        except socket.timeout:
            pass
    return b"".join(chunks)


def _complete(answer):
    head, _sep, body = answer.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    return False


def status_of(answer):
    head, _sep, body = answer.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n")[0].decode()
    return status_line, head.decode("latin-1").lower(), json.loads(body)


@pytest.fixture(scope="module")
def deep_clusters(stack):
    for depth in ISSUE_DEPTHS:
        response = stack.server.request("POST", PRIVATE_CLUSTERS, deep_cluster("deep-%d" % depth, depth),
                                        token=stack.server.admin_token)
        assert response.status == 201, response
    yield
    for depth in ISSUE_DEPTHS:
        stack.server.request("DELETE", PRIVATE_CLUSTERS + "/deep-%d" % depth, token=stack.server.admin_token)


def test_list_of_deeply_nested_objects_is_translated(stack, deep_clusters):
    for _round in range(3):  # the abort came on the first LIST, every time
        status, _headers, body = http("GET", stack.plain_proxy.url + CLUSTERS, token=stack.server.admin_token)
        assert status == 200, body[:300]
        listed = json.loads(body)
        items = {item["metadata"]["name"]: item for item in listed["items"] if item["metadata"]["name"].startswith("deep-")}
        assert sorted(depth_of(item["spec"]["topology"]["variables"][0]["value"]) for item in items.values()) == \
            sorted(ISSUE_DEPTHS)
        for item in items.values():
            assert item["apiVersion"] == "cluster.x-k8s.io/v1beta2"
            assert item["spec"]["infrastructureRef"]["apiGroup"] == "infrastructure.cluster.x-k8s.io"
    assert stack.plain_proxy.alive()
    assert http("GET", stack.plain_proxy.url + "/healthz")[0] == 200


def test_deep_request_bodies_get_a_status(stack):
    token = stack.server.admin_token
    status, _headers, body = http("POST", stack.plain_proxy.url + CLUSTERS, deep_cluster_bytes("too-deep", 20000), token)
    refusal = json.loads(body)
    assert status == 400 and refusal["kind"] == "Status", body[:300]
    assert "nested more than" in refusal["message"]
    # past what the default recursion limit lets the core walk (the deep thread's work), within what
    # kube-apiserver itself accepts (the deep thread goes up to the API server's 10,000: tests/unit/proxy/test_capi_proxy_limits.py)
    within = deep_cluster_bytes("within-limit", 480)
    status, _headers, body = http("POST", stack.plain_proxy.url + CLUSTERS + "?dryRun=All", within, token)
    created = json.loads(body)
    assert status == 201 and created["apiVersion"] == "cluster.x-k8s.io/v1beta2", body[:300]
    assert depth_of(created["spec"]["topology"]["variables"][0]["value"]) == 480
    assert "RecursionError" not in stack.plain_proxy.log()
    assert http("GET", stack.plain_proxy.url + "/healthz")[0] == 200


def test_shim_refuses_deep_and_oversized_reviews_with_a_status(stack):
    context = ssl.create_default_context(cadata=stack.ca_pem)
    review = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
              "request": {"uid": "u1", "desiredAPIVersion": "cluster.hypershift.openshift.io/v1beta1",
                          "objects": []}}
    deep_review = json.dumps(review).replace('"objects": []', '"objects": ' + "[" * 20000 + "]" * 20000)
    status, headers, body = _https_post(stack.shim.url + "/convert", deep_review.encode(), context)
    assert status == 400 and headers.get("Content-Type", "").startswith("application/json"), body[:300]
    assert json.loads(body)["kind"] == "Status"
    oversized = b'{"pad": "' + b"x" * (33 * 1024 * 1024) + b'"}'
    status, headers, body = _https_post(stack.shim.url + "/convert", oversized, context)
    assert status == 413 and json.loads(body)["kind"] == "Status", body[:300]
    assert "Traceback" not in stack.shim.log() and "RecursionError" not in stack.shim.log()
    assert stack.shim.alive()


def _https_post(url, data, context):
    import urllib.request  # pylint: disable=import-outside-toplevel
    request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.mark.parametrize("payload", [
    b"GET /api HTTP/1.1\r\nHost: x\r\nAuthorization : Bearer %(token)s\r\n\r\n",
    b"GET /api HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %(token)s\x01\r\n\r\n",
    b"GET /api HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n  Authorization: Bearer %(token)s\r\n\r\n",
    b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n"
    b"Authorization: Bearer %(token)s\r\n\r\n0\r\n\r\n",
    b"GET api/v1/namespaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %(token)s\r\n\r\n",
], ids=["space-before-colon", "control-byte", "folded-header", "cl-and-te", "no-leading-slash"])
def test_parser_errors_are_statuses_without_credentials_in_the_log(stack, payload):
    token = "probe" + uuid.uuid4().hex
    answer = raw_exchange(stack.plain_proxy.url, payload % {b"token": token.encode()})
    status_line, head, refusal = status_of(answer)
    assert status_line.split(" ")[1] == "400", answer[:300]
    assert "content-type: application/json" in head
    assert refusal["kind"] == "Status" and refusal["code"] == 400 and token not in refusal["message"]
    time.sleep(0.2)
    log = stack.plain_proxy.log()
    assert token not in log and "Traceback" not in log
    assert http("GET", stack.plain_proxy.url + "/healthz")[0] == 200


def test_http_0_9_request_is_refused(stack):
    answer = raw_exchange(stack.plain_proxy.url, b"GET /api/v1/namespaces\r\nX-Evil: 1 HTTP/1.1\r\n\r\n")
    assert b" 200 " not in answer.split(b"\r\n", maxsplit=1)[0], answer[:200]
    if answer:  # a Status, or nothing at all: never the resource
        _status_line, _head, refusal = status_of(answer)
        assert refusal["kind"] == "Status" and refusal["code"] == 400


def test_aiohttp_own_errors_are_statuses(stack):
    status, headers, body = http("POST", stack.plain_proxy.metrics_url)
    assert status == 405 and json.loads(body)["kind"] == "Status", body
    status, _headers, body = http("GET", stack.plain_proxy.metrics_url.replace("/metrics", "/nowhere"))
    assert status == 404 and json.loads(body)["kind"] == "Status", body


def test_metric_labels_stay_bounded(stack):
    before = len(http("GET", stack.plain_proxy.metrics_url)[2].splitlines())
    for index in range(300):
        http("GET", stack.plain_proxy.url + "/apis/g%s.example/v1/foos" % uuid.uuid4().hex,
             token=stack.server.admin_token)
        if index % 50 == 0:
            support.raw_request(stack.plain_proxy.url, "FOO%d" % index, "/api/v1/namespaces")
    text = http("GET", stack.plain_proxy.metrics_url)[2].decode()
    assert len(text.splitlines()) - before < 60, "each random group or method added series"
    assert 'group="other"' in text and ".example" not in text and 'verb="foo' not in text


def test_malformed_or_repeated_authorization_is_never_replaced_by_the_proxys_identity(stack):
    for value in ("", " ", "Bearer", "Bearer  "):
        status, _headers, body = http("GET", stack.proxy.url + CLUSTERS, headers={"Authorization": value})
        assert status == 401 and json.loads(body)["reason"] == "Unauthorized", (value, body)
    answer = raw_exchange(stack.proxy.url, ("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                                            "Authorization: Bearer other\r\n\r\n"
                                            % (CLUSTERS, stack.server.admin_token)).encode())
    status_line, _head, refusal = status_of(answer)
    assert " 400 " in status_line and "Authorization headers" in refusal["message"]
    assert http("GET", stack.proxy.url + CLUSTERS)[0] == 200  # no header at all: the proxy's own credentials


def test_half_open_connections_are_closed(stack):
    proxy = support.start_proxy(stack.workdir, stack.server.kubeconfig, "--idle-timeout", "1", name="proxy-idle")
    try:
        host, port = proxy.url[len("http://"):].split(":")
        sockets = [socket.create_connection((host, int(port)), timeout=10) for _index in range(50)]
        for connection in sockets:
            connection.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\n")  # never finished
        started = time.monotonic()
        closed = 0
        for connection in sockets:
            if connection.recv(1024) == b"":
                closed += 1
            connection.close()
        assert closed == 50 and time.monotonic() - started < 6
        assert http("GET", proxy.url + "/healthz")[0] == 200
    finally:
        assert proxy.stop() == 0


def rss_peak_mb(pid):
    with open("/proc/%d/status" % pid) as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmHWM for %d" % pid)


def test_concurrent_large_bodies_stay_within_the_budget(stack):
    """100 concurrent GETs of a 1.4 MB object (etcd's limit is 1.5 MB): without a budget the proxy held every
    body at once (463 MB for 2.9 MB objects in the probe)."""
    big = deep_cluster("big-one", 0)
    big["spec"]["topology"]["variables"][0]["value"] = ["cluster.hypershift.openshift.io/" + "x" * 1000] * 1400
    assert stack.server.request("POST", PRIVATE_CLUSTERS, big, token=stack.server.admin_token).status == 201
    budget = 16 * 1024 * 1024
    proxy = support.start_proxy(stack.workdir, stack.server.kubeconfig, "--max-inflight-bytes", str(budget),
                                name="proxy-budget")
    results = []
    held, done = [], threading.Event()

    def sample():  # the bytes the budget counts, as the proxy's gauge says them while the GETs run
        while not done.is_set():
            _status, _headers, text = http("GET", proxy.metrics_url, timeout=30)
            held.extend(float(line.split()[-1]) for line in text.decode().splitlines()
                        if line.startswith("hypershift_api_proxy_inflight_body_bytes "))
            time.sleep(0.005)

    def get():
        status, headers, body = http("GET", proxy.url + CLUSTERS + "/big-one", token=stack.server.admin_token,
                                     timeout=120)
        results.append((status, headers.get("Retry-After"), body))

    sampler = threading.Thread(target=sample)
    try:
        sampler.start()
        threads = [threading.Thread(target=get) for _index in range(100)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        done.set()
        sampler.join()
        peak = rss_peak_mb(proxy.process.pid)
        codes = sorted(status for status, _retry, _body in results)
        assert set(codes) <= {200, 429} and 200 in codes, codes
        for status, retry_after, body in results:
            answer = json.loads(body)
            if status == 429:
                assert retry_after == "1" and answer["reason"] == "TooManyRequests"
            else:
                assert answer["spec"]["infrastructureRef"]["apiGroup"] == "infrastructure.cluster.x-k8s.io"
        print("proxy RSS peak with 100 concurrent GETs of 1.4 MB: %.0f MB, %d answered 429, at most %.1f MB held "
              "(%d samples)" % (peak, codes.count(429), max(held or [0]) / 1e6, len(held)))
        # what the budget bounds: the bodies held at once never pass it (a GET alone may: its answer and translation,
        # about 3 MB here, are under it)
        assert held and max(held) <= budget, (max(held or [0]), budget)
        # RSS also holds the decoded objects the budget does not count and what the allocator keeps: 84-90 MB on an
        # idle machine, 103 MB under make test's load (2026-12-05); 124 MB without the budget
        assert peak < 115, "proxy RSS peaked at %.0f MB (124 MB without the budget)" % peak
    finally:
        done.set()
        assert proxy.stop() == 0
        stack.server.request("DELETE", PRIVATE_CLUSTERS + "/big-one", token=stack.server.admin_token)
