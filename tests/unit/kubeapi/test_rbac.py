"""RBAC: the allow/deny matrix, reasons, forbidden messages, rules reviews, aggregation, bootstrap policy."""
import copy

import pytest

from tests.kubeapi.auth import UserInfo, anonymous_user, with_authenticated_group
from tests.kubeapi.errors import ApiError
from tests.kubeapi.rbac import (Authorizer, RequestAttributes, aggregated_rules, aggregation_updates,
                                bootstrap_policy_objects, self_subject_review_status)

KINDS = {"clusterroles": "ClusterRole", "clusterrolebindings": "ClusterRoleBinding", "roles": "Role",
         "rolebindings": "RoleBinding"}


def role(kind, name, rules, namespace=None, labels=None, aggregation=None):
    obj = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "rules": rules}
    if namespace:
        obj["metadata"]["namespace"] = namespace
    if labels:
        obj["metadata"]["labels"] = labels
    if aggregation is not None:
        obj["aggregationRule"] = {"clusterRoleSelectors": aggregation}
    return obj


def binding(kind, name, role_kind, role_name, subjects, namespace=None):
    obj = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
           "subjects": subjects}
    if namespace:
        obj["metadata"]["namespace"] = namespace
    return obj


def rule(verbs, groups=("",), resources=(), names=None):
    result = {"verbs": list(verbs), "apiGroups": list(groups), "resources": list(resources)}
    if names:
        result["resourceNames"] = list(names)
    return result


