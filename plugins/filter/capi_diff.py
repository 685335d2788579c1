# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter capi_diff (docs: capi_diff.yml beside this file)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.collections import is_sequence
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.diff import diff_objects
from ansible_collections.hypershift.private_capi.plugins.module_utils.filters.args import checked_arguments


@checked_arguments("capi_diff", "{{ before | hypershift.private_capi.capi_diff(after) }}, optionally limit=20",
                   AnsibleFilterError)
def capi_diff(before, after, limit=None):
    """Field-level differences from ``before`` to ``after`` (objects or lists of objects)."""
    for name, value in (("before", before), ("after", after)):
        if not isinstance(value, dict) and not is_sequence(value):
            raise AnsibleFilterError(
                "capi_diff: %s must be a Kubernetes object (mapping) or a list of objects, got %s" % (name, type(value).__name__)
            )
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise AnsibleFilterError("capi_diff: limit must be a positive integer, got %r" % (limit,))
    return diff_objects(before, after, limit=limit)


class FilterModule(object):
    def filters(self):
        return {"capi_diff": capi_diff}
