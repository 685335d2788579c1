"""Hardening: credentials, authorization, path tricks, limits, upstream failures, logs without tokens, metrics."""
import http.client as http_client
import json
import os
import time

import pytest
import yaml

from testenv import proxy_stack as support
from testenv.proxy_stack import http

MACHINES = "/apis/cluster.x-k8s.io/v1beta2/namespaces/hcp/machines"


def raw_get(proxy_url, raw_path, token=None):
    """A request whose path is sent byte for byte (urllib would normalise it)."""
    host, port = proxy_url[len("http://"):].split(":")
    connection = http_client.HTTPConnection(host, int(port), timeout=10)
    connection.putrequest("GET", raw_path, skip_accept_encoding=True)
    if token:
        connection.putheader("Authorization", "Bearer " + token)
    connection.endheaders()
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, body


@pytest.fixture(scope="module")
def slow_proxy(stack):
    """A proxy behind the fault proxy (stack.server.kubeconfig): the faults of stack.server.add_fault reach it."""
    proxy = support.start_proxy(stack.workdir, stack.server.kubeconfig, "--upstream-timeout", "1",
                                "--max-body-bytes", "65536", name="proxy-slow")
    yield proxy
    assert proxy.stop() == 0


def test_without_token_own_credentials_only_when_configured(stack):
    anonymous, _headers, body = http("GET", stack.plain_proxy.url + MACHINES)
    assert anonymous in (401, 403), body
    assert json.loads(body)["kind"] == "Status"
    own, _headers, body = http("GET", stack.proxy.url + MACHINES)
    assert own == 200, body


def test_forbidden_user_stays_forbidden(stack):
    bob = stack.server.token_for("bob")
    for proxy in (stack.plain_proxy, stack.proxy):  # the client's token wins over the proxy's own credentials
        status, _headers, body = http("GET", proxy.url + MACHINES, token=bob)
        assert status == 403, body
        status_body = json.loads(body)
        assert status_body["reason"] == "Forbidden" and "bob" in status_body["message"]
        assert status_body["details"]["group"] == "cluster.x-k8s.io"
        # the server composed the message from the private group; the client reads its own group in it
        assert "machines.cluster.x-k8s.io" in status_body["message"], status_body["message"]
        assert "hypershift" not in status_body["message"], status_body["message"]


@pytest.mark.parametrize("raw_path", [
    "/apis/cluster.x-k8s.io/../../api/v1/secrets",
    "/apis/cluster.x-k8s.io/v1beta2/../../../api/v1/namespaces/hcp/secrets",
    "/apis/cluster.x-k8s.io/%2e%2e/%2e%2e/api/v1/secrets",
    "/apis/cluster.x-k8s.io/v1beta2/..%2f..%2f..%2fapi/v1/secrets",
    "/apis/cluster.x-k8s.io/v1beta2/namespaces/hcp/machines/%252e%252e",
    "/apis/cluster.x-k8s.io//v1beta2/machines",
    "/apis/cluster.x-k8s.io/v1beta2/./machines",
    "/apis/cluster.x-k8s.io\\..\\..\\api/v1/secrets",
    "/apis/cluster.x-k8s.io/v1beta2/machines%",
])
def test_path_tricks_are_refused(stack, raw_path):
    status, body = raw_get(stack.plain_proxy.url, raw_path, stack.server.admin_token)
    assert status == 400, body
    refusal = json.loads(body)
    assert refusal["kind"] == "Status" and "refused" in refusal["message"]
    assert http("GET", stack.plain_proxy.url + "/healthz")[0] == 200


def test_only_whole_label_groups_are_translated(stack):
    status, body = raw_get(stack.plain_proxy.url, "/apis/mycluster.x-k8s.io/v1/foos", stack.server.admin_token)
    assert status == 404
    assert b"hypershift" not in body


def test_private_group_hidden_without_show_private(stack):
    status, body = raw_get(stack.plain_proxy.url, "/apis/cluster.hypershift.openshift.io/v1beta2/machines",
                           stack.server.admin_token)
    assert status == 404 and b"--show-private" in body


