"""The pre-install's figures (plugins/module_utils/hcp/rollout.py): what one read says about each Deployment, and the
Pods replaced and longest gap without a Ready replica over a wait's reads; RolloutService with a client of recorded
answers (the integration tests run it on a real control plane)."""
import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import rollout

NS = "clusters-prod-01"


def deployment(name, ready=1, rolled=True, replicas=1, version=None):
    status = {"observedGeneration": 2, "replicas": replicas, "updatedReplicas": replicas, "availableReplicas": replicas,
              "readyReplicas": ready}
    if not rolled:
        status.update(replicas=replicas + 1)
    # a Deployment whose status changes gets a new resourceVersion
    version = version or "%s-%s-%s" % (ready, rolled, replicas)
    return {"metadata": {"name": name, "namespace": NS, "generation": 2, "resourceVersion": version},
            "spec": {"replicas": replicas}, "status": status}


def pod(name, owner, hash_="7c9d8f6b5"):
    return {"metadata": {"name": name, "ownerReferences": [{"kind": "ReplicaSet", "name": "%s-%s" % (owner, hash_)}]}}


def test_a_sample_holds_the_named_deployments_alone_with_their_own_pods():
    sample = rollout.rollout_sample(
        [deployment("cluster-api"), deployment("capi-provider", ready=0, rolled=False), deployment("other")],
        [pod("cluster-api-7c9d8f6b5-a", "cluster-api"), pod("capi-provider-5f6d7c8b9-b", "capi-provider", "5f6d7c8b9"),
         pod("cluster-api-provider-x-1", "cluster-api-provider-x")],
        ["cluster-api", "capi-provider", "missing"])
    assert sample == {"cluster-api": {"ready": 1, "wanted": 1, "rolled_out": True, "pods": ["cluster-api-7c9d8f6b5-a"]},
                      "capi-provider": {"ready": 0, "wanted": 1, "rolled_out": False,
                                        "pods": ["capi-provider-5f6d7c8b9-b"]}}


def test_a_pod_still_terminating_when_the_rollout_is_done_counts_as_replaced():
    old, new = pod("a-7c9d8f6b5-1", "a"), pod("a-5f6d7c8b9-2", "a", "5f6d7c8b9")
    terminating = dict(old, metadata=dict(old["metadata"], deletionTimestamp="2026-12-04T23:55:00Z"))
    assert rollout.rollout_sample([deployment("a")], [terminating, new], ["a"])["a"]["pods"] == ["a-5f6d7c8b9-2"]
    reads = [([deployment("a", version="before")], [old]), ([deployment("a", rolled=False)], [old, new]),
             ([deployment("a")], [terminating, new])]
    clock = Clock()
    service = rollout.RolloutService(Answers(reads), NS, ["a"], 60, 0.5, clock=clock, sleep=clock.sleep)
    service.start()
    assert service.run()["deployments"][0]["pods_replaced"] == ["a-7c9d8f6b5-1"]


def state(ready, pods, wanted=1):
    return {"ready": ready, "wanted": wanted, "rolled_out": False, "pods": pods}


def test_the_figures_count_the_pods_gone_and_the_longest_unready_run():
    samples = [(0.0, {"a": state(1, ["a-1"]), "b": state(1, ["b-1"])}),
               (0.2, {"a": state(1, ["a-1", "a-2"]), "b": state(0, ["b-1", "b-2"])}),
               (0.4, {"a": state(1, ["a-1", "a-2"]), "b": state(0, ["b-2"])}),
               (0.9, {"a": state(1, ["a-2"]), "b": state(1, ["b-2"])}),
               (1.1, {"a": state(0, ["a-2"]), "b": state(1, ["b-2"])})]
    figures = rollout.rollout_figures(samples)
    assert figures["deployments"] == [{"name": "a", "pods_replaced": ["a-1"], "longest_unready_seconds": 0.0},
                                      {"name": "b", "pods_replaced": ["b-1"], "longest_unready_seconds": 0.7}]
    assert figures["pods_replaced"] == 2 and figures["longest_unready_seconds"] == 0.7


