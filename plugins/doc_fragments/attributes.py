# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Attributes several modules share, documented once."""

    DOCUMENTATION = r"""
options: {}
"""

    # hypershift.private_capi.attributes.read_only: modules that only read (capi_health, capi_steady, capi_verify,
    # conversion_webhook_users, k8s_lists)
    READ_ONLY = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode and predict changed status without modifying the cluster.
    support: full
    details: The module only reads; it runs the same in check mode.
  diff_mode:
    description: Returns details on what changed (or would change in check mode).
    support: none
    details: Nothing changes.
"""

    # hypershift.private_capi.attributes.write: modules that write and support check mode and diff mode in full (each
    # adds its own details)
    WRITE = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode and predict changed status without modifying the cluster.
    support: full
  diff_mode:
    description: Returns details on what changed (or would change in check mode).
    support: full
"""

    # hypershift.private_capi.attributes.controller: modules that run as an action plugin and write files on the
    # controller (controller_files, fleet_report_files)
    CONTROLLER = r"""
options: {}
attributes:
  action:
    description: Runs as an action plugin on the controller.
    support: full
notes:
  - The files are always written on the controller, never on the task's host.
"""
