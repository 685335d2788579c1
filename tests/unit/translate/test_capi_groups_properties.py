"""Group translation on generated objects: a small own generator and the schema-driven one.

The schema-driven part uses tests/unit/strategies.py (objects_from_crd) on every CRD in
testenv/upstream/capi/crds and testenv/upstream/hypershift/crds; the oracles come from test_capi_groups.py.
"""
import copy
import glob
import os

import pytest
from hypothesis import HealthCheck, Phase, example, find, given, settings
from hypothesis import strategies as st

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    AGENT_EXTRA_GROUPS,
    AGENT_STANDARD_GROUP,
    DEFAULT_GROUP_MAP,
    PRIVATE_SUFFIX,
    STANDARD_SUFFIX,
    TO_PRIVATE,
    TO_STANDARD,
    GroupMap,
    translate_object,
)
from testenv import upstream
from tests.unit.strategies import objects_from_crd
from tests.unit.translate.test_capi_groups import (
    CLUSTERCTL_GROUP, CLUSTERCTL_PRIVATE_SPELLING, expected_group, expected_value, get_path, group_positions, leaf_differences,
    load_documents)


# ---- generated objects ---------------------------------------------------------------------------------

STANDARD_GROUPS = ["cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io", "bootstrap.cluster.x-k8s.io",
                   "controlplane.cluster.x-k8s.io", "ipam.cluster.x-k8s.io", "addons.cluster.x-k8s.io"]
UNMAPPED_GROUPS = ["", "apps", "hypershift.openshift.io", "mycluster.x-k8s.io", "cluster.x-k8s.io.evil.com",
                   "hostedcluster.hypershift.openshift.io", AGENT_STANDARD_GROUP, CLUSTERCTL_GROUP,
                   "providers." + CLUSTERCTL_GROUP]
TRICKY_STRINGS = ["cluster.x-k8s.io", "cluster.x-k8s.io/v1beta1", "machine.cluster.x-k8s.io", "cluster.x-k8s.io/cluster-name",
                  "topology.cluster.x-k8s.io/owned", "AWSMachineTemplate.infrastructure.cluster.x-k8s.io", "x", "",
                  CLUSTERCTL_GROUP, "providers.clusterctl.cluster.x-k8s.io", "Provider.clusterctl.cluster.x-k8s.io"]
group_names = st.sampled_from(STANDARD_GROUPS + UNMAPPED_GROUPS)


def join_api_version(group, version):
    return group + "/" + version if group else version


api_versions = st.one_of(st.just("v1"), st.builds(join_api_version, group_names, st.sampled_from(["v1beta1", "v1beta2", "v1alpha1"])))
tricky_text = st.one_of(st.sampled_from(TRICKY_STRINGS), st.text(max_size=8))
string_maps = st.dictionaries(st.one_of(st.sampled_from(TRICKY_STRINGS + ["kind", "apiVersion", "apiGroup"]), st.text(max_size=5)),
                              st.one_of(tricky_text, api_versions), max_size=4)
references = st.one_of(
    st.fixed_dictionaries({"apiVersion": api_versions, "kind": st.sampled_from(["Machine", "AWSMachine", "HostedControlPlane"]),
                           "name": tricky_text}),
    st.fixed_dictionaries({"apiGroup": group_names, "kind": st.sampled_from(["KubeadmConfig", "AWSMachineTemplate"]), "name": tricky_text}),
)
field_names = st.sampled_from(["infrastructureRef", "configRef", "controlPlaneRef", "template", "spec", "bootstrap",
                               "machineTemplate", "items", "labels", "annotations", "matchLabels", "apiVersion", "x"])
