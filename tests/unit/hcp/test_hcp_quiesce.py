"""hcp_quiesce: the pure patches and judgements, the order of a run; hcp_quiesce and capi_health: documentation = argspec.

capi_health's judgement: tests/unit/hcp/test_capi_health.py."""
import copy
import datetime

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import quiesce as hcp_quiesce
from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    IN_PROGRESS_ANNOTATION,
    PAUSED_ANNOTATION,
    PAUSED_UNTIL_ANNOTATION,
    PHASE_ANNOTATION,
    PRIVATE_TYPES_ANNOTATION,
    REPLICAS_ANNOTATION,
    SCOPE_ANNOTATION,
    STOPPED_AT_ANNOTATION,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.quiesce import (
    QuiesceError,
    QuiesceService,
)
from ansible_collections.hypershift.private_capi.plugins.modules import capi_health as capi_health_module
from ansible_collections.hypershift.private_capi.plugins.modules import hcp_quiesce as hcp_quiesce_module
from tests.unit.module_docs import assert_argspec_matches_documentation

NS = "clusters-hc-01"


def deployment(name, replicas=1, recorded=None, available=None):
    annotations = {} if recorded is None else {REPLICAS_ANNOTATION: str(recorded)}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS, "annotations": annotations},
            "spec": {"replicas": replicas}, "status": {"availableReplicas": replicas if available is None else available}}


def test_module_documentation_matches_argspec():
    assert_argspec_matches_documentation(hcp_quiesce_module)
    assert_argspec_matches_documentation(capi_health_module)


def test_fence_records_the_original_once_and_unfence_restores_it():
    hostedcluster = {"metadata": {"annotations": {}}, "spec": {"pausedUntil": "2030-01-01T00:00:00Z"}}
    patch = hcp_quiesce.fence_patch(hostedcluster)
    assert patch == {"spec": {"pausedUntil": "true"},
                     "metadata": {"annotations": {PAUSED_UNTIL_ANNOTATION: "2030-01-01T00:00:00Z"}}}
    assert hostedcluster == {"metadata": {"annotations": {}}, "spec": {"pausedUntil": "2030-01-01T00:00:00Z"}}
    fenced = {"metadata": {"annotations": {PAUSED_UNTIL_ANNOTATION: "2030-01-01T00:00:00Z"}}, "spec": {"pausedUntil": "true"}}
    assert hcp_quiesce.fence_patch(fenced) is None
    # a resumed run whose fence was lifted by someone keeps the first record
    assert hcp_quiesce.fence_patch(dict(fenced, spec={})) == {"spec": {"pausedUntil": "true"}}
    assert hcp_quiesce.unfence_patch(fenced) == {
        "metadata": {"annotations": {PAUSED_UNTIL_ANNOTATION: None, PHASE_ANNOTATION: None}},
        "spec": {"pausedUntil": "2030-01-01T00:00:00Z"}}


def test_fence_of_an_unset_paused_until_records_none_and_unfence_removes_it():
    patch = hcp_quiesce.fence_patch({"metadata": {}, "spec": {}})
    assert patch["metadata"]["annotations"][PAUSED_UNTIL_ANNOTATION] == "none"
    fenced = {"metadata": {"annotations": {PAUSED_UNTIL_ANNOTATION: "none", PHASE_ANNOTATION: "finish"}},
              "spec": {"pausedUntil": "true"}}
    assert hcp_quiesce.unfence_patch(fenced)["spec"] == {"pausedUntil": None}
    assert hcp_quiesce.unfence_patch({"metadata": {"annotations": {PHASE_ANNOTATION: "finish"}}}) == {
        "metadata": {"annotations": {PAUSED_UNTIL_ANNOTATION: None, PHASE_ANNOTATION: None}}}
    assert hcp_quiesce.unfence_patch({"metadata": {}}) is None


