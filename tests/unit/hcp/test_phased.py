"""The phased run (plugins/module_utils/hcp/phased.py) that hcp_migrate_window, hcp_migrate_finish and
hcp_migrate_rollback share: the marks, the phase record read back, check mode's no-write and the partial result."""
import datetime

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import PHASE_ANNOTATION
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import phased
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


class Module(object):
    params = {}

    def fail_json(self, msg, **result):
        raise AssertionError((msg, result))


def failed_with(monkeypatch, work):
    seen = {}
    monkeypatch.setattr(phased, "run_module_with", lambda module, work_of, partial, minimums: seen.update(
        partial=partial, error=_raises(work_of)))
    Run.run_module(Module(), work)
    return seen["error"], seen["partial"]()


def _raises(work_of):
    try:
        work_of(None)
    except OptionError as error:
        return error
    return None


def test_a_failure_returns_what_the_run_got_done_or_not_started_before_the_service(monkeypatch):
    def fails_before(run, start):
        raise OptionError("no connection")

    def fails_in_a_phase(run, start):
        service = start(Run(None, PARAMS, now=lambda: NOW))
        service.begin("copy")
        raise OptionError("copy failed")

    assert failed_with(monkeypatch, fails_before)[1] == {"phase": "start"}
    error, partial = failed_with(monkeypatch, fails_in_a_phase)
    assert str(error) == "copy failed"
    assert partial == {"phase": "copy", "marks": [{"name": "copy", "at": "2026-11-25T13:01:02.000311"}]}
