"""The filter functions of plugins/filter/capi.py called directly: every input type, every error."""
import copy
import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.hypershift.private_capi.plugins.filter.capi import (
    FilterModule,
    convert_capi,
    to_private_capi,
    to_standard_capi,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    AGENT_EXTRA_GROUPS,
    AGENT_PRIVATE_GROUP,
    AGENT_STANDARD_GROUP,
)
from testenv.upstream import CAPI_EXAMPLES_V1BETA2
from tests.unit.translate.zeros import without_added_zeros

SIMPLE_CLUSTER = os.path.join(CAPI_EXAMPLES_V1BETA2, "examples__simple-cluster.yaml")


@pytest.fixture(scope="module")
def simple_cluster_objects():
    with open(SIMPLE_CLUSTER) as handle:
        return [document for document in yaml.safe_load_all(handle) if document]


def test_filter_module_exposes_the_three_filters():
    filters = FilterModule().filters()
    assert filters == {"to_private_capi": to_private_capi, "to_standard_capi": to_standard_capi, "convert_capi": convert_capi}


@pytest.mark.parametrize(
    "value, private",
    [
        ("cluster.x-k8s.io/v1beta2", "cluster.hypershift.openshift.io/v1beta2"),
        ("infrastructure.cluster.x-k8s.io", "infrastructure.cluster.hypershift.openshift.io"),
        ("v1", "v1"),
        ("apps/v1", "apps/v1"),
        ("/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines?labelSelector=cluster.x-k8s.io%2Fcluster-name",
         "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/ns/machines?labelSelector=cluster.x-k8s.io%2Fcluster-name"),
        ("/api/v1/namespaces/ns/secrets", "/api/v1/namespaces/ns/secrets"),
        ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/machines.cluster.x-k8s.io",
         "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/machines.cluster.hypershift.openshift.io"),
    ],
)
def test_strings_both_directions(value, private):
    assert to_private_capi(value) == private
    assert to_standard_capi(private) == value


def test_object_and_list_of_real_objects(simple_cluster_objects):
    original = copy.deepcopy(simple_cluster_objects)
    private = to_private_capi(simple_cluster_objects)
    assert simple_cluster_objects == original
    assert isinstance(private, list) and len(private) == len(original)
    assert all(obj["apiVersion"].split("/")[0].endswith("cluster.hypershift.openshift.io") for obj in private)
    cluster = private[0]
    assert cluster["kind"] == "Cluster"
    assert cluster["spec"]["infrastructureRef"]["apiGroup"] == "infrastructure.cluster.hypershift.openshift.io"
    assert cluster["spec"]["controlPlaneRef"]["apiGroup"] == "controlplane.cluster.hypershift.openshift.io"
    machine_deployment = next(obj for obj in private if obj["kind"] == "MachineDeployment")
    assert machine_deployment["spec"]["selector"] == next(
        obj for obj in original if obj["kind"] == "MachineDeployment")["spec"]["selector"]
    assert to_standard_capi(private) == original
    assert to_private_capi(original[0]) == private[0]
    assert to_standard_capi(private[0]) == original[0]


def test_extra_groups_both_ways():
    agent_cluster = {"apiVersion": AGENT_STANDARD_GROUP + "/v1beta1", "kind": "AgentCluster", "metadata": {"name": "a"}}
    private = to_private_capi(agent_cluster, extra_groups=AGENT_EXTRA_GROUPS)
    assert private["apiVersion"] == AGENT_PRIVATE_GROUP + "/v1beta1"
    assert to_standard_capi(private, extra_groups=AGENT_EXTRA_GROUPS) == agent_cluster
    assert to_private_capi(agent_cluster) == agent_cluster  # not mapped unless configured
    assert to_private_capi(agent_cluster, extra_groups={}) == agent_cluster
    assert to_private_capi(AGENT_STANDARD_GROUP, AGENT_EXTRA_GROUPS) == AGENT_PRIVATE_GROUP


@pytest.mark.parametrize("filter_function", [to_private_capi, to_standard_capi])
@pytest.mark.parametrize(
    "value, extra_groups, message",
    [
        (42, None, r"^%s: cannot translate int 42: expected an apiVersion string, a URL path"),
        (None, None, r"^%s: cannot translate NoneType None"),
        ({"kind": "Machine", "metadata": {"name": "m", "namespace": "clusters-example"}}, None,
         r"^%s: Machine clusters-example/m: apiVersion is missing or not a string \(found None\); give the full object"),
        ([{"apiVersion": "cluster.x-k8s.io/v1beta2"}, 3], None, r"^%s: list item 1 must be an object"),
        ("https://example.com/apis/cluster.x-k8s.io", None, r"^%s: 'https://example.com/apis/cluster.x-k8s.io' looks like a full URL"),
        ("v1", {AGENT_STANDARD_GROUP: "capi-provider.cluster.hypershift.openshift.io"}, r"^%s: invalid extra_groups: .*collides with the suffix pattern"),
        ("v1", ["not", "a", "mapping"], r"^%s: invalid extra_groups: extra_groups must be a mapping"),
    ],
)
def test_translation_errors_are_filter_errors_naming_the_input(filter_function, value, extra_groups, message):
    with pytest.raises(AnsibleFilterError, match=message % filter_function.__name__):
        filter_function(value, extra_groups=extra_groups)


