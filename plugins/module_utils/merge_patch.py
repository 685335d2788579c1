# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""JSON merge patch (RFC 7386), written once for the API proxy's version adaptation and hcp_quiesce. Pure: no I/O,
no Ansible, inputs never mutated."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch applied to a copy of target (None removes a key; lists are replaced whole)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
