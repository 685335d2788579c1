"""tests/kubeapi/patch.py: RFC 7386 and RFC 6902 vectors, strategic merge patch on real shapes."""
import copy

import pytest

from tests.kubeapi.errors import ApiError
from tests.kubeapi.patch import REJECTED_MESSAGE, json_patch, merge_patch, strategic_merge_patch
from tests.kubeapi.typeinfo import TypeInfo

# RFC 7386 appendix A: (target, patch, result)
MERGE_PATCH_VECTORS = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize("target,patch,expected", MERGE_PATCH_VECTORS)
def test_rfc7386_vectors(target, patch, expected):
    before = copy.deepcopy(target)
    assert merge_patch(target, patch) == expected
    assert target == before


# RFC 6902 appendix A: (document, patch, result)
JSON_PATCH_VECTORS = [
    ({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"baz": "qux", "foo": "bar"}),
    ({"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}], {"foo": ["bar", "qux", "baz"]}),
    ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
    ({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]}),
    ({"baz": "qux", "foo": "bar"}, [{"op": "replace", "path": "/baz", "value": "boo"}], {"baz": "boo", "foo": "bar"}),
    ({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
     [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
     {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}),
    ({"foo": ["all", "grass", "cows", "eat"]}, [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
     {"foo": ["all", "cows", "eat", "grass"]}),
    ({"baz": "qux", "foo": ["a", 2, "c"]},
     [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
     {"baz": "qux", "foo": ["a", 2, "c"]}),
    ({"foo": "bar"}, [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
     {"foo": "bar", "child": {"grandchild": {}}}),
    ({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}], {"foo": "bar", "baz": "qux"}),
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
    ({"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}], {"foo": ["bar", ["abc", "def"]]}),
    ({"a": {"b": 1}}, [{"op": "copy", "from": "/a", "path": "/c"}], {"a": {"b": 1}, "c": {"b": 1}}),
]

JSON_PATCH_FAILURES = [
    ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}]),                  # A.9
    ({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}]),               # A.12
    ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}]),              # A.15
    ({"foo": "bar"}, [{"op": "remove", "path": "/missing"}]),
    ({"foo": "bar"}, [{"op": "replace", "path": "/missing", "value": 1}]),
    ({"foo": [1]}, [{"op": "add", "path": "/foo/5", "value": 2}]),
    ({"foo": "bar"}, [{"op": "frobnicate", "path": "/foo"}]),
    ({"a": {"b": 1}}, [{"op": "move", "from": "/a", "path": "/a/b/c"}]),
]


@pytest.mark.parametrize("document,operations,expected", JSON_PATCH_VECTORS)
def test_rfc6902_vectors(document, operations, expected):
    before = copy.deepcopy(document)
    assert json_patch(document, operations) == expected
    assert document == before


@pytest.mark.parametrize("document,operations", JSON_PATCH_FAILURES)
def test_rfc6902_failures_are_422_like_the_real_server(document, operations):
    with pytest.raises(ApiError) as raised:
        json_patch(document, operations)
    body = raised.value.status_body()
    assert (body["code"], body["reason"], body["message"]) == (422, "Invalid", REJECTED_MESSAGE)
    assert raised.value.detail  # the library's text is kept for logs


def test_json_patch_that_is_not_an_array_is_400_and_too_many_ops_413():
    with pytest.raises(ApiError) as raised:
        json_patch({}, {"op": "add"})
    assert raised.value.code == 400
    assert raised.value.message == "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
    with pytest.raises(ApiError) as raised:
        json_patch({}, [{"op": "test", "path": "", "value": {}}] * 10001)
    assert raised.value.code == 413
    assert raised.value.message == "The allowed maximum operations in a JSON patch is 10000, got 10001"


# ----------------------------------------------------------------------------------- strategic

DEPLOYMENT = TypeInfo.for_builtin("apps", "Deployment")


def deployment():
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", "tier": "front"},
                     "finalizers": ["a/one", "b/two"]},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                         "ports": [{"containerPort": 8080}],
                         "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                        {"name": "sidecar", "image": "proxy:1"},
                    ],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                    "tolerations": [{"key": "a", "operator": "Exists"}],
                },
            },
        },
    }


def pod_spec(obj):
    return obj["spec"]["template"]["spec"]


