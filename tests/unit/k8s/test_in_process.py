"""A module's run in the controller's worker (plugins/plugin_utils/in_process.py): the AnsibleModule stand-in validates
as AnsibleModule does, masks no_log values, hands the result back, turns a bug into a failed result with its
traceback; the action runs in the worker only on a local connection without async, and every API module has the
action."""
import os

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import ModuleService, run_module
from ansible_collections.hypershift.private_capi.plugins.plugin_utils import in_process
from testenv import REPO_ROOT

SPEC = {"name": dict(type="str", required=True), "count": dict(type="int", default=1),
        "token": dict(type="str", no_log=True), "kubeconfig": dict(type="raw")}


def _run(main, args, check_mode=False):
    return in_process.run_in_worker(main, args, check_mode, False, "demo")


class Echo(ModuleService):
    """Returns its options and check mode; fails with a user error when told to."""

    @classmethod
    def from_run(cls, run):
        return cls(None, run.params, check_mode=run.check_mode)

    def run(self):
        self.warnings.append("a warning of the service")
        return {"changed": False, "seen": dict(self.params), "check_mode": self.check_mode}


def _echo_main():
    run_module(lambda: dict(SPEC), {}, Echo)


def test_a_run_hands_back_the_services_result_with_the_options_converted_and_its_warnings():
    result = _run(_echo_main, {"name": "hc-1", "count": "3"}, check_mode=True)
    assert result["seen"]["count"] == 3 and result["seen"]["name"] == "hc-1", result
    assert result["check_mode"] is True
    assert "a warning of the service" in result["warnings"]
    assert "elapsed_seconds" in result and not result.get("failed"), result


def test_a_no_log_value_never_comes_back():
    result = _run(_echo_main, {"name": "hc-1", "token": "s3cret-value"})
    assert "s3cret-value" not in repr(result), result
    assert result["invocation"]["module_args"]["token"] == "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER", result


@pytest.mark.parametrize("args, message", [
    ({"name": "hc-1", "bogus": 1}, "Unsupported parameters for (demo) module: bogus"),
    ({}, "missing required arguments: name"),
    ({"name": "hc-1", "count": "many"}, "count"),
])
def test_bad_options_fail_with_ansiblemodules_messages_before_the_service_runs(args, message):
    result = _run(_echo_main, args)
    assert result["failed"] is True and message in result["msg"], result
    assert "seen" not in result


def test_a_bug_in_the_module_is_a_failed_result_with_its_traceback():
    def broken():
        raise KeyError("spec")
    result = _run(broken, {})
    assert result["failed"] is True and "KeyError" in result["msg"], result
    assert "raise KeyError" in result["exception"]


def test_a_main_that_returns_without_a_result_fails():
    result = _run(lambda: None, {})
    assert result["failed"] is True and "without a result" in result["msg"]


class _Task(object):
    def __init__(self, async_val=0):
        self.async_val = async_val


class _Connection(object):
    def __init__(self, transport):
        self.transport = transport


@pytest.mark.parametrize("transport, async_val, in_worker", [
    ("local", 0, True), ("ansible.builtin.local", 0, True), ("ssh", 0, False), ("local", 60, False)])
def test_the_worker_runs_the_module_only_on_a_local_connection_without_async(transport, async_val, in_worker):
    action = in_process.InProcessAction.__new__(in_process.InProcessAction)
    action._task, action._connection = _Task(async_val), _Connection(transport)
    assert action.in_worker() is in_worker


def test_every_api_module_has_the_action_that_runs_it_in_the_worker():
    modules = os.path.join(REPO_ROOT, "plugins", "modules")
    actions = os.path.join(REPO_ROOT, "plugins", "action")
    api_modules = sorted(name[:-3] for name in os.listdir(modules)
                         if name.endswith(".py") and "run_module(" in open(os.path.join(modules, name)).read())
    missing = [name for name in api_modules if not os.path.exists(os.path.join(actions, name + ".py"))
               or "InProcessAction" not in open(os.path.join(actions, name + ".py")).read()]
    assert api_modules and not missing, missing