@pytest.mark.parametrize("obj, paused, expected", [
    ({"kind": "Cluster", "spec": {}}, True, {"spec": {"paused": True}}),
    ({"kind": "Cluster", "spec": {"paused": True}}, True, None),
    ({"kind": "Cluster", "spec": {"paused": True}}, False, {"spec": {"paused": False}}),
    ({"kind": "Cluster", "spec": {}}, False, {"spec": {"paused": False}}),
    ({"kind": "Cluster", "spec": {"paused": False}}, False, None),
    ({"kind": "MachineSet", "metadata": {}}, True, {"metadata": {"annotations": {PAUSED_ANNOTATION: "true"}}}),
    ({"kind": "MachineSet", "metadata": {"annotations": {PAUSED_ANNOTATION: "true"}}}, True, None),
    ({"kind": "MachineSet", "metadata": {"annotations": {PAUSED_ANNOTATION: ""}}}, False,
     {"metadata": {"annotations": {PAUSED_ANNOTATION: None}}}),
    ({"kind": "MachineDeployment", "metadata": {}}, False, None),
])
def test_pause_patch(obj, paused, expected):
    before = copy.deepcopy(obj)
    assert hcp_quiesce.pause_patch(obj, paused) == expected
    assert obj == before


NOW = "2026-11-24T21:14:03.512004Z"


def test_stop_records_once_and_start_goes_back_to_the_record():
    assert hcp_quiesce.stop_patch(deployment("cluster-api", replicas=2), NOW) == {
        "spec": {"replicas": 0}, "metadata": {"annotations": {REPLICAS_ANNOTATION: "2", STOPPED_AT_ANNOTATION: NOW}}}
    # a resumed run: the record (and when it was made) stays the original even though the Deployment is at 0 now
    assert hcp_quiesce.stop_patch(deployment("cluster-api", replicas=0, recorded=2), NOW) is None
    assert hcp_quiesce.stop_patch(deployment("cluster-api", replicas=1, recorded=2), NOW) == {"spec": {"replicas": 0}}
    assert hcp_quiesce.start_patch(deployment("cluster-api", replicas=0, recorded=2)) == {"spec": {"replicas": 2}}
    assert hcp_quiesce.start_patch(deployment("cluster-api", replicas=2, recorded=2)) is None
    assert hcp_quiesce.start_patch(deployment("cluster-api", replicas=0)) is None
    assert hcp_quiesce.unrecord_patch(deployment("cluster-api", recorded=2)) == {
        "metadata": {"annotations": {REPLICAS_ANNOTATION: None, STOPPED_AT_ANNOTATION: None}}}
    assert hcp_quiesce.unrecord_patch(deployment("cluster-api")) is None


def test_the_window_starts_at_the_earliest_recorded_stop():
    def stopped(name, at):
        found = deployment(name, replicas=0, recorded=1)
        if at is not None:
            found["metadata"]["annotations"][STOPPED_AT_ANNOTATION] = at
        return found
    later = "2026-11-24T21:14:04.000000Z"
    assert hcp_quiesce.stopped_at([stopped("capi-provider", later), stopped("cluster-api", NOW)]) == NOW
    # a record without its time (an older release) or with one that is not a time is left out, never guessed
    assert hcp_quiesce.stopped_at([stopped("cluster-api", None), stopped("capi-provider", "soon")]) is None
    assert hcp_quiesce.stopped_at([stopped("cluster-api", "soon"), stopped("capi-provider", later)]) == later
    assert hcp_quiesce.seconds_between(NOW, later) == 0.488


def test_a_record_that_is_not_a_number_names_the_deployment():
    with pytest.raises(QuiesceError, match=r"Deployment clusters-hc-01/cluster-api has annotation .*'two'"):
        hcp_quiesce.start_patch(deployment("cluster-api", recorded="two"))


def test_owned_pods_match_the_deployment_or_its_replicasets_only():
    def pod(name, owner):
        return {"metadata": {"name": name, "ownerReferences": [{"kind": "ReplicaSet", "name": owner}]}}
    pods = [pod("a", "cluster-api-7d9f8b6c5"), pod("b", "cluster-api"), pod("c", "cluster-api-extra-7d9f8b6c5"),
            pod("d", "capi-provider-5f6d7c8b9"), {"metadata": {"name": "e"}}]
    assert hcp_quiesce.owned_pods(pods, ["cluster-api"]) == ["a", "b"]
    assert hcp_quiesce.owned_pods(pods, ["cluster-api", "capi-provider"]) == ["a", "b", "d"]
    assert hcp_quiesce.owned_pods(pods, []) == []


