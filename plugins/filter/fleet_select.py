# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters capi_fleet_candidates, capi_fleet_select, capi_fleet_batches and capi_fleet_budget (docs: the .yml files beside
this file)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.hypershift.private_capi.plugins.module_utils.fleet import selection
from ansible_collections.hypershift.private_capi.plugins.module_utils.filters.args import checked_arguments

CANDIDATES_USAGE = ("{{ query_result | hypershift.private_capi.capi_fleet_candidates(inventory_hostname) }} or "
                    "{{ ansible_play_hosts | map('extract', hostvars) | hypershift.private_capi.capi_fleet_candidates }}")
SELECT_USAGE = "{{ candidates | hypershift.private_capi.capi_fleet_select({'run_id': run_id, 'serial': 5}) }}"
BUDGET_USAGE = ("{{ ansible_play_batch | map('extract', hostvars) | map(attribute='private_capi_migrate_result', "
                "default={}) | hypershift.private_capi.capi_fleet_budget(private_capi_fleet_max_fail_percentage) }}")
BATCHES_USAGE = "{{ private_capi_fleet_canary | hypershift.private_capi.capi_fleet_batches(private_capi_fleet_serial) }}"


@checked_arguments("capi_fleet_candidates", CANDIDATES_USAGE, AnsibleFilterError)
def capi_fleet_candidates(found, management_cluster=None, kubeconfig=None, context=None, crds_installed=False):
    """The candidates of one management cluster (a migration_state query result) or of inventory hosts (their vars)."""
    try:
        if isinstance(found, Mapping):
            if management_cluster is None or "hostedclusters" not in found:
                raise AnsibleFilterError("capi_fleet_candidates: a mapping input must be a migration_state query result "
                                         "(with hostedclusters), and management_cluster is needed; usage: %s"
                                         % CANDIDATES_USAGE)
            return selection.candidates(found, management_cluster, kubeconfig, context, crds_installed)
        hosts = list(found) if not isinstance(found, (str, bytes)) else None
        if hosts is None or not all(isinstance(host, Mapping) for host in hosts):
            raise AnsibleFilterError("capi_fleet_candidates: the input must be a migration_state query result or a list "
                                     "of hosts' variables, got %s; usage: %s" % (type(found).__name__, CANDIDATES_USAGE))
        return selection.host_candidates(hosts)
    except (KeyError, TypeError) as error:
        raise AnsibleFilterError("capi_fleet_candidates: %r is missing from the input (hosts of the "
                                 "hypershift.private_capi.hostedclusters inventory plugin carry it); usage: %s"
                                 % (error.args[0] if error.args else error, CANDIDATES_USAGE))


@checked_arguments("capi_fleet_select", SELECT_USAGE, AnsibleFilterError)
def capi_fleet_select(candidates, criteria):
    """The run's selection: selected, keys, not_selected and the plan lines."""
    if not isinstance(candidates, (list, tuple)) or not isinstance(criteria, Mapping):
        raise AnsibleFilterError("capi_fleet_select: the input must be a list of candidates and criteria a mapping, got "
                                 "%s and %s; usage: %s" % (type(candidates).__name__, type(criteria).__name__, SELECT_USAGE))
    try:
        return selection.select(candidates, dict(criteria))
    except selection.SelectionError as error:
        raise AnsibleFilterError("capi_fleet_select: %s" % error)


@checked_arguments("capi_fleet_batches", BATCHES_USAGE, AnsibleFilterError)
def capi_fleet_batches(canary, serial=1):
    """The migrate play's serial (a canary batch first when asked for)."""
    try:
        return selection.batches(canary, serial)
    except (selection.SelectionError, ValueError, TypeError) as error:
        raise AnsibleFilterError("capi_fleet_batches: %s; usage: %s" % (error, BATCHES_USAGE))


@checked_arguments("capi_fleet_budget", BUDGET_USAGE, AnsibleFilterError)
def capi_fleet_budget(results, max_fail_percentage=100):
    """Whether the fleet run stops after this batch, and why."""
    if not isinstance(results, (list, tuple)):
        raise AnsibleFilterError("capi_fleet_budget: the input must be the list of the batch's records, got %s; usage: %s"
                                 % (type(results).__name__, BUDGET_USAGE))
    try:
        return selection.budget(results, max_fail_percentage)
    except (ValueError, TypeError) as error:
        raise AnsibleFilterError("capi_fleet_budget: max_fail_percentage %r is not a number (%s); usage: %s"
                                 % (max_fail_percentage, error, BUDGET_USAGE))


class FilterModule(object):
    def filters(self):
        return {"capi_fleet_candidates": capi_fleet_candidates, "capi_fleet_select": capi_fleet_select,
                "capi_fleet_batches": capi_fleet_batches, "capi_fleet_budget": capi_fleet_budget}
