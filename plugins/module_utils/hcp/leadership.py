# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The CAPI managers' leader election in an HCP namespace, seen from outside: which Lease each named Deployment's
manager elects its leader with, whether it has a live leader, and when a Lease whose holder is gone may be released.

A manager with leader election (controller-runtime over client-go's leaderelection) reconciles only while it holds its
Lease (coordination.k8s.io/v1, holderIdentity "<Pod name>_<uuid>"). CAPI v1.14.2 builds its managers without
LeaderElectionReleaseOnCancel (core/main.go): a Pod that stops never gives its Lease back, and the Pod that replaces it
takes the Lease only once it has expired - leaseDurationSeconds after the last renewal, then up to one retry (client-go
retries every retry period times 1 to 2.2: JitterFactor 1.2). With HyperShift's flags (lease 137 s, retry 26 s) a
rollout of the manager's Deployment leaves it without a leader for up to 194 s. Releasing the Lease once the old Pod is
gone cuts that to the new Pod's next retry.

When a Lease may be released (handover_step): its holder's Pod is gone from the API (graceful deletion ends only once
the kubelet saw its containers end), this run saw that Pod and its node, the node exists and is Ready (a node that is
not Ready may still run containers whose Pod was removed from the API), and the Lease was not renewed since this run
saw the Pod being deleted (or, not seen so, first saw it gone). The write is the Lease with its holder cleared, sent with the resourceVersion read (a renewal or
a takeover in between makes it a 409 and nothing is written). docs/architecture.md ("Leader handover") says why this is
safe and what it does under a network partition.

