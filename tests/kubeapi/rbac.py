"""RBAC authorization from stored Role/ClusterRole/RoleBinding/ClusterRoleBinding objects.

Follows plugin/pkg/auth/authorizer/rbac and pkg/registry/rbac/validation: ClusterRoleBindings are visited
first, then the RoleBindings of the request's namespace; the first rule that allows wins and gives the
reason `RBAC: allowed by ...`; a denial carries `RBAC: <errors>` only when a binding's role could not be
resolved. system:masters is allowed everything by a separate authorizer ahead of RBAC (reason "").

Aggregated ClusterRoles (aggregationRule.clusterRoleSelectors): the real server runs a controller that
writes the union of the selected roles' rules into the aggregated role; here the union is computed when a
request is evaluated (so it is never stale), and `aggregation_updates()` gives the rules the controller
would write, for a server that wants stored objects to show them.
"""
import copy
import json
from dataclasses import dataclass

from tests.kubeapi.auth import MASTERS_GROUP, parse_service_account_username
from tests.kubeapi.errors import FIELD_INVALID, ApiError, bad_request, cause, forbidden, invalid
from tests.kubeapi.selectors import go_quote, label_selector_from_dict

RBAC_GROUP = "rbac.authorization.k8s.io"
_SANITIZER = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


@dataclass
class RequestAttributes:
    verb: str
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    resource_request: bool = True


# -- rule matching (pkg/apis/rbac/v1 helpers) ---------------------------------------------------------

def _verb_matches(rule, verb):
    return any(item == "*" or item == verb for item in rule.get("verbs") or [])


def _group_matches(rule, group):
    return any(item == "*" or item == group for item in rule.get("apiGroups") or [])


def _resource_matches(rule, combined, subresource):
    for item in rule.get("resources") or []:
        if item == "*" or item == combined:
            return True
        if subresource and item == "*/" + subresource:
            return True
    return False


def _name_matches(rule, name):
    names = rule.get("resourceNames") or []
    return not names or name in names


def _url_matches(rule, path):
    for item in rule.get("nonResourceURLs") or []:
        if item == "*" or item == path:
            return True
        if item.endswith("*") and path.startswith(item.rstrip("*")):
            return True
    return False


def rule_allows(attrs, rule):
    """RuleAllows: does one PolicyRule allow the request?"""
    if attrs.resource_request:
        combined = attrs.resource + ("/" + attrs.subresource if attrs.subresource else "")
        return (_verb_matches(rule, attrs.verb) and _group_matches(rule, attrs.api_group)
                and _resource_matches(rule, combined, attrs.subresource) and _name_matches(rule, attrs.name))
    return _verb_matches(rule, attrs.verb) and _url_matches(rule, attrs.path)


# -- subjects --------------------------------------------------------------------------------------------

def _applies_to(user, subject, namespace):
    kind = subject.get("kind")
    if kind == "User":
        return user.username == subject.get("name")
    if kind == "Group":
        return subject.get("name") in user.groups
    if kind == "ServiceAccount":
        service_account_namespace = subject.get("namespace") or namespace
        if not service_account_namespace:
            return False
        return parse_service_account_username(user.username) == (service_account_namespace, subject.get("name"))
    return False


def _describe_subject(subject, binding_namespace):
    if subject.get("kind") == "ServiceAccount":
        return "%s %s" % (subject["kind"], go_quote(subject.get("name", "") + "/"
                                                    + (subject.get("namespace") or binding_namespace)))
    return "%s %s" % (subject.get("kind", ""), go_quote(subject.get("name", "")))


def _describe_source(binding, subject, namespaced):
    meta = binding.get("metadata") or {}
    role_ref = binding.get("roleRef") or {}
    if namespaced:
        return "RoleBinding %s of %s %s to %s" % (
            go_quote(meta.get("name", "") + "/" + meta.get("namespace", "")), role_ref.get("kind", ""),
            go_quote(role_ref.get("name", "")), _describe_subject(subject, meta.get("namespace", "")))
    return "ClusterRoleBinding %s of %s %s to %s" % (
        go_quote(meta.get("name", "")), role_ref.get("kind", ""), go_quote(role_ref.get("name", "")),
        _describe_subject(subject, ""))


