# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """What the API modules need on the managed node, written once (ansible-core merges the requirements of a
    module's fragments)."""

    # hypershift.private_capi.requirements: every module that talks to the API server (kubernetes.core's client, and
    # PyYAML, which its AnsibleK8SModule requires)
    DOCUMENTATION = r"""
options: {}
requirements:
  - python >= 3.9
  - kubernetes >= 24.2.0
  - PyYAML >= 3.11
"""

    # hypershift.private_capi.requirements.cryptography: modules that make certificates
    CRYPTOGRAPHY = r"""
options: {}
requirements:
  - cryptography >= 42.0
"""
