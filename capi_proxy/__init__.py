"""capi_proxy: the translating Kubernetes API proxy and the conversion webhook shim.

Clients keep speaking cluster.x-k8s.io while the API server holds the private
cluster.hypershift.openshift.io types. All translation and conversion logic lives in the
collection's module_utils (capi_groups, capi_versions); this package only moves bytes.
`python -m capi_proxy --help` and docs/proxy.md describe the command line.
"""
import os
import sys

__version__ = "0.1.0"

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_COLLECTIONS_ROOT = os.path.join(_REPO_ROOT, ".collections")


def _ensure_collection_importable():
    """Use the installed collection; else the checkout's .collections link (`make venv` creates it)."""
    try:
        import ansible_collections.hypershift.private_capi.plugins.module_utils.capi_groups  # noqa: F401 pylint: disable=unused-import
        return
    except ImportError:
        pass
    if os.path.isdir(os.path.join(_COLLECTIONS_ROOT, "ansible_collections", "hypershift", "private_capi")):
        sys.path.insert(0, _COLLECTIONS_ROOT)
        for name in [module for module in sys.modules if module.startswith("ansible_collections")]:
            del sys.modules[name]  # a namespace package cached before the path was added
        return
    raise ImportError(
        "capi_proxy needs the hypershift.private_capi collection: install it (ansible-galaxy collection install) "
        "or run `make venv` in the checkout so that %s exists" % os.path.join(_COLLECTIONS_ROOT, "ansible_collections")
    )


_ensure_collection_importable()
