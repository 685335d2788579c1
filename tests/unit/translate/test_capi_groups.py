"""Group translation core: tables for every branch, every real example object, generated objects."""
import copy
import glob
import json
import os

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate import groups as capi_groups
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    AGENT_EXTRA_GROUPS,
    AGENT_PRIVATE_GROUP,
    AGENT_STANDARD_GROUP,
    DEFAULT_GROUP_MAP,
    EXCLUDED_STANDARD_GROUPS,
    PRIVATE_SUFFIX,
    STANDARD_SUFFIX,
    TO_PRIVATE,
    TO_STANDARD,
    CapiTranslationError,
    GroupMap,
    translate,
    translate_api_version,
    translate_crd_name,
    translate_object,
    translate_path,
    translate_text,
)
from testenv.upstream import CAPI_CRDS, CAPI_EXAMPLES, CLUSTERCTL_CRD

EXAMPLE_FILES = sorted(glob.glob(os.path.join(CAPI_EXAMPLES, "v1beta*", "*.yaml")))
FREE_TEXT_MAP_KEYS = ("labels", "annotations", "matchLabels", "nodeSelector")


def load_documents(path):
    with open(path) as handle:
        return [document for document in yaml.load_all(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if document]


EXAMPLE_OBJECTS = [
    pytest.param(document, id="%s:%d:%s" % ("/".join(path.split(os.sep)[-2:]), index, document.get("kind")))
    for path in EXAMPLE_FILES
    for index, document in enumerate(load_documents(path))
]


def is_dns_subdomain(name):
    """Lower-case DNS labels joined by dots (what an API group name may be), with plain string operations."""
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789-")
    return all(label and set(label) <= allowed and label[0] != "-" and label[-1] != "-" for label in name.split("."))


CLUSTERCTL_GROUP = "clusterctl.cluster.x-k8s.io"  # clusterctl's inventory: inside the pattern, no CAPI type
CLUSTERCTL_PRIVATE_SPELLING = "clusterctl.cluster.hypershift.openshift.io"  # must never be produced


def expected_group(group):
    """Independent oracle: whole-label suffix replacement, written with plain string operations. A prefix that is no
    group name ("AWSMachineTemplate.infrastructure" has upper-case letters) leaves the string as it is, and so does
    clusterctl's inventory group or a name under it."""
    if group == CLUSTERCTL_GROUP or group.endswith("." + CLUSTERCTL_GROUP):
        return group
    if group == STANDARD_SUFFIX:
        return PRIVATE_SUFFIX
    if group.endswith("." + STANDARD_SUFFIX) and is_dns_subdomain(group[: -len(STANDARD_SUFFIX) - 1]):
        return group[: -len(STANDARD_SUFFIX)] + PRIVATE_SUFFIX
    return group


def expected_value(key, value):
    if key == "apiGroup":
        return expected_group(value)
    group, slash, version = value.partition("/")
    return expected_group(group) + slash + version if slash else value


def group_positions(obj, path=()):
    """Paths of the group positions of a plain object (spec of translate_object, for the examples)."""
    positions = []
    if isinstance(obj.get("apiVersion"), str):
        positions.append(path + ("apiVersion",))
    metadata = obj.get("metadata") or {}
    for field in ("ownerReferences", "managedFields"):
        for index, entry in enumerate(metadata.get(field) or ()):
            positions.append(path + ("metadata", field, index, "apiVersion"))

    def refs(node, node_path):
        if isinstance(node, dict):
            if "kind" in node:
                for key in ("apiVersion", "apiGroup"):
                    if isinstance(node.get(key), str):
                        positions.append(node_path + (key,))
            for key, child in node.items():
                if key not in FREE_TEXT_MAP_KEYS:
                    refs(child, node_path + (key,))
        elif isinstance(node, list):
            for index, child in enumerate(node):
                refs(child, node_path + (index,))

    for section in ("spec", "status"):
        if section in obj:
            refs(obj[section], path + (section,))
    return positions


def leaf_differences(before, after, path=()):
    """Paths whose leaves differ; any structural difference is reported at its path too."""
    if isinstance(before, dict) and isinstance(after, dict):
        if list(before) != list(after):
            return [path + ("<keys>",)]
        return [diff for key in before for diff in leaf_differences(before[key], after[key], path + (key,))]
    if isinstance(before, list) and isinstance(after, list):
        if len(before) != len(after):
            return [path + ("<len>",)]
        return [diff for index, pair in enumerate(zip(before, after)) for diff in leaf_differences(*pair, path=path + (index,))]
    return [] if (type(before) is type(after) and before == after) else [path]


def get_path(obj, path):
    for key in path:
        obj = obj[key]
    return obj


def all_dicts(node):
    if isinstance(node, dict):
        yield node
        for child in node.values():
            yield from all_dicts(child)
    elif isinstance(node, list):
        for child in node:
            yield from all_dicts(child)


# ---- groups ----------------------------------------------------------------------------------------

GROUP_TABLE = [
    # (standard or other input, to_private result)
    ("cluster.x-k8s.io", "cluster.hypershift.openshift.io"),
    ("infrastructure.cluster.x-k8s.io", "infrastructure.cluster.hypershift.openshift.io"),
    ("bootstrap.cluster.x-k8s.io", "bootstrap.cluster.hypershift.openshift.io"),
    ("controlplane.cluster.x-k8s.io", "controlplane.cluster.hypershift.openshift.io"),
    ("addons.cluster.x-k8s.io", "addons.cluster.hypershift.openshift.io"),
    ("ipam.cluster.x-k8s.io", "ipam.cluster.hypershift.openshift.io"),
    ("runtime.cluster.x-k8s.io", "runtime.cluster.hypershift.openshift.io"),
    ("a.b-c.cluster.x-k8s.io", "a.b-c.cluster.hypershift.openshift.io"),  # several labels
    # not CAPI groups: untouched
    ("mycluster.x-k8s.io", "mycluster.x-k8s.io"),
    ("cluster.x-k8s.io.evil.com", "cluster.x-k8s.io.evil.com"),
    ("x-k8s.io", "x-k8s.io"),
    (".cluster.x-k8s.io", ".cluster.x-k8s.io"),
    ("a..cluster.x-k8s.io", "a..cluster.x-k8s.io"),
    ("-a.cluster.x-k8s.io", "-a.cluster.x-k8s.io"),
    ("Infra.cluster.x-k8s.io", "Infra.cluster.x-k8s.io"),
    ("cluster.x-k8s.io/cluster-name", "cluster.x-k8s.io/cluster-name"),
    ("", ""),
    ("v1", "v1"),
    ("apps", "apps"),
    ("hypershift.openshift.io", "hypershift.openshift.io"),
    ("hostedcluster.hypershift.openshift.io", "hostedcluster.hypershift.openshift.io"),
    (AGENT_STANDARD_GROUP, AGENT_STANDARD_GROUP),  # only with extra_groups
    # clusterctl's inventory (and names under it) is no HyperShift CAPI type: excluded
    (CLUSTERCTL_GROUP, CLUSTERCTL_GROUP),
    ("providers." + CLUSTERCTL_GROUP, "providers." + CLUSTERCTL_GROUP),
    ("clusterctlx.cluster.x-k8s.io", "clusterctlx.cluster.hypershift.openshift.io"),  # another label: mapped
    ("x-clusterctl.cluster.x-k8s.io", "x-clusterctl.cluster.hypershift.openshift.io"),
    ("clusterctl.infrastructure.cluster.x-k8s.io", "clusterctl.infrastructure.cluster.hypershift.openshift.io"),
    # already private: to_private leaves it (idempotent)
    ("cluster.hypershift.openshift.io", "cluster.hypershift.openshift.io"),
    ("infrastructure.cluster.hypershift.openshift.io", "infrastructure.cluster.hypershift.openshift.io"),
]


@pytest.mark.parametrize("group, private", GROUP_TABLE)
def test_group_to_private(group, private):
    assert DEFAULT_GROUP_MAP.to_private(group) == private
    assert DEFAULT_GROUP_MAP.translate_group(group, TO_PRIVATE) == private


@pytest.mark.parametrize("group, private", [row for row in GROUP_TABLE if row[0] != row[1]])
def test_group_round_trip_and_classification(group, private):
    assert DEFAULT_GROUP_MAP.to_standard(private) == group
    assert DEFAULT_GROUP_MAP.is_standard(group) and not DEFAULT_GROUP_MAP.is_private(group)
    assert DEFAULT_GROUP_MAP.is_private(private) and not DEFAULT_GROUP_MAP.is_standard(private)
    assert DEFAULT_GROUP_MAP.is_mapped(group) and DEFAULT_GROUP_MAP.is_mapped(private)
    assert DEFAULT_GROUP_MAP.to_standard(group) == group  # already standard


@pytest.mark.parametrize(
    "group",
    ["mycluster.x-k8s.io", "cluster.x-k8s.io.evil.com", "", "v1", "hypershift.openshift.io", "mycluster.hypershift.openshift.io",
     "cluster.hypershift.openshift.io.evil.com", "hostedcluster.hypershift.openshift.io", AGENT_STANDARD_GROUP, AGENT_PRIVATE_GROUP,
     CLUSTERCTL_GROUP, CLUSTERCTL_PRIVATE_SPELLING, "providers." + CLUSTERCTL_GROUP, "providers." + CLUSTERCTL_PRIVATE_SPELLING],
)
def test_unmapped_groups_are_untouched_both_ways(group):
    assert not DEFAULT_GROUP_MAP.is_mapped(group)
    assert DEFAULT_GROUP_MAP.to_private(group) == group
    assert DEFAULT_GROUP_MAP.to_standard(group) == group


def test_hostedcluster_group_is_not_private():
    # "hostedcluster.hypershift.openshift.io" ends in ".hypershift.openshift.io" but not ".cluster.hypershift.openshift.io".
    assert DEFAULT_GROUP_MAP.to_standard("hostedcluster.hypershift.openshift.io") == "hostedcluster.hypershift.openshift.io"


@pytest.mark.parametrize("group_map", [DEFAULT_GROUP_MAP, GroupMap(AGENT_EXTRA_GROUPS)], ids=["default", "agent"])
def test_clusterctl_inventory_group_is_excluded_both_ways(group_map):
    """clusterctl.cluster.x-k8s.io matches the pattern but is clusterctl's inventory, no HyperShift CAPI type: no
    map classifies or translates it, nor its would-be private spelling, while the CAPI groups beside it still map."""
    assert EXCLUDED_STANDARD_GROUPS == frozenset([CLUSTERCTL_GROUP])
    for group in (CLUSTERCTL_GROUP, CLUSTERCTL_PRIVATE_SPELLING, "providers." + CLUSTERCTL_GROUP):
        assert group_map.is_excluded(group) and capi_groups.is_excluded_group(group)
        assert not (group_map.is_standard(group) or group_map.is_private(group) or group_map.is_mapped(group))
        assert group_map.to_private(group) == group_map.to_standard(group) == group
    for group in ("infrastructure", "bootstrap", "controlplane", "addons", "ipam", "runtime"):
        standard = "%s.%s" % (group, STANDARD_SUFFIX)
        assert not group_map.is_excluded(standard)
        assert group_map.to_private(standard) == "%s.%s" % (group, PRIVATE_SUFFIX)
        assert group_map.to_standard(group_map.to_private(standard)) == standard
    assert group_map.to_private(STANDARD_SUFFIX) == PRIVATE_SUFFIX and not group_map.is_excluded(STANDARD_SUFFIX)


def test_clusterctl_objects_and_crd_stay_as_they_are_both_ways():
    with open(CLUSTERCTL_CRD) as handle:
        (crd,) = [document for document in yaml.safe_load_all(handle) if document]
    assert crd["spec"]["group"] == CLUSTERCTL_GROUP and crd["metadata"]["name"] == "providers." + CLUSTERCTL_GROUP
    provider = {"apiVersion": CLUSTERCTL_GROUP + "/v1alpha3", "kind": "Provider",
                "metadata": {"name": "cluster-api", "namespace": "capi-system",
                             "labels": {"clusterctl.cluster.x-k8s.io": "", "cluster.x-k8s.io/provider": "cluster-api"},
                             "ownerReferences": [{"apiVersion": CLUSTERCTL_GROUP + "/v1alpha3", "kind": "Provider",
                                                  "name": "other", "uid": "u"}]},
                "providerName": "cluster-api", "type": "CoreProvider", "version": "v1.14.2"}
    provider_list = {"apiVersion": CLUSTERCTL_GROUP + "/v1alpha3", "kind": "ProviderList", "items": [provider]}
    for direction in (TO_PRIVATE, TO_STANDARD):
        for document in (crd, provider, provider_list):
            assert translate_object(document, direction) == document
            assert translate_object(document, direction, GroupMap(AGENT_EXTRA_GROUPS)) == document


def test_group_whose_private_name_would_exceed_253_characters_is_not_mapped():
    prefix = ".".join(["a" * 63] * 3) + "." + "b" * 42  # 234 characters
    standard = prefix + "." + STANDARD_SUFFIX  # 251 <= 253, but the private name would be 266
    assert len(standard) <= 253
    assert not DEFAULT_GROUP_MAP.is_mapped(standard)
    assert DEFAULT_GROUP_MAP.to_private(standard) == standard
    shorter = "a" * 63 + "." + STANDARD_SUFFIX
    assert DEFAULT_GROUP_MAP.to_standard(DEFAULT_GROUP_MAP.to_private(shorter)) == shorter


def test_group_cache_is_bounded():
    group_map = GroupMap()
    for index in range(capi_groups._CACHE_LIMIT + 50):
        group_map.to_private("unmapped-%d.example.com" % index)
    assert len(group_map._cache[TO_PRIVATE]) == capi_groups._CACHE_LIMIT
    assert group_map.to_private("cluster.x-k8s.io") == PRIVATE_SUFFIX  # still right past the limit


# ---- extra pairs -------------------------------------------------------------------------------------


def test_agent_pair_maps_both_ways_only_when_configured():
    group_map = GroupMap(AGENT_EXTRA_GROUPS)
    assert group_map.to_private(AGENT_STANDARD_GROUP) == AGENT_PRIVATE_GROUP
    assert group_map.to_standard(AGENT_PRIVATE_GROUP) == AGENT_STANDARD_GROUP
    assert group_map.is_standard(AGENT_STANDARD_GROUP) and group_map.is_private(AGENT_PRIVATE_GROUP)
    assert group_map.to_private("cluster.x-k8s.io") == PRIVATE_SUFFIX  # the pattern still applies
    assert group_map.extra_groups == AGENT_EXTRA_GROUPS
    assert group_map == GroupMap(dict(AGENT_EXTRA_GROUPS)) and hash(group_map) == hash(GroupMap(AGENT_EXTRA_GROUPS))
    assert group_map != DEFAULT_GROUP_MAP
    assert DEFAULT_GROUP_MAP.to_private(AGENT_STANDARD_GROUP) == AGENT_STANDARD_GROUP


def test_agent_objects_paths_and_crd_names_with_extra_pair():
    group_map = GroupMap(AGENT_EXTRA_GROUPS)
    agent_machine = {
        "apiVersion": AGENT_STANDARD_GROUP + "/v1beta1",
        "kind": "AgentMachine",
        "metadata": {"name": "m", "namespace": "clusters-example", "labels": {"cluster.x-k8s.io/cluster-name": "c"},
                     "ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine", "name": "m", "uid": "u"}]},
        "spec": {"agentRef": {"namespace": "agents", "name": "a"}},
    }
    private = translate_object(agent_machine, TO_PRIVATE, group_map)
    assert private["apiVersion"] == AGENT_PRIVATE_GROUP + "/v1beta1"
    assert private["metadata"]["ownerReferences"][0]["apiVersion"] == "cluster.hypershift.openshift.io/v1beta1"
    assert translate_object(private, TO_STANDARD, group_map) == agent_machine
    assert translate_object(agent_machine, TO_PRIVATE)["apiVersion"] == agent_machine["apiVersion"]
    path = "/apis/%s/v1beta1/namespaces/x/agentmachines" % AGENT_STANDARD_GROUP
    assert translate_path(path, TO_PRIVATE, group_map) == "/apis/%s/v1beta1/namespaces/x/agentmachines" % AGENT_PRIVATE_GROUP
    assert translate_crd_name("agentmachines." + AGENT_STANDARD_GROUP, TO_PRIVATE, group_map) == "agentmachines." + AGENT_PRIVATE_GROUP
    assert translate_crd_name("agentmachines." + AGENT_PRIVATE_GROUP, TO_STANDARD, group_map) == "agentmachines." + AGENT_STANDARD_GROUP


