"""hypershift.private_capi.capi_object_migrate against a real control plane, on realistic HCP namespaces.

Fixtures come from testenv/hcp/build.py (HyperShift's and CAPI's real CRDs, private twins rendered by
crd_render). The module runs as its own process (testenv/module_runner.py, the real module file);
one test drives it through ansible-playbook. Every assertion reads the server back.
"""
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    AGENT_EXTRA_GROUPS,
    TO_PRIVATE,
    TO_STANDARD,
    GroupMap,
    translate_object,
)
from testenv import REPO_ROOT
from testenv.hcp import build
from testenv.hcp.state import SOURCE_UID_ANNOTATION, SOURCE_VERSION_ANNOTATION, left_in_groups, read_namespace, snapshot
from testenv.module_runner import run_module
from testenv.client import wait_for

pytestmark = pytest.mark.slow

PRIVATE = "cluster.hypershift.openshift.io"
AGENT_MAP = GroupMap(AGENT_EXTRA_GROUPS)
PROVENANCE = (SOURCE_UID_ANNOTATION, SOURCE_VERSION_ANNOTATION)


@pytest.fixture(scope="module")
def hcp(real_cluster, hcp_crds):
    """The session's real control plane with every CRD the fixtures use (standard and private), plus a REST session;
    each test loads its own HCP namespace."""
    return real_cluster, build.RestSession(real_cluster.kubeconfig), hcp_crds


def load(hcp, platform, hc_namespace, hc_name, **options):
    _server, session, crds = hcp
    objects = build.build_hcp_namespace(platform, hc_namespace, hc_name, **options)
    build.load_objects(session, objects, crds)
    return objects[0]["metadata"]["name"]


def migrate(server, namespace, check_mode=False, diff=False, **options):
    args = dict(kubeconfig=server.kubeconfig, hcp_namespace=namespace)
    args.update(options)
    return run_module("capi_object_migrate", args, check_mode=check_mode, diff=diff)


def is_capi(key, private, group_map=AGENT_MAP):
    group = key.split("/", 1)[0]
    mapped = group_map.is_private(group) if private else group_map.is_standard(group)
    return bool(group) and mapped


def warned(result, text):
    return text in json.dumps(result.get("warnings") or [])


def without_provenance(obj):
    copy = json.loads(json.dumps(obj))
    annotations = copy["metadata"].get("annotations") or {}
    for key in PROVENANCE:
        annotations.pop(key, None)
    if not annotations:
        copy["metadata"].pop("annotations", None)
    return copy


def settled_state(hcp, namespace, direction=TO_PRIVATE, group_map=AGENT_MAP):
    """The canonical state once the garbage collector has removed every source object."""
    _server, session, crds = hcp
    source_is_private = direction == TO_STANDARD
    wait_for(lambda: not left_in_groups(session, namespace, crds, lambda group: is_capi(group, source_is_private, group_map)),
             "the source objects of %s to be gone" % namespace, timeout=90)  # the real GC: orphan finalizers
    gc_barrier(session, namespace)
    return snapshot(session, namespace, crds)


def gc_barrier(session, namespace, timeout=30):
    """Wait until the real garbage collector has collected a canary deleted now: what it was going to do about
    deletions made before (an owner taken from under the HostedControlPlane) it has had the time to do."""
    name = "gc-canary-%d" % int(time.monotonic() * 1000)
    path = "/api/v1/namespaces/%s/configmaps" % namespace
    _code, owner = session.request("POST", path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    session.request("POST", path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": name + "-dependent", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": name,
                                                          "uid": owner["metadata"]["uid"]}]}})
    session.request("DELETE", "%s/%s" % (path, name))
    wait_for(lambda: session.request("GET", "%s/%s-dependent" % (path, name), expect=(200, 404))[0] == 404,
             "the garbage collector to collect the canary in %s" % namespace, timeout=timeout)


def expected_after(before, direction, skipped_keys):
    """Each source (not skipped) translated, keyed in the target group; the rest of the namespace unchanged."""
    expected = {}
    source_is_private = direction == TO_STANDARD
    for key, obj in before.items():
        if key in skipped_keys:
            continue
        if is_capi(key, source_is_private):
            translated = translate_object(obj, direction, AGENT_MAP)
            group = translated["apiVersion"].rpartition("/")[0]
            expected["%s/%s/%s" % (group, obj["kind"], obj["metadata"]["name"])] = without_provenance(translated)
        else:
            expected[key] = obj
    return expected


