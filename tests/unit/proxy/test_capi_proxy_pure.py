"""Pure parts of capi_proxy: path hardening, body translation, discovery, OpenAPI, adaptation, logs, metrics."""
import asyncio
import io
import json

import pytest

from capi_proxy import bodies, discovery

from capi_proxy.proxy import openapi
from capi_proxy.proxy.adaptation import apply_patch, convert_document, merge_patch
from capi_proxy.core import DEFAULT_GROUP_MAP, TO_PRIVATE
from capi_proxy.errors import ProxyError
from capi_proxy.logs import BATCH_SECONDS, JsonLogger, scrub
from capi_proxy.metrics import Counter, Histogram, ProxyMetrics, Registry
from capi_proxy.proxy.pathing import check_path, parse_target, replace_segment

PRIVATE = "cluster.hypershift.openshift.io"


@pytest.mark.parametrize("path", ["/apis/cluster.x-k8s.io/../api/v1/secrets", "/apis/x/%2e%2e/y", "/apis/x/%2F",
                                  "/apis//x", "/apis/./x", "/apis/x\\y", "/apis/x%zz", "/apis/x/%252e", "apis/x",
                                  "/apis/x y"])
def test_check_path_refuses_tricks(path):
    with pytest.raises(ProxyError) as error:
        check_path(path)
    assert error.value.code == 400 and "refused" in error.value.message


@pytest.mark.parametrize("path", ["/apis/", "/apis", "/api/v1/namespaces/a/pods/p:8080/proxy", "/healthz",
                                  "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines/m-1/status"])
def test_check_path_accepts_canonical_paths(path):
    check_path(path)


def test_parse_target_like_request_info():
    target = parse_target("/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines/m/status", "PATCH", {})
    assert (target.group, target.version, target.namespace, target.resource, target.name, target.subresource,
            target.verb) == ("cluster.x-k8s.io", "v1beta2", "ns", "machines", "m", "status", "patch")
    watch = parse_target("/apis/cluster.x-k8s.io/v1beta1/machines", "GET", {"watch": "1"})
    assert watch.verb == "watch" and watch.namespace is None
    namespace = parse_target("/api/v1/namespaces/ns", "DELETE", {})
    assert (namespace.resource, namespace.name, namespace.verb) == ("namespaces", "ns", "delete")
    assert parse_target("/apis/g/v/things", "DELETE", {}).verb == "deletecollection"
    assert replace_segment("/apis/a/v1/x/", 1, "b") == "/apis/b/v1/x/"


def test_json_patch_values_are_translated_at_their_path():
    operations = [
        {"op": "add", "path": "/metadata/ownerReferences/-",
         "value": {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "name": "c", "uid": "u"}},
        {"op": "replace", "path": "/spec/infrastructureRef/apiGroup", "value": "infrastructure.cluster.x-k8s.io"},
        {"op": "replace", "path": "/metadata/labels/cluster.x-k8s.io~1cluster-name", "value": "cluster.x-k8s.io"},
        {"op": "test", "path": "/apiVersion", "value": "cluster.x-k8s.io/v1beta2"},
        {"op": "remove", "path": "/spec/x"},
    ]
    translated = bodies.translate_json_patch(operations, TO_PRIVATE)
    assert translated[0]["value"]["apiVersion"] == PRIVATE + "/v1beta2"
    assert translated[1]["value"] == "infrastructure." + PRIVATE
    assert translated[2]["value"] == "cluster.x-k8s.io"  # a label value is user data
    assert translated[3]["value"] == PRIVATE + "/v1beta2"
    assert translated[4] == operations[4]
    assert operations[0]["value"]["apiVersion"] == "cluster.x-k8s.io/v1beta2"  # input untouched


