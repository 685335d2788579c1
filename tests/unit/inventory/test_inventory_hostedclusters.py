"""The pure parts of the hostedclusters inventory plugin: sources, records, host names, groups, counts, hostvars."""
import copy
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.hypershift.private_capi.plugins.inventory import hostedclusters as plugin
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine as ms
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import AGENT_EXTRA_GROUPS, GroupMap
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.discovery import ServedResource

# The annotations of each state, as the state machine writes them (plugins/module_utils/state/machine.py).
STATE_ANNOTATIONS = {
    ms.NEW: {},
    ms.LEGACY: {ms.SCOPE_ANNOTATION: "legacy"},
    ms.IN_PROGRESS: {ms.SCOPE_ANNOTATION: "legacy", ms.IN_PROGRESS_ANNOTATION: "true",
                     ms.LEASE_HOLDER_ANNOTATION: "fleet-run-1"},
    ms.MIGRATED: {ms.PRIVATE_TYPES_ANNOTATION: "true"},
    ms.FAILED: {ms.SCOPE_ANNOTATION: "legacy", ms.FAILED_ANNOTATION: "copy: admission webhook denied"},
    ms.INVALID: {ms.SCOPE_ANNOTATION: "legacy", ms.PRIVATE_TYPES_ANNOTATION: "true"},
}


def hostedcluster(name="prod-01", namespace="clusters", annotations=None, labels=None, platform="AWS"):
    spec = {"platform": {"type": platform}} if platform else {}
    return {"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster",
            "metadata": {"name": name, "namespace": namespace, "annotations": dict(annotations or {}),
                         "labels": dict(labels or {})},
            "spec": spec}


# --- sources ------------------------------------------------------------------------------------------------------

def test_sources_are_normalised_and_relative_kubeconfigs_follow_the_inventory_file(tmp_path):
    sources = plugin.normalise_sources([
        {"name": "mc-east", "kubeconfig": "kubeconfigs/east", "context": "admin"},
        {"name": "mc-west", "kubeconfig": "~/west", "namespace": "clusters", "label_selector": "env=prod"},
        {"name": "local"},
    ], str(tmp_path))
    assert sources == [
        {"name": "mc-east", "kubeconfig": os.path.join(str(tmp_path), "kubeconfigs", "east"), "context": "admin",
         "namespace": None, "label_selector": None},
        {"name": "mc-west", "kubeconfig": os.path.expanduser("~/west"), "context": None, "namespace": "clusters",
         "label_selector": "env=prod"},
        {"name": "local", "kubeconfig": None, "context": None, "namespace": None, "label_selector": None},
    ]


@pytest.mark.parametrize("entries, message", [
    (None, "management_clusters must be a non-empty list"),
    ([], "management_clusters must be a non-empty list"),
    ({"name": "mc-1"}, "management_clusters must be a non-empty list"),
    (["mc-1"], "management_clusters[0] must be a mapping with at least a name; found 'mc-1'"),
    ([{"kubeconfig": "/k"}], "management_clusters[0].name must be a non-empty name without '/'"),
    ([{"name": "a/b"}], "management_clusters[0].name must be a non-empty name without '/'"),
    ([{"name": "mc-1"}, {"name": "mc-1"}], "management_clusters[1].name 'mc-1' is used by an earlier entry"),
    ([{"name": "mc-1", "kubconfig": "/k"}], "management_clusters[0] has unknown keys kubconfig; allowed: name, "),
    ([{"name": "mc-1", "context": 3}], "management_clusters[0].context must be a string; found 3"),
])
def test_bad_sources_are_refused_naming_the_entry(entries, message):
    with pytest.raises(plugin.SourceError) as raised:
        plugin.normalise_sources(entries, "/inventory")
    assert message in str(raised.value)


def test_describe_source_says_how_the_cluster_is_reached():
    assert plugin.describe_source({"name": "mc-1", "kubeconfig": "/k", "context": "c"}) == \
        "management cluster 'mc-1' (kubeconfig /k, context c)"
    assert plugin.describe_source({"name": "local", "kubeconfig": None, "context": None}) == \
        "management cluster 'local' (in-cluster or default kubeconfig)"