def assert_states_equal(expected, actual, repoint=()):
    """Equal after provenance annotations are ignored; `repoint` = keys whose ownerReferences were re-pointed."""
    assert sorted(expected) == sorted(actual), "objects differ: missing %s, unexpected %s" % (
        sorted(set(expected) - set(actual)), sorted(set(actual) - set(expected)))
    for key in expected:
        want = without_provenance(expected[key])
        got = without_provenance(actual[key])
        if key in repoint:
            want = json.loads(json.dumps(want))
            for ref in want["metadata"].get("ownerReferences") or ():
                ref["apiVersion"] = got_ref_version(got, ref)
        assert want == got, "%s differs:\nexpected %s\nactual   %s" % (
            key, json.dumps(want, sort_keys=True), json.dumps(got, sort_keys=True))


def got_ref_version(got, ref):
    for candidate in got["metadata"].get("ownerReferences") or ():
        if candidate["uid"] == ref["uid"]:
            return candidate["apiVersion"]
    return ref["apiVersion"]


def skipped_keys_of(result):
    keys = set()
    for entry in result["skipped"]:
        if entry["reason"].startswith("not copied"):
            keys.update(key for key in result["_before_keys"] if key.endswith("/%s/%s" % (entry["kind"], entry["name"])))
    return keys


@pytest.mark.parametrize("platform,machines", [("AWS", 100), ("Agent", 3), ("KubeVirt", 5), ("Azure", 4)])
def test_migrate_and_delete_source_per_platform(hcp, platform, machines):
    server, session, crds = hcp
    # no Machine being deleted: delete_source refuses while one is (test_an_in_flight_deletion_is_never_cut_short)
    namespace = load(hcp, platform, "plat", platform.lower(), machines=machines, failed=2, deleting=0)
    before = snapshot(session, namespace, crds)
    extra = {"extra_groups": AGENT_EXTRA_GROUPS} if platform == "Agent" else {}
    result = migrate(server, namespace, delete_source=True, verify=True, **extra)
    assert not result.failed, result.get("msg") or result.stderr[-3000:]
    result["_before_keys"] = list(before)
    skipped = skipped_keys_of(result)
    assert not skipped, result["skipped"]
    copied = len([key for key in before if is_capi(key, False) and key not in skipped])
    after = settled_state(hcp, namespace)
    # every source present once, in the private group, with equal content; the rest of the namespace untouched
    dependents = {"hypershift.openshift.io/HostedControlPlane/%s" % platform.lower()}
    if platform == "KubeVirt":
        dependents |= {key for key in before if key.startswith("/Secret/") and key.endswith("-userdata")}
    assert_states_equal(expected_after(before, TO_PRIVATE, skipped), after, repoint=dependents)
    hostedcontrolplane = after["hypershift.openshift.io/HostedControlPlane/%s" % platform.lower()]
    assert [(ref["apiVersion"], ref["uid"]) for ref in hostedcontrolplane["metadata"]["ownerReferences"]] == [
        ("%s/v1beta2" % PRIVATE, "Cluster/%s" % hostedcontrolplane["spec"]["infraID"])]
    assert hostedcontrolplane["metadata"]["ownerReferences"][0]["controller"] is True
    assert "/Secret/%s-kubeconfig" % hostedcontrolplane["spec"]["infraID"] in after
    assert len(result["uid_map"]) == copied
    counts = result["counts"]
    assert counts["Machine"]["found"] == machines and counts["Machine"]["created"] == machines
    assert counts["Machine"]["deleted"] == machines and not counts["Machine"].get("skipped")
    assert result["verify"]["checked"] == copied and result["verify"]["failures"] == []
    # the provenance annotation links each copy to its source uid
    live = {obj["metadata"]["name"] + obj["kind"]: obj for obj in read_namespace(session, namespace, crds)}
    assert all(obj["metadata"]["annotations"][SOURCE_UID_ANNOTATION] in result["uid_map"]
               for obj in live.values() if is_capi(obj["apiVersion"] + "/", True))
    # one LIST per namespaced resource type (the scan for dependents: a real server serves ~45), then per object
    scanned = len(server.kubectl("api-resources", "--namespaced=true", "--verbs=list", "-o", "name").stdout.split())
    assert (result["api_calls"]["total"] - scanned) / copied <= (3.5 if machines >= 50 else 5.0), result["api_calls"]
    again = migrate(server, namespace, delete_source=True)
    assert not again.failed and again["changed"] is False and again["api_calls"]["by_method"].keys() == {"GET"}