@pytest.mark.parametrize(
    "extra_groups, message",
    [
        ({AGENT_STANDARD_GROUP: "capi-provider.cluster.hypershift.openshift.io"}, "collides with the suffix pattern"),
        ({"foo.cluster.x-k8s.io": "foo.example.com"}, "collides with the suffix pattern"),
        ({"foo.example.com": "cluster.x-k8s.io"}, "collides with the suffix pattern"),
        ({"cluster.hypershift.openshift.io": "foo.example.com"}, "collides with the suffix pattern"),
        ({"a.example.com": "p.example.com", "b.example.com": "p.example.com"}, "collides with another extra pair"),
        ({"a.example.com": "b.example.com", "b.example.com": "c.example.com"}, "collides with another extra pair"),
        ({"a.example.com": "a.example.com"}, "cannot map to itself"),
        ({CLUSTERCTL_GROUP: "clusterctl.example.com"}, "is excluded from translation"),
        ({"clusterctl.example.com": CLUSTERCTL_PRIVATE_SPELLING}, "is excluded from translation"),
        ({"Agent.Example.com": "a.example.com"}, "not a valid API group"),
        ({"a.example.com": ""}, "not a valid API group"),
        ({"a.example.com": 3}, "not a valid API group"),
        (["a.example.com"], "must be a mapping"),
    ],
)
def test_bad_extra_pairs_are_rejected(extra_groups, message):
    with pytest.raises(CapiTranslationError, match=message):
        GroupMap(extra_groups)