def test_a_deployment_scaled_to_zero_has_no_gap_and_an_unchanged_one_replaced_nothing():
    samples = [(0.0, {"a": state(0, [], wanted=0), "b": state(1, ["b-1"])}),
               (5.0, {"a": state(0, [], wanted=0), "b": state(1, ["b-1"])})]
    assert rollout.rollout_figures(samples) == {
        "deployments": [{"name": "a", "pods_replaced": [], "longest_unready_seconds": 0.0},
                        {"name": "b", "pods_replaced": [], "longest_unready_seconds": 0.0}],
        "pods_replaced": 0, "longest_unready_seconds": 0.0}


class Answers(object):
    """A client whose LISTs answer from recorded reads, one (Deployments, Pods) pair per poll: each LIST of the
    Deployments is the next poll (the last read answers every poll after it), the Pods are those of that poll."""

    def __init__(self, reads):
        self.reads = list(reads)
        self.current = self.reads[0]
        self.calls = []

    def list(self, path, what):
        self.calls.append(what)
        if "/pods" in path:
            return self.current[1]
        self.current = self.reads.pop(0) if len(self.reads) > 1 else self.reads[0]
        return self.current[0]


class Clock(object):
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_the_service_reads_until_every_deployment_rolled_out():
    reads = [([deployment("a", ready=0, rolled=False)], [pod("a-7c9d8f6b5-1", "a"), pod("a-5f6d7c8b9-2", "a", "5f6d7c8b9")]),
             ([deployment("a", rolled=False)], [pod("a-5f6d7c8b9-2", "a", "5f6d7c8b9")]),
             ([deployment("a")], [pod("a-5f6d7c8b9-2", "a", "5f6d7c8b9")])]
    clock = Clock()
    result = rollout.RolloutService(Answers(reads), NS, ["a"], 60, 0.5, clock=clock, sleep=clock.sleep).run()
    assert result == {"deployments": [{"name": "a", "pods_replaced": ["a-7c9d8f6b5-1"], "longest_unready_seconds": 0.5}],
                      "pods_replaced": 1, "longest_unready_seconds": 0.5, "waited_seconds": 1.0, "polls": 3}


def test_a_pod_replaced_before_the_first_read_after_the_patches_is_counted_from_the_sample_taken_before_them():
    old, new = pod("a-7c9d8f6b5-1", "a"), pod("a-5f6d7c8b9-2", "a", "5f6d7c8b9")
    # before the patches: the old Pod; by the first read after them the rollout had replaced it already
    reads = [([deployment("a", version="before")], [old]), ([deployment("a", rolled=False)], [new]),
             ([deployment("a")], [new])]
    clock = Clock()
    service = rollout.RolloutService(Answers(reads), NS, ["a"], 60, 0.5, clock=clock, sleep=clock.sleep)
    service.start()
    clock.sleep(0.1)  # the patches
    result = service.run()
    assert result["pods_replaced"] == 1 and result["deployments"][0]["pods_replaced"] == ["a-7c9d8f6b5-1"]
    assert result["polls"] == 3 and result["waited_seconds"] == 0.6  # from the sample before the patches
    # without it, the same rollout counts nothing: what the fleet bench saw (263 of about 600)
    clock = Clock()
    assert rollout.RolloutService(Answers(reads[1:]), NS, ["a"], 60, 0.5, clock=clock, sleep=clock.sleep).run()[
        "pods_replaced"] == 0


