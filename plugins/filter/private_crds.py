# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters private_crds_plan and private_crd_twin_problems (docs: the .yml files beside this file)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.hypershift.private_capi.plugins.module_utils.crds import role
from ansible_collections.hypershift.private_capi.plugins.module_utils.filters.args import checked_arguments, type_problem

PLAN_USAGE = "{{ settings | hypershift.private_capi.private_crds_plan(private_capi_shim_result | default({})) }}"
PROBLEMS_USAGE = "{{ crds | hypershift.private_capi.private_crd_twin_problems(extra_groups) }}"


@checked_arguments("private_crds_plan", PLAN_USAGE, AnsibleFilterError)
def private_crds_plan(settings, shim=None):
    """What the private_crds role passes to private_crd_render, and whether it deploys the shim first."""
    if not isinstance(settings, dict) or not (shim is None or isinstance(shim, dict)):
        raise AnsibleFilterError("private_crds_plan: settings and shim must be mappings, got %s and %s; usage: %s"
                                 % (type(settings).__name__, type(shim).__name__, PLAN_USAGE))
    try:
        return role.plan(settings, shim)
    except role.CrdsRoleError as error:
        raise AnsibleFilterError("private_crds_plan: %s" % error)


@checked_arguments("private_crd_twin_problems", PROBLEMS_USAGE, AnsibleFilterError)
def private_crd_twin_problems(crds, extra_groups=None, planned=None, check_mode=False):
    """Messages for the standard CAPI CRDs without a right private twin."""
    for name, value in (("the input must be the installed CRDs as read", crds),
                        ("planned must be the rendered CRDs (private_crd_render's crds)", planned or [])):
        if not isinstance(value, (list, tuple)) or not all(isinstance(crd, dict) for crd in value):
            raise AnsibleFilterError("private_crd_twin_problems: %s (a list of mappings), got %s; usage: %s"
                                     % (name, type(value).__name__, PROBLEMS_USAGE))
    problem = type_problem("private_crd_twin_problems", "check_mode", check_mode, bool, "true or false")
    if problem:
        raise AnsibleFilterError(problem)
    try:
        return role.twin_problems(crds, extra_groups, planned or (), check_mode)
    except role.CrdsRoleError as error:
        raise AnsibleFilterError("private_crd_twin_problems: %s" % error)


class FilterModule(object):
    def filters(self):
        return {"private_crds_plan": private_crds_plan, "private_crd_twin_problems": private_crd_twin_problems}