def test_an_in_flight_deletion_is_never_cut_short(hcp):
    """A Machine being deleted (its finalizer held while its node drains and its instance terminates) is not copied,
    and delete_source refuses to delete anything while it holds the finalizer: stripping it would end the deletion
    without that work. With carry_deletions the deletion goes on in the private group: the copies are deleted
    through the API and keep their finalizers until the (new) controllers release them."""
    server, session, crds = hcp
    namespace = load(hcp, "AWS", "inflight", "aws", machines=2, failed=0, deleting=1)
    deleting = {(obj["kind"], obj["metadata"]["name"]): obj for obj in read_namespace(session, namespace, crds)
                if obj["metadata"].get("deletionTimestamp") and is_capi(obj["apiVersion"] + "/", False)}
    assert sorted(kind for kind, _name in deleting) == ["AWSMachine", "Machine"], sorted(deleting)
    refused = migrate(server, namespace, delete_source=True, verify=True)
    assert refused.failed and "not deleting any source: a deletion is in flight - 2 objects not copied (being " \
                              "deleted, or going with an owner that is) still hold finalizers" in refused["msg"], \
        refused.get("msg")
    for kind, name in deleting:
        assert "%s %s/%s [" % (kind, namespace, name) in refused["msg"], refused["msg"]
    assert not [entry for entry in refused["plan"] if entry["action"].startswith(("delete", "remove_finalizers"))]
    assert {kind: (counts["found"], counts["leaving"], counts["remaining"]) for kind, counts in refused["counts"].items()
            if kind in ("Machine", "AWSMachine")} == {"Machine": (3, 1, 2), "AWSMachine": (3, 1, 2)}, refused["counts"]
    for (kind, name), obj in deleting.items():  # still there, deletion in flight, finalizers untouched
        live = [o for o in read_namespace(session, namespace, crds) if (o["kind"], o["metadata"]["name"]) == (kind, name)]
        assert live and live[0]["metadata"]["finalizers"] == obj["metadata"]["finalizers"], (kind, name, live)
    # carry_deletions, in the migrate role's two phases: the copy phase copies those too, marks each source with its
    # copy's uid and deletes the copy through the API at once, keeping the finalizers for the target group's
    # controllers
    copied = migrate(server, namespace, delete_source=False, verify=True, carry_deletions=True)
    assert not copied.failed, copied.get("msg")
    carried_steps = [(entry["kind"], entry["name"]) for entry in copied["plan"] if entry["action"] == "carry_deletion"]
    assert sorted(carried_steps) == sorted(deleting), copied["plan"]
    marks = {(entry["kind"], entry["name"]): entry["copy_uid"] for entry in copied["plan"]
             if entry["action"] == "mark_carried" and entry["deletes_copy"]}
    assert sorted(marks) == sorted(deleting), copied["plan"]
    assert (copied["counts"]["Machine"]["leaving"], copied["counts"]["Machine"]["remaining"]) == (1, 2), copied["counts"]
    live = read_namespace(session, namespace, crds)
    copies = {}
    for (kind, name), obj in deleting.items():
        copy = [o for o in live if (o["kind"], o["metadata"]["name"]) == (kind, name)
                and o["apiVersion"].split("/")[0].endswith(".hypershift.openshift.io")]
        assert copy and copy[0]["metadata"].get("deletionTimestamp"), (kind, name, copy)
        assert copy[0]["metadata"]["finalizers"] == obj["metadata"]["finalizers"], (copy[0]["metadata"], obj["metadata"])
        assert marks[(kind, name)] == copy[0]["metadata"]["uid"]
        copies[(kind, name)] = copy[0]
    # the target group's controllers finish (drained, terminated) before the delete phase: they release the
    # finalizers, the copies go
    for (kind, name), copy in copies.items():
        path = "/apis/%s/namespaces/%s/%ss/%s" % (copy["apiVersion"], namespace, kind.lower(), name)
        session.request("PATCH", path, {"metadata": {"finalizers": None}})
    wait_for(lambda: not [o for o in read_namespace(session, namespace, crds)
                          if o["apiVersion"].split("/")[0].endswith(".hypershift.openshift.io")
                          and o["metadata"].get("deletionTimestamp")],
             "the carried deletions to complete", timeout=30)
    # the delete phase never copies a carried source again (the drain and the termination would run twice): the
    # sources go like the others
    finished = migrate(server, namespace, delete_source=True, verify=True, carry_deletions=True)
    assert not finished.failed, finished.get("msg")
    recopied = [entry for entry in finished["plan"] if (entry["kind"], entry["name"]) in deleting
                and entry["action"] not in ("carried", "remove_finalizers", "delete", "delete_collection")]
    assert not recopied, recopied
    assert sorted((entry["kind"], entry["name"]) for entry in finished["plan"] if entry["action"] == "carried") \
        == sorted(deleting), finished["plan"]
    settled_state(hcp, namespace)  # every source gone, those whose deletion was carried too
    live = {(o["kind"], o["metadata"]["name"]) for o in read_namespace(session, namespace, crds)}
    assert not live & set(deleting), sorted(live & set(deleting))
    again = migrate(server, namespace, delete_source=True, verify=True, carry_deletions=True)
    assert not again.failed and again["changed"] is False, again.get("msg") or again["plan"]


