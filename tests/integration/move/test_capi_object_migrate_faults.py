"""Interrupt capi_object_migrate anywhere and prove that re-running it ends exactly where an uninterrupted run ends.

For an HCP namespace of about 30 CAPI objects (AWS, 8 Machines, 2 of them Failed, one more Machine whose deletion
is in flight with its AWSMachine, and one whose deletion has just begun, its AWSMachine still live as while a node
drains; carried across with carry_deletions: each source marked with its copy's uid, then the copies of those being
deleted deleted holding their finalizers): the uninterrupted run (copy + delete_source) is the reference, and M is
the number of mutating requests it sends. Then, each in
a fresh namespace loaded from the same fixture:
* for every N in 1..M the Nth mutating request fails (HTTP 403: not retried, the run stops there);
* for every 8th N the Nth mutating request's connection is dropped (retried by the module);
* at 4 points the module process is SIGKILLed just as its Nth mutating request, held back 0.5 s by the fault
  proxy, reaches kube-apiserver (which completes it for a client that is gone);
and the module is run again without faults. The canonical end state (testenv/hcp/state.py: owner uids
mapped to names, server fields dropped) must equal the reference: no object lost, none duplicated.
Runs are forked from a warm process (module_runner.Zygote) four namespaces at a time (fault rules are scoped
to their namespace).

The server is the real control plane (testenv/cluster, HyperShift's CRDs installed before the garbage collector
starts) with the fault proxy (testenv/faultproxy.py) in front: the module talks to the proxy, which counts its
requests and fires the rules; the fixtures are loaded and read back directly.
"""
import os
import signal
import subprocess
import time

import pytest

from testenv.hcp import build
from testenv.hcp.state import left_in_groups, snapshot
from testenv.module_runner import REPO_ROOT, Zygote, module_args_file, runner_command, runner_env

pytestmark = pytest.mark.slow

MUTATING = "[cdpu]*"  # create, delete, deletecollection, patch, update: every mutating verb, no read verb
BATCH = 4
KILL_POINTS = 4
HANG_SECONDS = 0.5
STANDARD_GROUPS = ("cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io")


@pytest.fixture(scope="module")
def lab(fresh_cluster):
    """The module's own control plane (the fault proxy stays in front of it until the module ends)."""
    server = fresh_cluster.enable_faults()
    session = build.RestSession(server.direct_kubeconfig, connections=32)
    crds = build.crd_documents(["AWS"])  # installed with the others; the ones the AWS fixture's state is read from
    zygote = Zygote("capi_object_migrate")
    yield server, session, crds, zygote
    zygote.close()


def prepare(lab, label):
    """Load the fixture into namespace <label>-aws; returns the namespace and its canonical-form replacements."""
    _server, session, crds, _zygote = lab
    # one Machine being deleted, its deletion carried (carry_deletions; without it delete_source refuses while one
    # is: test_capi_object_migrate.py shows it)
    objects = build.build_hcp_namespace("AWS", label, "aws", machines=8, failed=2, deleting=1)
    build.load_objects(session, objects, crds, parallelism=16)
    namespace = objects[0]["metadata"]["name"]
    # a deletion just begun: the Machine's finalizer holds it, its AWSMachine is not being deleted (yet)
    draining = sorted(obj["metadata"]["name"] for obj in objects if obj["kind"] == "Machine"
                      and not obj["metadata"].get("deletionTimestamp") and (obj.get("status") or {}).get("phase") == "Running")[0]
    session.request("DELETE", "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/machines/%s" % (namespace, draining))
    return namespace, ((namespace, "<hcp-namespace>"), (label + "/", "<hc-namespace>/"))


def args_for(server, namespace):
    return {"kubeconfig": server.kubeconfig, "hcp_namespace": namespace, "delete_source": True, "carry_deletions": True,
            "parallelism": 4}


def settled(lab, namespace, replacements, timeout=60.0):
    """Canonical state once the garbage collector removed every standard-group object (polled with the LISTs of the
    standard groups alone: a full snapshot per poll cost the module about half its CPU, 2026-12-04)."""
    _server, session, crds, _zygote = lab
    deadline = time.monotonic() + timeout
    while True:
        left = left_in_groups(session, namespace, crds, STANDARD_GROUPS.__contains__)
        if not left:
            return snapshot(session, namespace, crds, replacements)
        assert time.monotonic() < deadline, "standard objects left in %s: %s" % (namespace, left)
        time.sleep(0.1)


