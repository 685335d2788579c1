"""hcp_migrate_rollback: documentation = argspec, where a rollback goes on, which rescue path a failed migration takes,
and the options refused before any API call. The runs themselves (a rollback, its failure and resume; the rescue of a
failure at every step): tests/integration/fleet/test_rollback_playbook.py, test_step_failures.py, test_fleet_20.py."""
import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import rollback
from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import PHASE_ANNOTATION
from ansible_collections.hypershift.private_capi.plugins.modules import hcp_migrate_rollback as rollback_module
from testenv.module_runner import run_module
from tests.unit.module_docs import assert_argspec_matches_documentation


def hostedcluster(phase=None):
    annotations = {"hypershift.openshift.io/scope": "legacy"}
    if phase is not None:
        annotations[PHASE_ANNOTATION] = phase
    return {"metadata": {"name": "prod-01", "namespace": "clusters", "annotations": annotations}}


def test_module_documentation_matches_argspec():
    assert_argspec_matches_documentation(rollback_module)


@pytest.mark.parametrize("phase, resume_point, partly_deleted", [
    (None, "", False),               # a fresh rollback lock, or a failure before the finish
    ("revert-resume", "revert-resume", False),  # copies verified, the standard controllers may have run
    ("revert-finish", "revert-finish", False),  # the deletion of the private objects began
    ("finish", "", True),            # the failed migration had begun deleting the standard objects
    ("something-else", "", False),   # not ours: from the start
])
def test_the_phase_recorded_says_where_a_rollback_goes_on_and_which_way_a_rescue_goes(phase, resume_point, partly_deleted):
    assert rollback.resume_point(hostedcluster(phase)) == resume_point
    assert rollback.sources_partly_deleted(hostedcluster(phase)) is partly_deleted


@pytest.mark.parametrize("args, words", [
    ({"path": "rescue", "reason": "  "}, "path: rescue needs reason"),
    ({"path": "back"}, "value of path must be one of: rollback, rescue"),
    ({"path": "rollback", "namespace": "Clusters-Prod"}, "namespace"),
    ({"path": "rollback", "scale_down_timeout": -1}, "scale_down_timeout"),
])
def test_bad_options_fail_before_any_api_call(args, words, tmp_path):
    """No server: a kubeconfig pointing at a closed port would fail on the first request, not with these messages."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
                          "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                          "current-context: x\n")
    base = {"kubeconfig": str(kubeconfig), "namespace": "clusters-prod-01", "hostedcluster_name": "prod-01",
            "holder": "run-1"}
    result = run_module("hcp_migrate_rollback", dict(base, **args))
    assert result.failed and words in result["msg"], result
    assert not result.get("changed")
    assert (result.get("api_calls") or {}).get("total", 0) == 0


def test_the_check_mode_plan_names_what_would_be_copied_back_and_where_the_sidecar_comes_out():
    result = {"copied": {"counts": {"Machine": {"found": 2}, "Cluster": {"found": 1}, "MachineSet": {"found": 0}},
                         "plan": [{"action": "create"}, {"action": "create"}, {"action": "update"}]},
              "proxy": {"deployments": ["cluster-api", "capi-provider"]}, "resumed_from": ""}
    lines = rollback.plan_lines(result, "clusters/hc-1", "rb-1")
    assert lines[0] == "DRY RUN (check mode) - clusters/hc-1 would be rolled back by run rb-1:"
    assert "4. copy back to the standard groups: Cluster x1, Machine x2 (2 creates)" in lines
    assert ("5. remove the proxy sidecar from: cluster-api, capi-provider; its kubeconfig, RBAC and the "
            "control-plane-operator signal") in lines


def test_the_check_mode_plan_of_a_resumed_rollback_with_nothing_left_says_so():
    lines = rollback.plan_lines({"resumed_from": rollback.DELETE_PHASE}, "clusters/hc-1", "rb-1")
    assert lines[0].endswith("by run rb-1 (resumed from revert-finish):")
    assert "4. copy back to the standard groups: nothing (0 creates)" in lines
    assert any(line.startswith("5. remove the proxy sidecar from: none;") for line in lines)
