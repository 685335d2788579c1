"""One name per thing in every module: the HostedCluster is hostedcluster_name and hostedcluster_namespace, its HCP
namespace hcp_namespace (derived by hypershift.hcp_namespace when empty), the lock's run holder; the 1.0.0 names
still work as deprecated aliases and warn."""
import importlib
import os

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift, modules
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s import runner
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import OptionError
from testenv import REPO_ROOT

MODULE_PACKAGE = "ansible_collections.hypershift.private_capi.plugins.modules."
MODULES = sorted(name[:-3] for name in os.listdir(os.path.join(REPO_ROOT, "plugins", "modules"))
                 if name.endswith(".py") and not name.startswith("_"))
SHARED = ("hostedcluster_name", "hostedcluster_namespace", "hcp_namespace", "holder")
# the 1.0.0 names, each module's old name mapped to what it meant in that module
RENAMED = [
    ("capi_health", "namespace", "hcp_namespace"),
    ("capi_object_migrate", "namespace", "hcp_namespace"),
    ("capi_steady", "namespace", "hcp_namespace"),
    ("capi_verify", "name", "hostedcluster_name"),
    ("capi_verify", "namespace", "hostedcluster_namespace"),
    ("hcp_migrate_finish", "namespace", "hcp_namespace"),
    ("hcp_migrate_rollback", "namespace", "hcp_namespace"),
    ("hcp_migrate_window", "namespace", "hcp_namespace"),
    ("hcp_migrate_window", "hostedcontrolplane_name", "hostedcluster_name"),
    ("hcp_quiesce", "namespace", "hcp_namespace"),
    ("migration_state", "name", "hostedcluster_name"),
    ("migration_state", "namespace", "hostedcluster_namespace"),
]
# a namespace that is not the HostedCluster's: serving_certificate's is its Service's
OTHER_NAMESPACES = {"serving_certificate"}
# what each module needs besides the option under test to pass validation
REQUIRED = {
    "capi_health": {"kinds": []},
    "capi_steady": {"hostedcluster_name": "hc"},
    "capi_verify": {"hostedcluster_name": "hc"},
    "hcp_migrate_begin": {"hostedcluster_name": "hc", "holder": "run-1"},
    "hcp_migrate_finish": {"hostedcluster_name": "hc", "holder": "run-1"},
    "hcp_migrate_rollback": {"path": "rollback", "hostedcluster_name": "hc", "holder": "run-1"},
}


def argspec(module_name):
    return importlib.import_module(MODULE_PACKAGE + module_name).argspec()


@pytest.mark.parametrize("module_name", MODULES)
def test_every_module_names_the_hostedcluster_the_same_way(module_name):
    spec = argspec(module_name)
    old_names = {"name", "hostedcontrolplane_name"} | (set() if module_name in OTHER_NAMESPACES else {"namespace"})
    assert not old_names & set(spec), "%s still has an option named %s" % (module_name, old_names & set(spec))
    for option in set(SHARED) & set(spec):
        assert spec[option]["type"] == "str", (module_name, option)
        # any other name of the option is a 1.0.0 name kept for a release, deprecated
        deprecated = [alias["name"] for alias in spec[option].get("deprecated_aliases", [])]
        assert spec[option].get("aliases", []) == deprecated, (module_name, option)
    if "hcp_namespace" in spec and "hostedcluster_name" in spec:
        assert spec["hcp_namespace"].get("default") == "", "%s: hcp_namespace is derived from the HostedCluster"
    for option in ("hostedcluster_namespace", "hcp_namespace"):
        if option in spec and spec[option].get("default") is not None:
            assert spec[option]["default"] == getattr(modules, option.upper())["default"], (module_name, option)


def test_the_old_names_are_exactly_the_renamed_ones():
    found = sorted((module_name, alias["name"], option) for module_name in MODULES
                   for option, settings in argspec(module_name).items()
                   for alias in settings.get("deprecated_aliases", []))
    assert found == sorted(RENAMED)


def removal_version():
    """The next major release (ansible-test's validate-modules: removal-version-must-be-major): galaxy.yml's 1.0.0 is
    released, 1.1.0 deprecates, 2.0.0 removes."""
    with open(os.path.join(REPO_ROOT, "galaxy.yml")) as handle:
        major = yaml.safe_load(handle)["version"].split(".")[0]
    return "%d.0.0" % (int(major) + 1)


