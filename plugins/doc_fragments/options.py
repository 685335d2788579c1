# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Options several API modules share, documented once (their specs: module_utils/k8s/args.py)."""

    DOCUMENTATION = r"""
options: {}
"""

    # hypershift.private_capi.options.extra_groups: args.extra_groups_option() (default nothing extra)
    EXTRA_GROUPS = r"""
options:
  extra_groups:
    description:
      - "Extra standard -> private group pairs for providers outside the C(*.cluster.x-k8s.io) pattern, for example
        C({capi-provider.agent-install.openshift.io: capi-provider.agent-install.hypershift.openshift.io}) for the
        Agent provider (see the examples). Their resources are then handled like those of the CAPI groups."
      - A private group may not fall inside C(*.cluster.hypershift.openshift.io) (it would collide with the pattern).
    type: dict
    default: {}
"""

    # hypershift.private_capi.options.parallelism: args.parallelism_option() (default 8)
    PARALLELISM = r"""
options:
  parallelism:
    description:
      - At most this many requests in flight (and keep-alive connections) at a time; 1 or more.
    type: int
    default: 8
"""