def test_unavailable_lists_what_is_missing():
    deployments = [deployment("cluster-api", replicas=2, available=1), deployment("capi-provider")]
    assert hcp_quiesce.unavailable(deployments, {"cluster-api": 2, "capi-provider": 1}) == ["cluster-api (1/2 available)"]
    assert hcp_quiesce.unavailable(deployments, {"gone": 1}) == ["gone (0/1 available)"]


class FakeClient(object):
    """Objects by REST path; GET of a collection lists the objects under it; PATCH merges (None removes)."""

    def __init__(self, objects, fail_patch=None):
        self.objects = copy.deepcopy(objects)
        self.requests = []
        self.fail_patch = fail_patch

    def get(self, path, what):
        self.requests.append(("GET", path))
        return copy.deepcopy(self.objects[path])

    def get_or_none(self, path, what):
        self.requests.append(("GET", path))
        return copy.deepcopy(self.objects.get(path))

    def list(self, path, what):
        self.requests.append(("LIST", path))
        return [copy.deepcopy(obj) for key, obj in sorted(self.objects.items())
                if key.startswith(path + "/") and key.count("/") == path.count("/") + 1]

    def patch(self, path, body, what):
        self.requests.append(("PATCH", path))
        if self.fail_patch and self.fail_patch in path:
            raise hcp_quiesce.ApiError(500, "InternalError", "injected", what)
        self.objects[path] = merge(self.objects[path], body)
        return self.objects[path]


def merge(target, patch):
    result = dict(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = merge(result.get(key) or {}, value)
        else:
            result[key] = value
    return result


def hcp_objects():
    core = "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s" % NS
    return {
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusters.cluster.x-k8s.io": {
            "spec": {"versions": [{"name": "v1beta1", "storage": False}, {"name": "v1beta2", "storage": True}]}},
        "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters/hc-01": {
            "metadata": {"name": "hc-01", "annotations": {"keep": "me"}}, "spec": {}},
        core + "/clusters/hc-01-abc": {"kind": "Cluster", "metadata": {"name": "hc-01-abc"}, "spec": {}},
        core + "/machinedeployments/pool": {"kind": "MachineDeployment", "metadata": {"name": "pool"}},
        core + "/machinesets/pool-1": {"kind": "MachineSet", "metadata": {"name": "pool-1"}},
        "/apis/apps/v1/namespaces/%s/deployments/cluster-api" % NS: deployment("cluster-api", replicas=2),
        "/apis/apps/v1/namespaces/%s/deployments/other" % NS: deployment("other"),
    }


def params(**overrides):
    base = {"hcp_namespace": NS, "state": "quiesced", "hostedcluster_name": "hc-01", "hostedcluster_namespace": "clusters",
            "fence": True, "pause_group": "cluster.x-k8s.io", "settle_seconds": 0,
            "deployments": ["cluster-api", "karpenter-operator"], "wait_timeout": 5, "remove_records": False,
            "deployment_patches": []}
    base.update(overrides)
    return base


def run(client, **overrides):
    service = QuiesceService(client, params(**overrides), sleep=lambda seconds: None)
    return service, service.run()


def test_quiesce_then_resume_round_trips_and_a_second_run_changes_nothing():
    original = hcp_objects()
    client = FakeClient(original)
    service, result = run(client)
    assert service.changed and result["core_version"] == "v1beta2"
    assert [a["action"] for a in service.actions] == ["fence", "pause", "pause", "pause", "record replicas and scale to 0"]
    assert result["deployments"] == ["cluster-api"] and result["replicas"] == {"cluster-api": 2}
    hc = client.objects["/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters/hc-01"]
    assert hc["spec"]["pausedUntil"] == "true" and hc["metadata"]["annotations"][PAUSED_UNTIL_ANNOTATION] == "none"
    assert result["hostedcluster_annotations"] == {"keep": "me"}
    sent = len(client.requests)
    again = run(client)[0]
    assert not again.changed and "PATCH" not in [request[0] for request in client.requests[sent:]]
    resumed, result = run(client, state="resumed", remove_records=True)
    assert [a["action"] for a in resumed.actions] == [
        "scale back to the recorded replicas", "unpause", "unpause", "unpause", "remove the replica record", "lift fence"]
    assert result["replicas"] == {"cluster-api": 2}
    # what the round trip leaves: the Cluster's spec.paused=false, everything else as it was
    expected = copy.deepcopy(original)
    expected["/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/clusters/hc-01-abc" % NS]["spec"] = {"paused": False}
    for path, obj in expected.items():
        assert normalised(client.objects[path]) == normalised(obj), path


