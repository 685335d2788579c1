# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of hypershift.private_capi.fleet_report_files (documented in plugins/modules/fleet_report_files.py).

Reads the per-cluster records, builds the fleet report and writes report.json and report.md, all in the controller's
worker process with plain json: the records never pass through templating. The migrate role runs it after every
batch; building the same report with lookups and filters cost about 0.13 s per record there (2.19's templating of
the lookup results), so a 100-cluster run at serial 1 spent minutes re-reading its growing record set.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os

from ansible.module_utils.common.text.converters import to_bytes
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible_collections.hypershift.private_capi.plugins.action.controller_files import current, write_or_explain
from ansible_collections.hypershift.private_capi.plugins.module_utils.fleet.report import (
    SELECTION_FILE, STOPPED_FILE, FleetReportError, build_report, complete, report_markdown, report_summary)

REQUIRED = ("record_dir", "report_dir", "run_id")


def read_records(record_dir):
    """The records (*.json) of record_dir, by file name; FleetReportError naming a file that is not a JSON object."""
    records = []
    for path in sorted(glob.glob(os.path.join(record_dir, "*.json"))):
        try:
            with open(path, "rb") as handle:
                record = json.loads(handle.read().decode("utf-8"))
        except (IOError, OSError, ValueError) as error:
            raise FleetReportError("cannot read the record %s: %s; remove or repair it, then re-run" % (path, error))
        if not isinstance(record, dict):
            raise FleetReportError("the record %s is not a JSON object; remove or repair it, then re-run" % path)
        records.append(record)
    return records


def read_json(path, missing):
    """The JSON document at path, or missing when there is none; FleetReportError naming a file it cannot read."""
    if not os.path.exists(path):
        return missing
    try:
        with open(path, "rb") as handle:
            return json.loads(handle.read().decode("utf-8"))
    except (IOError, OSError, ValueError) as error:
        raise FleetReportError("cannot read %s: %s; remove or repair it, then re-run" % (path, error))


def report_files(report, report_dir):
    """(path, bytes) of report.json (as to_nice_json writes it) and report.md."""
    as_json = json.dumps(report, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"
    return [(os.path.join(report_dir, "report.json"), to_bytes(as_json)),
            (os.path.join(report_dir, "report.md"), to_bytes(report_markdown(report)))]


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(REQUIRED + ("mode", "final"))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = self._task.args
        missing = [name for name in REQUIRED if not isinstance(args.get(name), str) or not args.get(name)]
        if missing:
            result.update(failed=True, msg="fleet_report_files needs %s (non-empty strings); got %r"
                                           % (", ".join(missing), dict((name, args.get(name)) for name in REQUIRED)))
            return result
        record_dir, report_dir = os.path.expanduser(args["record_dir"]), os.path.expanduser(args["report_dir"])
        if not os.path.isdir(record_dir):
            result.update(failed=True, msg="record_dir %s is not a directory on the controller; give the records "
                                           "directory of the run (<report dir>/clusters)" % record_dir)
            return result
        try:
            mode = int(str(args.get("mode", "0644")), 8)
        except ValueError:
            result.update(failed=True, msg="mode %r is not an octal mode such as '0644'" % args.get("mode"))
            return result
        try:
            selection = read_json(os.path.join(report_dir, SELECTION_FILE), [])
            stopped = read_json(os.path.join(report_dir, STOPPED_FILE), {}).get("reason", "")
            records = complete(read_records(record_dir), selection, args["run_id"], boolean(args.get("final", False), strict=False), stopped)
            report = build_report(records, args["run_id"], check_mode=bool(self._task.check_mode))
        except FleetReportError as error:
            result.update(failed=True, msg="fleet report of run %s: %s" % (args["run_id"], error))
            return result
        written = []
        for path, data in report_files(report, report_dir):
            before, before_mode = current(path)
            written.append({"path": path, "updated": before != data or before_mode != mode})
            if not written[-1]["updated"]:
                continue
            problem = write_or_explain(path, data, mode, report_dir)
            if problem:
                result.update(failed=True, files=written, msg=problem)
                return result
        # the report is the run's output (written in check mode too, for the dry run), not a change to the fleet
        result.update(changed=False, files=written, report=report,
                      summary=report_summary(report, os.path.join(report_dir, "report")))
        return result
