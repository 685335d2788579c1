"""The limits the proxy enforces, without a server: nesting depth (up to the API server's 10,000 levels and past
it), YAML that would crash libyaml or expand without bound, Authorization values, metric labels, the body budget."""
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capi_proxy import bodies, nesting
from capi_proxy.proxy.budget import ByteBudget
from capi_proxy.errors import ProxyError
from capi_proxy.logs import scrub
from capi_proxy.metrics import OTHER, ProxyMetrics, group_label, verb_label
from capi_proxy.core import DEFAULT_GROUP_MAP
from capi_proxy.proxy.pathing import parse_target
from capi_proxy.proxy.routing import Route, client_authorization
from capi_proxy.proxy.translation import Translator
from capi_proxy.upstream import TimedCache
from multidict import CIMultiDict
from tests.unit.strategies import json_holes, proxy_json_values as json_values

LIST_PATH = "/apis/cluster.x-k8s.io/v1beta2/namespaces/hcp/clusters"


def deep_list_bytes(depth):
    """A ClusterList (private group) whose one item holds `depth` nested arrays: JSON text built without recursion."""
    item = {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": "deep", "namespace": "hcp"},
            "spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.hypershift.openshift.io",
                                           "kind": "AWSCluster", "name": "deep"},
                     "topology": {"variables": [{"name": "v", "value": "HOLE"}]}}}
    document = {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "ClusterList", "metadata": {},
                "items": [item]}
    return json.dumps(document).replace('"HOLE"', "[" * depth + "]" * depth).encode()


@pytest.fixture(name="proxy")
def translator_fixture():
    """The proxy's body rules without a proxy around them (they do no I/O)."""
    return Translator(DEFAULT_GROUP_MAP, False, TimedCache(lambda: None, 30.0), ProxyMetrics())


def capi_route(method="GET"):
    target = parse_target(LIST_PATH, method, {})
    return Route("capi", target, LIST_PATH.replace("cluster.x-k8s.io", "cluster.hypershift.openshift.io"))


@pytest.mark.parametrize("depth", [10, 470, 1500, 9995])  # 9995: the item is 10,000 deep, the API server's limit
def test_responses_are_translated_up_to_the_api_servers_depth(proxy, depth):
    raw = deep_list_bytes(depth)
    translated = proxy.depth_safe_response(proxy.response_bytes, raw, capi_route())
    assert nesting.json_depth(translated) == nesting.json_depth(raw) == depth + 7
    assert b"hypershift" not in translated
    assert translated.replace(b"cluster.x-k8s.io", b"cluster.hypershift.openshift.io") == \
        nesting.on_deep_thread(lambda: bodies.dumps(json.loads(raw)))  # nothing else changed


def test_responses_past_the_limit_are_a_502(proxy):
    with pytest.raises(ProxyError) as refusal:
        proxy.depth_safe_response(proxy.response_bytes, deep_list_bytes(20000), capi_route())
    assert refusal.value.code == 502 and "nested more than" in refusal.value.message


@pytest.mark.parametrize("depth, code", [(9000, None), (20000, 400), (1000000, 400)])
def test_request_bodies_deep_and_too_deep(proxy, depth, code):
    body = deep_list_bytes(depth).replace(b"cluster.hypershift.openshift.io", b"cluster.x-k8s.io")
    route = capi_route("POST")
    if code is None:
        translated = proxy.request_body(route, body, "application/json")
        assert nesting.json_depth(translated) == depth + 7 and b"cluster.hypershift.openshift.io" in translated
    else:
        with pytest.raises(ProxyError) as refusal:
            proxy.request_body(route, body, "application/json")
        assert refusal.value.code == code


def test_watch_events_deep_and_too_deep(proxy):
    route = capi_route()

    def event(depth):
        return (b'{"type":"ADDED","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Cluster",'
                b'"spec":{"v":' + b"[" * depth + b"]" * depth + b"}}}")
    translated = proxy.event(route, event(10000))
    assert translated.endswith(b"\n") and b"cluster.x-k8s.io/v1beta2" in translated and b"hypershift" not in translated
    with pytest.raises(ProxyError) as refusal:
        proxy.event(route, event(20000))
    assert refusal.value.code == 500 and "nested more than" in refusal.value.message


def test_the_recursion_limit_is_back_after_a_deep_document(proxy):
    import sys  # pylint: disable=import-outside-toplevel
    before = sys.getrecursionlimit()
    proxy.depth_safe_response(proxy.response_bytes, deep_list_bytes(5000), capi_route())
    assert sys.getrecursionlimit() == before


def deep_strings():
    """JSON text with brackets inside strings and escapes, which must not count as nesting."""
    return st.text(alphabet='[]{}"\\ab', max_size=10)


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(json_values, st.lists(deep_strings()), st.dictionaries(deep_strings(), deep_strings())))
def test_json_depth_is_the_parsed_depth(value):
    def depth(node):
        if isinstance(node, dict):
            return 1 + max([depth(child) for child in node.values()] or [0])
        if isinstance(node, list):
            return 1 + max([depth(child) for child in node] or [0])
        return 0
    raw = json.dumps(value).encode()
    assert nesting.json_depth(raw, 100) == depth(value)
    assert nesting.json_depth(raw, 0) == min(depth(value), 1)
    assert nesting.json_depth(b" [ %s ] " % raw, 100) == depth(value) + 1