def test_the_cache_fingerprint_changes_with_what_the_records_depend_on():
    sources = plugin.normalise_sources([{"name": "mc-1", "kubeconfig": "/k"}], "/")
    base = plugin.cache_fingerprint(sources, True, 500)
    assert base == plugin.cache_fingerprint(copy.deepcopy(sources), True, 500)
    other_sources = plugin.normalise_sources([{"name": "mc-1", "kubeconfig": "/k", "label_selector": "a=b"}], "/")
    assert len({base, plugin.cache_fingerprint(other_sources, True, 500), plugin.cache_fingerprint(sources, False, 500),
                plugin.cache_fingerprint(sources, True, 100)}) == 4


# --- records, names, groups ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("state", sorted(STATE_ANNOTATIONS))
def test_the_state_is_the_state_machine_s_judgement_and_names_its_group(state):
    record = plugin.hostedcluster_record(hostedcluster(annotations=STATE_ANNOTATIONS[state]), "mc-1")
    assert record["state"] == state == ms.state_of(hostedcluster(annotations=STATE_ANNOTATIONS[state]))
    assert plugin.group_names(record) == ["capi_hostedclusters", "capi_" + state.replace("-", "_"), "platform_aws",
                                          "mc_mc_1"]


def test_state_groups_are_the_six_states():
    assert plugin.STATE_GROUPS == ("capi_new", "capi_legacy", "capi_in_progress", "capi_migrated", "capi_failed",
                                   "capi_invalid")


def test_a_record_keeps_what_the_migration_needs_and_does_not_touch_the_object():
    annotations = dict(STATE_ANNOTATIONS[ms.IN_PROGRESS])
    source = hostedcluster(name="prod.eu-01", namespace="clusters", annotations=annotations,
                           labels={ms.STATE_LABEL: "in-progress", "env": "prod"}, platform="KubeVirt")
    before = copy.deepcopy(source)
    record = plugin.hostedcluster_record(source, "mc-east")
    assert source == before
    assert record == {
        "management_cluster": "mc-east", "namespace": "clusters", "name": "prod.eu-01",
        "hcp_namespace": "clusters-prod-eu-01", "platform": "KubeVirt", "state": "in-progress",
        "state_label": "in-progress", "failed_reason": None, "lease_holder": "fleet-run-1",
        "labels": {ms.STATE_LABEL: "in-progress", "env": "prod"}, "objects": None,
    }
    record["labels"]["env"] = "changed"
    assert source["metadata"]["labels"]["env"] == "prod"


def test_a_failed_record_carries_the_reason_and_a_missing_platform_reads_none():
    record = plugin.hostedcluster_record(hostedcluster(annotations=STATE_ANNOTATIONS[ms.FAILED], platform=None), "m")
    assert (record["state"], record["failed_reason"], record["platform"]) == \
        ("failed", "copy: admission webhook denied", "None")
    assert plugin.group_names(record)[2] == "platform_none"


def test_host_names_are_the_fleet_keys():
    record = plugin.hostedcluster_record(hostedcluster(name="hc-01"), "mc-1")
    assert plugin.host_name(record) == "mc-1/clusters/hc-01"


@pytest.mark.parametrize("text, group", [
    ("mc-1", "mc_1"), ("MC.East", "mc_east"), ("KubeVirt", "kubevirt"), ("a b/c:d", "a_b_c_d"), ("ok_1", "ok_1"),
])
def test_group_names_are_sanitised(text, group):
    assert plugin.safe_group_name(text) == group


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_every_sanitised_group_name_is_safe_and_sanitising_again_keeps_it(text):
    name = plugin.safe_group_name(text)
    assert all(character in "abcdefghijklmnopqrstuvwxyz0123456789_" for character in name)
    assert plugin.safe_group_name(name) == name


# --- counts -------------------------------------------------------------------------------------------------------

def served(group, version, plural, kind, namespaced=True, verbs=("get", "list", "create")):
    return ServedResource(group, version, plural, kind, namespaced, verbs, True)


