"""The shared name/namespace validator (plugins/module_utils/k8s/names.py), table-driven, and that every module that
takes a name or a namespace declares it in its NAME_RULES and checks them right after building its module."""
import importlib
import inspect

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s import runner
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import (
    API_GROUP,
    NAMESPACE,
    OBJECT_NAME,
    SERVICE_NAME,
    name_problems,
)

MODULE_PACKAGE = "ansible_collections.hypershift.private_capi.plugins.modules."
# every module that talks to the API server, with each option that holds a namespace or an object name
API_MODULES = {
    "api_proxy_apply": {"hcp_namespace", "deployments[]", "config_map_name", "serving_secret_name", "ca_secret_name"},
    "capi_access_review": {"hostedcluster_namespaces[]", "hcp_namespaces[]", "operator_namespace"},
    "capi_health": {"hcp_namespace", "deployments[]"},
    "capi_object_migrate": {"hcp_namespace"},
    "capi_steady": {"hcp_namespace", "hostedcluster_name", "hostedcluster_namespace"},
    "deployment_rollout": {"hcp_namespace", "deployments[]"},
    "capi_verify": {"hostedcluster_name", "hostedcluster_namespace", "hcp_namespace", "deployments[]",
                    "proxy_config_map"},
    "hcp_quiesce": {"hcp_namespace", "hostedcluster_name", "hostedcluster_namespace", "deployments[]", "pause_group"},
    "hcp_migrate_begin": {"hcp_namespace", "hostedcluster_name", "hostedcluster_namespace", "operator_namespace"},
    "hcp_migrate_window": {"hcp_namespace", "deployments[]", "hostedcluster_name", "hostedcluster_namespace",
                           "pause_group"},
    "hcp_migrate_finish": {"hcp_namespace", "hostedcluster_name", "hostedcluster_namespace", "deployments[]"},
    "hcp_migrate_rollback": {"hcp_namespace", "hostedcluster_name", "hostedcluster_namespace", "deployments[]",
                             "proxy_config_map"},
    "k8s_lists": {"lists[].namespace", "lists[].name"},
    "migration_state": {"hostedcluster_name", "hostedcluster_namespace"},
    "private_crd_render": {"conversion_webhook_service_name", "conversion_webhook_service_namespace"},
}
# options whose names say name/namespace but hold no Kubernetes object name
NOT_OBJECT_NAMES = {"management_cluster", "short_name_prefix"}


@pytest.mark.parametrize("rule, value, problem", [
    (NAMESPACE, "clusters-prod-01", None),
    (NAMESPACE, "a", None),
    (NAMESPACE, "0abc9", None),
    (NAMESPACE, "a" * 63, None),
    (NAMESPACE, "a" * 64, "is 64 characters long (at most 63)"),
    (NAMESPACE, "", "is empty"),
    (NAMESPACE, "../../api/v1/secrets", "is not a valid namespace"),
    (NAMESPACE, "Clusters", "is not a valid namespace"),
    (NAMESPACE, "clusters.prod", "is not a valid namespace"),  # a label: no dots
    (NAMESPACE, "-clusters", "is not a valid namespace"),
    (NAMESPACE, "clusters-", "is not a valid namespace"),
    (NAMESPACE, "clu sters", "is not a valid namespace"),
    (NAMESPACE, "clusters\n", "is not a valid namespace"),  # $ would match before a trailing newline
    (NAMESPACE, "clusters/x", "is not a valid namespace"),
    (NAMESPACE, 5, "is not a string (it is a int value)"),
    (OBJECT_NAME, "prod-01", None),
    (OBJECT_NAME, "prod-01.example.com", None),
    (OBJECT_NAME, "a" * 253, None),
    (OBJECT_NAME, "a" * 254, "is 254 characters long (at most 253)"),
    (OBJECT_NAME, "", "is empty"),
    (OBJECT_NAME, "prod..01", "is not a valid object name"),
    (OBJECT_NAME, ".prod", "is not a valid object name"),
    (OBJECT_NAME, "prod_01", "is not a valid object name"),
    (OBJECT_NAME, "../secrets", "is not a valid object name"),
    (OBJECT_NAME, "PROD", "is not a valid object name"),
    # 9e: Ansible turns name=[1, 2] into the string "[1, 2]" for a str option
    (OBJECT_NAME, "[1, 2]", "is not a valid object name (it looks like a list or a mapping turned into text"),
    (OBJECT_NAME, "{'a': 1}", "is not a valid object name (it looks like a list or a mapping turned into text"),
    (API_GROUP, "cluster.x-k8s.io", None),
    (API_GROUP, "../../apis", "is not a valid API group"),
    (SERVICE_NAME, "capi-conversion-webhook-shim", None),
    (SERVICE_NAME, "1shim", "is not a valid Service name"),  # DNS-1035: starts with a letter
    (SERVICE_NAME, "shim.x", "is not a valid Service name"),
    (NAMESPACE.or_empty("every namespace"), "", None),
    (NAMESPACE.or_empty("every namespace"), "../x", "is not a valid namespace"),
])
def test_rule_table(rule, value, problem):
    found = rule.problem(value)
    if problem is None:
        assert found is None
    else:
        assert found is not None and found.startswith(problem), found