# ---- apiVersion, CRD names, paths --------------------------------------------------------------------

API_VERSION_TABLE = [
    ("cluster.x-k8s.io/v1beta1", "cluster.hypershift.openshift.io/v1beta1"),
    ("infrastructure.cluster.x-k8s.io/v1beta2", "infrastructure.cluster.hypershift.openshift.io/v1beta2"),
    ("v1", "v1"),
    ("apps/v1", "apps/v1"),
    ("hypershift.openshift.io/v1beta1", "hypershift.openshift.io/v1beta1"),
    ("mycluster.x-k8s.io/v1", "mycluster.x-k8s.io/v1"),
    ("cluster.x-k8s.io.evil.com/v1", "cluster.x-k8s.io.evil.com/v1"),
    ("cluster.x-k8s.io/", "cluster.x-k8s.io/"),  # no version: not an apiVersion
    ("cluster.x-k8s.io/v1/extra", "cluster.x-k8s.io/v1/extra"),
    (CLUSTERCTL_GROUP + "/v1alpha3", CLUSTERCTL_GROUP + "/v1alpha3"),
    ("", ""),
]


@pytest.mark.parametrize("api_version, private", API_VERSION_TABLE)
def test_translate_api_version(api_version, private):
    assert translate_api_version(api_version, TO_PRIVATE) == private
    assert translate_api_version(private, TO_STANDARD) == api_version