def test_partial_and_yaml_bodies():
    patch = {"spec": {"infrastructureRef": {"kind": "AWSMachine", "apiGroup": "infrastructure.cluster.x-k8s.io"}}}
    translated = bodies.translate_document(patch, bodies.MERGE_PATCH, TO_PRIVATE)
    assert translated == {"spec": {"infrastructureRef": {"kind": "AWSMachine", "apiGroup": "infrastructure." + PRIVATE}}}
    document = bodies.decode(b"apiVersion: cluster.x-k8s.io/v1beta2\nkind: Machine\nmetadata: {name: m}\n",
                             bodies.APPLY_PATCH, "the body")
    assert bodies.translate_document(document, bodies.APPLY_PATCH, TO_PRIVATE)["apiVersion"] == PRIVATE + "/v1beta2"
    with pytest.raises(ProxyError) as error:
        bodies.decode(b'{"apiVersion": ', "application/json", "the request body")
    assert error.value.code == 400 and "not valid JSON" in error.value.message
    with pytest.raises(ProxyError):
        bodies.translate_json_patch({"op": "add"}, TO_PRIVATE)


def _aggregated():
    def resource(plural, kind):
        return {"resource": plural, "responseKind": {"group": PRIVATE, "version": "v1beta2", "kind": kind},
                "scope": "Namespaced", "verbs": ["get"], "shortNames": ["hcp" + plural[:2]], "categories": ["hypershift-capi"],
                "subresources": [{"subresource": "status", "responseKind": {"group": PRIVATE, "version": "v1beta2", "kind": kind},
                                  "verbs": ["get"]}]}
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": [
        {"metadata": {"name": PRIVATE}, "versions": [{"version": "v1beta2", "resources": [
            resource("machines", "Machine"), resource("clusterclasses", "ClusterClass")]}]},
        {"metadata": {"name": "cluster.x-k8s.io"}, "versions": [{"version": "v1beta2", "resources": []}]},
        {"metadata": {"name": "apps"}, "versions": [{"version": "v1", "resources": []}]}]}


def test_served_index_adapts_only_convertible_core_kinds():
    index = discovery.ServedIndex(_aggregated(), DEFAULT_GROUP_MAP)
    assert index.adaptation(PRIVATE, "v1beta1", "machines") == "v1beta2"
    assert index.adaptation(PRIVATE, "v1beta2", "machines") is None  # served
    assert index.adaptation(PRIVATE, "v1beta1", "clusterclasses") is None  # no conversion rules
    assert index.adapted_versions(PRIVATE) == ["v1beta2", "v1beta1"]


@pytest.mark.parametrize("show_private", [False, True])
def test_aggregated_discovery_renames_and_shadows(show_private):
    index = discovery.ServedIndex(_aggregated(), DEFAULT_GROUP_MAP)
    shown = discovery.aggregated_to_standard(_aggregated(), index, DEFAULT_GROUP_MAP, show_private)
    names = [item["metadata"]["name"] for item in shown["items"]]
    assert names == ([PRIVATE] if show_private else []) + ["cluster.x-k8s.io", "apps"]
    standard = shown["items"][-2]
    v1beta1 = [entry for entry in standard["versions"] if entry["version"] == "v1beta1"][0]
    machines = v1beta1["resources"][0]
    assert machines["responseKind"] == {"group": "cluster.x-k8s.io", "version": "v1beta1", "kind": "Machine"}
    assert machines["shortNames"] == ["ma"] and machines["categories"] == ["cluster-api"]
    assert machines["subresources"][0]["responseKind"]["version"] == "v1beta1"


def test_openapi_index_and_document():
    index = {"paths": {"apis/%s/v1beta2" % PRIVATE: {"serverRelativeURL": "/openapi/v3/apis/%s/v1beta2?hash=A" % PRIVATE},
                       "apis/cluster.x-k8s.io/v1beta2": {"serverRelativeURL": "/openapi/v3/apis/cluster.x-k8s.io/v1beta2"},
                       "api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=B"}}}
    shown = json.loads(openapi.translate_response(json.dumps(index).encode(), "/openapi/v3", DEFAULT_GROUP_MAP, False))
    assert shown["paths"] == {"apis/cluster.x-k8s.io/v1beta2": {"serverRelativeURL": "/openapi/v3/apis/cluster.x-k8s.io/v1beta2?hash=A"},
                              "api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=B"}}
    document = {"paths": {"/apis/%s/v1beta2/machines" % PRIVATE: {"patch": {"x-kubernetes-group-version-kind": {
        "group": PRIVATE, "version": "v1beta2", "kind": "Machine"}}}},
        "components": {"schemas": {"m": {"x-kubernetes-group-version-kind": [{"group": PRIVATE, "kind": "Machine"}]}}}}
    shown = json.loads(openapi.translate_response(json.dumps(document).encode(), "/openapi/v3/apis/cluster.x-k8s.io/v1beta2",
                                                  DEFAULT_GROUP_MAP, False))
    operation = shown["paths"]["/apis/cluster.x-k8s.io/v1beta2/machines"]["patch"]
    assert operation["x-kubernetes-group-version-kind"]["group"] == "cluster.x-k8s.io"
    assert shown["components"]["schemas"]["m"]["x-kubernetes-group-version-kind"][0]["group"] == "cluster.x-k8s.io"
    assert openapi.upstream_path("/openapi/v3/apis/cluster.x-k8s.io/v1beta2", DEFAULT_GROUP_MAP) == \
        "/openapi/v3/apis/%s/v1beta2" % PRIVATE


