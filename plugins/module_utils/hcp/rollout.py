# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The pre-install's figure: wait until Deployments have rolled out (the zero-stop strategy's sidecars put in ahead)
and measure what the rollout cost them - the Pods it replaced and the longest time one had no Ready replica.

A rollout replaces the Pods the way the Deployment's strategy allows: with HyperShift's (one replica, RollingUpdate
25%/25%: at most one extra Pod, none unavailable) the old Pod goes only once the new one is Ready, so no gap is
expected; another strategy (Recreate, or maxUnavailable of a whole replica) leaves one, and this is where it shows.

Pure: rollout_sample() (one read of the Deployments and their Pods) and rollout_figures() (the samples' figures).
RolloutService reads the Deployments (one LIST) until every named Deployment that exists has rolled out, or fails after
timeout naming those that have not. Between two reads it waits (with watch, as the modules do) on a WATCH of the
namespace's Deployments and one of its Pods (k8s/watch.py ChangeBell): it reads again when one of them changes, at most
once every poll_seconds, and otherwise once every IDLE_READ_SECONDS (once a second while a manager has no live leader).
The Pods (and, with leases, the Leases) are read with the Deployments only when they can have changed in a way that
matters: the first and the last read, a read after a Pod changed or where a named Deployment changed (its
resourceVersion: a ReplicaSet scaled, a Pod became Ready or went), while a manager has no live leader (a Lease to hand
over as soon as its holder's Pod is gone), and, without a watch, every FULL_READ_SECONDS. The gap without a Ready replica is
the Deployments' own figure: every change of it is a Deployment event, read within poll_seconds. Without a watch (an
identity with list but not watch, or a watch that keeps failing) it reads every poll_seconds. (Every read was all three
LISTs until 2026-12-02, and every poll_seconds until 2026-12-03: at poll_seconds 0.2 a 55-second pre-install cost a
CPU-second of LISTs.)
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.hypershift.private_capi.plugins.module_utils.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.leadership import LeadershipWatch, longest_stretch
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.quiesce import owned_by, owner_pattern
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import api_path
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.objects import rolled_out
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import ModuleService
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.watch import ChangeBell
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe


# the longest time between two reads of the Pods (and Leases) while no named Deployment changes
FULL_READ_SECONDS = 1.0
# the longest time between two reads while nothing changes (with a watch)
IDLE_READ_SECONDS = 5.0


def deployments_version(deployments, names):
    """What changes whenever one of the named Deployments does: their names and resourceVersions."""
    metadata = [deployment.get("metadata") or {} for deployment in deployments]
    return sorted((meta.get("name"), meta.get("resourceVersion")) for meta in metadata if meta.get("name") in names)


class RolloutError(PrivateCapiError):
    """Deployments that did not roll out in time; the message names them and what to look at."""


def rollout_sample(deployments, pods, names):
    """{name: {ready, wanted, rolled_out, pods}} for each Deployment of names found in deployments (as read): its Ready
    replicas as its status says, the replicas it wants, whether it has rolled out, and the names of its Pods that are
    not being deleted (a Pod replaced is one seen that is gone, or going, at the end: a real container's Pod stays
    Terminating for its grace period after the rollout is done - until 2026-12-04 those were not counted)."""
    sample = {}
    for deployment in deployments:
        name = (deployment.get("metadata") or {}).get("name")
        if name not in names:
            continue
        pattern = owner_pattern([name])
        sample[name] = {"ready": int((deployment.get("status") or {}).get("readyReplicas") or 0),
                        "wanted": int((deployment.get("spec") or {}).get("replicas", 1)),
                        "rolled_out": rolled_out(deployment),
                        "pods": sorted((pod.get("metadata") or {}).get("name") for pod in pods
                                       if owned_by(pod, pattern) and not (pod.get("metadata") or {}).get("deletionTimestamp"))}
    return sample


def rollout_figures(samples):
    """The figures of [(seconds, rollout_sample)] in order: per Deployment the Pods replaced (seen, gone at the end)
    and the longest run of samples with no Ready replica while it wanted one (from its first such sample to the
    first one with a Ready replica, or to the last sample); the totals over all of them."""
    figures = []
    for name in sorted(set(name for _at, sample in samples for name in sample)):
        states = [(at, sample[name]) for at, sample in samples if name in sample]
        seen = set(pod for _at, state in states for pod in state["pods"])
        longest = longest_stretch([(at, state["ready"] < 1 <= state["wanted"]) for at, state in states])
        figures.append({"name": name, "pods_replaced": sorted(seen - set(states[-1][1]["pods"])),
                        "longest_unready_seconds": longest})
    return {"deployments": figures, "pods_replaced": sum(len(f["pods_replaced"]) for f in figures),
            "longest_unready_seconds": max([f["longest_unready_seconds"] for f in figures] or [0.0])}


class RolloutService(object):
    """Reads the named Deployments of namespace every poll_seconds, and their Pods when due, until all have rolled
    out; with leases, also their managers' Leases (leadership.LeadershipWatch: a Lease whose holder is gone is handed
    over) until each has a live leader again."""

    def __init__(self, client, namespace, names, timeout, poll_seconds, clock=time.monotonic, sleep=time.sleep,
                 pods=True, leases=False, watch=False):
        self.client = client
        self.watch = watch  # wait on a ChangeBell between reads (else every poll_seconds)
        self.bell = None
        self.paths = {"deployments": api_path("apps", "v1", "deployments", namespace),
                      "pods": api_path("", "v1", "pods", namespace)}
        self.pods = pods or leases  # False: no Pod is read (no pods_replaced; list on pods not needed)
        self.namespace = namespace
        self.names = list(names)
        self.timeout = timeout
        self.poll_seconds = poll_seconds
        self.clock = clock
        self.sleep = sleep
        self.leadership = LeadershipWatch(client, namespace, names, clock=clock) if leases else None
        self.warnings = []
        self.last_pods = []  # the Pods as last read (a sample without a read of its own holds them)
        self.full_read_at = None  # when they were read (seconds after the start)
        self.version = None  # deployments_version of the last read
        self.before = None  # (start, sample) of start(): the Deployments and their Pods before the caller changed them

    def _full_read_due(self, at, version):
        """Whether this read also reads the Pods and Leases (see the module's docstring)."""
        watched = self.bell is not None and not self.bell.broken  # a Pod that changes rings: no read by the clock
        return (self.full_read_at is None or version != self.version
                or (not watched and at - self.full_read_at >= FULL_READ_SECONDS)
                or (self.leadership is not None and not self.leadership.leaders_live()))

    def _read(self, started, final=False, pods_changed=False):
        """One sample (at, rollout_sample) and whether its Pods were read now (else they are the last ones read)."""
        deployments = self.client.list(self.paths["deployments"], "list " + describe("Deployments", namespace=self.namespace))
        at, version = self.clock() - started, deployments_version(deployments, self.names)
        fresh = self.pods and (final or pods_changed or self._full_read_due(at, version))
        if fresh:
            self.last_pods = self.client.list(self.paths["pods"], "list " + describe("Pods", namespace=self.namespace))
            self.full_read_at = at
            if self.leadership is not None:
                self.leadership.observe(self.last_pods)
        self.version = version
        return (at, rollout_sample(deployments, self.last_pods, self.names)), fresh or not self.pods

    def _pause(self, at):
        """Wait until the next read is due (at: seconds since the start); whether the Pods changed meanwhile."""
        self.sleep(self.poll_seconds)  # at most one read every poll_seconds
        if not self.watch:
            return False
        if self.bell is None:  # from the server's newest: its first events (every object as ADDED) ring at once
            paths = [self.paths["deployments"]] + ([self.paths["pods"]] if self.pods else [])
            self.bell = ChangeBell(self.client, paths)
        if self.bell.broken:
            return False
        limit = IDLE_READ_SECONDS
        if self.leadership is not None and not self.leadership.leaders_live():
            limit = FULL_READ_SECONDS
        limit = min(limit, self.timeout + self.poll_seconds - at) - self.poll_seconds
        return self.paths["pods"] in self.bell.wait(limit)

    def start(self):
        """The first sample, taken before the caller changes the Deployments: their Pods then are those the rollout
        replaces. Without it the first read follows the patches, and a Pod replaced before it (a rollout of a few
        seconds on an idle node) is not counted (2026-12-04: 263 of about 600 counted over 100 HostedClusters)."""
        started = self.clock()
        sample, _fresh = self._read(started, final=True)
        self.before = (started, sample)

    def run(self):
        try:
            return self._run()
        finally:
            if self.bell is not None:
                self.bell.stop()

    def _run(self):
        started = self.before[0] if self.before else self.clock()
        samples = [self.before[1]] if self.before else []
        final = pods_changed = False
        while True:
            sample, fresh = self._read(started, final, pods_changed)
            final = pods_changed = False
            samples.append(sample)
            pending = sorted(name for name, state in sample[1].items() if not state["rolled_out"])
            if not pending:
                if fresh:
                    break
                final = True  # rolled out: read once more with the Pods, the last sample's are the ones left
                continue
            if samples[-1][0] > self.timeout:
                raise RolloutError(
                    "Deployments %s in namespace %s did not roll out within %ss (nothing was changed by this wait): "
                    "see `kubectl -n %s rollout status deployment/<name>` and the new Pods' events, then run again"
                    % (", ".join(pending), self.namespace, self.timeout, self.namespace))
            pods_changed = self._pause(samples[-1][0])
        result = dict(rollout_figures(samples), waited_seconds=round(samples[-1][0], 3), polls=len(samples))
        if self.leadership is not None:
            rolled_out = self.clock()
            result["leadership"] = self._await_leaders(started)
            result["leaderless_seconds"] = result["leadership"]["leaderless_seconds"]
            result["leaders_waited_seconds"] = round(self.clock() - rolled_out, 3)  # after the rollout, for the Leases
            if result["leadership"]["errors"]:
                self.warnings.append("the managers' leader Leases in namespace %s could not all be read or written "
                                     "(no Lease was handed over that could not be): %s"
                                     % (self.namespace, "; ".join(result["leadership"]["errors"])))
        return result

    def _await_leaders(self, started):
        """Once rolled out: the Leases read (at most once a second) until each has a live holder, or until the timeout
        - then a warning names those without one and why (the rollout itself is done: the run does not fail)."""
        while not self.leadership.leaders_live() and self.clock() - started <= self.timeout:
            self.sleep(max(self.poll_seconds, 1.0))
            self.leadership.observe()
        figures = self.leadership.figures()
        for lease in figures["leases"]:
            if not lease["live"]:
                self.warnings.append(
                    "%s (the leader election of Deployment %s) has no live holder %ss after the rollout began (%s)%s: "
                    "its manager reconciles nothing until one takes it; see `kubectl -n %s get lease %s -o yaml` and "
                    "the manager's log" % (describe("Lease", lease["lease"], self.namespace), lease["deployment"],
                                           self.timeout, lease["why"], "".join(
                                               "; not released: " + waited["why"] for waited in figures["waited"]
                                               if waited["lease"] == lease["lease"]), self.namespace, lease["lease"]))
        return figures


class RolloutModule(RolloutService, ModuleService):
    """deployment_rollout's service (k8s/runner.py): read-only, never changed."""

    MINIMUMS = {"wait_timeout": 0, "poll_seconds": 0.1}
    NAMESPACES = (("hcp_namespace", None),)

    @classmethod
    def from_run(cls, run):
        params = run.params
        return cls(cls.connect(run), params["hcp_namespace"], params["deployments"], params["wait_timeout"],
                   params["poll_seconds"], watch=True)

    def run(self):
        return dict(RolloutService.run(self), changed=False)
