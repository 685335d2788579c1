"""The GET path's shortcuts give what the plain ways give: the header copies both ways (multidict in C instead of a
loop in Python), the Authorization check's printable pre-test, an answer translated without loads' long-digit scan
(bodies.translated_response), the request's log line built from its fields' encoding."""
# pylint: disable=protected-access  # the reference loops use the module's own sets
import io
import json
import time

import pytest
from aiohttp.test_utils import make_mocked_request
from hypothesis import given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from capi_proxy import bodies, logs

from capi_proxy.proxy import routing
from capi_proxy.core import DEFAULT_GROUP_MAP, TO_PRIVATE, TO_STANDARD, GroupMap, translate_object, translate_text
from capi_proxy.errors import ProxyError
from capi_proxy.metrics import ProxyMetrics
from capi_proxy.proxy.openapi import client_location
from capi_proxy.proxy.pathing import parse_target
from capi_proxy.proxy.relay import _RESPONSE_DROP, Proxy
from capi_proxy.proxy.routing import Route
from capi_proxy.proxy.translation import Translator
from tests.unit.proxy.test_capi_proxy_fast import EDGE_DOCUMENTS
from tests.unit.proxy.test_liststream import go_json
from tests.unit.strategies import proxy_json_values as json_values
from tests.unit.translate.test_capi_groups import EXAMPLE_OBJECTS, adversarial_machine

OBJECT_PATH = "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines/m"
PRIVATE_OBJECT_PATH = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/ns/machines/m"


def get_route(method="GET", mode="capi"):
    return Route(mode, parse_target(OBJECT_PATH, method, {}), PRIVATE_OBJECT_PATH)


# ---- headers ----------------------------------------------------------------------------------------------------
def reference_response_headers(route, upstream_headers, drop_etag=False):
    """The loop _response_headers ran before its multidict copy (1d0fcf3)."""
    headers = []
    for name, value in upstream_headers.items():
        lowered = name.lower()
        if lowered in _RESPONSE_DROP or (drop_etag and lowered == "etag"):
            continue
        if lowered == "warning" and route.translated:
            value = translate_text(value, "to_standard", DEFAULT_GROUP_MAP)
        elif lowered == "location" and route.translated:
            value = client_location(value, DEFAULT_GROUP_MAP)
        headers.append((name, value))
    return headers


HEADER_NAMES = st.sampled_from(["Audit-Id", "Cache-Control", "Content-Type", "Content-Length", "content-length", "Date",
                                "Server", "ETag", "etag", "Connection", "Keep-Alive", "Transfer-Encoding",
                                "Content-Encoding", "X-Kubernetes-Pf-Flowschema-Uid", "Warning", "WARNING", "Location",
                                "Host", "Authorization", "Accept", "accept", "Accept-Encoding", "Upgrade", "TE",
                                "Proxy-Authorization", "User-Agent", "X-Custom"])
HEADER_VALUES = st.sampled_from(["1", "application/json",
                                 '299 - "cluster.hypershift.openshift.io/v1beta1 Machine is deprecated"',
                                 "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/ns/machines/m",
                                 "application/vnd.kubernetes.protobuf, application/json", "Bearer abc", "gzip", ""])
HEADERS = st.lists(st.tuples(HEADER_NAMES, HEADER_VALUES), max_size=12)


@settings(max_examples=300, deadline=None)
@given(pairs=HEADERS, drop_etag=st.booleans(), mode=st.sampled_from(["capi", "private", "relay", "passthrough"]))
def test_response_headers_are_the_loops(pairs, drop_etag, mode):
    proxy = Proxy.__new__(Proxy)
    proxy.group_map = DEFAULT_GROUP_MAP
    upstream = CIMultiDictProxy(CIMultiDict(pairs))
    route = get_route(mode=mode)
    got = proxy._response_headers(route, upstream, drop_etag=drop_etag)
    assert list(CIMultiDict(got).items()) == reference_response_headers(route, upstream, drop_etag)


