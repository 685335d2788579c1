"""The managers' leader election seen from outside (plugins/module_utils/hcp/leadership.py): whose Lease is whose,
when a holder is live, when a Lease may be handed over and why not otherwise, the leaderless figures over samples;
LeadershipWatch with a client of recorded answers (tests/integration/e2e runs it under the real CAPI managers)."""
import datetime

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import leadership
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiError

NS = "clusters-prod-01"
NOW = datetime.datetime(2026, 12, 2, 1, 0, 0, tzinfo=datetime.timezone.utc)
OLD, NEW = "cluster-api-7c9d8f6b5-abcde", "cluster-api-5f6d7c8b9-fghij"
NAMES = ["cluster-api", "capi-provider"]


def lease(holder=OLD, renewed_ago=10.0, duration=137, rv="100", name="controller-leader-election-capi", transitions=1):
    spec = {"leaseDurationSeconds": duration, "leaseTransitions": transitions,
            "renewTime": (NOW - datetime.timedelta(seconds=renewed_ago)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
    if holder is not None:
        spec["holderIdentity"] = holder + "_0b6f1e2c-4d0a-4f7e-9c1b-3e5d2a7f8c90"
    return {"metadata": {"name": name, "namespace": NS, "resourceVersion": rv}, "spec": spec}


def pod(name, node="worker-1", deleting=False, finalizers=()):
    metadata = {"name": name, "namespace": NS}
    if deleting:
        metadata["deletionTimestamp"] = "2026-12-02T00:59:58Z"
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {"metadata": metadata, "spec": {"nodeName": node}}


def node(ready=True):
    return {"metadata": {"name": "worker-1"},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                      {"type": "Ready", "status": "True" if ready else "Unknown"}]}}


def memory():
    return leadership.new_memory()


def test_a_lease_belongs_to_the_deployment_whose_pod_holds_it_and_stays_so():
    leases = [lease(), lease(holder="capi-provider-6d5c4b3a2-zzzzz", name="capd"), lease(holder=None, name="free"),
              lease(holder="cluster-api-provider-aws-1a2b3c4d5-qqqqq", name="other"), lease(holder="node-1", name="n")]
    owners = leadership.lease_owners(leases, NAMES)
    assert owners == {"controller-leader-election-capi": "cluster-api", "capd": "capi-provider"}
    # later without a holder (released): still the core manager's
    assert leadership.lease_owners([lease(holder=None)], NAMES, owners) == owners
    assert leadership.lease_owners(leases, []) == {}


@pytest.mark.parametrize("pods, the_lease, live, why", [
    ({OLD: pod(OLD)}, lease(), True, ""),
    ({}, lease(), False, "its holder's Pod %s is gone" % OLD),
    ({OLD: pod(OLD, deleting=True)}, lease(), False, "its holder's Pod %s is being deleted" % OLD),
    ({OLD: pod(OLD)}, lease(renewed_ago=140), False, "expired"),
    ({OLD: pod(OLD)}, lease(holder=None), False, "no holder"),
])
def test_a_holder_is_live_while_its_pod_runs_and_it_renews(pods, the_lease, live, why):
    state = leadership.lease_state(the_lease, "cluster-api", pods, NOW)
    assert (state["live"], state["why"].split(" (")[0]) == (live, why)
    assert state["deployment"] == "cluster-api" and state["resource_version"] == "100"


def test_the_lease_of_a_gone_pod_on_a_ready_node_is_released_with_its_resource_version():
    remembered = memory()
    assert leadership.handover_step(lease(), {OLD: pod(OLD)}, None, remembered, NOW) == (None, "")
    assert remembered["node_of_pod"] == {OLD: "worker-1"}
    step, why = leadership.handover_step(lease(), {NEW: pod(NEW)}, node(), remembered, NOW)
    assert step == leadership.RELEASE and OLD in why and "worker-1 is Ready" in why
    released = leadership.released_lease(lease())
    assert "holderIdentity" not in released["spec"] and released["metadata"]["resourceVersion"] == "100"
    assert released["spec"]["leaseTransitions"] == 1 and "holderIdentity" in lease()["spec"]  # the read is not changed


@pytest.mark.parametrize("pods, seen, the_node, why", [
    ({OLD: pod(OLD, deleting=True, finalizers=["example.com/hold"])}, True, node(),
     "still exists (finalizers example.com/hold)"),
    ({}, False, node(), "gone before this run saw it"),
    ({}, True, None, "node worker-1 of its holder's Pod %s is gone" % OLD),
    ({}, True, node(ready=False), "is not Ready"),
])
def test_a_lease_whose_holder_may_still_run_is_never_released(pods, seen, the_node, why):
    remembered = memory()
    if seen:
        remembered["node_of_pod"][OLD] = "worker-1"
    step, said = leadership.handover_step(lease(), pods, the_node, remembered, NOW)
    assert step == leadership.WAIT and why in said, said


