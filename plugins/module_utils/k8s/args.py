# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The option specs the collection's API modules share, and the checks an argument spec cannot express.

A module's ``argspec()`` starts from ``auth_argspec()`` (kubernetes.core's authentication options) and adds its
own options with ``parallelism_option()`` and ``extra_groups_option()``; constraints between options go into the
AnsibleModule call (mutually_exclusive, required_if, required_by). What the spec cannot say - a number's lower
bound - is checked by ``minimum_problems`` in the runner, before any API call, with the option named.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC


def auth_argspec():
    """kubernetes.core's authentication options (a deep copy each call, safe to extend)."""
    return copy.deepcopy(AUTH_ARG_SPEC)


def parallelism_option(default=8):
    """O(parallelism): requests in flight at once; at least 1 (PARALLELISM_MINIMUM, checked by the runner)."""
    return dict(type="int", default=default)


def extra_groups_option(default=None):
    """O(extra_groups): standard -> private group pairs outside the *.cluster.x-k8s.io pattern.

    default: {} (nothing extra) or the translation core's AGENT_EXTRA_GROUPS (a module that reads every provider a
    HostedCluster may use); a copy, so that no module shares (or mutates) the core's constant.
    """
    return dict(type="dict", default=dict(default or {}))


def copy_argspec():
    """auth_argspec() with O(parallelism) and O(extra_groups) (nothing extra): the modules that copy or judge the
    objects of both groups (doc fragments hypershift.private_capi.options.extra_groups and .parallelism)."""
    spec = auth_argspec()
    spec.update(parallelism=parallelism_option(), extra_groups=extra_groups_option())
    return spec


PARALLELISM_MINIMUM = {"parallelism": 1}


def minimum_problems(params, minimums):
    """'option must be N or more, got M' for each option of minimums ({option: N}) below its minimum."""
    return ["%s must be %d or more, got %d" % (option, minimum, params[option])
            for option, minimum in minimums.items() if params.get(option) is not None and params[option] < minimum]