def reference_upstream_headers(request, use_own_credentials, own_headers, accept=None):
    """upstream_headers as it was before its multidict copy (1d0fcf3)."""
    headers = CIMultiDict()
    for name, value in request.headers.items():
        if name.lower() not in routing._HOP_BY_HOP:
            headers.add(name, value)
    if accept:
        headers["Accept"] = accept
    elif request.path.startswith(("/api/", "/apis/")) or request.path in ("/api", "/apis"):
        headers["Accept"] = routing.strip_binary_accept(request.headers.get("Accept"))
    headers["Accept-Encoding"] = "identity"
    own = False
    authorization = routing.client_authorization(request.headers)
    if authorization is not None:
        headers["Authorization"] = authorization
    elif use_own_credentials:
        headers.update(own_headers())
        own = True
    return headers, own


@settings(max_examples=300, deadline=None)
@given(pairs=HEADERS, own=st.booleans(), path=st.sampled_from([OBJECT_PATH, "/version", "/apis", "/api/v1/pods"]),
       accept=st.sampled_from([None, "application/json"]))
def test_upstream_headers_are_the_loops(pairs, own, path, accept):
    request = make_mocked_request("GET", path, headers=CIMultiDict(pairs))

    def outcome(function):
        try:
            headers, used_own = function(request, own, lambda: {"Authorization": "Bearer own"}, accept)
            return list(headers.items()), used_own
        except ProxyError as exc:
            return exc.code, exc.message
    assert outcome(routing.upstream_headers) == outcome(reference_upstream_headers)


@pytest.mark.parametrize("value", ["Bearer abc", "Bearer a\x00b", "Bearer a\x1fb", "Bearer a\x7fb", "Bearer \x85x",
                                   "Bearer caf\u00e9", "Bearer a\u2028b", "Bearer  x ", "Basic", " Bearer x"])
def test_the_authorization_check_refuses_exactly_control_characters(value):
    request = make_mocked_request("GET", OBJECT_PATH, headers=CIMultiDict([("Authorization", value)]))
    control = any(ord(char) < 0x20 or ord(char) == 0x7f for char in value)
    scheme, _space, credentials = value.strip().partition(" ")
    if control or not scheme or not credentials.strip():
        with pytest.raises(ProxyError):
            routing.client_authorization(request.headers)
    else:
        assert routing.client_authorization(request.headers) == value



# ---- answers translated without the long-digit scan -------------------------------------------------------------
AGENT_MAP = GroupMap({"capi-provider.agent-install.openshift.io": "capi-provider.agent-install.hypershift.openshift.io"})


def full_path(raw, group_map=DEFAULT_GROUP_MAP):
    """Translator.response_bytes' core path before bodies.translated_response: its bytes or its exception's type."""
    try:
        return bodies.dumps(bodies.translate_response(bodies.loads(raw), TO_STANDARD, group_map, in_place=True))
    except Exception as exc:  # pylint: disable=broad-except  # the outcome is compared, whatever it is
        return type(exc)


def assert_translated_as_the_full_path(raw, group_map=DEFAULT_GROUP_MAP):
    """translated_response gives the full path's bytes, or None (then the full path decides); returns its result."""
    fast = bodies.translated_response(raw, TO_STANDARD, group_map)
    assert fast is None or fast == full_path(raw, group_map)
    return fast


def private_answer(obj):
    """obj as kube-apiserver answers a GET of it stored in the private groups (encoding/json, trailing newline)."""
    return go_json(translate_object(obj, TO_PRIVATE)) + b"\n"


@pytest.mark.parametrize("obj", EXAMPLE_OBJECTS + [adversarial_machine()])
def test_example_answers_are_translated_as_the_full_path_translates_them(obj):
    raw = private_answer(json.loads(json.dumps(obj, default=str)))
    fast = assert_translated_as_the_full_path(raw)
    assert fast is not None or b"e+" in full_path(raw)  # taken for every example without a large float
    assert_translated_as_the_full_path(raw, AGENT_MAP)