def normalised(obj):
    """Empty annotation maps and spec maps compare equal to absent ones (a merge patch leaves them empty)."""
    obj = copy.deepcopy(obj)
    metadata = obj.get("metadata") or {}
    if not metadata.get("annotations"):
        metadata.pop("annotations", None)
    if obj.get("spec") == {}:
        obj.pop("spec")
    return obj


def test_quiesce_fails_naming_the_pods_still_there_after_the_timeout():
    objects = hcp_objects()
    objects["/api/v1/namespaces/%s/pods/cluster-api-7d9f8b6c5-x1" % NS] = {"metadata": {
        "name": "cluster-api-7d9f8b6c5-x1", "ownerReferences": [{"name": "cluster-api-7d9f8b6c5"}]}}
    ticks = iter(range(100))
    service = QuiesceService(FakeClient(objects), params(wait_timeout=3), sleep=lambda seconds: None,
                             clock=lambda: next(ticks))
    with pytest.raises(QuiesceError, match=r"timed out after 3s waiting for the pods of Deployments cluster-api to go "
                                           r"in namespace clusters-hc-01: still cluster-api-7d9f8b6c5-x1"):
        service.run()


def test_a_cluster_unpaused_during_the_settle_time_fails_the_pause():
    client = FakeClient(hcp_objects())
    cluster = "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/clusters/hc-01-abc" % NS

    def operator_unpauses(seconds):
        client.objects[cluster]["spec"]["paused"] = False
    service = QuiesceService(client, params(settle_seconds=2), sleep=operator_unpauses)
    with pytest.raises(QuiesceError, match=r"\['hc-01-abc'\] in clusters-hc-01 were un-paused within 2s"):
        service.run()


def test_check_mode_waits_for_nothing_and_a_failed_patch_stops_the_run():
    objects = hcp_objects()
    objects["/api/v1/namespaces/%s/pods/cluster-api-x" % NS] = {
        "metadata": {"name": "cluster-api-x", "ownerReferences": [{"name": "cluster-api"}]}}
    service = QuiesceService(FakeClient(objects), params(), check_mode=True, sleep=lambda seconds: None)
    service.run()
    assert not any(path.endswith("/pods") for _verb, path in service.client.requests)
    # no write at all, not even a dry run; the plan is in the actions
    assert "PATCH" not in [verb for verb, _path in service.client.requests]
    assert service.changed and [a["action"] for a in service.actions][:2] == ["fence", "pause"]
    failing = QuiesceService(FakeClient(hcp_objects(), fail_patch="/machinedeployments/"), params(),
                             sleep=lambda seconds: None)
    with pytest.raises(hcp_quiesce.ApiError, match="injected"):
        failing.run()
    # the pauses are sent at once: the MachineSet's may or may not have gone out beside the failed one; nothing after
    actions = [(a["action"], a["kind"]) for a in failing.actions]
    assert actions[:1] == [("fence", "HostedCluster")] and ("pause", "Cluster") in actions
    assert ("pause", "MachineDeployment") not in actions and {a for a, _kind in actions} == {"fence", "pause"}


def test_pausing_a_group_without_crds_is_an_error_but_unpausing_it_is_nothing_to_do():
    objects = hcp_objects()
    with pytest.raises(QuiesceError, match="clusters.cluster.hypershift.openshift.io is not installed"):
        run(FakeClient(objects), pause_group="cluster.hypershift.openshift.io")
    service, result = run(FakeClient(objects), state="resumed", pause_group="cluster.hypershift.openshift.io",
                          fence=False, deployments=[])
    assert not service.changed and result["core_version"] is None


