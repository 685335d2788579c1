"""The modules' documentation needs nothing but this collection (Galaxy and Automation Hub read the docs of the tarball
alone): every doc fragment is the collection's own, the authentication options are kubernetes.core's text carried
here, and every API module takes them, its requirements and its checks from one fragment (api_module). RETURN takes
no fragment in ansible-core (plugin_docs.get_docstring merges fragments into DOCUMENTATION only, and ansible-doc reads
RETURN as a literal from the source), so the entries every API module returns alike are copied into each module -
and held equal here."""
import collections
import importlib
import os

import pytest
import yaml

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec
from testenv import REPO_ROOT
from tests.unit.module_docs import fragment_doc

MODULE_PACKAGE = "ansible_collections.hypershift.private_capi.plugins.modules."
MODULES = sorted(name[:-3] for name in os.listdir(os.path.join(REPO_ROOT, "plugins", "modules"))
                 if name.endswith(".py") and not name.startswith("_"))
CORE_FRAGMENT = "ansible_collections.kubernetes.core.plugins.doc_fragments.k8s_auth_options"
# RETURN entries the runner adds to every API module's result (k8s/runner.py ModuleRun.tail), with what may differ
SHARED_RETURNS = ("lease_token", "api_calls", "elapsed_seconds")
# a module's own words after the shared description
DESCRIPTION_SUFFIXES = {("k8s_lists", "api_calls"): " (discovery not included)."}


def documentation(module_name):
    return yaml.safe_load(importlib.import_module(MODULE_PACKAGE + module_name).DOCUMENTATION)


def without_version_added(options):
    return {name: {key: value for key, value in option.items() if key != "version_added"}
            for name, option in options.items()}


def test_the_auth_options_are_kubernetes_cores_text_followed_by_the_checks_and_the_requirements():
    core = yaml.safe_load(importlib.import_module(CORE_FRAGMENT).ModuleDocFragment.DOCUMENTATION)
    ours = fragment_doc("hypershift.private_capi.api_module")
    assert ours["options"] == without_version_added(core["options"])
    assert ours["notes"][:1] == core["notes"]
    assert [note.split(" - ")[0] for note in ours["notes"][1:]] == [
        "Options holding a namespace, an object name or an API group are checked before any API call",
        "A kubeconfig that cannot be used fails the module before any API call, naming the file (or K8S_AUTH_KUBECONFIG,"
        " KUBECONFIG, C(~/.kube/config)) and what is wrong",
        "Where the module works in a namespace, that namespace must exist"]
    assert ours["requirements"] == ["python >= 3.9", "kubernetes >= 24.2.0", "PyYAML >= 3.11"]


def test_the_auth_fragment_documents_the_auth_argspec():
    options = fragment_doc("hypershift.private_capi.api_module")["options"]
    spec = auth_argspec()
    assert set(options) == set(spec)
    for name, option in options.items():
        assert option.get("type", "str") == spec[name].get("type", "str"), name
        assert sorted(option.get("aliases", [])) == sorted(spec[name].get("aliases", [])), name


@pytest.mark.parametrize("module_name", MODULES)
def test_every_fragment_is_the_collections_own(module_name):
    fragments = documentation(module_name).get("extends_documentation_fragment", [])
    assert [slug for slug in fragments if not slug.startswith("hypershift.private_capi.")] == []
    for slug in fragments:
        assert fragment_doc(slug) is not None, slug


@pytest.mark.parametrize("module_name", MODULES)
def test_requirements_come_from_the_fragment(module_name):
    doc = documentation(module_name)
    assert "requirements" not in doc, "%s: list its requirements with hypershift.private_capi.api_module" % module_name
    fragments = doc.get("extends_documentation_fragment", [])
    if "kubeconfig" in importlib.import_module(MODULE_PACKAGE + module_name).argspec():
        assert fragments[0].split(".")[2] == "api_module", module_name


def test_the_shared_return_entries_say_the_same_in_every_module():
    found = collections.defaultdict(dict)
    for module_name in MODULES:
        returns = yaml.safe_load(importlib.import_module(MODULE_PACKAGE + module_name).RETURN)
        for key in SHARED_RETURNS:
            if key in returns:
                entry = dict(returns[key])
                if isinstance(entry["description"], list):
                    entry["description"] = " ".join(entry["description"])
                suffix = DESCRIPTION_SUFFIXES.get((module_name, key))
                if suffix:
                    assert entry["description"].endswith(suffix)
                    entry["description"] = entry["description"][:-len(suffix)] + "."
                found[key][module_name] = (entry["description"], entry["type"])
    assert set(found) == set(SHARED_RETURNS)
    for key, by_module in found.items():
        assert len(set(by_module.values())) == 1, (key, by_module)