def test_adaptation_of_events_and_patches():
    bookmark = {"type": "BOOKMARK", "object": {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                                               "metadata": {"resourceVersion": "7"}}}
    assert convert_document(bookmark, "v1beta1", [])["object"]["apiVersion"] == "cluster.x-k8s.io/v1beta1"
    status = {"apiVersion": "v1", "kind": "Status", "code": 404}
    assert convert_document(status, "v1beta1", []) == status
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
    assert apply_patch({"a": 1}, [{"op": "replace", "path": "/a", "value": 2}], bodies.JSON_PATCH) == {"a": 2}
    with pytest.raises(ProxyError) as error:
        apply_patch({"a": 1}, [{"op": "remove", "path": "/zz"}], bodies.JSON_PATCH)
    assert error.value.code == 422
    with pytest.raises(ProxyError) as error:
        apply_patch({}, {}, bodies.STRATEGIC_PATCH)
    assert error.value.code == 415


def test_logs_scrub_tokens_and_metrics_render():
    line = scrub('{"h": "Bearer abc.def", "q": "/x?token=s3cr3t&a=1", "jwt": "eyJhbGciOiJI.eyJzdWIiOiJib2IifQ.sig"}')
    assert "abc.def" not in line and "s3cr3t" not in line and "eyJzdWIiOiJib2IifQ" not in line
    metrics = ProxyMetrics()
    metrics.requests.inc("cluster.x-k8s.io", "get", "200")
    metrics.translation_seconds.observe(0.0003, "response")
    text = metrics.registry.render()
    assert 'hypershift_api_proxy_requests_total{code="200",group="cluster.x-k8s.io",verb="get"} 1.0' in text
    assert 'hypershift_api_proxy_translation_duration_seconds_bucket{direction="response",le="0.0005"} 1.0' in text
    assert 'hypershift_api_proxy_translation_duration_seconds_count{direction="response"} 1.0' in text
    assert metrics.requests.value("cluster.x-k8s.io", "get", "200") == 1.0


@pytest.mark.parametrize("fields", [
    {"path": "/apis/x", "code": 200, "adapted": None, "streamed": True, "duration_ms": 1.234, "user_agent": "k\u00fcbectl/\u2603"},
    {"big": 2 ** 70, "negative": -(2 ** 64)},  # beyond orjson's integers: the stdlib writes the line
    {"lone": "\ud800 half a pair", "tuple": (1, "a"), "object": ProxyError(400, "x")},  # default=str for the rest
])
def test_log_lines_are_one_json_object_each_with_the_fields_given(fields):
    stream = io.StringIO()
    JsonLogger("info", stream=stream).info("request", **fields)
    lines = stream.getvalue().split("\n")
    assert lines[1:] == [""]
    record = json.loads(lines[0])
    assert record["level"] == "info" and record["msg"] == "request" and record["component"] == "capi-proxy"
    assert {name: record[name] for name in fields} == json.loads(json.dumps(fields, default=str))