def test_round_trip_standard_private_standard_restores_content(hcp):
    server, session, crds = hcp
    namespace = load(hcp, "AWS", "trip", "aws", machines=4, deleting=0)
    before = snapshot(session, namespace, crds)
    there = migrate(server, namespace, delete_source=True)
    assert not there.failed, there.get("msg")
    settled_state(hcp, namespace)
    # the copies are private now; pause is per Cluster and was copied, so require_paused holds on the way back
    back = migrate(server, namespace, direction="to_standard", delete_source=True, verify=True)
    assert not back.failed, back.get("msg")
    after = settled_state(hcp, namespace, TO_STANDARD)
    assert_states_equal(before, after, repoint={"hypershift.openshift.io/HostedControlPlane/aws"})


def test_check_mode_writes_nothing_returns_the_plan_and_diff(hcp):
    server, session, crds = hcp
    namespace = load(hcp, "Azure", "check", "azure", machines=3, deleting=0)
    before = snapshot(session, namespace, crds)
    since = server.request_counts()["entries"][-1]["seq"]
    preview = migrate(server, namespace, check_mode=True, diff=True, delete_source=True)
    assert not preview.failed, preview.get("msg")
    assert preview["changed"] is True
    writes = [entry for entry in server.request_counts(since)["entries"]
              if entry["verb"] not in ("get", "list", "watch") and entry["namespace"] == namespace]
    assert writes, "check mode must send its writes as server-side dry runs"
    assert snapshot(session, namespace, crds) == before
    actions = [entry["action"] for entry in preview["plan"]]
    assert actions.index("create") < actions.index("repoint_dependent") < actions.index("delete_collection")
    created = [entry for entry in preview["plan"] if entry["action"] == "create"]
    assert [entry["kind"] for entry in created][:1] == ["Cluster"]  # owners first
    assert len(preview["diff"]) == len(created)
    assert preview["diff"][0]["after"]["apiVersion"].startswith(PRIVATE)


