# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Every right the collection uses, in one place: the source of the shipped RBAC, the guide's table and the pre-flight.

One Rule per purpose: where it applies (SCOPES), the API groups, resources and verbs, the entry points that need it
(ENTRY_POINTS) and why. A rule is written as the requests are, not as a cross product: each of its verbs is sent to
each resource it lists (a status is written with update, so no rule grants create on `*/status`). A rule is
`conditional` when a run may well not use it (its text says when); every other rule is used by every run of its entry
points that gets that far (tests/integration/fleet/test_least_privilege.py checks both ways against kube-apiserver's
audit log). render.py turns RULES into meta/rbac/*.yaml and the operator guide's table; review.py
asks the API server, before the first change, whether the identity holds them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    PROXY_CA_SECRET,
    PROXY_MODE_CONFIG_MAP,
    PROXY_SERVING_SECRET,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    AGENT_PRIVATE_GROUP, AGENT_STANDARD_GROUP, PRIVATE_SUFFIX, STANDARD_SUFFIX)

# Where a rule applies. The HostedCluster namespaces (e.g. `clusters`) and the HCP namespaces (`clusters-<name>`) are
# many; the operator namespace is the one the HyperShift operator runs in (`hypershift`).
CLUSTER = "cluster"
HOSTEDCLUSTER_NAMESPACES = "hostedcluster-namespaces"
HCP_NAMESPACES = "hcp-namespaces"
OPERATOR_NAMESPACE = "operator-namespace"
SCOPES = (CLUSTER, HOSTEDCLUSTER_NAMESPACES, HCP_NAMESPACES, OPERATOR_NAMESPACE)

MIGRATE, VERIFY, ROLLBACK, INVENTORY = "migrate", "verify", "rollback", "inventory"
PROXY_SIDECAR, CONVERSION_SHIM, FLEET_EXPORTER = "proxy-sidecar", "conversion-shim", "fleet-exporter"
# The job identities (a playbook and what it runs) and the identities of what the collection deploys.
JOB_ENTRY_POINTS = (MIGRATE, VERIFY, ROLLBACK, INVENTORY)
ENTRY_POINTS = JOB_ENTRY_POINTS + (PROXY_SIDECAR, CONVERSION_SHIM, FLEET_EXPORTER)
FORWARD = (MIGRATE, ROLLBACK)  # a migration may end in its rescue: the way forward holds what the way back uses
READERS = (MIGRATE, VERIFY, ROLLBACK)
IDENTITY_NAMESPACE = "hypershift-private-capi"  # where the shipped manifests put the job identities

# RBAC names no group by suffix: the CAPI groups are listed (upstream CAPI's and the Agent provider's), each with its
# private twin. A management cluster serving another *.cluster.x-k8s.io group needs it added; the pre-flight names it.
STANDARD_CAPI_GROUPS = tuple([STANDARD_SUFFIX] + ["%s.%s" % (prefix, STANDARD_SUFFIX) for prefix in (
    "addons", "bootstrap", "controlplane", "infrastructure", "ipam", "runtime")] + [AGENT_STANDARD_GROUP])
PRIVATE_CAPI_GROUPS = tuple([PRIVATE_SUFFIX] + ["%s.%s" % (prefix, PRIVATE_SUFFIX) for prefix in (
    "addons", "bootstrap", "controlplane", "infrastructure", "ipam", "runtime")] + [AGENT_PRIVATE_GROUP])


# the rules of the way back that takes the proxy sidecars out: the scale-down strategy, or sidecars an earlier release put
# in; the zero-stop way back leaves the sidecars, their ConfigMaps and RBAC in and stops no Deployment
SIDECARS_OUT = "only where the way back takes the sidecars out (strategy scale_down, or an earlier release's sidecars)"

# the leader Leases: read wherever a run waits on the managers (the zero-stop pre-install's rollout, a window, a way back);
# written only where a manager's Pod went while its Lease still names it
LEADER_WAITS = "where a run follows the CAPI managers' leader election (the zero-stop pre-install, a window, a way back)"
# a rollout is awaited where sidecars go in or out: the zero-stop pre-install, the scale-down strategy's window and its
# way back
ROLLOUTS = "where a run puts the proxy sidecars in or takes them out (api_proxy_apply awaits the rollout)"
HANDOVER = ("only where a manager's Pod is gone while its leader Lease still names it (a rollout or a scale-down of a "
            "Deployment whose manager elects a leader)")


class Rule(namedtuple("Rule", "scope groups resources verbs entry_points why conditional resource_names")):
    """One grant: verbs on resources of groups, in scope, for entry_points, because why.

    A rule of scope CLUSTER on namespaced resources applies in every namespace (bound by a ClusterRoleBinding).
    """
    __slots__ = ()

    def __new__(cls, scope, groups, resources, verbs, entry_points, why, conditional="", resource_names=()):
        return super(Rule, cls).__new__(cls, scope, tuple(groups), tuple(resources), tuple(verbs), tuple(entry_points),
                                        why, conditional, tuple(resource_names))

    def grants(self, verb, group, resource, scope):
        """True when this rule allows verb on group/resource (resource may be "plural/subresource") in scope."""
        return (scope == self.scope and (verb in self.verbs or "*" in self.verbs)
                and (group in self.groups or "*" in self.groups) and resource_matches(self.resources, resource))


def resource_matches(resources, resource):
    """RBAC's match of resource ("plural" or "plural/subresource") by a rule's resources: "*" is every resource and
    subresource, "*/status" every status subresource, "plural/*" every subresource of plural."""
    if "*" in resources or resource in resources:
        return True
    plural, _slash, subresource = resource.partition("/")
    return bool(subresource) and ("*/" + subresource in resources or plural + "/*" in resources)


# What the collection deploys runs as its own identities: roles conversion_shim and api_proxy create these rules.
SHIM_CRD_RULE = Rule(CLUSTER, ["apiextensions.k8s.io"], ["customresourcedefinitions"], ["list"], (CONVERSION_SHIM,),
                     "The conversion shim lists the CRDs to learn each kind's versions (its ClusterRole "
                     "capi-conversion-shim-<namespace>).")
SIDECAR_CRD_RULE = Rule(CLUSTER, ["apiextensions.k8s.io"], ["customresourcedefinitions"], ["get", "list", "watch"],
                        (PROXY_SIDECAR,), "The proxy sidecar reads the CRDs' contract labels to adapt versions "
                        "(ClusterRole private-capi-proxy-*; besides, the private twins of what its workload holds on "
                        "the standard groups).")
SIDECAR_MODE_RULE = Rule(HCP_NAMESPACES, [""], ["configmaps"], ["get", "list", "watch", "patch"], (PROXY_SIDECAR,),
                         "The proxy sidecar follows its mode (pass-through or translate) in the namespace's ConfigMap "
                         "%s, listed and watched by name, and acknowledges the mode it applied there (Role "
                         "private-capi-proxy-mode)." % PROXY_MODE_CONFIG_MAP, resource_names=(PROXY_MODE_CONFIG_MAP,))

EXPORTER_HOSTEDCLUSTER_RULE = Rule(CLUSTER, ["hypershift.openshift.io"], ["hostedclusters"], ["list", "watch"],
                                   (FLEET_EXPORTER,), "The fleet exporter (private_capi_monitoring) lists and watches "
                                   "every HostedCluster for its migration metrics (its ClusterRole "
                                   "capi-conversion-shim-exporter-<namespace>).")

DIFFERS = "only when it exists and differs from what the role renders"
MONITORING = "only with private_capi_monitoring, where the cluster serves monitoring.coreos.com"
SHIM_REMOVAL = "rollback.yml removes the conversion shim once no CRD converts through it."
SHIM_REMOVAL_WHEN = "only when no CRD converts through the shim any more (the private CRDs were removed)"
COPY_BACK = "only when a cluster whose standard objects were deleted goes back"
# the shared topology of the proxy (role api_proxy, private_capi_proxy_topology shared): its Deployment, Service,
# PodDisruptionBudget, ServiceAccount and serving certificate in the HCP namespace
SHARED_PROXY = "only with private_capi_proxy_topology shared (one proxy Deployment per HCP namespace)"


def written_rbac(scope, resources, removed, created, corrected):
    """The three rules of the RBAC objects the roles write (resources in scope): found by label and removed on the way
    back, created, corrected where they differ - each with why (removed, created, corrected)."""
    return (Rule(scope, ["rbac.authorization.k8s.io"], resources, ["list", "delete"], FORWARD, removed,
                 conditional=SIDECARS_OUT),
            Rule(scope, ["rbac.authorization.k8s.io"], resources, ["get", "create"], (MIGRATE,), created),
            Rule(scope, ["rbac.authorization.k8s.io"], resources, ["patch"], (MIGRATE,), corrected, conditional=DIFFERS))


RULES = (
    # --- cluster-wide --------------------------------------------------------------------------------------------
    Rule(CLUSTER, ["hypershift.openshift.io"], ["hostedclusters"], ["list"], JOB_ENTRY_POINTS,
         "Find the HostedClusters of every namespace (the inventory, the fleet's selection, the dual-operator plan)."),
    Rule(CLUSTER, STANDARD_CAPI_GROUPS + PRIVATE_CAPI_GROUPS, ["*"], ["list"], (INVENTORY,),
         "The inventory plugin counts each HostedCluster's CAPI objects in both groups (one list per kind)."),
    Rule(CLUSTER, ["hypershift.openshift.io"], ["hostedclusters"], ["watch"], (MIGRATE,),
         "Held, not used: the fleet exporter's ClusterRole grants list and watch on HostedClusters, and RBAC lets an "
         "identity grant only what it holds (or escalate, which is broader).",
         conditional="used by the fleet exporter (private_capi_monitoring), not by the job"),
    Rule(CLUSTER, [""], ["namespaces"], ["get"], READERS,
         "Each module checks that the namespace it works in exists, so a typo fails instead of reading as "
         "'nothing to migrate'."),
    Rule(CLUSTER, ["apiextensions.k8s.io"], ["customresourcedefinitions"], ["get", "list"], FORWARD,
         "Which CAPI kinds exist, which versions they serve and through which conversion webhook; the private twins."),
    Rule(CLUSTER, ["apiextensions.k8s.io"], ["customresourcedefinitions"], ["update"], (MIGRATE,),
         "Role private_crds keeps each private twin rendered from its standard CRD (and its conversion webhook)."),
    Rule(CLUSTER, ["apiextensions.k8s.io"], ["customresourcedefinitions"], ["create"], (MIGRATE,),
         "Role private_crds creates the private twins.",
         conditional="only while a private twin is missing (a management cluster's first migration)"),
    Rule(CLUSTER, ["apiextensions.k8s.io"], ["customresourcedefinitions"], ["watch"], (MIGRATE,),
         "Held, not used: the proxy sidecar's ClusterRole grants get, list and watch on CRDs, and RBAC lets an "
         "identity grant only what it holds (or escalate, which is broader).",
         conditional="used by the sidecar, not by the job"),
) + written_rbac(
    CLUSTER, ["clusterroles", "clusterrolebindings"],
    "The proxy sidecars' and the conversion shim's ClusterRoles: found by label and removed on the way back.",
    "Roles api_proxy and conversion_shim create the sidecars' and the shim's ClusterRoles.",
    "Roles api_proxy and conversion_shim correct the sidecars' and the shim's ClusterRoles.") + (
    # --- HostedCluster namespaces ---------------------------------------------------------------------------------
    Rule(CLUSTER, [""], ["nodes"], ["get"], FORWARD,
         "Before a leader Lease is handed over: the node of its holder's Pod exists and is Ready (a node that is not "
         "may still run the Pod's containers).", conditional=HANDOVER),
    Rule(HOSTEDCLUSTER_NAMESPACES, ["hypershift.openshift.io"], ["hostedclusters"], ["get"], READERS,
         "Read the HostedCluster's migration state."),
    Rule(HOSTEDCLUSTER_NAMESPACES, ["hypershift.openshift.io"], ["hostedclusters"], ["update", "patch"], FORWARD,
         "migration_state's conflict-checked moves and lease; each writing module's lease token (taken, renewed, "
         "released); the fence (spec.pausedUntil)."),
    Rule(HOSTEDCLUSTER_NAMESPACES, ["hypershift.openshift.io"], ["nodepools"], ["list"], (MIGRATE,),
         "The steady gate: no NodePool is updating."),
    Rule(HOSTEDCLUSTER_NAMESPACES, [""], ["events"], ["create"], FORWARD,
         "migration_state records each move as an Event on the HostedCluster; a module fenced off the lock says so."),
    # --- HCP namespaces --------------------------------------------------------------------------------------------
    Rule(HCP_NAMESPACES, ["hypershift.openshift.io"], ["hostedcontrolplanes"], ["get"], READERS,
         "The control plane the CAPI objects belong to."),
    Rule(HCP_NAMESPACES, ["hypershift.openshift.io"], ["hostedcontrolplanes"], ["patch"], FORWARD,
         "The control-plane-operator's signal; its ownerReference re-pointed before the sources go."),
    Rule(HCP_NAMESPACES, ["apps"], ["deployments"], ["list"], READERS,
         "The CAPI-dependent Deployments: recorded replicas, the sidecar, availability."),
    Rule(HCP_NAMESPACES, ["apps"], ["deployments"], ["patch"], FORWARD,
         "Scale the CAPI-dependent Deployments to 0 and back; put the proxy sidecar in and take it out.",
         conditional=SIDECARS_OUT),
    Rule(HCP_NAMESPACES, ["apps"], ["deployments"], ["watch"], FORWARD,
         "A rollout of the CAPI-dependent Deployments awaited (api_proxy_apply): read again when a Deployment of the "
         "namespace changes, not polled (without watch it polls).", conditional=ROLLOUTS),
    Rule(HCP_NAMESPACES, [""], ["pods"], ["watch"], FORWARD,
         "A rollout awaited (api_proxy_apply): read again when a Pod of the namespace changes, not polled (without "
         "watch it polls).", conditional=ROLLOUTS),
    Rule(HCP_NAMESPACES, [""], ["pods"], ["list"], FORWARD,
         "Wait until the scaled-down Pods are gone; zero stop: the sidecars' rollout, measured (api_proxy_apply); the "
         "holders of the managers' leader Leases (leaderless_seconds, the handover).", conditional=LEADER_WAITS),
    Rule(HCP_NAMESPACES, ["coordination.k8s.io"], ["leases"], ["list"], FORWARD,
         "The CAPI managers' leader Leases: how long each had no live leader (leaderless_seconds) through the "
         "pre-install's rollout, the window and the way back.", conditional=LEADER_WAITS),
    Rule(HCP_NAMESPACES, ["coordination.k8s.io"], ["leases"], ["update"], FORWARD,
         "Hand a manager's leader Lease over: clear its holder once the holder's Pod is gone and its node is Ready, "
         "conditional on the resourceVersion read (the new Pod takes it on its next retry, not after it expires).",
         conditional=HANDOVER),
    Rule(HCP_NAMESPACES, [""], ["configmaps"], ["get"], (MIGRATE, VERIFY),
         "The proxy sidecar's kubeconfig ConfigMap (verify checks it is there while the sidecar is)."),
    Rule(HCP_NAMESPACES, [""], ["configmaps"], ["get", "patch"], (ROLLBACK,),
         "The zero-stop way back reads the proxy sidecars' mode ConfigMap and flips them back to pass-through.",
         conditional="only with strategy zero_stop"),
    Rule(HCP_NAMESPACES, [""], ["configmaps"], ["list"], (MIGRATE,),
         "Role api_proxy reads the namespace's proxy mode ConfigMap (by label) and creates it only when it is missing: "
         "a mode the migration set is never overwritten."),
    Rule(HCP_NAMESPACES, [""], ["configmaps"], ["watch"], (MIGRATE,),
         "Held, not used: the proxy sidecar's Role grants get, list, watch and patch on its mode ConfigMap, and RBAC "
         "lets an identity grant only what it holds (or escalate, which is broader).",
         conditional="used by the sidecar, not by the job"),
    Rule(HCP_NAMESPACES, [""], ["configmaps"], ["create"], (MIGRATE,),
         "Role api_proxy creates the proxy sidecar's kubeconfig ConfigMap and its mode ConfigMap."),
    Rule(HCP_NAMESPACES, [""], ["configmaps"], ["patch"], (MIGRATE,),
         "Role api_proxy corrects the proxy sidecar's kubeconfig ConfigMap.",
         conditional=DIFFERS),
    Rule(HCP_NAMESPACES, [""], ["configmaps"], ["delete"], FORWARD,
         "The way back removes the proxy sidecar's kubeconfig and mode ConfigMaps.",
         conditional=SIDECARS_OUT),
    Rule(HCP_NAMESPACES, ["apps", "policy", ""], ["deployments", "poddisruptionbudgets", "services",
                                                  "serviceaccounts"], ["get", "create"], (MIGRATE,),
         "Role api_proxy: the shared proxy's Deployment, PodDisruptionBudget, Service and ServiceAccount.",
         conditional=SHARED_PROXY),
    Rule(HCP_NAMESPACES, ["policy", ""], ["poddisruptionbudgets", "services", "serviceaccounts"], ["patch"], (MIGRATE,),
         "Role api_proxy corrects the shared proxy's PodDisruptionBudget, Service and ServiceAccount.",
         conditional=SHARED_PROXY),
    Rule(HCP_NAMESPACES, ["apps", "policy", ""], ["deployments", "poddisruptionbudgets", "services",
                                                  "serviceaccounts"], ["delete"], FORWARD,
         "The shared proxy removed: by role api_proxy when a namespace goes back to sidecars or the proxy is taken "
         "out, by the way back where it takes the proxy out.", conditional=SHARED_PROXY),
    Rule(HCP_NAMESPACES, [""], ["secrets"], ["create"], (MIGRATE,),
         "api_proxy_apply makes the shared proxy's serving certificate and its CA (provider generate).",
         conditional=SHARED_PROXY),
    Rule(HCP_NAMESPACES, [""], ["secrets"], ["get"], (MIGRATE,),
         "api_proxy_apply reads the shared proxy's serving certificate and its CA, and no other Secret (their default "
         "names: private_capi_proxy_serving_secret_name and private_capi_proxy_ca_secret_name renamed need this rule "
         "renamed).", conditional=SHARED_PROXY, resource_names=(PROXY_SERVING_SECRET, PROXY_CA_SECRET)),
    Rule(HCP_NAMESPACES, [""], ["secrets"], ["update"], (MIGRATE,),
         "api_proxy_apply renews the shared proxy's serving certificate.",
         conditional="only with private_capi_proxy_topology shared, when the certificate is due for renewal",
         resource_names=(PROXY_SERVING_SECRET, PROXY_CA_SECRET)),
    Rule(HCP_NAMESPACES, STANDARD_CAPI_GROUPS, ["*"], ["list"], READERS,
         "The standard CAPI objects: the copy's source, the steady gate, verify's comparison."),
    Rule(HCP_NAMESPACES, STANDARD_CAPI_GROUPS, ["*"], ["patch"], FORWARD,
         "Pause the sources and lift the pause; remove their finalizers before they are deleted."),
    Rule(HCP_NAMESPACES, STANDARD_CAPI_GROUPS, ["*"], ["delete", "deletecollection"], (MIGRATE,),
         "Delete the standard objects once copied and healthy (step 7), children first."),
    Rule(HCP_NAMESPACES, STANDARD_CAPI_GROUPS, ["*"], ["create", "update"], FORWARD,
         "The rollback, and the rescue of a migration that failed once the standard objects' deletion began, copy "
         "the private objects back to the standard groups (an original kept gets its finalizers back).",
         conditional=COPY_BACK),
    Rule(HCP_NAMESPACES, STANDARD_CAPI_GROUPS, ["*/status"], ["update"], FORWARD,
         "The copies back get their status (a status is written with update, never created).", conditional=COPY_BACK),
    Rule(HCP_NAMESPACES, PRIVATE_CAPI_GROUPS, ["*"], ["list"], READERS,
         "The private copies: state, health, verify."),
    Rule(HCP_NAMESPACES, PRIVATE_CAPI_GROUPS, ["*"], ["patch", "delete", "deletecollection"], FORWARD,
         "The way back (rollback, rescue) deletes the private copies, finalizers removed first."),
    Rule(HCP_NAMESPACES, PRIVATE_CAPI_GROUPS, ["*"], ["create"], (MIGRATE,),
         "Create the copies."),
    Rule(HCP_NAMESPACES, PRIVATE_CAPI_GROUPS, ["*/status"], ["update"], (MIGRATE,),
         "Write the copies' status (a status is written with update, never created)."),
    Rule(HCP_NAMESPACES, PRIVATE_CAPI_GROUPS, ["*"], ["update"], (MIGRATE,),
         "A copy a resumed run finds gets its ownerReferences re-pointed, or is overwritten with force.",
         conditional="only when an existing copy's ownerReferences are stale or it differs and force is set"),
    Rule(HCP_NAMESPACES, PRIVATE_CAPI_GROUPS, ["*"], ["*"], (MIGRATE,),
         "Held to grant: role api_proxy gives each CAPI workload on the private groups what its Role holds on the "
         "standard ones (HyperShift's CAPI managers hold every verb), and RBAC lets an identity grant only what it "
         "holds (or escalate, which is broader).",
         conditional="the verbs beyond the rules above are used by the CAPI workloads, not by the job"),
) + written_rbac(
    HCP_NAMESPACES, ["roles", "rolebindings"],
    "The proxy sidecars' Roles: found by label and removed on the way back.",
    "Role api_proxy gives each CAPI workload the private twins of its rules.",
    "Role api_proxy corrects a twin Role or binding.") + (
    Rule(HCP_NAMESPACES, ["*"], ["*"], ["list"], FORWARD,
         "The dependents scan before the sources go: every namespaced kind is listed, metadata only "
         "(PartialObjectMetadataList: no Secret data is read), for ownerReferences to a CAPI object. Read-only."),
    Rule(HCP_NAMESPACES, [""], ["secrets"], ["patch"], FORWARD,
         "Re-point the ownerReferences of a Secret owned by a CAPI object (a KubeVirt Machine's user data) at the "
         "copy. A dependent of another kind needs patch on that kind: without it the run stops before any deletion.",
         conditional="only for Secrets owned by a CAPI object"),
    # --- operator namespace ----------------------------------------------------------------------------------------
    Rule(OPERATOR_NAMESPACE, ["apps"], ["deployments"], ["get", "list", "create", "patch"], (MIGRATE,),
         "The dual-operator plan's HyperShift operator Deployments; the conversion shim's Deployment."),
    Rule(OPERATOR_NAMESPACE, ["apps"], ["deployments"], ["watch"], (MIGRATE,),
         "The HyperShift operator's sidecar rollout awaited (role dual_operator, api_proxy_apply): read again when a "
         "Deployment of the namespace changes, not polled (without watch it polls).",
         conditional="where the dual operator puts the proxy sidecar into the operator's Deployment"),
    Rule(OPERATOR_NAMESPACE, [""], ["configmaps", "services", "serviceaccounts"], ["get", "create"], (MIGRATE,),
         "Role conversion_shim: the shim's kubeconfig ConfigMap, Service and ServiceAccount."),
    Rule(OPERATOR_NAMESPACE, [""], ["configmaps", "services", "serviceaccounts"], ["patch"], (MIGRATE,),
         "Role conversion_shim corrects the shim's kubeconfig ConfigMap, Service and ServiceAccount.",
         conditional=DIFFERS),
    Rule(OPERATOR_NAMESPACE, ["policy"], ["poddisruptionbudgets"], ["get", "create"], (MIGRATE,),
         "Role conversion_shim: the shim's PodDisruptionBudget."),
    Rule(OPERATOR_NAMESPACE, ["policy"], ["poddisruptionbudgets"], ["patch"], (MIGRATE,),
         "Role conversion_shim corrects the shim's PodDisruptionBudget.", conditional=DIFFERS),
    Rule(OPERATOR_NAMESPACE, [""], ["secrets"], ["get", "create"], (MIGRATE,),
         "serving_certificate: the shim's serving certificate and its CA."),
    Rule(OPERATOR_NAMESPACE, [""], ["secrets"], ["update"], (MIGRATE,),
         "serving_certificate renews the shim's serving certificate.",
         conditional="only when the certificate is due for renewal"),
    Rule(OPERATOR_NAMESPACE, ["apps", "policy", ""],
         ["deployments", "poddisruptionbudgets", "configmaps", "services", "serviceaccounts", "secrets"], ["delete"],
         (MIGRATE,), "The dual-operator plan's cleanup and the conversion shim's removal.",
         conditional="only when the legacy operator or the shim is removed"),
    # one rule per group: the way back holds nothing the way forward lacks (tests/unit/rbac)
    Rule(OPERATOR_NAMESPACE, ["apps"], ["deployments"], ["get", "delete"], (ROLLBACK,), SHIM_REMOVAL,
         conditional=SHIM_REMOVAL_WHEN),
    Rule(OPERATOR_NAMESPACE, ["policy"], ["poddisruptionbudgets"], ["get", "delete"], (ROLLBACK,), SHIM_REMOVAL,
         conditional=SHIM_REMOVAL_WHEN),
    Rule(OPERATOR_NAMESPACE, [""], ["configmaps", "services", "serviceaccounts", "secrets"], ["get", "delete"],
         (ROLLBACK,), SHIM_REMOVAL, conditional=SHIM_REMOVAL_WHEN),
    Rule(OPERATOR_NAMESPACE, ["coordination.k8s.io"], ["leases"], ["get", "delete"], (MIGRATE,),
         "The dual-operator plan's cleanup removes the legacy operator's leader-election Lease with it.",
         conditional="only when the legacy operator is removed (no HostedCluster needs it any more)"),
    Rule(OPERATOR_NAMESPACE, ["rbac.authorization.k8s.io"], ["roles", "rolebindings"], ["list"], (MIGRATE,),
         "Role api_proxy reads the operator's Roles to give it the private twins of its CAPI rules."),
    Rule(OPERATOR_NAMESPACE, ["monitoring.coreos.com"], ["prometheusrules", "servicemonitors", "podmonitors"],
         ["get", "create", "patch", "delete"], (MIGRATE,),
         "Role conversion_shim (private_capi_monitoring) applies the fleet's alerts, the exporter's scrape and the "
         "proxy sidecars' scrape, and removes them when monitoring is turned off.", conditional=MONITORING),
    Rule(OPERATOR_NAMESPACE, ["monitoring.coreos.com"], ["prometheusrules", "servicemonitors", "podmonitors"],
         ["get", "delete"],
         (ROLLBACK,), SHIM_REMOVAL, conditional=MONITORING),
    SHIM_CRD_RULE,
    SIDECAR_CRD_RULE,
    SIDECAR_MODE_RULE,
    EXPORTER_HOSTEDCLUSTER_RULE,
)


def policy_rule(rule):
    """A Role/ClusterRole rule of a Rule."""
    body = {"apiGroups": list(rule.groups), "resources": list(rule.resources), "verbs": list(rule.verbs)}
    if rule.resource_names:
        body["resourceNames"] = list(rule.resource_names)
    return body


def rules_for(entry_point, scopes=SCOPES):
    """entry_point's rules in scopes, in RULES order."""
    return [rule for rule in RULES if entry_point in rule.entry_points and rule.scope in scopes]


def role_names(entry_point):
    """The names of the shipped ServiceAccount and roles of a job entry point."""
    base = "hypershift-private-capi-%s" % entry_point
    return {"account": base, CLUSTER: base, HCP_NAMESPACES: base + "-hcp", OPERATOR_NAMESPACE: base}


def granted(entry_point, verb, group, resource, scope):
    """The rules of entry_point that grant verb on group/resource in scope (empty when none does)."""
    return [rule for rule in rules_for(entry_point, (scope,)) if rule.grants(verb, group, resource, scope)]
