"""hypershift.private_capi.migration_state against a real control plane (testenv/cluster, fixture `bare_cluster`).

The module runs in its own process (testenv/module_runner.py runs the real module file, as
Ansible's wrapper does). HostedClusters are real objects validated by HyperShift's CRD; every
assertion reads the server back.
"""
import json
import os
import re
import subprocess
import sys
import time

import pytest
import yaml

from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine as ms
from ansible_collections.hypershift.private_capi.plugins.module_utils.crds.render import RenderOptions, render_all
from testenv.upstream import CAPI_CRDS, HOSTEDCLUSTER_CRD
from testenv.cluster.testing import install_crds
from testenv import REPO_ROOT
from testenv.hcp.build import published_services
from testenv.module_runner import Zygote, run_module

pytestmark = pytest.mark.slow

HC_PATH = "/apis/hypershift.openshift.io/v1beta1/namespaces/%s/hostedclusters"
CORE_CAPI_CRDS = [os.path.join(CAPI_CRDS, "cluster.x-k8s.io_%s.yaml" % plural)
                  for plural in ("clusters", "machinedeployments", "machinesets", "machines")]
RACE_ROUNDS = 50
ILLEGAL = [(c, r) for c in ms.STATES for r in ms.REQUESTABLE_STATES
           if c != r and r not in ms.LEGAL_MOVES[c]]
STATE_ANNOTATIONS = {
    ms.NEW: {},
    ms.LEGACY: {ms.SCOPE_ANNOTATION: "legacy"},
    ms.IN_PROGRESS: {ms.SCOPE_ANNOTATION: "legacy", ms.IN_PROGRESS_ANNOTATION: "true"},
    ms.MIGRATED: {ms.PRIVATE_TYPES_ANNOTATION: "true"},
    ms.FAILED: {ms.SCOPE_ANNOTATION: "legacy", ms.FAILED_ANNOTATION: "earlier failure"},
    ms.INVALID: {ms.SCOPE_ANNOTATION: "legacy", ms.PRIVATE_TYPES_ANNOTATION: "true"},
}


def load_yaml(path):
    with open(path) as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@pytest.fixture(scope="module")
