"""The verify role's pure judgement: every problem it can find, and a clean cluster judged OK."""
import copy
import json

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hypershift.private_capi.plugins.filter.fleet_verify import (
    capi_owners_outside,
    capi_verify_judge,
    capi_verify_table,
)

HCP_UID = "hcp-uid"
CLUSTER = {"metadata": {"name": "hc-01", "uid": "cl-uid"}}
MACHINE = {"metadata": {"name": "m-0", "uid": "m-uid", "ownerReferences": [
    {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Cluster", "name": "hc-01", "uid": "cl-uid"},
    {"apiVersion": "v1", "kind": "Secret", "name": "owner-secret", "uid": "secret-uid"}]}}
CLEAN = {
    "management_cluster": "mc-1", "namespace": "clusters", "name": "hc-01", "hcp_namespace": "clusters-hc-01",
    "state": "migrated", "standard_counts": {"Machine": 0}, "private_counts": {"Cluster": 1, "Machine": 2},
    "record": json.dumps({"Cluster": 1, "Machine": 2}),
    "outside_owners": [{"apiVersion": "v1", "kind": "Secret", "name": "owner-secret", "uid": "secret-uid"}],
    "owner_lookups": [{"item": {"apiVersion": "v1", "kind": "Secret", "name": "owner-secret"},
                       "resources": [{"metadata": {"uid": "secret-uid"}}]}],
    "hostedcontrolplane": {"metadata": {"uid": HCP_UID}},
    "deployments": [{"metadata": {"name": "cluster-api"}, "spec": {"template": {"spec": {
        "containers": [{"name": "manager"}, {"name": "kube-apiserver-proxy"}]}}}}],
    "deployment_names": ["cluster-api", "absent-deployment"], "config_map_present": True,
}


def test_owners_outside_the_given_objects_are_listed_once():
    assert capi_owners_outside([CLUSTER, MACHINE, copy.deepcopy(MACHINE)]) == [
        {"apiVersion": "v1", "kind": "Secret", "name": "owner-secret", "uid": "secret-uid"}]
    assert capi_owners_outside([CLUSTER, MACHINE], others=[{"metadata": {"uid": "secret-uid"}}]) == []


def test_a_clean_cluster_is_verified():
    result = capi_verify_judge(CLEAN)
    assert result["ok"] is True and result["problems"] == []
    assert (result["objects"], result["standard_left"]) == (3, 0)


@pytest.mark.parametrize("change, expected", [
    ({"state": "failed"}, "migration state failed, expected migrated"),
    ({"standard_counts": {"Machine": 2}}, "objects left in the standard CAPI groups Machine=2"),
    ({"record": None}, "has no count record"),
    ({"record": "not json"}, "is not JSON"),
    ({"private_counts": {"Cluster": 1, "Machine": 1}}, "1 private Machine objects, the record before migration says 2"),
    ({"owner_lookups": []}, "ownerReference Secret owner-secret (uid secret-uid) points at nothing"),
    ({"owner_lookups": [{"item": {"apiVersion": "v1", "kind": "Secret", "name": "owner-secret"},
                         "resources": [{"metadata": {"uid": "other"}}]}]}, "has uid secret-uid, the object has uid other"),
    ({"hostedcontrolplane": None}, "HostedControlPlane clusters-hc-01/hc-01 not found"),
    ({"deployments": [{"metadata": {"name": "cluster-api"}, "spec": {"template": {"spec": {"containers": [{"name": "manager"}]}}}}]},
     "expected the sidecar kube-apiserver-proxy"),
    ({"config_map_present": False}, "ConfigMap capi-proxy-kubeconfig"),
    ({"conversion_problem": "reading clusters.cluster.hypershift.openshift.io at v1beta1 failed (HTTP 500: "
                            "conversion webhook ... failed)"}, "at v1beta1 failed"),
])
def test_each_problem_is_found_and_names_the_hostedcluster(change, expected):
    inputs = dict(CLEAN, **change)
    result = capi_verify_judge(inputs)
    assert result["ok"] is False
    assert len(result["problems"]) == 1, result["problems"]
    assert result["problems"][0].startswith("HostedCluster clusters/hc-01")
    assert expected in result["problems"][0]


def test_bad_input_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match="expected a dict"):
        capi_verify_judge(["not", "a", "dict"])