CRD_NAME_TABLE = [
    ("machines.cluster.x-k8s.io", "machines.cluster.hypershift.openshift.io"),
    ("awsmachines.infrastructure.cluster.x-k8s.io", "awsmachines.infrastructure.cluster.hypershift.openshift.io"),
    ("hostedcontrolplanes.hypershift.openshift.io", "hostedcontrolplanes.hypershift.openshift.io"),
    ("agentmachines." + AGENT_STANDARD_GROUP, "agentmachines." + AGENT_STANDARD_GROUP),
    ("cluster.x-k8s.io", "cluster.x-k8s.io"),  # plural "cluster" of group "x-k8s.io"
    ("machines", "machines"),
    (".cluster.x-k8s.io", ".cluster.x-k8s.io"),
    ("providers." + CLUSTERCTL_GROUP, "providers." + CLUSTERCTL_GROUP),
]


@pytest.mark.parametrize("name, private", CRD_NAME_TABLE)
def test_translate_crd_name(name, private):
    assert translate_crd_name(name, TO_PRIVATE) == private
    assert translate_crd_name(private, TO_STANDARD) == name


PATH_TABLE = [
    ("/apis/cluster.x-k8s.io", "/apis/cluster.hypershift.openshift.io"),
    ("/apis/cluster.x-k8s.io/", "/apis/cluster.hypershift.openshift.io/"),
    ("/apis/cluster.x-k8s.io/v1beta2", "/apis/cluster.hypershift.openshift.io/v1beta2"),
    ("/apis/cluster.x-k8s.io/v1beta1/namespaces/clusters-example/machines/m-1/status",
     "/apis/cluster.hypershift.openshift.io/v1beta1/namespaces/clusters-example/machines/m-1/status"),
    ("/apis/infrastructure.cluster.x-k8s.io/v1beta2/watch/namespaces/ns/awsmachines",
     "/apis/infrastructure.cluster.hypershift.openshift.io/v1beta2/watch/namespaces/ns/awsmachines"),
    # the query string is kept byte for byte, even when it names groups or label keys
    ("/apis/cluster.x-k8s.io/v1beta2/machines?labelSelector=cluster.x-k8s.io%2Fcluster-name%3Dc&watch=1",
     "/apis/cluster.hypershift.openshift.io/v1beta2/machines?labelSelector=cluster.x-k8s.io%2Fcluster-name%3Dc&watch=1"),
    ("/apis/cluster.x-k8s.io?x=/apis/cluster.x-k8s.io", "/apis/cluster.hypershift.openshift.io?x=/apis/cluster.x-k8s.io"),
    # CRD names
    ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/machines.cluster.x-k8s.io",
     "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/machines.cluster.hypershift.openshift.io"),
    ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/awsclusters.infrastructure.cluster.x-k8s.io/status",
     "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/awsclusters.infrastructure.cluster.hypershift.openshift.io/status"),
    ("/apis/apiextensions.k8s.io/v1/watch/customresourcedefinitions/machines.cluster.x-k8s.io",
     "/apis/apiextensions.k8s.io/v1/watch/customresourcedefinitions/machines.cluster.hypershift.openshift.io"),
    ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/machines.cluster.x-k8s.io?resourceVersion=0",
     "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/machines.cluster.hypershift.openshift.io?resourceVersion=0"),
]
UNTOUCHED_PATHS = [
    "/api/v1/namespaces/cluster.x-k8s.io/configmaps/cluster.x-k8s.io",
    "/api/v1/namespaces/clusters-example/secrets",
    "/apis/apps/v1/namespaces/cluster.x-k8s.io/deployments/cluster.x-k8s.io",
    "/apis/mycluster.x-k8s.io/v1/things",
    "/apis/cluster.x-k8s.io.evil.com/v1/things",
    "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters/example",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?fieldSelector=metadata.name%3Dmachines.cluster.x-k8s.io",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/hostedclusters.hypershift.openshift.io",
    "/apis/apiextensions.k8s.io/v1/namespaces/customresourcedefinitions/machines.cluster.x-k8s.io",
    "/apis/cluster.x-k8s.io%2Fv1beta2/machines",  # not decoded
    "//apis/cluster.x-k8s.io/v1beta2",  # not normalised
    "/apis//cluster.x-k8s.io/v1beta2",
    "/apis",
    "/apis/",
    "/",
    "/healthz",
    "/openapi/v3/apis/cluster.x-k8s.io/v1beta2",
    "/apis/" + CLUSTERCTL_GROUP,
    "/apis/%s/v1alpha3/namespaces/capi-system/providers/cluster-api" % CLUSTERCTL_GROUP,
    "/apis/%s/v1alpha3/watch/providers?labelSelector=cluster.x-k8s.io%%2Fprovider%%3Dcluster-api" % CLUSTERCTL_GROUP,
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/providers." + CLUSTERCTL_GROUP,
    "/apis/apiextensions.k8s.io/v1/watch/customresourcedefinitions/providers." + CLUSTERCTL_GROUP,
    "/apis/" + CLUSTERCTL_PRIVATE_SPELLING + "/v1alpha3/providers",
]


@pytest.mark.parametrize("path, private", PATH_TABLE)
def test_translate_path(path, private):
    assert translate_path(path, TO_PRIVATE) == private
    assert translate_path(private, TO_STANDARD) == path
    assert translate(path, TO_PRIVATE) == private


@pytest.mark.parametrize("path", UNTOUCHED_PATHS)
def test_paths_outside_group_positions_are_untouched(path):
    assert translate_path(path, TO_PRIVATE) == path
    assert translate_path(path, TO_STANDARD) == path