def server(bare_cluster):
    """A real control plane with HyperShift's HostedCluster CRD, the core CAPI CRDs and their twins."""
    apiserver = bare_cluster  # a real control plane
    standard = [load_yaml(path) for path in CORE_CAPI_CRDS]
    private = render_all([(path, 0, crd) for path, crd in zip(CORE_CAPI_CRDS, standard)],
                         RenderOptions(webhook_url="https://127.0.0.1:9/convert")).rendered
    hostedclusters = load_yaml(HOSTEDCLUSTER_CRD)
    with apiserver.api_client() as api:
        install_crds(api, [hostedclusters] + standard + private)
    for namespace in ("clusters", "fleet", "decide", "race", "repair", "repair-inv-std", "repair-inv-priv", "repair-inv-none"):
        create(apiserver, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    return apiserver


def create(apiserver, path, body):
    response = apiserver.request("POST", path, body)
    assert response.status == 201, response
    return response.json()


def hostedcluster_body(namespace, name, state=ms.NEW, label=True):
    annotations = dict(STATE_ANNOTATIONS[state])
    labels = {ms.STATE_LABEL: state} if label and state in ms.LABELLED_STATES else {}
    return {
        "apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations, "labels": labels},
        "spec": {"release": {"image": "quay.io/openshift-release-dev/ocp-release:4.22.0-x86_64"},
                 "pullSecret": {"name": "pull-secret"}, "platform": {"type": "None"},
                 "etcd": {"managementType": "Managed", "managed": {"storage": {"type": "PersistentVolume"}}},
                 "networking": {"clusterNetwork": [{"cidr": "10.132.0.0/14"}], "serviceNetwork": [{"cidr": "172.31.0.0/16"}],
                                "networkType": "OVNKubernetes"},
                 "services": published_services("None")},
    }


def new_hostedcluster(apiserver, namespace, name, state=ms.NEW, label=True):
    return create(apiserver, HC_PATH % namespace, hostedcluster_body(namespace, name, state, label))


def read(apiserver, namespace, name):
    response = apiserver.request("GET", "%s/%s" % (HC_PATH % namespace, name))
    assert response.status == 200, response
    return response.json()


def events_for(apiserver, namespace, name):
    items = apiserver.request("GET", "/api/v1/namespaces/%s/events" % namespace).json()["items"]
    return [item["reason"] for item in sorted(items, key=lambda e: e["metadata"]["name"])
            if item["involvedObject"]["name"] == name and item["involvedObject"]["kind"] == "HostedCluster"]


def move(apiserver, name, state, namespace="clusters", check_mode=False, diff=False, **options):
    args = dict(kubeconfig=apiserver.kubeconfig, hostedcluster_name=name, hostedcluster_namespace=namespace, state=state, **options)
    return run_module("migration_state", args, check_mode=check_mode, diff=diff)


def assert_ok(result, changed):
    assert not result.failed, (result.get("msg"), result.stderr[-2000:])
    assert result["changed"] is changed, result


def test_full_lifecycle_with_reruns_history_label_and_events(server):
    created = new_hostedcluster(server, "clusters", "prod-01")
    first = move(server, "prod-01", "legacy")
    assert_ok(first, True)
    assert (first["from_state"], first["state"]) == ("new", "legacy")
    assert_ok(move(server, "prod-01", "legacy"), False)
    locked = move(server, "prod-01", "in-progress", holder="run-1", lease_seconds=600)
    assert_ok(locked, True)
    renewed = move(server, "prod-01", "in-progress", holder="run-1", lease_seconds=600)
    assert_ok(renewed, False)
    assert renewed["renewed"] is True and renewed["hostedcluster"]["lease"]["holder"] == "run-1"
    done = move(server, "prod-01", "migrated", holder="run-1")
    assert_ok(done, True)
    assert_ok(move(server, "prod-01", "migrated", holder="run-1"), False)
    live = read(server, "clusters", "prod-01")
    annotations = live["metadata"]["annotations"]
    assert ms.state_of(live) == "migrated" and live["metadata"]["labels"][ms.STATE_LABEL] == "migrated"
    assert annotations[ms.PRIVATE_TYPES_ANNOTATION] == "true" and ms.SCOPE_ANNOTATION not in annotations
    assert not [key for key in annotations if key.startswith("hypershift.openshift.io/capi-migration-lease")]
    history = json.loads(annotations[ms.HISTORY_ANNOTATION])
    assert [(entry["from"], entry["to"], entry["by"]) for entry in history] == [
        ("new", "legacy", first["holder"]), ("legacy", "in-progress", "run-1"), ("in-progress", "migrated", "run-1")]
    assert events_for(server, "clusters", "prod-01") == [
        "CAPIMigrationMarkedLegacy", "CAPIMigrationStarted", "CAPIMigrationCompleted"]
    assert live["spec"] == created["spec"], "a state move must touch metadata only"


def test_failure_needs_reason_and_remediation_needs_force(server):
    new_hostedcluster(server, "clusters", "prod-02", state=ms.LEGACY)
    assert_ok(move(server, "prod-02", "in-progress", holder="run-2"), True)
    failed = move(server, "prod-02", "failed", holder="run-2", reason="copy: Machine m-1 was rejected")
    assert_ok(failed, True)
    assert read(server, "clusters", "prod-02")["metadata"]["annotations"][ms.FAILED_ANNOTATION] == "copy: Machine m-1 was rejected"
    refused = move(server, "prod-02", "legacy")
    assert refused.failed and "needs explicit remediation" in refused["msg"] and "force: true" in refused["msg"]
    assert_ok(move(server, "prod-02", "legacy", force=True), True)
    assert ms.state_of(read(server, "clusters", "prod-02")) == "legacy"
    assert events_for(server, "clusters", "prod-02") == ["CAPIMigrationStarted", "CAPIMigrationFailed", "CAPIMigrationRemediated"]
    missing_reason = move(server, "prod-02", "failed")
    assert missing_reason.failed and "reason" in missing_reason["msg"]


@pytest.mark.parametrize("current, requested", ILLEGAL, ids=["%s->%s" % pair for pair in ILLEGAL])
def test_every_illegal_move_fails_clearly_and_writes_nothing(server, current, requested):
    name = "illegal-%s-%s" % (current, requested)
    before = new_hostedcluster(server, "clusters", name, state=current)
    result = move(server, name, requested, reason="r", force=True, takeover=True)
    assert result.failed
    assert "cannot move from %s to %s" % (current, requested) in result["msg"]
    assert "Legal moves from %s: %s" % (current, ", ".join(ms.LEGAL_MOVES[current]) or "none") in result["msg"]
    assert read(server, "clusters", name)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert events_for(server, "clusters", name) == []


def test_check_mode_changes_nothing_and_diff_shows_the_move(server):
    before = new_hostedcluster(server, "clusters", "dry-1", state=ms.LEGACY)
    result = move(server, "dry-1", "in-progress", check_mode=True, diff=True, holder="run-dry")
    assert_ok(result, True)
    assert result["diff"]["after"]["annotations"][ms.IN_PROGRESS_ANNOTATION] == "true"
    assert ms.IN_PROGRESS_ANNOTATION not in result["diff"]["before"]["annotations"]
    after = read(server, "clusters", "dry-1")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["metadata"]["annotations"] == before["metadata"]["annotations"]
    assert events_for(server, "clusters", "dry-1") == []


def test_lease_is_refused_to_others_taken_over_on_request_and_after_expiry(server):
    new_hostedcluster(server, "clusters", "lease-1", state=ms.LEGACY)
    # leases long enough that a loaded machine (module runs of seconds) cannot let them expire between two steps
    assert_ok(move(server, "lease-1", "in-progress", holder="run-a", lease_seconds=60), True)
    refused = move(server, "lease-1", "in-progress", holder="run-b")
    assert refused.failed and "held by 'run-a'" in refused["msg"] and "renewed" in refused["msg"]
    assert "takeover: true" in refused["msg"]
    taken = move(server, "lease-1", "in-progress", holder="run-b", takeover=True, lease_seconds=6)
    taken_at = time.monotonic()
    assert_ok(taken, True)
    assert taken["took_over"] is True
    late = move(server, "lease-1", "migrated", holder="run-a")
    assert late.failed and "held by 'run-b'" in late["msg"]
    time.sleep(max(0.0, 6.2 - (time.monotonic() - taken_at)))
    resumed = move(server, "lease-1", "in-progress", holder="run-c")
    assert_ok(resumed, True)
    assert resumed["took_over"] is True and resumed["hostedcluster"]["lease"]["holder"] == "run-c"
    assert_ok(move(server, "lease-1", "migrated", holder="run-c"), True)
    history = json.loads(read(server, "clusters", "lease-1")["metadata"]["annotations"][ms.HISTORY_ANNOTATION])
    assert [entry.get("previous_holder") for entry in history if entry.get("takeover")] == ["run-a", "run-b"]
    assert events_for(server, "clusters", "lease-1").count("CAPIMigrationLeaseTakenOver") == 2


def test_lock_race_two_concurrent_runs_with_default_holders_exactly_one_wins_50_times(server):
    started = time.monotonic()
    conflicts_seen = 0
    zygote = Zygote("migration_state")
    for round_index in range(RACE_ROUNDS):
        name = "race-%02d" % round_index
        new_hostedcluster(server, "race", name, state=ms.LEGACY)
        args = dict(kubeconfig=server.kubeconfig, hostedcluster_name=name, hostedcluster_namespace="race", state="in-progress")
        results = zygote.race([args, args])
        winners = [result for result in results if not result.failed]
        losers = [result for result in results if result.failed]
        assert len(winners) == 1 and len(losers) == 1, [(r.get("msg"), r.stderr[-500:]) for r in results]
        winner, loser = winners[0], losers[0]
        assert winner["changed"] is True and winner["took_over"] is False
        assert "held by %r" % winner["holder"] in loser["msg"], loser["msg"]
        live = read(server, "race", name)
        assert ms.lease_of(live["metadata"]["annotations"])["holder"] == winner["holder"]
        assert len(json.loads(live["metadata"]["annotations"][ms.HISTORY_ANNOTATION])) == 1
        conflicts_seen += winner["conflicts"]
        conflicts_seen += "conflicting write" in loser["msg"]
    assert zygote.close() == 0
    assert conflicts_seen >= 1, "no round exercised the 409 re-read path; the racers never overlapped"
    elapsed = time.monotonic() - started
    print("lock race: %d rounds in %.1fs, %d resolved through a 409 re-read" % (RACE_ROUNDS, elapsed, conflicts_seen))


def test_lock_race_between_two_ansible_playbook_processes(server):
    """The same race through the real ansible-playbook (module_defaults, default holders), a few rounds."""
    playbook = os.path.join(REPO_ROOT, "tests", "integration", "playbooks", "migration_lock.yml")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    for round_index in range(3):
        name = "playbook-race-%d" % round_index
        new_hostedcluster(server, "race", name, state=ms.LEGACY)
        command = [os.path.join(REPO_ROOT, ".venv", "bin", "ansible-playbook"), playbook, "-e", "kubeconfig=%s" % server.kubeconfig,
                   "-e", "hc_name=%s" % name, "-e", "hc_namespace=race", "-e", "ansible_python_interpreter=%s" % sys.executable]
        processes = [subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True) for _racer in range(2)]
        outputs = [(process.communicate(timeout=300)[0], process.returncode) for process in processes]
        winners = [output for output, code in outputs if code == 0]
        losers = [output for output, code in outputs if code != 0]
        assert len(winners) == 1 and len(losers) == 1, outputs
        holder = ms.lease_of(read(server, "race", name)["metadata"]["annotations"])["holder"]
        assert "lock holder %s" % holder in winners[0]
        assert "the migration lock is held by '%s'" % holder in losers[0], losers[0]


