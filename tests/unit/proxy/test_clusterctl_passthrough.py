"""clusterctl's inventory group (clusterctl.cluster.x-k8s.io) through the proxy: inside the *.cluster.x-k8s.io pattern,
yet no HyperShift CAPI type (the core's EXCLUDED_STANDARD_GROUPS). Requests for it pass through unchanged, never to a
private group; discovery, the CRD view and bodies keep it as the server has it and invent no private twin."""
import asyncio

import pytest

from capi_proxy import bodies, discovery
from capi_proxy.core import DEFAULT_GROUP_MAP, TO_PRIVATE, TO_STANDARD, GroupMap
from capi_proxy.proxy.crdview import crd_view
from capi_proxy.proxy.routing import route
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import AGENT_EXTRA_GROUPS

CLUSTERCTL = "clusterctl.cluster.x-k8s.io"
PRIVATE = "cluster.hypershift.openshift.io"
CLUSTERCTL_PRIVATE_SPELLING = "clusterctl." + PRIVATE
GROUP_MAPS = pytest.mark.parametrize("group_map", [DEFAULT_GROUP_MAP, GroupMap(AGENT_EXTRA_GROUPS)], ids=["default", "agent"])


class UnusedIndex(object):
    """A pass-through route never reads the served versions."""

    async def get(self, refresh=False):
        raise AssertionError("a clusterctl request must not consult the private groups' discovery index")


class EmptyIndex(object):
    async def get(self, refresh=False):
        return discovery.ServedIndex({}, DEFAULT_GROUP_MAP)


def routed(path, method="GET", query=None, group_map=DEFAULT_GROUP_MAP, show_private=False, index_cache=None):
    raw_path = path.partition("?")[0]
    return asyncio.run(route(method, raw_path, query or {}, group_map, show_private, index_cache or UnusedIndex()))


@GROUP_MAPS
@pytest.mark.parametrize("show_private", [False, True])
@pytest.mark.parametrize("method, path, query", [
    ("GET", "/apis/" + CLUSTERCTL, None),
    ("GET", "/apis/%s/v1alpha3" % CLUSTERCTL, None),
    ("GET", "/apis/%s/v1alpha3/providers" % CLUSTERCTL, None),
    ("GET", "/apis/%s/v1alpha3/namespaces/capi-system/providers" % CLUSTERCTL, {"watch": "1"}),
    ("GET", "/apis/%s/v1alpha3/namespaces/capi-system/providers/cluster-api" % CLUSTERCTL, None),
    ("PATCH", "/apis/%s/v1alpha3/namespaces/capi-system/providers/cluster-api" % CLUSTERCTL, None),
    ("POST", "/apis/%s/v1alpha3/namespaces/capi-system/providers" % CLUSTERCTL, None),
    ("DELETE", "/apis/%s/v1alpha3/namespaces/capi-system/providers/cluster-api" % CLUSTERCTL, None),
    # its private spelling is nobody's: not refused as a private group, not mapped back either
    ("GET", "/apis/%s/v1alpha3/providers" % CLUSTERCTL_PRIVATE_SPELLING, None),
])
def test_a_clusterctl_request_passes_through_untranslated(method, path, query, group_map, show_private):
    result = routed(path, method, query, group_map, show_private)
    assert result.mode == "passthrough"
    assert result.upstream_path == path
    assert result.private_group is None and not result.adapted


@GROUP_MAPS
@pytest.mark.parametrize("path", [
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/providers." + CLUSTERCTL,
    "/apis/apiextensions.k8s.io/v1/watch/customresourcedefinitions/providers." + CLUSTERCTL,
])
def test_the_clusterctl_crd_is_read_by_its_own_name(path, group_map):
    result = routed(path, group_map=group_map)
    assert result.mode == "crd" and result.upstream_path == path


