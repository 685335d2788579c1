"""Shared pytest set-up: make the collection importable by its FQCN path.

`make venv` links the checkout into .collections/ansible_collections/hypershift/private_capi;
putting .collections on sys.path lets tests import
`ansible_collections.hypershift.private_capi.plugins...` exactly as Ansible does.
"""
import os
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS_ROOT = os.path.join(REPO_ROOT, ".collections")
SHARED_ROOT = os.path.abspath(os.environ.get("PRIVATE_CAPI_SHARED", os.path.join(REPO_ROOT, "..", "shared")))

if not os.path.isdir(os.path.join(COLLECTIONS_ROOT, "ansible_collections", "hypershift", "private_capi")):
    raise RuntimeError("run `make venv` first: the collection link under .collections/ is missing")
for path in (COLLECTIONS_ROOT, REPO_ROOT):
    if path not in sys.path:
        sys.path.insert(0, path)
if not os.path.isdir(os.path.join(SHARED_ROOT, "capi", "crds")):
    raise RuntimeError("../shared (CAPI and HyperShift data) is missing beside the checkout: %s" % SHARED_ROOT)
