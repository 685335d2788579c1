"""The checks every API module makes before (or at) its first API call, through the real module entry point
(testenv/module_runner.py): an unusable kubeconfig is named with what is wrong (issue 16 item 6), an invalid
name or namespace is refused before any request (items 8, 9e), and a namespace that does not exist fails instead of
reading as "nothing there" (item 7) - except that a 403 on the Namespace GET lets the run go on.

Each group of runs forks from one warm process per module (module_runner.Zygote), so ~100 module runs take seconds.
The live server is the real control plane (the session's `real_cluster`, testenv/cluster): real RBAC, real 404s.
"""
import os

import pytest
import yaml

from testenv.client import wait_for
from testenv.module_runner import Zygote

pytestmark = pytest.mark.slow

# the smallest arguments with which each module that takes kubeconfig builds its API client
MODULES = {
    "capi_access_review": {"entry_point": "verify", "hcp_namespaces": ["clusters-hc"]},
    "capi_health": {"hcp_namespace": "clusters-hc",
                    "kinds": [{"kind": "Cluster", "resource": "clusters", "version": "v1beta2",
                               "target_group": "cluster.hypershift.openshift.io", "source_group": "cluster.x-k8s.io"}]},
    "capi_object_migrate": {"hcp_namespace": "clusters-hc"},
    "capi_steady": {"hcp_namespace": "clusters-hc", "hostedcluster_name": "hc"},
    "capi_verify": {"hostedcluster_name": "hc", "hostedcluster_namespace": "clusters"},
    "hcp_quiesce": {"hcp_namespace": "clusters-hc"},
    "hcp_migrate_window": {"hcp_namespace": "clusters-hc"},
    "hcp_migrate_finish": {"hcp_namespace": "clusters-hc", "hostedcluster_name": "hc", "holder": "run-1"},
    "k8s_lists": {"lists": [{"api_version": "v1", "kind": "ConfigMap", "namespace": "clusters-hc"}]},
    "migration_state": {"hostedcluster_namespace": "clusters"},
    "private_crd_render": {"from_cluster": True},
}
# a kubeconfig whose server does not exist: any request would fail naming "the API server <url>" (k8s/transport.py)
NOWHERE = {"apiVersion": "v1", "kind": "Config", "current-context": "admin",
           "clusters": [{"name": "mgmt", "cluster": {"server": "https://127.0.0.1:9"}},
                        {"name": "other", "cluster": {"server": "https://127.0.0.1:9"}}],
           "contexts": [{"name": "admin", "context": {"cluster": "mgmt", "user": "admin"}},
                        {"name": "orphan", "context": {"cluster": "gone", "user": "admin"}}],
           "users": [{"name": "admin", "user": {"token": "t"}}]}


@pytest.fixture(scope="module")
def kubeconfigs(tmp_path_factory):
    """{kind: (module args for the kubeconfig, words the failure must contain)}: every way a kubeconfig is unusable."""
    root = tmp_path_factory.mktemp("kubeconfigs")

    def write(name, content):
        path = root / name
        path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
        return str(path)

    nowhere = write("nowhere", NOWHERE)
    cases = {
        "missing": ({"kubeconfig": str(root / "missing")}, str(root / "missing"), "does not exist"),
        "directory": ({"kubeconfig": str(root)}, str(root), "is a directory, not a kubeconfig file"),
        "text": ({"kubeconfig": write("hostname", "myhost\n")}, str(root / "hostname"),
                 "is not a kubeconfig: it holds text ('myhost')"),
        "not-yaml": ({"kubeconfig": write("broken", "clusters: [\n")}, str(root / "broken"), "is not YAML (line 2"),
        "empty": ({"kubeconfig": write("empty", "")}, str(root / "empty"), "is empty"),
        "no-current-context": ({"kubeconfig": write("no-current", dict(NOWHERE, **{"current-context": ""}))},
                               str(root / "no-current"), "has no current-context and no context was given"),
        "unknown-context": ({"kubeconfig": nowhere, "context": "nope"}, nowhere,
                            "the context option asks for 'nope', which the kubeconfig does not define"),
        "unknown-cluster": ({"kubeconfig": nowhere, "context": "orphan"}, nowhere,
                            "context 'orphan' names cluster 'gone', which the kubeconfig does not define"),
    }
    if os.geteuid() != 0:  # root reads any file; tests/unit/k8s/test_k8s_client_checks.py covers the branch either way
        unreadable = write("unreadable", NOWHERE)
        os.chmod(unreadable, 0)
        cases["unreadable"] = ({"kubeconfig": unreadable}, unreadable, "cannot be read (Permission denied)")
    return cases


