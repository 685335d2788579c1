# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The phased run of one HostedCluster that hcp_migrate_window, hcp_migrate_finish and hcp_migrate_rollback share.

Each of those modules does, in one module run on one client, steps that used to be module runs of their own. What
they have in common lives here, once (PhasedRun):

- the phase marks (RV(phase), RV(marks)): begin() names the phase that begins - on a failure, the one that failed -
  and marks when it began, as the migrate role's records mark theirs (phase_mark, MARK_TIME_FORMAT);
- the resume: a run killed at any request is re-run to the same end, because what a run did is read back from the
  cluster, never remembered: recorded_phase() is how far earlier runs got (the HostedCluster's PHASE_ANNOTATION), and
  annotate() writes a record only where it is not there yet (annotations_patch), never in check mode;
- the managers' leader election (watch_leaders, observe_leaders): the window and the way back read the Leases when
  they begin, where their Deployments' Pods are gone (a Lease whose holder went is handed over: leadership.py), and
  when they end; RV(leaderless_seconds) is the longest time one had no live leader;
- the move at the end (move_held_lock): the state transition of the lock this run holds (RV(moved)) and the state read
  back after it (RV(after), migration_state's query answer), so that the roles' records need no module run to read it;
- the module's service (k8s/runner.py ModuleService): run() returns result(), and partial() on a user error is
  result() of what the run got done (the runner returns NOT_STARTED when it failed before its service existed).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift
from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import PHASE_ANNOTATION, format_mark, utc_now
from ansible_collections.hypershift.private_capi.plugins.module_utils.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.leadership import LeadershipWatch
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import PARALLELISM_MINIMUM
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import ModuleService
from ansible_collections.hypershift.private_capi.plugins.module_utils.state.service import (
    hostedcluster_path,
    query_one,
    transition_held_lock,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe


def phase_mark(name, now):
    """A phase mark of the migrate role's record: the name and the time now (an aware datetime, MARK_TIME_FORMAT)."""
    return {"name": name, "at": format_mark(now)}


def annotations_patch(obj, annotations):
    """Merge patch setting annotations on obj (None removes one), or None when it holds them already."""
    held = (obj.get("metadata") or {}).get("annotations") or {}
    missing = dict((key, value) for key, value in sorted(annotations.items()) if held.get(key) != value)
    return {"metadata": {"annotations": missing}} if missing else None


def recorded_phase(hostedcluster):
    """How far earlier runs of this HostedCluster got: its PHASE_ANNOTATION, '' when there is none."""
    return ((hostedcluster.get("metadata") or {}).get("annotations") or {}).get(PHASE_ANNOTATION) or ""


class PhasedRun(ModuleService):
    """One run of a phased module on one HostedCluster: its client, parameters, phase marks and records."""

    DERIVED = hypershift.HCP_NAMESPACE_DERIVED
    MINIMUMS = dict(PARALLELISM_MINIMUM, scale_down_timeout=0, available_timeout=0)
    NAMESPACES = (("hcp_namespace", None), ("hostedcluster_namespace", None))
    PARALLELISM_OPTION, CONNECTIONS = "parallelism", 2

    def __init__(self, client, params, check_mode=False, diff=False, now=utc_now):
        super(PhasedRun, self).__init__(client, params, check_mode=check_mode, diff=diff)
        self.now = now
        self.phase = None
        self.marks = []
        self.hostedcluster = None
        self.leaders = None  # the LeadershipWatch of watch_leaders()
        self.moved = None  # the transition of move_held_lock() (RV(moved))
        self.after = None  # the state read back after it (RV(after))

    def watch_leaders(self):
        """Follow the leader Leases of O(deployments)' managers from now on (the first sample: the holders' Pods and
        their nodes, known before anything stops them); not in check mode, which reads nothing it would not need."""
        if not self.check_mode:
            self.leaders = LeadershipWatch(self.client, self.params["hcp_namespace"], self.params["deployments"])
            self.leaders.observe()

    def observe_leaders(self):
        """One more sample of the Leases (a Lease whose holder's Pod is gone is handed over: leadership.py)."""
        if self.leaders is not None:
            self.leaders.observe()

    def leaders_result(self, result):
        """RV(leadership) and RV(leaderless_seconds) of the samples so far (None: not followed)."""
        figures = self.leaders.figures() if self.leaders is not None else None
        result.update(leadership=figures, leaderless_seconds=figures and figures["leaderless_seconds"])
        return result

    def begin(self, phase):
        """The phase begins: it is the run's phase from here on, and marked unless it is the one marked last (the
        steps of one phase mark it once)."""
        self.phase = phase
        if not self.marks or self.marks[-1]["name"] != phase:
            self.marks.append(phase_mark(phase, self.now()))

    def describe_hostedcluster(self):
        """The HostedCluster of O(hostedcluster_name) in O(hostedcluster_namespace), as messages name it."""
        return describe(hypershift.HOSTEDCLUSTER_KIND, self.params["hostedcluster_name"], self.params["hostedcluster_namespace"])

    def _hostedcluster_path(self):
        return hostedcluster_path(self.params["hostedcluster_namespace"], self.params["hostedcluster_name"])

    def read_hostedcluster(self):
        """The HostedCluster (describe_hostedcluster), kept as self.hostedcluster."""
        self.hostedcluster = self.client.get(self._hostedcluster_path(), "get " + self.describe_hostedcluster())
        return self.hostedcluster

    def annotate(self, path, obj, patch, what, why):
        """Send the annotations merge patch of obj (what: its description) unless in check mode, which sends no write at
        all; the object as written, or obj when nothing was sent."""
        if patch is None or self.check_mode:
            return obj
        return self.client.patch(path, patch, "patch %s (%s)" % (what, why))

    def annotate_hostedcluster(self, patch, why):
        """annotate() the HostedCluster read last (self.hostedcluster, which becomes the answer)."""
        self.hostedcluster = self.annotate(self._hostedcluster_path(), self.hostedcluster, patch,
                                           self.describe_hostedcluster(), why)

    def move_held_lock(self, state, **options):
        """The transition to state of the lock this run holds (transition_held_lock; options: rollback, reason), then
        the state read back as migration_state's query answers it. A failed read back is a warning, not a failure:
        the move is made, and the role reads the state itself when RV(after) is missing."""
        params = self.params
        self.moved, warnings = transition_held_lock(self.client, params["hostedcluster_namespace"],
                                                    params["hostedcluster_name"], state, params["holder"], **options)
        self.warnings += warnings
        try:
            self.after = query_one(self.client, params["hostedcluster_namespace"], params["hostedcluster_name"])
        except PrivateCapiError as error:
            self.warnings.append("the state after the move to %s could not be read back (%s); the role reads it itself"
                                 % (state, error))

    def moved_result(self, result, diffs):
        """RV(moved) (its diff into diffs) and RV(after) into result, once move_held_lock() ran."""
        if self.moved is not None:
            moved = dict(self.moved)
            diffs.append(moved.pop("diff"))
            result["moved"] = moved
        if self.after is not None:
            result["after"] = self.after

    def result(self):
        """The module's result (also its partial result on a failure: what the run got done)."""
        raise NotImplementedError

    def partial(self):
        return self.result()
