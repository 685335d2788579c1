# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Fencing of the module processes that write under a HostedCluster's migration lock.

The lock's holder is a run (its run id), and a resumed run reuses that id; but a killed run's module processes may
still be running (ansible-core's workers call setsid(), so killing the playbook does not kill them). So each module
process that writes under the lock takes a token of its own (state/machine.py LEASE_TOKEN_ANNOTATION: id, run, pid,
host) on the HostedCluster before its first write, renews it every few seconds (a JSON patch that tests the token
first, so it never renews a token that is no longer its own), and checks it before its writes: the fence is the
before_write hook of the module's client (k8s/client.py), so check() runs before every mutating request and re-reads
the HostedCluster when its last reading is more than FRESH_SECONDS old; the fence's own requests go through the client
unhooked. A process whose token was replaced (or whose run lost the lease) gets LeaseLost on its next write and writes
nothing more. A module's work takes the token with hold_lease(run, ...); the run (k8s/runner.py ModuleRun) holds the
fence to its end: finished(), release(), and its summary() as RV(lease_token).

A process taking the token from a live one (renewed less than TOKEN_LIVE_SECONDS ago) says so and waits
SETTLE_SECONDS before its first write, so that a write the other checked just before the token changed has reached
the server. The module's own last transition (in-progress -> migrated or failed, or legacy) is judged on the
HostedCluster it writes, resourceVersion-guarded: require() refuses it unless the token read is this process's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import socket
import threading
import time
import uuid

from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import JSON_PATCH, MERGE_PATCH, ApiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine as states
from ansible_collections.hypershift.private_capi.plugins.module_utils.state.service import (
    create_hostedcluster_event,
    hostedcluster_path,
    utc_now,
)

FENCED_EVENT_REASON = "CAPIMigrationWriteFenced"

RENEW_SECONDS = 5.0
FRESH_SECONDS = 1.0
SETTLE_SECONDS = 3.0
CLAIM_ATTEMPTS = 8


class LeaseLost(PrivateCapiError):
    """This process's lease token is gone from the HostedCluster (another process of the run, or another run, took
    the lock): it writes nothing more."""


def json_pointer(key):
    """The JSON pointer of metadata.annotations[key] (RFC 6901 escapes)."""
    return "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1")


def new_token(holder, pid=None, host=None, ident=None):
    """The token value of one module process: compact JSON {id, run, pid, host}."""
    return json.dumps({"id": ident or uuid.uuid4().hex[:16], "run": holder, "pid": pid if pid is not None else os.getpid(),
                       "host": host or socket.gethostname()}, sort_keys=True, separators=(",", ":"))


def judge(hostedcluster, holder, token_id, now):
    """None while `token_id` of run `holder` may write under the HostedCluster's lock; else why not (a sentence)."""
    metadata = hostedcluster.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    who = describe(hypershift.HOSTEDCLUSTER_KIND, metadata.get("name"), metadata.get("namespace"))
    state = states.state_of_annotations(annotations)
    lease = states.lease_of(annotations)
    if state != states.IN_PROGRESS or lease is None:
        return "%s is no longer locked (state %s)" % (who, state)
    if lease["holder"] != holder:
        return "the lock of %s is now held by run %s, not %s" % (who, lease["holder"], holder)
    token = states.token_of(annotations, now)
    if token is None or token["id"] != token_id:
        taker = states.describe_token(token) if token else "nobody (the token was removed)"
        return "the lease token of %s now belongs to %s" % (who, taker)
    return None


def hold_lease(run, namespace, name, holder):
    """Take this process's lease token on HostedCluster namespace/name, locked by run `holder`, for the rest of the
    module run `run` (k8s/runner.py ModuleRun): from here on every write of the run's client first checks that the
    token is still this process's. Not in check mode (nothing is written). RV(lease_token) comes with the run's tail."""
    if run.client.dry_run:
        return
    fence = LeaseFence(run.client, namespace, name, holder, now=utc_now)
    run.hold("lease_token", fence)  # held before the claim: a claim that fails still releases and reports
    fence.claim()
    warning = fence.warning()
    if warning:
        run.module.warn(warning)


class HoldsLease(object):
    """A module's service (k8s/runner.py ModuleService) that holds its HostedCluster's lease token for the whole run
    where O(holder) names the run holding the lock."""

    @classmethod
    def option_problems(cls, params):
        if params["holder"] and not params["hostedcluster_name"]:
            return ["holder needs hostedcluster_name (the name of the HostedCluster whose lock the run holds)"]
        return []

    def hold(self, run):
        if self.params["holder"]:
            hold_lease(run, self.params["hostedcluster_namespace"], self.params["hostedcluster_name"],
                       self.params["holder"])


