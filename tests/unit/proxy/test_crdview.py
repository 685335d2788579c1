"""The CRD view in every form a client reads CRDs in: full objects and lists, and the metadata-only forms
(PartialObjectMetadata, its List, their watch events) that controller-runtime's metadata cache uses to read the
contract labels of CAPI's CRDs (issue 19: the real core manager found no CRD through the proxy without them)."""
from capi_proxy.core import DEFAULT_GROUP_MAP, TO_STANDARD, translate_text
from capi_proxy.proxy.crdview import crd_view

CONTRACT = {"cluster.x-k8s.io/v1beta2": "v1beta2"}


def metadata(name, labels=None):
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"name": name, "resourceVersion": "7", "labels": dict(labels or {})}}


def metadata_list(*names):
    return {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "9"},
            "items": [{"metadata": metadata(name, CONTRACT)["metadata"]} for name in names]}


def names(document):
    return [item["metadata"]["name"] for item in document["items"]]


def test_metadata_list_shows_private_crds_as_standard_and_hides_the_shadowed_ones():
    listed = metadata_list("devmachines.infrastructure.cluster.hypershift.openshift.io",
                           "machines.cluster.x-k8s.io", "machines.cluster.hypershift.openshift.io",
                           "configs.operator.openshift.io")
    viewed = crd_view(listed, DEFAULT_GROUP_MAP, show_private=False)
    assert names(viewed) == ["devmachines.infrastructure.cluster.x-k8s.io", "machines.cluster.x-k8s.io",
                             "configs.operator.openshift.io"]
    assert viewed["items"][0]["metadata"]["labels"] == CONTRACT, "the contract labels are what the client reads"
    assert viewed["metadata"] == {"resourceVersion": "9"}
    assert names(listed)[0] == "devmachines.infrastructure.cluster.hypershift.openshift.io", "the input is not edited"


def test_metadata_list_with_show_private_holds_both_names():
    viewed = crd_view(metadata_list("machines.cluster.hypershift.openshift.io"), DEFAULT_GROUP_MAP, show_private=True)
    assert names(viewed) == ["machines.cluster.hypershift.openshift.io", "machines.cluster.x-k8s.io"]


def test_one_crd_and_its_watch_events_in_metadata_form():
    one = crd_view(metadata("machinesets.cluster.hypershift.openshift.io"), DEFAULT_GROUP_MAP, show_private=False)
    assert one["metadata"]["name"] == "machinesets.cluster.x-k8s.io" and one["kind"] == "PartialObjectMetadata"
    event = {"type": "ADDED", "object": metadata("machinesets.cluster.hypershift.openshift.io")}
    assert crd_view(event, DEFAULT_GROUP_MAP, False)["object"]["metadata"]["name"] == "machinesets.cluster.x-k8s.io"
    shadowed = {"type": "MODIFIED", "object": metadata("machinesets.cluster.x-k8s.io")}
    assert crd_view(shadowed, DEFAULT_GROUP_MAP, False) is None, "a shadowed standard CRD is never shown"


def test_a_deprecation_warning_names_the_standard_group():
    warning = '299 - "infrastructure.cluster.hypershift.openshift.io/v1beta2 DockerCluster is deprecated"'
    assert translate_text(warning, TO_STANDARD, DEFAULT_GROUP_MAP) == \
        '299 - "infrastructure.cluster.x-k8s.io/v1beta2 DockerCluster is deprecated"'


def test_the_labels_a_twin_keeps_aside_show_again_on_the_standard_view_only():
    """clusterctl finds the types it moves by their CRDs' clusterctl label; the twins do not carry it on the server
    (the platform's clusterctl must not find HyperShift's objects), the render keeps it in an annotation."""
    from ansible_collections.hypershift.private_capi.plugins.module_utils.crds.render import (
        RenderOptions, render_private_crd)
    source = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
              "metadata": {"name": "machines.cluster.x-k8s.io",
                           "labels": {"clusterctl.cluster.x-k8s.io": "", "cluster.x-k8s.io/provider": "cluster-api",
                                      "app": "capi"}},
              "spec": {"group": "cluster.x-k8s.io", "scope": "Namespaced",
                       "names": {"kind": "Machine", "listKind": "MachineList", "plural": "machines", "singular": "machine"},
                       "versions": [{"name": "v1beta2", "served": True, "storage": True,
                                     "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    twin = render_private_crd(source, RenderOptions())
    assert "clusterctl.cluster.x-k8s.io" not in twin["metadata"]["labels"] and "app" in twin["metadata"]["labels"]
    viewed = crd_view(dict(twin), DEFAULT_GROUP_MAP, show_private=False)
    assert viewed["metadata"]["name"] == "machines.cluster.x-k8s.io"
    assert {key: viewed["metadata"]["labels"][key] for key in source["metadata"]["labels"]} == source["metadata"]["labels"]
    meta = crd_view({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": {},
                     "items": [{"metadata": twin["metadata"]}]}, DEFAULT_GROUP_MAP, show_private=True)
    private, standard = meta["items"]
    assert "clusterctl.cluster.x-k8s.io" not in private["metadata"]["labels"]
    assert standard["metadata"]["labels"]["clusterctl.cluster.x-k8s.io"] == ""


def test_a_selector_on_the_labels_kept_aside_is_judged_by_the_proxy_and_the_rest_by_the_server():
    from capi_proxy.proxy.crdview import matches, split_selector
    query, local = split_selector("labelSelector=clusterctl.cluster.x-k8s.io%2Capp%20in%20(a%2Cb)&limit=500")
    assert query == "labelSelector=app%20in%20%28a%2Cb%29&limit=500"
    assert local == [("clusterctl.cluster.x-k8s.io", "exists", ())]
    assert split_selector("labelSelector=clusterctl.cluster.x-k8s.io") == ("", local)
    assert split_selector("labelSelector=app%3Dx&watch=1") == ("labelSelector=app%3Dx&watch=1", None)
    _query, local = split_selector("labelSelector=cluster.x-k8s.io/provider%20notin%20(infra),!clusterctl.cluster.x-k8s.io/move")
    assert local == [("cluster.x-k8s.io/provider", "notin", ("infra",)), ("clusterctl.cluster.x-k8s.io/move", "!", ())]
    assert matches({"cluster.x-k8s.io/provider": "cluster-api"}, local)
    assert not matches({"cluster.x-k8s.io/provider": "infra"}, local)
    assert not matches({"clusterctl.cluster.x-k8s.io/move": ""}, local)
    _query, local = split_selector("labelSelector=cluster.x-k8s.io/provider%3D%3Dcluster-api")
    assert matches({"cluster.x-k8s.io/provider": "cluster-api"}, local) and not matches({}, local)