def test_containers_and_env_merge_by_name():
    patch = {"spec": {"template": {"spec": {"containers": [
        {"name": "sidecar", "image": "proxy:2"},
        {"name": "app", "env": [{"name": "B", "value": "two"}, {"name": "C", "value": "3"}]},
        {"name": "new", "image": "new:1"}]}}}}
    original = deployment()
    result = strategic_merge_patch(original, patch, DEPLOYMENT)
    assert original == deployment()
    containers = pod_spec(result)["containers"]
    assert [c["name"] for c in containers] == ["sidecar", "app", "new"]
    assert containers[0]["image"] == "proxy:2"
    assert containers[1]["image"] == "app:1" and containers[1]["ports"] == [{"containerPort": 8080}]
    assert containers[1]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "two"},
                                    {"name": "C", "value": "3"}]


def test_patch_delete_set_element_order_and_null():
    patch = {"metadata": {"labels": {"tier": None}},
             "spec": {"template": {"spec": {
                 "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}],
                 "containers": [{"name": "app", "$patch": "delete"}, {"name": "sidecar", "image": "proxy:3"}],
                 "$setElementOrder/volumes": [{"name": "data"}]}}}}
    result = strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    assert result["metadata"]["labels"] == {"app": "web"}
    assert pod_spec(result)["containers"] == [{"name": "sidecar", "image": "proxy:3"}]
    patch = {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}],
        "containers": [{"name": "sidecar", "image": "proxy:3"}]}}}}
    result = strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    assert [c["name"] for c in pod_spec(result)["containers"]] == ["sidecar", "app"]


def test_retain_keys_switches_the_strategy():
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    result = strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    assert result["spec"]["strategy"] == {"type": "Recreate"}
    with pytest.raises(ApiError) as raised:
        strategic_merge_patch(deployment(), {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}},
                              DEPLOYMENT)
    assert raised.value.code == 422


def test_primitive_merge_lists_union_and_delete_from_primitive_list():
    patch = {"metadata": {"finalizers": ["c/three", "a/one"], "$deleteFromPrimitiveList/finalizers": ["b/two"]}}
    result = strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    assert result["metadata"]["finalizers"] == ["c/three", "a/one"]


def test_lists_without_merge_strategy_are_replaced():
    patch = {"spec": {"template": {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}}}
    result = strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    assert pod_spec(result)["tolerations"] == [{"key": "b", "operator": "Exists"}]


def test_replace_directives_in_maps_and_lists():
    patch = {"spec": {"template": {"metadata": {"labels": {"$patch": "replace", "only": "me"}},
                                   "spec": {"volumes": [{"$patch": "replace"}, {"name": "cfg", "configMap": {"name": "c"}}]}}}}
    result = strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    assert result["spec"]["template"]["metadata"]["labels"] == {"only": "me"}
    assert pod_spec(result)["volumes"] == [{"name": "cfg", "configMap": {"name": "c"}}]
    result = strategic_merge_patch(deployment(), {"spec": {"strategy": {"$patch": "delete"}}}, DEPLOYMENT)
    assert "strategy" not in result["spec"]


def test_volume_mounts_by_mount_path_and_service_ports_by_port():
    patch = {"spec": {"template": {"spec": {"containers": [
        {"name": "app", "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": True},
                                         {"name": "cfg", "mountPath": "/cfg"}]}]}}}}
    result = strategic_merge_patch(deployment(), patch, DEPLOYMENT)
    assert pod_spec(result)["containers"][0]["volumeMounts"] == [
        {"name": "data", "mountPath": "/data", "readOnly": True}, {"name": "cfg", "mountPath": "/cfg"}]
    service = {"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}
    result = strategic_merge_patch(service, {"spec": {"ports": [{"port": 443, "name": "https"}]}},
                                   TypeInfo.for_builtin("", "Service"))
    assert result["spec"]["ports"] == [{"port": 80, "targetPort": 8080}, {"port": 443, "name": "https"}]


def test_list_item_without_merge_key_is_an_internal_error_like_the_real_server():
    with pytest.raises(ApiError) as raised:
        strategic_merge_patch(deployment(), {"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}},
                              DEPLOYMENT)
    assert raised.value.code == 500
    assert "does not contain declared merge key: name" in raised.value.message