def test_rerun_completes_partial_copies_reports_conflicts_and_force_overwrites(hcp):
    server, session, crds = hcp
    namespace = load(hcp, "AWS", "resume", "aws", machines=3, deleting=0)
    first = migrate(server, namespace)
    assert not first.failed, first.get("msg")
    targets = {obj["kind"] + "/" + obj["metadata"]["name"]: obj for obj in read_namespace(session, namespace, crds)
               if obj["apiVersion"].startswith(PRIVATE) or obj["apiVersion"].startswith("infrastructure." + PRIVATE)}
    machine = next(obj for key, obj in sorted(targets.items()) if key.startswith("Machine/"))
    machine_path = "/apis/%s/namespaces/%s/machines/%s" % (machine["apiVersion"], namespace, machine["metadata"]["name"])
    # an interrupted run: a copy without its status, another with a stale owner uid
    session.request("PUT", machine_path + "/status", {key: value for key, value in machine.items() if key != "status"})
    # (as a verbatim copy would have it: still owned by the standard Cluster, which the Orphan delete would strip)
    template = next(obj for key, obj in targets.items() if key.startswith("AWSMachineTemplate/"))
    _code, source_clusters = session.request("GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/clusters" % namespace)
    template["metadata"]["ownerReferences"][0].update(apiVersion="cluster.x-k8s.io/v1beta2",
                                                      uid=source_clusters["items"][0]["metadata"]["uid"])
    session.request("PUT", "/apis/%s/namespaces/%s/awsmachinetemplates/%s" % (
        template["apiVersion"], namespace, template["metadata"]["name"]), template)
    # and a source that changed after it was copied
    _code, deployment = session.request("GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/machinedeployments/aws-pool-1" % namespace)
    deployment["spec"]["replicas"] = 5
    session.request("PUT", "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/machinedeployments/aws-pool-1" % namespace, deployment)

    second = migrate(server, namespace, delete_source=True)
    assert second.failed and "not deleting any source" in second["msg"] and "MachineDeployment aws-pool-1" in second["msg"]
    assert second["counts"]["Machine"]["updated"] == 1 and second["counts"]["AWSMachineTemplate"]["updated"] == 1
    conflict = second["conflicts"][0]
    assert conflict["kind"] == "MachineDeployment" and not conflict["overwritten"]
    assert {"path": "spec.replicas", "before": 3, "after": 5, "change": "changed"} in conflict["differences"]
    _code, fixed = session.request("GET", machine_path)
    assert fixed["status"]["phase"] in ("Running", "Failed")
    assert not [entry for entry in second["plan"] if entry["action"] in ("delete", "delete_collection")]

    third = migrate(server, namespace, delete_source=True, force=True, verify=True)
    assert not third.failed, third.get("msg")
    assert third["conflicts"][0]["overwritten"] is True
    after = settled_state(hcp, namespace)
    assert after["%s/MachineDeployment/aws-pool-1" % PRIVATE]["spec"]["replicas"] == 5


def test_a_copy_left_going_by_an_earlier_deletion_is_awaited_then_made_again(hcp):
    """A retry that comes before an earlier deletion of a copy has finished (a rescue's, with Orphan: the garbage
    collector's finalizer on it a moment longer) never takes the going object for the copy: it waits until the real
    garbage collector lets it go and creates the copy again. One held by another finalizer is refused at once, naming
    it (its controller would have to release it, and the window has paused it); nothing is written."""
    server, session, crds = hcp
    namespace = load(hcp, "AWS", "going", "aws", machines=1, deleting=0)
    first = migrate(server, namespace)
    assert not first.failed, first.get("msg")

    def private(kind):
        found = [obj for obj in read_namespace(session, namespace, crds)
                 if obj["kind"] == kind and obj["apiVersion"].startswith("infrastructure." + PRIVATE)]
        assert len(found) == 1, (kind, found)
        obj = found[0]
        return obj, "/apis/%s/namespaces/%s/%ss/%s" % (obj["apiVersion"], namespace, kind.lower(), obj["metadata"]["name"])

    # held by a finalizer the garbage collector does not remove
    template, template_path = private("AWSMachineTemplate")
    session.request("PATCH", template_path, {"metadata": {"finalizers": ["example.com/hold"]}})
    session.request("DELETE", template_path)
    held = migrate(server, namespace)
    assert held.failed and "AWSMachineTemplate %s/%s" % (namespace, template["metadata"]["name"]) in held["msg"], held.get("msg")
    assert "['example.com/hold'] hold it" in held["msg"] and "then re-run" in held["msg"], held["msg"]
    session.request("PATCH", template_path, {"metadata": {"finalizers": None}})
    wait_for(lambda: session.request("GET", template_path, expect=(200, 404))[0] == 404, "the held template to go")

    # going in the foreground: the garbage collector keeps it until its blocking dependent is gone, which the test
    # holds for a few seconds, while the module runs
    cluster, cluster_path = private("AWSCluster")
    dependent = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "holds-the-awscluster", "namespace": namespace, "finalizers": ["example.com/hold"],
        "ownerReferences": [{"apiVersion": cluster["apiVersion"], "kind": "AWSCluster", "name": cluster["metadata"]["name"],
                             "uid": cluster["metadata"]["uid"], "blockOwnerDeletion": True}]}}
    dependent_path = "/api/v1/namespaces/%s/configmaps/holds-the-awscluster" % namespace
    session.request("POST", "/api/v1/namespaces/%s/configmaps" % namespace, dependent)
    session.request("DELETE", cluster_path, {"propagationPolicy": "Foreground"})
    wait_for(lambda: session.request("GET", dependent_path)[1]["metadata"].get("deletionTimestamp"),
             "the garbage collector to delete the AWSCluster's blocking dependent")
    going = session.request("GET", cluster_path)[1]
    assert going["metadata"]["deletionTimestamp"] and going["metadata"]["finalizers"] == ["foregroundDeletion"]
    release = threading.Timer(3.0, session.request, ("PATCH", dependent_path, {"metadata": {"finalizers": None}}))
    release.start()
    try:
        again = migrate(server, namespace, verify=True)
    finally:
        release.join()
    assert not again.failed, again.get("msg")
    awaited = [entry for entry in again["plan"] if entry["action"] == "await_deletion"]
    assert [(entry["kind"], entry["finalizers"]) for entry in awaited] == [("AWSCluster", ["foregroundDeletion"])], awaited
    created = sorted(entry["kind"] for entry in again["plan"] if entry["action"] == "create")
    assert created == ["AWSCluster", "AWSMachineTemplate"], again["plan"]
    made = session.request("GET", cluster_path)[1]
    assert made["metadata"]["uid"] != cluster["metadata"]["uid"] and not made["metadata"].get("deletionTimestamp")
    assert again["verify"]["failures"] == []