PATH_SEGMENTS = st.sampled_from(
    ["apis", "api", "v1", "v1beta2", "cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io", "cluster.hypershift.openshift.io",
     "apiextensions.k8s.io", "customresourcedefinitions", "watch", "machines.cluster.x-k8s.io", "..", ".", "", "%2F",
     "namespaces", "mycluster.x-k8s.io", "status", "clusterctl.cluster.x-k8s.io", "providers.clusterctl.cluster.x-k8s.io"]
)


@settings(max_examples=300, deadline=None)
@given(segments=st.lists(PATH_SEGMENTS, max_size=8), query=st.sampled_from(["", "?a=cluster.x-k8s.io/v1", "?"]))
def test_path_translation_is_segment_wise(segments, query):
    path = "/" + "/".join(segments) + query
    translated = translate_path(path, TO_PRIVATE)
    original_path, original_query = path.partition("?")[::2]
    new_path, new_query = translated.partition("?")[::2]
    assert new_query == original_query
    before, after = original_path.split("/"), new_path.split("/")
    assert len(before) == len(after)
    for index, (old, new) in enumerate(zip(before, after)):
        if old != new:  # only the group segment or a CRD name, each replaced by its own translation
            assert (index == 2 and new == DEFAULT_GROUP_MAP.to_private(old)) or (
                index in (5, 6) and new == translate_crd_name(old, TO_PRIVATE)
            )
    if not segments or segments[0] != "apis":
        assert translated == path
    assert "clusterctl." + PRIVATE_SUFFIX not in translated


# ---- objects: every real example -------------------------------------------------------------------


def test_examples_are_loaded():
    assert len(EXAMPLE_FILES) == 16
    assert len(EXAMPLE_OBJECTS) > 50


@pytest.mark.parametrize("obj", EXAMPLE_OBJECTS)
def test_example_round_trip_and_exact_positions(obj):
    original = copy.deepcopy(obj)
    private = translate_object(obj, TO_PRIVATE)
    assert obj == original  # input not mutated
    assert translate_object(private, TO_STANDARD) == obj
    assert translate_object(private, TO_PRIVATE) == private  # idempotent
    positions = group_positions(obj)
    changed = leaf_differences(obj, private)
    expected_changes = [path for path in positions if expected_value(path[-1], get_path(obj, path)) != get_path(obj, path)]
    assert sorted(map(str, changed)) == sorted(map(str, expected_changes))
    for path in positions:
        assert get_path(private, path) == expected_value(path[-1], get_path(obj, path))
    for node in all_dicts(private):  # no standard group is left in any apiVersion/apiGroup position
        for key in ("apiVersion", "apiGroup"):
            value = node.get(key)
            if isinstance(value, str):
                group = value.split("/")[0] if key == "apiVersion" and "/" in value else value
                assert not DEFAULT_GROUP_MAP.is_standard(group), (key, value)


def test_examples_contain_every_kind_of_group_position():
    """Guards the test above against vacuity: the examples exercise apiVersion and apiGroup refs."""
    changed_keys = {}
    for param in EXAMPLE_OBJECTS:
        obj = param.values[0]
        for path in leaf_differences(obj, translate_object(obj, TO_PRIVATE)):
            changed_keys[(len(path) > 1, path[-1])] = changed_keys.get((len(path) > 1, path[-1]), 0) + 1
    assert changed_keys[(False, "apiVersion")] > 50
    assert changed_keys[(True, "apiVersion")] > 20
    assert changed_keys[(True, "apiGroup")] >= 15


# ---- objects: adversarial strings, shapes ------------------------------------------------------------

CONVERSION_DATA = json.dumps({"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine"}}})


