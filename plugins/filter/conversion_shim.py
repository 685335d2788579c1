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


def _shim_filter(filter_name, usage, service, doc):
    """A filter over the settings and the answers that runs one function of filters/shim_manifests.py."""
    @checked_arguments(filter_name, usage, AnsibleFilterError)
    def shim_filter(settings, answers=None):
        _check(filter_name, settings, answers, usage)
        try:
            return service(settings, answers)
        except shim_manifests.ShimSettingsError as error:
            raise AnsibleFilterError("%s: %s" % (filter_name, error))
    shim_filter.__name__ = filter_name
    shim_filter.__doc__ = doc
    return shim_filter


conversion_shim_manifests = _shim_filter(
    "conversion_shim_manifests", MANIFESTS_USAGE, shim_manifests.manifests,
    "The conversion shim's names, labels, objects to apply, Deployment and objects to remove.")
conversion_shim_outcome = _shim_filter(
    "conversion_shim_outcome", OUTCOME_USAGE, shim_manifests.outcome,
    "The conversion_shim role's judgement of its settings and its modules' answers, and its result.")


class FilterModule(object):
    def filters(self):
        return {"conversion_shim_manifests": conversion_shim_manifests,
                "conversion_shim_outcome": conversion_shim_outcome}