@pytest.mark.parametrize("params, rules, expected", [
    ({"namespace": ""}, [("namespace", NAMESPACE)],
     ["option namespace: '' is empty; it must be a DNS-1123 label - at most 63 characters of lowercase letters, digits "
      "and '-', starting and ending with a letter or digit, such as 'clusters-prod-01'"]),
    ({"name": "[1, 2]"}, [("name", OBJECT_NAME)],
     ["option name: '[1, 2]' is not a valid object name (it looks like a list or a mapping turned into text; give one "
      "object name as a string); it must be a DNS-1123 subdomain - at most 253 characters of lowercase letters, "
      "digits, '-' and '.', each '.'-separated part starting and ending with a letter or digit, such as 'prod-01'"]),
    ({"namespace": None, "name": None}, [("namespace", NAMESPACE), ("name", OBJECT_NAME)], []),  # not given
    ({"deployments": ["cluster-api", "Bad_One", ""]}, [("deployments[]", OBJECT_NAME)],
     ["option deployments[1]: 'Bad_One' is not a valid object name", "option deployments[2]: '' is empty"]),
    ({"lists": [{"namespace": ""}, {"namespace": "ok"}, {"namespace": "../../api/v1/secrets"}]},
     [("lists[].namespace", NAMESPACE.or_empty("every namespace"))],
     ["option lists[2].namespace: '../../api/v1/secrets' is not a valid namespace"]),
])
def test_problems_name_the_option_the_value_the_rule_and_an_example(params, rules, expected):
    problems = name_problems(params, rules)
    assert len(problems) == len(expected), problems
    for problem, start in zip(problems, expected):
        assert problem.startswith(start), problem
        assert "it must be" in problem and "such as" in problem


@pytest.mark.parametrize("module_name", sorted(API_MODULES))
def test_every_module_declares_its_names_and_checks_them_first(module_name):
    module = importlib.import_module(MODULE_PACKAGE + module_name)
    declared = {path for path, _rule in module.NAME_RULES}
    assert declared == API_MODULES[module_name]
    # every option that holds a name or namespace is declared (nested suboptions included)
    spec = module.argspec()
    candidates = set()
    for option, settings in spec.items():
        if option in NOT_OBJECT_NAMES or option in ("kubeconfig", "context", "username", "impersonate_user"):
            continue
        if option.endswith(("name", "namespace", "config_map")) or option == "deployments":
            candidates.add(option + ("[]" if settings.get("type") == "list" else ""))
        for sub in (settings.get("options") or {}):
            if sub.endswith(("name", "namespace")):
                candidates.add("%s[].%s" % (option, sub))
    assert candidates <= declared, candidates - declared
    # ... and main() is the runner's, which checks them right after building the module, before anything else
    assert "    run_module(argspec, NAME_RULES, " in inspect.getsource(module.main)
    source = inspect.getsource(runner.run_module)
    built = source.index("AnsibleK8SModule(")
    checked = source.index("check_names(module, name_rules)")
    after_build = source[source.index(")\n", built):checked]
    assert after_build == ")\n    " and source.index("execute(module, service)") > checked