def test_tasks_of_one_playbook_run_share_the_default_holder_and_runs_differ(server):
    """Issue 16 item B: without holder, the lock task and the finishing task of one run are one holder (the action
    plugin's <controller host>:<ansible-playbook pid>:<its start time>); two runs are two holders."""
    playbook = os.path.join(REPO_ROOT, "tests", "integration", "playbooks", "migration_default_holder.yml")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    holders = []
    for name, final_state in (("holder-migrated", "migrated"), ("holder-failed", "failed")):
        new_hostedcluster(server, "clusters", name, state=ms.LEGACY)
        command = [os.path.join(REPO_ROOT, ".venv", "bin", "ansible-playbook"), playbook, "-e", "kubeconfig=%s" % server.kubeconfig,
                   "-e", "hc_name=%s" % name, "-e", "hc_namespace=clusters", "-e", "final_state=%s" % final_state,
                   "-e", "ansible_python_interpreter=%s" % sys.executable]
        completed = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
        output = completed.stdout + completed.stderr
        assert completed.returncode == 0, output
        lock_holder, finish_holder = re.search(r"holders (\S+) (\S+)\"", output).groups()
        assert lock_holder == finish_holder, output
        assert re.match(r"^[^:]+:\d+:\d{8}T\d{6}\.\d{2}Z$", lock_holder), lock_holder
        assert ms.state_of(read(server, "clusters", name)) == final_state
        history = json.loads(read(server, "clusters", name)["metadata"]["annotations"][ms.HISTORY_ANNOTATION])
        assert [entry["by"] for entry in history] == [lock_holder, lock_holder], history
        holders.append(lock_holder)
    assert holders[0] != holders[1]