def race(module, args_list):
    zygote = Zygote(module)
    try:
        return zygote.race(args_list)
    finally:
        assert zygote.close() == 0


def assert_user_error(result, *words):
    """Failed with a message holding every word, as a user error: no exception key, no traceback on stderr."""
    assert result.failed and result.rc == 1, (dict(result), result.stderr[-2000:])
    assert "exception" not in result, result
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    for word in words:
        assert word in result["msg"], (word, result["msg"])


@pytest.mark.parametrize("module", sorted(MODULES))
def test_an_unusable_kubeconfig_is_named_with_what_is_wrong(module, kubeconfigs):
    kinds = sorted(kubeconfigs)
    results = race(module, [dict(MODULES[module], **kubeconfigs[kind][0]) for kind in kinds])
    for kind, result in zip(kinds, results):
        _args, path, words = kubeconfigs[kind]
        assert_user_error(result, "kubeconfig %s (option kubeconfig)" % path, words)


# (module, extra args, the option the message must name): one run per invalid value, none may reach the server
INVALID_NAMES = [
    ("capi_access_review", {"hcp_namespaces": ["clusters-hc", "../../api/v1/secrets"]}, "hcp_namespaces[1]"),
    ("capi_access_review", {"hostedcluster_namespaces": ["Clusters"]}, "hostedcluster_namespaces[0]"),
    ("capi_access_review", {"operator_namespace": ""}, "operator_namespace"),
    ("capi_health", {"hcp_namespace": ""}, "hcp_namespace"),
    ("capi_health", {"hcp_namespace": "../../api/v1/secrets"}, "hcp_namespace"),
    ("capi_health", {"deployments": ["cluster-api", "../x"]}, "deployments[1]"),
    ("capi_object_migrate", {"hcp_namespace": ""}, "hcp_namespace"),
    ("capi_object_migrate", {"hcp_namespace": "../../api/v1/secrets"}, "hcp_namespace"),
    ("capi_steady", {"hostedcluster_name": "a/b"}, "hostedcluster_name"),
    ("capi_object_migrate", {"hcp_namespace": "Clusters-HC"}, "hcp_namespace"),
    ("capi_verify", {"hostedcluster_name": "a/b"}, "hostedcluster_name"),
    ("capi_verify", {"hostedcluster_namespace": ""}, "hostedcluster_namespace"),
    ("capi_verify", {"hcp_namespace": "../x"}, "hcp_namespace"),
    ("capi_verify", {"deployments": [""]}, "deployments[0]"),
    ("capi_verify", {"proxy_config_map": "cm?x=1"}, "proxy_config_map"),
    ("hcp_quiesce", {"hcp_namespace": "Clusters"}, "hcp_namespace"),
    ("hcp_quiesce", {"hostedcluster_name": "../hc"}, "hostedcluster_name"),
    ("hcp_quiesce", {"hostedcluster_namespace": ""}, "hostedcluster_namespace"),
    ("hcp_quiesce", {"deployments": ["a" * 254]}, "deployments[0]"),
    ("hcp_quiesce", {"pause_group": "../../apis"}, "pause_group"),
    ("hcp_migrate_window", {"hcp_namespace": "../../api/v1/secrets"}, "hcp_namespace"),
    ("hcp_migrate_window", {"deployments": ["cluster-api", "Capi"]}, "deployments[1]"),
    ("hcp_migrate_window", {"hostedcluster_name": "hc/x"}, "hostedcluster_name"),
    ("hcp_migrate_window", {"pause_group": "../../apis"}, "pause_group"),
    ("hcp_migrate_finish", {"hcp_namespace": "Clusters-HC"}, "hcp_namespace"),
    ("hcp_migrate_finish", {"hostedcluster_name": "../hc"}, "hostedcluster_name"),
    ("hcp_migrate_finish", {"hostedcluster_namespace": ""}, "hostedcluster_namespace"),
    ("hcp_migrate_finish", {"deployments": ["a b"]}, "deployments[0]"),
    ("k8s_lists", {"lists": [{"api_version": "v1", "kind": "Secret", "namespace": "../../api/v1/secrets"}]},
     "lists[0].namespace"),
    ("migration_state", {"hostedcluster_namespace": ""}, "hostedcluster_namespace"),
    ("migration_state", {"hostedcluster_name": "", "hostedcluster_namespace": "clusters"}, "hostedcluster_name"),
    # 9e: became the string "[1, 2]"
    ("migration_state", {"hostedcluster_name": [1, 2], "hostedcluster_namespace": "clusters"}, "hostedcluster_name"),
    ("migration_state", {"hostedcluster_name": "hc", "hostedcluster_namespace": "a" * 64}, "hostedcluster_namespace"),
    ("private_crd_render", {"conversion_webhook_service_namespace": ""}, "conversion_webhook_service_namespace"),
    ("private_crd_render", {"conversion_webhook_service_name": "shim.svc"}, "conversion_webhook_service_name"),
]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_invalid_names_are_refused_before_any_api_call(module, kubeconfigs):
    """The kubeconfig points at a server that does not exist: a request would fail naming 'the API server <url>',
    so failing with the name message proves no request was tried."""
    nowhere = kubeconfigs["unknown-context"][0]["kubeconfig"]
    cases = [(extra, option) for name, extra, option in INVALID_NAMES if name == module]
    assert cases
    results = race(module, [dict(MODULES[module], kubeconfig=nowhere, **extra) for extra, _option in cases])
    for (extra, option), result in zip(cases, results):
        assert_user_error(result, "invalid name: option %s: " % option, "it must be a DNS-", "such as '")
        assert "the API server" not in result["msg"], result["msg"]
    if module == "migration_state":
        assert "option hostedcluster_name: '[1, 2]' is not a valid object name (it looks like a list or a mapping turned into text" \
            in results[2]["msg"]


