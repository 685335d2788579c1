# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The copy engine of capi_object_migrate: creates the copies owners first, writes their status.

Level by level (graph levels: every owner is in an earlier level), each level in parallel on a bounded
pool. Every write is conflict-checked: creates by name (409 AlreadyExists -> the existing object is read
and judged like any found target), updates by resourceVersion (409 -> read again, judge again, bounded).
429/5xx/no-answer are retried with backoff (k8s_client.call_with_retries); anything else stops the run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import SOURCE_UID_ANNOTATION
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import copy_json
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.plan import (
    DIFFERS,
    GC_FINALIZERS,
    IN_SYNC,
    canonical,
    decide,
    desired_target,
    is_marked_for_deletion,
    remap_owner_references,
    unmarked_for_deletion,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.managed import (
    carried_entries,
    needs_carry,
    with_carried,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import (
    FIELD_MANAGER,
    ApiError,
    api_path,
    call_with_retries,
    parallel_map,
)

CONFLICT_RETRIES = 5
# A target left from an earlier deletion (a rescue's: propagation Orphan, the garbage collector's finalizer on it until
# it has orphaned the dependents) is awaited this long, polled from the first delay doubling to the last
GONE_TIMEOUT = 120.0
GONE_DELAYS = (0.2, 2.0)


class MigrationError(PrivateCapiError):
    """A run that must stop; the message names the object, what was expected and found, and what to do."""


def object_name(obj):
    return (obj.get("metadata") or {}).get("name")


def object_path(kind, namespace, name, target=True, subresource=None):
    group = kind.target_group if target else kind.source_group
    return api_path(group, kind.version, kind.plural, namespace, name, subresource)


def described(kind, namespace, name, target=True):
    group = kind.target_group if target else kind.source_group
    return "%s %s/%s (%s/%s)" % (kind.kind, namespace, name, group, kind.version)


def what(verb, kind, namespace, name, target=True):
    return "%s %s" % (verb, described(kind, namespace, name, target))


class CopyEngine(object):
    """Copies the copyable nodes of one namespace's MoveGraph (nodes.py) level by level; fills the report and records
    each copy on its node."""

    def __init__(self, client, report, namespace, direction, group_map, force=False, parallelism=8, diff=False,
                 keep_existing=False):
        self.client = client
        # the rescue's copy back: an object still in the target group is the original the migration never deleted,
        # left exactly as it is; only what is missing is created
        self.keep_existing = keep_existing
        self.report = report
        self.namespace = namespace
        self.direction = direction
        self.group_map = group_map
        self.force = force
        self.parallelism = parallelism
        self.diff = diff
        self.dry_run = client.dry_run
        self.sleep, self.clock = time.sleep, time.monotonic

    # --- requests ------------------------------------------------------------------------------
    def _call(self, function):
        return call_with_retries(function)

    def _create(self, kind, body):
        name = object_name(body)
        return self._call(lambda: self.client.create(object_path(kind, self.namespace, None), body,
                                                     what("create", kind, self.namespace, name)))

    def _get_target(self, kind, name):
        return self._call(lambda: self.client.get(object_path(kind, self.namespace, name),
                                                  what("get", kind, self.namespace, name)))

    def _replace(self, kind, body, subresource=None):
        name = object_name(body)
        verb = "update status of" if subresource else "update"
        return self._call(lambda: self.client.replace(object_path(kind, self.namespace, name, subresource=subresource),
                                                      body, what(verb, kind, self.namespace, name)))

    def _guarded_update(self, kind, name, current, change, subresource=None):
        """PUT change(current) guarded by current's resourceVersion; on 409 read again and retry (bounded)."""
        for _attempt in range(CONFLICT_RETRIES):
            try:
                return self._replace(kind, change(current), subresource)
            except ApiError as exc:
                if not exc.is_conflict:
                    raise
                current = self._get_target(kind, name)
        raise MigrationError(
            "%s kept changing while it was written (%d conflicts in a row); something else writes it - stop that "
            "writer (scale the CAPI controllers to 0) and re-run" % (what("update", kind, self.namespace, name), CONFLICT_RETRIES))

    # --- one object ------------------------------------------------------------------------------
    def copy_level(self, graph, members):
        """Copy one level of graph's nodes (members) in parallel; each copy that exists now is recorded on its node
        (copy, owner_target) once the whole level is done, in members' order."""
        owner_targets = graph.owner_targets()  # the owners' copies: every earlier level's, and the carried ones
        owner_uids = dict((uid, owner[1]) for uid, owner in owner_targets.items())  # source uid -> its copy's uid
        orphaning = graph.orphaning()

        def copy_one(node):
            return self._copy_one(node, owner_targets, owner_uids, graph.moved_set, orphaning)

        outcomes = parallel_map(copy_one, members, self.parallelism)
        for node, (target, entries) in zip(members, outcomes):
            self.report.extend(entries)
            if target is not None:
                node.copy = target
                self.report.map_uid(node.uid, (target.get("metadata") or {}).get("uid"))
                node.owner_target = (node.kind.target_api_version, target["metadata"]["uid"])

    def _copy_one(self, node, owner_targets, owner_uids, moved_set, orphaning):
        """(the copy of node's source as it is now or None, the report's entries for it)."""
        source, kind = node.source, node.kind
        refs, dropped = remap_owner_references(source, owner_targets, moved_set, orphaning)
        for ref, why in dropped:
            self.report.warn("%s %s/%s: ownerReference to %s %s (uid %s) not copied: %s"
                             % (kind.kind, self.namespace, object_name(source), ref.get("kind"), ref.get("name"),
                                ref.get("uid"), why))
        body, status = desired_target(source, kind, self.direction, self.group_map, refs)
        entries = []
        existing = node.target
        if existing is not None and (existing.get("metadata") or {}).get("deletionTimestamp") and not node.deleting:
            existing = self._await_gone(kind, existing, entries)
            if existing is None and self.dry_run:  # nothing to create against yet: the copy as planned
                self._count_create(kind, object_name(source), entries)
                return dict(body, metadata=dict(body["metadata"], uid=node.target["metadata"].get("uid"))), entries
        if existing is None:
            target = self._create_copy(kind, source, body, status, entries)
        else:
            target = self._settle_existing(kind, source, existing, body, status, entries)
        ours = ((target or {}).get("metadata") or {}).get("annotations", {}).get(SOURCE_UID_ANNOTATION) == \
            (source.get("metadata") or {}).get("uid")  # never on someone else's object of that name
        if ours and not self.dry_run:
            carried = carried_entries(source, self.direction, self.group_map, owner_uids)
            if needs_carry(target, carried, FIELD_MANAGER):
                entries.append({"action": "carry_managed_fields", "obj_kind": kind.kind, "name": object_name(source)})
                target = self._guarded_update(kind, object_name(source), target, lambda current: dict(current, metadata=dict(
                    current["metadata"], managedFields=with_carried(current, carried, FIELD_MANAGER))))
        return target, entries

    def _await_gone(self, kind, existing, entries):
        """None once `existing` (a target being deleted, of a source that is not) has gone, so that the copy is
        created anew; the object of that name if another took its place meanwhile. Never judged as the copy: it is
        going (a rescue deleted it, and a retry came before the garbage collector let it go). One held by a finalizer
        the garbage collector does not remove waits for its controller, which the window has paused: refused at once;
        the rescue's copy back (keep_existing) keeps such an original as it is, its controller finishing the deletion
        it had begun. A dry run waits for nothing and shows the wait (its copy is planned, with the old object's uid in
        its place)."""
        name, metadata = object_name(existing), existing.get("metadata") or {}
        finalizers = metadata.get("finalizers") or []
        going = described(kind, self.namespace, name)
        held = [finalizer for finalizer in finalizers if finalizer not in GC_FINALIZERS]
        if held and self.keep_existing:
            return existing
        if held:
            raise MigrationError(
                "%s is being deleted (since %s) and its finalizers %s hold it: the copy cannot take its name until its "
                "controller removes them; let the controllers finish that deletion (or remove the finalizers if "
                "nothing owns it any more), then re-run" % (going, metadata["deletionTimestamp"], held))
        entries.append({"action": "await_deletion", "obj_kind": kind.kind, "name": name,
                        "deletion_timestamp": metadata["deletionTimestamp"], "finalizers": list(finalizers)})
        if self.dry_run:
            return None
        started, delay = self.clock(), GONE_DELAYS[0]
        while True:
            current = self._call(lambda: self.client.get_or_none(object_path(kind, self.namespace, name),
                                                                 what("get", kind, self.namespace, name)))
            if current is None or (current.get("metadata") or {}).get("uid") != metadata.get("uid"):
                return current
            if self.clock() - started >= GONE_TIMEOUT:
                raise MigrationError(
                    "%s is being deleted (since %s, finalizers %s) and was still there after %.0f s: the garbage "
                    "collector (kube-controller-manager) removes those; check that it runs and its log, then re-run"
                    % (going, metadata["deletionTimestamp"], finalizers, GONE_TIMEOUT))
            self.sleep(delay)
            delay = min(GONE_DELAYS[1], delay * 2)

    def _count_create(self, kind, name, entries):
        self.report.count(kind.kind, "created")
        entries.append({"action": "create", "obj_kind": kind.kind, "name": name, "api_version": kind.target_api_version})

    def _create_copy(self, kind, source, body, status, entries):
        name = object_name(source)
        try:
            created = self._create(kind, body)
        except ApiError as exc:
            if not exc.is_already_exists:
                raise
            # created by an earlier attempt whose answer was lost, or by someone else: judge what is there
            existing = self._get_target(kind, name)
            return self._settle_existing(kind, source, existing, body, status, entries)
        self._count_create(kind, name, entries)
        if self.diff:
            self.report.diff("%s %s/%s" % (kind.kind, self.namespace, name), {}, dict(body, status=status) if status else body)
        if status:
            entries.append({"action": "write_status", "obj_kind": kind.kind, "name": name})
            if not self.dry_run:  # a dry-run create leaves nothing whose status could be written
                created = self._guarded_update(kind, name, created, lambda current: dict(current, status=copy_json(status)),
                                               subresource="status")
        return created

    def _settle_existing(self, kind, source, existing, body, status, entries):
        name = object_name(source)
        if self.keep_existing:
            if is_marked_for_deletion(existing):
                # the delete phase took its finalizers and labelled it, then stopped before deleting it: undone
                entries.append({"action": "restore_finalizers", "obj_kind": kind.kind, "name": name})
                self.report.count(kind.kind, "updated")
                return self._guarded_update(kind, name, existing, unmarked_for_deletion)
            reason = "kept: the original in %s was never deleted" % kind.target_group
            self.report.skip(kind.kind, name, reason)
            entries.append({"action": "skip", "obj_kind": kind.kind, "name": name, "reason": reason})
            return existing
        decision = decide(source, existing, body, status)
        if decision.outcome == IN_SYNC:
            self.report.skip(kind.kind, name, "target in sync: %s" % decision.reason)
            entries.append({"action": "skip", "obj_kind": kind.kind, "name": name, "reason": decision.reason})
            return existing
        if decision.outcome == DIFFERS:
            self.report.conflict(kind.kind, name, decision.reason, decision.differences, overwritten=self.force)
            if not self.force:
                entries.append({"action": "conflict", "obj_kind": kind.kind, "name": name, "reason": decision.reason})
                return existing
            entries.append({"action": "overwrite", "obj_kind": kind.kind, "name": name, "reason": decision.reason})
            if self.diff:
                self.report.diff("%s %s/%s" % (kind.kind, self.namespace, name), canonical(existing), canonical(body))

            def overwritten(current):
                replacement = copy_json(body)
                replacement["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                return replacement

            target = self._guarded_update(kind, name, existing, overwritten)
            if status:
                entries.append({"action": "write_status", "obj_kind": kind.kind, "name": name})
                target = self._guarded_update(kind, name, target, lambda current: dict(current, status=copy_json(status)),
                                              subresource="status")
            self.report.count(kind.kind, "updated")
            return target
        target = existing
        if decision.fix_owners:
            entries.append({"action": "update_owner_references", "obj_kind": kind.kind, "name": name})
            owner_refs = body["metadata"].get("ownerReferences") or []

            def with_owners(current):
                updated = copy_json(current)
                if owner_refs:
                    updated["metadata"]["ownerReferences"] = copy_json(owner_refs)
                else:
                    updated["metadata"].pop("ownerReferences", None)
                return updated

            target = self._guarded_update(kind, name, target, with_owners)
        if decision.fix_status:
            entries.append({"action": "write_status", "obj_kind": kind.kind, "name": name})
            target = self._guarded_update(kind, name, target, lambda current: dict(current, status=copy_json(status)),
                                          subresource="status")
        if self.diff:
            self.report.diff("%s %s/%s" % (kind.kind, self.namespace, name), canonical(existing), canonical(target))
        self.report.count(kind.kind, "updated")
        return target