def test_the_pods_are_read_when_a_deployment_changed_or_a_second_passed_and_once_more_at_the_end():
    old, new = pod("a-7c9d8f6b5-1", "a"), pod("a-5f6d7c8b9-2", "a", "5f6d7c8b9")
    waiting = ([deployment("a", ready=1, rolled=False)], [old, new])
    reads = [waiting] * 6 + [([deployment("a", ready=1, rolled=False, version="changed")], [new])] \
        + [([deployment("a", version="changed")], [new])]
    clock = Clock()
    client = Answers(reads)
    result = rollout.RolloutService(client, NS, ["a"], 60, 0.2, clock=clock, sleep=clock.sleep).run()
    polls = [call.split()[1] for call in client.calls]
    # Deployments every 0.2 s; Pods at the start, after 1 s unchanged, at the change (1.2 s) and, rolled out without a
    # change of its own at 1.4 s, once more right then: the last sample's Pods are the ones read last
    assert polls == ["Deployments", "Pods"] + ["Deployments"] * 4 + ["Deployments", "Pods"] * 2 + ["Deployments"] * 2 \
        + ["Pods"], polls
    assert result["pods_replaced"] == 1 and result["polls"] == 9 and result["waited_seconds"] == 1.4
    # without Pods (pods=False, no leases) none is ever read
    client = Answers(reads)
    clock = Clock()
    rollout.RolloutService(client, NS, ["a"], 60, 0.2, clock=clock, sleep=clock.sleep, pods=False).run()
    assert not [call for call in client.calls if "Pods" in call]


class Bell(object):
    """A ChangeBell that answers each wait from a script: the paths that rang, after the seconds the wait took (the
    clock moves on by them; None: the whole limit passed, nothing rang)."""

    def __init__(self, clock, script, broken=None):
        self.clock, self.script, self.broken = clock, list(script), broken
        self.limits = []
        self.stopped = False

    def stop(self):
        self.stopped = True

    def wait(self, limit):
        self.limits.append(round(limit, 3))
        took, rung = self.script.pop(0) if self.script else (None, set())
        self.clock.sleep(limit if took is None else took)
        return rung


def test_with_a_watch_it_reads_when_something_rang_and_the_pods_when_a_pod_did():
    old, new = pod("a-7c9d8f6b5-1", "a"), pod("a-5f6d7c8b9-2", "a", "5f6d7c8b9")
    waiting = ([deployment("a", ready=1, rolled=False)], [old, new])
    reads = [waiting, waiting, ([deployment("a", ready=1, rolled=False)], [new]), ([deployment("a")], [new])]
    clock = Clock()
    client = Answers(reads)
    service = rollout.RolloutService(client, NS, ["a"], 60, 0.2, clock=clock, sleep=clock.sleep, watch=True)
    deployments, pods = service.paths["deployments"], service.paths["pods"]
    # a Deployment changed after 3 s (same status: its version alone), a Pod after 10 s more, the rollout 0.5 s later
    service.bell = Bell(clock, [(3.0, {deployments}), (10.0, {pods}), (0.5, {deployments})])
    result = service.run()
    polls = [call.split()[1] for call in client.calls]
    # first read with the Pods; the Deployment's ring without a change of its status reads the Deployments alone (no
    # read by the clock: 3 s passed), the Pod's ring the Pods too, and the last, its status changed, too
    assert polls == ["Deployments", "Pods", "Deployments", "Deployments", "Pods", "Deployments", "Pods"], polls
    assert result["polls"] == 4 and result["pods_replaced"] == 1 and result["waited_seconds"] == 14.1
    # nothing rang for 5 s at most: each wait's limit is IDLE_READ_SECONDS after the poll_seconds between two reads
    assert service.bell.limits == [4.8, 4.8, 4.8] and service.bell.stopped


def test_a_broken_bell_reads_every_poll_seconds_and_a_wait_ends_at_the_timeout():
    reads = [([deployment("a", rolled=False)], [])]
    clock = Clock()
    service = rollout.RolloutService(Answers(reads), NS, ["a"], 2, 0.5, clock=clock, sleep=clock.sleep, watch=True)
    service.bell = Bell(clock, [], broken="403")
    with pytest.raises(rollout.RolloutError):
        service.run()
    assert service.bell.limits == [], "a broken bell is not waited on"
    clock = Clock()
    service = rollout.RolloutService(Answers(reads), NS, ["a"], 2, 0.5, clock=clock, sleep=clock.sleep, watch=True)
    service.bell = Bell(clock, [])
    with pytest.raises(rollout.RolloutError):
        service.run()
    # the one wait ends so that the next read comes poll_seconds after the timeout, not IDLE_READ_SECONDS after it
    assert service.bell.limits == [2.0]


