# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters fleet_report, fleet_report_markdown, fleet_report_summary (docs: the .yml files beside this file)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.hypershift.private_capi.plugins.module_utils.fleet_report import (
    FleetReportError, build_report, report_markdown, report_summary)


def fleet_report(records, run_id, check_mode=False):
    if not isinstance(records, list):
        raise AnsibleFilterError("fleet_report: expected a list of migrate records, got %s" % type(records).__name__)
    try:
        return build_report(records, run_id, check_mode=check_mode)
    except FleetReportError as error:
        raise AnsibleFilterError("fleet_report: %s" % error)


def fleet_report_markdown(report):
    return report_markdown(report)


def fleet_report_summary(report, report_path=""):
    return report_summary(report, report_path)


class FilterModule(object):
    def filters(self):
        return {"fleet_report": fleet_report, "fleet_report_markdown": fleet_report_markdown,
                "fleet_report_summary": fleet_report_summary}