@pytest.mark.parametrize("module_name, old, new", RENAMED)
def test_an_old_name_still_works_and_warns(module_name, old, new):
    value = "clusters-hc" if "namespace" in old else "hc"
    parameters = dict(REQUIRED.get(module_name, {}), **{old: value})
    parameters.pop(new, None)
    result = ArgumentSpecValidator(argspec(module_name)).validate(parameters)
    assert not result.error_messages, result.error_messages
    assert result.validated_parameters[new] == value
    assert result._deprecations == [{
        "msg": "Alias '%s' is deprecated. See the module docs for more information" % old,
        "version": removal_version(), "date": None, "collection_name": "hypershift.private_capi"}]


@pytest.mark.parametrize("module_name, old, new", RENAMED)
def test_the_new_name_does_not_warn(module_name, old, new):
    parameters = dict(REQUIRED.get(module_name, {}), **{new: "clusters-hc" if "namespace" in new else "hc"})
    result = ArgumentSpecValidator(argspec(module_name)).validate(parameters)
    assert not result.error_messages and not result._deprecations


class FakeRun(object):
    """What runner.derive reads and notes (k8s/runner.py ModuleRun)."""

    def __init__(self, **params):
        self.params = params
        self.derived = {}


def derived(**params):
    run = FakeRun(**params)
    runner.derive(run, hypershift.HCP_NAMESPACE_DERIVED)
    return run


def test_an_empty_hcp_namespace_is_the_hostedclusters_by_the_one_rule():
    run = derived(hcp_namespace="", hostedcluster_name="prod.01", hostedcluster_namespace="clusters")
    # the services read the new names: nothing is added under a 1.0.0 name
    assert run.params == {"hcp_namespace": hypershift.hcp_namespace("clusters", "prod.01"),
                          "hostedcluster_name": "prod.01", "hostedcluster_namespace": "clusters"}
    assert run.derived == {"hcp_namespace": ("hostedcluster_namespace", "hostedcluster_name")}
    given = derived(hcp_namespace="elsewhere", hostedcluster_name="prod.01", hostedcluster_namespace="clusters")
    assert given.params["hcp_namespace"] == "elsewhere" and given.derived == {}


@pytest.mark.parametrize("module_name, old, new", RENAMED)
def test_a_value_given_under_an_old_name_reaches_the_service_under_the_new_one(module_name, old, new):
    value = "clusters-hc" if "namespace" in old else "hc"
    parameters = dict(REQUIRED.get(module_name, {}), **{old: value})
    parameters.pop(new, None)
    run = FakeRun(**ArgumentSpecValidator(argspec(module_name)).validate(parameters).validated_parameters)
    runner.derive(run, hypershift.HCP_NAMESPACE_DERIVED)
    assert run.params[new] == value


# the services of the renamed modules; serving_certificate's namespace (shim/) is an option of its own
SERVICE_PACKAGES = ("hcp", "move", "state", "fleet", "k8s")
OLD_KEYS = ('params["namespace"]', 'params["name"]', 'params["hostedcontrolplane_name"]', 'params.get("namespace")',
            'params.get("name")', 'params.get("hostedcontrolplane_name")', "(option namespace)", "(option name)")


@pytest.mark.parametrize("package", SERVICE_PACKAGES)
def test_no_service_reads_an_old_name(package):
    root = os.path.join(REPO_ROOT, "plugins", "module_utils", package)
    found = []
    for name in sorted(os.listdir(root)):
        if name.endswith(".py"):
            with open(os.path.join(root, name)) as handle:
                source = handle.read()
            found += ["%s/%s: %s" % (package, name, key) for key in OLD_KEYS if key in source]
    assert not found


def test_without_the_hcp_namespace_or_the_hostedcluster_the_module_fails_naming_both():
    with pytest.raises(OptionError) as failed:
        derived(hcp_namespace="", hostedcluster_name="", hostedcluster_namespace="clusters")
    assert str(failed.value).startswith("hcp_namespace is empty and so is hostedcluster_name: ")
