"""testenv/faults.py: request parsing as kube-apiserver's RequestInfoFactory does it, and ValueError for bad rules."""
import pytest

from testenv.faults import FaultInjector, request_info

CM = "/api/v1/namespaces/default/configmaps"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"


def parsed(method, path, query=""):
    info = request_info(method, path, query)
    return (info.verb, info.group, info.resource, info.subresource, info.namespace, info.name)


@pytest.mark.parametrize("method, path, query, expected", [
    ("GET", CM + "/c1", "", ("get", "", "configmaps", "", "default", "c1")),
    ("GET", CM, "", ("list", "", "configmaps", "", "default", "")),
    ("GET", CM, "watch=true&resourceVersion=5", ("watch", "", "configmaps", "", "default", "")),
    ("GET", CM, "watch=1", ("watch", "", "configmaps", "", "default", "")),
    ("GET", CM, "watch=false", ("list", "", "configmaps", "", "default", "")),
    ("GET", CM, "watch=0", ("list", "", "configmaps", "", "default", "")),
    ("GET", "/api/v1/watch/namespaces/default/configmaps", "", ("watch", "", "configmaps", "", "default", "")),
    ("GET", "/api/v1/watch/namespaces/default/configmaps/c1", "", ("watch", "", "configmaps", "", "default", "c1")),
    ("GET", "/api/v1/configmaps", "", ("list", "", "configmaps", "", "", "")),
    ("GET", CM, "fieldSelector=metadata.name%3Dc1", ("list", "", "configmaps", "", "default", "c1")),
    ("GET", CM, "fieldSelector=metadata.name%3D%3Dc1&watch=true", ("watch", "", "configmaps", "", "default", "c1")),
    ("GET", CM, "fieldSelector=metadata.name%21%3Dc1", ("list", "", "configmaps", "", "default", "")),
    ("HEAD", CM + "/c1", "", ("get", "", "configmaps", "", "default", "c1")),
    ("POST", CM, "", ("create", "", "configmaps", "", "default", "")),
    ("PUT", CM + "/c1", "", ("update", "", "configmaps", "", "default", "c1")),
    ("PATCH", CM + "/c1", "", ("patch", "", "configmaps", "", "default", "c1")),
    ("DELETE", CM + "/c1", "", ("delete", "", "configmaps", "", "default", "c1")),
    ("DELETE", CM, "", ("deletecollection", "", "configmaps", "", "default", "")),
    ("PUT", DEPLOY + "/d/scale", "", ("update", "apps", "deployments", "scale", "default", "d")),
    ("PATCH", DEPLOY + "/d/status", "", ("patch", "apps", "deployments", "status", "default", "d")),
    ("GET", "/apis/apps/v1/deployments", "", ("list", "apps", "deployments", "", "", "")),
    ("GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines/m",
     "", ("get", "cluster.x-k8s.io", "machines", "", "ns", "m")),
    ("GET", "/api/v1/namespaces", "", ("list", "", "namespaces", "", "", "")),
    ("GET", "/api/v1/namespaces/ns1", "", ("get", "", "namespaces", "", "ns1", "ns1")),
    ("PUT", "/api/v1/namespaces/ns1/finalize", "", ("update", "", "namespaces", "finalize", "ns1", "ns1")),
    ("PUT", "/api/v1/namespaces/ns1/status", "", ("update", "", "namespaces", "status", "ns1", "ns1")),
    ("GET", "/api/v1/namespaces/ns1/pods/p/log", "", ("get", "", "pods", "log", "ns1", "p")),
    ("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", "",
     ("create", "authentication.k8s.io", "selfsubjectreviews", "", "", "")),
    ("GET", "/api/v1/proxy/namespaces/ns1/pods/p/some/path", "", ("proxy", "", "pods", "", "ns1", "p")),
    ("GET", "/api/v1/nodes/n1/proxy/metrics", "", ("get", "", "nodes", "proxy", "", "n1")),
])
def test_resource_requests(method, path, query, expected):
    assert parsed(method, path, query) == expected
    assert request_info(method, path, query).resource_request


def test_query_may_be_a_mapping_and_version_and_prefix_are_kept():
    info = request_info("GET", DEPLOY, {"watch": "true"})
    assert (info.verb, info.api_prefix, info.group, info.version) == ("watch", "apis", "apps", "v1")
    assert info.match_args() == ("watch", "apps", "deployments", "", "default", "")


@pytest.mark.parametrize("method, path", [
    ("GET", "/version"), ("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/api"), ("GET", "/api/v1"),
    ("GET", "/api/v1/"), ("GET", "/apis"), ("GET", "/apis/apps"), ("GET", "/apis/apps/v1"), ("GET", "/"),
    ("GET", "/openapi/v3/apis/apps/v1"), ("POST", "/some/thing"), ("GET", "/api/v1/watch"),
])
def test_non_resource_requests_are_keyed_by_path(method, path):
    info = request_info(method, path)
    assert not info.resource_request
    assert info.verb == method.lower()
    assert info.match_args() == (method.lower(), "", path, "", "", "")


def test_bad_rules_raise_value_error_naming_the_field():
    with pytest.raises(ValueError, match="fault rule field 'nth': expected an integer >= 1, found 0"):
        FaultInjector().add({"nth": 0})
    with pytest.raises(ValueError, match="fault rule field 'colour'"):
        FaultInjector().add({"colour": "red"})