def test_table_has_a_row_per_cluster_and_a_total():
    failed = capi_verify_judge(dict(CLEAN, name="hc-02", state="failed"))
    lines = capi_verify_table([failed, capi_verify_judge(CLEAN)])
    assert lines[0].split()[:2] == ["management", "hostedcluster"]
    assert "clusters/hc-01" in lines[1] and lines[1].rstrip().endswith("OK")
    assert "clusters/hc-02" in lines[2] and "FAIL: migration state failed" in lines[2]
    assert lines[-1] == "1 of 2 HostedClusters verified"


# -- the capi_verify module's pure parts: which resources it lists, how it resolves an owner ------------------------

def _served():
    from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.discovery import ServedResource
    verbs = ["get", "list", "create", "update"]
    return {
        "": [("v1", [ServedResource("", "v1", "secrets", "Secret", True, verbs, False)])],
        "cluster.x-k8s.io": [("v1beta2", [ServedResource("cluster.x-k8s.io", "v1beta2", "machines", "Machine", True, verbs, True)]),
                             ("v1beta1", [ServedResource("cluster.x-k8s.io", "v1beta1", "machines", "Machine", True, verbs, True),
                                          ClusterScoped])],
        "cluster.hypershift.openshift.io": [("v1beta2", [
            ServedResource("cluster.hypershift.openshift.io", "v1beta2", "machines", "Machine", True, verbs, True),
            ServedResource("cluster.hypershift.openshift.io", "v1beta2", "watchonly", "WatchOnly", True, ["watch"], False)])],
        "infrastructure.cluster.hypershift.openshift.io": [("v1alpha1", [ServedResource(
            "infrastructure.cluster.hypershift.openshift.io", "v1alpha1", "kubevirtmachines", "KubevirtMachine", True,
            verbs, True)])],
        "mycluster.x-k8s.io": [("v1", [ServedResource("mycluster.x-k8s.io", "v1", "things", "Thing", True, verbs, False)])],
    }


def _cluster_scoped():
    from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.discovery import ServedResource
    return ServedResource("cluster.x-k8s.io", "v1beta1", "clusterthings", "ClusterThing", False, ["get", "list"], False)


ClusterScoped = _cluster_scoped()


def test_verify_lists_each_namespaced_capi_resource_once_in_its_preferred_version():
    from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import GroupMap
    from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.verify import capi_resources
    group_map = GroupMap()
    standard = capi_resources(_served(), group_map.is_standard)
    assert [(r.group, r.version, r.plural) for r in standard] == [("cluster.x-k8s.io", "v1beta2", "machines")]
    private = capi_resources(_served(), group_map.is_private)
    assert [(r.group, r.plural) for r in private] == [
        ("cluster.hypershift.openshift.io", "machines"), ("infrastructure.cluster.hypershift.openshift.io", "kubevirtmachines")]


def test_verify_resolves_an_owner_in_its_own_version_else_the_preferred_one():
    from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.verify import counts_by_kind, owner_resource
    served = _served()
    assert owner_resource(served, {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine"}).version == "v1beta1"
    assert owner_resource(served, {"apiVersion": "cluster.x-k8s.io/v1alpha4", "kind": "Machine"}).version == "v1beta2"
    assert owner_resource(served, {"apiVersion": "v1", "kind": "Secret"}).plural == "secrets"
    assert owner_resource(served, {"apiVersion": "example.com/v1", "kind": "Widget"}) is None
    secret = owner_resource(served, {"apiVersion": "v1", "kind": "Secret"})
    assert counts_by_kind([(secret, [{}]), (secret, [{}, {}])]) == {"Secret": 3}


def test_verify_module_documents_its_argument_spec():
    from ansible_collections.hypershift.private_capi.plugins.modules import capi_verify as capi_verify_module
    from tests.unit.module_docs import assert_argspec_matches_documentation
    assert_argspec_matches_documentation(capi_verify_module)