@pytest.mark.parametrize(
    "value, version, kwargs, message",
    [
        ({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine"}, "v1beta3", {},
         r"^convert_capi: target version must be one of v1beta1, v1beta2, got 'v1beta3'"),
        ({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine"}, None, {}, r"target version must be one of .* got None"),
        ("cluster.x-k8s.io/v1beta1", "v1beta2", {}, r"^convert_capi: expected a CAPI object or a list of objects, got str"),
        (7, "v1beta2", {}, r"^convert_capi: expected a CAPI object or a list of objects, got int 7"),
        ({"kind": "Machine", "metadata": {"name": "m", "namespace": "ns"}}, "v1beta2", {},
         r"^convert_capi: Machine ns/m has no apiVersion \(found None\); give the full object"),
        ([{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine"}, {"kind": "MachineSet", "metadata": {"name": "s"}}],
         "v1beta2", {}, r"^convert_capi: list item 1: MachineSet s has no apiVersion"),
        ([{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine"}, "x"], "v1beta2", {},
         r"^convert_capi: list item 1: expected a CAPI object \(a mapping with apiVersion and kind\), got str 'x'"),
        ({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine"}, "v1beta2", {"ref_versions": ["v1beta1"]},
         r"^convert_capi: ref_versions must be a mapping, got list"),
        ({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine"}, "v1beta2", {"crds": {"kind": "CustomResourceDefinition"}},
         r"^convert_capi: crds must be a list of CustomResourceDefinition objects, got dict"),
    ],
)
def test_convert_capi_input_errors(value, version, kwargs, message):
    original = copy.deepcopy(value)
    with pytest.raises(AnsibleFilterError, match=message):
        convert_capi(value, version, **kwargs)
    assert value == original


CONTRACT_VERSIONS = {
    "infrastructure.cluster.x-k8s.io/DockerCluster": "v1beta2",
    "infrastructure.cluster.x-k8s.io/DockerMachineTemplate": "v1beta2",
    "controlplane.cluster.x-k8s.io/KubeadmControlPlane": "v1beta2",
    "bootstrap.cluster.x-k8s.io/KubeadmConfigTemplate": "v1beta2",
}


def core_objects(objects):
    return [obj for obj in objects if obj["apiVersion"] == "cluster.x-k8s.io/v1beta2"]


def test_convert_capi_delegates_to_convert_object(simple_cluster_objects):
    from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions import convert_object

    core = core_objects(simple_cluster_objects)
    assert [obj["kind"] for obj in core] == ["Cluster", "MachineDeployment"]
    original = copy.deepcopy(core)
    down = convert_capi(core, "v1beta1", ref_versions=CONTRACT_VERSIONS)
    assert core == original
    assert down == [convert_object(obj, "v1beta1", ref_versions=CONTRACT_VERSIONS) for obj in core]
    assert down[0]["apiVersion"] == "cluster.x-k8s.io/v1beta1"
    assert down[0]["spec"]["infrastructureRef"]["apiVersion"] == "infrastructure.cluster.x-k8s.io/v1beta2"
    assert without_added_zeros(convert_capi(down, "v1beta2"), core) == core  # lossless round trip
    assert convert_capi(core[0], "v1beta1", CONTRACT_VERSIONS) == down[0]  # single object, positional ref_versions


def test_convert_capi_composes_with_the_group_filters(simple_cluster_objects):
    core = core_objects(simple_cluster_objects)
    private_down = convert_capi(to_private_capi(core), "v1beta1", ref_versions=CONTRACT_VERSIONS)
    assert private_down[0]["apiVersion"] == "cluster.hypershift.openshift.io/v1beta1"
    assert to_standard_capi(private_down) == convert_capi(core, "v1beta1", ref_versions=CONTRACT_VERSIONS)


@pytest.mark.parametrize(
    "value, kwargs, message",
    [
        ({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "DockerCluster", "metadata": {"name": "c", "namespace": "ns"}}, {},
         r"^convert_capi: DockerCluster ns/c: kind 'DockerCluster' has no v1beta1 <-> v1beta2 rules"),
        ([{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "c", "namespace": "ns"},
           "spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerCluster", "name": "c"}}}],
         {}, r"^convert_capi: list item 0: Cluster ns/c: cannot convert spec.infrastructureRef to v1beta1.*pass ref_versions="),
    ],
)
def test_convert_capi_conversion_errors_name_the_object(value, kwargs, message):
    with pytest.raises(AnsibleFilterError, match=message):
        convert_capi(value, "v1beta1", **kwargs)
