# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of hypershift.private_capi.k8s_objects (documented in plugins/modules/k8s_objects.py): the module's run in the
controller's worker process when the connection is local, as a module process otherwise (plugin_utils/in_process.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.modules import k8s_objects
from ansible_collections.hypershift.private_capi.plugins.plugin_utils.in_process import InProcessAction


class ActionModule(InProcessAction):
    MODULE = k8s_objects
