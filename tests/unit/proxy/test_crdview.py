"""The CRD view in every form a client reads CRDs in: full objects and lists, and the metadata-only forms
(PartialObjectMetadata, its List, their watch events) that controller-runtime's metadata cache uses to read the
contract labels of CAPI's CRDs (issue 19: the real core manager found no CRD through the proxy without them)."""
from capi_proxy.core import DEFAULT_GROUP_MAP, TO_STANDARD, translate_text
from capi_proxy.crdview import crd_view

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
