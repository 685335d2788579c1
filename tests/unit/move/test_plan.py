"""move.plan's undoing of the delete phase's mark (pure)."""
import json

from ansible_collections.hypershift.private_capi.plugins.module_utils.move.plan import (
    marked_for_deletion, unmarked_for_deletion)


def test_unmarked_for_deletion_undoes_the_delete_phase_mark_and_leaves_its_input_alone():
    original = {"metadata": {"name": "m", "resourceVersion": "7", "finalizers": ["machine.cluster.x-k8s.io"],
                             "labels": {"app": "x"}, "annotations": {"note": "kept"}}}
    patch = marked_for_deletion(original)["metadata"]
    marked = {"metadata": {"name": "m", "resourceVersion": "8", "labels": dict(original["metadata"]["labels"], **patch["labels"]),
                           "annotations": dict(original["metadata"]["annotations"], **patch["annotations"])}}
    frozen = json.dumps(marked, sort_keys=True)
    restored = unmarked_for_deletion(marked)
    assert json.dumps(marked, sort_keys=True) == frozen
    assert restored["metadata"] == {"name": "m", "resourceVersion": "8", "finalizers": ["machine.cluster.x-k8s.io"],
                                    "labels": {"app": "x"}, "annotations": {"note": "kept"}}
    bare = unmarked_for_deletion({"metadata": {"name": "n", "labels": patch["labels"],
                                               "annotations": {"hypershift.openshift.io/capi-migration-finalizers": "[]"}}})
    assert bare["metadata"] == {"name": "n"}