nested = st.recursive(
    st.one_of(tricky_text, st.integers(), st.booleans(), st.none(), references, string_maps),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(field_names, children, max_size=4)),
    max_leaves=20,
)
generated_objects = st.fixed_dictionaries(
    {
        "apiVersion": api_versions,
        "kind": st.sampled_from(["Machine", "MachineSet", "Cluster", "AWSMachine", "ConfigMap"]),
        "metadata": st.fixed_dictionaries({
            "name": tricky_text, "labels": string_maps, "annotations": string_maps,
            "finalizers": st.lists(tricky_text, max_size=3),
            "ownerReferences": st.lists(st.fixed_dictionaries({"apiVersion": api_versions, "kind": st.just("MachineSet"),
                                                               "name": tricky_text, "uid": st.just("u")}), max_size=2),
            "managedFields": st.lists(st.fixed_dictionaries({"apiVersion": api_versions, "manager": tricky_text}), max_size=2),
        }),
        "spec": nested,
        "status": nested,
    }
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=generated_objects)
@example(obj={"apiVersion": "v1", "kind": "Machine",  # found by the generator once: a prefix that is no group name
              "metadata": {"name": "m", "labels": {}, "annotations": {}, "finalizers": [], "ownerReferences": [],
                           "managedFields": []},
              "spec": None, "status": {"kind": "v1", "apiGroup": "AWSMachineTemplate.infrastructure.cluster.x-k8s.io"}})
def test_generated_objects_round_trip(obj):
    """Own generator (objects with random nested refs, label maps and group-looking strings)."""
    original = copy.deepcopy(obj)
    private = translate_object(obj, TO_PRIVATE)
    assert obj == original
    assert translate_object(private, TO_STANDARD) == obj
    assert translate_object(private, TO_PRIVATE) == private
    for key in ("labels", "annotations", "finalizers", "name"):
        assert private["metadata"][key] == obj["metadata"][key]
    changed = leaf_differences(obj, private)
    positions = {str(path) for path in group_positions(obj)}
    assert all(str(path) in positions for path in changed)
    for path in group_positions(obj):
        assert get_path(private, path) == expected_value(path[-1], get_path(obj, path))
    assert CLUSTERCTL_PRIVATE_SPELLING not in repr(private)


# ---- generated group names: the exclusion of clusterctl's inventory in both directions ----------------------------