def test_query_one_namespace_and_fleet_with_one_list(server):
    for name, state in (("f-legacy", ms.LEGACY), ("f-failed", ms.FAILED), ("f-migrated", ms.MIGRATED), ("f-new", ms.NEW),
                        ("f-unlabelled", ms.LEGACY)):
        new_hostedcluster(server, "fleet", name, state=state, label=name != "f-unlabelled")
    one = run_module("migration_state", dict(kubeconfig=server.kubeconfig, hostedcluster_name="f-failed", hostedcluster_namespace="fleet"))
    assert_ok(one, False)
    assert one["hostedclusters"][0]["state"] == "failed" and one["hostedclusters"][0]["failed_reason"] == "earlier failure"
    server.reset_requests()
    selected = run_module("migration_state", dict(kubeconfig=server.kubeconfig, hostedcluster_namespace="fleet", state="query",
                                                  query_states=["legacy", "failed"]))
    assert_ok(selected, False)
    assert selected["label_selector"] == "hypershift.openshift.io/capi-migration-state in (failed,legacy)"
    assert sorted(entry["name"] for entry in selected["hostedclusters"]) == ["f-failed", "f-legacy"]
    hc_requests = [entry for entry in server.request_counts()["entries"] if entry["resource"] == "hostedclusters"]
    assert [(entry["verb"], entry["namespace"]) for entry in hc_requests] == [("list", "fleet")]
    everything = run_module("migration_state", dict(kubeconfig=server.kubeconfig, hostedcluster_namespace="fleet"))
    assert everything["counts"] == {"legacy": 2, "failed": 1, "migrated": 1, "new": 1}
    unlabelled = next(entry for entry in everything["hostedclusters"] if entry["name"] == "f-unlabelled")
    assert unlabelled["label_in_sync"] is False
    fixed = move(server, "f-unlabelled", "legacy", namespace="fleet")
    assert_ok(fixed, True)
    assert read(server, "fleet", "f-unlabelled")["metadata"]["labels"][ms.STATE_LABEL] == "legacy"
    cluster_wide = run_module("migration_state", dict(kubeconfig=server.kubeconfig, query_states=["new"]))
    assert {(entry["namespace"], entry["name"]) for entry in cluster_wide["hostedclusters"]} >= {("fleet", "f-new")}
    assert cluster_wide["label_selector"] is None