# -- aggregation -----------------------------------------------------------------------------------------

def aggregated_rules(cluster_roles):
    """{name: effective rules} for every ClusterRole, aggregated roles resolved transitively.

    Like the clusterrole-aggregation controller: for each selector the matching roles (by name, without
    the role itself) contribute their rules in name order, duplicates dropped.
    """
    by_name = {(role.get("metadata") or {}).get("name", ""): role for role in cluster_roles}
    resolved, in_progress = {}, set()

    def resolve(name):
        if name in resolved:
            return resolved[name]
        role = by_name[name]
        selectors = ((role.get("aggregationRule") or {}).get("clusterRoleSelectors"))
        if selectors is None or name in in_progress:
            return list(role.get("rules") or [])
        in_progress.add(name)
        matched = set()
        for selector_dict in selectors:
            try:
                selector = label_selector_from_dict(selector_dict)
            except ApiError:
                continue  # the real controller fails on an invalid selector and leaves the rules alone
            for other_name, other in by_name.items():
                if other_name != name and selector.matches((other.get("metadata") or {}).get("labels") or {}):
                    matched.add(other_name)
        rules = []
        for other_name in sorted(matched):
            for rule in resolve(other_name):
                if rule not in rules:
                    rules.append(rule)
        in_progress.discard(name)
        resolved[name] = rules
        return rules

    return {name: resolve(name) for name in by_name}


def aggregation_updates(cluster_roles):
    """[(name, rules)] for aggregated ClusterRoles whose stored rules differ from the aggregation."""
    effective = aggregated_rules(cluster_roles)
    updates = []
    for role in cluster_roles:
        name = (role.get("metadata") or {}).get("name", "")
        if role.get("aggregationRule") is not None and (role.get("rules") or []) != effective[name]:
            updates.append((name, copy.deepcopy(effective[name])))
    return updates


# -- the authorizer ----------------------------------------------------------------------------------------

class _Snapshot:
    """The RBAC objects indexed for one evaluation."""

    def __init__(self, list_objects):
        self.list_objects = list_objects
        self.cluster_role_bindings = list_objects(RBAC_GROUP, "clusterrolebindings", None)
        cluster_roles = list_objects(RBAC_GROUP, "clusterroles", None)
        self.cluster_role_rules = aggregated_rules(cluster_roles)
        self._namespaced = {}

    def namespace(self, namespace):
        if namespace not in self._namespaced:
            roles = {(role.get("metadata") or {}).get("name", ""): role
                     for role in self.list_objects(RBAC_GROUP, "roles", namespace)}
            self._namespaced[namespace] = (self.list_objects(RBAC_GROUP, "rolebindings", namespace), roles)
        return self._namespaced[namespace]

    def role_ref_rules(self, role_ref, namespace):
        kind, name = role_ref.get("kind"), role_ref.get("name", "")
        if kind == "Role":
            role = self.namespace(namespace)[1].get(name)
            if role is None:
                raise LookupError('role.%s "%s" not found' % (RBAC_GROUP, name))
            return role.get("rules") or []
        if kind == "ClusterRole":
            if name not in self.cluster_role_rules:
                raise LookupError('clusterrole.%s "%s" not found' % (RBAC_GROUP, name))
            return self.cluster_role_rules[name]
        raise LookupError("unsupported role reference kind: %s" % go_quote(str(kind)))


