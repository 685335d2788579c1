# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner of hypershift.private_capi.capi_object_migrate: discovery, reads, checks, copy, verify, delete.

The order of one run: discover the moved kinds (capi_migrate_discovery); LIST every source and target
kind in parallel (paginated); refuse an unpaused Cluster (require_paused); build the ownership graph
(capi_migrate_graph); copy owners first (capi_migrate_copy); optionally verify (capi_migrate_verify);
with delete_source re-point dependents and delete the sources children first (capi_migrate_delete).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import CARRIED_ANNOTATION, CARRIED_DELETION_ANNOTATION, PAUSED_ANNOTATION
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    STANDARD_SUFFIX,
    TO_PRIVATE,
    GroupMap,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.copy import (
    CopyEngine,
    MigrationError,
    object_name,
    object_path,
    what,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.delete import DeleteEngine
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.discovery import read_served_resources
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.kinds import dependent_resources, moved_kinds
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.graph import (
    DELETION_ORPHAN_FINALIZER,
    OwnershipGraph,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.plan import (
    GC_FINALIZERS,
    carried_copy_uid,
    carried_mark,
    carries_deletion,
    deleted_by_this_module,
    desired_target,
    is_carried,
    is_marked_for_deletion,
    remap_owner_references,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.report import MigrationReport
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.verify import (
    failure_message,
    verify_copies,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import PARALLELISM_MINIMUM
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module as run_module_with
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import (
    ApiError,
    api_path,
    call_with_retries,
    parallel_map,
)

FOREGROUND_FINALIZER = "foregroundDeletion"
ORPHAN_POLICY = "Orphan"
LIST_PAGE_SIZE = 500


def is_paused(cluster):
    """CAPI's own test: spec.paused, or the paused annotation on the object."""
    annotations = (cluster.get("metadata") or {}).get("annotations") or {}
    return bool((cluster.get("spec") or {}).get("paused")) or PAUSED_ANNOTATION in annotations


class MigrateService(object):
    def __init__(self, client, params, group_map, diff=False, served=None):
        self.client = client
        self.served = served  # read_served_resources' answer when the caller read it ahead (before a pause), else None
        self.params = params
        self.hcp_namespace = params["hcp_namespace"]
        self.direction = params["direction"]
        self.group_map = group_map
        self.parallelism = params["parallelism"]
        self.report = MigrationReport()
        self.diff = diff
        self.kinds = []
        self.verified = None

    # --- reads -----------------------------------------------------------------------------------
    def _list(self, group, kind_name, version, plural):
        path = api_path(group, version, plural, self.hcp_namespace)
        items, _meta = call_with_retries(lambda: self.client.list_all(
            path, "list %s in namespace %s (%s/%s)" % (plural, self.hcp_namespace, group, version), page_size=LIST_PAGE_SIZE))
        api_version = "%s/%s" % (group, version)
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind_name)
        return items

    def read_all(self, moved, unserved, every_target=False):
        """(sources per kind key, targets per kind key, [(resource, why, items)] of the unserved resources that hold
        objects).

        Targets are read only for kinds that have sources (a namespace uses a handful of the many kinds served), or for
        every moved kind with every_target.
        """
        def read_source(job):
            role, item = job
            if role == "source":
                return self._list(item.source_group, item.kind, item.version, item.plural)
            resource = item[0]
            return self._list(resource.group, resource.kind, resource.version, resource.plural)

        jobs = [("source", kind) for kind in moved] + [("unserved", pair) for pair in unserved]
        sources, targets, blocked = {}, {}, []
        for (role, item), items in zip(jobs, parallel_map(read_source, jobs, self.parallelism)):
            if role == "source":
                sources[item.key] = items
            elif items:
                blocked.append((item[0], item[1], items))
        with_sources = [kind for kind in moved if sources[kind.key] or every_target]
        listed = parallel_map(lambda kind: self._list(kind.target_group, kind.kind, kind.version, kind.plural),
                              with_sources, self.parallelism)
        for kind, items in zip(with_sources, listed):
            targets[kind.key] = items
        return sources, targets, blocked

    # --- checks ----------------------------------------------------------------------------------
    def core_group(self):
        """The core CAPI group (where Cluster lives) in the source naming."""
        return STANDARD_SUFFIX if self.direction == TO_PRIVATE else self.group_map.to_private(STANDARD_SUFFIX)

    def check_paused(self, sources, kind_of):
        unpaused = [obj for uid, obj in sources.items()
                    if kind_of[uid].kind == "Cluster" and kind_of[uid].source_group == self.core_group()
                    and not (obj.get("metadata") or {}).get("deletionTimestamp") and not is_paused(obj)]
        if unpaused and self.params["require_paused"]:
            names = ", ".join("Cluster %s/%s" % (self.hcp_namespace, object_name(obj)) for obj in unpaused)
            raise MigrationError(
                "%s is not paused (spec.paused is not true and there is no %s annotation), so its controllers may change "
                "objects while they are copied and updates would be lost. Pause it first (the migrate role does: "
                "spec.paused: true with the old CAPI controllers scaled to 0), or pass require_paused: false to copy anyway"
                % (names, PAUSED_ANNOTATION))
        for obj in unpaused:
            self.report.warn("Cluster %s/%s is not paused; copying anyway (require_paused: false)"
                             % (self.hcp_namespace, object_name(obj)))

    def plan_unserved(self, blocked):
        """Check mode on a management cluster without the private CRDs yet (the run creates them first, as dry runs
        only): the objects of a kind whose target is not served cannot be sent as dry runs. Each is planned as a create
        that was not sent, counted as found and created, and a warning says why."""
        for resource, why, items in blocked:
            self.report.count(resource.kind, "found", len(items))
            self.report.count(resource.kind, "created", len(items))
            for item in sorted(items, key=object_name):
                self.report.step("create", resource.kind, object_name(item), sent=False, reason=why)
        if blocked:
            self.report.warn("check mode: %d object(s) of %s not sent as dry runs - their private kinds are not served "
                             "yet (a real run creates the private CRDs first); planned as creates" % (
                                 sum(len(items) for _resource, _why, items in blocked),
                                 ", ".join(sorted(set(resource.kind for resource, _why, _items in blocked)))))

    # --- run -------------------------------------------------------------------------------------
    def run(self):
        """The move in its steps: read, check, skips, copy by level, carry deletions, verify, delete."""
        served, moved, sources, kind_of, targets, kind_by_key = self._read(discard=bool(self.params.get("discard")))
        self.check_paused(sources, kind_of)
        graph = OwnershipGraph(list(sources.values()))
        if self.params.get("discard"):
            self.discard(sources, kind_of, targets, kind_by_key, graph)
            return self.report
        carry = bool(self.params.get("carry_deletions"))
        own = self._report_skips(graph, sources, kind_of, targets, carry)
        copyable = [uid for uid in sources if (uid not in graph.skipped or carry and uid not in own)
                    and not is_carried(sources[uid])]
        moved_set = {(kind.source_group, kind.kind) for kind in moved}
        orphaning = {uid for uid in graph.skipped
                     if DELETION_ORPHAN_FINALIZER in ((sources[uid].get("metadata") or {}).get("finalizers") or ())}
        owner_targets, copies, carried_copies = self._copy(graph.levels(copyable), sources, kind_of, targets, moved_set,
                                                           orphaning)
        # being deleted by someone else (copyable holds none of this module's own deletions)
        deleting = [uid for uid in copyable if (sources[uid].get("metadata") or {}).get("deletionTimestamp")]
        # carried by an earlier run that may have stopped before deleting the copy: the copy goes now
        for uid, existing in carried_copies.items():
            deleting.append(uid)
            copies[uid] = existing
        gone = set()
        if deleting or carry and graph.skipped:
            gone = self.carry_deletions(deleting, [uid for uid in graph.skipped if uid in copies
                                                   and not is_carried(sources[uid])], sources, kind_of, copies)
        if self.params["verify"]:
            # the copies of objects being deleted go away once their controllers have finished: not compared
            self.verify([uid for uid in copyable if uid not in deleting], sources, kind_of, owner_targets, copies,
                        moved_set, orphaning)
        if self.params["delete_source"]:
            # the carried sources go like the others (their copies are the target group's now), except those whose
            # deletion the garbage collector alone holds now (this module's own, an earlier delete phase's)
            levels = graph.levels([uid for uid in sources if uid not in gone and (
                uid in copyable or is_carried(sources[uid]) and not _only_the_gc_holds(sources[uid]))])
            self.delete(served, moved, levels, sources, kind_of, owner_targets, graph, carry)
        return self.report

    def _read(self, discard):
        """Every source object of the moved kinds, and the targets of those with sources (every target for discard):
        (served, moved kinds, {uid: source}, {uid: its kind}, {(kind key, name): target}, {kind key: kind}). Refused
        (MigrationError) when a kind whose target is not served holds objects, unless in check mode."""
        served = self.served if self.served is not None else read_served_resources(self.client, self.parallelism)
        moved, unserved = moved_kinds(served, self.group_map, self.direction, self.params.get("kinds"))
        self.kinds = moved
        source_lists, target_lists, blocked = self.read_all(moved, unserved, every_target=discard)
        if blocked and not self.client.dry_run:
            raise MigrationError("namespace %s holds objects that cannot be moved: %s" % (self.hcp_namespace, "; ".join(
                "%d %s object(s): %s" % (len(items), resource.kind, why) for resource, why, items in blocked)))
        self.plan_unserved(blocked)
        kind_by_key = {kind.key: kind for kind in moved}
        sources, kind_of, targets = {}, {}, {}
        for key, items in source_lists.items():
            self.report.count(kind_by_key[key].kind, "found", len(items))
            for item in items:
                sources[item["metadata"]["uid"]] = item
                kind_of[item["metadata"]["uid"]] = kind_by_key[key]
        for key, items in target_lists.items():
            for item in items:
                targets[(key, object_name(item))] = item
        if not sources:
            self.report.warn("no %s CAPI objects found in namespace %s (kinds read: %s)"
                             % ("standard" if self.direction == TO_PRIVATE else "private", self.hcp_namespace,
                                ", ".join(kind.kind for kind in moved) or "none"))
        return served, moved, sources, kind_of, targets, kind_by_key

    def _report_skips(self, graph, sources, kind_of, targets, carry):
        """The report's step for each source the graph skips (carried, to carry, or not copied); returns the uids of
        this module's own deletions (an interrupted delete phase): their copies stay, nothing to carry (a carried
        source stays carried: its copy goes too)."""
        own = {uid for uid in graph.skipped if not is_carried(sources[uid])
               and deleted_by_this_module(sources[uid], targets.get((kind_of[uid].key, object_name(sources[uid]))))}
        for uid, reason in sorted(graph.skipped.items(), key=lambda pair: (kind_of[pair[0]].kind, object_name(sources[pair[0]]))):
            if uid not in own:
                self.report.count(kind_of[uid].kind, "leaving")
            if is_carried(sources[uid]):  # an earlier run carried it: its copy may be gone already, never recreate it
                self.report.step("carried", kind_of[uid].kind, object_name(sources[uid]), reason=reason)
                continue
            if carry and uid not in own:  # copied like the others; the copies of those being deleted are then deleted
                self.report.step("carry", kind_of[uid].kind, object_name(sources[uid]), reason=reason)
                continue
            self.report.skip(kind_of[uid].kind, object_name(sources[uid]), "not copied: %s" % reason)
            self.report.step("skip", kind_of[uid].kind, object_name(sources[uid]), reason=reason)
        return own

    def _copy(self, levels, sources, kind_of, targets, moved_set, orphaning):
        """The copies, level by level (an owner's copy before its dependents'): (owner_targets: {source uid: (its copy's
        apiVersion, uid)}, copies: {source uid: copy}, carried_copies: {source uid: the copy an earlier run carried the
        deletion of and left})."""
        copier = CopyEngine(self.client, self.report, self.hcp_namespace, self.direction, self.group_map,
                            force=self.params["force"], parallelism=self.parallelism, diff=self.diff,
                            keep_existing=self.params.get("keep_existing", False))
        owner_targets, copies = {}, {}
        # carried by an earlier run: not copied again, but their dependents not yet carried (a run stopped between two
        # marks) still name the copy as their owner; a copy whose deletion was carried, still there, is deleted later
        carried_copies = {}
        for uid in sources:
            copy_uid = carried_copy_uid(sources[uid])
            if copy_uid is not None:
                owner_targets[uid] = (kind_of[uid].target_api_version, copy_uid)
                existing = targets.get((kind_of[uid].key, object_name(sources[uid])))
                if existing is not None and existing["metadata"].get("uid") == copy_uid \
                        and carries_deletion(sources[uid]):
                    carried_copies[uid] = existing
        for members in levels:
            copied = copier.copy_level(members, sources, kind_of, owner_targets, targets, moved_set, orphaning)
            copies.update(copied)
            for uid, target in copied.items():
                owner_targets[uid] = (kind_of[uid].target_api_version, target["metadata"]["uid"])
        return owner_targets, copies, carried_copies

    def discard(self, sources, kind_of, targets, kind_by_key, graph):
        """Delete the sources without copying them (discard: the copies a failed attempt made, while the objects they
        were copied from are intact in the target group): first the marks that attempt left on the target objects whose
        deletion it carried (their controllers finish those deletions; a later attempt carries them afresh), then the
        sources, children first, with the delete phase's own rule (DeleteEngine: finalizers removed in the write that
        labels them, propagation Orphan, so nothing cascades into the target group)."""
        def unmark(item):
            (key, name), target = item
            kind = kind_by_key[key]
            call_with_retries(lambda: self.client.patch(
                object_path(kind, self.hcp_namespace, name),
                {"metadata": {"annotations": {CARRIED_ANNOTATION: None, CARRIED_DELETION_ANNOTATION: None}}},
                what("unmark (the failed attempt carried its deletion)", kind, self.hcp_namespace, name)))
            self.report.step("unmark_carried", kind.kind, name, api_version=kind.target_api_version)
        marked = sorted((item for item in targets.items() if is_carried(item[1])), key=lambda item: item[0])
        parallel_map(unmark, marked, self.parallelism)
        DeleteEngine(self.client, self.report, self.hcp_namespace, self.parallelism).delete_sources(
            graph.levels(list(sources)), sources, kind_of)

    def carry_deletions(self, deleting, carried, sources, kind_of, copies):
        """Delete the copy of each source that is being deleted, with the source's propagation, so that its deletion
        goes on in the target group: the copy keeps its finalizers (a Machine's: drain, terminate) and the controllers
        of the target group finish what the source's had begun.

        Each carried source (being deleted, or taken along by one that is) is first marked with its copy's uid, and
        whether the copy is deleted here: a later run (the role's delete phase, a resumed run) would otherwise copy it
        again once the target's controllers have finished the deletion, and the drain and termination would run twice.
        Returns the uids of the sources gone before they could be marked (their deletion finished meanwhile)."""
        deleting_set = set(deleting)

        def mark(uid):
            kind, name = kind_of[uid], object_name(sources[uid])
            copy_uid = ((copies.get(uid) or {}).get("metadata") or {}).get("uid") or "unknown"
            try:
                patched = call_with_retries(lambda: self.client.patch(
                    object_path(kind, self.hcp_namespace, name, target=False),
                    {"metadata": {"annotations": carried_mark(copy_uid, uid in deleting_set)}},
                    what("mark (its deletion carried to the copy)", kind, self.hcp_namespace, name, target=False)))
            except ApiError as exc:
                if not exc.is_not_found:
                    raise
                return uid  # its deletion finished in the source group since it was read: the copy still goes
            if patched:  # the delete phase's preconditions need the new resourceVersion
                sources[uid] = patched
            self.report.step("mark_carried", kind.kind, name, copy_uid=copy_uid, deletes_copy=uid in deleting_set)
            return None
        gone = parallel_map(mark, sorted(carried, key=lambda uid: (kind_of[uid].kind, object_name(sources[uid]))),
                            self.parallelism)

        def carry(uid):
            kind, name = kind_of[uid], object_name(sources[uid])
            finalizers = (sources[uid].get("metadata") or {}).get("finalizers") or ()
            policy = ("Foreground" if FOREGROUND_FINALIZER in finalizers
                      else ORPHAN_POLICY if DELETION_ORPHAN_FINALIZER in finalizers else "Background")
            copy = copies.get(uid) or {}
            if (copy.get("metadata") or {}).get("deletionTimestamp"):
                return  # carried by an earlier run
            try:
                call_with_retries(lambda: self.client.delete(
                    object_path(kind, self.hcp_namespace, name),
                    what("delete (carrying its deletion)", kind, self.hcp_namespace, name), propagation_policy=policy))
            except ApiError as exc:
                if not exc.is_not_found:
                    raise
            self.report.step("carry_deletion", kind.kind, name, api_version=kind.target_api_version,
                             propagation_policy=policy, finalizers=list(finalizers))
        parallel_map(carry, sorted(deleting, key=lambda uid: (kind_of[uid].kind, object_name(sources[uid]))),
                     self.parallelism)
        return {uid for uid in gone if uid is not None}

    def verify(self, copyable, sources, kind_of, owner_targets, copies, moved_set, orphaning):
        live = copies
        if not self.client.dry_run:  # read back what the server holds now, not what it answered
            kinds = sorted({kind_of[uid].key: kind_of[uid] for uid in copyable}.values(), key=lambda kind: kind.key)
            lists = parallel_map(lambda kind: self._list(kind.target_group, kind.kind, kind.version, kind.plural),
                                 kinds, self.parallelism)
            by_name = {(kind.key, object_name(item)): item for kind, items in zip(kinds, lists) for item in items}
            live = {uid: by_name.get((kind_of[uid].key, object_name(sources[uid]))) for uid in copyable}
        pairs = []
        for uid in sorted(copyable, key=lambda uid: (kind_of[uid].kind, object_name(sources[uid]))):
            refs, _dropped = remap_owner_references(sources[uid], owner_targets, moved_set, orphaning)
            body, status = desired_target(sources[uid], kind_of[uid], self.direction, self.group_map, refs)
            pairs.append(("%s %s/%s" % (kind_of[uid].kind, self.hcp_namespace, object_name(sources[uid])), body, status,
                          live.get(uid)))
        failures = verify_copies(pairs)
        self.verified = {"checked": len(pairs), "failures": failures}
        if failures:
            raise MigrationError(failure_message(failures, len(pairs)))

    def delete(self, served, moved, levels, sources, kind_of, owner_targets, graph, carry):
        unresolved = [conflict for conflict in self.report.conflicts if not conflict["overwritten"]]
        if unresolved:
            raise MigrationError(
                "not deleting any source: %d copies differ from their sources (%s); inspect the conflicts, then re-run "
                "with force: true to overwrite the copies from the sources, or fix the sources"
                % (len(unresolved), ", ".join("%s %s" % (c["kind"], c["name"]) for c in unresolved[:10])))
        # An object skipped because it is being deleted (or goes with an owner that is) and that still holds a
        # finalizer has a deletion in flight: a controller drains its node, terminates its instance. Stripping the
        # finalizer would complete the deletion without that work, and no controller would ever do it.
        # The garbage collector's own finalizers (orphan, foregroundDeletion) it removes itself; a source this
        # module's earlier delete phase deleted (its copy complete) is its own deletion, not one in flight.
        # With carry, nothing was skipped: the copies go on with the deletions.
        held = [] if carry else sorted(
            (kind_of[uid].kind, object_name(sources[uid]), tuple(_controller_finalizers(sources[uid])))
            for uid in graph.skipped if _controller_finalizers(sources[uid]) and not is_marked_for_deletion(sources[uid])
            and not is_carried(sources[uid]))
        if held:
            raise MigrationError(
                "not deleting any source: a deletion is in flight - %d object%s not copied (being deleted, or going "
                "with an owner that is) still hold%s finalizers: %s; removing them would end the deletion without "
                "the work they stand for (a node drained, an instance terminated); let the controllers finish it "
                "(the objects go away), then re-run"
                % (len(held), "" if len(held) == 1 else "s", "s" if len(held) == 1 else "",
                   ", ".join("%s %s/%s [%s]" % (kind, self.hcp_namespace, name, ", ".join(finalizers))
                             for kind, name, finalizers in held[:10])))
        deleter = DeleteEngine(self.client, self.report, self.hcp_namespace, self.parallelism)
        deleter.repoint_dependents(dependent_resources(served, moved, self.params.get("dependent_resources")), owner_targets)
        deleter.delete_sources(levels, sources, kind_of)


def _controller_finalizers(source):
    return [name for name in (source.get("metadata") or {}).get("finalizers") or () if name not in GC_FINALIZERS]


def _only_the_gc_holds(source):
    """Being deleted, held by none but the garbage collector's finalizers: it finishes without anyone's help."""
    return bool((source.get("metadata") or {}).get("deletionTimestamp")) and not _controller_finalizers(source)


def run_module(module):
    state = {}

    def work(run):
        params = module.params
        group_map = GroupMap(params.get("extra_groups") or {})
        # a typo in the namespace must not read as "nothing to migrate"
        client = run.connect(connections=params["parallelism"] + 2, namespaces=[("hcp_namespace", params["hcp_namespace"])])
        state["service"] = service = MigrateService(client, params, group_map, diff=module._diff)
        report = service.run()
        for warning in report.warnings:
            module.warn(warning)
        return migrate_result(service)

    def partial():
        service = state.get("service")
        done = migrate_result(service)
        done["changed"] = bool(service and service.report.changed)
        return done

    run_module_with(module, work, partial=partial, minimums=PARALLELISM_MINIMUM)


def migrate_params(hcp_namespace, **overrides):
    """capi_object_migrate's parameters (its argument spec's defaults) with overrides: how the modules that run the
    service among other steps (hcp_migrate_window, hcp_migrate_finish) call it."""
    params = dict(hcp_namespace=hcp_namespace, direction=TO_PRIVATE, delete_source=False, require_paused=True, force=False,
                  carry_deletions=False, verify=False, kinds=None, dependent_resources=None, parallelism=8,
                  extra_groups={}, discard=False, keep_existing=False)
    params.update(overrides)
    return params


def migrate_result(service):
    """capi_object_migrate's result for a service run (hcp_migrate_window returns it as its copy step's)."""
    result = {}
    if service is not None:
        result.update(service.report.result())
        result["kinds"] = [kind.as_dict() for kind in service.kinds]
        result["namespace"] = service.hcp_namespace
        result["direction"] = service.direction
        if service.verified is not None:
            result["verify"] = service.verified
        if service.diff and service.report.diffs:
            result["diff"] = list(service.report.diffs)
    return result
