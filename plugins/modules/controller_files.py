#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: controller_files
short_description: Write small files on the Ansible controller without starting a module process
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Writes each file of O(files) on the controller (where C(ansible-playbook) runs), whatever host the task runs
    for - like M(ansible.builtin.copy) with O(ansible.builtin.copy#module:content) and C(delegate_to=localhost), but
    inside the controller's worker process, so no Python process is started per file. The fleet migration writes
    its per-cluster records and its report with it.
  - A file whose content and mode are already as given is left alone (C(changed=false)); the others are written to
    a temporary file in the same directory and renamed over the target, so a reader never sees half a file.
  - The directory of each file must exist, unless O(parents) is set or it is one of O(directories).
  - This is an action plugin; the module file only documents it.
extends_documentation_fragment:
  - hypershift.private_capi.attributes.controller
options:
  files:
    description:
      - The files - each a dict with C(path) (absolute, on the controller), C(content) (a string, default empty) and
        C(mode) (octal string, default V(0644)).
      - May be empty when O(directories) is given.
    type: list
    elements: dict
  directories:
    description:
      - Directories (absolute, on the controller) to create with their missing parents (mode V(0755)) before the
        files are written, like C(mkdir -p); a task that created one reports C(changed=true). In check mode nothing
        is created. The fleet migration makes its record directory with it.
    type: list
    elements: path
    version_added: 1.2.0
  parents:
    description:
      - Create the missing directories of each file first (mode V(0755)), like C(mkdir -p); a task that created one
        reports C(changed=true). In check mode nothing is created.
    type: bool
    default: false
    version_added: 1.1.0
attributes:
  check_mode:
    description: Can run in check mode and predict changed status without modifying the files.
    support: full
    details: In check mode nothing is written; set C(check_mode=false) on the task to write reports during a dry run.
  diff_mode:
    description: Returns details on what changed (or would change in check mode).
    support: full
"""

EXAMPLES = r"""
- name: Write the report as JSON and Markdown (on the controller, one task, no module process)
  hypershift.private_capi.controller_files:
    files:
      - path: "{{ report_dir }}/report.json"
        content: "{{ report | to_nice_json }}\n"
      - path: "{{ report_dir }}/report.md"
        content: "{{ report_markdown }}"
        mode: "0600"
  check_mode: false

- name: Make the run's record directory (and its parents) before any record is written
  hypershift.private_capi.controller_files:
    directories: ["{{ report_dir }}/clusters"]
  check_mode: false
"""

RETURN = r"""
files:
  description: Each file with C(path) and C(changed).
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/tmp/reports/run-1/report.json", "changed": true}]
directories:
  description: The directories created (or that would be, in check mode) for O(directories) and O(parents), parents
    first.
  returned: always
  type: list
  elements: str
  sample: ["/tmp/reports", "/tmp/reports/run-1"]
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.modules import action_only


def argspec():
    """This module's argument spec (the action plugin validates the entries themselves)."""
    return dict(files=dict(type="list", elements="dict"), parents=dict(type="bool", default=False),
                directories=dict(type="list", elements="path"))


def main():
    action_only(argspec, "controller_files")


if __name__ == "__main__":
    main()