def test_the_service_fails_naming_what_did_not_roll_out():
    clock = Clock()
    reads = [([deployment("a", rolled=False), deployment("b")], [])]
    with pytest.raises(rollout.RolloutError) as raised:
        rollout.RolloutService(Answers(reads), NS, ["a", "b"], 2, 0.5, clock=clock, sleep=clock.sleep).run()
    message = str(raised.value)
    assert "Deployments a in namespace %s did not roll out within 2s" % NS in message
    assert "kubectl -n %s rollout status" % NS in message


class WithLeases(Answers):
    """Answers, and the Leases of the namespace: one list per Lease read (the last answers every read after it)."""

    def __init__(self, reads, leases):
        super(WithLeases, self).__init__(reads)
        self.leases = list(leases)
        self.dry_run = False

    def list(self, path, what):
        if "/leases" not in path:
            return super(WithLeases, self).list(path, what)
        self.calls.append(what)
        return self.leases.pop(0) if len(self.leases) > 1 else self.leases[0]


def lease(holder, renewed="2999-01-01T00:00:00.000000Z"):
    spec = {"leaseDurationSeconds": 137, "renewTime": renewed, "leaseTransitions": 3}
    if holder:
        spec["holderIdentity"] = holder + "_6f1c"
    return {"metadata": {"name": "controller-leader-election-capi", "resourceVersion": "7"}, "spec": spec}


def on_node(pod_object, node="worker-1"):
    return dict(pod_object, spec={"nodeName": node})


def test_with_leases_the_wait_hands_over_and_lasts_until_each_manager_leads():
    old, new = "a-7c9d8f6b5-abcde", "a-5f6d7c8b9-fghij"
    reads = [([deployment("a", rolled=False)], [on_node(pod(old, "a")), on_node(pod(new, "a", "5f6d7c8b9"))]),
             ([deployment("a")], [on_node(pod(new, "a", "5f6d7c8b9"))])]
    leases = [[lease(old)], [lease(old)], [lease(None)], [lease(None)], [lease(new)]]
    clock = Clock()
    client = WithLeases(reads, leases)
    client.get_or_none = lambda path, what: {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    written = []
    client.replace = lambda path, body, what: written.append((path, body)) or body
    service = rollout.RolloutService(client, NS, ["a"], 60, 0.5, clock=clock, sleep=clock.sleep, pods=False, leases=True)
    result = service.run()
    assert [path.rsplit("/", 1)[1] for path, _body in written] == ["controller-leader-election-capi"]
    assert "holderIdentity" not in written[0][1]["spec"]
    assert result["leaderless_seconds"] == 3.5 and result["leadership"]["leases"][0]["live"]
    assert [released["pod"] for released in result["leadership"]["released"]] == [old]
    # the rollout's own wait, and the wait for the leaders after it, each its own figure
    assert (result["waited_seconds"], result["leaders_waited_seconds"]) == (0.5, 3.0) and service.warnings == []
    assert any("Pods" in call for call in client.calls)  # the Pods are read for the Leases even without pods=True


def test_a_manager_still_without_a_leader_at_the_timeout_is_a_warning_naming_its_lease_and_why():
    reads = [([deployment("a")], [])]
    clock = Clock()
    client = WithLeases(reads, [[lease("a-7c9d8f6b5-abcde")]])
    service = rollout.RolloutService(client, NS, ["a"], 5, 0.5, clock=clock, sleep=clock.sleep, leases=True)
    result = service.run()
    assert result["leaderless_seconds"] == 6.0 and not result["leadership"]["leases"][0]["live"]
    assert len(service.warnings) == 1 and "Lease %s/controller-leader-election-capi" % NS in service.warnings[0]
    assert "its holder's Pod a-7c9d8f6b5-abcde is gone" in service.warnings[0]
    assert "gone before this run saw it" in service.warnings[0]
