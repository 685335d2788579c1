"""The phased run (plugins/module_utils/hcp/phased.py) that hcp_migrate_window, hcp_migrate_finish and
hcp_migrate_rollback share: the marks, the phase record read back, check mode's no-write and the partial result."""
import datetime

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import PHASE_ANNOTATION
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import phased
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s import runner
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import OptionError

NOW = datetime.datetime(2026, 11, 25, 13, 1, 2, 311, tzinfo=datetime.timezone.utc)
PARAMS = {"hostedcluster_name": "one", "hostedcluster_namespace": "clusters"}


class PatchingClient(object):
    def __init__(self):
        self.patches = []

    def patch(self, path, body, what):
        self.patches.append((path, body, what))
        return {"metadata": {"annotations": dict(body["metadata"]["annotations"])}}


class Run(phased.PhasedRun):
    NOT_STARTED = {"phase": "start"}

    def result(self):
        return {"phase": self.phase, "marks": list(self.marks)}


def test_a_phase_is_marked_when_it_begins_and_once_while_its_steps_follow_each_other():
    run = Run(None, PARAMS, now=lambda: NOW)
    for phase in ("health", "finish", "finish", "state"):
        run.begin(phase)
    assert run.phase == "state"
    assert run.marks == [{"name": name, "at": "2026-11-25T13:01:02.000311"} for name in ("health", "finish", "state")]


def test_the_phase_recorded_on_the_hostedcluster_is_read_back():
    assert phased.recorded_phase({"metadata": {"annotations": {PHASE_ANNOTATION: "revert-resume"}}}) == "revert-resume"
    assert phased.recorded_phase({"metadata": {}}) == ""


@pytest.mark.parametrize("check_mode, sent", [(False, 1), (True, 0)])
def test_a_record_is_written_once_and_never_in_check_mode(check_mode, sent):
    client = PatchingClient()
    run = Run(client, PARAMS, check_mode=check_mode)
    run.hostedcluster = {"metadata": {"annotations": {}}}
    run.annotate_hostedcluster(phased.annotations_patch(run.hostedcluster, {PHASE_ANNOTATION: "finish"}), "why")
    assert len(client.patches) == sent
    if sent:  # the HostedCluster as written holds the record: a re-run sends nothing
        assert client.patches[0][2] == "patch HostedCluster clusters/one (why)"
        assert phased.annotations_patch(run.hostedcluster, {PHASE_ANNOTATION: "finish"}) is None
    else:
        assert run.hostedcluster == {"metadata": {"annotations": {}}}


class Failed(Exception):
    pass


class Module(object):
    """What k8s/runner.execute needs of the module; fail_json raises Failed with the result."""

    def __init__(self, **params):
        self.params = dict(PARAMS, **params)
        self.check_mode = self._diff = False

    def warn(self, warning):
        raise AssertionError(warning)

    def fail_json(self, msg, **result):
        raise Failed(dict(result, msg=msg))


class FailingRun(Run):
    """Fails before its service exists (option_problems) or in a phase (run)."""

    MINIMUMS = {}
    DERIVED = {}

    @classmethod
    def option_problems(cls, params):
        return ["no such option"] if params.get("early") else []

    @classmethod
    def from_run(cls, run):
        return cls(None, run.params, now=lambda: NOW)

    def run(self):
        self.begin("copy")
        raise OptionError("copy failed")


@pytest.mark.parametrize("params, expected", [
    ({"early": True}, {"msg": "no such option", "phase": "start"}),
    ({}, {"msg": "copy failed", "phase": "copy", "marks": [{"name": "copy", "at": "2026-11-25T13:01:02.000311"}]}),
])
def test_a_failure_returns_what_the_run_got_done_or_not_started_before_the_service(params, expected):
    with pytest.raises(Failed) as failed:
        runner.execute(Module(**params), FailingRun)
    result = failed.value.args[0]
    assert dict((key, result[key]) for key in expected) == expected and result["changed"] is False