dns_labels = st.one_of(st.sampled_from(["clusterctl", "infrastructure", "bootstrap", "providers", "x-clusterctl", "clusterctlx"]),
                       st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?\Z"))
label_prefixes = st.lists(dns_labels, max_size=3).map(".".join)


@settings(max_examples=400, deadline=None)
@given(prefix=label_prefixes, agent=st.booleans())
def test_generated_groups_follow_the_oracle_and_never_make_a_clusterctl_twin(prefix, agent):
    group_map = GroupMap(AGENT_EXTRA_GROUPS) if agent else DEFAULT_GROUP_MAP
    standard = prefix + "." + STANDARD_SUFFIX if prefix else STANDARD_SUFFIX
    private = group_map.to_private(standard)
    assert private == expected_group(standard)
    excluded = standard == CLUSTERCTL_GROUP or standard.endswith("." + CLUSTERCTL_GROUP)
    assert (private == standard) == excluded
    assert not (private == CLUSTERCTL_PRIVATE_SPELLING or private.endswith("." + CLUSTERCTL_PRIVATE_SPELLING))
    assert group_map.to_standard(private) == standard
    # the other way round: a private-looking name of the excluded group is no private group and stays
    private_spelling = prefix + "." + PRIVATE_SUFFIX if prefix else PRIVATE_SUFFIX
    assert group_map.is_private(private_spelling) != excluded
    back = group_map.to_standard(private_spelling)
    assert back == (private_spelling if excluded else standard)


# ---- objects generated from the real CRD schemas (tests/unit/strategies.py) -----------------------------

CRD_FILES = sorted(glob.glob(os.path.join(upstream.CAPI_CRDS, "*.yaml"))) + sorted(
    glob.glob(os.path.join(upstream.HYPERSHIFT_CRDS, "**", "*.yaml"), recursive=True)) + [upstream.CLUSTERCTL_CRD]
REF_API_VERSIONS = st.sampled_from(["cluster.x-k8s.io/v1beta1", "infrastructure.cluster.x-k8s.io/v1beta2", "v1",
                                    "hypershift.openshift.io/v1beta1", "mycluster.x-k8s.io/v1", AGENT_STANDARD_GROUP + "/v1beta1",
                                    CLUSTERCTL_GROUP + "/v1alpha3"])
REF_GROUPS = st.sampled_from(["cluster.x-k8s.io", "bootstrap.cluster.x-k8s.io", "", "hypershift.openshift.io",
                              "cluster.x-k8s.io.evil.com", CLUSTERCTL_GROUP])
# Reference fields get real group spellings; everything else is what the schema allows.
REF_OVERRIDES = {
    "*.apiVersion": REF_API_VERSIONS,
    "*.apiGroup": REF_GROUPS,
    # The HostedCluster/HostedControlPlane hostname pattern uses \p{L}/\p{S}, which Python's re cannot compile.
    "*componentRoutes[].hostname": st.just("console.apps.example.com"),
}


def load_crd_versions():
    params = []
    for path in CRD_FILES:
        for crd in load_documents(path):
            if crd.get("kind") != "CustomResourceDefinition":
                continue
            for version in crd["spec"]["versions"]:
                source = os.path.relpath(path, upstream.UPSTREAM_ROOT).split(os.sep)[0]  # capi/ or hypershift/ copy
                params.append(pytest.param(crd, version["name"], id="%s:%s@%s" % (source, crd["metadata"]["name"], version["name"])))
    return params


CRD_VERSIONS = load_crd_versions()


def test_crd_files_are_found():
    assert len(CRD_FILES) >= 40
    assert len(CRD_VERSIONS) >= 60


@pytest.mark.parametrize("crd, version", CRD_VERSIONS)
def test_schema_generated_objects_round_trip(crd, version):
    @settings(max_examples=8, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(obj=objects_from_crd(crd, version, overrides=REF_OVERRIDES))
    def round_trip(obj):
        original = copy.deepcopy(obj)
        private = translate_object(obj, TO_PRIVATE)
        assert obj == original
        assert translate_object(private, TO_STANDARD) == obj
        assert private["metadata"] == obj["metadata"]
        changed = leaf_differences(obj, private)
        positions = group_positions(obj)
        assert {str(path) for path in changed} <= {str(path) for path in positions}
        for path in positions:
            assert get_path(private, path) == expected_value(path[-1], get_path(obj, path))
        if DEFAULT_GROUP_MAP.is_standard(crd["spec"]["group"]):
            assert private["apiVersion"] == "%s/%s" % (DEFAULT_GROUP_MAP.to_private(crd["spec"]["group"]), version)
        else:  # clusterctl's Provider among them: no group of its own changes
            assert private["apiVersion"] == obj["apiVersion"]
        assert CLUSTERCTL_PRIVATE_SPELLING not in repr(private)

    round_trip()


def test_schema_generated_machines_do_exercise_reference_translation():
    """Guards the schema-driven test against vacuity: generated Machines carry translatable refs."""
    (machine_crd,) = load_documents(os.path.join(upstream.CAPI_CRDS, "cluster.x-k8s.io_machines.yaml"))
    for version, key in (("v1beta1", "apiVersion"), ("v1beta2", "apiGroup")):
        machine = find(objects_from_crd(machine_crd, version, overrides=REF_OVERRIDES),
                       lambda obj: "kind" in obj.get("spec", {}).get("infrastructureRef", {}) and DEFAULT_GROUP_MAP.is_standard(
                           str(obj["spec"]["infrastructureRef"].get(key, "")).partition("/")[0]),
                       settings=settings(database=None, max_examples=500, phases=[Phase.generate]))  # no shrinking: fast
        private_ref = translate_object(machine, TO_PRIVATE)["spec"]["infrastructureRef"]
        assert private_ref[key] != machine["spec"]["infrastructureRef"][key]
        assert DEFAULT_GROUP_MAP.is_private(private_ref[key].split("/")[0])
