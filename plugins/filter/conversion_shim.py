# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters conversion_shim_manifests and conversion_shim_outcome (docs: the .yml files beside this file)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.hypershift.private_capi.plugins.module_utils.filters import shim_manifests
from ansible_collections.hypershift.private_capi.plugins.module_utils.filters.args import checked_arguments

MANIFESTS_USAGE = "{{ settings | hypershift.private_capi.conversion_shim_manifests(answers) }}"
OUTCOME_USAGE = "{{ settings | hypershift.private_capi.conversion_shim_outcome(answers) }}"


def _check(filter_name, settings, answers, usage):
    if not isinstance(settings, dict):
        raise AnsibleFilterError("%s: the input must be the settings mapping (the role's conversion_shim_settings), "
                                 "got %s; usage: %s" % (filter_name, type(settings).__name__, usage))
    if answers is not None and not isinstance(answers, dict):
        raise AnsibleFilterError("%s: answers must be a mapping of the registered module results (the role's "
                                 "conversion_shim_answers), got %s; usage: %s"
                                 % (filter_name, type(answers).__name__, usage))


@checked_arguments("conversion_shim_manifests", MANIFESTS_USAGE, AnsibleFilterError)
def conversion_shim_manifests(settings, answers=None):
    """The conversion shim's names, labels, objects to apply, Deployment and objects to remove."""
    _check("conversion_shim_manifests", settings, answers, MANIFESTS_USAGE)
    try:
        return shim_manifests.manifests(settings, answers)
    except shim_manifests.ShimSettingsError as error:
        raise AnsibleFilterError("conversion_shim_manifests: %s" % error)


@checked_arguments("conversion_shim_outcome", OUTCOME_USAGE, AnsibleFilterError)
def conversion_shim_outcome(settings, answers=None):
    """The conversion_shim role's judgement of its settings and its modules' answers, and its result."""
    _check("conversion_shim_outcome", settings, answers, OUTCOME_USAGE)
    try:
        return shim_manifests.outcome(settings, answers)
    except shim_manifests.ShimSettingsError as error:
        raise AnsibleFilterError("conversion_shim_outcome: %s" % error)


class FilterModule(object):
    def filters(self):
        return {"conversion_shim_manifests": conversion_shim_manifests,
                "conversion_shim_outcome": conversion_shim_outcome}