def test_a_capi_group_beside_it_is_still_translated():
    result = routed("/apis/bootstrap.cluster.x-k8s.io/v1beta2/namespaces/ns/kubeadmconfigs", index_cache=EmptyIndex())
    assert result.mode == "capi"
    assert result.upstream_path == "/apis/bootstrap.%s/v1beta2/namespaces/ns/kubeadmconfigs" % PRIVATE


def _aggregated():
    provider = {"resource": "providers", "responseKind": {"group": CLUSTERCTL, "version": "v1alpha3", "kind": "Provider"},
                "scope": "Namespaced", "verbs": ["get", "list"], "categories": ["cluster-api"]}
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": [
        {"metadata": {"name": CLUSTERCTL}, "versions": [{"version": "v1alpha3", "resources": [provider]}]},
        {"metadata": {"name": PRIVATE}, "versions": [{"version": "v1beta2", "resources": []}]}]}


@GROUP_MAPS
@pytest.mark.parametrize("show_private", [False, True])
def test_discovery_keeps_the_clusterctl_group_and_invents_no_twin(group_map, show_private):
    index = discovery.ServedIndex(_aggregated(), group_map)
    shown = discovery.aggregated_to_standard(_aggregated(), index, group_map, show_private)
    clusterctl_items = [item for item in shown["items"] if "clusterctl" in item["metadata"]["name"]]
    assert clusterctl_items == [_aggregated()["items"][0]]
    assert index.adapted_versions(CLUSTERCTL) == ["v1alpha3"] and index.adapted_entries(CLUSTERCTL, "v1beta2") == []
    legacy = {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": CLUSTERCTL, "versions": [{"groupVersion": CLUSTERCTL + "/v1alpha3", "version": "v1alpha3"}],
         "preferredVersion": {"groupVersion": CLUSTERCTL + "/v1alpha3", "version": "v1alpha3"}}]}
    assert discovery.group_list_to_standard(legacy, index, group_map, show_private) == legacy
    assert CLUSTERCTL_PRIVATE_SPELLING not in repr(shown)


@GROUP_MAPS
def test_crd_view_shows_the_clusterctl_crd_as_it_is(group_map):
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "providers." + CLUSTERCTL},
           "spec": {"group": CLUSTERCTL, "names": {"kind": "Provider", "plural": "providers", "categories": ["cluster-api"]},
                    "scope": "Namespaced", "versions": [{"name": "v1alpha3", "served": True, "storage": True}]}}
    listed = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinitionList", "items": [dict(crd)]}
    for show_private in (False, True):
        assert crd_view(dict(crd), group_map, show_private) == crd
        assert crd_view(dict(listed), group_map, show_private) == listed
    metadata_list = {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                     "items": [{"metadata": {"name": "providers." + CLUSTERCTL}}]}
    assert crd_view(dict(metadata_list), group_map, True) == metadata_list


@GROUP_MAPS
def test_provider_bodies_are_untouched_both_ways(group_map):
    provider = {"apiVersion": CLUSTERCTL + "/v1alpha3", "kind": "Provider",
                "metadata": {"name": "cluster-api", "namespace": "capi-system",
                             "labels": {"clusterctl.cluster.x-k8s.io": "", "cluster.x-k8s.io/provider": "cluster-api"}},
                "providerName": "cluster-api", "type": "CoreProvider", "version": "v1.14.2"}
    events = {"type": "ADDED", "object": provider}
    for direction in (TO_PRIVATE, TO_STANDARD):
        assert bodies.translate_response(provider, direction, group_map) == provider
        assert bodies.translate_response(events, direction, group_map) == events
        assert bodies.translate_document(provider, "application/json", direction, group_map) == provider
    status = {"apiVersion": "v1", "kind": "Status", "code": 403,
              "message": 'providers.clusterctl.cluster.x-k8s.io "cluster-api" is forbidden',
              "details": {"group": CLUSTERCTL, "kind": "providers", "name": "cluster-api"}}
    assert bodies.translate_response(status, TO_STANDARD, group_map) == status