class MachineStatusWriter(threading.Thread):
    """A test controller: keeps bumping every Machine's status unless the Cluster is paused (kubernetes client)."""

    def __init__(self, server, namespace):
        super().__init__(daemon=True)
        from kubernetes import client

        self.api = client.CustomObjectsApi(server.api_client())
        self.namespace = namespace
        self.stop_event = threading.Event()
        self.writes = 0
        self.paused_seen = threading.Event()

    def run(self):
        while not self.stop_event.is_set():
            clusters = self.api.list_namespaced_custom_object("cluster.x-k8s.io", "v1beta2", self.namespace, "clusters")["items"]
            if not clusters or clusters[0]["spec"].get("paused"):
                self.paused_seen.set()
                time.sleep(0.01)
                continue
            self.paused_seen.clear()
            machines = self.api.list_namespaced_custom_object("cluster.x-k8s.io", "v1beta2", self.namespace, "machines")["items"]
            for machine in machines:
                if machine["metadata"].get("deletionTimestamp"):
                    continue
                machine.setdefault("status", {})["observedGeneration"] = self.writes + 2
                try:
                    self.api.replace_namespaced_custom_object_status("cluster.x-k8s.io", "v1beta2", self.namespace,
                                                                     "machines", machine["metadata"]["name"], machine)
                    self.writes += 1
                except Exception:  # a conflict with the migration's own write: the next round retries
                    pass


def test_without_the_repointing_the_real_garbage_collector_takes_the_hostedcontrolplane(hcp):
    """The hazard the re-pointing exists for: the old Cluster deleted while the HostedControlPlane's only owner
    reference still names it. kube-controller-manager's garbage collector then deletes the HostedControlPlane
    (its finalizer holds it, with a deletionTimestamp that nothing can take back) and what has no finalizer."""
    _server, session, crds = hcp
    namespace = load(hcp, "AWS", "naive", "aws", machines=2, deleting=0)
    before = snapshot(session, namespace, crds)
    cluster_path = "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/clusters" % namespace
    cluster = session.request("GET", cluster_path)[1]["items"][0]
    session.request("PATCH", "%s/%s" % (cluster_path, cluster["metadata"]["name"]), {"metadata": {"finalizers": None}})
    session.request("DELETE", "%s/%s" % (cluster_path, cluster["metadata"]["name"]))
    path = "/apis/hypershift.openshift.io/v1beta1/namespaces/%s/hostedcontrolplanes/aws" % namespace
    taken = wait_for(lambda: session.request("GET", path)[1]["metadata"].get("deletionTimestamp"),
                     "the garbage collector to delete the HostedControlPlane", timeout=30)
    assert taken
    gc_barrier(session, namespace)
    after = snapshot(session, namespace, crds)
    owned_by_cluster = [key for key, obj in before.items() if any(
        ref["kind"] == "Cluster" for ref in obj["metadata"].get("ownerReferences") or ())
        and not obj["metadata"].get("finalizers")]
    assert owned_by_cluster and not set(owned_by_cluster) & set(after), "the GC left %s" % (
        sorted(set(owned_by_cluster) & set(after)))