def test_yaml_bodies_never_reach_libyaml_deep_and_never_expand_without_bound(proxy):
    route = capi_route("PATCH")
    with pytest.raises(ProxyError) as refusal:  # libyaml's composer overflowed the C stack on this: a crash
        proxy.request_body(route, b"cluster.x-k8s.io: " + b"[" * 30000, bodies.APPLY_PATCH)
    assert refusal.value.code == 400
    laughs = b"a: &a [cluster.x-k8s.io, x, x, x, x, x, x, x, x, x]\n" + b"".join(
        b"%s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n" % ((bytes([98 + index]),) * 2 + (bytes([97 + index]),) * 10)
        for index in range(8))
    with pytest.raises(ProxyError) as refusal:
        proxy.request_body(route, laughs, bodies.APPLY_PATCH)
    assert refusal.value.code == 413 and "aliases" in refusal.value.message
    plain = b"apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: c}\n"
    assert b"cluster.hypershift.openshift.io/v1beta2" in proxy.request_body(route, plain, bodies.APPLY_PATCH)


def test_expanded_nodes_counts_shared_parts_each_time_in_linear_time():
    leaf = [1, 2, 3]
    shared = {"a": leaf, "b": leaf}
    assert bodies.expanded_nodes(shared, 100) == 1 + 2 * 4
    bomb = [0]
    for _level in range(200):
        bomb = [bomb, bomb]
    assert bodies.expanded_nodes(bomb, 10 ** 6) > 10 ** 6  # 2**200 values, answered at once


@pytest.mark.parametrize("values, expected", [
    ([], None),
    (["Bearer abc"], "Bearer abc"),
    ([""], 401), ([" "], 401), (["Bearer"], 401), (["Bearer   "], 401), (["Bearer a\x01"], 401),
    (["Bearer a", "Bearer b"], 400),
])
def test_client_authorization(values, expected):
    headers = CIMultiDict([("Authorization", value) for value in values])
    if isinstance(expected, int):
        with pytest.raises(ProxyError) as refusal:
            client_authorization(headers)
        assert refusal.value.code == expected
    else:
        assert client_authorization(headers) == expected


def test_metric_labels_come_from_bounded_sets():
    served = {"cluster.hypershift.openshift.io": ["v1beta2"], "apps": ["v1"]}
    assert group_label("", served, DEFAULT_GROUP_MAP) == "core"
    assert group_label("apps", served, DEFAULT_GROUP_MAP) == "apps"
    assert group_label("cluster.x-k8s.io", served, DEFAULT_GROUP_MAP) == "cluster.x-k8s.io"
    assert group_label("bootstrap.cluster.x-k8s.io", served, DEFAULT_GROUP_MAP) == OTHER  # not served
    assert group_label("g123.example", served, DEFAULT_GROUP_MAP) == OTHER
    assert verb_label("list") == "list" and verb_label("foo") == OTHER


def test_budget_refuses_a_read_past_the_limit_while_others_hold_bytes():
    metrics = ProxyMetrics()
    budget = ByteBudget(100, on_change=metrics.inflight_bytes.set, on_refusal=metrics.budget_refusals.inc)
    first, second = budget.hold(), budget.hold()
    first.take(150)  # alone: a body larger than the budget still goes through
    with pytest.raises(ProxyError) as refusal:
        second.take(10)
    assert refusal.value.code == 429 and second.held == 0 and metrics.budget_refusals.value() == 1
    second.take(10, refusable=False)  # a write's answer is always taken
    assert budget.used == 160 and metrics.inflight_bytes.value() == 160
    first.release()
    second.release()
    assert budget.used == 0


def test_a_hold_gives_back_what_an_attempt_took_and_keeps_the_rest():
    metrics = ProxyMetrics()
    budget = ByteBudget(100, on_change=metrics.inflight_bytes.set)
    hold, other = budget.hold(), budget.hold()
    hold.take(30)  # the request's own body
    other.take(20)
    for _attempt in range(50):  # an adapted patch retrying conflicts: read and write 40 bytes each time
        hold.take(40, refusable=True)
        hold.shrink_to(30)
    assert hold.held == 30 and budget.used == 50 and metrics.inflight_bytes.value() == 50
    hold.shrink_to(45)  # never takes more
    assert hold.held == 30 and budget.used == 50
    hold.release()
    other.release()
    assert budget.used == 0


@pytest.mark.parametrize("line", [
    "Error handling request: b'Authorization : Bearer s3cr3t-token'",
    "b'authorization: Bearer s3cr3t-token\\x01'",
    "Authorization: s3cr3t-token",
    '"authorization": "Basic s3cr3t-token"',
])
def test_scrub_hides_credentials_in_malformed_header_lines(line):
    assert "s3cr3t" not in scrub(line)


def test_deep_thread_reports_errors_and_values():
    assert nesting.on_deep_thread(lambda: 7) == 7
    with pytest.raises(KeyError):
        nesting.on_deep_thread(lambda: {}["missing"])

    def recurse(level):
        return recurse(level + 1)
    with pytest.raises(nesting.DocumentTooDeep):
        nesting.on_deep_thread(recurse, 0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hole=json_holes(), where=st.sampled_from(["response", "event", "request"]))
def test_every_generated_body_is_translated_or_refused_with_a_status(proxy, hole, where):
    """The body paths on generated text: bytes of valid JSON or a ProxyError (a Status), never anything else."""
    raw = deep_list_bytes(0).replace(b"[]", hole, 1)
    try:
        if where == "response":
            answer = proxy.depth_safe_response(proxy.response_bytes, raw, capi_route())
        elif where == "event":
            answer = proxy.event(capi_route(), b'{"type":"ADDED","object":' + raw + b"}")
        else:
            answer = proxy.request_body(capi_route("POST"), raw.replace(
                b"cluster.hypershift.openshift.io", b"cluster.x-k8s.io"), "application/json")
    except ProxyError as refusal:
        assert 400 <= refusal.code < 600 and refusal.message
        return
    assert nesting.json_depth(answer) <= nesting.MAX_DEPTH + 1
    document = nesting.on_deep_thread(json.loads, answer)
    assert isinstance(document, dict)