def test_counted_resources_are_the_namespaced_listable_capi_ones_in_their_preferred_version():
    discovery = {
        "": [("v1", [served("", "v1", "pods", "Pod")])],
        "apps": [("v1", [served("apps", "v1", "deployments", "Deployment")])],
        "cluster.x-k8s.io": [("v1beta2", [served("cluster.x-k8s.io", "v1beta2", "machines", "Machine")]),
                             ("v1beta1", [served("cluster.x-k8s.io", "v1beta1", "machines", "Machine"),
                                          served("cluster.x-k8s.io", "v1beta1", "machinepools", "MachinePool")])],
        "infrastructure.cluster.hypershift.openshift.io": [("v1beta2", [
            served("infrastructure.cluster.hypershift.openshift.io", "v1beta2", "awsmachines", "AWSMachine"),
            served("infrastructure.cluster.hypershift.openshift.io", "v1beta2", "awsclustercontrolleridentities",
                   "AWSClusterControllerIdentity", namespaced=False),
            served("infrastructure.cluster.hypershift.openshift.io", "v1beta2", "awsthings", "AWSThing",
                   verbs=("get",))])],
        "capi-provider.agent-install.openshift.io": [("v1beta1", [
            served("capi-provider.agent-install.openshift.io", "v1beta1", "agentmachines", "AgentMachine")])],
        "mycluster.x-k8s.io": [("v1", [served("mycluster.x-k8s.io", "v1", "things", "Thing")])],
    }
    chosen = [(side, r.group, r.version, r.plural) for side, r in plugin.capi_resources(discovery, GroupMap(AGENT_EXTRA_GROUPS))]
    assert chosen == [
        ("standard", "capi-provider.agent-install.openshift.io", "v1beta1", "agentmachines"),
        ("standard", "cluster.x-k8s.io", "v1beta1", "machinepools"),
        ("standard", "cluster.x-k8s.io", "v1beta2", "machines"),
        ("private", "infrastructure.cluster.hypershift.openshift.io", "v1beta2", "awsmachines"),
    ]


def test_counts_are_per_namespace_and_per_side():
    machines = [{"metadata": {"namespace": "clusters-a", "name": "m%d" % i}} for i in range(3)] + \
               [{"metadata": {"namespace": "clusters-b", "name": "m"}}]
    assert plugin.namespace_counts(machines) == {"clusters-a": 3, "clusters-b": 1}
    tallies = [("standard", "Machine", {"clusters-a": 3, "clusters-b": 1}), ("private", "Machine", {"clusters-b": 2}),
               ("standard", "Cluster", {"clusters-a": 1})]
    assert plugin.objects_in("clusters-a", tallies) == {"standard": {"Machine": 3, "Cluster": 1}, "private": {}}
    assert plugin.objects_in("clusters-b", tallies) == {"standard": {"Machine": 1}, "private": {"Machine": 2}}
    assert plugin.objects_in("clusters-c", tallies) == {"standard": {}, "private": {}}


# --- host variables -----------------------------------------------------------------------------------------------

def test_host_variables_are_what_the_migrate_play_reads():
    record = plugin.hostedcluster_record(hostedcluster(name="hc-01", annotations=STATE_ANNOTATIONS[ms.LEGACY]), "mc-1")
    record["objects"] = {"standard": {"Machine": 2, "Cluster": 1}, "private": {}}
    variables = plugin.host_variables(record, {"name": "mc-1", "kubeconfig": "/k", "context": "admin"})
    assert variables == {
        "ansible_connection": "local",
        "private_capi_management_cluster": "mc-1", "private_capi_hc_name": "hc-01",
        "private_capi_hc_namespace": "clusters", "private_capi_hcp_namespace": "clusters-hc-01",
        "private_capi_platform": "AWS", "private_capi_state": "legacy", "private_capi_state_label": None,
        "private_capi_failed_reason": None, "private_capi_lease_holder": None, "private_capi_hc_labels": {},
        "private_capi_kubeconfig": "/k", "private_capi_context": "admin",
        "private_capi_capi_objects": {"standard": {"Machine": 2, "Cluster": 1}, "private": {}},
        "private_capi_standard_objects": 3, "private_capi_private_objects": 0,
    }


def test_without_counts_or_credentials_those_variables_are_absent():
    record = plugin.hostedcluster_record(hostedcluster(), "local")
    variables = plugin.host_variables(record, {"name": "local", "kubeconfig": None, "context": None})
    assert not {"private_capi_kubeconfig", "private_capi_context", "private_capi_capi_objects",
                "private_capi_standard_objects", "private_capi_private_objects"} & set(variables)


@pytest.mark.parametrize("content, expected", [
    (None, "does not exist"),
    ("vm\n", "is not a kubeconfig"),
    ("directory", "is a directory"),
])
def test_a_bad_kubeconfig_is_named_with_what_is_wrong(tmp_path, content, expected):
    path = tmp_path / "kubeconfig"
    if content == "directory":
        path.mkdir()
    elif content is not None:
        path.write_text(content)
    with pytest.raises(plugin.SourceError) as raised:
        plugin.connect({"name": "mc-1", "kubeconfig": str(path), "context": None}, 30)
    assert str(path) in str(raised.value) and expected in str(raised.value)