class LeaseFence(object):
    """One module process's token on one HostedCluster's lock (see the module docstring): the before_write hook of
    the client it guards."""

    def __init__(self, client, namespace, name, holder, now, renew_seconds=RENEW_SECONDS, fresh_seconds=FRESH_SECONDS,
                 settle_seconds=SETTLE_SECONDS, sleep=time.sleep, clock=time.monotonic):
        self.guarded = client
        self.client = client.unhooked()  # the fence's own requests are never checked
        self.namespace, self.name, self.holder = namespace, name, holder
        self.path = hostedcluster_path(namespace, name)
        self.now = now
        self.renew_seconds, self.fresh_seconds, self.settle_seconds = renew_seconds, fresh_seconds, settle_seconds
        self.sleep, self.clock = sleep, clock
        self.token = new_token(holder)
        self.token_id = json.loads(self.token)["id"]
        self.lost = None
        self.unlocked = None
        self._told = False
        self.done = False
        self.fenced = None
        self.waited_seconds = 0.0
        self._confirmed = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    @property
    def what(self):
        return describe(hypershift.HOSTEDCLUSTER_KIND, self.name, self.namespace)

    def _read(self):
        return self.client.request("GET", self.path, "get %s (lease token)" % self.what)

    def claim(self):
        """Put this process's token on the HostedCluster (conflict-checked), fence a live previous one, start renewing.

        A HostedCluster not locked by this run (already moved on by an earlier run, or taken over) gets no token: the
        module may still find that it has nothing to do (an idempotent re-run), but its first write is refused."""
        for _attempt in range(CLAIM_ATTEMPTS):
            hostedcluster = self._read()
            annotations = (hostedcluster.get("metadata") or {}).get("annotations") or {}
            lease = states.lease_of(annotations)
            if states.state_of_annotations(annotations) != states.IN_PROGRESS or lease is None \
                    or lease["holder"] != self.holder:
                self.unlocked = "%s is not locked by run %s (state %s, lock holder %s)" % (
                    self.what, self.holder, states.state_of_annotations(annotations),
                    lease["holder"] if lease else "nobody")
                self.guarded.before_write = self
                return
            previous = states.token_of(annotations, self.now())
            body = {"metadata": {"resourceVersion": hostedcluster["metadata"]["resourceVersion"], "annotations": {
                states.LEASE_TOKEN_ANNOTATION: self.token,
                states.LEASE_TOKEN_RENEW_TIME_ANNOTATION: states.format_time(self.now())}}}
            try:
                self.client.request("PATCH", self.path, "patch %s (take the lease token)" % self.what, body=body,
                                    content_type=MERGE_PATCH)
            except ApiError as exc:
                if exc.is_conflict:
                    continue
                raise
            break
        else:
            raise LeaseLost("%s kept changing while this module took its lease token (%d conflicts); nothing was "
                            "changed, re-run" % (self.what, CLAIM_ATTEMPTS))
        self._confirmed = self.clock()
        if previous is not None and previous["live"]:
            self.fenced = previous
            self.sleep(self.settle_seconds)
            self.waited_seconds = self.settle_seconds
        self._thread = threading.Thread(target=self._renew_loop, name="lease-token", daemon=True)
        self._thread.start()
        self.guarded.before_write = self

    def summary(self):
        """RV(lease_token): this process's token, the live one it fenced (or None) and how long it waited."""
        return {"id": None if self.unlocked else self.token_id, "fenced": dict(self.fenced) if self.fenced else None,
                "waited_seconds": self.waited_seconds, "lost": self.lost, "unlocked": self.unlocked}

    def warning(self):
        """What a module says when it fenced a live process of its run (or another), else None."""
        if not self.fenced:
            return None
        return ("%s took the lease token of %s from %s, which was still running: that process's next write is "
                "refused; this one waited %ss for its writes in flight before its first" % (
                    "this module", self.what, states.describe_token(self.fenced), self.waited_seconds))

    def _patch_own_token(self, why, operations):
        """One JSON patch of the HostedCluster that first tests the token is still this process's (422 when not)."""
        patch = [{"op": "test", "path": json_pointer(states.LEASE_TOKEN_ANNOTATION), "value": self.token}]
        self.client.request("PATCH", self.path, "patch %s (%s)" % (self.what, why), body=patch + list(operations),
                            content_type=JSON_PATCH)

    def _renew_loop(self):
        while not self._stop.wait(self.renew_seconds):
            self.renew()

    def renew(self):
        """One renewal: a JSON patch that tests the token, then sets its renew time; a refusal means it is lost."""
        try:
            self._patch_own_token("renew the lease token", [
                {"op": "replace", "path": json_pointer(states.LEASE_TOKEN_RENEW_TIME_ANNOTATION),
                 "value": states.format_time(self.now())}])
        except ApiError as exc:
            if exc.is_transient:
                return
            why = None
            try:  # a refused test names nobody: read who has the token now
                why = judge(self._read(), self.holder, self.token_id, self.now())
            except ApiError:
                pass
            with self._lock:
                if self.lost is None:
                    self.lost = why or "the lease token of %s could not be renewed (%s)" % (self.what, exc)

    def __call__(self, method, path, what):
        """The guarded client's before_write hook: check() before each of its writes."""
        self.check()

    def check(self):
        """Before a write: LeaseLost when the token is no longer this process's (read at most every FRESH_SECONDS).
        The first refusal is also told on the HostedCluster, as a Warning Event (the process may have nobody left to
        read its result)."""
        if self.unlocked is not None:
            raise LeaseLost("%s: this module writes only under its run's lock, and refused its first write; nothing "
                            "was changed. Re-run the playbook: it reads the HostedCluster's state again" % self.unlocked)
        with self._lock:
            hostedcluster = {}
            if self.lost is None and (self._confirmed is None or self.clock() - self._confirmed >= self.fresh_seconds):
                hostedcluster = self._read()
                why = judge(hostedcluster, self.holder, self.token_id, self.now())
                if why is None:
                    self._confirmed = self.clock()
                else:
                    self.lost = why
            if self.lost is not None:
                self._tell(hostedcluster.get("metadata") or {})
                raise LeaseLost(self._refusal())

    def finished(self):
        """At the module's end: LeaseLost when the token was lost while it ran, though no write was refused (what it
        read and judged may be stale: the run that holds the lock now decides)."""
        if self.lost is not None and not self.done:
            with self._lock:
                self._tell({}, refused=False)
            raise LeaseLost(self._refusal(refused=False))

    def _refusal(self, refused=True):
        return ("%s: this module process (pid %d on %s, run %s) %s; nothing more was changed by it. The run that "
                "holds the lock finishes the HostedCluster" % (
                    self.lost, os.getpid(), socket.gethostname(), self.holder,
                    "refused its next write and stopped" if refused else "lost its token while it ran and fails"))

    def _tell(self, metadata, refused=True):
        """Once: a Warning Event on the HostedCluster saying this process was fenced off (best effort)."""
        if self._told:
            return
        self._told = True
        metadata = dict(metadata, namespace=self.namespace, name=self.name)
        try:
            create_hostedcluster_event(self.client, metadata, "Warning", FENCED_EVENT_REASON, self._refusal(refused),
                                       self.now(), "%s:%d" % (socket.gethostname(), os.getpid()))
        except ApiError:
            pass

    def require(self, hostedcluster):
        """The last transition's judgement: LeaseLost unless `hostedcluster` (as read for that write) carries this
        token."""
        why = judge(hostedcluster, self.holder, self.token_id, self.now())
        if why is not None:
            with self._lock:
                self.lost = why
                self._tell(hostedcluster.get("metadata") or {})
            raise LeaseLost(self._refusal())

    def retire(self, done=False):
        """Stop renewing and checking; done: the module's last transition dropped the token with the lease."""
        self.done = self.done or done
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.renew_seconds + 5)
        if self.guarded.before_write is self:
            self.guarded.before_write = None

    def release(self):
        """Retire, then remove the token when it is still this process's (a JSON patch that tests it first)."""
        self.retire()
        if self.lost is not None or self.done or self.unlocked is not None:
            return
        try:
            self._patch_own_token("release the lease token", [
                {"op": "remove", "path": json_pointer(states.LEASE_TOKEN_ANNOTATION)},
                {"op": "remove", "path": json_pointer(states.LEASE_TOKEN_RENEW_TIME_ANNOTATION)}])
        except ApiError:
            pass  # gone with the lease (the module's last transition), or taken: nothing of ours to remove
