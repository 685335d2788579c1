"""The proxy's package (pyproject.toml) and image follow the collection: one version (galaxy.yml's) for the package,
the image tag and the api_proxy role's default image; the package holds every module of the collection the proxy
imports and declares every distribution it imports (tests/integration/collection/test_proxy_package.py installs it
from the built tarball)."""
import ast
import os
import re
import sys
import tomllib

import yaml

import capi_proxy
from testenv import REPO_ROOT

COLLECTION_PREFIX = "ansible_collections.hypershift.private_capi."
# import name -> distribution name, where they differ
DISTRIBUTIONS = {"yaml": "pyyaml", "prometheus_client": "prometheus-client"}


def _yaml(*parts):
    with open(os.path.join(REPO_ROOT, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _pyproject():
    with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as handle:
        return tomllib.load(handle)


GALAXY_VERSION = _yaml("galaxy.yml")["version"]


def test_package_version_is_the_collection_version():
    project = _pyproject()
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "capi_proxy.__version__"}
    assert capi_proxy.__version__ == GALAXY_VERSION, "capi_proxy.__version__ (the package's version) %s, galaxy.yml's %s" % (
        capi_proxy.__version__, GALAXY_VERSION)


def test_console_script_is_the_module_entry_point():
    assert _pyproject()["project"]["scripts"] == {"capi-proxy": "capi_proxy.__main__:main"}


def test_role_default_image_is_pinned_to_the_collection_version():
    expected = "quay.io/hypershift/capi-proxy:%s" % GALAXY_VERSION
    default = _yaml("roles", "api_proxy", "defaults", "main.yml")["private_capi_proxy_image"]
    assert default == expected, "roles/api_proxy/defaults/main.yml: %s, galaxy.yml's version: %s" % (default, expected)
    spec = _yaml("roles", "api_proxy", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    documented = spec["private_capi_proxy_image"]["default"]
    assert documented == expected, "roles/api_proxy/meta/argument_specs.yml: %s, want %s" % (documented, expected)


def _source(module):
    """The file of capi_proxy.x or ansible_collections.hypershift.private_capi.x in the checkout."""
    if module.startswith(COLLECTION_PREFIX):
        parts = module[len(COLLECTION_PREFIX):].split(".")
    else:
        parts = module.split(".")
    path = os.path.join(REPO_ROOT, *parts)
    return path + ".py" if os.path.isfile(path + ".py") else os.path.join(path, "__init__.py")


def _imports(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module


def _closure():
    """Every collection module the proxy's modules import (transitively) and every other top-level import."""
    proxy_dir = os.path.join(REPO_ROOT, "capi_proxy")
    pending = [os.path.join(proxy_dir, name) for name in sorted(os.listdir(proxy_dir)) if name.endswith(".py")]
    seen, collection, external = set(pending), set(), set()
    while pending:
        for name in _imports(pending.pop()):
            if name.startswith(COLLECTION_PREFIX):
                collection.add(name)
                path = _source(name)
                assert os.path.isfile(path), "%s imports %s: no such file %s" % (proxy_dir, name, path)
                if path not in seen:
                    seen.add(path)
                    pending.append(path)
            elif name.split(".")[0] not in ("capi_proxy", "ansible_collections"):
                external.add(name.split(".")[0])
    return collection, external


def test_package_holds_every_collection_module_the_proxy_imports():
    setuptools = _pyproject()["tool"]["setuptools"]
    packaged = set(setuptools["packages"]) | set(setuptools["py-modules"])
    collection = _closure()[0]
    assert collection, "the proxy no longer imports the collection's core?"
    missing = sorted(name for name in collection if name not in packaged and name.rpartition(".")[0] not in packaged)
    assert not missing, "pyproject.toml [tool.setuptools] packages/py-modules miss %s" % missing
    for name in packaged:
        if name.startswith(COLLECTION_PREFIX):  # mapped to its directory of the source tree: one copy of the code
            parent = name.rpartition(".")[0] if name in setuptools["py-modules"] else name
            assert any(parent == key or parent.startswith(key + ".") for key in setuptools["package-dir"]), name


def test_package_declares_every_distribution_the_proxy_imports():
    external = _closure()[1]
    third_party = external - set(sys.stdlib_module_names)
    assert "ansible" not in third_party, "the proxy must run without ansible-core"
    declared = {re.split(r"[<>=!~ ;\[]", requirement, maxsplit=1)[0].lower()
                for requirement in _pyproject()["project"]["dependencies"]}
    missing = sorted(name for name in third_party if DISTRIBUTIONS.get(name, name) not in declared)
    assert not missing, "pyproject.toml dependencies miss %s" % missing
