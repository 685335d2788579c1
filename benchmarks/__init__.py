"""Benchmarks for `make bench`; importing this package makes the collection importable by FQCN."""
import os
import sys

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _path in (os.path.join(_REPO_ROOT, ".collections"), _REPO_ROOT):
    if _path not in sys.path:
        sys.path.insert(0, _path)