@pytest.fixture(scope="module")
def reference(lab):
    server, _session, _crds, zygote = lab
    namespace, replacements = prepare(lab, "ref")
    # the requests as the fault proxy counts them for its rules' nth (the loader bypassed it)
    since = (server.faults.request_counts()["entries"] or [{"seq": 0}])[-1]["seq"]
    [result] = zygote.race([args_for(server, namespace)])
    assert not result.failed, result.get("msg") or result.stderr
    mutating = [entry for entry in server.faults.request_counts(since)["entries"]
                if entry["namespace"] == namespace and entry["verb"] not in ("get", "list", "watch")]
    state = settled(lab, namespace, replacements)
    assert any(key.startswith("cluster.hypershift.openshift.io/Machine/") for key in state)
    # the carried deletions: their copies are there, being deleted, holding their finalizers for the new controllers;
    # the AWSMachine of the Machine just being deleted is carried (marked) but its copy stays for the drain to finish
    assert [entry["action"] for entry in result["plan"]].count("carry_deletion") == 3, result["plan"]
    marks = [entry for entry in result["plan"] if entry["action"] == "mark_carried"]
    assert sorted((entry["kind"], entry["deletes_copy"]) for entry in marks) == [
        ("AWSMachine", False), ("AWSMachine", True), ("Machine", True), ("Machine", True)], marks
    return len(mutating), state


def assert_same(expected, actual, label):
    assert sorted(actual) == sorted(expected), "%s: objects differ: missing %s, extra %s" % (
        label, sorted(set(expected) - set(actual)), sorted(set(actual) - set(expected)))
    for key in expected:
        assert actual[key] == expected[key], "%s: %s differs:\n%s\n%s" % (label, key, expected[key], actual[key])


def run_faulted_batch(lab, reference_state, cases):
    """cases: [(label, rule without namespace)]; each runs faulted, then clean, then is compared."""
    server, _session, _crds, zygote = lab
    prepared = [(label, rule) + prepare(lab, label) for label, rule in cases]
    rules = [server.add_fault(dict(rule, namespace=namespace)) for _label, rule, namespace, _r in prepared]
    first = zygote.race([args_for(server, namespace) for _label, _rule, namespace, _r in prepared])
    fired = {entry["id"]: entry["fired"] for entry in server.faults.faults()}
    for rule in rules:
        server.faults.remove_fault(rule["id"])
    second = zygote.race([args_for(server, namespace) for _label, _rule, namespace, _r in prepared])
    for (label, rule, namespace, replacements), rule_state, faulted, rerun in zip(prepared, rules, first, second):
        assert fired[rule_state["id"]] == 1, "%s: the fault never fired (the run sent fewer mutating requests)" % label
        if rule.get("action") == "error":
            assert faulted.failed and "injected fault" in faulted["msg"], "%s: %s" % (label, faulted.get("msg"))
        assert not rerun.failed, "%s: re-run failed: %s %s" % (label, rerun.get("msg"), rerun.stderr[-2000:])
        assert_same(reference_state, settled(lab, namespace, replacements), label)


def test_fail_every_mutating_request_then_rerun(lab, reference):
    total, reference_state = reference
    assert 80 <= total <= 200, total
    cases = [("e%d" % n, {"verb": MUTATING, "nth": n, "action": "error", "code": 403}) for n in range(1, total + 1)]
    for start in range(0, len(cases), BATCH):
        run_faulted_batch(lab, reference_state, cases[start:start + BATCH])


def test_drop_connections_then_rerun(lab, reference):
    total, reference_state = reference
    cases = [("d%d" % n, {"verb": MUTATING, "nth": n, "action": "drop"}) for n in range(1, total + 1, 8)]
    for start in range(0, len(cases), BATCH):
        run_faulted_batch(lab, reference_state, cases[start:start + BATCH])


def test_sigkill_during_a_write_then_rerun(lab, reference, tmp_path):
    server, _session, _crds, zygote = lab
    total, reference_state = reference
    points = sorted({max(1, round(total * (index + 0.5) / KILL_POINTS)) for index in range(KILL_POINTS)})
    for point in points:
        label = "k%d" % point
        namespace, replacements = prepare(lab, label)
        rule = server.add_fault({"verb": MUTATING, "namespace": namespace, "nth": point, "action": "hang",
                                 "seconds": HANG_SECONDS})
        path = module_args_file(args_for(server, namespace), directory=str(tmp_path))
        process = subprocess.Popen(runner_command("capi_object_migrate", path), cwd=REPO_ROOT, env=runner_env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not [entry for entry in server.faults.faults() if entry["id"] == rule["id"] and entry["fired"]]:
            assert process.poll() is None, "%s: the module ended before its write %d" % (label, point)
            assert time.monotonic() < deadline, "%s: write %d never came" % (label, point)
            time.sleep(0.01)
        # the proxy forwards the write when the hang is over (a client that dies before would cancel it there)
        time.sleep(HANG_SECONDS + 0.02)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
        os.unlink(path)
        server.faults.remove_fault(rule["id"])
        time.sleep(0.5)  # the write completes in kube-apiserver after its client died
        [rerun] = zygote.race([args_for(server, namespace)])
        assert not rerun.failed, "%s: re-run after SIGKILL failed: %s" % (label, rerun.get("msg"))
        assert_same(reference_state, settled(lab, namespace, replacements), label)
