"""capi_access_review against the real control plane: the shipped manifests (meta/rbac) applied with kubectl as a user
would, a ServiceAccount token from a TokenRequest, and kube-apiserver's RBAC authorizer answering the reviews."""
import os

import pytest

from testenv.hcp import fleet
from testenv.module_runner import run_module
from tests.integration.fleet.support import kubectl, shipped_identity, start_fleet
from tests.unit.module_docs import assert_argspec_matches_documentation

from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac.rules import role_names

pytestmark = pytest.mark.slow

HCP = "clusters-hc-01"
REVIEWS = {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server, _crds = start_fleet(tmp_path_factory.mktemp("access-review"), fleet.fleet_spec(1, machines=1), pods="kwok-only")
    yield server
    assert server.stop() == 0


def identity(server, entry_point):
    return shipped_identity(server, entry_point, [HCP])


def identity_kubeconfig(server, entry_point):
    return os.path.join(server.workdir, "%s.kubeconfig" % entry_point)


def review(kubeconfig, entry_point, check_mode=False, **extra):
    args = dict({"kubeconfig": kubeconfig, "entry_point": entry_point, "hostedcluster_namespaces": ["clusters"],
                 "hcp_namespaces": [HCP], "subject": "clusters/hc-01"}, **extra)
    return run_module("capi_access_review", args, check_mode=check_mode)


def test_the_admin_holds_everything_and_the_review_writes_nothing(server):
    server.reset_requests()
    for check_mode in (False, True):
        result = review(server.kubeconfig, "migrate", check_mode=check_mode)
        assert not result.failed and result["allowed"] and not result["changed"], result
        assert result["checked"] > 100 and result["denied"] == [] and result["missing_rules"] == []
        # one rules review per namespace answers the namespaced rights; the cluster-wide ones are asked one by one
        assert result["reviews"] < result["checked"] / 5, (result["reviews"], result["checked"])
    creates = [entry for entry in server.request_counts()["entries"] if entry["verb"] == "create"]
    assert creates and {entry["resource"] for entry in creates} <= REVIEWS, creates


def test_the_shipped_verify_rbac_is_enough_for_verify_and_refuses_migrate_naming_each_rule_to_add(server):
    verify = identity(server, "verify")
    allowed = review(verify, "verify")
    assert not allowed.failed and allowed["allowed"], allowed.get("message") or allowed
    refused = review(verify, "migrate")
    assert not refused.failed and refused["allowed"] is False
    missing = {(rule["namespace"], tuple(rule["apiGroups"]), tuple(rule["resources"])): rule["verbs"]
               for rule in refused["missing_rules"]}
    # patch puts the sidecar in, watch awaits its rollout (api_proxy_apply lists the Deployments and reads again on the
    # watch's events); get, create and delete make and remove the shared proxy's Deployment (conditional, 2026-12-04)
    assert sorted(missing[(HCP, ("apps",), ("deployments",))]) == ["create", "delete", "get", "patch", "watch"]
    assert missing[("clusters", ("hypershift.openshift.io",), ("hostedclusters",))] == ["update", "patch"]
    assert refused["message"].startswith("clusters/hc-01: the identity lacks %d right(s) migrate uses; nothing was "
                                         "changed" % len(refused["denied"]))
    assert "Scale the CAPI-dependent Deployments to 0 and back" in refused["message"]
    failed = review(verify, "migrate", fail_on_denied=True)
    assert failed.failed and failed["msg"] == refused["message"] and failed["missing_rules"] == refused["missing_rules"]


def test_without_its_hcp_binding_the_review_names_the_hcp_rules_in_that_namespace(server):
    identity(server, "verify")
    kubectl(server, "-n", HCP, "delete", "rolebinding", role_names("verify")["hcp-namespaces"])
    refused = review(identity_kubeconfig(server, "verify"), "verify")
    assert refused["allowed"] is False
    assert {rule["namespace"] for rule in refused["missing_rules"]} == {HCP}
    assert ("get", "hypershift.openshift.io", "hostedcontrolplanes") in {
        (entry["verb"], entry["api_group"], entry["resource"]) for entry in refused["denied"]}


def test_discovered_namespaces_are_those_of_the_hostedclusters_and_an_identity_that_cannot_list_them_is_told(server):
    verify = identity(server, "verify")
    found = review(verify, "verify", hostedcluster_namespaces=[], hcp_namespaces=[],
                   discover_hostedcluster_namespaces=True)
    assert found["allowed"] and found["namespaces"]["hostedcluster-namespaces"] == ["clusters"], found
    assert found["checked"] > review(verify, "verify", hostedcluster_namespaces=[], hcp_namespaces=[])["checked"]
    # a ServiceAccount bound to nothing: its review names the cluster-wide LIST of HostedClusters among what it lacks
    kubectl(server, "create", "serviceaccount", "nobody", "-n", "default")
    nobody = server.token_kubeconfig("nobody", kubectl(server, "-n", "default", "create", "token", "nobody").strip())
    refused = review(nobody, "verify", hostedcluster_namespaces=[], hcp_namespaces=[],
                     discover_hostedcluster_namespaces=True)
    assert not refused.failed and refused["allowed"] is False, refused
    assert refused["namespaces"]["hostedcluster-namespaces"] == []
    assert ("list", "hypershift.openshift.io", "hostedclusters", "") in {
        (entry["verb"], entry["api_group"], entry["resource"], entry["namespace"]) for entry in refused["denied"]}


def test_argspec_matches_documentation():
    from ansible_collections.hypershift.private_capi.plugins.modules import capi_access_review
    assert_argspec_matches_documentation(capi_access_review)