def adversarial_machine():
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "Machine",
        "metadata": {
            "name": "cluster.x-k8s.io",
            "namespace": "clusters-example",
            "labels": {
                "cluster.x-k8s.io/cluster-name": "example-x7k2p",
                "topology.cluster.x-k8s.io/owned": "",
                "cluster.x-k8s.io/deployment-name": "cluster.x-k8s.io",
                "kind": "Machine",
                "apiVersion": "cluster.x-k8s.io/v1beta1",
            },
            "annotations": {
                "cluster.x-k8s.io/cloned-from-groupkind": "AWSMachineTemplate.infrastructure.cluster.x-k8s.io",
                "cluster.x-k8s.io/conversion-data": CONVERSION_DATA,
                "note": "apiVersion: cluster.x-k8s.io/v1beta1 lives in infrastructure.cluster.x-k8s.io",
                "machine.cluster.x-k8s.io/exclude-node-draining": "true",
            },
            "finalizers": ["machine.cluster.x-k8s.io", "cluster.x-k8s.io/machineset", "awsmachine.infrastructure.cluster.x-k8s.io"],
            "ownerReferences": [
                {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineSet", "name": "ms", "uid": "1", "controller": True},
                {"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedControlPlane", "name": "example", "uid": "2"},
            ],
            "managedFields": [{"apiVersion": "cluster.x-k8s.io/v1beta1", "manager": "m", "operation": "Update",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:cluster.x-k8s.io/cluster-name": {}}}}}],
        },
        "spec": {
            "clusterName": "cluster.x-k8s.io",
            "controlPlaneRef": {"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedControlPlane", "name": "example"},
            "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachine", "name": "m"},
            "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig", "name": "m"},
                          "dataSecretName": "cluster.x-k8s.io"},
            "evil": {"apiVersion": "mycluster.x-k8s.io/v1", "kind": "Thing"},
            "evil2": {"apiVersion": "cluster.x-k8s.io.evil.com/v1", "kind": "Thing"},
            "noKind": {"apiVersion": "cluster.x-k8s.io/v1beta1", "name": "not a reference"},
            "schemaLike": {"kind": {"type": "string"}, "apiVersion": {"type": "string"}},
            "template": {"metadata": {"labels": {"kind": "K", "apiVersion": "cluster.x-k8s.io/v1beta1"},
                                      "annotations": {"kind": "K", "apiGroup": "cluster.x-k8s.io"}},
                         "spec": {"infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "AWSMachineTemplate"}}},
            "selector": {"matchLabels": {"kind": "K", "apiVersion": "cluster.x-k8s.io/v1beta1"}},
            "nodeSelector": {"kind": "K", "apiVersion": "cluster.x-k8s.io/v1beta1"},
            "listOfRefs": [[{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine"}], "cluster.x-k8s.io/v1beta1"],
        },
        "status": {
            "nodeRef": {"apiVersion": "v1", "kind": "Node", "name": "n"},
            "failureMessage": "infrastructure.cluster.x-k8s.io/v1beta2 AWSMachine not found",
            "conditions": [{"type": "Ready", "status": "True", "message": "cluster.x-k8s.io"}],
        },
    }


def test_adversarial_machine_changes_only_group_positions():
    machine = adversarial_machine()
    original = copy.deepcopy(machine)
    private = translate_object(machine, TO_PRIVATE)
    assert machine == original
    changed = sorted(leaf_differences(machine, private), key=str)
    assert changed == sorted([
        ("apiVersion",),
        ("metadata", "ownerReferences", 0, "apiVersion"),
        ("metadata", "managedFields", 0, "apiVersion"),
        ("spec", "infrastructureRef", "apiVersion"),
        ("spec", "bootstrap", "configRef", "apiGroup"),
        ("spec", "template", "spec", "infrastructureRef", "apiVersion"),
        ("spec", "listOfRefs", 0, 0, "apiVersion"),
    ], key=str)
    assert private["spec"]["bootstrap"]["configRef"]["apiGroup"] == "bootstrap.cluster.hypershift.openshift.io"
    assert private["spec"]["controlPlaneRef"] == original["spec"]["controlPlaneRef"]
    assert private["metadata"]["labels"] == original["metadata"]["labels"]
    assert private["metadata"]["annotations"] == original["metadata"]["annotations"]
    assert private["metadata"]["finalizers"] == original["metadata"]["finalizers"]
    assert translate_object(private, TO_STANDARD) == machine


def test_output_shares_nothing_with_input_and_is_deterministic():
    machine = adversarial_machine()
    first = translate_object(machine, TO_PRIVATE)
    second = translate_object(machine, TO_PRIVATE)
    assert json.dumps(first) == json.dumps(second)  # same content and key order
    input_ids = {id(node) for node in all_dicts(machine)}
    assert not input_ids & {id(node) for node in all_dicts(first)}
    first["spec"]["template"]["metadata"]["labels"]["new"] = "x"
    first["metadata"]["finalizers"].append("x")
    assert machine == adversarial_machine()
    unchanged = translate_object({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}, TO_PRIVATE)
    assert unchanged == {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}


def test_non_capi_objects_get_owner_references_translated():
    pod = {"apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret",
           "metadata": {"name": "example-kubeconfig", "labels": {"cluster.x-k8s.io/cluster-name": "c"},
                        "ownerReferences": [{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane", "name": "cp", "uid": "1"}]}}
    private = translate_object(pod, TO_PRIVATE)
    assert private["metadata"]["ownerReferences"][0]["apiVersion"] == "controlplane.cluster.hypershift.openshift.io/v1beta2"
    assert private["type"] == "cluster.x-k8s.io/secret"
    assert private["metadata"]["labels"] == pod["metadata"]["labels"]


def test_list_items_translate_even_without_apiversion():
    machine = adversarial_machine()
    typed_item = {key: value for key, value in copy.deepcopy(machine).items() if key not in ("apiVersion", "kind")}
    machine_list = {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineList", "metadata": {"resourceVersion": "5"},
                    "items": [machine, typed_item]}
    private = translate_object(machine_list, TO_PRIVATE)
    assert private["apiVersion"] == "cluster.hypershift.openshift.io/v1beta1"
    assert private["items"][0] == translate_object(machine, TO_PRIVATE)
    assert private["items"][1]["spec"]["infrastructureRef"]["apiVersion"] == "infrastructure.cluster.hypershift.openshift.io/v1beta2"
    assert "apiVersion" not in private["items"][1]
    generic = translate_object({"apiVersion": "v1", "kind": "List", "items": [machine]}, TO_PRIVATE)
    assert generic["apiVersion"] == "v1" and generic["items"][0]["apiVersion"] == "cluster.hypershift.openshift.io/v1beta1"
    not_a_list = translate_object({"apiVersion": "example.com/v1", "kind": "Thing", "items": [machine]}, TO_PRIVATE)
    assert not_a_list["items"][0] == machine  # "items" of a non-List kind is ordinary data


def test_crd_object_from_upstream_file():
    crd_path = os.path.join(CAPI_CRDS, "cluster.x-k8s.io_machines.yaml")
    (crd,) = load_documents(crd_path)
    private = translate_object(crd, TO_PRIVATE)
    assert private["metadata"]["name"] == "machines.cluster.hypershift.openshift.io"
    assert private["spec"]["group"] == PRIVATE_SUFFIX
    assert private["spec"]["versions"] == crd["spec"]["versions"]  # schemas untouched
    assert private["metadata"].get("labels") == crd["metadata"].get("labels")
    assert private["apiVersion"] == crd["apiVersion"]
    assert translate_object(private, TO_STANDARD) == crd


def shape(kind, **fields):
    obj = {"apiVersion": "v1", "kind": kind}
    obj.update(fields)
    return obj


MACHINE_REF = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "m"}}
PRIVATE_MACHINE_REF = {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Machine", "metadata": {"name": "m"}}
SHAPE_TABLE = [
    pytest.param(
        shape("Status", status="Failure", reason="Invalid", message='Machine.cluster.x-k8s.io "m" is invalid',
              details={"name": "m", "group": "cluster.x-k8s.io", "kind": "machines",
                       "causes": [{"field": "spec.infrastructureRef.apiGroup",
                                   "message": 'Unsupported value: "infrastructure.cluster.x-k8s.io"'}]}),
        shape("Status", status="Failure", reason="Invalid",
              message='Machine.cluster.hypershift.openshift.io "m" is invalid',
              details={"name": "m", "group": "cluster.hypershift.openshift.io", "kind": "machines",
                       "causes": [{"field": "spec.infrastructureRef.apiGroup",
                                   "message": 'Unsupported value: "infrastructure.cluster.hypershift.openshift.io"'}]}),
        id="Status"),
    pytest.param({"type": "ADDED", "object": MACHINE_REF}, {"type": "ADDED", "object": PRIVATE_MACHINE_REF}, id="WatchEvent"),
    pytest.param(
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
         "request": {"uid": "1", "desiredAPIVersion": "cluster.x-k8s.io/v1beta1", "objects": [MACHINE_REF]},
         "response": {"uid": "1", "convertedObjects": [MACHINE_REF], "result": {"status": "Success"}}},
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
         "request": {"uid": "1", "desiredAPIVersion": "cluster.hypershift.openshift.io/v1beta1", "objects": [PRIVATE_MACHINE_REF]},
         "response": {"uid": "1", "convertedObjects": [PRIVATE_MACHINE_REF], "result": {"status": "Success"}}},
        id="ConversionReview"),
    pytest.param(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
         "request": {"kind": {"group": "cluster.x-k8s.io", "version": "v1beta2", "kind": "Machine"},
                     "resource": {"group": "cluster.x-k8s.io", "version": "v1beta2", "resource": "machines"},
                     "object": MACHINE_REF, "oldObject": None},
         "response": {"patch": "W10="}},
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
         "request": {"kind": {"group": "cluster.hypershift.openshift.io", "version": "v1beta2", "kind": "Machine"},
                     "resource": {"group": "cluster.hypershift.openshift.io", "version": "v1beta2", "resource": "machines"},
                     "object": PRIVATE_MACHINE_REF, "oldObject": None},
         "response": {"patch": "W10="}},
        id="AdmissionReview"),
    pytest.param(
        {"apiVersion": "meta.k8s.io/v1", "kind": "Table", "columnDefinitions": [{"name": "Name"}],
         "rows": [{"cells": ["cluster.x-k8s.io/v1beta2"], "object": MACHINE_REF}]},
        {"apiVersion": "meta.k8s.io/v1", "kind": "Table", "columnDefinitions": [{"name": "Name"}],
         "rows": [{"cells": ["cluster.x-k8s.io/v1beta2"], "object": PRIVATE_MACHINE_REF}]},
        id="Table"),
    pytest.param(
        shape("Event", involvedObject={"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": "m"},
              message="cluster.x-k8s.io"),
        shape("Event", involvedObject={"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Machine", "name": "m"},
              message="cluster.x-k8s.io"),
        id="Event"),
    pytest.param(
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"cluster.x-k8s.io/aggregate-to-manager": "true"}}]},
         "rules": [{"apiGroups": ["cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io", "", "apps"], "resources": ["*"], "verbs": ["*"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"cluster.x-k8s.io/aggregate-to-manager": "true"}}]},
         "rules": [{"apiGroups": ["cluster.hypershift.openshift.io", "infrastructure.cluster.hypershift.openshift.io", "", "apps"],
                    "resources": ["*"], "verbs": ["*"]}]},
        id="ClusterRole"),
    pytest.param(
        shape("APIGroupList", groups=[{"name": "cluster.x-k8s.io", "versions": [{"groupVersion": "cluster.x-k8s.io/v1beta2", "version": "v1beta2"}],
                                       "preferredVersion": {"groupVersion": "cluster.x-k8s.io/v1beta2", "version": "v1beta2"}}]),
        shape("APIGroupList", groups=[{"name": "cluster.hypershift.openshift.io",
                                       "versions": [{"groupVersion": "cluster.hypershift.openshift.io/v1beta2", "version": "v1beta2"}],
                                       "preferredVersion": {"groupVersion": "cluster.hypershift.openshift.io/v1beta2", "version": "v1beta2"}}]),
        id="APIGroupList"),
    pytest.param(
        shape("APIGroup", name="ipam.cluster.x-k8s.io", versions=[{"groupVersion": "ipam.cluster.x-k8s.io/v1beta2", "version": "v1beta2"}]),
        shape("APIGroup", name="ipam.cluster.hypershift.openshift.io",
              versions=[{"groupVersion": "ipam.cluster.hypershift.openshift.io/v1beta2", "version": "v1beta2"}]),
        id="APIGroup"),
    pytest.param(
        shape("APIResourceList", groupVersion="cluster.x-k8s.io/v1beta2",
              resources=[{"name": "machines", "kind": "Machine", "namespaced": True},
                         {"name": "machines/scale", "kind": "Scale", "group": "autoscaling", "version": "v1"}]),
        shape("APIResourceList", groupVersion="cluster.hypershift.openshift.io/v1beta2",
              resources=[{"name": "machines", "kind": "Machine", "namespaced": True},
                         {"name": "machines/scale", "kind": "Scale", "group": "autoscaling", "version": "v1"}]),
        id="APIResourceList"),
]


