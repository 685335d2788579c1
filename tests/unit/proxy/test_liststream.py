"""A LIST translated while it streams in gives the whole-body path's bytes exactly, or gives way to that path.

The reference is the proxy's own whole-body translation (Translator.response_bytes). Lists are encoded the way
kube-apiserver streams them (encoding/json: keys sorted, compact, <, > and & escaped) and cut into pieces at
arbitrary places, as TLS records and socket reads cut them.
"""
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capi_proxy import bodies

from capi_proxy.proxy import liststream
from capi_proxy.core import DEFAULT_GROUP_MAP, TO_PRIVATE, TO_STANDARD, translate_object
from capi_proxy.metrics import ProxyMetrics
from capi_proxy.proxy.pathing import parse_target
from capi_proxy.proxy.routing import Route
from capi_proxy.proxy.translation import Translator
from tests.unit.translate.test_capi_groups import EXAMPLE_OBJECTS, adversarial_machine
from tests.unit.translate.test_capi_groups_properties import generated_objects

PRIVATE_LIST_PATH = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/ns/machines"
STANDARD_LIST_PATH = "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines"
MARKERS = bodies.markers(DEFAULT_GROUP_MAP, TO_STANDARD)


def go_json(value):
    """JSON as Go's encoding/json writes a map: sorted keys, no spaces, HTML characters and U+2028/9 escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                          ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text.encode()


def private_list(objects, kind="MachineList", metadata=None):
    """The LIST body kube-apiserver streams for objects stored in the private groups (trailing newline too)."""
    items = [translate_object(obj, TO_PRIVATE) for obj in objects]
    return go_json({"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "items": items, "kind": kind,
                    "metadata": metadata if metadata is not None else {"resourceVersion": "42", "continue": ""}}) + b"\n"


def translator():
    return Translator(DEFAULT_GROUP_MAP, False, None, ProxyMetrics())


def list_route(path=STANDARD_LIST_PATH, method="GET", query=None):
    return Route("capi", parse_target(path, method, query or {}), PRIVATE_LIST_PATH)


def whole_body(raw):
    """The whole-body path's answer: its bytes, or the ProxyError it raises."""
    try:
        return translator().response_bytes(raw, list_route())
    except Exception as exc:  # pylint: disable=broad-except  # the outcome is compared, whatever it is
        return exc


def streamed(raw, cuts):
    """The stream's answer for raw cut at the given offsets (None: it gave way)."""
    stream = liststream.ListStream(DEFAULT_GROUP_MAP, MARKERS)
    start = 0
    for cut in sorted(set(cuts)) + [len(raw)]:
        if start < cut <= len(raw):
            stream.feed(raw[start:cut])
            start = cut
    return stream.finish()


def every_cut(raw, step):
    return list(range(step, len(raw), step))


def machine(name, owners=1):
    references = [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "name": "ms-%d" % index,
                   "uid": "u-%d" % index, "controller": index == 0} for index in range(owners)]
    return {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"name": name, "namespace": "ns", "ownerReferences": references,
                         "labels": {"cluster.x-k8s.io/cluster-name": "c"},
                         "managedFields": [{"apiVersion": "cluster.x-k8s.io/v1beta2", "manager": "m",
                                            "fieldsV1": {"f:spec": {}}}]},
            "spec": {"clusterName": "c", "bootstrap": {"dataSecretName": "u"},
                     "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine",
                                           "name": name}}}


@pytest.mark.parametrize("step", [1, 3, 64, 1000, 4096, 10 ** 9])
def test_machines_with_nested_boundaries_give_the_whole_body_bytes_at_any_cut(step):
    # two and three ownerReferences: "},{" inside an item, and strings holding "},{", "]" and the List's tail
    objects = [machine("m-%d" % index, owners=1 + index % 3) for index in range(12)]
    objects[4]["metadata"]["annotations"] = {"note": '},{"apiVersion":"x"}],"kind":"NotTheList","metadata":{}}'}
    raw = private_list(objects)
    expected = whole_body(raw)
    assert isinstance(expected, bytes) and b"cluster.hypershift.openshift.io" not in expected
    assert streamed(raw, every_cut(raw, step)) == expected


@pytest.mark.parametrize("obj", EXAMPLE_OBJECTS)
def test_upstream_examples_give_the_whole_body_bytes(obj):
    raw = private_list([obj, adversarial_machine(), obj])
    expected = whole_body(raw)
    assert isinstance(expected, bytes)
    assert streamed(raw, every_cut(raw, 333)) == expected


def test_an_empty_list_and_one_item():
    for objects in ([], [machine("only")]):
        raw = private_list(objects)
        assert streamed(raw, every_cut(raw, 5)) == whole_body(raw)


