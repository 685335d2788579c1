"""The proxy reports its own time per request (Server-Timing, own_duration histogram, log) apart from the server's."""
import json
import re
import time

from testenv.proxy_stack import http

MACHINES = "/apis/cluster.x-k8s.io/v1beta2/namespaces/hcp/machines"


def timings(header):
    return {name: float(duration) for name, duration in re.findall(r"(\w+);dur=([0-9.]+)", header or "")}


def test_server_timing_separates_the_proxy_from_the_api_server(stack):
    started = time.perf_counter()
    status, headers, body = http("GET", stack.plain_proxy.url + MACHINES, token=stack.server.admin_token)
    wall_ms = (time.perf_counter() - started) * 1e3
    assert status == 200 and json.loads(body)["apiVersion"] == "cluster.x-k8s.io/v1beta2", body[:300]
    durations = timings(headers.get("Server-Timing"))
    assert set(durations) == {"proxy", "upstream"}, headers
    assert durations["upstream"] > 0 and durations["proxy"] > 0
    assert durations["proxy"] + durations["upstream"] <= wall_ms  # both inside what the client waited
    assert re.match(r"^[0-9a-f]{16}$", headers.get("X-Request-Id", "")), headers
    records = stack.plain_proxy.wait_log_records(
        lambda record: record.get("msg") == "request" and record.get("request_id") == headers["X-Request-Id"])
    assert len(records) == 1 and records[0]["upstream_ms"] > 0 and records[0]["duration_ms"] >= records[0]["upstream_ms"]


def test_own_duration_histogram_counts_answered_requests(stack):
    http("GET", stack.plain_proxy.url + MACHINES, token=stack.server.admin_token)
    text = http("GET", stack.plain_proxy.metrics_url)[2].decode()
    count = re.search(r'hypershift_api_proxy_own_duration_seconds_count\{verb="list"\} ([0-9.]+)', text)
    assert count and float(count.group(1)) >= 1, text[:2000]
    assert 'hypershift_api_proxy_own_duration_seconds_bucket{le="5e-05",verb="list"}' in text


def _sample(text, series):
    found = re.search(r"^%s ([0-9.e+-]+)$" % re.escape(series), text, re.M)
    return float(found.group(1)) if found else None


def test_request_duration_histogram_holds_the_whole_answer_time_of_each_non_watch_request(stack):
    """hypershift_api_proxy_request_duration_seconds (the enhancement's, which HyperShiftAPIProxyHighLatency reads):
    arrival to the whole answer, the API server's time included - so never less than the proxy's own time - with the
    enhancement's buckets; a watch is not in it."""
    before = http("GET", stack.plain_proxy.metrics_url)[2].decode()
    http("GET", stack.plain_proxy.url + MACHINES, token=stack.server.admin_token)
    status, _headers, _body = http("GET", stack.plain_proxy.url + MACHINES + "?watch=true&timeoutSeconds=1",
                                   token=stack.server.admin_token)
    assert status == 200
    text = http("GET", stack.plain_proxy.metrics_url)[2].decode()
    lists = _sample(text, 'hypershift_api_proxy_request_duration_seconds_count{verb="list"}')
    assert lists is not None and lists >= (_sample(before, 'hypershift_api_proxy_request_duration_seconds_count'
                                                           '{verb="list"}') or 0) + 1, text[:2000]
    assert _sample(text, 'hypershift_api_proxy_request_duration_seconds_count{verb="watch"}') is None
    assert _sample(text, 'hypershift_api_proxy_request_duration_seconds_sum{verb="list"}') >= _sample(
        text, 'hypershift_api_proxy_own_duration_seconds_sum{verb="list"}')
    for bound in ("0.001", "0.005", "0.01", "0.05", "0.1", "0.5", "1.0", "10.0", "+Inf"):
        assert 'hypershift_api_proxy_request_duration_seconds_bucket{le="%s",verb="list"}' % bound in text, bound


def test_at_info_a_read_that_succeeded_has_no_log_line_a_failed_one_and_a_write_have(stack):
    """The default level (info): the reads that succeed are counted in the metrics, not logged (a debug line); every
    failed request, write and watch is logged. stack.proxy runs at info, stack.plain_proxy at debug."""
    name = "log-level-%d" % time.monotonic_ns()
    status, read, _body = http("GET", stack.proxy.url + MACHINES)
    assert status == 200
    status, missing, _body = http("GET", stack.proxy.url + MACHINES + "/" + name)
    assert status == 404
    machine = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": name},
               "spec": {"clusterName": "c", "bootstrap": {"dataSecretName": "d"},
                        "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine",
                                              "name": name}}}
    status, written, body = http("POST", stack.proxy.url + MACHINES, body=machine)
    assert status == 201, body[:300]
    lines = {}
    for headers in (missing, written):
        records = stack.proxy.wait_log_records(
            lambda record, wanted=headers["X-Request-Id"]: record.get("msg") == "request"
            and record.get("request_id") == wanted)
        assert len(records) == 1 and records[0]["level"] == "info", records
        lines[headers["X-Request-Id"]] = records[0]
    assert lines[missing["X-Request-Id"]]["code"] == 404 and lines[written["X-Request-Id"]]["method"] == "POST"
    # the 200's line would have been written before the 404's (one log, in order): there is none
    assert not [record for record in stack.proxy.log_records() if record.get("request_id") == read["X-Request-Id"]]
    status, debug_read, _body = http("GET", stack.plain_proxy.url + MACHINES, token=stack.server.admin_token)
    assert status == 200
    records = stack.plain_proxy.wait_log_records(
        lambda record: record.get("msg") == "request" and record.get("request_id") == debug_read["X-Request-Id"])
    assert len(records) == 1 and records[0]["level"] == "debug" and records[0]["code"] == 200, records


def test_the_upstream_wait_and_the_answer_bytes_are_counted_once_the_answer_is_written(stack):
    """They are counted after the answer (Proxy._answered), no longer on its way: each GET still adds one upstream
    observation of its verb and its answer's bytes."""
    def figures():
        text = http("GET", stack.plain_proxy.metrics_url)[2].decode()
        waits = re.search(r'hypershift_api_proxy_upstream_duration_seconds_count\{verb="list"\} ([0-9.e+]+)', text)
        sent = re.search(r'hypershift_api_proxy_bytes_total\{direction="response"\} ([0-9.e+]+)', text)
        return (float(waits.group(1)) if waits else 0.0), (float(sent.group(1)) if sent else 0.0)

    waits_before, sent_before = figures()
    status, _headers, body = http("GET", stack.plain_proxy.url + MACHINES, token=stack.server.admin_token)
    assert status == 200
    deadline = time.monotonic() + 5
    while figures() != (waits_before + 1, sent_before + len(body)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert figures() == (waits_before + 1, sent_before + len(body))
