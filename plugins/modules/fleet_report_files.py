#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: fleet_report_files
short_description: Build the fleet migration report from the per-cluster records and write it on the controller
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Reads every C(*.json) record of O(record_dir) (one per HostedCluster, written by the C(hypershift.private_capi.migrate)
    role), builds the fleet report (the same code as the P(hypershift.private_capi.fleet_report#filter) filter) and
    writes C(report.json) and C(report.md) (with the Mermaid gantt chart) into O(report_dir).
  - Runs inside the controller's worker process, with plain JSON, so its cost does not depend on Ansible's templating
    of the records; the migrate role runs it after every batch of a fleet run, so the report on disk is current even
    when a run stops at a failure.
  - The report is the run's output, not a change to the managed clusters, so the task always reports C(changed=false).
    In check mode the report of the dry run is written too (marked as a dry run).
  - This is an action plugin; the module file only documents it.
extends_documentation_fragment:
  - hypershift.private_capi.attributes.controller
options:
  record_dir:
    description: Directory of the per-cluster records on the controller (C(<report dir>/clusters)).
    type: path
    required: true
  report_dir:
    description: Directory to write C(report.json) and C(report.md) into; it must exist.
    type: path
    required: true
  run_id:
    description: The run id the report is about (the migration lock's holder).
    type: str
    required: true
  final:
    description:
      - The run has ended - a HostedCluster of the selection (C(selection.json) in O(report_dir), written before the
        first cluster starts) without a record is C(not attempted), with why (C(stopped.json), the failure budget) and
        the command that resumes; before the end it is C(pending).
    type: bool
    default: false
    version_added: 1.1.0
  mode:
    description: File mode of the two report files.
    type: str
    default: "0644"
attributes:
  check_mode:
    description: Runs in check mode; writes the dry run's report (the files are the run's output).
    support: full
  diff_mode:
    description: No diff is returned; the report files are the run's output.
    support: none
seealso:
  - plugin: hypershift.private_capi.fleet_report
    plugin_type: filter
  - module: hypershift.private_capi.controller_files
"""

EXAMPLES = r"""
- name: Write the fleet report and show its summary
  hypershift.private_capi.fleet_report_files:
    record_dir: /var/lib/private-capi/reports/fleet-20261123T040553Z-ogrxlm/clusters
    report_dir: /var/lib/private-capi/reports/fleet-20261123T040553Z-ogrxlm
    run_id: fleet-20261123T040553Z-ogrxlm
  register: fleet_report

- name: Summary
  ansible.builtin.debug:
    msg: "{{ fleet_report.summary }}"
"""

RETURN = r"""
files:
  description: The two files with C(path) and C(updated) (whether their content or mode changed).
  returned: success
  type: list
  elements: dict
  sample: [{"path": "/tmp/reports/run-1/report.json", "updated": true}, {"path": "/tmp/reports/run-1/report.md", "updated": true}]
report:
  description:
    - The report as written to C(report.json) (run, totals per status, timings, one entry per cluster with its phases).
    - "Timings - C(wall_seconds) (the whole run), C(parallel_clusters) (the most clusters at once, the batch size) and
      C(seconds_per_migrated_cluster) (C(migrated_seconds_total), the migrated clusters' own durations summed, divided
      by their number: one cluster on its own)."
    - "The window without CAPI controllers - per cluster C(controllers_down_seconds) (from the first scale to 0 of its
      CAPI Deployments to all of them available again, after the migration or its rollback), of it
      C(controllers_waiting_seconds) (waiting on Kubernetes - pods to go, Deployments to be available) and
      C(controllers_own_seconds) (the rest - the copy, the sidecar's injection, the collection's own steps); null for
      a cluster whose controllers were not stopped. Fleet-wide in C(controllers_down) (C(clusters), C(max_seconds),
      C(p50_seconds), C(sum_seconds), C(own_p50_seconds), C(waiting_p50_seconds)), or null."
  returned: success
  type: dict
summary:
  description: The one-screen console summary, a line per item.
  returned: success
  type: list
  elements: str
  sample: ["Fleet migration run-1: 6 HostedClusters - migrated 5, failed 1"]
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.modules import action_only


def argspec():
    """This module's argument spec (the action plugin checks the values itself)."""
    return dict(record_dir=dict(type="path", required=True), report_dir=dict(type="path", required=True),
                run_id=dict(type="str", required=True), final=dict(type="bool", default=False),
                mode=dict(type="str", default="0644"))


def main():
    action_only(argspec, "fleet_report_files")


if __name__ == "__main__":
    main()
