"""The GET path's shortcuts give what the plain ways give: the remembered translations of GET answers, the header
copies both ways (multidict in C instead of a loop in Python), the Authorization check's printable pre-test."""
# pylint: disable=protected-access  # the memo's contents and the reference loops' sets are what is compared
import pytest
from aiohttp.test_utils import make_mocked_request
from hypothesis import given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from capi_proxy import routing, translation
from capi_proxy.core import DEFAULT_GROUP_MAP, TO_PRIVATE, translate_object, translate_text
from capi_proxy.errors import ProxyError
from capi_proxy.metrics import ProxyMetrics
from capi_proxy.openapi import client_location
from capi_proxy.pathing import parse_target
from capi_proxy.proxy import _RESPONSE_DROP, Proxy
from capi_proxy.routing import Route
from capi_proxy.translation import Translator
from tests.unit.proxy.test_liststream import go_json
from tests.unit.translate.test_capi_groups import EXAMPLE_OBJECTS, adversarial_machine

OBJECT_PATH = "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines/m"
MEMO_MAX_ANSWER = translation._ANSWER_MEMO_MAX_ANSWER
PRIVATE_OBJECT_PATH = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/ns/machines/m"


class _NoCrds(object):
    value = None  # conversion then reads no contract labels


def translator():
    return Translator(DEFAULT_GROUP_MAP, False, _NoCrds(), ProxyMetrics())


def get_route(method="GET", mode="capi"):
    return Route(mode, parse_target(OBJECT_PATH, method, {}), PRIVATE_OBJECT_PATH)


def answer(obj):
    """obj as kube-apiserver answers a GET of it from the private groups."""
    return go_json(translate_object(obj, TO_PRIVATE))


def full_path(raw, route):
    """The whole translation, never remembered: its bytes or the ProxyError it raises."""
    try:
        return translator().response_bytes(raw, route)
    except ProxyError as exc:
        return exc


@pytest.mark.parametrize("obj", EXAMPLE_OBJECTS + [pytest.param(adversarial_machine(), id="adversarial")])
def test_a_remembered_get_answer_is_the_full_translation(obj):
    try:
        raw = answer(obj)
    except ValueError:
        pytest.skip("the example has no private form")
    route, plain = get_route(), translator()
    expected = full_path(raw, route)
    remembering = translator()
    for _attempt in range(2):  # translated, then remembered
        try:
            got = remembering.response_body(route, "application/json", raw)
        except ProxyError as exc:
            got = exc
        if isinstance(expected, ProxyError):
            assert isinstance(got, ProxyError) and (got.code, got.message) == (expected.code, expected.message)
        else:
            assert got == expected == plain.response_body(route, "application/json", raw)
    # an answer that is refused is never remembered; one that needs no translation returns as it came
    remembered = (not isinstance(expected, ProxyError) and len(raw) <= MEMO_MAX_ANSWER
                  and b"hypershift.openshift.io" in raw)
    assert (raw in remembering._answer_memo) == remembered


def test_only_plain_get_answers_are_remembered():
    raw = answer(adversarial_machine())
    for route in (get_route("PUT"), get_route("DELETE"), get_route(mode="passthrough"), get_route(mode="crd")):
        memo_holder = translator()
        memo_holder.response_body(route, "application/json", raw)
        assert not memo_holder._answer_memo
    adapted = get_route()
    adapted.client_version, adapted.served_version = "v1beta1", "v1beta2"
    memo_holder = translator()
    try:
        memo_holder.response_body(adapted, "application/json", raw)
    except ProxyError:
        pass  # converted or refused: not remembered either way
    assert not memo_holder._answer_memo
    memo_holder = translator()
    big = go_json(dict(translate_object(adversarial_machine(), TO_PRIVATE), padding="x" * 20000))
    memo_holder.response_body(get_route(), "application/json", big)
    assert not memo_holder._answer_memo


def test_the_memo_is_bounded_in_entries_and_bytes(monkeypatch):
    monkeypatch.setattr(translation, "_ANSWER_MEMO_ENTRIES", 3)
    holder, route = translator(), get_route()
    answers = [answer(dict(adversarial_machine(), metadata={"name": "m-%d" % index, "namespace": "ns"}))
               for index in range(5)]
    for raw in answers:
        holder.response_body(route, "application/json", raw)
    assert list(holder._answer_memo) == answers[2:]
    holder.response_body(route, "application/json", answers[2])  # a hit is the most recent again
    assert list(holder._answer_memo) == [answers[3], answers[4], answers[2]]
    memo = holder._answer_memo
    assert holder._answer_memo_bytes == sum(len(raw) + len(translated) for raw, translated in memo.items())
    monkeypatch.setattr(translation, "_ANSWER_MEMO_BYTES", 2 * (len(answers[0]) + 100))
    holder.response_body(route, "application/json", answers[0])
    assert len(holder._answer_memo) == 1


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

