"""What the api_proxy role reads, writes and deletes (plugins/module_utils/hcp/sidecar.py role_reads, role_plan and
the kubeconfig ConfigMap and private-group RBAC they build, which the role's Jinja templates rbac.json.j2 and
kubeconfig_configmap.yml.j2 rendered before), and the filters proxy_reads and proxy_plan."""
import copy

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hypershift.private_capi.plugins.filter.proxy_sidecar import FilterModule
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import sidecar

NS = "hcp-role"
LABELS = {"app.kubernetes.io/managed-by": "hypershift.private_capi.api_proxy",
          "hypershift.openshift.io/capi-proxy-namespace": NS}
SIDECAR_SETTINGS = {"image": "registry.example/capi-proxy:test", "image_pull_policy": "IfNotPresent",
                    "mount_path": "/etc/capi-proxy", "port": 8080, "metrics_port": 9090, "log_level": "info",
                    "use_own_credentials": True, "extra_args": [], "resources": {}, "liveness_probe": {},
                    "readiness_probe": {}, "config_map_name": "capi-proxy-kubeconfig", "main_containers": []}
SETTINGS = dict(SIDECAR_SETTINGS, state="present", steps="all", namespace=NS, deployments=["cluster-api", "capi-provider"],
                skip_missing=False, rbac=True, upstream_server="https://kubernetes.default.svc", mode="passthrough",
                follow_mode=True)
RBAC_V1 = "rbac.authorization.k8s.io/v1"
ALL = {"resources": ["*"], "verbs": ["*"]}


def deployment(name, account=None):
    spec = {"containers": [{"name": "manager", "image": "capi:1"}]}
    if account is not None:
        spec["serviceAccountName"] = account
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
            "spec": {"template": {"spec": spec}}}


def binding(kind, name, role_kind, role_name, subjects):
    metadata = {"name": name, "namespace": NS} if kind == "RoleBinding" else {"name": name}
    return {"apiVersion": RBAC_V1, "kind": kind, "metadata": metadata,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name}, "subjects": subjects}


def role(kind, name, rules):
    metadata = {"name": name, "namespace": NS} if kind == "Role" else {"name": name}
    return {"apiVersion": RBAC_V1, "kind": kind, "metadata": metadata, "rules": rules}


def sa(name, namespace=NS):
    subject = {"kind": "ServiceAccount", "name": name}
    if namespace is not None:
        subject["namespace"] = namespace
    return subject


# What tests/integration/proxy/test_role.py creates: cluster-api bound in the namespace, capi-provider cluster-wide
DEPLOYMENTS = [deployment("cluster-api", "cluster-api"), deployment("capi-provider", "capi-provider"), deployment("other", "x")]
ROLEBINDINGS = [binding("RoleBinding", "cluster-api", "Role", "cluster-api", [sa("cluster-api")])]
ROLES = [role("Role", "cluster-api", [dict(ALL, apiGroups=["cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io", ""]),
                                      dict(ALL, apiGroups=["apps"])])]
CLUSTERROLEBINDINGS = [binding("ClusterRoleBinding", "capi-provider-reader", "ClusterRole", "capi-provider-reader",
                               [sa("capi-provider")])]
CLUSTERROLES = [role("ClusterRole", "capi-provider-reader",
                     [{"apiGroups": ["cluster.x-k8s.io"], "resources": ["clusters"], "verbs": ["get"]}])]
READ = [{"resources": DEPLOYMENTS}, {"resources": []}, {"resources": ROLEBINDINGS}, {"resources": ROLES},
        {"resources": CLUSTERROLEBINDINGS}, {"resources": CLUSTERROLES}]
MODE_ROLE_RULES = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "patch"],
                    "resourceNames": ["capi-proxy-mode"]}]


def names(objects):
    return [(obj["kind"], obj["metadata"]["name"]) for obj in objects]


