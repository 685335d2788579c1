# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The action of the collection's API modules: the module's main() in the controller's worker process (2026-12-03).

Why: a module process costs about 0.37 CPU-s on an idle machine before it does any work (Python's start, compiling
the AnsiballZ payload, ansible.module_utils.basic, import kubernetes), and a HostedCluster's migration runs five of
them. ansible-playbook's strategy imports each task's action plugin class in its main process (linear and free:
action_loader.get(class_only=True)); each module's action plugin imports the module's code at its top, so kubernetes
and the module's module_utils are imported there once per run, and every worker forked for a task has them.

When: the task's connection is local (the collection's plays run every module on the controller:
playbooks/vars/plays.yml), the task is not async, and ansible-playbook's Python imports the kubernetes client.
Otherwise this is ansible.builtin's normal action: the module runs as a process on the task's host (with the
host's interpreter), as any module does. The task's environment keyword is applied to the worker's
environment (its K8S_AUTH_* fallbacks and proxies, as a module process would see them).

What stays the module's: main() and k8s/runner.py run as they run in a process. ControllerModule stands in for
AnsibleModule only (AnsibleK8SModule's module_class): the argument spec validated by ansible-core's
ArgumentSpecValidator (AnsibleModule's own validation, its messages), check mode, diff, warnings, the no_log values
masked in the result, and exit_json/fail_json handing the result back instead of printing it. A module process also
logs its invocation to the host's syslog; a run in the worker does not.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import functools
import json
import os
import traceback

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.errors import UnsupportedError
from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

try:
    from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import hosted
    from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import get_api_client
except ImportError:  # kubernetes.core is not importable by this Python: every run is a module process
    hosted = get_api_client = None

LOCAL_CONNECTIONS = ("local", "ansible.builtin.local")


class ModuleExit(Exception):
    """exit_json or fail_json of a ControllerModule: the module's result."""

    def __init__(self, result):
        super(ModuleExit, self).__init__("module exit")
        self.result = result


def _json_default(value):
    """What AnsibleModule's JSON encoder writes for the non-JSON values a module may return."""
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError("a module result holds %r, which is not JSON" % (value,))


class ControllerModule(object):
    """AnsibleModule's part of a module run in the controller's worker (see the module docstring); built by
    AnsibleK8SModule with the keyword arguments it gives AnsibleModule."""

    def __init__(self, task_args, check_mode, diff, name, argument_spec, supports_check_mode=False,
                 mutually_exclusive=None, required_together=None, required_one_of=None, required_if=None,
                 required_by=None):
        self._name = name
        self.check_mode = bool(check_mode)
        self._diff = bool(diff)
        self.no_log_values = set()
        self._warnings = []
        # what a module process reads: plain JSON values (ansible-core's tagged strings and containers left behind)
        self.params = json.loads(json.dumps(task_args, default=_json_default))
        validation = ArgumentSpecValidator(argument_spec, mutually_exclusive, required_together, required_one_of,
                                           required_if, required_by).validate(self.params)
        self.params = validation.validated_parameters
        self.no_log_values.update(validation._no_log_values)  # pylint: disable=protected-access
        for both in validation._warnings:  # pylint: disable=protected-access
            self.warn("Both option %s and its alias %s are set." % (both["option"], both["alias"]))
        for deprecation in validation._deprecations:  # pylint: disable=protected-access
            self.warn(deprecation["msg"])
        if validation.error_messages:  # as AnsibleModule: fail for validation errors, even in check mode
            message = validation.errors.msg
            if isinstance(validation.errors[0], UnsupportedError):
                message = "Unsupported parameters for (%s) module: %s" % (name, message)
            self.fail_json(msg=message)
        if self.check_mode and not supports_check_mode:
            self.exit_json(skipped=True, msg="remote module (%s) does not support check mode" % name)

    def warn(self, warning):
        self._warnings.append(warning)

    def deprecate(self, msg, **_when):
        self.warn(msg)

    def debug(self, _msg):
        """AnsibleModule logs debug messages to the host's syslog with ANSIBLE_DEBUG; nothing here."""

    def exit_json(self, **result):
        raise ModuleExit(self._finished(result))

    def fail_json(self, msg, **result):
        result.update(failed=True, msg=msg)
        raise ModuleExit(self._finished(result))

    def _finished(self, result):
        """The result as a module process would print it: JSON values only, the warnings, the invocation, no
        no_log value."""
        if self._warnings:
            result["warnings"] = list(result.get("warnings") or ()) + self._warnings
        result.setdefault("invocation", {"module_args": self.params})
        result = json.loads(json.dumps(result, default=_json_default))
        return remove_values(result, self.no_log_values)


def run_in_worker(main, task_args, check_mode, diff, name):
    """The result of main() (a module's, k8s/runner.py run_module) run in this process on task_args."""
    module_class = functools.partial(ControllerModule, task_args, check_mode, diff, name)
    try:
        with hosted(module_class):
            main()
    except ModuleExit as done:
        return done.result
    except Exception as exc:  # pylint: disable=broad-except
        # a bug in the module: what a module process's traceback would show
        return {"failed": True, "msg": "%s failed in the controller's worker: %s: %s" % (name, type(exc).__name__, exc),
                "exception": traceback.format_exc()}
    return {"failed": True, "msg": "%s ended without a result (its main() returned)" % name}


class InProcessAction(ActionBase):
    """The action of one API module (MODULE, its Python module under plugins/modules): main() in the worker when the
    connection is local and the task is not async, otherwise the module as a process (see the module docstring)."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = True
    MODULE = None  # the module's Python module (plugins/modules/<name>.py)

    def module_args(self, task_vars):
        """The module's arguments: the task's (an action that fills a default overrides this)."""
        return dict(self._task.args)

    def in_worker(self):
        """Whether this task's module runs here: a local connection, not async, and this Python imports the
        kubernetes client (where only the host's interpreter has it, the module runs as a process there)."""
        return (hosted is not None and get_api_client is not None and not self._task.async_val
                and getattr(self._connection, "transport", None) in LOCAL_CONNECTIONS)

    def run(self, tmp=None, task_vars=None):
        result = super(InProcessAction, self).run(tmp, task_vars)
        del tmp  # no effect any more (as in ansible.builtin.normal)
        module_args = self.module_args(task_vars)
        name = self._task.resolved_action or self._task.action
        if self.in_worker():
            environment = {}
            self._compute_environment_string(environment)
            os.environ.update((key, str(value)) for key, value in environment.items())
            return merge_hash(result, run_in_worker(self.MODULE.main, module_args, self._task.check_mode,
                                                    self._task.diff, name))
        wrap_async = self._task.async_val and not self._connection.has_native_async
        result = merge_hash(result, self._execute_module(module_name=name, module_args=module_args,
                                                         task_vars=task_vars, wrap_async=wrap_async))
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)  # pylint: disable=protected-access
        return result