MACHINE = {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Machine",
           "metadata": {"name": "m", "namespace": "ns", "annotations": {"n": "%s"}},
           "spec": {"clusterName": "c", "infrastructureRef": {"apiGroup": "infrastructure.cluster.hypershift.openshift.io",
                                                              "kind": "AWSMachine", "name": "m"}}}


@pytest.mark.parametrize("value, taken", [
    (b"18446744073709551616", False), (b"-9223372036854775809", False), (b"123456789012345678901234567890", False),
    (b"1" * 308, False), (b"18446744073709551615", True), (b"-9223372036854775808", True), (b"1234567890123456789", True),
    (b"1e16", False), (b"1.5e300", False), (b"1e400", False), (b"12345678901234567.5", False), (b"0.5", True),
    (b"1e-7", True), (b'"e+"', False), (b'"a+b"', True), (b'"1234567890123456789012"', True), (b"[1, {}]", True)])
def test_numbers_orjson_reads_inexactly_go_down_the_full_path(value, taken):
    raw = json.dumps(MACHINE).replace('"%s"', "%s").encode() % value
    fast = assert_translated_as_the_full_path(raw)
    assert (fast is not None) == taken
    if value == b"18446744073709551616":
        assert b"18446744073709551616" in full_path(raw)  # the stdlib's reading: the integer stays exact


@pytest.mark.parametrize("raw", EDGE_DOCUMENTS + [b"{", b"", b"NaN", b"[1e400]", b'{"apiVersion": 1}',
                                                 b'{"apiVersion": "v1", "kind": "A", "metadata": {"ownerReferences": 1}}',
                                                 b'{"apiVersion": "v1", "metadata": {"managedFields": [18446744073709551616]}}',
                                                 b"[" * 2000 + b"]" * 2000])
def test_edge_answers_are_translated_as_the_full_path_or_left_to_it(raw):
    assert_translated_as_the_full_path(raw)


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_any_json_answer_is_translated_as_the_full_path_or_left_to_it(value):
    document = dict(MACHINE, extra=value)
    assert_translated_as_the_full_path(json.dumps(document, ensure_ascii=False).encode())
    assert_translated_as_the_full_path(json.dumps(value).encode())


# ---- the request's log line ------------------------------------------------------------------------------------
def record_line(logger, level, message, fields, now):
    """write's line from its record (the way before _fields_line), at time now."""
    record = {"ts": "%.3f" % now, "level": level, "component": logger.component, "msg": message}
    record.update(fields)
    return logs.scrub(logs._json_line(record)) + "\n"


class Unencodable(object):
    def __str__(self):
        return "unencodable \u00e9"


LOG_FIELDS = [
    {"request_id": "abc12345600000001", "method": "GET", "path": "/apis/cluster.x-k8s.io/v1beta2/machines/m",
     "verb": "get", "group": "cluster.x-k8s.io", "code": 200, "adapted": None, "streamed": None,
     "duration_ms": 1.234, "upstream_ms": 0.876, "user_agent": "kubectl/v1.31 (linux/amd64)"},
    {"path": "/x?token=s3cr3t&a=1", "user_agent": "Bearer abc.def \u212a eyJhbGciOiJI.eyJzdWIiOiJib2IifQ.sig"},
    {"h": "authorization: secret", "AUTHORIZATION": "=x", "\u00e9": "\U0001f600 \u2028 <&>"},
    {"big": 2 ** 64}, {"lone": "\ud800"}, {"object": Unencodable(), "n": [1, {"a": None}]},
    {"msg": "mine"}, {"ts": 1}, {"level": "x"}, {"component": "y"}, {}, {1: "int key"}, {"nan": float("nan")},
]