def test_log_lines_in_an_event_loop_go_out_together_in_order_warnings_at_the_next_turn():
    stream = io.StringIO()
    logger = JsonLogger("info", stream=stream)

    def messages():
        return [json.loads(line)["msg"] for line in stream.getvalue().splitlines()]

    async def turns():
        logger.info("first")
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert stream.getvalue() == ""  # an info line waits to go out with others
        logger.info("second")
        await asyncio.sleep(BATCH_SECONDS * 1.5)
        assert messages() == ["first", "second"]  # ... at most BATCH_SECONDS later, in one write
        logger.info("third")
        logger.warning("fourth")
        assert stream.getvalue().count("\n") == 2  # nothing during this turn
        await asyncio.sleep(0)
        assert messages() == ["first", "second", "third", "fourth"]  # a warning: at the next turn, with what waited
        logger.info("fifth")
        logger.flush()  # what the proxy does once its loop has ended
        assert messages()[-1] == "fifth"
        await asyncio.sleep(BATCH_SECONDS * 1.5)  # the flush's cancelled timer writes nothing twice
        assert messages().count("fifth") == 1
        for number in range(300):  # more than the pending bound are written as they come
            logger.info("many", number=number)
        assert len(messages()) >= 5 + 256

    asyncio.run(turns())
    logger.info("after the loop")  # no loop: at once, after whatever was pending
    numbers = [json.loads(line).get("number") for line in stream.getvalue().splitlines()[5:-1]]
    assert numbers == list(range(300)) and json.loads(stream.getvalue().splitlines()[-1])["msg"] == "after the loop"


def test_metric_children_are_kept_per_label_values():
    metrics = ProxyMetrics()
    for _round in range(3):
        metrics.upstream_seconds.observe(0.001, "get")
    metrics.upstream_seconds.observe(0.002, "list")
    assert metrics.upstream_seconds.count("get") == 3 and metrics.upstream_seconds.count("list") == 1


@pytest.mark.parametrize("labelnames", [(), ("verb",)])
def test_collected_counters_and_histograms_expose_what_prometheus_client_would(labelnames):
    """The proxy's lock-free counters and histograms, scraped, are prometheus-client's text for the same updates:
    bucket edges included (a value equal to a bound counts in that bound's bucket), +Inf, sum, count."""
    import prometheus_client  # pylint: disable=import-outside-toplevel
    ours = Registry()
    theirs = prometheus_client.CollectorRegistry()
    buckets = (0.001, 0.01, 0.1)
    histograms = (Histogram(ours, "x_seconds", "X.", labelnames, buckets=buckets),
                  prometheus_client.Histogram("x_seconds", "X.", labelnames, buckets=buckets, registry=theirs))
    counters = (Counter(ours, "y_total", "Y.", labelnames),
                prometheus_client.Counter("y_total", "Y.", labelnames, registry=theirs))
    values = (0.0005, 0.001, 0.0010001, 0.01, 0.5, 7.0, 0.0)
    for number, value in enumerate(values):
        label = ("get", "list")[number % 2]
        histograms[0].observe(value, *((label,) if labelnames else ()))
        (histograms[1].labels(label) if labelnames else histograms[1]).observe(value)
        counters[0].inc(*((label,) if labelnames else ()), amount=value)
        (counters[1].labels(label) if labelnames else counters[1]).inc(value)
    assert ours.render() == prometheus_client.generate_latest(theirs).decode()
    assert histograms[0].count(*(("get",) if labelnames else ())) == (4 if labelnames else len(values))


def test_the_proxy_needs_only_the_pure_core_of_the_collection():
    """The sidecar image has the collection but not the kubernetes client or kubernetes.core: importing the proxy and
    the shim must not pull either in (crds/render.py, which the proxy once imported for three names, now does)."""
    import subprocess  # pylint: disable=import-outside-toplevel
    import sys  # pylint: disable=import-outside-toplevel
    code = ("import sys, capi_proxy.proxy, capi_proxy.shim, capi_proxy.__main__; "
            "print(sorted(m for m in sys.modules if m == 'kubernetes' or m.startswith(('kubernetes.', "
            "'ansible_collections.kubernetes'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]", loaded


@pytest.mark.parametrize("program, others", [
    ("capi_proxy.proxy.relay", ("capi_proxy.shim", "capi_proxy.exporter", "kubernetes")),
    ("capi_proxy.shim", ("capi_proxy.proxy", "capi_proxy.exporter", "kubernetes")),
    ("capi_proxy.exporter", ("capi_proxy.proxy", "capi_proxy.shim")),
])
def test_each_program_imports_its_own_subpackage_and_what_is_shared_only(program, others):
    """capi_proxy's three programs are subpackages (2026-12-02): the sidecar does not load the shim's or the
    exporter's code (nor the exporter the state machine's users' client), and __main__ loads a program when it runs."""
    import subprocess  # pylint: disable=import-outside-toplevel
    import sys  # pylint: disable=import-outside-toplevel
    code = ("import sys, capi_proxy.__main__, %s; print(sorted(m for m in sys.modules if m.split('.')[0] == 'kubernetes' "
            "or m.startswith(%r)))" % (program, tuple(other + "." for other in others) + others))
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]", loaded