class Authorizer:
    """list_objects(group, resource, namespace_or_None) -> list of stored RBAC objects.

    cache_key (optional) -> a value that changes whenever RBAC objects change (e.g. the store's
    resourceVersion); when given, the indexed objects are reused until it changes.
    """

    def __init__(self, list_objects, cache_key=None):
        self.list_objects = list_objects
        self.cache_key = cache_key
        self._cached = (object(), None)

    def _snapshot(self):
        if self.cache_key is None:
            return _Snapshot(self.list_objects)
        key = self.cache_key()
        if self._cached[0] != key:
            self._cached = (key, _Snapshot(self.list_objects))
        return self._cached[1]

    def _visit(self, user, namespace, visitor):
        """VisitRulesFor: visitor(source_description, rule, error) -> False stops the walk."""
        snapshot = self._snapshot()
        for binding in snapshot.cluster_role_bindings:
            subject = next((s for s in binding.get("subjects") or [] if _applies_to(user, s, "")), None)
            if subject is None:
                continue
            try:
                rules = snapshot.role_ref_rules(binding.get("roleRef") or {}, "")
            except LookupError as error:
                if not visitor(None, None, str(error)):
                    return
                continue
            for rule in rules:
                if not visitor(lambda b=binding, s=subject: _describe_source(b, s, False), rule, None):
                    return
        if not namespace:
            return
        for binding in snapshot.namespace(namespace)[0]:
            subject = next((s for s in binding.get("subjects") or [] if _applies_to(user, s, namespace)), None)
            if subject is None:
                continue
            try:
                rules = snapshot.role_ref_rules(binding.get("roleRef") or {}, namespace)
            except LookupError as error:
                if not visitor(None, None, str(error)):
                    return
                continue
            for rule in rules:
                if not visitor(lambda b=binding, s=subject: _describe_source(b, s, True), rule, None):
                    return

    def authorize(self, user, attrs):
        """(allowed, reason) with the real reason texts."""
        if MASTERS_GROUP in user.groups:
            return True, ""
        outcome = {"reason": None, "errors": []}

        def visit(describe, rule, error):
            if rule is not None and rule_allows(attrs, rule):
                outcome["reason"] = "RBAC: allowed by " + describe()
                return False
            if error:
                outcome["errors"].append(error)
            return True

        self._visit(user, attrs.namespace, visit)
        if outcome["reason"] is not None:
            return True, outcome["reason"]
        if outcome["errors"]:
            unique = list(dict.fromkeys(outcome["errors"]))
            return False, "RBAC: " + (unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]")
        return False, ""

    def forbidden_message(self, user, attrs, reason=None):
        """The text NewForbidden puts after `<resource> "<name>" is forbidden: ` (pass it to
        errors.forbidden): responsewriters.forbiddenMessage, HTML-sanitized, plus `: <reason>` if any."""
        if reason is None:
            reason = self.authorize(user, attrs)[1]
        if not attrs.resource_request:
            message = "User %s cannot %s path %s" % (go_quote(user.username), attrs.verb, go_quote(attrs.path))
        else:
            resource = attrs.resource + ("/" + attrs.subresource if attrs.subresource else "")
            message = "User %s cannot %s resource %s in API group %s" % (
                go_quote(user.username), attrs.verb, go_quote(resource), go_quote(attrs.api_group))
            if attrs.namespace:
                message += " in the namespace %s" % go_quote(attrs.namespace)
            else:
                message += " at the cluster scope"
        message = "".join(_SANITIZER.get(char, char) for char in message)
        return message + (": " + reason if reason else "")

    def forbidden_error(self, user, attrs, reason=None):
        """The ApiError 403 a real server answers: NewForbidden(group/resource, name, message)."""
        message = self.forbidden_message(user, attrs, reason)
        if not attrs.resource_request:
            return forbidden(message)
        return forbidden(message, attrs.api_group, attrs.resource, attrs.name)

    def forbidden_status_message(self, user, attrs, reason=None):
        """The whole Status message, e.g. `pods "x" is forbidden: User "alice" cannot get resource ...`."""
        return self.forbidden_error(user, attrs, reason).message

    def rules_for(self, user, namespace, with_error=False):
        """(resource_rules, non_resource_rules) for SelfSubjectRulesReview; with_error=True adds a third
        item, the evaluation error ("" unless a binding's role could not be resolved).

        Rules are in SubjectRulesReviewStatus form ({verbs, apiGroups, resources, resourceNames} and
        {verbs, nonResourceURLs}), in evaluation order (ClusterRoleBindings, then RoleBindings).
        """
        collected, errors = [], []

        def visit(_describe, rule, error):
            if rule is not None:
                collected.append(rule)
            if error:
                errors.append(error)
            return True

        self._visit(user, namespace, visit)
        resource_rules, non_resource_rules = [], []
        for rule in collected:
            if rule.get("resources"):
                entry = {"verbs": list(rule.get("verbs") or [])}
                for key in ("apiGroups", "resources", "resourceNames"):
                    if rule.get(key):
                        entry[key] = list(rule[key])
                resource_rules.append(entry)
            if rule.get("nonResourceURLs"):
                non_resource_rules.append({"verbs": list(rule.get("verbs") or []),
                                           "nonResourceURLs": list(rule["nonResourceURLs"])})
        unique = list(dict.fromkeys(errors))
        evaluation_error = "" if not unique else unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
        if with_error:
            return resource_rules, non_resource_rules, evaluation_error
        return resource_rules, non_resource_rules

    def rules_review_status(self, user, namespace):
        """SelfSubjectRulesReview status (400 "no namespace on request" without a namespace)."""
        if not namespace:
            raise bad_request("no namespace on request")
        resource_rules, non_resource_rules, evaluation_error = self.rules_for(user, namespace, with_error=True)
        status = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules, "incomplete": False}
        if evaluation_error:
            status["evaluationError"] = evaluation_error
        return status

    def access_review(self, user, spec):
        """SelfSubjectAccessReview: spec {resourceAttributes | nonResourceAttributes} -> status dict."""
        resource_attributes = spec.get("resourceAttributes")
        non_resource_attributes = spec.get("nonResourceAttributes")
        if resource_attributes is not None and non_resource_attributes is not None:
            raise invalid("authorization.k8s.io", "SelfSubjectAccessReview", "", [cause(
                FIELD_INVALID, "spec.nonResourceAttributes",
                "Invalid value: %s: cannot be specified in combination with resourceAttributes"
                % _go_struct(non_resource_attributes))])
        if resource_attributes is None and non_resource_attributes is None:
            raise invalid("authorization.k8s.io", "SelfSubjectAccessReview", "", [cause(
                FIELD_INVALID, "spec.resourceAttributes",
                'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified')])
        if resource_attributes is not None:
            attrs = RequestAttributes(
                verb=resource_attributes.get("verb", ""), api_group=resource_attributes.get("group", ""),
                resource=resource_attributes.get("resource", ""),
                subresource=resource_attributes.get("subresource", ""),
                namespace=resource_attributes.get("namespace", ""), name=resource_attributes.get("name", ""),
                resource_request=True)
        else:
            attrs = RequestAttributes(verb=non_resource_attributes.get("verb", ""),
                                      path=non_resource_attributes.get("path", ""), resource_request=False)
        allowed, reason = self.authorize(user, attrs)
        status = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        return status