def test_the_kubeconfig_config_map_is_the_one_the_template_rendered():
    assert sidecar.kubeconfig_config_map("ns-1", "capi-proxy-kubeconfig", 8080, "https://kubernetes.default.svc") == {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "capi-proxy-kubeconfig", "namespace": "ns-1",
                     "labels": {"app.kubernetes.io/managed-by": "hypershift.private_capi.api_proxy",
                                "hypershift.openshift.io/capi-proxy-namespace": "ns-1"}},
        "data": {"kubeconfig": "apiVersion: v1\nkind: Config\ncurrent-context: capi-proxy\nclusters:\n  - name: capi-proxy\n"
                               "    cluster:\n      server: http://localhost:8080\ncontexts:\n  - name: capi-proxy\n"
                               "    context:\n      cluster: capi-proxy\n      namespace: ns-1\n",
                 "upstream.kubeconfig": "apiVersion: v1\nkind: Config\ncurrent-context: in-cluster\nclusters:\n"
                                        "  - name: in-cluster\n    cluster:\n      server: https://kubernetes.default.svc\n"
                                        "      certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt\n"
                                        "users:\n  - name: pod-service-account\n    user:\n"
                                        "      tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\n"
                                        "contexts:\n  - name: in-cluster\n    context:\n      cluster: in-cluster\n"
                                        "      user: pod-service-account\n"}}


@pytest.mark.parametrize("rules, expected", [
    ([], []),
    (None, []),
    ([{"apiGroups": ["apps"], "resources": ["*"], "verbs": ["*"]}], []),  # no CAPI group: left out
    ([{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}], []),  # no apiGroups: left out
    ([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}], []),  # "*" is not a CAPI group
    ([{"apiGroups": ["cluster.x-k8s.io", "", "cluster.x-k8s.io", "addons.cluster.x-k8s.io"], "verbs": ["get"]}],
     [{"apiGroups": ["cluster.hypershift.openshift.io", "addons.cluster.hypershift.openshift.io"], "verbs": ["get"]}]),
    ([{"apiGroups": ["cluster.hypershift.openshift.io"], "verbs": ["get"]}], []),  # already private: not granted again
    ([{"apiGroups": ["capi-provider.agent-install.openshift.io"], "verbs": ["get"]}], []),  # extra pairs: not by default
])
def test_private_rules_keep_only_the_capi_groups_private_names(rules, expected):
    pristine = copy.deepcopy(rules)
    assert sidecar.private_rules(rules) == expected
    assert rules == pristine


def test_private_rbac_mirrors_each_service_accounts_grants_on_the_private_groups():
    objects = sidecar.private_rbac(DEPLOYMENTS, SETTINGS["deployments"], NS, ROLEBINDINGS, ROLES, CLUSTERROLEBINDINGS,
                                   CLUSTERROLES)
    assert names(objects) == [("Role", "private-capi-proxy-cluster-api"), ("RoleBinding", "private-capi-proxy-cluster-api"),
                              ("ClusterRole", "private-capi-proxy-hcp-role-capi-provider"),
                              ("ClusterRoleBinding", "private-capi-proxy-hcp-role-capi-provider"),
                              ("ClusterRole", "private-capi-proxy-crd-reader-hcp-role"),
                              ("ClusterRoleBinding", "private-capi-proxy-crd-reader-hcp-role"),
                              ("Role", "private-capi-proxy-mode"), ("RoleBinding", "private-capi-proxy-mode")]
    by_name = dict(((obj["kind"], obj["metadata"]["name"]), obj) for obj in objects)
    assert by_name[("Role", "private-capi-proxy-cluster-api")] == {
        "apiVersion": RBAC_V1, "kind": "Role", "metadata": {"name": "private-capi-proxy-cluster-api", "namespace": NS,
                                                            "labels": LABELS},
        "rules": [dict(ALL, apiGroups=["cluster.hypershift.openshift.io", "infrastructure.cluster.hypershift.openshift.io"])]}
    assert by_name[("RoleBinding", "private-capi-proxy-cluster-api")] == {
        "apiVersion": RBAC_V1, "kind": "RoleBinding",
        "metadata": {"name": "private-capi-proxy-cluster-api", "namespace": NS, "labels": LABELS},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "private-capi-proxy-cluster-api"},
        "subjects": [sa("cluster-api")]}
    assert by_name[("ClusterRole", "private-capi-proxy-hcp-role-capi-provider")]["metadata"] == {
        "name": "private-capi-proxy-hcp-role-capi-provider", "labels": LABELS}
    assert by_name[("ClusterRole", "private-capi-proxy-crd-reader-hcp-role")]["rules"] == [
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "list", "watch"]}]
    assert by_name[("ClusterRoleBinding", "private-capi-proxy-crd-reader-hcp-role")]["subjects"] == [
        sa("cluster-api"), sa("capi-provider")]
    # every sidecar follows and acknowledges the namespace's mode ConfigMap, that one only
    assert by_name[("Role", "private-capi-proxy-mode")]["rules"] == MODE_ROLE_RULES
    assert by_name[("RoleBinding", "private-capi-proxy-mode")]["subjects"] == [sa("cluster-api"), sa("capi-provider")]


