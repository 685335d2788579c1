"""The one RBAC source (rules.py), what is rendered from it (the shipped meta/rbac manifests, the guide's table) and
the pre-flight's pure parts: expanding the rules into accesses, judging them against a SelfSubjectRulesReview,
and the refusal that names what to add."""
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.discovery import ServedResource
from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac import render, review, rules

ROOT = Path(__file__).resolve().parents[3]
HCP = "clusters-hc-01"


def served_resource(group, version, plural, kind, verbs=("get", "list", "patch", "create", "update", "delete"),
                    namespaced=True, status=False):
    return ServedResource(group, version, plural, kind, namespaced, verbs, status)


SERVED = {
    "": [("v1", [served_resource("", "v1", "secrets", "Secret"), served_resource("", "v1", "events", "Event"),
                 served_resource("", "v1", "namespaces", "Namespace", namespaced=False),
                 served_resource("", "v1", "bindings", "Binding", verbs=("create",))])],
    "cluster.x-k8s.io": [("v1beta2", [served_resource("cluster.x-k8s.io", "v1beta2", "clusters", "Cluster", status=True),
                                      served_resource("cluster.x-k8s.io", "v1beta2", "machines", "Machine",
                                                      status=True)])],
    "cluster.hypershift.openshift.io": [("v1beta2", [
        served_resource("cluster.hypershift.openshift.io", "v1beta2", "clusters", "Cluster", status=True)])],
}


def test_the_shipped_manifests_and_the_guide_table_are_what_the_source_renders():
    result = subprocess.run([sys.executable, str(ROOT / "hack" / "render_rbac.py"), "--check"], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr + result.stdout
    table = render.markdown_table()
    assert table in (ROOT / "docs" / "operator-guide.md").read_text()
    assert table.count("\n") == len(rules.RULES) + 2


@pytest.mark.parametrize("entry_point", rules.JOB_ENTRY_POINTS)
def test_each_shipped_file_grants_exactly_its_entry_points_rules(entry_point):
    objects = yaml.safe_load((ROOT / "meta" / "rbac" / ("%s.yaml" % entry_point)).read_text())["items"]
    granted = [rule for obj in objects if obj["kind"] in ("Role", "ClusterRole") for rule in obj["rules"]]
    assert granted == [rules.policy_rule(rule) for scope in rules.SCOPES
                       for rule in rules.rules_for(entry_point, (scope,))]
    account = [obj for obj in objects if obj["kind"] == "ServiceAccount"][0]
    for binding in [obj for obj in objects if obj["kind"].endswith("Binding")]:
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                        "namespace": account["metadata"]["namespace"]}]
    # the HCP namespaces' rules are bound per namespace (hcp_role_binding), never cluster-wide by the file
    hcp_role = rules.role_names(entry_point)[rules.HCP_NAMESPACES]
    assert not [obj for obj in objects if obj["kind"].endswith("Binding") and obj["roleRef"]["name"] == hcp_role]
    if rules.rules_for(entry_point, (rules.HCP_NAMESPACES,)):
        assert hcp_role in [obj["metadata"]["name"] for obj in objects if obj["kind"] == "ClusterRole"]
        assert render.hcp_role_binding(entry_point, HCP)["roleRef"]["name"] == hcp_role


def test_the_way_back_needs_no_right_the_way_forward_lacks_and_nothing_needs_escalate_or_bind():
    for rule in rules.rules_for(rules.ROLLBACK):
        for group in rule.groups:
            for resource in rule.resources:
                for verb in rule.verbs:
                    assert rules.granted(rules.MIGRATE, verb, group, resource, rule.scope), (rule, verb)
    copy_back = rules.granted(rules.MIGRATE, "create", "cluster.x-k8s.io", "clusters", rules.HCP_NAMESPACES)
    assert len(copy_back) == 1 and copy_back[0].conditional
    assert not [rule for rule in rules.RULES if {"escalate", "bind", "impersonate"} & set(rule.verbs)]


def test_every_rule_says_why_and_every_standard_group_has_its_private_twin():
    assert all(rule.why.endswith(".") and rule.scope in rules.SCOPES for rule in rules.RULES)
    assert all(set(rule.entry_points) <= set(rules.ENTRY_POINTS) for rule in rules.RULES)
    assert [group.replace("cluster.x-k8s.io", "cluster.hypershift.openshift.io").replace(
        "agent-install.openshift.io", "agent-install.hypershift.openshift.io")
        for group in rules.STANDARD_CAPI_GROUPS] == list(rules.PRIVATE_CAPI_GROUPS)


def test_verify_and_the_inventory_only_read():
    writes = {"create", "update", "patch", "delete", "deletecollection", "escalate", "bind"}
    for entry_point in (rules.VERIFY, rules.INVENTORY):
        written = [rule for rule in rules.rules_for(entry_point) if writes & set(rule.verbs)
                   and rule.resources != ("selfsubjectaccessreviews",)]
        assert not written, (entry_point, written)


