# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of hypershift.private_capi.migration_state (documented in plugins/modules/migration_state.py).

Only fills in the default lease holder, then runs the module as usual. Without a holder the module makes up one per
module run, so the task that takes the lock and the task that finishes the migration would be two holders and lock
each other out. Here the default is one id per ansible-playbook run: the controller's host name, the process id of
the ansible-playbook main process and its start time (the pid alone could be reused by a later run). Tasks run in
worker processes forked from that main process, so os.getppid() is the main process in every task of the run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket
import subprocess
import time

from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

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


class ActionModule(ActionBase):
    """ansible.builtin's normal action (check mode, async) with the holder filled in."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp  # no effect any more (as in ansible.builtin.normal)
        module_args = dict(self._task.args)
        if not module_args.get("holder"):
            module_args["holder"] = run_holder()
        wrap_async = self._task.async_val and not self._connection.has_native_async
        result = merge_hash(result, self._execute_module(module_name="hypershift.private_capi.migration_state",
                                                         module_args=module_args, task_vars=task_vars,
                                                         wrap_async=wrap_async))
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
