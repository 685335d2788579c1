"""The built collection tarball alone installs the proxy (its pyproject.toml) into a fresh venv, with no ansible-core
and nothing of the checkout: `capi-proxy` and `capi-proxy shim` run, the version is galaxy.yml's."""
import json
import os
import sys
import tarfile
import textwrap

import pytest
import yaml

from testenv import REPO_ROOT
from tests.integration.collection.test_collection_build import BIN, _run

pytestmark = pytest.mark.slow

# What the fresh venv may hold of the collection: the module_utils the proxy imports, nothing else.
MODULE_UTILS = "ansible_collections/hypershift/private_capi/plugins/module_utils/"


def _fresh_venv(path, env):
    """uv (installed by make venv: a second, warm cache) where it is, else the stdlib venv and pip."""
    uv = os.path.join(BIN, "uv")
    if os.path.isfile(uv):
        _run([uv, "venv", "--quiet", "--python", sys.executable, str(path)], cwd=str(path.parent), env=env)
        return lambda target: [uv, "pip", "install", "--quiet", "--python", str(path / "bin" / "python"), target]
    _run([sys.executable, "-m", "venv", str(path)], cwd=str(path.parent), env=env)
    python = str(path / "bin" / "python")
    return lambda target: [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", target]


def test_built_tarball_installs_the_proxy_package_alone(tmp_path):
    with open(os.path.join(REPO_ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        version = str(yaml.safe_load(handle)["version"])
    build_dir = tmp_path / "build"
    _run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(build_dir), REPO_ROOT],
         cwd=REPO_ROOT)
    tarball = build_dir / ("hypershift-private_capi-%s.tar.gz" % version)
    extracted = tmp_path / "collection"
    with tarfile.open(tarball) as tar:
        shipped = set(tar.getnames())
        assert {"pyproject.toml", "capi_proxy/__main__.py", "plugins/module_utils/merge_patch.py"} <= shipped
        tar.extractall(extracted, filter="data")

    # Nothing of the checkout or its venv: no PYTHONPATH, no ANSIBLE_* settings, run outside the checkout.
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("ANSIBLE_", "PYTHON", "VIRTUAL_ENV", "UV_PYTHON"))}
    venv = tmp_path / "venv"
    install = _fresh_venv(venv, env)
    _run(install(str(extracted)), cwd=str(tmp_path), env=env)

    script = venv / "bin" / "capi-proxy"
    proxy_help = _run([str(script), "--help"], cwd=str(tmp_path), env=env).stdout
    assert "--kubeconfig" in proxy_help and "--use-own-credentials" in proxy_help, proxy_help
    shim_help = _run([str(script), "shim", "--help"], cwd=str(tmp_path), env=env).stdout
    assert "--tls-cert" in shim_help and "--delegate-url" in shim_help, shim_help

    probe = textwrap.dedent("""\
        import importlib, importlib.metadata, importlib.util, json, pkgutil
        import capi_proxy
        modules = [m.name for m in pkgutil.iter_modules(capi_proxy.__path__, "capi_proxy.")]
        for name in modules:
            importlib.import_module(name)
        from ansible_collections.hypershift.private_capi.plugins.module_utils.translate import groups
        files = importlib.metadata.files("hypershift-capi-proxy")
        print(json.dumps({
            "version": importlib.metadata.version("hypershift-capi-proxy"), "module_version": capi_proxy.__version__,
            "modules": modules, "proxy_file": capi_proxy.__file__, "core_file": groups.__file__,
            "ansible": importlib.util.find_spec("ansible") is not None,
            "collection_files": sorted(str(f) for f in files if str(f).startswith("ansible_collections/")),
        }))
        """)
    found = json.loads(_run([str(venv / "bin" / "python"), "-c", probe], cwd=str(tmp_path), env=env).stdout)
    assert found["version"] == found["module_version"] == version, found
    assert len(found["modules"]) > 10, found["modules"]
    for key in ("proxy_file", "core_file"):  # the installed copies, not the checkout's
        assert found[key].startswith(str(venv)), found
    assert not found["ansible"], "the proxy package pulled in ansible-core"
    assert found["collection_files"] and all(name.startswith(MODULE_UTILS) for name in found["collection_files"]), found
