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