class FixedTime(object):
    """logs' time module with time() fixed: the record's line and the built one carry the same ts."""

    def __init__(self):
        self.now = time.time()

    def time(self):
        return self.now


@pytest.mark.parametrize("fields", LOG_FIELDS)
@pytest.mark.parametrize("level, message, component", [("info", "request", "capi-proxy"), ("warning", "é \"q\"", "c"),
                                                       ("error", "token=1", "authorization")])
def test_log_lines_built_from_the_fields_are_the_records_lines(fields, level, message, component, monkeypatch):
    clock = FixedTime()
    monkeypatch.setattr(logs, "time", clock)
    stream = io.StringIO()
    logger = logs.JsonLogger("debug", stream=stream, component=component)
    for _ in range(2):  # the head remembered the second time
        logger.write(level, message, fields)
    assert stream.getvalue() == record_line(logger, level, message, fields, clock.now) * 2


def test_the_request_lines_fields_are_built_not_recorded():
    assert logs.JsonLogger("info")._fields_line("info", "request", LOG_FIELDS[0]) is not None
    for fields in ({"msg": "mine"}, {}, {"big": 2 ** 64}, {1: "int key"}):
        assert logs.JsonLogger("info")._fields_line("info", "request", fields) is None


@settings(max_examples=200, deadline=None)
@given(fields=st.dictionaries(st.text(max_size=12), json_values, max_size=6),
       message=st.text(max_size=12))
def test_any_log_fields_give_the_records_line(fields, message):
    clock = FixedTime()
    saved = logs.time
    logs.time = clock
    try:
        stream = io.StringIO()
        logger = logs.JsonLogger("info", stream=stream)
        logger.write("info", message, fields)
        assert stream.getvalue() == record_line(logger, "info", message, fields, clock.now)
    finally:
        logs.time = saved


@pytest.mark.parametrize("raw", [b"", b"cluster.hypershift.openshift.io", b'{"apiVersion":"v1"}', b"x" * 100 + b"+",
                                 bytearray(b'{"g":"capi-provider.agent-install.hypershift.openshift.io"}')])
def test_contains_any_finds_what_in_finds(raw):
    for needles in (bodies.markers(DEFAULT_GROUP_MAP, TO_STANDARD), bodies.markers(AGENT_MAP, TO_STANDARD),
                    bodies.markers(AGENT_MAP, TO_PRIVATE), (), (b"+",), (b"",)):
        assert bodies.contains_any(raw, needles) == any(needle in raw for needle in needles)


def full_event(line):
    """Translator._event_bytes' core path before bodies.translated_response: its bytes or its exception's message."""
    try:
        event = bodies.translate_response(bodies.loads(line), TO_STANDARD, DEFAULT_GROUP_MAP, in_place=True)
        return bodies.dumps(event) + b"\n"
    except ValueError as exc:
        return "cannot translate a watch event: %s" % str(exc)[:300]


@pytest.mark.parametrize("obj", EXAMPLE_OBJECTS[:60] + [adversarial_machine(), {"apiVersion": 1}, {"metadata": []}])
@pytest.mark.parametrize("number", [b"1", b"18446744073709551616", b"1e300"])
def test_watch_events_are_translated_as_the_full_path_translates_them(obj, number):
    translator = Translator(DEFAULT_GROUP_MAP, False, None, ProxyMetrics())
    private = translate_object(obj, TO_PRIVATE) if isinstance(obj.get("apiVersion"), str) else obj
    line = b'{"type":"MODIFIED","object":' + go_json(json.loads(json.dumps(private, default=str))) + b',"n":' + number \
        + b"}"
    try:
        answer = translator.event(get_route(), line)
    except ProxyError as exc:
        answer = exc.message
    if bodies.contains_any(line, bodies.markers(DEFAULT_GROUP_MAP, TO_STANDARD)):
        assert answer == full_event(line)
    else:  # nothing to translate: the line as it came
        assert answer == line + b"\n"