@pytest.mark.parametrize("subject, bound", [
    (sa("default"), True),
    (sa("default", namespace=None), True),  # a RoleBinding's ServiceAccount subject may leave its namespace out
    (sa("default", namespace="elsewhere"), False),
    (sa("other"), False),
    ({"kind": "User", "name": "default"}, False),
])
def test_a_role_binding_counts_only_for_the_workloads_service_account(subject, bound):
    rolebindings = [binding("RoleBinding", "b", "ClusterRole", "capi", [subject])]
    clusterroles = [role("ClusterRole", "capi", [dict(ALL, apiGroups=["cluster.x-k8s.io"])])]
    objects = sidecar.private_rbac([deployment("cluster-api")], ["cluster-api"], NS, rolebindings, [], [], clusterroles)
    # a Deployment without serviceAccountName runs as "default"; a RoleBinding to a ClusterRole grants in the namespace
    assert (("Role", "private-capi-proxy-default") in names(objects)) is bound
    assert names(objects)[-4:] == [("ClusterRole", "private-capi-proxy-crd-reader-hcp-role"),
                                   ("ClusterRoleBinding", "private-capi-proxy-crd-reader-hcp-role"),
                                   ("Role", "private-capi-proxy-mode"), ("RoleBinding", "private-capi-proxy-mode")]


@pytest.mark.parametrize("subject, bound", [
    (sa("default"), True),
    (sa("default", namespace=None), False),  # a ClusterRoleBinding's ServiceAccount subject needs its namespace
    (sa("default", namespace="elsewhere"), False),
])
def test_a_cluster_role_binding_counts_only_with_the_namespace(subject, bound):
    clusterrolebindings = [binding("ClusterRoleBinding", "b", "ClusterRole", "capi", [subject])]
    clusterroles = [role("ClusterRole", "capi", [dict(ALL, apiGroups=["cluster.x-k8s.io"])])]
    objects = sidecar.private_rbac([deployment("cluster-api")], ["cluster-api"], NS, [], [], clusterrolebindings,
                                   clusterroles)
    assert (("ClusterRole", "private-capi-proxy-hcp-role-default") in names(objects)) is bound


def test_no_named_deployment_means_no_rbac_and_missing_roles_grant_nothing():
    assert sidecar.private_rbac(DEPLOYMENTS, ["absent"], NS, ROLEBINDINGS, ROLES, CLUSTERROLEBINDINGS, CLUSTERROLES) == []
    dangling = [binding("RoleBinding", "b", "Role", "gone", [sa("cluster-api")])]
    assert names(sidecar.private_rbac(DEPLOYMENTS, ["cluster-api"], NS, dangling, [], [], [])) == [
        ("ClusterRole", "private-capi-proxy-crd-reader-hcp-role"), ("ClusterRoleBinding", "private-capi-proxy-crd-reader-hcp-role"),
        ("Role", "private-capi-proxy-mode"), ("RoleBinding", "private-capi-proxy-mode")]


def test_the_reads_depend_on_state_and_rbac():
    present = sidecar.role_reads(SETTINGS)
    assert present[0] == {"api_version": "apps/v1", "kind": "Deployment", "namespace": NS}
    assert [(read["kind"], read["namespace"], read["label_selectors"]) for read in present[1:]] == [
        ("ConfigMap", NS, sidecar.rbac_label_selectors(NS)),  # is the mode ConfigMap there?
        ("RoleBinding", NS, []), ("Role", NS, []), ("ClusterRoleBinding", "", []), ("ClusterRole", "", [])]
    assert sidecar.role_reads(dict(SETTINGS, rbac=False)) == present[:2]
    absent = sidecar.role_reads(dict(SETTINGS, state="absent", rbac=False))
    assert [read["label_selectors"] for read in absent[1:]] == [sidecar.rbac_label_selectors(NS)] * 4
    assert sidecar.rbac_label_selectors(NS) == ["%s=%s" % item for item in sorted(LABELS.items())]