def test_the_proxy_program_imports_no_aiohttp_before_it_empties_the_default_trust_store():
    """run_proxy sets SSL_CERT_FILE/SSL_CERT_DIR (trust_only_the_named_ca) before aiohttp is imported, whose default
    contexts would each load the system bundle: nothing the program imports at module level may import aiohttp
    (mode.py's did, through __main__, until 2026-12-02)."""
    import subprocess  # pylint: disable=import-outside-toplevel
    import sys  # pylint: disable=import-outside-toplevel
    code = "import sys, capi_proxy.__main__, capi_proxy.proxy.program; print('aiohttp' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "False"


class _CrdListClient:
    """The one call load_contract_crds makes: own_get_json of the CRD list."""

    def __init__(self, items):
        self.items = items

    async def own_get_json(self, path, accept="application/json"):
        assert path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions" and accept == "application/json"
        return 200, {"items": self.items}


def _crd(name, kind, labels=None):
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"names": {"kind": kind}}}


def test_contract_crds_include_providers_outside_the_capi_groups_that_declare_a_contract():
    """HyperShift's HostedControlPlane CRD (hypershift.openshift.io) carries cluster.x-k8s.io/v1beta1: a Cluster's
    controlPlaneRef converts to v1beta1 only with it; CRDs of other groups without the label stay out."""
    import asyncio  # pylint: disable=import-outside-toplevel

    from capi_proxy.upstream import load_contract_crds  # pylint: disable=import-outside-toplevel
    items = [_crd("hostedcontrolplanes.hypershift.openshift.io", "HostedControlPlane", {"cluster.x-k8s.io/v1beta1": "v1beta1"}),
             _crd("hostedclusters.hypershift.openshift.io", "HostedCluster"),
             _crd("awsmachines.infrastructure.cluster.x-k8s.io", "AWSMachine", {"cluster.x-k8s.io/v1beta1": "v1beta2"}),
             _crd("widgets.example.com", "Widget")]
    slim = asyncio.run(load_contract_crds(_CrdListClient(items), DEFAULT_GROUP_MAP))
    assert [(crd["spec"]["group"], crd["spec"]["names"]["kind"], crd["metadata"]["labels"]) for crd in slim] == [
        ("hypershift.openshift.io", "HostedControlPlane", {"cluster.x-k8s.io/v1beta1": "v1beta1"}),
        ("infrastructure.cluster.x-k8s.io", "AWSMachine", {"cluster.x-k8s.io/v1beta1": "v1beta2"})]


@pytest.mark.parametrize("location, expected", [
    ("/openapi/v3/apis/cluster.hypershift.openshift.io/v1beta2?hash=ABC",
     "/openapi/v3/apis/cluster.x-k8s.io/v1beta2?hash=ABC"),
    ("/openapi/v3/apis/infrastructure.cluster.hypershift.openshift.io/v1beta2",
     "/openapi/v3/apis/infrastructure.cluster.x-k8s.io/v1beta2"),
    ("/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/n/machines/m",
     "/apis/cluster.x-k8s.io/v1beta2/namespaces/n/machines/m"),
    ("/openapi/v3/apis/apps/v1?hash=X", "/openapi/v3/apis/apps/v1?hash=X"),
    ("https://elsewhere.example/x", "https://elsewhere.example/x"),
])
def test_a_redirect_location_names_the_standard_group(location, expected):
    assert openapi.client_location(location, DEFAULT_GROUP_MAP) == expected