def _go_struct(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def self_subject_review_status(user):
    """SelfSubjectReview status: {"userInfo": {username, uid?, groups?, extra?}}."""
    return {"userInfo": user.to_dict()}


# -- bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy) ------------------------------------

_READ = ["get", "list", "watch"]
_WRITE = ["create", "delete", "deletecollection", "patch", "update"]


def _rule(groups, resources, verbs):
    return {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}


def _url_rule(urls, verbs=("get",)):
    return {"nonResourceURLs": list(urls), "verbs": list(verbs)}


def _metadata(name, extra_labels=None):
    labels = {"kubernetes.io/bootstrapping": "rbac-defaults"}
    labels.update(extra_labels or {})
    return {"name": name, "labels": labels, "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}}


def _cluster_role(name, rules=None, labels=None, aggregate_label=None):
    role = {"apiVersion": RBAC_GROUP + "/v1", "kind": "ClusterRole", "metadata": _metadata(name, labels)}
    if aggregate_label:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {aggregate_label: "true"}}]}
    role["rules"] = rules or []
    return role


def _cluster_role_binding(name, groups):
    return {"apiVersion": RBAC_GROUP + "/v1", "kind": "ClusterRoleBinding", "metadata": _metadata(name),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": group} for group in groups]}


_TO_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"
_TO_EDIT = "rbac.authorization.k8s.io/aggregate-to-edit"
_TO_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"


def bootstrap_policy_objects():
    """The ClusterRoles and ClusterRoleBindings a fresh cluster has for the roles our tests rely on.

    Rules are the real bootstrap policy's (testdata/cluster-roles.yaml); admin, edit and view are
    aggregated from the system:aggregate-to-* roles exactly as in a real cluster.
    """
    aggregate_to_admin = [
        _rule(["authorization.k8s.io"], ["localsubjectaccessreviews"], ["create"]),
        _rule([RBAC_GROUP], ["rolebindings", "roles"], _WRITE[:3] + ["get", "list", "patch", "update", "watch"]),
    ]
    aggregate_to_edit = [
        _rule([""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"], _READ),
        _rule([""], ["serviceaccounts"], ["impersonate"]),
        _rule([""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], _WRITE),
        _rule([""], ["pods/eviction"], ["create"]),
        _rule([""], ["configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
                     "replicationcontrollers/scale", "secrets", "serviceaccounts", "services", "services/proxy"], _WRITE),
        _rule([""], ["serviceaccounts/token"], ["create"]),
        _rule(["apps"], ["daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets",
                         "replicasets/scale", "statefulsets", "statefulsets/scale"], _WRITE),
        _rule(["autoscaling"], ["horizontalpodautoscalers"], _WRITE),
        _rule(["batch"], ["cronjobs", "jobs"], _WRITE),
        _rule(["extensions"], ["daemonsets", "deployments", "deployments/rollback", "deployments/scale", "ingresses",
                               "networkpolicies", "replicasets", "replicasets/scale",
                               "replicationcontrollers/scale"], _WRITE),
        _rule(["policy"], ["poddisruptionbudgets"], _WRITE),
        _rule(["networking.k8s.io"], ["ingresses", "networkpolicies"], _WRITE),
        _rule(["coordination.k8s.io"], ["leases"], _WRITE[:3] + ["get", "list", "patch", "update", "watch"]),
    ]
    aggregate_to_view = [
        _rule([""], ["configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "pods",
                     "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts", "services",
                     "services/status"], _READ),
        _rule([""], ["bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
                     "replicationcontrollers/status", "resourcequotas", "resourcequotas/status"], _READ),
        _rule([""], ["namespaces"], _READ),
        _rule(["discovery.k8s.io"], ["endpointslices"], _READ),
        _rule(["apps"], ["controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                         "deployments/status", "replicasets", "replicasets/scale", "replicasets/status",
                         "statefulsets", "statefulsets/scale", "statefulsets/status"], _READ),
        _rule(["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"], _READ),
        _rule(["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"], _READ),
        _rule(["extensions"], ["daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                               "deployments/status", "ingresses", "ingresses/status", "networkpolicies", "replicasets",
                               "replicasets/scale", "replicasets/status", "replicationcontrollers/scale"], _READ),
        _rule(["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"], _READ),
        _rule(["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"], _READ),
    ]
    return [
        _cluster_role("cluster-admin", [_rule(["*"], ["*"], ["*"]), _url_rule(["*"], ["*"])]),
        _cluster_role("admin", aggregate_label=_TO_ADMIN),
        _cluster_role("edit", labels={_TO_ADMIN: "true"}, aggregate_label=_TO_EDIT),
        _cluster_role("view", labels={_TO_EDIT: "true"}, aggregate_label=_TO_VIEW),
        _cluster_role("system:aggregate-to-admin", aggregate_to_admin, labels={_TO_ADMIN: "true"}),
        _cluster_role("system:aggregate-to-edit", aggregate_to_edit, labels={_TO_EDIT: "true"}),
        _cluster_role("system:aggregate-to-view", aggregate_to_view, labels={_TO_VIEW: "true"}),
        _cluster_role("system:discovery", [_url_rule(["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                                                      "/openapi", "/openapi/*", "/readyz", "/version", "/version/"])]),
        _cluster_role("system:basic-user", [
            _rule(["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], ["create"]),
            _rule(["authentication.k8s.io"], ["selfsubjectreviews"], ["create"])]),
        _cluster_role("system:public-info-viewer",
                      [_url_rule(["/healthz", "/livez", "/readyz", "/version", "/version/"])]),
        _cluster_role_binding("cluster-admin", [MASTERS_GROUP]),
        _cluster_role_binding("system:discovery", ["system:authenticated"]),
        _cluster_role_binding("system:basic-user", ["system:authenticated"]),
        _cluster_role_binding("system:public-info-viewer", ["system:authenticated", "system:unauthenticated"]),
    ]