def test_the_present_plan_applies_the_config_map_and_rbac_and_patches_the_named_deployments():
    plan = sidecar.role_plan(READ, SETTINGS)
    assert plan["error"] == "" and plan["patch"] is True and plan["delete"] == []
    assert plan["apply"][0] == sidecar.kubeconfig_config_map(NS, "capi-proxy-kubeconfig", 8080, SETTINGS["upstream_server"])
    assert plan["apply"][1] == {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "capi-proxy-mode", "namespace": NS, "labels": LABELS},
                                "data": {"mode": "passthrough"}}
    assert plan["apply"][2:] == sidecar.private_rbac(DEPLOYMENTS, SETTINGS["deployments"], NS, ROLEBINDINGS, ROLES,
                                                     CLUSTERROLEBINDINGS, CLUSTERROLES)
    assert plan["patches"] == sidecar.present_patches(DEPLOYMENTS, SETTINGS["deployments"], SETTINGS)
    assert sidecar.role_plan(READ, dict(SETTINGS, steps="prepare"))["patch"] is False
    no_rbac = sidecar.role_plan(READ[:2], dict(SETTINGS, rbac=False))
    assert names(no_rbac["apply"]) == [("ConfigMap", "capi-proxy-kubeconfig"), ("ConfigMap", "capi-proxy-mode")]


def test_a_mode_config_map_that_exists_is_never_overwritten():
    flipped = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "capi-proxy-mode", "namespace": NS},
               "data": {"mode": "translate"}}
    plan = sidecar.role_plan([READ[0], {"resources": [flipped]}] + READ[2:], SETTINGS)
    assert [obj["metadata"]["name"] for obj in plan["apply"] if obj["kind"] == "ConfigMap"] == ["capi-proxy-kubeconfig"]


def test_a_sidecar_that_does_not_follow_a_mode_has_no_mode_config_map_role_or_read():
    fixed = dict(SETTINGS, follow_mode=False)
    reads = sidecar.role_reads(fixed)
    assert "ConfigMap" not in [read["kind"] for read in reads]
    plan = sidecar.role_plan(READ[:1] + READ[2:], fixed)
    assert names(plan["apply"])[0] == ("ConfigMap", "capi-proxy-kubeconfig")
    assert ("ConfigMap", "capi-proxy-mode") not in names(plan["apply"])
    assert ("Role", "private-capi-proxy-mode") not in names(plan["apply"])
    container = [c for c in plan["patches"][0]["spec"]["template"]["spec"]["containers"] if c["name"] == "kube-apiserver-proxy"][0]
    assert "env" not in container and not [arg for arg in container["args"] if arg.startswith("--mode")]
    absent = sidecar.role_plan([{"resources": DEPLOYMENTS}] + [{"resources": []}] * 4, dict(fixed, state="absent"))
    assert names(absent["delete"]) == [("ConfigMap", "capi-proxy-kubeconfig")]


def test_an_unknown_mode_is_refused_naming_the_variable():
    with pytest.raises(sidecar.SidecarError, match="the proxy mode must be one of passthrough, translate, got 'on' "
                                                   "\\(private_capi_proxy_mode\\)"):
        sidecar.role_plan(READ, dict(SETTINGS, mode="on"))


def test_a_missing_deployment_stops_the_run_unless_skipped():
    settings = dict(SETTINGS, deployments=["cluster-api", "gone", "also-gone", "gone"])
    assert sidecar.role_plan(READ, settings)["error"] == (
        "Deployments gone, also-gone were not found in namespace hcp-role; fix private_capi_proxy_deployments "
        "(expected the CAPI-dependent Deployments of this namespace).")
    skipped = sidecar.role_plan(READ, dict(settings, skip_missing=True))
    assert skipped["error"] == "" and [patch["metadata"]["name"] for patch in skipped["patches"]] == ["cluster-api"]


