"""The managedFields a copy carries (plugins/module_utils/move/managed.py): pure functions, no server."""
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.managed import (
    carried_entries,
    field_paths,
    fields_of,
    needs_carry,
    with_carried,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    DEFAULT_GROUP_MAP,
    TO_PRIVATE,
)

OWNER = 'k:{"uid":"old-ms"}'
FIELDS = {"f:metadata": {"f:labels": {".": {}, "f:pool": {}}, "f:ownerReferences": {".": {}, OWNER: {}}},
          "f:spec": {"f:clusterName": {}}}
SOURCE = {"metadata": {"uid": "m-1", "managedFields": [
    {"manager": "capi-machineset", "operation": "Apply", "apiVersion": "cluster.x-k8s.io/v1beta2",
     "fieldsType": "FieldsV1", "fieldsV1": FIELDS, "time": "2026-01-01T00:00:00Z"},
    {"manager": "capi-machineset", "operation": "Update", "subresource": "status",
     "apiVersion": "cluster.x-k8s.io/v1beta1", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}}]}}


def test_paths_round_trip_including_a_node_owned_itself():
    paths = field_paths(FIELDS)
    assert ("f:metadata", "f:labels", ".") in paths and ("f:spec", "f:clusterName") in paths
    assert fields_of(paths) == FIELDS


def test_carried_entries_name_the_copy_group_and_its_owner_uids_and_leave_the_source_alone():
    carried = carried_entries(SOURCE, TO_PRIVATE, DEFAULT_GROUP_MAP, {"old-ms": "new-ms"})
    assert [entry["apiVersion"] for entry in carried] == ["cluster.hypershift.openshift.io/v1beta2",
                                                          "cluster.hypershift.openshift.io/v1beta1"]
    owners = carried[0]["fieldsV1"]["f:metadata"]["f:ownerReferences"]
    assert set(owners) == {".", 'k:{"uid":"new-ms"}'}
    assert carried[0]["time"] == "2026-01-01T00:00:00Z"
    assert SOURCE["metadata"]["managedFields"][0]["fieldsV1"] is FIELDS and OWNER in FIELDS["f:metadata"]["f:ownerReferences"]


def test_the_collection_keeps_only_what_it_alone_set_and_carries_once():
    carried = carried_entries(SOURCE, TO_PRIVATE, DEFAULT_GROUP_MAP, {})
    created = {"metadata": {"managedFields": [{"manager": "hypershift.private_capi", "operation": "Update",
                                               "apiVersion": "cluster.hypershift.openshift.io/v1beta2",
                                               "fieldsV1": fields_of(field_paths(FIELDS) | {
                                                   ("f:metadata", "f:annotations", "f:source-uid")})}]}}
    assert needs_carry(created, carried, "hypershift.private_capi")
    result = with_carried(created, carried, "hypershift.private_capi")
    assert result[:2] == carried
    assert result[2]["fieldsV1"] == {"f:metadata": {"f:annotations": {"f:source-uid": {}}}}
    assert not needs_carry({"metadata": {"managedFields": result}}, carried, "hypershift.private_capi")
    assert not needs_carry(created, [], "hypershift.private_capi")  # nothing of anyone else to carry
    # Update managers only: no Apply ownership to keep, no write spent on it
    assert not needs_carry(created, [entry for entry in carried if entry["operation"] == "Update"],
                           "hypershift.private_capi")
