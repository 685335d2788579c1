"""hcp_migrate_window: the pure judgements (are the Deployments back, the signal patch, the mark format) and
documentation = argspec. The run itself (stop, copy, start, signal against a real control plane, its second run and
its failure): tests/integration/fleet/test_hcp_migrate_window.py."""
import datetime

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import REPLICAS_ANNOTATION
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.phased import annotations_patch, phase_mark
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.quiesce import available_since
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.window import back_at_record
from ansible_collections.hypershift.private_capi.plugins.modules import hcp_migrate_window as window_module
from tests.unit.module_docs import assert_argspec_matches_documentation


def deployment(name, replicas=1, recorded=None):
    annotations = {} if recorded is None else {REPLICAS_ANNOTATION: str(recorded)}
    return {"metadata": {"name": name, "annotations": annotations}, "spec": {"replicas": replicas}}


def test_module_documentation_matches_argspec():
    assert_argspec_matches_documentation(window_module)


@pytest.mark.parametrize("deployments, back", [
    ([deployment("a", 1, recorded=1), deployment("b", 2, recorded=2)], True),
    ([deployment("a", 1, recorded=1), deployment("b", 0, recorded=2)], False),  # one still stopped
    ([deployment("a", 1, recorded=None)], False),  # never stopped by a migration
    ([deployment("a", 0, recorded=0)], True),  # recorded at 0: back is 0
    ([], False),  # nothing says a window was opened
])
def test_back_at_record_only_when_every_deployment_carries_its_record_and_is_at_it(deployments, back):
    assert back_at_record(deployments) is back


def test_annotations_patch_sets_only_what_differs():
    obj = {"metadata": {"annotations": {"keep": "1", "signal": "false"}}}
    assert annotations_patch(obj, {"keep": "1", "signal": "true", "new": "x"}) == {
        "metadata": {"annotations": {"new": "x", "signal": "true"}}}
    assert annotations_patch(obj, {"keep": "1"}) is None
    assert annotations_patch({"metadata": {}}, {"signal": "true"}) == {"metadata": {"annotations": {"signal": "true"}}}


def test_phase_mark_is_the_roles_mark_format():
    now = datetime.datetime(2026, 11, 25, 13, 1, 2, 311, tzinfo=datetime.timezone.utc)
    assert phase_mark("copy", now) == {"name": "copy", "at": "2026-11-25T13:01:02.000311"}


def pod(owner, ready_at=None):
    conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": ready_at}] if ready_at else [
        {"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-25T13:00:00Z"}]
    return {"metadata": {"ownerReferences": [{"kind": "ReplicaSet", "name": owner}]}, "status": {"conditions": conditions}}


def test_available_since_is_the_latest_deployment_to_have_its_replicas_ready():
    pods = [pod("cluster-api-7d9f8c6b5", "2026-11-25T13:01:05Z"), pod("capi-provider-5c4b3a2d1", "2026-11-25T13:01:02Z"),
            pod("capi-provider-5c4b3a2d1", "2026-11-25T13:01:09Z"), pod("other-6f5e4d3c2", "2026-11-25T13:05:00Z")]
    assert available_since(pods, {"cluster-api": 1, "capi-provider": 2}) == "2026-11-25T13:01:09.000000Z"
    assert available_since(pods, {"cluster-api": 1, "capi-provider": 1}) == "2026-11-25T13:01:05.000000Z"
    assert available_since(pods, {"cluster-api": 2}) is None  # one Ready pod of two
    assert available_since(pods + [pod("karpenter-4b3c2d1e0")], {"karpenter": 1}) is None  # not Ready
    assert available_since(pods, {"cluster-api": 0}) is None  # nothing expected to run