@pytest.mark.parametrize("standard, private", SHAPE_TABLE)
def test_wire_shapes(standard, private):
    original = copy.deepcopy(standard)
    assert translate_object(standard, TO_PRIVATE) == private
    assert translate_object(private, TO_STANDARD) == standard
    assert standard == original
    assert translate(standard, TO_PRIVATE) == private


@pytest.mark.parametrize("private_text, standard_text", [
    ('machines.cluster.hypershift.openshift.io "m1" is forbidden: User "bob" cannot list resource "machines" in '
     'API group "cluster.hypershift.openshift.io" in the namespace "hcp"',
     'machines.cluster.x-k8s.io "m1" is forbidden: User "bob" cannot list resource "machines" in '
     'API group "cluster.x-k8s.io" in the namespace "hcp"'),
    ("AWSMachine.infrastructure.cluster.hypershift.openshift.io/v1beta2 x",
     "AWSMachine.infrastructure.cluster.x-k8s.io/v1beta2 x"),
    ("cluster.hypershift.openshift.io.evil.com and mycluster.hypershift.openshift.io stay",
     "cluster.hypershift.openshift.io.evil.com and mycluster.hypershift.openshift.io stay"),
    ("no group here", "no group here"),
    ('providers.clusterctl.cluster.x-k8s.io "cluster-api" is forbidden in API group "clusterctl.cluster.x-k8s.io"',
     'providers.clusterctl.cluster.x-k8s.io "cluster-api" is forbidden in API group "clusterctl.cluster.x-k8s.io"'),
    ("providers.clusterctl.cluster.hypershift.openshift.io stays", "providers.clusterctl.cluster.hypershift.openshift.io stays"),
])
def test_translate_text_only_whole_group_names(private_text, standard_text):
    assert translate_text(private_text, TO_STANDARD) == standard_text
    if private_text != standard_text:
        assert translate_text(standard_text, TO_PRIVATE) == private_text