def capi_cluster(namespace, group):
    return {"apiVersion": "%s/v1beta2" % group, "kind": "Cluster", "metadata": {"name": "infra-x", "namespace": namespace},
            "spec": {"paused": False}}


def test_invalid_state_is_reported_and_repaired_only_on_request(server):
    new_hostedcluster(server, "repair", "inv-std", state=ms.INVALID)
    new_hostedcluster(server, "repair", "inv-priv", state=ms.INVALID)
    create(server, "/apis/cluster.x-k8s.io/v1beta2/namespaces/repair-inv-std/clusters", capi_cluster("repair-inv-std", "cluster.x-k8s.io"))
    create(server, "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/repair-inv-priv/clusters",
           capi_cluster("repair-inv-priv", "cluster.hypershift.openshift.io"))
    report = run_module("migration_state", dict(kubeconfig=server.kubeconfig, hostedcluster_namespace="repair", query_states=["invalid"]))
    assert_ok(report, False)
    assert sorted(report["invalid"]) == ["repair/inv-priv", "repair/inv-std"]
    assert "re-run with repair: true" in json.dumps(report.get("warnings")), report.get("warnings")
    assert ms.state_of(read(server, "repair", "inv-std")) == "invalid"
    dry = run_module("migration_state", dict(kubeconfig=server.kubeconfig, hostedcluster_namespace="repair", query_states=["invalid"],
                                             repair=True), check_mode=True)
    assert_ok(dry, True)
    assert ms.state_of(read(server, "repair", "inv-std")) == "invalid"
    repaired = run_module("migration_state", dict(kubeconfig=server.kubeconfig, hostedcluster_namespace="repair", query_states=["invalid"],
                                                  repair=True))
    assert_ok(repaired, True)
    assert {(entry["name"], entry["state"]) for entry in repaired["repaired"]} == {("inv-std", "legacy"), ("inv-priv", "migrated")}
    assert ms.state_of(read(server, "repair", "inv-std")) == "legacy"
    assert ms.state_of(read(server, "repair", "inv-priv")) == "migrated"
    assert events_for(server, "repair", "inv-std") == ["CAPIMigrationStateRepaired"]
    again = run_module("migration_state", dict(kubeconfig=server.kubeconfig, hostedcluster_namespace="repair", query_states=["invalid"],
                                               repair=True))
    assert_ok(again, False)
    new_hostedcluster(server, "repair", "inv-none", state=ms.INVALID)
    unjudgeable = run_module("migration_state", dict(kubeconfig=server.kubeconfig, hostedcluster_name="inv-none", hostedcluster_namespace="repair",
                                                     repair=True))
    assert unjudgeable.failed and "holds 0 standard-group and 0 private-group" in unjudgeable["msg"]
    assert ms.state_of(read(server, "repair", "inv-none")) == "invalid"