@settings(max_examples=200, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(objects=st.lists(generated_objects, max_size=4),
       cuts=st.lists(st.integers(min_value=1, max_value=6000), max_size=12))
def test_generated_lists_at_random_cuts_give_the_whole_body_bytes_or_give_way(objects, cuts):
    """Adversarial objects (refs everywhere, group-looking strings, free-text maps): where the whole body translates
    with orjson's exact reading, the stream gives exactly its bytes; it never gives different ones."""
    try:
        raw = private_list(objects)
    except Exception:  # pylint: disable=broad-except  # an object translate_object refuses is no List to stream
        return
    expected = whole_body(raw)
    actual = streamed(raw, cuts)
    exact = True
    try:
        bodies.dumps_exact(bodies.loads_exact(raw))
    except bodies.NotExact:
        exact = False
    if isinstance(expected, bytes) and exact:
        assert actual == expected
    else:
        assert actual is None


@pytest.mark.parametrize("raw, why", [
    (b'{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},"columnDefinitions":[],"rows":[]}', "a Table"),
    (b'{\n  "apiVersion": "cluster.hypershift.openshift.io/v1beta2",\n  "items": []\n}', "pretty-printed"),
    (b'{"apiVersion":"v1","items":[],"kind":"List","metadata":{}}', "no private group: passed through as it is"),
    (b'{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","items":[{"apiVersion":"cluster.hypershift.openshift.io'
     b'/v1beta2","kind":"Machine","spec":{"n":12345678901234567890}}],"kind":"MachineList","metadata":{}}',
     "an integer orjson reads as a float"),
    (b'{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","items":[{"apiVersion":"cluster.hypershift.openshift.io'
     b'/v1beta2","kind":"Machine","metadata":{"name":"\\ud800"}}],"kind":"MachineList","metadata":{}}',
     "a lone surrogate"),
    (b'{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","items":[{"apiVersion":"cluster.hypershift.openshift.io'
     b'/v1beta2","kind":"Machine","metadata":{"ownerReferences":{"kind":"MachineSet"}}}],"kind":"MachineList",'
     b'"metadata":{}}', "an item the core refuses"),
    (b'{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","items":[],"kind":"APIGroupList","metadata":{}}',
     "a List kind with a shape of its own"),
    (b'{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","items":[],"kind":"Machine","metadata":{}}',
     "not a List"),
    (b'{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","items":[{"apiVersion":"cluster.hypershift.openshift.io'
     b'/v1beta2","kind":"Machine"}],"kind":"MachineList","items":[],"metadata":{}}', "a repeated key"),
    (b'{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","items":[{"apiVersion":"cluster.hypershift.openshift.io'
     b'/v1beta2","kind":"Machine"},{"apiVersion":"cluster.hy', "a body cut short"),
])
def test_what_the_stream_does_not_recognise_goes_the_whole_body_way(raw, why):
    for step in (7, len(raw)):
        assert streamed(raw, every_cut(raw, step)) is None, why


def test_a_body_that_never_reaches_a_boundary_is_given_up_past_the_pending_limit(monkeypatch):
    monkeypatch.setattr(liststream, "MAX_PENDING_BYTES", 2048)
    stream = liststream.ListStream(DEFAULT_GROUP_MAP, MARKERS)
    stream.feed(b'{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","items":[{"a":"')
    assert stream.active
    stream.feed(b"x" * 4096)
    assert not stream.active and stream.pending == b""
    assert stream.finish() is None


def test_items_are_translated_while_the_body_arrives():
    raw = private_list([machine("m-%d" % index) for index in range(20)])
    stream = liststream.ListStream(DEFAULT_GROUP_MAP, MARKERS)
    stream.feed(raw[:len(raw) // 2])
    assert stream.parts and b"cluster.x-k8s.io/v1beta2" in stream.parts[0]
    assert len(stream.pending) < len(raw) // 10  # only the item cut in half waits
    stream.feed(raw[len(raw) // 2:])
    assert stream.finish() == whole_body(raw)
    assert stream.seconds > 0


def test_the_translator_streams_only_lists_of_standard_resources_served_as_they_are():
    proxy_translator = translator()
    assert proxy_translator.list_stream(list_route()) is not None
    assert proxy_translator.list_stream(list_route(path=STANDARD_LIST_PATH + "/m-1")) is None  # a GET
    assert proxy_translator.list_stream(list_route(query={"watch": "1"})) is None
    private = Route("private", parse_target(PRIVATE_LIST_PATH, "GET", {}), PRIVATE_LIST_PATH)
    assert proxy_translator.list_stream(private) is None
    adapted = list_route()
    adapted.served_version = "v1beta1"
    assert proxy_translator.list_stream(adapted) is None


def test_the_translator_observes_the_streamed_time_and_refuses_what_is_not_json():
    proxy_translator = translator()
    raw = private_list([machine("m")])
    stream = proxy_translator.list_stream(list_route())
    proxy_translator.feed(stream, raw)
    assert proxy_translator.streamed_body(stream, "application/json") == whole_body(raw)
    assert proxy_translator.metrics.translation_seconds.count("response") == 1
    stream = proxy_translator.list_stream(list_route())
    proxy_translator.feed(stream, raw)
    assert proxy_translator.streamed_body(stream, "application/yaml") is None