def test_an_old_option_name_still_works_and_warns(kubeconfigs):
    """The 1.0.0 names are deprecated aliases: the value reaches the new option (here refused by its name check, before
    any request) and the result carries the deprecation."""
    nowhere = kubeconfigs["unknown-context"][0]["kubeconfig"]
    result = race("hcp_migrate_window", [{"kubeconfig": nowhere, "namespace": "clusters-hc",
                                          "hostedcontrolplane_name": "hc/x"}])[0]
    assert_user_error(result, "invalid name: option hostedcluster_name: 'hc/x'")
    assert deprecations(result) == [
        ("Alias 'hostedcontrolplane_name' is deprecated. See the module docs for more information", "2.0.0"),
        ("Alias 'namespace' is deprecated. See the module docs for more information", "2.0.0")], result


def deprecations(result):
    """(message, version) of each deprecation in a module result, sorted."""
    # ansible-core 2.19 reports each as a DeprecationSummary (event.msg, deprecator, version); older ones flat (msg)
    return sorted((entry.get("msg") or entry["event"]["msg"], entry["version"]) for entry in result.get("deprecations") or [])


# (module, args under 1.0.0 names, the option as documented) with a namespace the live server does not have
OLD_NAMES_MISSING = [
    ("capi_object_migrate", {"namespace": "no-such-ns"}, "hcp_namespace"),
    ("capi_verify", {"name": "hc", "namespace": "no-such-ns"}, "hostedcluster_namespace"),
    ("hcp_quiesce", {"namespace": "no-such-ns"}, "hcp_namespace"),
    ("migration_state", {"namespace": "no-such-ns"}, "hostedcluster_namespace"),
]


