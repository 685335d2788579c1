# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of hypershift.private_capi.migration_state (documented in plugins/modules/migration_state.py).

Fills in the default lease holder, then runs the module as every API module runs (plugin_utils/in_process.py).
Without a holder the module makes up one per module run, so the task that takes the lock and the task that finishes
the migration would be two holders and lock each other out. Here the default is one id per ansible-playbook run: the controller's host name, the process id of
the ansible-playbook main process and its start time (the pid alone could be reused by a later run). Tasks run in
worker processes forked from that main process, so os.getppid() is the main process in every task of the run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket
import subprocess
import time

from ansible_collections.hypershift.private_capi.plugins.modules import migration_state
from ansible_collections.hypershift.private_capi.plugins.plugin_utils.in_process import InProcessAction

UNKNOWN_START = "start-unknown"


def _linux_start_time(pid):
    """Start time of pid (seconds since the epoch) from /proc, or None."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()  # the command name may hold spaces: split after it
        with open("/proc/stat") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith("btime "))
        return boot + int(fields[19]) / float(os.sysconf("SC_CLK_TCK"))  # field 22 of stat: starttime in ticks
    except (IOError, OSError, ValueError, IndexError, StopIteration):
        return None


def _ps_start_time(pid):
    """Start time of pid from ps (macOS and other systems without /proc), or None."""
    try:
        output = subprocess.run(["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True, timeout=10,
                                check=False).stdout.strip()
        return time.mktime(time.strptime(output, "%a %b %d %H:%M:%S %Y")) if output else None
    except (IOError, OSError, ValueError, subprocess.SubprocessError):
        return None


def process_start(pid):
    """When pid started, as a UTC stamp like 20260301T101500.25Z, or UNKNOWN_START."""
    started = _linux_start_time(pid)
    if started is None:
        started = _ps_start_time(pid)
    if started is None:
        return UNKNOWN_START
    return "%s.%02dZ" % (time.strftime("%Y%m%dT%H%M%S", time.gmtime(started)), int(started % 1 * 100))


def run_holder(main_pid=None, hostname=None):
    """The default holder of one ansible-playbook run: <controller host>:<main process pid>:<its start time>."""
    main_pid = os.getppid() if main_pid is None else main_pid
    return "%s:%d:%s" % (hostname or socket.gethostname(), main_pid, process_start(main_pid))


class ActionModule(InProcessAction):
    """The collection's module action (plugin_utils/in_process.py) with the holder filled in."""

    MODULE = migration_state

    def module_args(self, task_vars):
        module_args = dict(self._task.args)
        if not module_args.get("holder"):
            module_args["holder"] = run_holder()
        return module_args
