"""hcp_migrate_finish: the record's patch (the phase, the counts once) and documentation = argspec. The run itself
(record, delete, release, state on a real control plane, and its second run): tests/integration/fleet/
test_hcp_migrate_window.py; a failure in it and the rollback: tests/integration/fleet/test_step_failures.py."""
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.finish import record_patch
from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    COUNTS_ANNOTATION, LEADERLESS_ANNOTATION, PHASE_ANNOTATION)
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine as states
from ansible_collections.hypershift.private_capi.plugins.modules import hcp_migrate_finish as finish_module
from tests.unit.module_docs import assert_argspec_matches_documentation


def hostedcluster(**annotations):
    return {"metadata": {"name": "hc", "annotations": annotations}}


def test_module_documentation_matches_argspec():
    assert_argspec_matches_documentation(finish_module)


def test_record_patch_writes_the_phase_and_the_counts_sorted():
    assert record_patch(hostedcluster(), {"Machine": 3, "Cluster": 1}) == {"metadata": {"annotations": {
        PHASE_ANNOTATION: "finish", COUNTS_ANNOTATION: '{"Cluster": 1, "Machine": 3}'}}}


def test_record_patch_keeps_the_first_count_record():
    """A resumed run whose sources are partly gone must not record the smaller counts it finds."""
    first = hostedcluster(**{COUNTS_ANNOTATION: '{"Machine": 3}'})
    assert record_patch(first, {"Machine": 1}) == {"metadata": {"annotations": {PHASE_ANNOTATION: "finish"}}}
    assert record_patch(hostedcluster(**{COUNTS_ANNOTATION: '{"Machine": 3}', PHASE_ANNOTATION: "finish"}),
                        {"Machine": 1}) is None


def test_record_patch_of_a_migrated_hostedcluster_is_none():
    """The release removed the phase record after the record step: a second run must not write it back."""
    migrated = hostedcluster(**{COUNTS_ANNOTATION: '{"Machine": 3}', states.PRIVATE_TYPES_ANNOTATION: "true"})
    assert record_patch(migrated, {"Machine": 3}) is None


def test_record_patch_records_the_longest_leaderless_stretch_a_run_measured():
    recorded = {COUNTS_ANNOTATION: '{"Machine": 3}', PHASE_ANNOTATION: "finish"}
    assert record_patch(hostedcluster(**recorded), {"Machine": 3}, 27.44) == {
        "metadata": {"annotations": {LEADERLESS_ANNOTATION: "27.4"}}}
    with_figure = hostedcluster(**dict(recorded, **{LEADERLESS_ANNOTATION: "27.4"}))
    assert record_patch(with_figure, {"Machine": 3}, 27.4) is None
    # a resumed run that skipped the pre-install (its window's 0.0) keeps the first run's figure
    assert record_patch(with_figure, {"Machine": 3}, 0.0) is None
    assert record_patch(with_figure, {"Machine": 3}, 31.0) == {"metadata": {"annotations": {LEADERLESS_ANNOTATION: "31.0"}}}
    assert record_patch(hostedcluster(**recorded), {"Machine": 3}, None) is None