def test_errors_name_the_object(server):
    missing = move(server, "does-not-exist", "legacy")
    assert missing.failed and "HostedCluster clusters/does-not-exist not found" in missing["msg"]
    misuse = run_module("migration_state", dict(kubeconfig=server.kubeconfig, hostedcluster_name="x", hostedcluster_namespace="clusters",
                                                state="legacy", repair=True))
    assert misuse.failed and "repair: true works with state: query only" in misuse["msg"]


def test_rollback_path_is_explicit_resumable_and_ends_legacy(server):
    before = new_hostedcluster(server, "clusters", "rb-01", state=ms.MIGRATED)
    refused = move(server, "rb-01", "in-progress", holder="rb-run")
    assert refused.failed and "cannot move from migrated to in-progress" in refused["msg"]
    assert "playbooks/rollback.yml (rollback: true)" in refused["msg"]
    assert read(server, "clusters", "rb-01")["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    dry = move(server, "rb-01", "in-progress", holder="rb-run", rollback=True, check_mode=True, diff=True)
    assert_ok(dry, True)
    assert dry["diff"]["after"]["annotations"][ms.LEASE_DIRECTION_ANNOTATION] == "rollback"
    assert read(server, "clusters", "rb-01")["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    locked = move(server, "rb-01", "in-progress", holder="rb-run", rollback=True, lease_seconds=600)
    assert_ok(locked, True)
    assert (locked["from_state"], locked["state"]) == ("migrated", "in-progress")
    assert locked["hostedcluster"]["lease"]["direction"] == "rollback"
    live = read(server, "clusters", "rb-01")
    annotations = live["metadata"]["annotations"]
    assert ms.PRIVATE_TYPES_ANNOTATION not in annotations and annotations[ms.SCOPE_ANNOTATION] == "legacy"
    assert annotations[ms.IN_PROGRESS_ANNOTATION] == "true" and annotations[ms.LEASE_DIRECTION_ANNOTATION] == "rollback"
    assert live["metadata"]["labels"][ms.STATE_LABEL] == "in-progress"
    # a migration run (same run id, or takeover) can neither resume nor finish a rollback lock
    for state, options in (("in-progress", {}), ("migrated", {}), ("failed", {"reason": "r"}), ("in-progress", {"takeover": True})):
        crossed = move(server, "rb-01", state, holder="rb-run", **options)
        assert crossed.failed and "a rollback lock ends only in legacy" in crossed["msg"], crossed.get("msg")
        assert crossed["refused"] == {"reason": "not-allowed", "holder": None, "status": "refused"}
    other = move(server, "rb-01", "legacy", holder="someone-else", rollback=True)
    assert other.failed and "the migration lock is held by 'rb-run'" in other["msg"]
    assert other["refused"] == {"reason": "lock-held", "holder": "rb-run", "status": "skipped"}
    renewed = move(server, "rb-01", "in-progress", holder="rb-run", rollback=True)  # a resumed run renews its lock
    assert_ok(renewed, False)
    assert renewed["renewed"] is True
    unlocked = read(server, "clusters", "rb-01")["metadata"]["resourceVersion"]
    assert_ok(move(server, "rb-01", "legacy", holder="rb-run", rollback=True, check_mode=True), True)
    assert read(server, "clusters", "rb-01")["metadata"]["resourceVersion"] == unlocked
    done = move(server, "rb-01", "legacy", holder="rb-run", rollback=True)
    assert_ok(done, True)
    live = read(server, "clusters", "rb-01")
    assert ms.state_of(live) == "legacy" and live["metadata"]["labels"][ms.STATE_LABEL] == "legacy"
    assert not [key for key in live["metadata"]["annotations"] if "capi-migration-lease" in key]
    assert_ok(move(server, "rb-01", "legacy", holder="a-later-run", rollback=True), False)  # re-run of a finished rollback
    history = json.loads(live["metadata"]["annotations"][ms.HISTORY_ANNOTATION])
    assert [(e["from"], e["to"], e.get("rollback")) for e in history] == [
        ("migrated", "in-progress", True), ("in-progress", "legacy", True)]
    assert events_for(server, "clusters", "rb-01") == ["CAPIMigrationRollbackStarted", "CAPIMigrationRolledBack"]
    again = move(server, "rb-01", "in-progress", holder="rb-run", rollback=True)
    assert again.failed and "cannot roll back from legacy to in-progress" in again["msg"]
    assert live["spec"] == before["spec"], "a state move must touch metadata only"


def test_rollback_is_refused_on_a_migration_lock_and_with_query(server):
    new_hostedcluster(server, "clusters", "rb-02", state=ms.LEGACY)
    assert_ok(move(server, "rb-02", "in-progress", holder="fwd-run"), True)
    written = read(server, "clusters", "rb-02")["metadata"]["resourceVersion"]
    for state in ("in-progress", "legacy"):
        refused = move(server, "rb-02", state, holder="fwd-run", rollback=True, takeover=True)
        assert refused.failed and "it is locked for a migration to private CAPI types (lock held by 'fwd-run')" in refused["msg"]
    assert read(server, "clusters", "rb-02")["metadata"]["resourceVersion"] == written
    misuse = run_module("migration_state", dict(kubeconfig=server.kubeconfig, hostedcluster_name="rb-02", hostedcluster_namespace="clusters",
                                                rollback=True))
    assert misuse.failed and "rollback: true works with state: in-progress or legacy" in misuse["msg"]


def test_query_with_direction_says_what_a_run_should_do_and_writes_nothing(server):
    for name, state in (("d-legacy", ms.LEGACY), ("d-failed", ms.FAILED), ("d-migrated", ms.MIGRATED), ("d-new", ms.NEW),
                        ("d-locked", ms.LEGACY)):
        new_hostedcluster(server, "decide", name, state=state)
    assert_ok(move(server, "d-locked", "in-progress", namespace="decide", holder="other-run"), True)
    plain = run_module("migration_state", dict(kubeconfig=server.kubeconfig, hostedcluster_namespace="decide"))
    assert all("action" not in entry and "reason" not in entry for entry in plain["hostedclusters"])
    written = {entry["name"]: entry["resource_version"] for entry in plain["hostedclusters"]}

    def judged(**options):
        result = run_module("migration_state", dict(kubeconfig=server.kubeconfig, hostedcluster_namespace="decide", holder="this-run",
                                                    **options))
        assert_ok(result, False)
        return {entry["name"]: (entry["action"], entry["reason"]) for entry in result["hostedclusters"]}

    migrate = judged(direction="migrate")
    assert migrate == {
        "d-legacy": ("migrate", ""),
        "d-new": ("mark-legacy-and-migrate", ""),
        "d-migrated": ("skip", "already migrated"),
        "d-failed": ("skip", "failed before (earlier failure): remediate, then re-run with "
                             "private_capi_migrate_retry_failed=true"),
        "d-locked": ("locked", "locked by run other-run (lease not expired); resume with that run id or takeover"),
    }
    retried = judged(direction="migrate", retry_failed=True, takeover=True)
    assert retried["d-failed"][0] == "mark-legacy-and-migrate" and retried["d-locked"][0] == "resume"
    rollback = judged(direction="rollback")
    assert {name: action for name, (action, _reason) in rollback.items()} == {
        "d-legacy": "skip", "d-new": "refuse", "d-migrated": "rollback", "d-failed": "refuse", "d-locked": "refuse"}
    assert rollback["d-new"][1] == ("cannot roll back HostedCluster decide/d-new: it is new (created with private CAPI "
                                    "types, never migrated); there is nothing to roll back")
    after = run_module("migration_state", dict(kubeconfig=server.kubeconfig, hostedcluster_namespace="decide"))
    assert {entry["name"]: entry["resource_version"] for entry in after["hostedclusters"]} == written


MISUSED_DIRECTION = [
    (dict(state="legacy", direction="migrate"), "direction works with state: query only"),
    (dict(state="legacy", retry_failed=True), "retry_failed works with state: query and "),
    (dict(retry_failed=True), "retry_failed works with direction: migrate only"),
    (dict(direction="rollback", retry_failed=True), "retry_failed works with direction: migrate only (got direction: rollback)"),
    (dict(direction="sideways"), "value of direction must be one of: migrate, rollback"),
]


def test_direction_and_retry_failed_work_with_query_only(server):
    for options, message in MISUSED_DIRECTION:
        misuse = run_module("migration_state", dict(kubeconfig=server.kubeconfig, hostedcluster_name="x", hostedcluster_namespace="clusters",
                                                    **options))
        assert misuse.failed and message in misuse["msg"], (options, misuse.get("msg"))


# what async adds to a result
ASYNC_KEYS = {"ansible_job_id", "finished", "started", "results_file", "stdout", "stderr", "stdout_lines", "stderr_lines"}
# what both runs must say alike (times, holders and event names differ between any two runs)
SAME = ("changed", "failed", "msg", "state", "transition")


def test_the_module_answers_the_same_in_the_worker_and_as_a_module_process(server, tmp_path):
    """A local connection runs the module in ansible-playbook's worker (plugins/plugin_utils/in_process.py); async (as
    another connection would) runs it as a module process. Query, check mode and a bad option answer the same."""
    new_hostedcluster(server, "clusters", "in-worker", state=ms.LEGACY)
    out = str(tmp_path / "results.json")
    playbook = os.path.join(REPO_ROOT, "tests", "integration", "playbooks", "module_in_worker.yml")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    command = [os.path.join(REPO_ROOT, ".venv", "bin", "ansible-playbook"), playbook, "-e", "kubeconfig=%s" % server.kubeconfig,
               "-e", "hc_name=in-worker", "-e", "hc_namespace=clusters", "-e", "out=%s" % out,
               "-e", "ansible_python_interpreter=%s" % sys.executable]
    completed = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    with open(out) as handle:
        results = json.load(handle)
    for case, (worker, process) in results.items():
        assert "ansible_job_id" in process and "ansible_job_id" not in worker, (case, process, worker)
        assert set(worker) == set(process) - ASYNC_KEYS, case
        assert [{key: result.get(key) for key in SAME} for result in (worker, process)][0] == \
            {key: process.get(key) for key in SAME}, case
        assert worker.get("warnings") == process.get("warnings"), case
    assert results["query"][0]["hostedclusters"][0]["state"] == "legacy" and results["check"][0]["changed"] is True, results
    assert "Unsupported parameters" in results["bad"][0]["msg"], results["bad"]
    assert ms.state_of(read(server, "clusters", "in-worker")) == ms.LEGACY  # check mode wrote nothing