def test_the_absent_plan_restores_the_deployments_and_deletes_what_the_role_created():
    installed = [dict(d, **{"spec": {"template": {"spec": p["spec"]["template"]["spec"]}}},
                      metadata=dict(d["metadata"], annotations=p["metadata"]["annotations"]))
                 for d, p in zip(DEPLOYMENTS, sidecar.present_patches(DEPLOYMENTS, SETTINGS["deployments"], SETTINGS))]
    created = sidecar.private_rbac(DEPLOYMENTS, SETTINGS["deployments"], NS, ROLEBINDINGS, ROLES, CLUSTERROLEBINDINGS,
                                   CLUSTERROLES)
    by_kind = [[obj for obj in created if obj["kind"] == kind] for kind in ("RoleBinding", "Role", "ClusterRoleBinding",
                                                                            "ClusterRole")]
    read = [{"resources": installed + DEPLOYMENTS[2:]}] + [{"resources": objects} for objects in by_kind]
    plan = sidecar.role_plan(read, dict(SETTINGS, state="absent"))
    assert plan["error"] == "" and plan["apply"] == [] and plan["patch"] is True
    assert plan["patches"] == sidecar.absent_patches(installed, SETTINGS["deployments"]) and len(plan["patches"]) == 2
    assert sorted(names(plan["delete"][:-2])) == sorted(names(created))
    assert all(obj["apiVersion"] == RBAC_V1 and set(obj["metadata"]) <= {"name", "namespace"} for obj in plan["delete"][:-2])
    assert plan["delete"][-2:] == [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}}
                                   for name in ("capi-proxy-kubeconfig", "capi-proxy-mode")]
    nothing = sidecar.role_plan([{"resources": DEPLOYMENTS}] + [{"resources": []}] * 4, dict(SETTINGS, state="absent"))
    assert nothing["patches"] == [] and names(nothing["delete"]) == [("ConfigMap", "capi-proxy-kubeconfig"),
                                                                      ("ConfigMap", "capi-proxy-mode")]


@pytest.mark.parametrize("results, settings, message", [
    (READ, dict(SETTINGS, state="gone"), "state must be one of present, absent and steps one of all, prepare"),
    (READ, dict((key, value) for key, value in SETTINGS.items() if key != "namespace"), "the role settings lack namespace"),
    (READ[:1], SETTINGS, "expected 6 lists as proxy_reads asks for"),
])
def test_bad_settings_or_reads_are_named(results, settings, message):
    with pytest.raises(sidecar.SidecarError, match=message):
        sidecar.role_plan(results, settings)


@pytest.mark.parametrize("name, args, message", [
    ("proxy_reads", ("text",), "proxy_reads: settings must be a mapping of the api_proxy role's settings, got str"),
    ("proxy_reads", (), "proxy_reads: missing a required argument: 'settings'"),
    ("proxy_reads", ({},), "proxy_reads: the role settings lack state"),
    ("proxy_plan", (READ,), "proxy_plan: missing a required argument: 'settings'"),
    ("proxy_plan", ("text", SETTINGS), "proxy_plan: the input must be the k8s_lists results of the proxy_reads read"),
    ("proxy_plan", (READ, []), "proxy_plan: settings must be a mapping"),
    ("proxy_plan", (READ, dict(SETTINGS, steps="some")), "proxy_plan: state must be one of"),
])
def test_the_filters_name_themselves_in_their_errors(name, args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        FilterModule().filters()[name](*args)


def test_the_filters_return_what_the_functions_return():
    filters = FilterModule().filters()
    assert filters["proxy_reads"](SETTINGS) == sidecar.role_reads(SETTINGS)
    assert filters["proxy_plan"](READ, SETTINGS) == sidecar.role_plan(READ, SETTINGS)


@pytest.mark.parametrize("change, named", [
    ({"namespace": ""}, "private_capi_proxy_namespace is empty"),
    ({"metrics_port": 0}, "private_capi_proxy_metrics_port is 0"),
    ({"metrics_port": "8080"}, "other than the proxy port (private_capi_proxy_port, 8080)"),
    ({"port": "eighty"}, "private_capi_proxy_port must be a port number, got 'eighty'"),
])
def test_bad_settings_are_refused_before_the_read_naming_the_variable(change, named):
    with pytest.raises(AnsibleFilterError, match=r"^proxy_reads: .*%s" % named.replace("(", r"\(").replace(")", r"\)")):
        FilterModule().filters()["proxy_reads"](dict(SETTINGS, **change))


def test_taking_the_sidecars_out_needs_no_metrics_port():
    reads = FilterModule().filters()["proxy_reads"](dict(SETTINGS, state="absent", metrics_port=0))
    assert reads[0] == {"api_version": "apps/v1", "kind": "Deployment", "namespace": NS}