def test_a_lease_renewed_after_its_pod_went_is_left_to_expire():
    remembered = memory()
    remembered["node_of_pod"][OLD] = "worker-1"
    assert leadership.handover_step(lease(), {}, node(ready=False), remembered, NOW)[0] == leadership.WAIT
    step, why = leadership.handover_step(lease(rv="101"), {}, node(), remembered, NOW)
    assert step == leadership.WAIT and "renewed after" in why
    # a later holder of the same Lease is judged on its own
    other = "cluster-api-1a2b3c4d5-kkkkk"
    remembered["node_of_pod"][other] = "worker-1"
    assert leadership.handover_step(lease(holder=other, rv="150"), {}, node(), remembered, NOW)[0] == leadership.RELEASE


def test_a_free_or_expired_lease_needs_no_handover():
    assert leadership.handover_step(lease(holder=None), {}, node(), memory(), NOW) == (None, "")
    assert leadership.handover_step(lease(renewed_ago=200), {}, node(), memory(), NOW) == (None, "")


def live(holder="a", transitions=1, deployment="cluster-api"):
    return {"deployment": deployment, "live": True, "holder": holder, "transitions": transitions, "why": ""}


def dead(why="its holder's Pod a is gone", deployment="cluster-api"):
    return {"deployment": deployment, "live": False, "holder": "a", "transitions": 1, "why": why}


def test_the_figures_are_the_longest_stretch_without_a_live_holder_per_lease():
    samples = [(0.0, {"l": live(), "p": live(deployment="capi-provider")}),
               (1.0, {"l": dead(), "p": live(deployment="capi-provider")}),
               (2.0, {"l": dead(), "p": live(deployment="capi-provider")}),
               (29.5, {"l": live("b", 2), "p": live(deployment="capi-provider")}),
               (30.0, {"l": dead(), "p": dead(deployment="capi-provider")})]
    figures = leadership.leaderless_figures(samples)
    # from the last sample with a live holder (the leader was lost after it): an upper bound by one interval
    assert figures["leaderless_seconds"] == 29.5
    assert figures["leases"] == [
        {"lease": "l", "deployment": "cluster-api", "live": False, "why": "its holder's Pod a is gone",
         "leaderless_seconds": 29.5},
        {"lease": "p", "deployment": "capi-provider", "live": False, "why": "its holder's Pod a is gone",
         "leaderless_seconds": 0.5}]
    # still without a leader when the run ends (a window that failed): counted to the end, not dropped
    assert leadership.leaderless_figures([(0.0, {"l": live()}), (5.0, {"l": dead()})])["leaderless_seconds"] == 5.0


def test_a_lease_that_changed_hands_between_two_live_reads_counts_the_interval():
    assert leadership.leaderless_figures([(0.0, {"l": live()}), (5.0, {"l": live()})])["leaderless_seconds"] == 0.0
    assert leadership.leaderless_figures([(0.0, {"l": live()}), (5.0, {"l": live("b", 2)})])["leaderless_seconds"] == 5.0
    assert leadership.leaderless_figures([(0.0, {"l": live()}), (4.0, {"l": live("a", 2)})])["leaderless_seconds"] == 4.0
    assert leadership.leaderless_figures([(0.0, {})]) == {"leases": [], "leaderless_seconds": None}


class Recorded(object):
    """Answers in order per (verb, path); writes recorded."""

    def __init__(self, leases, pods, nodes=None, refuse=None):
        self.leases, self.pods, self.nodes = list(leases), list(pods), nodes or {}
        self.dry_run = False
        self.refuse = refuse  # (status, reason) every write gets, or None
        self.attempts = []
        self.writes = []

    def list(self, path, what):
        answers = self.leases if "/leases" in path else self.pods
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, ApiError):
            raise answer
        return answer

    def get_or_none(self, path, what):
        return self.nodes.get(path.rsplit("/", 1)[1])

    def replace(self, path, body, what):
        self.attempts.append(path)
        if self.refuse:
            raise ApiError(self.refuse[0], self.refuse[1], "refused", what)
        self.writes.append((path, body, what))
        return body


def clock(values):
    values = list(values)
    return lambda: values.pop(0) if len(values) > 1 else values[0]


def test_the_watch_releases_once_and_measures_until_the_new_pod_leads():
    client = Recorded(leases=[[lease()], [lease()], [lease(holder=None, rv="101")], [lease(holder=NEW, rv="102")]],
                      pods=[[pod(OLD, deleting=True), pod(NEW)], [pod(NEW)], [pod(NEW)], [pod(NEW)]],
                      nodes={"worker-1": node()})
    watch = leadership.LeadershipWatch(client, NS, NAMES, clock=clock([0.0, 0.0, 1.0, 2.0, 27.0]), now=lambda: NOW)
    for _ in range(4):
        watch.observe()
    assert [write[0] for write in client.writes] == [
        "/apis/coordination.k8s.io/v1/namespaces/%s/leases/controller-leader-election-capi" % NS]
    assert "Lease %s/controller-leader-election-capi" % NS in client.writes[0][2]
    figures = watch.figures()
    assert figures["leaderless_seconds"] == 27.0 and watch.leaders_live()  # from the deletion on
    assert figures["released"] == [{"lease": "controller-leader-election-capi", "deployment": "cluster-api", "pod": OLD,
                                    "seconds": 1.0, "why": "its holder's Pod %s is gone and its node worker-1 is Ready"
                                    % OLD}]
    assert figures["waited"] == []  # it waited while the old Pod terminated, then was released: not left to expire