def test_translate_text_extra_groups_and_non_strings():
    agent = GroupMap(AGENT_EXTRA_GROUPS)
    assert translate_text("agentmachines.%s is forbidden" % AGENT_PRIVATE_GROUP, TO_STANDARD, agent) == \
        "agentmachines.%s is forbidden" % AGENT_STANDARD_GROUP
    assert translate_text(None, TO_STANDARD) is None
    with pytest.raises(CapiTranslationError):
        translate_text("x", "sideways")


def test_input_types_subclasses_become_plain():
    class TaggedDict(dict):
        pass

    class TaggedStr(str):
        pass

    obj = TaggedDict(apiVersion=TaggedStr("cluster.x-k8s.io/v1beta2"), kind="Machine",
                     spec={"infrastructureRef": TaggedDict(apiGroup="infrastructure.cluster.x-k8s.io", kind="AWSMachine")},
                     status={"addresses": ({"type": "Hostname", "address": "a"},)})
    private = translate_object(obj, TO_PRIVATE)
    assert private.__class__ is dict and private["spec"]["infrastructureRef"].__class__ is dict  # plain, not the subclass
    assert private["apiVersion"] == "cluster.hypershift.openshift.io/v1beta2"
    assert private["spec"]["infrastructureRef"]["apiGroup"] == "infrastructure.cluster.hypershift.openshift.io"
    assert private["status"]["addresses"] == [{"type": "Hostname", "address": "a"}]


# ---- translate() dispatch and errors -----------------------------------------------------------------


def test_translate_dispatch():
    assert translate("cluster.x-k8s.io", TO_PRIVATE) == PRIVATE_SUFFIX
    assert translate("v1", TO_PRIVATE) == "v1"
    assert translate("cluster.x-k8s.io/v1beta2", TO_PRIVATE) == "cluster.hypershift.openshift.io/v1beta2"
    assert translate("/apis/cluster.x-k8s.io/v1beta2", TO_PRIVATE) == "/apis/cluster.hypershift.openshift.io/v1beta2"
    assert translate([MACHINE_REF, "cluster.x-k8s.io/v1beta1"], TO_PRIVATE) == [PRIVATE_MACHINE_REF, "cluster.hypershift.openshift.io/v1beta1"]
    assert translate((MACHINE_REF,), TO_PRIVATE) == [PRIVATE_MACHINE_REF]
    assert translate([], TO_STANDARD) == []


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: translate("cluster.x-k8s.io/v1", "sideways"), r"direction must be 'to_private' or 'to_standard', got 'sideways'"),
        (lambda: translate_object(MACHINE_REF, None), "direction must be"),
        (lambda: translate_path("/apis", "up"), "direction must be"),
        (lambda: translate_crd_name("a.b", "up"), "direction must be"),
        (lambda: DEFAULT_GROUP_MAP.translate_group("cluster.x-k8s.io", "up"), "direction must be"),
        (lambda: translate_api_version("cluster.x-k8s.io/v1", "up"), "direction must be"),
        (lambda: translate(42, TO_PRIVATE), "cannot translate int 42: expected an apiVersion string, a URL path"),
        (lambda: translate(None, TO_PRIVATE), "cannot translate NoneType None"),
        (lambda: translate([MACHINE_REF, [MACHINE_REF]], TO_PRIVATE), "list item 1 must be an object.*flatten nested lists"),
        (lambda: translate("https://api.example.com/apis/cluster.x-k8s.io", TO_PRIVATE), "looks like a full URL; pass only its path"),
        (lambda: translate_path("apis/cluster.x-k8s.io", TO_PRIVATE), "URL path must start with '/'"),
        (lambda: translate_path(b"/apis", TO_PRIVATE), "URL path must be a string"),
        (lambda: translate_crd_name(None, TO_PRIVATE), "CRD name must be a string"),
        (lambda: translate_api_version(1, TO_PRIVATE), "apiVersion must be a string"),
        (lambda: DEFAULT_GROUP_MAP.to_private(["cluster.x-k8s.io"]), "API group must be a string, got list"),
        (lambda: DEFAULT_GROUP_MAP.is_mapped(None), "API group must be a string"),
        (lambda: translate_object("cluster.x-k8s.io/v1", TO_PRIVATE), "expected a Kubernetes object"),
        (lambda: translate_object({"kind": "Machine", "metadata": {"name": "m", "namespace": "ns"}}, TO_PRIVATE),
         "Machine ns/m: apiVersion is missing or not a string"),
        (lambda: translate_object({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                                   "metadata": {"name": "m", "ownerReferences": {"kind": "MachineSet"}}}, TO_PRIVATE),
         r"Machine m: metadata.ownerReferences must be a list, found dict; fix the object"),
        (lambda: translate_object({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                                   "metadata": {"name": "m", "managedFields": ["x"]}}, TO_PRIVATE),
         r"Machine m: metadata.managedFields\[0\] must be a mapping, found str"),
        (lambda: translate_object({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                                   "metadata": {"name": "m", "ownerReferences": [{"apiVersion": 1}]}}, TO_PRIVATE),
         r"metadata.ownerReferences\[0\].apiVersion must be a string, found int"),
        (lambda: translate_object({"apiVersion": "v1", "kind": "List", "items": ["x"]}, TO_PRIVATE),
         r"List <no name>: items\[0\] must be a mapping, found str"),
        (lambda: translate_object(MACHINE_REF, TO_PRIVATE, group_map={}), "group_map must be a GroupMap"),
    ],
)
def test_errors_name_the_input_and_the_fix(call, message):
    with pytest.raises(CapiTranslationError, match=message):
        call()


def test_error_is_a_value_error():
    assert issubclass(CapiTranslationError, ValueError)


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_benchmark_machine_list_translates_every_position(version):
    """The benchmark's realistic Machines (ownerReferences, managedFields) obey the same rules."""
    from benchmarks.bench_translation import build_machine_list

    machine_list = build_machine_list(version, count=3)
    private = translate_object(machine_list, TO_PRIVATE)
    assert translate_object(private, TO_STANDARD) == machine_list
    for machine, private_machine in zip(machine_list["items"], private["items"]):
        changed = sorted(str(path) for path in leaf_differences(machine, private_machine))
        expected = sorted(str(path) for path in group_positions(machine)
                          if expected_value(path[-1], get_path(machine, path)) != get_path(machine, path))
        assert changed == expected and len(expected) == 6  # apiVersion, 1 ownerRef, 2 managedFields, 2 refs
