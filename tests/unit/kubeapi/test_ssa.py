"""tests/kubeapi/ssa.py: server-side apply and managedFields on a real CRD schema and a Deployment."""
import copy

import pytest
from hypothesis import given, settings, strategies as st

from tests.kubeapi.errors import ApiError
from tests.kubeapi.ssa import apply, decode_fields, encode_fields, update_managed_fields
from tests.kubeapi.typeinfo import TypeInfo
from tests.unit.kubeapi.crd_data import capi_schema

MACHINE = TypeInfo.for_crd_schema(capi_schema("Machine"))
DEPLOYMENT = TypeInfo.for_builtin("apps", "Deployment")
T1, T2, T3 = "2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z", "2025-01-03T00:00:00Z"


def machine_config(**spec):
    base = {"clusterName": "c", "bootstrap": {"dataSecretName": "boot"},
            "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachine", "name": "m"}}
    base.update(spec)
    return {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"name": "m", "namespace": "default", "labels": {"team": "a"}}, "spec": base}


def managers(obj):
    return {(e["manager"], e["operation"]): e for e in obj["metadata"]["managedFields"]}


def taint(key, value="x", effect="NoSchedule"):
    return {"key": key, "value": value, "effect": effect, "propagation": "Always"}


def test_create_by_apply_records_the_applied_fields():
    config = machine_config(taints=[taint("k1")], readinessGates=[{"conditionType": "Ready"}])
    result = apply(None, config, "kubectl", False, MACHINE, now=T1)
    assert result["spec"] == config["spec"]
    (entry,) = result["metadata"]["managedFields"]
    assert {k: entry[k] for k in ("manager", "operation", "apiVersion", "time", "fieldsType")} == {
        "manager": "kubectl", "operation": "Apply", "apiVersion": "cluster.x-k8s.io/v1beta2", "time": T1,
        "fieldsType": "FieldsV1"}
    assert entry["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:team": {}}},
        "f:spec": {
            "f:bootstrap": {"f:dataSecretName": {}},
            "f:clusterName": {},
            "f:infrastructureRef": {"f:apiGroup": {}, "f:kind": {}, "f:name": {}},
            "f:readinessGates": {'k:{"conditionType":"Ready"}': {".": {}, "f:conditionType": {}}},
            "f:taints": {'k:{"effect":"NoSchedule","key":"k1"}': {
                ".": {}, "f:effect": {}, "f:key": {}, "f:propagation": {}, "f:value": {}}},
        }}


def test_reapplying_the_same_configuration_is_a_no_op():
    config = machine_config(taints=[taint("k1")])
    live = apply(None, config, "kubectl", False, MACHINE, now=T1)
    again = apply(live, config, "kubectl", False, MACHINE, now=T2)
    assert again == live, "nothing changes, not even the time"


def test_two_managers_conflict_force_and_shared_ownership():
    live = apply(None, machine_config(minReadySeconds=5), "alice", False, MACHINE, now=T1)
    bob = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "m"},
           "spec": {"minReadySeconds": 10}}
    with pytest.raises(ApiError) as raised:
        apply(live, bob, "bob", False, MACHINE, now=T2)
    body = raised.value.status_body()
    assert (body["code"], body["reason"]) == (409, "Conflict")
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "alice": .spec.minReadySeconds'
    assert body["details"]["causes"] == [{"reason": "FieldManagerConflict", "message": 'conflict with "alice"',
                                          "field": ".spec.minReadySeconds"}]

    shared = apply(live, dict(bob, spec={"minReadySeconds": 5}), "bob", False, MACHINE, now=T2)
    assert shared["spec"] == live["spec"]
    owners = managers(shared)
    assert owners[("bob", "Apply")]["fieldsV1"] == {"f:spec": {"f:minReadySeconds": {}}}
    assert "f:minReadySeconds" in owners[("alice", "Apply")]["fieldsV1"]["f:spec"]
    assert "time" not in owners[("bob", "Apply")], "a no-op apply does not stamp the time"

    forced = apply(live, bob, "bob", True, MACHINE, now=T3)
    assert forced["spec"]["minReadySeconds"] == 10
    owners = managers(forced)
    assert "f:minReadySeconds" not in owners[("alice", "Apply")]["fieldsV1"]["f:spec"]
    assert owners[("bob", "Apply")]["time"] == T3


def test_fields_a_manager_stops_applying_are_removed_unless_owned_by_another():
    live = apply(None, machine_config(taints=[taint("k1"), taint("k2")], providerID="p"), "alice", False,
                 MACHINE, now=T1)
    live = apply(live, {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "m"},
                        "spec": {"taints": [taint("k2")]}}, "bob", False, MACHINE, now=T2)
    result = apply(live, machine_config(), "alice", False, MACHINE, now=T3)
    assert result["spec"]["taints"] == [taint("k2")], "k1 dropped; k2 kept because bob applies it too"
    assert "providerID" not in result["spec"]
    assert result["metadata"]["labels"] == {"team": "a"}


