# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters fleet_record, fleet_outcome, fleet_mark, fleet_run_id, fleet_rollback_summary, fleet_preinstall_summary,
migrate_strategy (docs: the
.yml files beside this file)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.hypershift.private_capi.plugins.module_utils.filters.args import checked_arguments, type_problem
from ansible_collections.hypershift.private_capi.plugins.module_utils.fleet.record import (
    OUTCOMES, RECORDS, mark, outcome, preinstall_summary, record, rollback_summary, run_id)
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.strategy import StrategyError, strategy_steps

RESULTS_USAGE = "{{ migrate_results | hypershift.private_capi.%s('migrate') }}"


def _check(problem):
    if problem:
        raise AnsibleFilterError(problem)


def _check_results(filter_name, results, kind, kinds):
    _check(type_problem(filter_name, "the input", results, dict, "the role's module results (a mapping)"))
    if kind not in kinds:
        raise AnsibleFilterError("%s: kind must be one of %s, got %r" % (filter_name, ", ".join(sorted(kinds)), kind))
    if not isinstance(results.get("identity"), dict):
        raise AnsibleFilterError("%s: the results have no identity (management_cluster, namespace, name, hcp_namespace, "
                                 "run_id); usage: %s" % (filter_name, RESULTS_USAGE % filter_name))


@checked_arguments("fleet_record", RESULTS_USAGE % "fleet_record", AnsibleFilterError)
def fleet_record(results, kind="migrate"):
    _check_results("fleet_record", results, kind, RECORDS)
    return record(results, kind)


@checked_arguments("fleet_outcome", RESULTS_USAGE % "fleet_outcome", AnsibleFilterError)
def fleet_outcome(results, kind="migrate"):
    _check_results("fleet_outcome", results, kind, OUTCOMES)
    return outcome(results, kind)


@checked_arguments("fleet_mark", "{{ 'pause' | hypershift.private_capi.fleet_mark }}", AnsibleFilterError)
def fleet_mark(name):
    _check(type_problem("fleet_mark", "the input", name, str, "the phase name (a string)"))
    return mark(name)


@checked_arguments("fleet_run_id", "{{ 'fleet' | hypershift.private_capi.fleet_run_id }}", AnsibleFilterError)
def fleet_run_id(prefix, suffix_length=6):
    _check(type_problem("fleet_run_id", "the input", prefix, str, "the prefix (a string)"))
    _check(type_problem("fleet_run_id", "suffix_length", suffix_length, int, "a number of characters (an integer)"))
    return run_id(prefix, suffix_length)


@checked_arguments("fleet_rollback_summary", "{{ records | hypershift.private_capi.fleet_rollback_summary(hosts, run_id, "
                   "ansible_check_mode) }}", AnsibleFilterError)
def fleet_rollback_summary(records, hosts, run_id, check_mode=False):
    _check_summary_records("fleet_rollback_summary", records, hosts, run_id, check_mode, "rollback")
    return rollback_summary(records, hosts, run_id, check_mode)


def _check_summary_records(filter_name, records, hosts, run_id, check_mode, kind):
    _check(type_problem(filter_name, "the input", records, list, "the hosts' %s records (a list)" % kind))
    _check(type_problem(filter_name, "hosts", hosts, list, "the hosts of the records (a list)"))
    _check(type_problem(filter_name, "run_id", run_id, str, "the run id (a string)"))
    _check(type_problem(filter_name, "check_mode", check_mode, bool, "true or false"))
    for index, entry in enumerate(records):
        _check(type_problem(filter_name, "record %d" % index, entry, dict, "a %s record (a mapping)" % kind))
        if "status" not in entry:
            raise AnsibleFilterError("%s: record %d has no status (a %s record, or {'status': 'not run'})"
                                     % (filter_name, index, kind))


@checked_arguments("fleet_preinstall_summary",
                   "{{ records | hypershift.private_capi.fleet_preinstall_summary(hosts, run_id, ansible_check_mode) }}",
                   AnsibleFilterError)
def fleet_preinstall_summary(records, hosts, run_id, check_mode=False):
    _check_summary_records("fleet_preinstall_summary", records, hosts, run_id, check_mode, "pre-install")
    return preinstall_summary(records, hosts, run_id, check_mode)


@checked_arguments("migrate_strategy", "{{ private_capi_migrate_strategy | hypershift.private_capi.migrate_strategy }}",
                   AnsibleFilterError)
def migrate_strategy(strategy):
    _check(type_problem("migrate_strategy", "the input", strategy, str, "zero_stop or scale_down"))
    try:
        return strategy_steps(strategy)
    except StrategyError as error:
        raise AnsibleFilterError("migrate_strategy: %s" % error)


class FilterModule(object):
    def filters(self):
        return {"fleet_record": fleet_record, "fleet_outcome": fleet_outcome, "fleet_mark": fleet_mark,
                "fleet_run_id": fleet_run_id, "fleet_rollback_summary": fleet_rollback_summary,
                "fleet_preinstall_summary": fleet_preinstall_summary, "migrate_strategy": migrate_strategy}
