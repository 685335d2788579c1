# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""How every message of the collection names an object: describe() and describe_object().

A leaf: it imports nothing, so that the translation core, the client layer, the state machine and the proxy all name
objects the same way without importing one another (issue 58, 2026-12-02: it left translate/groups.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def describe(kind, name=None, namespace=None):
    """'Kind namespace/name' for messages (or 'Kind name' when cluster-scoped, 'Kind in namespace ns' for a
    collection): the one way every message of the collection names an object."""
    if name is None:
        return kind if namespace is None else "%s in namespace %s" % (kind, namespace)
    return "%s %s/%s" % (kind, namespace, name) if namespace else "%s %s" % (kind, name)


def describe_object(obj, kind=None):
    """describe() of an object as read or given (kind, when given, wins over the object's own)."""
    if not hasattr(obj, "get") or isinstance(obj, (str, bytes)):
        return "%s %r" % (kind or type(obj).__name__, obj)
    metadata = obj.get("metadata")
    metadata = metadata if hasattr(metadata, "get") else {}
    return describe(kind or obj.get("kind") or "object", metadata.get("name") or metadata.get("generateName") or "<no name>",
                    metadata.get("namespace"))