def set_paused(session, namespace, paused):
    path = "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/clusters" % namespace
    _code, clusters = session.request("GET", path)
    cluster = clusters["items"][0]
    cluster["spec"]["paused"] = paused
    session.request("PUT", "%s/%s" % (path, cluster["metadata"]["name"]), cluster)


def test_unpaused_cluster_is_refused_and_pausing_loses_no_update(hcp):
    server, session, crds = hcp
    namespace = load(hcp, "AWS", "writer", "aws", machines=4, deleting=0, paused=False)
    writer = MachineStatusWriter(server, namespace)
    writer.start()
    try:
        wait_for(lambda: writer.writes > 10, "the test controller to write")
        refused = migrate(server, namespace, delete_source=True)
        assert refused.failed and "is not paused" in refused["msg"] and "require_paused: false" in refused["msg"]
        assert "Cluster %s/aws-" % namespace in refused["msg"]
        assert not [obj for obj in read_namespace(session, namespace, crds) if obj["apiVersion"].startswith(PRIVATE)]
        # without the guard the copy races the controller: the next run sees sources that moved on
        racing = migrate(server, namespace, require_paused=False)
        assert not racing.failed and warned(racing, "is not paused; copying anyway")
        wait_for(lambda: writer.writes > 40, "more controller writes")
        stale = migrate(server, namespace, require_paused=False, delete_source=True)
        assert stale.failed and "not deleting any source" in stale["msg"]
        assert {conflict["kind"] for conflict in stale["conflicts"]} == {"Machine"}
        assert not [entry for entry in stale["plan"] if entry["action"].startswith("delete")]
        # paused: the controller stops, the copy carries its last write
        set_paused(session, namespace, True)
        wait_for(writer.paused_seen.is_set, "the controller to see the pause")
        final = {obj["metadata"]["name"]: obj["status"] for obj in read_namespace(session, namespace, crds)
                 if obj["kind"] == "Machine" and obj["apiVersion"].startswith("cluster.x-k8s.io/")}
        done = migrate(server, namespace, delete_source=True, force=True, verify=True)
        assert not done.failed, done.get("msg")
    finally:
        writer.stop_event.set()
        writer.join(5)
    copies = {obj["metadata"]["name"]: obj["status"] for obj in read_namespace(session, namespace, crds)
              if obj["kind"] == "Machine" and obj["apiVersion"].startswith(PRIVATE)}
    assert copies == final and max(status["observedGeneration"] for status in copies.values()) > 2


def test_agent_without_extra_groups_keeps_agent_objects_and_repoints_them(hcp):
    server, session, crds = hcp
    namespace = load(hcp, "Agent", "agent", "noextra", machines=3, deleting=0)
    result = migrate(server, namespace, delete_source=True)
    assert not result.failed, result.get("msg")
    assert {kind["kind"] for kind in result["kinds"]}.isdisjoint({"AgentMachine", "AgentCluster"})
    after = settled_state(hcp, namespace, group_map=GroupMap())
    agent_machines = [obj for key, obj in after.items() if key.startswith("capi-provider.agent-install.openshift.io/AgentMachine/")]
    assert len(agent_machines) == 3
    for agent_machine in agent_machines:  # owned by the private Machine now; the garbage collector kept them
        assert [ref["apiVersion"] for ref in agent_machine["metadata"]["ownerReferences"]] == ["%s/v1beta2" % PRIVATE]
        assert agent_machine["metadata"]["ownerReferences"][0]["uid"] == "Machine/" + agent_machine["metadata"]["name"]
    # the private Machines still point at the Agent group (not mapped without extra_groups)
    machine = next(obj for key, obj in after.items() if key.startswith(PRIVATE + "/Machine/"))
    assert machine["spec"]["infrastructureRef"]["apiGroup"] == "capi-provider.agent-install.openshift.io"


