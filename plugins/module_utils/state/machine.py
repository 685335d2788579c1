# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The HostedCluster private-CAPI migration state machine (pure Python: no I/O, no clock, no Ansible).

Annotations on the HostedCluster are the source of truth (docs/operator-guide.md); the label
``hypershift.openshift.io/capi-migration-state`` mirrors them so a fleet can be selected in one LIST.
Callers pass the current object and the time; ``plan_transition``/``plan_repair`` return a TransitionPlan (the new
annotations and labels, the history entry and the Event to emit) or raise TransitionRefused. Nothing here
mutates its inputs.

Rollback (a migrated HostedCluster back to standard CAPI types) is a separate, explicit path: only with
``rollback=True`` may migrated -> in-progress (the lease then records the direction ``rollback``) and
in-progress -> legacy (only for a rollback lease). A rollback lock is never resumed or finished as a migration.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    FAILED_ANNOTATION,
    HISTORY_ANNOTATION,
    IN_PROGRESS_ANNOTATION,
    LEASE_ACQUIRE_TIME_ANNOTATION,
    LEASE_DIRECTION_ANNOTATION,
    LEASE_DURATION_ANNOTATION,
    LEASE_HOLDER_ANNOTATION,
    LEASE_RENEW_TIME_ANNOTATION,
    LEASE_TOKEN_ANNOTATION,
    LEASE_TOKEN_RENEW_TIME_ANNOTATION,
    PRIVATE_TYPES_ANNOTATION,
    ROLLBACK_FAILED_ANNOTATION,
    SCOPE_ANNOTATION,
    STATE_LABEL,
    format_time,
    parse_time,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.hypershift import (
    HOSTEDCLUSTER_KIND,
    describe_hostedcluster,
    hcp_namespace,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe

NEW = "new"
LEGACY = "legacy"
IN_PROGRESS = "in-progress"
MIGRATED = "migrated"
FAILED = "failed"
INVALID = "invalid"
STATES = (NEW, LEGACY, IN_PROGRESS, MIGRATED, FAILED, INVALID)
REQUESTABLE_STATES = (LEGACY, IN_PROGRESS, MIGRATED, FAILED)
LABELLED_STATES = REQUESTABLE_STATES  # "new" and "invalid" carry no mirror label value

# The only transitions there are; everything else is refused (table-tested in tests/unit/state/test_migration_states.py).
LEGAL_MOVES = {
    NEW: (LEGACY,),
    LEGACY: (IN_PROGRESS,),
    IN_PROGRESS: (MIGRATED, FAILED),
    FAILED: (LEGACY,),
    MIGRATED: (),
    INVALID: (),
}
# Legal only with rollback=True; in-progress -> legacy only while the lease's direction is ROLLBACK.
ROLLBACK_MOVES = {
    MIGRATED: (IN_PROGRESS,),
    IN_PROGRESS: (LEGACY,),
}
MIGRATE = "migrate"
ROLLBACK = "rollback"
DIRECTIONS = (MIGRATE, ROLLBACK)

SCOPE_LEGACY = "legacy"
TRUE = "true"
# a token renewed within this many seconds belongs to a module that is still running (it renews every few seconds)
TOKEN_LIVE_SECONDS = 30
LEASE_ANNOTATIONS = (
    LEASE_HOLDER_ANNOTATION,
    LEASE_ACQUIRE_TIME_ANNOTATION,
    LEASE_RENEW_TIME_ANNOTATION,
    LEASE_DURATION_ANNOTATION,
    LEASE_DIRECTION_ANNOTATION,
    LEASE_TOKEN_ANNOTATION,
    LEASE_TOKEN_RENEW_TIME_ANNOTATION,
    ROLLBACK_FAILED_ANNOTATION,
)
HISTORY_LIMIT = 20
MARKER_ANNOTATIONS = (SCOPE_ANNOTATION, IN_PROGRESS_ANNOTATION, PRIVATE_TYPES_ANNOTATION, FAILED_ANNOTATION)
DEFAULT_LEASE_SECONDS = 900

EVENT_REASONS = {
    (NEW, LEGACY): ("Normal", "CAPIMigrationMarkedLegacy"),
    (LEGACY, IN_PROGRESS): ("Normal", "CAPIMigrationStarted"),
    (IN_PROGRESS, IN_PROGRESS): ("Warning", "CAPIMigrationLeaseTakenOver"),
    (IN_PROGRESS, MIGRATED): ("Normal", "CAPIMigrationCompleted"),
    (IN_PROGRESS, FAILED): ("Warning", "CAPIMigrationFailed"),
    (FAILED, LEGACY): ("Normal", "CAPIMigrationRemediated"),
    (INVALID, LEGACY): ("Warning", "CAPIMigrationStateRepaired"),
    (INVALID, MIGRATED): ("Warning", "CAPIMigrationStateRepaired"),
    (MIGRATED, IN_PROGRESS): ("Warning", "CAPIMigrationRollbackStarted"),
    (IN_PROGRESS, LEGACY): ("Normal", "CAPIMigrationRolledBack"),
}


# What a refused transition returns beside its message (RV(refused) of migration_state): why, in a word a playbook can test,
# and the status a run records for the HostedCluster. Another run's live lock leaves the HostedCluster to that run
# (skipped, no failure); any other refusal is the run's to report (refused).
REFUSED_LOCK_HELD, REFUSED_NOT_ALLOWED = "lock-held", "not-allowed"
REFUSAL_STATUS = {REFUSED_LOCK_HELD: "skipped", REFUSED_NOT_ALLOWED: "refused"}


class TransitionRefused(PrivateCapiError):
    """A requested transition that the state machine does not allow; the message says why and what to do. The one
    refusal class: the modules fail with its message and RV(refused) beside it (result())."""

    reason = REFUSED_NOT_ALLOWED
    holder = None

    def refusal(self):
        """{reason, holder, status}: the refusal as data (RV(refused)); no caller reads the message to tell."""
        return {"reason": self.reason, "holder": self.holder, "status": REFUSAL_STATUS[self.reason]}

    def result(self):
        return {"refused": self.refusal()}

    def again(self, message):
        """The same refusal with another message (judged again after conflicting writes)."""
        refused = TransitionRefused(message)
        refused.reason, refused.holder = self.reason, self.holder
        return refused


class LockHeld(TransitionRefused):
    """The lock is held by another run whose lease is live: that run keeps the HostedCluster."""

    reason = REFUSED_LOCK_HELD

    def __init__(self, message, holder):
        super().__init__(message)
        self.holder = holder


def _metadata(hostedcluster):
    return hostedcluster.get("metadata") or {}


def _annotations(hostedcluster):
    return dict(_metadata(hostedcluster).get("annotations") or {})


def _labels(hostedcluster):
    return dict(_metadata(hostedcluster).get("labels") or {})


def markers(annotations):
    """The four state markers as booleans/strings, from an annotations mapping."""
    return {
        "scope_legacy": annotations.get(SCOPE_ANNOTATION) == SCOPE_LEGACY,
        "in_progress": annotations.get(IN_PROGRESS_ANNOTATION) == TRUE,
        "private_capi_types": annotations.get(PRIVATE_TYPES_ANNOTATION) == TRUE,
        "failed_reason": annotations.get(FAILED_ANNOTATION) or None,
    }


def state_of_annotations(annotations):
    """One of STATES. Any contradictory combination of markers is 'invalid'."""
    found = markers(annotations)
    if found["private_capi_types"]:
        if found["scope_legacy"] or found["in_progress"] or found["failed_reason"]:
            return INVALID
        return MIGRATED
    if found["scope_legacy"]:
        if found["in_progress"] and found["failed_reason"]:
            return INVALID
        if found["in_progress"]:
            return IN_PROGRESS
        return FAILED if found["failed_reason"] else LEGACY
    if found["in_progress"] or found["failed_reason"]:
        return INVALID
    return NEW


def state_of(hostedcluster):
    return state_of_annotations(_annotations(hostedcluster))


def lease_of(annotations):
    """The in-progress lease recorded in annotations, or None when there is no holder."""
    holder = annotations.get(LEASE_HOLDER_ANNOTATION)
    if not holder:
        return None
    try:
        duration = int(annotations.get(LEASE_DURATION_ANNOTATION))
    except (TypeError, ValueError):
        duration = None
    return {
        "holder": holder,
        "acquire_time": annotations.get(LEASE_ACQUIRE_TIME_ANNOTATION),
        "renew_time": annotations.get(LEASE_RENEW_TIME_ANNOTATION),
        "duration_seconds": duration if duration is not None and duration > 0 else None,
    }


def token_of(annotations, now):
    """The module token recorded beside the lease (see state/fence.py), or None: {id, run, pid, host, renew_time,
    age_seconds, live}; live while its renew time is less than TOKEN_LIVE_SECONDS old."""
    text = annotations.get(LEASE_TOKEN_ANNOTATION)
    if not text:
        return None
    try:
        token = json.loads(text)
    except ValueError:
        token = None
    if not isinstance(token, dict):
        token = {"id": text}
    renewed = parse_time(annotations.get(LEASE_TOKEN_RENEW_TIME_ANNOTATION))
    age = round((now - renewed).total_seconds(), 3) if renewed is not None else None
    return {"id": str(token.get("id") or text), "run": token.get("run"), "pid": token.get("pid"), "host": token.get("host"),
            "renew_time": annotations.get(LEASE_TOKEN_RENEW_TIME_ANNOTATION), "age_seconds": age,
            "live": age is not None and age < TOKEN_LIVE_SECONDS}


def describe_token(token):
    """'module pid P on host H of run R (token renewed Ns ago)' for messages."""
    renewed = ("renewed %ss ago" % int(token["age_seconds"])) if token.get("age_seconds") is not None else "never renewed"
    return "the module process %s on host %s of run %s (token %s, %s)" % (
        token.get("pid") or "?", token.get("host") or "?", token.get("run") or "?", token["id"], renewed)


def _lock_notes(found):
    """What a resumed lock carries, as clauses for the resume's reason: a module process still writing under it (a
    live token), and the note of a rescue or rollback that failed."""
    notes = []
    token = (found.get("lease") or {}).get("module")
    if token and token.get("live"):
        notes.append("%s is still writing: the next module of this run takes the lease token from it (its next write "
                     "is refused) and waits for its writes in flight" % describe_token(token))
    if found.get("rollback_failed"):
        notes.append("its last rescue or rollback had failed (%s)" % found["rollback_failed"])
    return notes


def lease_direction(annotations):
    """ROLLBACK when the in-progress lock was taken for a rollback, else MIGRATE (older locks record nothing)."""
    return ROLLBACK if annotations.get(LEASE_DIRECTION_ANNOTATION) == ROLLBACK else MIGRATE


def judge_lease(lease, now, default_seconds):
    """Age, duration and expiry of a lease; a lease without a readable renew time counts as expired."""
    duration = lease["duration_seconds"] or default_seconds
    renewed = parse_time(lease["renew_time"]) or parse_time(lease["acquire_time"])
    if renewed is None:
        return {"age_seconds": None, "duration_seconds": duration, "expired": True, "expires_in_seconds": 0}
    age = (now - renewed).total_seconds()
    return {
        "age_seconds": round(age, 3),
        "duration_seconds": duration,
        "expired": age >= duration,
        "expires_in_seconds": round(max(0.0, duration - age), 3),
    }


def read_history(annotations):
    """The history list (malformed content reads as empty: it is a record, not a control input)."""
    try:
        history = json.loads(annotations.get(HISTORY_ANNOTATION) or "[]")
    except ValueError:
        return []
    return [entry for entry in history if isinstance(entry, dict)] if isinstance(history, list) else []


def _with_history(annotations, entry):
    history = read_history(annotations) + [entry]
    return json.dumps(history[-HISTORY_LIMIT:], sort_keys=True, separators=(",", ":"))


class TransitionPlan(object):
    """What one guarded write must do.

    write: whether to PUT at all; changed: whether the state (or the lease holder) changes;
    annotations/labels: the complete new maps; event: (type, reason, message) or None.
    """

    def __init__(self, hostedcluster, from_state, to_state, annotations, labels, changed, write,
                 event=None, renewed=False, took_over=False, message=""):
        self.hostedcluster = hostedcluster
        self.from_state = from_state
        self.to_state = to_state
        self.annotations = annotations
        self.labels = labels
        self.changed = changed
        self.write = write
        self.event = event
        self.renewed = renewed
        self.took_over = took_over
        self.message = message

    def updated_object(self):
        """A copy of the HostedCluster with the planned metadata (resourceVersion kept for the guard)."""
        updated = copy.deepcopy(self.hostedcluster)
        metadata = updated.setdefault("metadata", {})
        metadata["annotations"] = dict(self.annotations)
        metadata["labels"] = dict(self.labels)
        return updated


def _refuse(hostedcluster, current, requested, why, what_to_do):
    legal = LEGAL_MOVES.get(current, ())
    raise TransitionRefused(
        "%s: cannot move from %s to %s: %s. Legal moves from %s: %s. %s"
        % (describe_hostedcluster(hostedcluster), current, requested, why, current, ", ".join(legal) or "none", what_to_do)
    )


def _lease_annotations(annotations, holder, acquire_time, now, lease_seconds):
    annotations[LEASE_HOLDER_ANNOTATION] = holder
    annotations[LEASE_ACQUIRE_TIME_ANNOTATION] = acquire_time
    annotations[LEASE_RENEW_TIME_ANNOTATION] = format_time(now)
    annotations[LEASE_DURATION_ANNOTATION] = str(lease_seconds)


def _drop(annotations, keys):
    for key in keys:
        annotations.pop(key, None)


def _check_lease(hostedcluster, annotations, requested, holder, now, lease_seconds, takeover):
    """None when holder may act on the lock; 'takeover' when it takes it over; else LockHeld."""
    lease = lease_of(annotations)
    if lease is None or lease["holder"] == holder:
        return None
    judged = judge_lease(lease, now, lease_seconds)
    if judged["expired"] or takeover:
        return "takeover"
    age = "%.0fs" % judged["age_seconds"] if judged["age_seconds"] is not None else "unknown"
    raise LockHeld(
        "%s: the migration lock is held by %r (acquired %s, renewed %s ago, expires in %.0fs); requested %s by %r. "
        "Wait for that run, or if it died re-run with takeover: true (or after the lease expires) to resume it"
        % (describe_hostedcluster(hostedcluster), lease["holder"], lease["acquire_time"], age, judged["expires_in_seconds"],
           requested, holder), lease["holder"])


def plan_transition(hostedcluster, requested, holder, now, lease_seconds=DEFAULT_LEASE_SECONDS, takeover=False,
                    force=False, reason=None, rollback=False):
    """Plan the transition of hostedcluster to `requested` on behalf of `holder` at time `now` (aware datetime).

    rollback=True asks for the rollback path instead (ROLLBACK_MOVES); without it a rollback lock is refused.
    """
    if requested not in REQUESTABLE_STATES:
        raise TransitionRefused("requested state %r is not one of %s" % (requested, ", ".join(REQUESTABLE_STATES)))
    if not holder:
        raise TransitionRefused("holder must be a non-empty string naming this run")
    annotations = _annotations(hostedcluster)
    labels = _labels(hostedcluster)
    current = state_of_annotations(annotations)
    if current == INVALID:
        _refuse(hostedcluster, current, requested,
                "its annotations contradict each other (%s)" % json.dumps(markers(annotations), sort_keys=True),
                "Repair it first with state: query, repair: true (judged from the HCP namespace's CAPI objects).")
    if rollback:
        return _plan_rollback(hostedcluster, current, requested, annotations, labels, holder, now, lease_seconds,
                              takeover, reason)
    if current == IN_PROGRESS and lease_direction(annotations) == ROLLBACK:
        raise TransitionRefused(
            "%s: cannot move from in-progress to %s: the lock was taken to roll it back to standard CAPI types (lock "
            "held by %r, direction rollback) and a rollback lock ends only in legacy. Resume the rollback "
            "(playbooks/rollback.yml with that run id, or this module with rollback: true); nothing was written"
            % (describe_hostedcluster(hostedcluster), requested, annotations.get(LEASE_HOLDER_ANNOTATION) or "nobody"))
    if requested == FAILED and not reason:
        raise TransitionRefused("%s: moving to failed needs a reason (the reason option); it is written to %s"
                                % (describe_hostedcluster(hostedcluster), FAILED_ANNOTATION))
    at = format_time(now)
    took_over = False
    if requested == current:
        return _plan_same_state(hostedcluster, current, annotations, labels, holder, now, lease_seconds, takeover)
    if requested not in LEGAL_MOVES[current]:
        hint = ""
        if requested in ROLLBACK_MOVES.get(current, ()):
            hint = (" %s -> %s is a rollback move only: roll a migrated HostedCluster back with playbooks/rollback.yml "
                    "(rollback: true)." % (current, requested))
        _refuse(hostedcluster, current, requested, "that move is not in the state machine",
                "Nothing was written." + hint)
    if current == IN_PROGRESS:
        took_over = _check_lease(hostedcluster, annotations, requested, holder, now, lease_seconds, takeover) == "takeover"
    if current == FAILED and not force:
        _refuse(hostedcluster, current, requested,
                "leaving failed (reason: %s) needs explicit remediation" % annotations.get(FAILED_ANNOTATION),
                "Remediate the cause, then re-run with force: true.")
    if requested == LEGACY:
        annotations[SCOPE_ANNOTATION] = SCOPE_LEGACY
        _drop(annotations, (FAILED_ANNOTATION, IN_PROGRESS_ANNOTATION) + LEASE_ANNOTATIONS)
    elif requested == IN_PROGRESS:
        annotations[IN_PROGRESS_ANNOTATION] = TRUE
        _lease_annotations(annotations, holder, at, now, lease_seconds)
        annotations.pop(LEASE_DIRECTION_ANNOTATION, None)
    elif requested == MIGRATED:
        annotations[PRIVATE_TYPES_ANNOTATION] = TRUE
        _drop(annotations, (SCOPE_ANNOTATION, IN_PROGRESS_ANNOTATION, FAILED_ANNOTATION) + LEASE_ANNOTATIONS)
    else:
        annotations[FAILED_ANNOTATION] = reason
        _drop(annotations, (IN_PROGRESS_ANNOTATION,) + LEASE_ANNOTATIONS)
    return _planned(hostedcluster, current, requested, annotations, labels, holder, at, reason, took_over)


def _planned(hostedcluster, current, requested, annotations, labels, holder, at, reason, took_over, rollback=False):
    """The TransitionPlan of a real transition: history entry, mirror label, Event."""
    entry = {"from": current, "to": requested, "at": at, "by": holder}
    if reason:
        entry["reason"] = reason
    if took_over:
        entry["takeover"] = True
    if rollback:
        entry["rollback"] = True
    annotations[HISTORY_ANNOTATION] = _with_history(annotations, entry)
    labels[STATE_LABEL] = requested
    event_type, event_reason = EVENT_REASONS[(current, requested)]
    message = "CAPI migration state %s -> %s%s by %s%s" % (
        current, requested, " (rollback)" if rollback else "", holder, ": %s" % reason if reason else "")
    return TransitionPlan(hostedcluster, current, requested, annotations, labels, changed=True, write=True,
                          event=(event_type, event_reason, message), took_over=took_over, message=message)


# Why a rollback from a state other than migrated (or a rollback lock) is refused, and what to do instead.
_ROLLBACK_REFUSALS = {
    (MIGRATED, LEGACY): ("a rollback holds the lock while it copies the objects back",
                         "Take the lock first (in-progress with rollback: true), copy back, then ask for legacy; "
                         "playbooks/rollback.yml does all of it."),
    (LEGACY, IN_PROGRESS): ("it uses the standard CAPI types already; there is nothing to roll back",
                            "Nothing was written."),
    (FAILED, IN_PROGRESS): ("its failed migration was rolled back when it failed (the standard objects are in place)",
                            "Remediate the cause, then move it to legacy with force: true (no rollback needed)."),
    (FAILED, LEGACY): ("its failed migration was rolled back when it failed (the standard objects are in place)",
                       "Remediate the cause, then move it to legacy with force: true (no rollback needed)."),
    (NEW, IN_PROGRESS): ("it was created with private CAPI types and was never migrated", "Nothing was written."),
    (NEW, LEGACY): ("it was created with private CAPI types and was never migrated", "Nothing was written."),
}


def _refuse_rollback(hostedcluster, current, requested, why, what_to_do):
    raise TransitionRefused(
        "%s: cannot roll back from %s to %s: %s. Rollback moves (rollback: true): migrated -> in-progress, then "
        "in-progress -> legacy for a rollback lock only. %s"
        % (describe_hostedcluster(hostedcluster), current, requested, why, what_to_do))


def _plan_rollback(hostedcluster, current, requested, annotations, labels, holder, now, lease_seconds, takeover, reason):
    """The explicit rollback path: migrated -> in-progress (lease direction rollback) -> legacy; renewals; re-runs."""
    if requested not in (IN_PROGRESS, LEGACY):
        raise TransitionRefused("%s: rollback: true works with state in-progress (take or resume the rollback lock of a "
                                "migrated HostedCluster) or legacy (finish the rollback), not %s; nothing was written"
                                % (describe_hostedcluster(hostedcluster), requested))
    if current == IN_PROGRESS and lease_direction(annotations) != ROLLBACK:
        _refuse_rollback(
            hostedcluster, current, requested,
            "it is locked for a migration to private CAPI types (lock held by %r), not migrated"
            % (annotations.get(LEASE_HOLDER_ANNOTATION) or "nobody"),
            "Let that migration end first (re-run migrate_fleet.yml with its run id: it ends migrated, or failed after "
            "rolling itself back); roll back once it is migrated. Nothing was written.")
    if requested == current:
        # legacy: already rolled back (a re-run); in-progress: renew or take over the rollback lock
        return _plan_same_state(hostedcluster, current, annotations, labels, holder, now, lease_seconds, takeover)
    if requested not in ROLLBACK_MOVES.get(current, ()):
        why, what_to_do = _ROLLBACK_REFUSALS.get((current, requested), ("not a rollback move", "Nothing was written."))
        _refuse_rollback(hostedcluster, current, requested, why, what_to_do)
    took_over = False
    if current == IN_PROGRESS:
        took_over = _check_lease(hostedcluster, annotations, requested, holder, now, lease_seconds, takeover) == "takeover"
    at = format_time(now)
    annotations[SCOPE_ANNOTATION] = SCOPE_LEGACY
    if requested == IN_PROGRESS:
        # scope legacy + in-progress: the in-progress markers, so both operators keep off while objects move back
        _drop(annotations, (PRIVATE_TYPES_ANNOTATION, FAILED_ANNOTATION))
        annotations[IN_PROGRESS_ANNOTATION] = TRUE
        _lease_annotations(annotations, holder, at, now, lease_seconds)
        annotations[LEASE_DIRECTION_ANNOTATION] = ROLLBACK
    else:
        _drop(annotations, (PRIVATE_TYPES_ANNOTATION, FAILED_ANNOTATION, IN_PROGRESS_ANNOTATION) + LEASE_ANNOTATIONS)
    return _planned(hostedcluster, current, requested, annotations, labels, holder, at, reason, took_over, rollback=True)


def _plan_same_state(hostedcluster, current, annotations, labels, holder, now, lease_seconds, takeover):
    """Re-asking the current state: a no-op, a lease renewal or takeover, or a mirror-label repair."""
    label_in_sync = labels.get(STATE_LABEL) == current
    if current == IN_PROGRESS:
        lease = lease_of(annotations)
        if lease is not None and lease["holder"] == holder:
            _lease_annotations(annotations, holder, lease["acquire_time"] or format_time(now), now, lease_seconds)
            labels[STATE_LABEL] = current
            return TransitionPlan(hostedcluster, current, current, annotations, labels, changed=not label_in_sync,
                                  write=True, renewed=True, message="lease renewed by %s" % holder)
        _check_lease(hostedcluster, annotations, current, holder, now, lease_seconds, takeover)
        previous = lease["holder"] if lease else None
        _lease_annotations(annotations, holder, format_time(now), now, lease_seconds)
        entry = {"from": current, "to": current, "at": format_time(now), "by": holder, "takeover": True}
        if previous:
            entry["previous_holder"] = previous
        annotations[HISTORY_ANNOTATION] = _with_history(annotations, entry)
        labels[STATE_LABEL] = current
        message = "CAPI migration lock taken over by %s from %s" % (holder, previous or "nobody (no lease recorded)")
        event_type, event_reason = EVENT_REASONS[(IN_PROGRESS, IN_PROGRESS)]
        return TransitionPlan(hostedcluster, current, current, annotations, labels, changed=True, write=True,
                              event=(event_type, event_reason, message), took_over=True, message=message)
    if current in LABELLED_STATES and not label_in_sync:
        labels[STATE_LABEL] = current
        return TransitionPlan(hostedcluster, current, current, annotations, labels, changed=True, write=True,
                              message="mirror label %s set to %s (annotations already said %s)" % (STATE_LABEL, current, current))
    return TransitionPlan(hostedcluster, current, current, annotations, labels, changed=False, write=False,
                          message="already %s" % current)


def repair_target(standard_count, private_count):
    """The state an invalid HostedCluster really is in, from its HCP namespace's CAPI object counts."""
    if standard_count and not private_count:
        return LEGACY
    if private_count and not standard_count:
        return MIGRATED
    return None


def plan_repair(hostedcluster, standard_count, private_count, holder, now, hcp_namespace):
    """Plan the repair of an invalid HostedCluster; TransitionRefused when the objects cannot tell."""
    annotations = _annotations(hostedcluster)
    labels = _labels(hostedcluster)
    current = state_of_annotations(annotations)
    if current != INVALID:
        raise TransitionRefused("%s is %s, not invalid; nothing to repair" % (describe_hostedcluster(hostedcluster), current))
    target = repair_target(standard_count, private_count)
    if target is None:
        raise TransitionRefused(
            "%s: invalid state (%s) and its HCP namespace %s holds %d standard-group and %d private-group CAPI "
            "objects, so the real state cannot be judged. Inspect the namespace and fix the annotations by hand"
            % (describe_hostedcluster(hostedcluster), json.dumps(markers(annotations), sort_keys=True), hcp_namespace,
               standard_count, private_count)
        )
    removed = {key: annotations[key] for key in MARKER_ANNOTATIONS + LEASE_ANNOTATIONS if key in annotations}
    _drop(annotations, MARKER_ANNOTATIONS + LEASE_ANNOTATIONS)
    if target == LEGACY:
        annotations[SCOPE_ANNOTATION] = SCOPE_LEGACY
    else:
        annotations[PRIVATE_TYPES_ANNOTATION] = TRUE
    reason = "repaired from objects in %s: %d standard-group, %d private-group" % (hcp_namespace, standard_count, private_count)
    entry = {"from": INVALID, "to": target, "at": format_time(now), "by": holder, "reason": reason, "removed": removed}
    annotations[HISTORY_ANNOTATION] = _with_history(annotations, entry)
    labels[STATE_LABEL] = target
    event_type, event_reason = EVENT_REASONS[(INVALID, target)]
    message = "CAPI migration state invalid -> %s by %s: %s" % (target, holder, reason)
    return TransitionPlan(hostedcluster, INVALID, target, annotations, labels, changed=True, write=True,
                          event=(event_type, event_reason, message), message=message)


def report(hostedcluster, now, default_lease_seconds=DEFAULT_LEASE_SECONDS):
    """The query view of one HostedCluster (state, markers, mirror label, lease with its age, history)."""
    metadata = _metadata(hostedcluster)
    annotations = _annotations(hostedcluster)
    state = state_of_annotations(annotations)
    label = _labels(hostedcluster).get(STATE_LABEL)
    lease = lease_of(annotations)
    if lease is not None:
        lease.update(judge_lease(lease, now, default_lease_seconds))
        lease["direction"] = lease_direction(annotations)
        lease["module"] = token_of(annotations, now)
    return {
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "state": state,
        "label": label,
        "label_in_sync": label == state if state in LABELLED_STATES else label is None,
        "markers": markers(annotations),
        "failed_reason": annotations.get(FAILED_ANNOTATION) or None,
        "rollback_failed": annotations.get(ROLLBACK_FAILED_ANNOTATION) or None,
        "lease": lease,
        "history": read_history(annotations),
        "resource_version": metadata.get("resourceVersion"),
        "hcp_namespace": hcp_namespace(metadata.get("namespace") or "", metadata.get("name") or ""),
        "platform": ((hostedcluster.get("spec") or {}).get("platform") or {}).get("type") or "None",
        "labels": dict(_labels(hostedcluster)),
    }


def label_selector_for(states):
    """One label selector for a fleet LIST, or None when some wanted state has no label (list all)."""
    if not states:
        return None
    wanted = sorted(set(states))
    if any(state not in LABELLED_STATES for state in wanted):
        return None
    return "%s in (%s)" % (STATE_LABEL, ",".join(wanted))


# What a run should do with one HostedCluster, judged from its query report (decide()); the roles follow it.
ACTION_MIGRATE = "migrate"  # legacy: take the lock and migrate
ACTION_MARK_LEGACY_AND_MIGRATE = "mark-legacy-and-migrate"  # new, or failed with retry_failed: legacy first (force)
ACTION_RESUME = "resume"  # in-progress, lock free, ours, expired or taken over: take it and go on
ACTION_SKIP = "skip"  # nothing to do (already done, or failed without retry_failed)
ACTION_LOCKED = "locked"  # another live run holds the lock: leave the HostedCluster to it
ACTION_INVALID = "invalid"  # contradictory annotations: repair first
ACTION_ROLLBACK = "rollback"  # migrated: take the rollback lock and roll back
ACTION_RESUME_ROLLBACK = "resume-rollback"  # a rollback lock that is ours, expired or taken over
ACTION_REFUSE = "refuse"  # a rollback would be wrong from this state; the reason says what to do
MIGRATE_ACTIONS = (ACTION_MIGRATE, ACTION_MARK_LEGACY_AND_MIGRATE, ACTION_RESUME, ACTION_SKIP, ACTION_LOCKED,
                   ACTION_INVALID)
ROLLBACK_ACTIONS = (ACTION_ROLLBACK, ACTION_RESUME_ROLLBACK, ACTION_SKIP, ACTION_LOCKED, ACTION_REFUSE)
# The status a run records for each action before it acts (RV(hostedclusters[].status)): the one table of it.
ACTION_STATUS = {
    (MIGRATE, ACTION_MIGRATE): "migrating", (MIGRATE, ACTION_MARK_LEGACY_AND_MIGRATE): "migrating",
    (MIGRATE, ACTION_RESUME): "migrating", (MIGRATE, ACTION_SKIP): "skipped", (MIGRATE, ACTION_LOCKED): "skipped",
    (MIGRATE, ACTION_INVALID): "invalid",
    (ROLLBACK, ACTION_ROLLBACK): "rolling-back", (ROLLBACK, ACTION_RESUME_ROLLBACK): "rolling-back",
    (ROLLBACK, ACTION_SKIP): "skipped", (ROLLBACK, ACTION_LOCKED): "skipped", (ROLLBACK, ACTION_REFUSE): "refused",
}


def _decide_migrate(found, holder, retry_failed, takeover):
    state, lease = found["state"], found.get("lease")
    who = describe(HOSTEDCLUSTER_KIND, found.get("name"), found.get("namespace"))
    if state == MIGRATED:
        return ACTION_SKIP, "already migrated"
    if state == FAILED:
        reason = ("failed before (%s): remediate, then re-run with private_capi_migrate_retry_failed=true"
                  % found.get("failed_reason"))
        return (ACTION_MARK_LEGACY_AND_MIGRATE if retry_failed else ACTION_SKIP), reason
    if state == INVALID:
        return ACTION_INVALID, (
            "%s is in the invalid state (scope legacy together with private-capi-types); run migration_state with "
            "state=query repair=true, then re-run" % who)
    if state == NEW:
        return ACTION_MARK_LEGACY_AND_MIGRATE, ""
    if state == IN_PROGRESS:
        if lease is None:
            return ACTION_RESUME, ""
        if lease["holder"] != holder and not takeover and not lease["expired"]:
            return ACTION_LOCKED, ("locked by run %s (lease not expired); resume with that run id or takeover"
                                   % lease["holder"])
        # the fleet record keeps how the lock was taken back
        if lease["holder"] == holder:
            resumed = "resumed its own lock (run %s)" % holder
        else:
            resumed = "took over the lock of run %s (%s)" % (
                lease["holder"], "its lease had expired" if lease["expired"] else "takeover")
        return ACTION_RESUME, "; ".join([resumed] + _lock_notes(found))
    return ACTION_MIGRATE, ""


def _decide_rollback(found, holder, takeover):
    state, lease = found["state"], found.get("lease")
    who = describe(HOSTEDCLUSTER_KIND, found.get("name"), found.get("namespace"))
    rollback_lock = state == IN_PROGRESS and lease is not None and lease.get("direction", MIGRATE) == ROLLBACK
    if state == MIGRATED:
        return ACTION_ROLLBACK, ""
    if rollback_lock:
        if lease["holder"] == holder or lease["expired"] or takeover:
            return ACTION_RESUME_ROLLBACK, "; ".join(_lock_notes(found))
        return ACTION_LOCKED, (
            "locked by rollback run %s (lease not expired): resume it with -e private_capi_rollback_run_id=%s, or take "
            "it over with -e private_capi_rollback_takeover=true once that run is known to be dead"
            % (lease["holder"], lease["holder"]))
    if state == LEGACY:
        return ACTION_SKIP, "already legacy (standard CAPI types): nothing to roll back"
    if state == IN_PROGRESS:
        return ACTION_REFUSE, (
            "cannot roll back %s: it is in-progress for a migration to private CAPI types (lock held by %s), not "
            "migrated. Let migrate_fleet.yml finish it (re-run with its run id: it ends migrated, or failed after "
            "rolling itself back), then roll back if it is migrated"
            % (who, lease.get("holder", "nobody") if lease else "nobody"))
    if state == FAILED:
        return ACTION_REFUSE, (
            "cannot roll back %s: it is failed (%s); its migration was already rolled back when it failed and the "
            "standard objects are in place. Remediate, then move it to legacy (migration_state state=legacy "
            "force=true)" % (who, found.get("failed_reason")))
    if state == NEW:
        return ACTION_REFUSE, ("cannot roll back %s: it is new (created with private CAPI types, never migrated); "
                               "there is nothing to roll back" % who)
    return ACTION_REFUSE, ("cannot roll back %s: its state is invalid (contradictory annotations); run "
                           "migration_state with state=query repair=true, then re-run" % who)


def decide(found, holder, direction=MIGRATE, retry_failed=False, takeover=False):
    """What a run acting as `holder` should do with the HostedCluster of query report `found` (see report()).

    direction MIGRATE: one of MIGRATE_ACTIONS; ROLLBACK: one of ROLLBACK_ACTIONS. Returns {"action", "reason",
    "status"}: the reason is the one the fleet record and the roles' messages show ("" when there is nothing to say),
    the status the one the run records before it acts (ACTION_STATUS).
    """
    if direction == ROLLBACK:
        action, reason = _decide_rollback(found, holder, takeover)
    elif direction == MIGRATE:
        action, reason = _decide_migrate(found, holder, retry_failed, takeover)
    else:
        raise ValueError("direction must be one of %s, got %r" % (", ".join(DIRECTIONS), direction))
    return {"action": action, "reason": reason, "status": ACTION_STATUS[(direction, action)]}
