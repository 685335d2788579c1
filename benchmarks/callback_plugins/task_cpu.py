# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The fleet bench's per-task controller CPU (2026-12-03): not shipped, enabled by benchmarks/bench_fleet.py only.

At the playbook's start ansible-playbook moves itself into a cgroup of its own (cgroup v1 cpuacct, or v2), so that
every worker it forks afterwards, and every module process a worker starts, is counted there. The linear strategy
starts a task on every host of the batch and waits for all of them before the next task starts, so the cgroup's CPU
between two task starts is that task's (the main process's share included: the variables, the fork, the results).
At the end it writes TASK_CPU_OUT (JSON): per task (play, file:line, name) the CPU seconds and on how many hosts it
ran, then moves itself back and removes its cgroup. Without a
writable cgroup (not root) it writes {"unavailable": why} and measures nothing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: task_cpu
type: aggregate
short_description: CPU seconds of each task (the fleet bench's, not shipped)
description: See the module docstring of benchmarks/callback_plugins/task_cpu.py.
requirements: [root (a writable cgroup)]
"""

V1_ROOT = "/sys/fs/cgroup/cpuacct"
V2_ROOT = "/sys/fs/cgroup/unified"


def _own_cgroup(controller_line):
    """This process's cgroup path in the hierarchy whose /proc/self/cgroup line (number:controllers:path) satisfies
    controller_line(number, controllers)."""
    with open("/proc/self/cgroup") as handle:
        for line in handle:
            number, controllers, path = line.rstrip("\n").split(":", 2)
            if controller_line(number, controllers):
                return path
    return None


class Cgroup(object):
    """A cgroup of its own for this process (and what it forks from now on), v1 cpuacct or v2."""

    def __init__(self, name):
        if os.path.isdir(V1_ROOT):
            parent = _own_cgroup(lambda number, controllers: "cpuacct" in controllers.split(","))
            self.root, self.read_usage = V1_ROOT, self._v1_usage
        elif os.path.isfile("/sys/fs/cgroup/cgroup.controllers") or os.path.isfile(V2_ROOT + "/cgroup.controllers"):
            parent = _own_cgroup(lambda number, controllers: number == "0")
            self.root = V2_ROOT if os.path.isfile(V2_ROOT + "/cgroup.controllers") else "/sys/fs/cgroup"
            self.read_usage = self._v2_usage
        else:
            raise OSError("no cgroup cpuacct (v1) or v2 hierarchy under /sys/fs/cgroup")
        if parent is None:
            raise OSError("this process is in no cpuacct cgroup (/proc/self/cgroup)")
        self.parent = os.path.join(self.root, parent.lstrip("/"))
        self.path = os.path.join(self.parent, name)
        os.mkdir(self.path)
        self._move(self.path)

    def _move(self, path):
        with open(os.path.join(path, "cgroup.procs"), "w") as handle:
            handle.write(str(os.getpid()))

    def _v1_usage(self):
        with open(os.path.join(self.path, "cpuacct.usage")) as handle:
            return int(handle.read()) / 1e9

    def _v2_usage(self):
        with open(os.path.join(self.path, "cpu.stat")) as handle:
            for line in handle:
                key, value = line.split()
                if key == "usage_usec":
                    return int(value) / 1e6
        return 0.0

    def remove(self):
        """Back to the parent cgroup, and this one removed (its workers have ended by the playbook's stats)."""
        self._move(self.parent)
        os.rmdir(self.path)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_cpu"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self.output = os.environ.get("TASK_CPU_OUT", "task_cpu.json")
        self.tasks = {}  # key -> {"play", "task", "where", "cpu", "hosts"}
        self.current = None
        self.play = ""
        self.unavailable = None
        try:
            self.cgroup = Cgroup("private-capi-task-cpu-%d" % os.getpid())
        except (OSError, IOError) as error:
            self.cgroup, self.unavailable = None, "no cgroup of its own: %s" % error
            return
        self.since = self.started = self.cgroup.read_usage()

    def _switch(self, key):
        if self.cgroup is None:
            return
        now = self.cgroup.read_usage()
        if self.current is not None:
            self.tasks[self.current]["cpu"] += now - self.since
        self.current, self.since = key, now

    def v2_playbook_on_play_start(self, play):
        self.play = play.get_name()
        self._switch(None)

    def v2_playbook_on_task_start(self, task, is_conditional):
        where = "/".join((task.get_path() or "").split("/")[-3:])  # <role>/tasks/<file>:<line>, or the playbook's
        key = "%s | %s | %s" % (self.play, where, task.get_name())
        self.tasks.setdefault(key, {"play": self.play, "task": task.get_name(), "where": where, "cpu": 0.0, "hosts": 0})
        self._switch(key)

    v2_playbook_on_handler_task_start = v2_playbook_on_task_start

    def _ran(self, result):
        if self.current is not None:
            self.tasks[self.current]["hosts"] += 1

    v2_runner_on_ok = v2_runner_on_failed = v2_runner_on_skipped = v2_runner_on_unreachable = _ran

    def v2_playbook_on_stats(self, stats):
        if self.cgroup is None:
            body = {"unavailable": self.unavailable}
        else:
            self._switch(None)
            body = {"total": self.cgroup.read_usage() - self.started, "tasks": list(self.tasks.values())}
            self.cgroup.remove()
        with open(self.output, "w") as handle:
            json.dump(body, handle, indent=1)