Pure: lease_owners(), lease_state() (one Lease judged), handover_step() (release or wait, and why), released_lease()
(the body of the write), leaderless_figures() (the longest stretch per Lease over the samples). LeadershipWatch reads
(one LIST of Leases per sample; the Pods come from the caller's read or one LIST more) and releases.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re
import time

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import parse_time, utc_now
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiError, api_path
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe

RELEASE, WAIT = "release", "wait"
LEASES = ("coordination.k8s.io", "v1", "leases")


def _metadata(obj):
    return (obj or {}).get("metadata") or {}


def _spec(obj):
    return (obj or {}).get("spec") or {}


def holder_pod(lease):
    """The Pod name in a Lease's holder identity ("<Pod name>_<uuid>" as controller-runtime and client-go's callers
    write it, or the Pod name alone), or "" when it has no holder."""
    identity = _spec(lease).get("holderIdentity") or ""
    return identity.split("_", 1)[0]


def pod_name_pattern(names):
    """The names of the Pods of the named Deployments: <deployment>-<ReplicaSet hash>-<5 characters>."""
    return re.compile("^(%s)-[a-z0-9]{1,10}-[a-z0-9]{5}$" % "|".join(re.escape(name) for name in sorted(names)))


def lease_owners(leases, names, known=None):
    """{Lease name: Deployment name}: known (what earlier samples found) and each Lease whose holder is a Pod of one of
    the named Deployments. A Lease first seen without a holder is not anyone's (nothing tells whose it is)."""
    owners = dict(known or {})
    if not names:
        return owners
    pattern = pod_name_pattern(names)
    for lease in leases:
        match = pattern.match(holder_pod(lease))
        if match and _metadata(lease).get("name") not in owners:
            owners[_metadata(lease)["name"]] = match.group(1)
    return owners


def lease_state(lease, deployment, pods_by_name, now):
    """One Lease judged at now (an aware datetime): {lease, deployment, holder, pod, live, why, resource_version,
    transitions}. Live: a holder whose Pod exists, is not being deleted (its manager was told to stop), and whose last
    renewal is within the lease's duration. A Pod that is Ready without holding the Lease is not a leader."""
    spec, name = _spec(lease), _metadata(lease).get("name")
    pod_name = holder_pod(lease)
    state = {"lease": name, "deployment": deployment, "holder": spec.get("holderIdentity") or "", "pod": pod_name,
             "live": False, "why": "", "resource_version": _metadata(lease).get("resourceVersion"),
             "transitions": spec.get("leaseTransitions") or 0}
    pod = pods_by_name.get(pod_name) if pod_name else None
    if not pod_name:
        state["why"] = "no holder"
    elif pod is None:
        state["why"] = "its holder's Pod %s is gone" % pod_name
    elif _metadata(pod).get("deletionTimestamp"):
        state["why"] = "its holder's Pod %s is being deleted" % pod_name
    elif expired(lease, now):
        renewed, duration = spec.get("renewTime") or "never", spec.get("leaseDurationSeconds")
        state["why"] = "expired (renewed %s, lease %s s)" % (renewed, duration)
    else:
        state["live"] = True
    return state


def expired(lease, now):
    """Whether the Lease's last renewal is older than its duration at now (this host's clock against the holder's: the
    two are taken to be in sync within seconds, as NTP keeps them)."""
    spec = _spec(lease)
    renewed, duration = parse_time(spec.get("renewTime")), spec.get("leaseDurationSeconds")
    return renewed is None or not duration or (now - renewed).total_seconds() > duration


def new_memory():
    """What a run remembers between samples for handover_step: node_of_pod {Pod: its node, as seen while it existed},
    version_stopping {(Lease, Pod): the Lease's resourceVersion in the last sample that saw the Pod being deleted},
    version_gone {(Lease, Pod): the Lease's resourceVersion in the first sample without the Pod}."""
    return {"node_of_pod": {}, "version_stopping": {}, "version_gone": {}}


def handover_step(lease, pods_by_name, node, memory, now):
    """(RELEASE or WAIT or None, why) for a Lease whose holder's Pod may be gone; memory: new_memory()'s, updated here.
    node: the holder Pod's Node as read now (None when gone or not read)."""
    pod_name = holder_pod(lease)
    key = (_metadata(lease).get("name"), pod_name)
    resource_version = _metadata(lease).get("resourceVersion")
    if not pod_name or expired(lease, now):
        return None, ""  # free, or free for whoever tries next: nothing to hand over
    pod = pods_by_name.get(pod_name)
    if pod is not None:
        if _spec(pod).get("nodeName"):
            memory["node_of_pod"][pod_name] = _spec(pod)["nodeName"]
        if not _metadata(pod).get("deletionTimestamp"):
            return None, ""
        memory["version_stopping"][key] = resource_version
        finalizers = _metadata(pod).get("finalizers") or []
        return WAIT, ("its holder's Pod %s is being deleted but still exists%s: its manager may still run"
                      % (pod_name, " (finalizers %s)" % ", ".join(finalizers) if finalizers else ""))
    first_gone = memory["version_gone"].setdefault(key, resource_version)
    # one resourceVersion since the Pod was seen being deleted (or, unseen so, since it was seen gone): no renewal
    if len({resource_version, first_gone, memory["version_stopping"].get(key, first_gone)}) > 1:
        return WAIT, ("it was renewed after its holder's Pod %s was told to stop: whoever renews it still runs; it is "
                      "left to expire" % pod_name)
    node_name = memory["node_of_pod"].get(pod_name)
    if not node_name:
        return WAIT, ("its holder's Pod %s was gone before this run saw it, so its node is unknown: the Lease is left "
                      "to expire" % pod_name)
    if node is None:
        return WAIT, ("node %s of its holder's Pod %s is gone: the Pod's containers may still run; the Lease is left "
                      "to expire" % (node_name, pod_name))
    if not node_ready(node):
        return WAIT, ("node %s of its holder's Pod %s is not Ready: the Pod's containers may still run; the Lease is "
                      "left to expire" % (node_name, pod_name))
    return RELEASE, "its holder's Pod %s is gone and its node %s is Ready" % (pod_name, node_name)


def node_ready(node):
    return any(condition.get("type") == "Ready" and condition.get("status") == "True"
               for condition in ((node or {}).get("status") or {}).get("conditions") or ())


def released_lease(lease):
    """The Lease as the release writes it: no holder, everything else (its resourceVersion included) as read."""
    body = copy.deepcopy(lease)
    body.setdefault("spec", {}).pop("holderIdentity", None)
    return body


def longest_stretch(points, from_last_good=False):
    """The longest run of consecutive points [(seconds, bad)] that are bad: from the first bad point (from_last_good:
    from the good point before it, an upper bound for sparse points) to the first good one after it, or to the last
    point."""
    longest, since, last, good = 0.0, None, None, None
    for at, bad in points:
        last = at
        if bad:
            since = (good if from_last_good and good is not None else at) if since is None else since
        else:
            good = at
            if since is not None:
                longest, since = max(longest, at - since), None
    if since is not None:
        longest = max(longest, last - since)
    return round(longest, 3)


def _changed_hands(before, after):
    """Whether a Lease live in two samples may have had no leader between them: another holder, or a new term."""
    return before["holder"] != after["holder"] or before["transitions"] != after["transitions"]


def leaderless_figures(samples):
    """The figures of [(seconds, {Lease: lease_state})] in order: per Lease its Deployment, the longest stretch
    without a live holder (from the last sample with one - it was lost after it - to the first with one again, or to
    the last sample; an upper bound by at most one interval between samples; between two samples with live
    holders, the whole interval when the Lease changed hands or began a new term in it - an upper bound), and whether
    it is live in the last sample; the longest of all (leaderless_seconds; None when no Lease was found: no manager
    elects a leader, nothing to claim)."""
    figures = []
    for lease in sorted(set(name for _at, sample in samples for name in sample)):
        points, previous = [], None
        for at, sample in samples:
            state = sample.get(lease)
            if state is None:
                continue
            if previous is not None and previous[1]["live"] and state["live"] and _changed_hands(previous[1], state):
                points.append((previous[0], True))
            points.append((at, not state["live"]))
            previous = (at, state)
        figures.append({"lease": lease, "deployment": previous[1]["deployment"], "live": previous[1]["live"],
                        "why": previous[1]["why"], "leaderless_seconds": longest_stretch(points, from_last_good=True)})
    return {"leases": figures, "leaderless_seconds": max(f["leaderless_seconds"] for f in figures) if figures else None}


class LeadershipWatch(object):
    """Samples the named Deployments' Leases in namespace (observe) and, with release, hands over each Lease whose
    holder is gone (handover_step); figures() is what was seen."""

    def __init__(self, client, namespace, names, release=True, clock=time.monotonic, now=utc_now):
        self.client = client
        self.namespace = namespace
        self.names = list(names)
        self.release = release
        self.clock = clock
        self.now = now
        self.started = clock()
        self.owners = {}
        self.memory = new_memory()
        self.errors = []  # what could not be read or written (a sample missed, a release not made), said in figures()
        self.samples = []
        self.released = []  # [{lease, deployment, pod, seconds, why}]
        self.waiting = {}  # Lease -> why it was not released (the last reason seen), until this run releases it

    def _pods(self):
        return self.client.list(api_path("", "v1", "pods", self.namespace),
                                "list " + describe("Pods", namespace=self.namespace))

    def _node(self, pod_name):
        """The Node the holder's Pod ran on, as read now (None: unknown, gone or unreadable - no release then)."""
        node_name = self.memory["node_of_pod"].get(pod_name)
        if not node_name:
            return None
        try:
            return self.client.get_or_none(api_path("", "v1", "nodes", name=node_name),
                                           "get " + describe("Node", node_name))
        except ApiError as error:
            self.errors.append(str(error))
            return None

    def _release(self, lease, deployment, why, at):
        name = _metadata(lease)["name"]
        what = describe("Lease", name, self.namespace)
        try:
            self.client.replace(api_path(*LEASES, namespace=self.namespace, name=name), released_lease(lease),
                                "release " + what + " (" + why + ")")
        except ApiError as error:
            if not (error.is_conflict or error.is_not_found):  # 409, 404: renewed, taken or gone since the read
                self.errors.append(str(error))  # refused (a right missing): the Lease is left to expire
                self.waiting[name] = "its release was refused (%s): the Lease is left to expire" % error
            return False
        self.released.append({"lease": name, "deployment": deployment, "pod": holder_pod(lease),
                              "seconds": at, "why": why})
        self.waiting.pop(name, None)  # it waited for the Pod to go, then was released: not a Lease left to expire
        return True

    def observe(self, pods=None):
        """One sample: the Leases (and, unless given, the Pods) read, judged, and those that may be released released
        (then read again on the next sample)."""
        try:
            pods = self._pods() if pods is None else pods  # before the Leases: a Pod gone after its Lease was read
            leases = self.client.list(api_path(*LEASES, namespace=self.namespace),  # is judged on the next sample
                                      "list " + describe("Leases", namespace=self.namespace))
        except ApiError as error:  # following the managers is a measure, not a step: a sample missed, said
            self.errors.append(str(error))
            return {}
        at, now = round(self.clock() - self.started, 3), self.now()
        self.owners = lease_owners(leases, self.names, self.owners)
        pods_by_name = dict((_metadata(pod).get("name"), pod) for pod in pods)
        sample = {}
        for lease in leases:
            name = _metadata(lease).get("name")
            deployment = self.owners.get(name)
            if deployment is None and not holder_pod(lease):
                # whose it is shows once one of the named Deployments' Pods takes it (an earlier run released it)
                sample[name] = lease_state(lease, None, pods_by_name, now)
            elif deployment is not None:
                sample[name] = lease_state(lease, deployment, pods_by_name, now)
                if self.release:
                    self._hand_over(lease, deployment, pods_by_name, now, at)
        self.samples.append((at, sample))
        return self._owned(sample)

    def _owned(self, sample):
        """The Leases of a sample known to be the named Deployments' (as known now), with their Deployment."""
        return dict((name, dict(state, deployment=self.owners[name])) for name, state in sample.items()
                    if name in self.owners)

    def _hand_over(self, lease, deployment, pods_by_name, now, at):
        pod_name = holder_pod(lease)
        known = self.memory["node_of_pod"].get(pod_name) and pod_name not in pods_by_name and not expired(lease, now)
        step, why = handover_step(lease, pods_by_name, self._node(pod_name) if known else None, self.memory, now)
        if step == RELEASE and not self.client.dry_run:
            self._release(lease, deployment, why, at)
        elif step == WAIT:
            self.waiting[_metadata(lease)["name"]] = why

    def leaders_live(self):
        """Whether every Lease found has a live holder in the last sample (True when none was found)."""
        return not self.samples or all(state["live"] for state in self._owned(self.samples[-1][1]).values())

    def figures(self):
        """leaderless_figures of the samples, with the Leases released and those this run did not release (and why)."""
        figures = leaderless_figures([(at, self._owned(sample)) for at, sample in self.samples])
        figures.update(released=list(self.released),
                       waited=[{"lease": name, "why": why} for name, why in sorted(self.waiting.items())],
                       errors=self.errors[:5])
        return figures