@pytest.mark.parametrize("module, args, option", OLD_NAMES_MISSING)
def test_a_value_under_an_old_name_reaches_the_service_and_is_named_as_documented(module, args, option, server):
    """The service reads the new name: a value given under the 1.0.0 name is checked there, and the message names the
    option as the module documents it (as ansible-core names an alias's option); the result carries the deprecation."""
    result = race(module, [dict(args, kubeconfig=server.kubeconfig)])[0]
    assert_user_error(result, "namespace 'no-such-ns' (option %s) does not exist" % option)
    assert deprecations(result) == sorted(
        ("Alias '%s' is deprecated. See the module docs for more information" % old, "2.0.0") for old in args), result


def test_empty_namespace_sends_no_request(real_cluster):
    """The reported case: capi_object_migrate namespace="" listed every namespace's objects and sent POSTs."""
    since = (real_cluster.request_counts()["entries"] or [{"seq": 0}])[-1]["seq"]
    result = race("capi_object_migrate", [{"kubeconfig": real_cluster.kubeconfig, "hcp_namespace": ""}])[0]
    assert_user_error(result, "invalid name: option hcp_namespace: '' is empty")
    assert real_cluster.request_counts(since)["entries"] == []


# (module, args, the option and namespace the message must name) against a live server without those namespaces
MISSING_NAMESPACES = [
    ("capi_object_migrate", {"hcp_namespace": "no-such-ns"}, "hcp_namespace", "no-such-ns"),
    ("capi_object_migrate", {"hcp_namespace": "no-such-ns", "delete_source": True, "require_paused": False},
     "hcp_namespace", "no-such-ns"),
    ("hcp_quiesce", {"hcp_namespace": "no-such-ns"}, "hcp_namespace", "no-such-ns"),
    ("hcp_migrate_window", {"hcp_namespace": "no-such-ns"}, "hcp_namespace", "no-such-ns"),
    ("hcp_migrate_finish", {"hcp_namespace": "no-such-ns", "hostedcluster_name": "hc", "holder": "run-1"},
     "hcp_namespace", "no-such-ns"),
    ("hcp_migrate_finish", {"hcp_namespace": "checks", "hostedcluster_name": "hc",
                            "hostedcluster_namespace": "no-such-hc-ns", "holder": "run-1"},
     "hostedcluster_namespace", "no-such-hc-ns"),
    ("hcp_quiesce", {"hcp_namespace": "checks", "hostedcluster_name": "hc", "hostedcluster_namespace": "no-such-hc-ns"},
     "hostedcluster_namespace", "no-such-hc-ns"),
    ("capi_health", {"hcp_namespace": "no-such-ns"}, "hcp_namespace", "no-such-ns"),
    ("capi_steady", {"hcp_namespace": "no-such-ns", "hostedcluster_name": "hc"}, "hcp_namespace", "no-such-ns"),
    ("capi_verify", {"hostedcluster_name": "hc", "hostedcluster_namespace": "no-such-ns"}, "hostedcluster_namespace",
     "no-such-ns"),
    ("capi_verify", {"hostedcluster_name": "hc", "hostedcluster_namespace": "checks"},
     "hcp_namespace, derived from hostedcluster_namespace and hostedcluster_name", "checks-hc"),
    ("capi_verify", {"hostedcluster_name": "hc", "hostedcluster_namespace": "checks", "hcp_namespace": "no-such-hcp"},
     "hcp_namespace", "no-such-hcp"),
    ("migration_state", {"hostedcluster_namespace": "no-such-ns"}, "hostedcluster_namespace", "no-such-ns"),
    ("migration_state", {"hostedcluster_namespace": "no-such-ns", "query_states": ["legacy"]}, "hostedcluster_namespace",
     "no-such-ns"),
    ("k8s_lists", {"lists": [{"api_version": "v1", "kind": "ConfigMap", "namespace": "checks"},
                             {"api_version": "v1", "kind": "ConfigMap", "namespace": "no-such-ns"}]},
     "lists[1].namespace", "no-such-ns"),
    # an HCP namespace derived from the HostedCluster (hypershift.hcp_namespace) is checked the same way
    ("capi_steady", {"hcp_namespace": "", "hostedcluster_name": "hc", "hostedcluster_namespace": "checks"},
     "hcp_namespace, derived from hostedcluster_namespace and hostedcluster_name", "checks-hc"),
]