def test_the_watch_writes_nothing_on_a_conflict_nor_in_check_mode_and_says_why_it_waits():
    held = pod(OLD, deleting=True, finalizers=["example.com/hold"])
    client = Recorded(leases=[[lease()]], pods=[[held, pod(NEW)]])
    watch = leadership.LeadershipWatch(client, NS, NAMES, now=lambda: NOW)
    watch.observe()
    assert client.attempts == [] and not watch.leaders_live()
    assert "finalizers example.com/hold" in watch.figures()["waited"][0]["why"]
    gone = Recorded(leases=[[lease()]], pods=[[pod(OLD)], [pod(NEW)]], nodes={"worker-1": node()},
                    refuse=(409, "Conflict"))
    watch = leadership.LeadershipWatch(gone, NS, NAMES, now=lambda: NOW)
    watch.observe()
    watch.observe()  # the release meets a 409: judged again on the next sample, nothing recorded as released
    assert len(gone.attempts) == 1 and watch.figures()["released"] == [] and watch.figures()["errors"] == []
    checked = Recorded(leases=[[lease()]], pods=[[pod(OLD)], [pod(NEW)]], nodes={"worker-1": node()})
    checked.dry_run = True
    watch = leadership.LeadershipWatch(checked, NS, NAMES, now=lambda: NOW)
    watch.observe()
    watch.observe()
    assert checked.attempts == [] and watch.figures()["released"] == []


def test_a_lease_renewed_after_its_holder_was_told_to_stop_is_left_to_expire():
    client = Recorded(leases=[[lease(rv="100")], [lease(rv="101")]], pods=[[pod(OLD, deleting=True)], [pod(NEW)]],
                      nodes={"worker-1": node()})
    watch = leadership.LeadershipWatch(client, NS, NAMES, now=lambda: NOW)
    watch.observe()
    watch.observe()
    assert client.attempts == [] and "renewed after its holder's Pod" in watch.figures()["waited"][0]["why"]


def test_what_cannot_be_read_or_written_is_a_sample_missed_or_a_lease_left_to_expire_never_a_failure():
    refused = Recorded(leases=[[lease()]], pods=[[pod(OLD)], [pod(NEW)]], nodes={"worker-1": node()},
                       refuse=(403, "Forbidden"))
    watch = leadership.LeadershipWatch(refused, NS, NAMES, now=lambda: NOW)
    watch.observe()
    watch.observe()
    figures = watch.figures()
    assert figures["released"] == [] and "its release was refused" in figures["waited"][0]["why"]
    assert len(figures["errors"]) == 1
    unreadable = Recorded(leases=[ApiError(403, "Forbidden", "leases is forbidden", "list Leases"), [lease()]],
                          pods=[[pod(OLD)]])
    watch = leadership.LeadershipWatch(unreadable, NS, NAMES, now=lambda: NOW)
    assert watch.observe() == {} and watch.samples == [] and "forbidden" in watch.figures()["errors"][0]
    assert watch.observe() and watch.leaders_live()


def test_a_lease_an_earlier_run_released_is_followed_once_a_named_pod_takes_it():
    """A re-run (or the rescue after a window) finds the Lease without a holder: its samples count for the Deployment
    whose Pod takes it, from the first one."""
    client = Recorded(leases=[[lease(holder=None, rv="200")], [lease(holder=None, rv="200")], [lease(holder=NEW, rv="201")]],
                      pods=[[pod(NEW)]])
    watch = leadership.LeadershipWatch(client, NS, NAMES, clock=clock([0.0, 0.0, 2.0, 6.0]), now=lambda: NOW)
    assert watch.observe() == {} and watch.leaders_live()  # nobody's yet: nothing to wait for
    watch.observe()
    assert watch.observe()["controller-leader-election-capi"]["deployment"] == "cluster-api"
    figures = watch.figures()
    assert figures["leaderless_seconds"] == 6.0 and figures["leases"][0]["deployment"] == "cluster-api"
    # a Lease held by another Deployment's Pod is never followed
    other = Recorded(leases=[[lease(holder="kube-scheduler-x_1", name="kube-scheduler")]], pods=[[]])
    watch = leadership.LeadershipWatch(other, NS, NAMES, now=lambda: NOW)
    assert watch.observe() == {} and watch.figures()["leases"] == []
