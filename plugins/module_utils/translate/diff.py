# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Field-level differences between two Kubernetes objects (pure Python, no Ansible imports).

Used to show what a translation or conversion changed and, by the migration, to prove that a copy
equals its source. Paths use the kubectl/JSONPath-like form ``spec.template.spec.infrastructureRef.apiVersion``
with ``[i]`` for list indexes; keys that contain dots are written as ``["cluster.x-k8s.io/paused"]``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

_MISSING = object()


def _json_kind(value):
    """The JSON type of a value; subclasses (Ansible's tagged str/int) count as their base type."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def _child_path(path, key):
    if isinstance(key, int):
        return "%s[%d]" % (path, key)
    if "." in key or "[" in key or "/" in key:
        return '%s["%s"]' % (path, key)
    return key if not path else "%s.%s" % (path, key)


def _walk(before, after, path, changes, limit):
    if limit is not None and len(changes) >= limit:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            _walk(before.get(key, _MISSING), after.get(key, _MISSING), _child_path(path, key), changes, limit)
        return
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (left, right) in enumerate(zip(before, after)):
            _walk(left, right, _child_path(path, index), changes, limit)
        return
    if before is _MISSING and after is _MISSING:
        return
    if _json_kind(before) == _json_kind(after) and before == after:
        return
    changes.append({
        "path": path or ".",
        "before": None if before is _MISSING else before,
        "after": None if after is _MISSING else after,
        "change": "added" if before is _MISSING else "removed" if after is _MISSING else "changed",
    })


def diff_objects(before, after, limit=None):
    """Return the leaf differences from ``before`` to ``after``, sorted by path, at most ``limit``.

    Each entry is ``{"path", "before", "after", "change"}`` with change one of added/removed/changed.
    Lists of different lengths are reported as one change of the whole list. ``True`` and ``1``
    differ (JSON types differ) even though Python compares them equal.
    """
    changes = []
    _walk(before, after, "", changes, limit)
    return changes
