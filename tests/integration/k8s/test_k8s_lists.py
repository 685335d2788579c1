"""k8s_lists against the real control plane (testenv/cluster): several collections in one module run, shaped like
looped k8s_info."""
import pytest

from testenv.hcp import fleet
from tests.integration.fleet.support import start_fleet
from testenv.module_runner import run_module
from tests.unit.module_docs import assert_argspec_matches_documentation

pytestmark = pytest.mark.slow

NS = "clusters-hc-01"
RBAC = "rbac.authorization.k8s.io/v1"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server, _crds = start_fleet(tmp_path_factory.mktemp("k8s-lists"), fleet.fleet_spec(1, machines=1), pods="kwok-only")
    yield server
    assert server.stop() == 0


def names(server, path):
    response = server.request("GET", path)
    assert response.status == 200, (path, response)
    return sorted(item["metadata"]["name"] for item in response.json()["items"])


def test_reads_each_collection_in_order_with_selectors_and_unknown_kinds(server):
    server.reset_requests()
    result = run_module("k8s_lists", {"kubeconfig": server.kubeconfig, "lists": [
        {"api_version": "apps/v1", "kind": "Deployment", "namespace": NS},
        {"api_version": RBAC, "kind": "ClusterRole"},
        {"api_version": RBAC, "kind": "clusterroles", "namespace": NS},     # plural, and a namespace it ignores
        {"api_version": "v1", "kind": "ConfigMap", "namespace": NS, "label_selectors": ["no-such-label=x"]},
        {"api_version": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "field_selectors": ["metadata.namespace=" + NS]},
        {"api_version": "example.com/v1", "kind": "Nothing", "namespace": NS},
    ]})
    assert not result.failed, result
    assert result["changed"] is False
    deployments, cluster_roles, by_plural, config_maps, machines, unknown = result["results"]
    assert sorted(d["metadata"]["name"] for d in deployments["resources"]) == \
        names(server, "/apis/apps/v1/namespaces/%s/deployments" % NS)
    assert all(d["kind"] == "Deployment" and d["apiVersion"] == "apps/v1" for d in deployments["resources"])
    expected_roles = names(server, "/apis/rbac.authorization.k8s.io/v1/clusterroles")
    assert sorted(r["metadata"]["name"] for r in cluster_roles["resources"]) == expected_roles
    assert sorted(r["metadata"]["name"] for r in by_plural["resources"]) == expected_roles
    assert by_plural["namespace"] == "" and deployments["namespace"] == NS
    assert config_maps["api_found"] is True and config_maps["resources"] == []
    assert [m["metadata"]["namespace"] for m in machines["resources"]] == [NS] * len(machines["resources"])
    assert machines["resources"], "the fleet fixture has Machines in " + NS
    assert unknown["api_found"] is False and unknown["resources"] == []
    writes = [e for e in server.request_counts()["entries"] if e["verb"] not in ("get", "list", "watch")]
    assert writes == [], writes


def test_a_named_entry_reads_that_object_with_one_get_or_nothing(server):
    deployment = names(server, "/apis/apps/v1/namespaces/%s/deployments" % NS)[0]
    server.reset_requests()
    result = run_module("k8s_lists", {"kubeconfig": server.kubeconfig, "lists": [
        {"api_version": "apps/v1", "kind": "Deployment", "namespace": NS, "name": deployment},
        {"api_version": "apps/v1", "kind": "Deployment", "namespace": NS, "name": "no-such-deployment"},
        {"api_version": "example.com/v1", "kind": "Nothing", "namespace": NS, "name": "x"},
    ]})
    assert not result.failed, result
    found, missing, unknown = result["results"]
    assert [(d["kind"], d["metadata"]["name"]) for d in found["resources"]] == [("Deployment", deployment)]
    assert missing["api_found"] is True and missing["resources"] == []
    assert unknown["api_found"] is False and unknown["resources"] == []
    deployment_calls = [(e["verb"], e.get("name")) for e in server.request_counts()["entries"]
                        if e.get("resource") == "deployments"]
    assert sorted(deployment_calls) == [("get", deployment), ("get", "no-such-deployment")], deployment_calls
    server.reset_requests()
    both = run_module("k8s_lists", {"kubeconfig": server.kubeconfig, "lists": [
        {"api_version": "apps/v1", "kind": "Deployment", "namespace": NS, "name": deployment,
         "label_selectors": ["app=x"]}]})
    assert both.failed and "lists[0] names an object (%s) and has selectors" % deployment in both["msg"], both
    bad = run_module("k8s_lists", {"kubeconfig": server.kubeconfig, "lists": [
        {"api_version": "apps/v1", "kind": "Deployment", "namespace": NS, "name": "Not_A_Name"}]})
    assert bad.failed and "Not_A_Name" in bad["msg"], bad
    assert server.request_counts()["entries"] == []


def test_check_mode_reads_the_same(server):
    args = {"kubeconfig": server.kubeconfig, "lists": [{"api_version": "apps/v1", "kind": "Deployment", "namespace": NS}]}
    normal, checked = run_module("k8s_lists", args), run_module("k8s_lists", args, check_mode=True)
    assert not checked.failed and checked["changed"] is False
    assert checked["results"] == normal["results"]


def test_bad_input_fails_clearly_and_reads_nothing(server):
    missing = run_module("k8s_lists", {"kubeconfig": server.kubeconfig, "lists": [{"kind": "Deployment"}]})
    assert missing.failed and "api_version" in missing["msg"], missing
    server.reset_requests()
    bad = run_module("k8s_lists", {"kubeconfig": server.kubeconfig, "parallelism": 0,
                                   "lists": [{"api_version": "apps/v1", "kind": "Deployment"}]})
    assert bad.failed and "parallelism must be 1 or more" in bad["msg"], bad
    assert server.request_counts()["entries"] == []


def test_a_refused_list_names_the_collection(server):
    """alice (a static token without any RBAC binding) is refused the LIST by the real authorizer. (Her kubeconfig,
    not api_key over the admin's: the admin kubeconfig's client certificate would authenticate first.)"""
    result = run_module("k8s_lists", {"kubeconfig": server.kubeconfig_for("alice"),
                                      "lists": [{"api_version": "apps/v1", "kind": "Deployment", "namespace": NS}]})
    assert result.failed and NS in result["msg"], result
    assert 'User "alice" cannot list resource "deployments" in API group "apps"' in result["msg"], result
    assert result["status"] == 403


def test_argspec_matches_documentation():
    from ansible_collections.hypershift.private_capi.plugins.modules import k8s_lists
    assert_argspec_matches_documentation(k8s_lists)
