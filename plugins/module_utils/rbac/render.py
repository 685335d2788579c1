# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What rules.py holds, in the forms users meet: the shipped manifests (meta/rbac/) and the operator guide's table.

Pure functions; hack/render_rbac.py writes their output and tests/unit/rbac checks that the files say the same.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import RBAC_ENTRY_POINT_LABEL
from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac.rules import (
    CLUSTER, ENTRY_POINTS, HCP_NAMESPACES, HOSTEDCLUSTER_NAMESPACES, IDENTITY_NAMESPACE, OPERATOR_NAMESPACE,
    RULES, SCOPES, policy_rule, role_names, rules_for)

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
LABELS = {"app.kubernetes.io/part-of": "hypershift.private_capi"}


def _metadata(name, entry_point, namespace=None):
    metadata = {"name": name, "labels": dict(LABELS, **{RBAC_ENTRY_POINT_LABEL: entry_point})}
    if namespace:
        metadata["namespace"] = namespace
    return metadata


def manifests(entry_point, operator_namespace="hypershift", identity_namespace=IDENTITY_NAMESPACE):
    """The objects that give a job identity exactly what entry_point uses, in apply order.

    The identities' Namespace and a ServiceAccount (the identity an AAP credential or a kubeconfig token names); per scope the role holding that
    scope's rules: a ClusterRole for the cluster scope and the HostedCluster namespaces (bound cluster-wide: the
    HostedCluster list spans namespaces), a ClusterRole for the HCP namespaces (bound per HCP namespace with a
    RoleBinding; the shipped file binds it cluster-wide only as the commented alternative), and a Role in the
    operator namespace.
    """
    names = role_names(entry_point)
    account = {"kind": "ServiceAccount", "name": names["account"], "namespace": identity_namespace}
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": identity_namespace, "labels": dict(LABELS)}},
               {"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": _metadata(names["account"], entry_point, identity_namespace)}]
    cluster_rules = rules_for(entry_point, (CLUSTER, HOSTEDCLUSTER_NAMESPACES))
    if cluster_rules:
        objects.append({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole",
                        "metadata": _metadata(names[CLUSTER], entry_point),
                        "rules": [policy_rule(rule) for rule in cluster_rules]})
        objects.append({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRoleBinding",
                        "metadata": _metadata(names[CLUSTER], entry_point),
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                    "name": names[CLUSTER]},
                        "subjects": [account]})
    hcp_rules = rules_for(entry_point, (HCP_NAMESPACES,))
    if hcp_rules:
        objects.append({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole",
                        "metadata": _metadata(names[HCP_NAMESPACES], entry_point),
                        "rules": [policy_rule(rule) for rule in hcp_rules]})
    operator_rules = rules_for(entry_point, (OPERATOR_NAMESPACE,))
    if operator_rules:
        objects.append({"apiVersion": RBAC_API_VERSION, "kind": "Role",
                        "metadata": _metadata(names[OPERATOR_NAMESPACE], entry_point, operator_namespace),
                        "rules": [policy_rule(rule) for rule in operator_rules]})
        objects.append({"apiVersion": RBAC_API_VERSION, "kind": "RoleBinding",
                        "metadata": _metadata(names[OPERATOR_NAMESPACE], entry_point, operator_namespace),
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                    "name": names[OPERATOR_NAMESPACE]},
                        "subjects": [account]})
    return objects


def hcp_role_binding(entry_point, hcp_namespace, identity_namespace=IDENTITY_NAMESPACE):
    """The RoleBinding that gives entry_point's identity its HCP-namespace rules in one HCP namespace."""
    names = role_names(entry_point)
    return {"apiVersion": RBAC_API_VERSION, "kind": "RoleBinding",
            "metadata": _metadata(names[HCP_NAMESPACES], entry_point, hcp_namespace),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": names[HCP_NAMESPACES]},
            "subjects": [{"kind": "ServiceAccount", "name": names["account"], "namespace": identity_namespace}]}


def _cell(values):
    return ", ".join("`%s`" % value if value else '`""`' for value in values)


def markdown_table():
    """The operator guide's table: one row per rule, with the entry points that need it and why."""
    lines = ["| where | API groups | resources | verbs | entry points | why |", "|---|---|---|---|---|---|"]
    for scope in SCOPES:
        for rule in RULES:
            if rule.scope != scope:
                continue
            why = rule.why + (" Conditional: %s" % rule.conditional if rule.conditional else "")
            resources = _cell(rule.resources) + (" (%s)" % ", ".join(rule.resource_names) if rule.resource_names else "")
            lines.append("| %s | %s | %s | %s | %s | %s |" % (
                scope, _cell(rule.groups), resources, ", ".join(rule.verbs),
                ", ".join(point for point in ENTRY_POINTS if point in rule.entry_points), why.replace("|", "\\|")))
    return "\n".join(lines) + "\n"