USER = {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}
POLICY = [
    role("ClusterRole", "pod-reader", [rule(["get", "list", "watch"], resources=["pods"])]),
    role("ClusterRole", "scaler", [rule(["get", "update", "patch"], ["apps"], ["deployments/scale"])]),
    role("ClusterRole", "status-writer", [rule(["update"], ["*"], ["*/status"])]),
    role("ClusterRole", "everything-in-capi", [rule(["*"], ["cluster.x-k8s.io"], ["*"])]),
    role("ClusterRole", "health", [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/logs/*"]}]),
    role("ClusterRole", "named-config", [rule(["get", "update"], resources=["configmaps"], names=["settings"])]),
    role("Role", "secret-reader", [rule(["get"], resources=["secrets"])], namespace="team-a"),
    binding("RoleBinding", "read-pods", "ClusterRole", "pod-reader", [USER], namespace="team-a"),
    binding("RoleBinding", "secrets", "Role", "secret-reader", [USER], namespace="team-a"),
    binding("RoleBinding", "config", "ClusterRole", "named-config", [USER], namespace="team-a"),
    binding("ClusterRoleBinding", "scale-all", "ClusterRole", "scaler", [{"kind": "Group", "name": "scalers"}]),
    binding("ClusterRoleBinding", "statuses", "ClusterRole", "status-writer", [USER]),
    binding("ClusterRoleBinding", "capi", "ClusterRole", "everything-in-capi",
            [{"kind": "ServiceAccount", "name": "capi-manager", "namespace": "capi-system"}]),
    binding("ClusterRoleBinding", "sa-without-namespace", "ClusterRole", "pod-reader",
            [{"kind": "ServiceAccount", "name": "nowhere"}]),
    binding("ClusterRoleBinding", "health", "ClusterRole", "health", [{"kind": "Group", "name": "monitoring"}]),
    binding("RoleBinding", "local-sa", "ClusterRole", "pod-reader", [{"kind": "ServiceAccount", "name": "runner"}],
            namespace="team-b"),
]


def lister(objects):
    def list_objects(group, resource, namespace):
        assert group == "rbac.authorization.k8s.io"
        return [copy.deepcopy(obj) for obj in objects
                if obj["kind"] == KINDS[resource] and (namespace is None or obj["metadata"].get("namespace") == namespace)]
    return list_objects


def user(name, *groups):
    return with_authenticated_group(UserInfo(name, groups=list(groups)))


ALICE = user("alice")
SCALER = user("bob", "scalers")
MONITOR = user("mon", "monitoring")
CAPI_SA = user("system:serviceaccount:capi-system:capi-manager", "system:serviceaccounts")
RUNNER = user("system:serviceaccount:team-b:runner")
NOWHERE_SA = user("system:serviceaccount:team-a:nowhere")
ADMIN = user("kubernetes-admin", "system:masters")


def attrs(verb, resource, namespace="", name="", group="", subresource=""):
    return RequestAttributes(verb, group, resource, subresource, namespace, name, "", True)


def path(verb, url):
    return RequestAttributes(verb, path=url, resource_request=False)


@pytest.mark.parametrize("who, request_attrs, allowed", [
    (ALICE, attrs("get", "pods", "team-a", "web"), True),         # RoleBinding -> ClusterRole, in its namespace
    (ALICE, attrs("list", "pods", "team-a"), True),
    (ALICE, attrs("delete", "pods", "team-a", "web"), False),     # verb not granted
    (ALICE, attrs("get", "pods", "team-b", "web"), False),        # RoleBinding scopes the ClusterRole
    (ALICE, attrs("list", "pods"), False),                        # ... and grants nothing cluster-wide
    (ALICE, attrs("get", "pods", "team-a", "web", subresource="log"), False),  # subresource needs its own rule
    (ALICE, attrs("get", "secrets", "team-a", "s"), True),        # RoleBinding -> Role
    (ALICE, attrs("get", "secrets", "team-b", "s"), False),
    (ALICE, attrs("get", "configmaps", "team-a", "settings"), True),    # resourceNames
    (ALICE, attrs("get", "configmaps", "team-a", "other"), False),
    (ALICE, attrs("list", "configmaps", "team-a"), False),              # list has no name
    (ALICE, attrs("update", "machines", "x", "m", "cluster.x-k8s.io", "status"), True),  # */status, * groups
    (ALICE, attrs("update", "machines", "x", "m", "cluster.x-k8s.io"), False),
    (ALICE, attrs("update", "machines", "x", "m", "cluster.x-k8s.io", "scale"), False),
    (SCALER, attrs("update", "deployments", "any", "d", "apps", "scale"), True),   # resource/subresource
    (SCALER, attrs("update", "deployments", "any", "d", "apps"), False),
    (SCALER, attrs("update", "deployments", "any", "d", "extensions", "scale"), False),  # group matters
    (CAPI_SA, attrs("delete", "machines", "ns", "m", "cluster.x-k8s.io"), True),  # ServiceAccount subject, * verbs
    (CAPI_SA, attrs("create", "clusters", "", "", "cluster.x-k8s.io"), True),
    (CAPI_SA, attrs("get", "pods", "ns", "p"), False),
    (user("system:serviceaccount:other:capi-manager"), attrs("get", "machines", "ns", "m", "cluster.x-k8s.io"),
     False),                                                      # same name, other namespace
    (NOWHERE_SA, attrs("get", "pods", "team-a", "p"), False),     # SA subject without namespace in a CRB: never
    (RUNNER, attrs("get", "pods", "team-b", "p"), True),          # SA subject namespace defaults to the binding's
    (RUNNER, attrs("get", "pods", "team-a", "p"), False),
    (MONITOR, path("get", "/healthz"), True),                     # nonResourceURLs exact
    (MONITOR, path("get", "/logs/kube-apiserver.log"), True),     # trailing * prefix
    (MONITOR, path("get", "/logs"), False),
    (MONITOR, path("post", "/healthz"), False),
    (ALICE, path("get", "/healthz"), False),
    (ADMIN, attrs("delete", "namespaces", "", "kube-system"), True),   # system:masters
    (ADMIN, path("put", "/anything"), True),
])
def test_allow_deny_matrix(who, request_attrs, allowed):
    assert Authorizer(lister(POLICY)).authorize(who, request_attrs)[0] is allowed


@pytest.mark.parametrize("who, request_attrs, reason", [
    (ALICE, attrs("get", "pods", "team-a", "web"),
     'RBAC: allowed by RoleBinding "read-pods/team-a" of ClusterRole "pod-reader" to User "alice"'),
    (SCALER, attrs("patch", "deployments", "x", "d", "apps", "scale"),
     'RBAC: allowed by ClusterRoleBinding "scale-all" of ClusterRole "scaler" to Group "scalers"'),
    (CAPI_SA, attrs("get", "machines", "ns", "m", "cluster.x-k8s.io"),
     'RBAC: allowed by ClusterRoleBinding "capi" of ClusterRole "everything-in-capi" to ServiceAccount '
     '"capi-manager/capi-system"'),
    (RUNNER, attrs("get", "pods", "team-b", "p"),
     'RBAC: allowed by RoleBinding "local-sa/team-b" of ClusterRole "pod-reader" to ServiceAccount "runner/team-b"'),
    (ADMIN, attrs("get", "pods", "team-b", "p"), ""),
])
def test_allow_reasons(who, request_attrs, reason):
    assert Authorizer(lister(POLICY)).authorize(who, request_attrs) == (True, reason)


def test_missing_roles_give_the_real_denial_reason():
    broken = [binding("ClusterRoleBinding", "gone", "ClusterRole", "deleted-role", [USER]),
              binding("RoleBinding", "gone-too", "Role", "deleted-role", [USER], namespace="team-a"),
              binding("RoleBinding", "odd", "Thing", "x", [USER], namespace="team-a")]
    authorizer = Authorizer(lister(broken))
    allowed, reason = authorizer.authorize(ALICE, attrs("get", "pods", "team-a"))
    assert not allowed
    assert reason == ('RBAC: [clusterrole.rbac.authorization.k8s.io "deleted-role" not found, '
                      'role.rbac.authorization.k8s.io "deleted-role" not found, unsupported role reference kind: '
                      '"Thing"]')
    assert authorizer.authorize(ALICE, attrs("get", "pods"))[1] == \
        'RBAC: clusterrole.rbac.authorization.k8s.io "deleted-role" not found'


@pytest.mark.parametrize("who, request_attrs, message", [
    (ALICE, attrs("get", "pods", "default", "x"),
     'pods "x" is forbidden: User "alice" cannot get resource "pods" in API group "" in the namespace "default"'),
    (ALICE, attrs("list", "pods", "default"),
     'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"'),
    (ALICE, attrs("watch", "namespaces"),
     'namespaces is forbidden: User "alice" cannot watch resource "namespaces" in API group "" at the cluster scope'),
    (ALICE, attrs("update", "deployments", "default", "web", "apps", "scale"),
     'deployments.apps "web" is forbidden: User "alice" cannot update resource "deployments/scale" in API group '
     '"apps" in the namespace "default"'),
    (ALICE, attrs("create", "clusters", "", "", "cluster.x-k8s.io"),
     'clusters.cluster.x-k8s.io is forbidden: User "alice" cannot create resource "clusters" in API group '
     '"cluster.x-k8s.io" at the cluster scope'),
    (ALICE, path("get", "/foo"), 'forbidden: User "alice" cannot get path "/foo"'),
    (RUNNER, attrs("delete", "secrets", "team-b", "s"),
     'secrets "s" is forbidden: User "system:serviceaccount:team-b:runner" cannot delete resource "secrets" in API '
     'group "" in the namespace "team-b"'),
    (anonymous_user(), path("get", "/api/<script>"),
     'forbidden: User "system:anonymous" cannot get path "/api/&lt;script&gt;"'),
])
def test_forbidden_messages_are_the_real_ones(who, request_attrs, message):
    authorizer = Authorizer(lister(POLICY))
    error = authorizer.forbidden_error(who, request_attrs)
    assert isinstance(error, ApiError) and error.code == 403 and error.reason == "Forbidden"
    assert error.message == message == authorizer.forbidden_status_message(who, request_attrs)
    assert message.endswith(authorizer.forbidden_message(who, request_attrs))
    if request_attrs.resource_request:
        assert error.details["kind"] == request_attrs.resource
        assert error.details.get("name", "") == request_attrs.name


def test_forbidden_message_carries_the_denial_reason():
    authorizer = Authorizer(lister([binding("ClusterRoleBinding", "gone", "ClusterRole", "nope", [USER])]))
    assert authorizer.forbidden_message(ALICE, attrs("get", "pods", "default", "p")) == (
        'User "alice" cannot get resource "pods" in API group "" in the namespace "default": '
        'RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found')


def test_rules_for_and_rules_review():
    authorizer = Authorizer(lister(POLICY))
    resource_rules, non_resource_rules, error = authorizer.rules_for(ALICE, "team-a", with_error=True)
    assert error == ""
    assert {"verbs": ["update"], "apiGroups": ["*"], "resources": ["*/status"]} in resource_rules
    assert {"verbs": ["get", "update"], "apiGroups": [""], "resources": ["configmaps"],
            "resourceNames": ["settings"]} in resource_rules
    assert {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]} in resource_rules
    assert non_resource_rules == []
    assert authorizer.rules_for(ALICE, "team-a") == (resource_rules, non_resource_rules)
    assert authorizer.rules_for(MONITOR, "x")[1] == [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/logs/*"]}]
    status = authorizer.rules_review_status(ALICE, "team-b")
    assert status["incomplete"] is False and "evaluationError" not in status
    assert len(status["resourceRules"]) == 1       # only the cluster-wide status-writer binding
    with pytest.raises(ApiError, match="no namespace on request"):
        authorizer.rules_review_status(ALICE, "")
    broken = Authorizer(lister([binding("ClusterRoleBinding", "gone", "ClusterRole", "nope", [USER])]))
    assert broken.rules_review_status(ALICE, "x")["evaluationError"] == \
        'clusterrole.rbac.authorization.k8s.io "nope" not found'


def test_access_review():
    authorizer = Authorizer(lister(POLICY))
    assert authorizer.access_review(ALICE, {"resourceAttributes": {
        "namespace": "team-a", "verb": "get", "resource": "pods", "name": "x"}}) == {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "read-pods/team-a" of ClusterRole "pod-reader" to User "alice"'}
    assert authorizer.access_review(ALICE, {"resourceAttributes": {"verb": "delete", "resource": "pods"}}) == \
        {"allowed": False}
    assert authorizer.access_review(MONITOR, {"nonResourceAttributes": {"verb": "get", "path": "/healthz"}})["allowed"]
    assert authorizer.access_review(ADMIN, {"resourceAttributes": {"verb": "*", "resource": "*"}}) == {"allowed": True}
    with pytest.raises(ApiError) as raised:
        authorizer.access_review(ALICE, {})
    assert raised.value.code == 422 and raised.value.message == (
        'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": '
        "exactly one of nonResourceAttributes or resourceAttributes must be specified")
    with pytest.raises(ApiError, match="cannot be specified in combination with resourceAttributes"):
        authorizer.access_review(ALICE, {"resourceAttributes": {}, "nonResourceAttributes": {}})


def test_self_subject_review_status():
    assert self_subject_review_status(ALICE) == {"userInfo": {"username": "alice", "groups": ["system:authenticated"]}}


# -- aggregation and bootstrap policy ------------------------------------------------------------------

AGGREGATING = [
    role("ClusterRole", "monitoring", [], aggregation=[{"matchLabels": {"rbac.example.com/aggregate-to-monitoring":
                                                                        "true"}}]),
    role("ClusterRole", "b-endpoints", [rule(["get"], resources=["endpoints"])],
         labels={"rbac.example.com/aggregate-to-monitoring": "true"}),
    role("ClusterRole", "a-pods", [rule(["get"], resources=["pods"]), rule(["get"], resources=["endpoints"])],
         labels={"rbac.example.com/aggregate-to-monitoring": "true"}),
    role("ClusterRole", "unrelated", [rule(["delete"], resources=["pods"])]),
    binding("ClusterRoleBinding", "monitoring", "ClusterRole", "monitoring", [USER]),
]


def test_aggregated_cluster_role_is_evaluated_with_the_selected_rules():
    authorizer = Authorizer(lister(AGGREGATING))
    assert authorizer.authorize(ALICE, attrs("get", "pods", "x", "p")) == (True, (
        'RBAC: allowed by ClusterRoleBinding "monitoring" of ClusterRole "monitoring" to User "alice"'))
    assert authorizer.authorize(ALICE, attrs("get", "endpoints", "x", "e"))[0]
    assert not authorizer.authorize(ALICE, attrs("delete", "pods", "x", "p"))[0]
    cluster_roles = [obj for obj in AGGREGATING if obj["kind"] == "ClusterRole"]
    # name order, duplicates dropped, like the aggregation controller
    assert aggregated_rules(cluster_roles)["monitoring"] == [rule(["get"], resources=["pods"]),
                                                             rule(["get"], resources=["endpoints"])]
    assert aggregation_updates(cluster_roles) == [("monitoring", aggregated_rules(cluster_roles)["monitoring"])]


def test_aggregation_cycles_and_invalid_selectors_do_not_break_evaluation():
    cyclic = [role("ClusterRole", "x", [rule(["get"], resources=["a"])], labels={"l": "x"},
                   aggregation=[{"matchLabels": {"l": "y"}}]),
              role("ClusterRole", "y", [rule(["get"], resources=["b"])], labels={"l": "y"},
                   aggregation=[{"matchLabels": {"l": "x"}}, {"matchExpressions": [{"key": "l", "operator": "Bad"}]}])]
    rules = aggregated_rules(cyclic)
    assert rules["x"] and rules["y"]


def bootstrap_authorizer():
    return Authorizer(lister(bootstrap_policy_objects()))


@pytest.mark.parametrize("who, request_attrs, allowed", [
    (ALICE, path("get", "/api"), True),
    (ALICE, path("get", "/apis/apps/v1"), True),
    (ALICE, path("get", "/openapi/v3"), True),
    (ALICE, path("get", "/version"), True),
    (ALICE, attrs("create", "selfsubjectaccessreviews", group="authorization.k8s.io"), True),
    (ALICE, attrs("create", "selfsubjectrulesreviews", group="authorization.k8s.io"), True),
    (ALICE, attrs("create", "selfsubjectreviews", group="authentication.k8s.io"), True),
    (ALICE, attrs("list", "pods", "default"), False),
    (ALICE, path("get", "/metrics"), False),
    (anonymous_user(), path("get", "/healthz"), True),
    (anonymous_user(), path("get", "/version/"), True),
    (anonymous_user(), path("get", "/api"), False),
    (anonymous_user(), attrs("create", "selfsubjectreviews", group="authentication.k8s.io"), False),
    (user("root", "system:masters"), attrs("delete", "nodes", name="n"), True),
])
def test_bootstrap_policy(who, request_attrs, allowed):
    assert bootstrap_authorizer().authorize(who, request_attrs)[0] is allowed


def test_bootstrap_admin_edit_view_are_aggregated_like_a_real_cluster():
    objects = bootstrap_policy_objects()
    for name in ("admin", "edit", "view"):
        binding_to = binding("RoleBinding", name + "-binding", "ClusterRole", name, [USER], namespace="team-a")
        authorizer = Authorizer(lister(objects + [binding_to]))

        def can(verb, resource, group="", sub="", authorizer=authorizer):
            return authorizer.authorize(ALICE, attrs(verb, resource, "team-a", "x", group, sub))[0]
        assert can("get", "pods") and can("list", "deployments", "apps") and can("get", "leases",
                                                                                 "coordination.k8s.io") is (name != "view")
        assert can("create", "configmaps") is (name != "view")
        assert can("update", "deployments", "apps", "scale") is (name != "view")
        assert can("get", "secrets") is (name != "view")          # view does not read secrets
        assert can("create", "rolebindings", "rbac.authorization.k8s.io") is (name == "admin")
        assert not can("create", "clusters", "cluster.x-k8s.io")
    rules = aggregated_rules([o for o in objects if o["kind"] == "ClusterRole"])
    assert all(rule_ in rules["edit"] for rule_ in rules["view"])
    assert all(rule_ in rules["admin"] for rule_ in rules["edit"])


def test_bootstrap_objects_carry_the_real_metadata():
    objects = {(o["kind"], o["metadata"]["name"]): o for o in bootstrap_policy_objects()}
    for obj in objects.values():
        assert obj["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert obj["metadata"]["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
    assert objects[("ClusterRole", "edit")]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == \
        "true"
    assert objects[("ClusterRole", "view")]["aggregationRule"] == {"clusterRoleSelectors": [
        {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]}
    assert [s["name"] for s in objects[("ClusterRoleBinding", "system:public-info-viewer")]["subjects"]] == \
        ["system:authenticated", "system:unauthenticated"]
    assert [s["name"] for s in objects[("ClusterRoleBinding", "cluster-admin")]["subjects"]] == ["system:masters"]
    # fresh objects every call: a caller may mutate them
    first = bootstrap_policy_objects()
    first[0]["rules"].clear()
    assert bootstrap_policy_objects()[0]["rules"]


def test_cache_key_reuses_the_index_until_the_key_changes():
    objects, calls, revision = list(POLICY), [], {"value": 1}

    def counting(group, resource, namespace):
        calls.append(resource)
        return lister(objects)(group, resource, namespace)

    authorizer = Authorizer(counting, cache_key=lambda: revision["value"])
    authorizer.authorize(ALICE, attrs("get", "pods", "team-a", "x"))
    listed = len(calls)
    authorizer.authorize(ALICE, attrs("get", "pods", "team-a", "x"))
    assert len(calls) == listed
    objects.append(binding("ClusterRoleBinding", "all-pods", "ClusterRole", "pod-reader", [USER]))
    assert not authorizer.authorize(ALICE, attrs("get", "pods", "team-c", "x"))[0]   # stale until the key moves
    revision["value"] = 2
    assert authorizer.authorize(ALICE, attrs("get", "pods", "team-c", "x"))[0]
