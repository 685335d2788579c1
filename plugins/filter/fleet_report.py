# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters fleet_report, fleet_report_markdown, fleet_report_summary, fleet_report_root, fleet_unknown_reason (docs:
the .yml files beside this file)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.hypershift.private_capi.plugins.module_utils.filters.args import checked_arguments, type_problem
from ansible_collections.hypershift.private_capi.plugins.module_utils.fleet.report import (
    FleetReportError, build_report, report_markdown, report_root, report_summary, unknown_reason)

REPORT_USAGE = "{{ records | hypershift.private_capi.fleet_report('run-1') | hypershift.private_capi.%s }}"
# what fleet_report_markdown and fleet_report_summary read of a report
REPORT_KEYS = ("run_id", "check_mode", "totals", "clusters_total", "wall_seconds", "clusters")


def _check(problem):
    if problem:
        raise AnsibleFilterError(problem)


def _check_report(filter_name, report):
    _check(type_problem(filter_name, "the input", report, dict, "the report fleet_report returns (a mapping)"))
    missing = [key for key in REPORT_KEYS if key not in report]
    if missing:
        raise AnsibleFilterError("%s: the input is not a report of fleet_report (missing %s); usage: %s"
                                 % (filter_name, ", ".join(missing), REPORT_USAGE % filter_name))


@checked_arguments("fleet_report", "{{ records | hypershift.private_capi.fleet_report('run-1') }}", AnsibleFilterError)
def fleet_report(records, run_id, check_mode=False):
    if not isinstance(records, list):
        raise AnsibleFilterError("fleet_report: expected a list of migrate records, got %s" % type(records).__name__)
    for index, record in enumerate(records):
        _check(type_problem("fleet_report", "record %d" % index, record, dict, "a migrate record (a mapping)"))
    _check(type_problem("fleet_report", "run_id", run_id, str, "the run id (a string)"))
    _check(type_problem("fleet_report", "check_mode", check_mode, bool, "true or false"))
    try:
        return build_report(records, run_id, check_mode=check_mode)
    except FleetReportError as error:
        raise AnsibleFilterError("fleet_report: %s" % error)


@checked_arguments("fleet_report_markdown", REPORT_USAGE % "fleet_report_markdown", AnsibleFilterError)
def fleet_report_markdown(report):
    _check_report("fleet_report_markdown", report)
    return report_markdown(report)


@checked_arguments("fleet_report_summary", REPORT_USAGE % "fleet_report_summary" + ", optionally report_path='reports/run-1'",
                   AnsibleFilterError)
def fleet_report_summary(report, report_path=""):
    _check_report("fleet_report_summary", report)
    _check(type_problem("fleet_report_summary", "report_path", report_path, str, "a path (a string)"))
    return report_summary(report, report_path)


@checked_arguments("fleet_report_root", "{{ private_capi_fleet_report_root | hypershift.private_capi.fleet_report_root("
                   "ansible_check_mode) }}", AnsibleFilterError)
def fleet_report_root(root, check_mode=False, in_check_mode=False):
    _check(None if root is None else type_problem("fleet_report_root", "the input", root, str,
                                                  "a directory (a string, or none for the default)"))
    _check(type_problem("fleet_report_root", "check_mode", check_mode, bool, "true or false"))
    _check(type_problem("fleet_report_root", "in_check_mode", in_check_mode, bool, "true or false"))
    return report_root(root, check_mode, in_check_mode)


@checked_arguments("fleet_unknown_reason", "{{ run_id | hypershift.private_capi.fleet_unknown_reason(failed_task, "
                   "error, locked=..., status=..., phase=..., reason=..., stopped_at=...) }}", AnsibleFilterError)
def fleet_unknown_reason(run_id, failed_task, error, locked=False, status="", phase="", reason="", stopped_at=""):
    _check(type_problem("fleet_unknown_reason", "the input", run_id, str, "the run id (a string)"))
    for name, value in (("failed_task", failed_task), ("status", status), ("phase", phase), ("reason", reason),
                        ("stopped_at", stopped_at)):
        _check(type_problem("fleet_unknown_reason", name, value, str, "a string"))
    _check(type_problem("fleet_unknown_reason", "locked", locked, bool, "true or false"))
    return unknown_reason(run_id, failed_task, str(error), locked, status, phase, reason, stopped_at)


class FilterModule(object):
    def filters(self):
        return {"fleet_report": fleet_report, "fleet_report_markdown": fleet_report_markdown,
                "fleet_report_summary": fleet_report_summary, "fleet_report_root": fleet_report_root,
                "fleet_unknown_reason": fleet_unknown_reason}