def test_errors_name_what_is_wrong(hcp):
    server, _session, _crds = hcp
    created = server.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                            "metadata": {"name": "empty-hcp"}})
    assert created.status == 201, created
    bad_kind = migrate(server, "empty-hcp", kinds=["Bogus"])
    assert bad_kind.failed and "kinds: bogus not served" in bad_kind["msg"] and "Machine (cluster.x-k8s.io)" in bad_kind["msg"]
    bad_extra = migrate(server, "empty-hcp", extra_groups={"capi-provider.cluster.x-k8s.io": "x.example.com"})
    assert bad_extra.failed and "collides with the suffix pattern" in bad_extra["msg"]
    empty = migrate(server, "empty-hcp")
    assert not empty.failed and empty["changed"] is False and warned(empty, "no standard CAPI objects found in namespace empty-hcp")
    # a namespace that does not exist is an error, not "nothing to migrate" (issue 16)
    missing = migrate(server, "nowhere")
    assert missing.failed and "namespace 'nowhere' (option hcp_namespace) does not exist" in missing["msg"]
    assert missing["api_calls"]["total"] == 1 and missing.get("counts") is None


def test_ansible_playbook_migrates_with_module_defaults(hcp, tmp_path):
    server, session, crds = hcp
    namespace = load(hcp, "KubeVirt", "play", "kv", machines=3, deleting=0)
    playbook = os.path.join(REPO_ROOT, "tests", "integration", "playbooks", "capi_object_migrate.yml")
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", playbook,
               "-e", "kubeconfig=%s hcp_namespace=%s" % (server.kubeconfig, namespace)]
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"))
    completed = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    after = settled_state(hcp, namespace)
    assert [key for key in after if key.startswith(PRIVATE + "/Machine/")], after.keys()


def _apply_labels(server, group, namespace, name, labels, manager="capi-machineset"):
    """Server-side apply of a Machine's labels by manager, as CAPI's MachineSet controller applies its Machines."""
    body = {"apiVersion": "%s/v1beta2" % group, "kind": "Machine",
            "metadata": {"name": name, "namespace": namespace, "labels": labels}}
    path = "/apis/%s/v1beta2/namespaces/%s/machines/%s?fieldManager=%s&force=true" % (group, namespace, name, manager)
    answer = server.request("PATCH", path, body, content_type="application/apply-patch+yaml")
    assert answer.status == 200, answer.body[:500]
    return json.loads(answer.body)


def _owned_labels(machine, manager="capi-machineset"):
    entries = [entry for entry in machine["metadata"].get("managedFields") or () if entry["manager"] == manager]
    assert len(entries) == 1, machine["metadata"].get("managedFields")
    return entries[0]["apiVersion"], sorted(key[2:] for key in entries[0]["fieldsV1"]["f:metadata"]["f:labels"])


def test_a_server_side_applied_field_stays_its_managers_across_migrate_and_rollback(hcp):
    """CAPI's controllers remove a label they no longer apply only where they own it: the copy carries the source's
    managedFields (apiVersions in its group), so dropping a label from an apply removes it after the move too."""
    server, session, _crds = hcp
    namespace = load(hcp, "AWS", "owned", "aws", machines=1, deleting=0)
    machine = session.request("GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/machines" % namespace)[1]["items"][0]
    name = machine["metadata"]["name"]
    _apply_labels(server, "cluster.x-k8s.io", namespace, name, {"pool": "a", "rollout": "r1"})
    there = migrate(server, namespace, delete_source=True)
    assert not there.failed, there.get("msg")
    private = session.request("GET", "/apis/%s/v1beta2/namespaces/%s/machines/%s" % (PRIVATE, namespace, name))[1]
    assert _owned_labels(private) == ("%s/v1beta2" % PRIVATE, ["pool", "rollout"])
    mine = [entry for entry in private["metadata"]["managedFields"] if entry["manager"] == "hypershift.private_capi"]
    assert mine and "f:hypershift.openshift.io/capi-migration-source-uid" in json.dumps(mine)  # what only it set
    applied = _apply_labels(server, PRIVATE, namespace, name, {"pool": "a"})
    assert "rollout" not in applied["metadata"]["labels"], applied["metadata"]["labels"]  # owned: removed
    back = migrate(server, namespace, direction="to_standard", delete_source=True)
    assert not back.failed, back.get("msg")
    standard = session.request("GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/machines/%s" % (namespace, name))[1]
    assert _owned_labels(standard) == ("cluster.x-k8s.io/v1beta2", ["pool"])
    applied = _apply_labels(server, "cluster.x-k8s.io", namespace, name, {})
    assert "pool" not in (applied["metadata"].get("labels") or {}), applied["metadata"]["labels"]