def test_list_map_items_merge_by_key_across_managers():
    live = apply(None, machine_config(taints=[taint("k1")]), "alice", False, MACHINE, now=T1)
    bob = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "m"},
           "spec": {"taints": [taint("k2"), taint("k1", effect="NoExecute")]}}
    live = apply(live, bob, "bob", False, MACHINE, now=T2)
    assert [(t["key"], t["effect"]) for t in live["spec"]["taints"]] == [
        ("k1", "NoSchedule"), ("k2", "NoSchedule"), ("k1", "NoExecute")]
    changed = apply(live, machine_config(taints=[taint("k1", value="y")]), "alice", False, MACHINE, now=T3)
    assert [t["value"] for t in changed["spec"]["taints"]] == ["y", "x", "x"]
    with pytest.raises(ApiError) as raised:
        apply(live, dict(bob, spec={"taints": [taint("k1", value="z")]}), "bob", False, MACHINE, now=T3)
    assert raised.value.status_body()["details"]["causes"][0]["field"] == \
        '.spec.taints[effect="NoSchedule",key="k1"].value'


def test_list_map_item_without_its_key_is_rejected():
    config = machine_config(taints=[{"value": "x", "effect": "NoSchedule"}])
    with pytest.raises(ApiError) as raised:
        apply(None, config, "kubectl", False, MACHINE, now=T1)
    assert raised.value.code == 400
    assert 'omits key field "key"' in raised.value.message


# ----------------------------------------------------------------------------- Update operations

def deployment(replicas=2, image="nginx:1"):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "nginx", "image": image}]}}}}


def test_create_by_update_owns_what_it_set_like_kubectl_create():
    fields = update_managed_fields(None, deployment(), "kubectl-create", "Update", None, DEPLOYMENT, now=T1)
    assert fields == [{
        "manager": "kubectl-create", "operation": "Update", "apiVersion": "apps/v1", "time": T1,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:replicas": {}, "f:selector": {},
                       "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                                      "f:spec": {"f:containers": {'k:{"name":"nginx"}': {
                                          ".": {}, "f:image": {}, "f:name": {}}}}}}}}]


def test_update_takes_changed_fields_from_other_managers_and_apply_then_conflicts():
    live = deployment()
    live["metadata"]["managedFields"] = update_managed_fields(None, live, "kubectl-create", "Update", None,
                                                              DEPLOYMENT, now=T1)
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 5
    scaled["metadata"]["managedFields"] = update_managed_fields(live, scaled, "kube-controller", "Update", None,
                                                                DEPLOYMENT, now=T2)
    owners = managers(scaled)
    assert owners[("kube-controller", "Update")]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in owners[("kubectl-create", "Update")]["fieldsV1"]["f:spec"]
    unchanged = update_managed_fields(scaled, copy.deepcopy(scaled), "someone", "Update", None, DEPLOYMENT, now=T3)
    assert unchanged == scaled["metadata"]["managedFields"], "an update that changes nothing owns nothing"

    config = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
              "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:2"}]}}}}
    with pytest.raises(ApiError) as raised:
        apply(scaled, config, "kubectl", False, DEPLOYMENT, now=T3)
    assert raised.value.message == (
        'Apply failed with 2 conflicts: conflicts with "kube-controller" using apps/v1 at %s:\n- .spec.replicas\n'
        'conflicts with "kubectl-create" using apps/v1 at %s:\n- .spec.template.spec.containers[name="nginx"].image'
        % (T2, T1))
    result = apply(scaled, config, "kubectl", True, DEPLOYMENT, now=T3)
    assert result["spec"]["replicas"] == 1
    assert result["spec"]["template"]["spec"]["containers"] == [{"name": "nginx", "image": "nginx:2"}]
    assert [e["manager"] for e in result["metadata"]["managedFields"]] == ["kubectl", "kubectl-create"], \
        "Apply entries first; kube-controller lost its only field"


def test_status_subresource_entry_and_ignored_paths():
    live = deployment()
    new = copy.deepcopy(live)
    new["status"] = {"replicas": 2}
    new["spec"]["replicas"] = 9  # reset by the status strategy on a real server
    fields = update_managed_fields(live, new, "controller", "Update", "status", DEPLOYMENT, now=T1,
                                   ignored_paths=["spec"])
    assert fields == [{"manager": "controller", "operation": "Update", "apiVersion": "apps/v1", "time": T1,
                       "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:replicas": {}}},
                       "subresource": "status"}]


# ------------------------------------------------------------------------------------ FieldsV1

_ELEMENT = st.one_of(
    st.builds(lambda n: ("f", n), st.text("abcxyz-./", min_size=1, max_size=4)),
    st.builds(lambda n: ("k", '{"name":"%s"}' % n), st.text("abc", min_size=1, max_size=3)),
    st.builds(lambda n: ("v", '"%s"' % n), st.text("abc", max_size=3)),
)


@settings(max_examples=60, deadline=None)
@given(st.sets(st.lists(_ELEMENT, min_size=1, max_size=4).map(tuple), max_size=12))
def test_fields_v1_round_trips(paths):
    assert decode_fields(encode_fields(paths)) == paths
