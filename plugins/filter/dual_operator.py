# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters dual_operator_plan and dual_operator_cleanup (docs: the .yml files beside this file)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.hypershift.private_capi.plugins.module_utils.filters import dual_operator
from ansible_collections.hypershift.private_capi.plugins.module_utils.filters.args import checked_arguments

PLAN_USAGE = "{{ deployments | hypershift.private_capi.dual_operator_plan(hostedclusters, settings) }}"
CLEANUP_USAGE = "{{ hostedclusters | hypershift.private_capi.dual_operator_cleanup(settings) }}"


def _check_settings(filter_name, settings, usage):
    if not isinstance(settings, dict):
        raise AnsibleFilterError("%s: settings must be a mapping (the role's dual_operator_settings), got %s; usage: %s"
                                 % (filter_name, type(settings).__name__, usage))


@checked_arguments("dual_operator_plan", PLAN_USAGE, AnsibleFilterError)
def dual_operator_plan(deployments, hostedclusters, settings):
    """What the dual_operator role's state=present has to do, from the Deployments and HostedClusters read."""
    _check_settings("dual_operator_plan", settings, PLAN_USAGE)
    try:
        return dual_operator.present_plan(deployments, hostedclusters, settings)
    except dual_operator.DualOperatorInputError as error:
        raise AnsibleFilterError("dual_operator_plan: %s; usage: %s" % (error, PLAN_USAGE))


@checked_arguments("dual_operator_cleanup", CLEANUP_USAGE, AnsibleFilterError)
def dual_operator_cleanup(hostedclusters, settings):
    """What the dual_operator role's state=cleanup has to do, from the HostedClusters not labelled migrated."""
    _check_settings("dual_operator_cleanup", settings, CLEANUP_USAGE)
    try:
        return dual_operator.cleanup_plan(hostedclusters, settings)
    except dual_operator.DualOperatorInputError as error:
        raise AnsibleFilterError("dual_operator_cleanup: %s; usage: %s" % (error, CLEANUP_USAGE))


class FilterModule(object):
    def filters(self):
        return {"dual_operator_plan": dual_operator_plan, "dual_operator_cleanup": dual_operator_cleanup}