def test_controller_files_validates_entries_and_writes_atomically(tmp_path):
    from ansible_collections.hypershift.private_capi.plugins.action import controller_files
    from ansible_collections.hypershift.private_capi.plugins.modules import controller_files as controller_files_module

    assert_argspec_matches_documentation_without_auth(controller_files_module)
    target = str(tmp_path / "report.json")
    assert controller_files.file_specs([{"path": target, "content": "{}\n"}]) == [(target, b"{}\n", 0o644)]
    for files, message in (([], "non-empty list"), ([{"content": "x"}], r"files\[0\] must have a path"),
                           ([{"path": "report.json"}], "is relative"),
                           ([{"path": target, "mode": "rw"}], "not an octal mode"),
                           ([{"path": target, "dest": target}], "unknown keys dest"),
                           ([{"path": target, "content": 3}], "content must be a string, got int")):
        with pytest.raises(controller_files.FileSpecError, match=message):
            controller_files.file_specs(files)
    assert controller_files.current(target) == (None, None)
    controller_files.write_atomically(target, b"{}\n", 0o600)
    assert controller_files.current(target) == (b"{}\n", 0o600)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # no temporary file left


def assert_argspec_matches_documentation_without_auth(module):
    import yaml
    documented = yaml.safe_load(module.DOCUMENTATION)["options"]
    spec = module.argspec()
    assert set(spec) == set(documented)
    for name, option in spec.items():
        assert option.get("type") == documented[name].get("type") and option.get("elements") == documented[name].get("elements")


def test_a_deployment_patch_goes_in_the_write_that_scales_back_and_only_once():
    sidecar = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {
        "name": "cluster-api", "namespace": NS, "annotations": {"proxy-original": "{}"}},
        "spec": {"template": {"spec": {"containers": [{"name": "manager"}, {"name": "proxy"}]}}}}
    changes = hcp_quiesce.deployment_patches_by_name([sidecar], ["cluster-api", "capi-provider"])
    change = changes["cluster-api"]
    assert change == {"metadata": {"annotations": {"proxy-original": "{}"}},
                      "spec": {"template": {"spec": {"containers": [{"name": "manager"}, {"name": "proxy"}]}}}}
    stopped = deployment("cluster-api", replicas=0, recorded=2)
    stopped["spec"]["template"] = {"spec": {"containers": [{"name": "manager"}]}}
    assert hcp_quiesce.merge_patch_changes(stopped, change)
    merged = hcp_quiesce.merge_patches(change, hcp_quiesce.start_patch(stopped))
    assert merged["spec"] == {"template": change["spec"]["template"], "replicas": 2}
    assert merged["metadata"] == change["metadata"]
    # in place already (a resumed run): nothing to send
    applied = copy.deepcopy(stopped)
    applied["metadata"]["annotations"]["proxy-original"] = "{}"
    applied["spec"]["template"] = copy.deepcopy(change["spec"]["template"])
    assert not hcp_quiesce.merge_patch_changes(applied, change)
    assert hcp_quiesce.merge_patch_changes(applied, {"metadata": {"annotations": {"proxy-original": None}}})


def test_a_deployment_patch_for_another_deployment_is_refused():
    with pytest.raises(QuiesceError, match=r"deployment_patches\[0\] names Deployment 'operator', expected one of "
                                           r"deployments \['cluster-api'\]"):
        hcp_quiesce.deployment_patches_by_name([{"metadata": {"name": "operator"}}], ["cluster-api"])


def test_a_pause_is_observed_once_every_reported_paused_condition_is_true():
    def obj(name, conditions=None, v1beta1=False):
        status = {"v1beta2": {"conditions": conditions}} if v1beta1 else {"conditions": conditions}
        return {"metadata": {"name": name}, "status": status if conditions is not None else {}}

    objects = [("Cluster", obj("wl", [{"type": "Paused", "status": "True"}])),
               ("MachineSet", obj("ms", [{"type": "Ready", "status": "True"}, {"type": "Paused", "status": "False"}])),
               ("Machine", obj("m-1", [{"type": "Paused", "status": "False"}], v1beta1=True)),
               ("Machine", obj("m-2")),  # never reconciled, or an older controller: not waited for
               ("MachineDeployment", obj("md", [{"type": "Available", "status": "True"}]))]
    assert hcp_quiesce.pause_unobserved(objects) == ["Machine/m-1", "MachineSet/ms"]
    assert hcp_quiesce.pause_unobserved(objects[:1] + objects[3:]) == []