def test_oversized_and_malformed_bodies(stack, slow_proxy):
    token = stack.server.admin_token
    big = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "hcp"},
                      "data": {"blob": "x" * 70000}}).encode()
    status, _headers, body = http("POST", slow_proxy.url + "/api/v1/namespaces/hcp/configmaps", big, token)
    assert status == 413 and json.loads(body)["reason"] == "RequestEntityTooLarge"
    broken = b'{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {'
    status, _headers, body = http("POST", slow_proxy.url + MACHINES, broken, token)
    assert status == 400 and "not valid JSON" in json.loads(body)["message"]
    assert http("GET", slow_proxy.url + "/healthz")[0] == 200


def test_slow_upstream_times_out_with_status(stack, slow_proxy):
    fault = stack.server.add_fault({"verb": "list", "resource": "machines", "action": "hang", "seconds": 5, "count": 1})
    try:
        started = time.monotonic()
        status, _headers, body = http("GET", slow_proxy.url + MACHINES, token=stack.server.admin_token)
        elapsed = time.monotonic() - started
    finally:
        stack.server.clear_faults()
    assert fault
    assert status == 504, body
    assert json.loads(body)["reason"] == "Timeout" and elapsed < 4.0
    assert http("GET", slow_proxy.url + "/healthz")[0] == 200


def test_upstream_down_answers_503(stack, tmp_path):
    with open(stack.server.kubeconfig) as handle:
        config = yaml.safe_load(handle)
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:%d" % support.free_port()
    dead = os.path.join(str(tmp_path), "dead.kubeconfig")
    with open(dead, "w") as handle:
        yaml.safe_dump(config, handle)
    proxy = support.start_proxy(tmp_path, dead, name="proxy-dead")
    try:
        status, _headers, body = http("GET", proxy.url + "/api/v1/namespaces", token="whatever")
        assert status == 503 and json.loads(body)["reason"] == "ServiceUnavailable", body
        assert http("GET", proxy.url + "/readyz")[0] == 503
        assert http("GET", proxy.url + "/healthz")[0] == 200
    finally:
        assert proxy.stop() == 0


def test_upstream_drop_answers_502(stack, slow_proxy):
    """Every attempt dropped (aiohttp retries an idempotent request once on a reused connection)."""
    stack.server.add_fault({"verb": "get", "resource": "namespaces", "name": "drop-me", "action": "drop", "count": -1})
    try:
        status, _headers, body = http("GET", slow_proxy.url + "/api/v1/namespaces/drop-me",
                                      token=stack.server.admin_token)
    finally:
        stack.server.clear_faults()
    assert status == 502 and json.loads(body)["kind"] == "Status", body


def test_metrics_and_readyz(stack):
    assert http("GET", stack.plain_proxy.url + "/readyz")[0] == 200
    http("GET", stack.plain_proxy.url + MACHINES, token=stack.server.admin_token)
    status, _headers, body = http("GET", stack.plain_proxy.metrics_url)
    text = body.decode()
    assert status == 200
    assert 'hypershift_api_proxy_requests_total{code="200",group="cluster.x-k8s.io",verb="list"}' in text
    for family in ("translation_duration_seconds_bucket", "upstream_duration_seconds_count", "open_watches",
                   "bytes_total", "translation_errors_total"):
        assert "hypershift_api_proxy_" + family in text


def test_no_token_in_any_log_line(stack, slow_proxy):
    secrets = [stack.server.admin_token, stack.server.token_for("bob")]
    logs = {proxy.log_path: proxy.log() for proxy in (stack.proxy, stack.plain_proxy, slow_proxy, stack.shim)}
    for path, text in logs.items():
        assert text, "empty log %s" % path
        for secret in secrets:
            assert secret not in text, "a token appears in %s" % path
        records = [json.loads(line) for line in text.splitlines()]
        assert all("request_id" in record for record in records if record["msg"] == "request")
