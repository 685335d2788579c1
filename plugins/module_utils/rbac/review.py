# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The pre-flight access review: does the identity hold every right of rules.RULES an entry point will use here?

needed() expands an entry point's rules into concrete accesses (verb, group, resource, namespace): a rule's "*"
resources become the resources the API serves in its groups (discovery), so a grant naming the kinds one by one
passes as well as a wildcard. covered() judges them against a SelfSubjectRulesReview of each namespace (one request
per namespace); what it does not cover (an incomplete review shows fewer rules) is asked one by one with a
SelfSubjectAccessReview, the authorizer's own answer (service.py sends them). Pure functions, no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.discovery import preferred_resources
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.kinds import SKIPPED_DEPENDENT_RESOURCES
from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac.rules import (
    CLUSTER, resource_matches, rules_for)


class Access(namedtuple("Access", "verb group resource namespace scope rule name")):
    """One verb on one group/resource ("plural" or "plural/subresource") in namespace ("" cluster-wide); name: the one
    object a rule limited to resourceNames allows ("" any)."""
    __slots__ = ()

    def __new__(cls, verb, group, resource, namespace, scope, rule, name=""):
        return super(Access, cls).__new__(cls, verb, group, resource, namespace, scope, rule, name)

    def describe(self):
        where = "in namespace %s" % self.namespace if self.namespace else "cluster-wide"
        what = "%s.%s" % (self.resource, self.group) if self.group else self.resource
        return "%s %s%s %s" % (self.verb, what, " %s" % self.name if self.name else "", where)


def _served_resources(served, group, namespaced_only):
    versions = (served or {}).get(group)
    if not versions:
        return []
    return [resource for resource in preferred_resources(versions) if resource.namespaced or not namespaced_only]


def _verbs(rule_verbs, supported):
    """The rule's verbs a resource supports (discovery's verbs); "*" is asked as is."""
    return [verb for verb in rule_verbs if verb == "*" or verb in supported]


def _resources(rule, group, served, namespaced_only):
    """(resource, verbs) of rule in group: a "*" (or "*/status") is each resource the API serves there, with the
    rule's verbs that resource supports (a status subresource supports get, update and patch)."""
    concrete = []
    for resource in rule.resources:
        if resource == "*":
            concrete.extend((item.plural, _verbs(rule.verbs, item.verbs))
                            for item in _served_resources(served, group, namespaced_only)
                            if (group, item.plural) not in SKIPPED_DEPENDENT_RESOURCES)
        elif resource == "*/status":
            concrete.extend((item.plural + "/status", _verbs(rule.verbs, ("get", "update", "patch")))
                            for item in _served_resources(served, group, namespaced_only) if item.status)
        else:
            concrete.append((resource, list(rule.verbs)))
    return concrete


def _groups(rule, served):
    if "*" in rule.groups:
        return sorted(served or {})
    return list(rule.groups)


def needed(entry_point, namespaces, served):
    """Every Access entry_point's rules imply, the conditional ones too (the run may come to need them).

    namespaces: {scope: [namespace, ...]} for the namespaced scopes (a scope without namespaces is not reviewed);
    served: discovery's {group: [(version, [ServedResource])]}.
    """
    accesses = []
    for rule in rules_for(entry_point):
        where = [""] if rule.scope == CLUSTER else list(namespaces.get(rule.scope) or ())
        for group in _groups(rule, served):
            for resource, verbs in _resources(rule, group, served, rule.scope != CLUSTER):
                for namespace in where:
                    accesses.extend(Access(verb, group, resource, namespace, rule.scope, rule, name)
                                    for verb in verbs for name in rule.resource_names or ("",))
    return accesses


def _matches(values, value):
    return "*" in values or value in values


def covered(access, resource_rules):
    """True when one of a SelfSubjectRulesReview's resourceRules allows access (a rule limited to resourceNames only an
    access to one of those names: the plan lists and writes other objects by any name)."""
    for rule in resource_rules or ():
        if rule.get("resourceNames") and access.name not in rule["resourceNames"]:
            continue
        if (_matches(rule.get("verbs") or (), access.verb) and _matches(rule.get("apiGroups") or (), access.group)
                and resource_matches(rule.get("resources") or (), access.resource)):
            return True
    return False


def access_review_body(access):
    plural, subresource = (access.resource.split("/", 1) + [""])[:2]
    attributes = {"verb": access.verb, "group": access.group, "resource": plural}
    if subresource:
        attributes["subresource"] = subresource
    if access.namespace:
        attributes["namespace"] = access.namespace
    if access.name:
        attributes["name"] = access.name
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes}}


def rules_review_body(namespace):
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": namespace}}


def missing_rules(denied):
    """The policy rules to add, one per (scope, namespace, group, resource) with its verbs, and the rule's why."""
    merged = {}
    for access in denied:
        key = (access.scope, access.namespace, access.group, access.resource)
        entry = merged.setdefault(key, {"scope": access.scope, "namespace": access.namespace,
                                        "apiGroups": [access.group], "resources": [access.resource], "verbs": [],
                                        "why": access.rule.why})
        if access.verb not in entry["verbs"]:
            entry["verbs"].append(access.verb)
        if access.name and access.name not in entry.setdefault("resourceNames", []):
            entry["resourceNames"].append(access.name)
    return [merged[key] for key in sorted(merged)]


def refusal(subject, denied, entry_point):
    """The message of a refused pre-flight: what is missing, where, and what to do."""
    rules = missing_rules(denied)
    lines = ["%s: the identity lacks %d right(s) %s uses; nothing was changed. Add these rules (the shipped "
             "meta/rbac/%s.yaml has them all) and re-run:" % (subject, len(denied), entry_point, entry_point)]
    for rule in rules:
        where = "namespace %s" % rule["namespace"] if rule["namespace"] else "cluster-wide"
        lines.append("- %s: apiGroups [%s] resources [%s] verbs [%s] (%s)" % (
            where, ", ".join('"%s"' % group for group in rule["apiGroups"]), ", ".join(rule["resources"]),
            ", ".join(rule["verbs"]), rule["why"]))
    return "\n".join(lines)