# The pre-install's hold (fence_hold_seconds): a time, not "true"; the migration's fence takes it over.
HOLD_NOW = datetime.datetime(2026, 12, 4, 22, 0, 0, tzinfo=datetime.timezone.utc)


def _held(annotations=None, paused_until=None, version="41"):
    return {"metadata": {"name": "hc-1", "namespace": "clusters", "resourceVersion": version,
                         "annotations": dict(annotations or {})},
            "spec": {} if paused_until is None else {"pausedUntil": paused_until}}


def test_a_hold_writes_a_time_records_the_original_once_and_the_fence_takes_it_over():
    hostedcluster = _held()
    patch = hcp_quiesce.hold_patch(hostedcluster, HOLD_NOW, 7200)
    assert patch == {"spec": {"pausedUntil": "2026-12-05T00:00:00Z"},
                     "metadata": {"resourceVersion": "41", "annotations": {PAUSED_UNTIL_ANNOTATION: "none"}}}
    assert hostedcluster == _held()  # input not mutated
    held = _held({PAUSED_UNTIL_ANNOTATION: "none"}, "2026-12-05T00:00:00Z")
    # a second run within half a hold changes nothing; past half of it the hold is extended, the record kept
    assert hcp_quiesce.hold_patch(held, HOLD_NOW + datetime.timedelta(seconds=3600), 7200) is None
    later = hcp_quiesce.hold_patch(held, HOLD_NOW + datetime.timedelta(seconds=3601), 7200)
    assert later == {"spec": {"pausedUntil": "2026-12-05T01:00:01Z"}, "metadata": {"resourceVersion": "41"}}
    # the migration's fence takes the hold over ("true", the record kept) and lifting it restores the original
    assert hcp_quiesce.fence_patch(held) == {"spec": {"pausedUntil": "true"}}
    assert hcp_quiesce.unfence_patch(dict(held, spec={"pausedUntil": "true"}))["spec"] == {"pausedUntil": None}
    # a fence ("true", the migration's or the user's own) is never shortened to a time
    assert hcp_quiesce.hold_patch(_held(paused_until="true"), HOLD_NOW, 7200) is None


def test_a_hold_keeps_a_users_later_pause_and_records_an_earlier_one():
    user_later = _held(paused_until="2026-12-06T00:00:00+02:00")
    assert hcp_quiesce.hold_patch(user_later, HOLD_NOW, 7200) is None
    user_earlier = _held(paused_until="2026-12-04T22:30:00.5Z")
    assert hcp_quiesce.hold_patch(user_earlier, HOLD_NOW, 7200)["metadata"]["annotations"] == {
        PAUSED_UNTIL_ANNOTATION: "2026-12-04T22:30:00.5Z"}
    assert hcp_quiesce.paused_until_time("2026-12-04T23:00:00-01:30") == datetime.datetime(
        2026, 12, 5, 0, 30, tzinfo=datetime.timezone.utc)
    assert [hcp_quiesce.paused_until_time(value) for value in ("true", "", None, "tomorrow", 7)] == [None] * 5


@pytest.mark.parametrize("annotations, state", [
    ({SCOPE_ANNOTATION: "legacy", IN_PROGRESS_ANNOTATION: "true"}, "in-progress"),
    ({PRIVATE_TYPES_ANNOTATION: "true"}, "migrated"),
])
def test_a_hold_refuses_a_hostedcluster_a_migration_holds_or_has_migrated(annotations, state):
    with pytest.raises(hcp_quiesce.QuiesceError) as raised:
        hcp_quiesce.hold_patch(_held(annotations), HOLD_NOW, 7200)
    assert "HostedCluster clusters/hc-1 is %s" % state in str(raised.value)
    assert "nothing was changed" in str(raised.value)


def test_a_hold_is_accepted_only_as_a_fence_put_up():
    params = dict(hcp_quiesce.quiesce_params("clusters-hc-1", hostedcluster_name="hc-1", fence_hold_seconds=60),
                  holder="")
    assert hcp_quiesce.QuiesceModule.option_problems(dict(params, fence=True)) == []
    assert "fence_hold_seconds needs fence=true and state=quiesced" in hcp_quiesce.QuiesceModule.option_problems(params)[0]
    assert hcp_quiesce.QuiesceModule.option_problems(dict(params, fence=True, state="resumed"))