@pytest.fixture(scope="module")
def server(real_cluster):
    response = real_cluster.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                                   "metadata": {"name": "checks"}})
    assert response.status == 201, response
    return real_cluster


@pytest.mark.parametrize("module", sorted({name for name, _args, _option, _namespace in MISSING_NAMESPACES}))
def test_a_namespace_that_does_not_exist_fails_naming_it(module, server):
    cases = [(args, option, namespace) for name, args, option, namespace in MISSING_NAMESPACES if name == module]
    results = race(module, [dict(MODULES[module], kubeconfig=server.kubeconfig, **args) for args, _option, _namespace in cases])
    for (_args, option, namespace), result in zip(cases, results):
        assert_user_error(result, "namespace %r (option %s) does not exist" % (namespace, option),
                          "GET /api/v1/namespaces/%s: 404 NotFound" % namespace)
        assert result.get("changed") in (None, False)


def test_a_403_on_the_namespace_get_counts_as_unknown_and_the_run_goes_on(server):
    """alice may list ConfigMaps in the namespace but not get Namespaces: the check must not lock her out."""
    for body in ({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                  "metadata": {"name": "configmap-reader", "namespace": "checks"},
                  "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]},
                 {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                  "metadata": {"name": "alice-configmap-reader", "namespace": "checks"},
                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-reader"},
                  "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}):
        kind = "roles" if body["kind"] == "Role" else "rolebindings"
        response = server.request("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/checks/%s" % kind, body)
        assert response.status == 201, response
    alice = server.token_for("alice")
    # the RBAC authorizer reads the RoleBinding from its informer: wait until it lets alice list
    wait_for(lambda: server.request("GET", "/api/v1/namespaces/checks/configmaps", token=alice).status == 200,
             "alice's RoleBinding to take effect")
    assert server.request("GET", "/api/v1/namespaces/checks", token=alice).status == 403
    # her own kubeconfig: api_key over the admin's kubeconfig would still send its client certificate, which the
    # real apiserver authenticates first (the admin, not alice)
    result = race("k8s_lists", [{"kubeconfig": server.kubeconfig_for("alice"),
                                 "lists": [{"api_version": "v1", "kind": "ConfigMap", "namespace": "checks"}]}])[0]
    assert not result.failed, (result.get("msg"), result.stderr[-2000:])
    assert result["results"][0]["api_found"] is True and result["results"][0]["namespace"] == "checks"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_server_that_refuses_is_named_with_what_to_check(module, kubeconfigs):
    """Valid arguments, a kubeconfig whose server is a closed loopback port: the module fails as a user error naming
    that server, that it refused the connection and what to check (not urllib3's text alone)."""
    nowhere = kubeconfigs["unknown-context"][0]["kubeconfig"]
    result = race(module, [dict(MODULES[module], kubeconfig=nowhere)])[0]
    assert_user_error(result, "the API server https://127.0.0.1:9 refused the connection",
                      "check the server URL of the kubeconfig context")