def test_needed_expands_wildcards_to_what_the_api_serves_with_the_verbs_each_supports():
    accesses = review.needed(rules.MIGRATE, {rules.HCP_NAMESPACES: [HCP]}, SERVED)
    described = {(access.verb, access.group, access.resource, access.namespace) for access in accesses}
    assert ("delete", "cluster.x-k8s.io", "machines", HCP) in described
    assert ("update", "cluster.hypershift.openshift.io", "clusters/status", HCP) in described
    # the dependents scan lists every namespaced kind the API serves that can be listed; events and bindings are not
    assert ("list", "", "secrets", HCP) in described
    assert not [item for item in described if item[2] in ("events", "bindings", "namespaces") and item[3]]
    # a group the API does not serve needs nothing; no HostedCluster-namespace rule without its namespaces
    assert not [item for item in described if item[1] == "ipam.cluster.x-k8s.io"]
    assert not [access for access in accesses if access.scope == rules.HOSTEDCLUSTER_NAMESPACES]
    # the rule held to grant the CAPI workloads their private twins is asked with verb "*", as RBAC matches it
    assert ("*", "cluster.hypershift.openshift.io", "clusters", HCP) in described
    # cluster-wide rules are asked without a namespace
    assert ("list", "hypershift.openshift.io", "hostedclusters", "") in described


@pytest.mark.parametrize("rule, access, expected", [
    ({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, ("delete", "cluster.x-k8s.io", "machines"), True),
    ({"verbs": ["get", "list"], "apiGroups": ["cluster.x-k8s.io"], "resources": ["*"]},
     ("delete", "cluster.x-k8s.io", "machines"), False),
    ({"verbs": ["update"], "apiGroups": ["cluster.x-k8s.io"], "resources": ["*/status"]},
     ("update", "cluster.x-k8s.io", "clusters/status"), True),
    ({"verbs": ["update"], "apiGroups": ["cluster.x-k8s.io"], "resources": ["clusters/*"]},
     ("update", "cluster.x-k8s.io", "clusters/status"), True),
    ({"verbs": ["update"], "apiGroups": ["cluster.x-k8s.io"], "resources": ["clusters"]},
     ("update", "cluster.x-k8s.io", "clusters/status"), False),
    ({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]},
     ("get", "", "secrets"), False),
    ({"verbs": ["list"], "apiGroups": ["infrastructure.cluster.x-k8s.io"], "resources": ["awsmachines"]},
     ("list", "cluster.x-k8s.io", "awsmachines"), False),
])
def test_a_rules_review_covers_an_access_as_the_rbac_authorizer_would(rule, access, expected):
    verb, group, resource = access
    assert review.covered(review.Access(verb, group, resource, HCP, rules.HCP_NAMESPACES, rules.RULES[0]),
                          [rule]) is expected


def test_a_rule_limited_to_names_is_reviewed_for_each_name_and_covered_only_by_a_grant_of_that_name():
    """The shared proxy's Secrets (2026-12-04): get and update on its two Secrets only, never on every Secret of an HCP
    namespace (they hold the hosted clusters' kubeconfigs)."""
    wanted = [access for access in review.needed(rules.MIGRATE, {rules.HCP_NAMESPACES: [HCP]}, {})
              if access.resource == "secrets" and access.verb in ("get", "update")]
    assert sorted((access.verb, access.name) for access in wanted) == [
        ("get", "capi-proxy-ca"), ("get", "capi-proxy-serving"), ("update", "capi-proxy-ca"),
        ("update", "capi-proxy-serving")]
    named = [access for access in wanted if access.name == "capi-proxy-serving" and access.verb == "get"][0]
    assert review.covered(named, [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"],
                                   "resourceNames": ["capi-proxy-serving"]}]) is True
    assert review.covered(named, [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"],
                                   "resourceNames": ["other"]}]) is False
    assert review.access_review_body(named)["spec"]["resourceAttributes"]["name"] == "capi-proxy-serving"
    assert review.missing_rules([named])[0]["resourceNames"] == ["capi-proxy-serving"]
    assert "get secrets capi-proxy-serving in namespace" in named.describe()


def test_an_access_review_asks_for_the_subresource_apart():
    body = review.access_review_body(review.Access("update", "cluster.x-k8s.io", "clusters/status", HCP,
                                                   rules.HCP_NAMESPACES, rules.RULES[0]))
    assert body["spec"]["resourceAttributes"] == {"verb": "update", "group": "cluster.x-k8s.io", "resource": "clusters",
                                                  "subresource": "status", "namespace": HCP}


def test_the_refusal_names_the_cluster_each_missing_rule_with_its_verbs_and_why_and_says_nothing_changed():
    rule = rules.granted(rules.MIGRATE, "patch", "apps", "deployments", rules.HCP_NAMESPACES)[0]
    denied = [review.Access(verb, "apps", "deployments", HCP, rules.HCP_NAMESPACES, rule) for verb in ("patch", "list")]
    message = review.refusal("mc-1/clusters/hc-01", denied, rules.MIGRATE)
    assert message.startswith("mc-1/clusters/hc-01: the identity lacks 2 right(s) migrate uses; nothing was changed")
    assert ('- namespace %s: apiGroups ["apps"] resources [deployments] verbs [patch, list] (%s)' % (HCP, rule.why)
            in message)
    assert "meta/rbac/migrate.yaml" in message
