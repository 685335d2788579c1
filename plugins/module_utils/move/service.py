# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner of hypershift.private_capi.capi_object_migrate: discovery, reads, checks, copy, verify, delete.

The order of one run: discover the moved kinds (capi_migrate_discovery); LIST every source and target
kind in parallel (paginated) into one MoveGraph (nodes.py: a node per source object); refuse an unpaused Cluster
(require_paused); order the graph by ownership (capi_migrate_graph); copy owners first (capi_migrate_copy); optionally
verify (capi_migrate_verify); with delete_source re-point dependents and delete the sources children first
(capi_migrate_delete). Each step takes the graph and records what it learns on its nodes.
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
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.graph import DELETION_ORPHAN_FINALIZER
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.nodes import MoveGraph, MoveNode
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.plan import (
    carried_mark,
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
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import ModuleService
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
    """The object move of one HCP namespace (see the module docstring); run() returns its MigrationReport."""

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

    def check_paused(self, graph):
        unpaused = [node.source for node in graph.nodes.values()
                    if node.kind.kind == "Cluster" and node.kind.source_group == self.core_group()
                    and not (node.source.get("metadata") or {}).get("deletionTimestamp") and not is_paused(node.source)]
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
        """The move in its steps over one MoveGraph (nodes.py): read, check, skips, copy by level, carry deletions,
        verify, delete; or, with discard, read, check and discard."""
        graph = self.read(every_target=bool(self.params.get("discard")))
        self.check_paused(graph)
        graph.link_owners()
        if self.params.get("discard"):
            self.discard(graph)
            return self.report
        carry = bool(self.params.get("carry_deletions"))
        self.skips(graph, carry)
        self.copy(graph)
        if graph.deleting() or carry and graph.skipped():
            self.carry_deletions(graph)
        if self.params["verify"]:
            self.verify(graph)
        if self.params["delete_source"]:
            self.delete(graph, carry)
        return self.report

    def read(self, every_target):
        """The MoveGraph of every source object of the moved kinds, with the targets of the kinds that have sources
        (of every moved kind with every_target: discard). Refused (MigrationError) when a kind whose target is not
        served holds objects, unless in check mode."""
        served = self.served if self.served is not None else read_served_resources(self.client, self.parallelism)
        moved, unserved = moved_kinds(served, self.group_map, self.direction, self.params.get("kinds"))
        self.kinds = moved
        source_lists, target_lists, blocked = self.read_all(moved, unserved, every_target=every_target)
        if blocked and not self.client.dry_run:
            raise MigrationError("namespace %s holds objects that cannot be moved: %s" % (self.hcp_namespace, "; ".join(
                "%d %s object(s): %s" % (len(items), resource.kind, why) for resource, why, items in blocked)))
        self.plan_unserved(blocked)
        graph = MoveGraph(moved, source_lists, target_lists, served)
        for key, items in source_lists.items():
            self.report.count(graph.kinds_by_key[key].kind, "found", len(items))
        if not graph.nodes:
            self.report.warn("no %s CAPI objects found in namespace %s (kinds read: %s)"
                             % ("standard" if self.direction == TO_PRIVATE else "private", self.hcp_namespace,
                                ", ".join(kind.kind for kind in moved) or "none"))
        return graph

    def skips(self, graph, carry):
        """Chooses what is copied (MoveGraph.choose_copies), then gives the report a step for each node the ownership
        graph skips: carried, to carry, or not copied. This module's own deletions (an interrupted delete phase) are
        not counted as leaving: their copies stay, nothing to carry (a carried source stays carried: its copy goes
        too)."""
        graph.choose_copies(carry)
        for node in sorted(graph.skipped(), key=MoveNode.report_order):
            if not node.own:
                self.report.count(node.kind.kind, "leaving")
            if node.carried:  # an earlier run carried it: its copy may be gone already, never recreate it
                self.report.step("carried", node.kind.kind, node.name, reason=node.skipped)
                continue
            if carry and not node.own:  # copied like the others; the copies of those being deleted are then deleted
                self.report.step("carry", node.kind.kind, node.name, reason=node.skipped)
                continue
            self.report.skip(node.kind.kind, node.name, "not copied: %s" % node.skipped)
            self.report.step("skip", node.kind.kind, node.name, reason=node.skipped)

    def copy(self, graph):
        """The copies, level by level (an owner's copy before its dependents'), each recorded on its node (copy,
        owner_target); the nodes an earlier run carried first name their copies (MoveGraph.take_carried)."""
        copier = CopyEngine(self.client, self.report, self.hcp_namespace, self.direction, self.group_map,
                            force=self.params["force"], parallelism=self.parallelism, diff=self.diff,
                            keep_existing=self.params.get("keep_existing", False))
        graph.take_carried()
        for members in graph.levels(graph.copyable()):
            copier.copy_level(graph, members)

    def discard(self, graph):
        """Delete the sources without copying them (discard: the copies a failed attempt made, while the objects they
        were copied from are intact in the target group): first the marks that attempt left on the target objects whose
        deletion it carried (their controllers finish those deletions; a later attempt carries them afresh), then the
        sources, children first, with the delete phase's own rule (DeleteEngine: finalizers removed in the write that
        labels them, propagation Orphan, so nothing cascades into the target group)."""
        marked = sorted((item for item in graph.targets.items() if is_carried(item[1])), key=lambda item: item[0])
        parallel_map(lambda item: self._unmark(graph.kinds_by_key[item[0][0]], item[0][1]), marked, self.parallelism)
        DeleteEngine(self.client, self.report, self.hcp_namespace, self.parallelism).delete_sources(
            graph, list(graph.nodes.values()))

    def _unmark(self, kind, name):
        call_with_retries(lambda: self.client.patch(
            object_path(kind, self.hcp_namespace, name),
            {"metadata": {"annotations": {CARRIED_ANNOTATION: None, CARRIED_DELETION_ANNOTATION: None}}},
            what("unmark (the failed attempt carried its deletion)", kind, self.hcp_namespace, name)))
        self.report.step("unmark_carried", kind.kind, name, api_version=kind.target_api_version)

    def carry_deletions(self, graph):
        """Delete the copy of each source that is being deleted, with the source's propagation, so that its deletion
        goes on in the target group: the copy keeps its finalizers (a Machine's: drain, terminate) and the controllers
        of the target group finish what the source's had begun.

        Each carried source (being deleted, or taken along by one that is) is first marked with its copy's uid, and
        whether the copy is deleted here: a later run (the role's delete phase, a resumed run) would otherwise copy it
        again once the target's controllers have finished the deletion, and the drain and termination would run twice.
        A source gone before it could be marked (its deletion finished meanwhile) is noted gone on its node."""
        parallel_map(self._mark_carried, sorted(graph.to_mark(), key=MoveNode.report_order), self.parallelism)
        parallel_map(self._carry_deletion, sorted(graph.deleting(), key=MoveNode.report_order), self.parallelism)

    def _mark_carried(self, node):
        kind, name = node.kind, node.name
        copy_uid = ((node.copy or {}).get("metadata") or {}).get("uid") or "unknown"
        try:
            patched = call_with_retries(lambda: self.client.patch(
                object_path(kind, self.hcp_namespace, name, target=False),
                {"metadata": {"annotations": carried_mark(copy_uid, node.deleting)}},
                what("mark (its deletion carried to the copy)", kind, self.hcp_namespace, name, target=False)))
        except ApiError as exc:
            if not exc.is_not_found:
                raise
            node.gone = True  # its deletion finished in the source group since it was read: the copy still goes
            return
        if patched:  # the delete phase's preconditions need the new resourceVersion
            node.source = patched
        self.report.step("mark_carried", kind.kind, name, copy_uid=copy_uid, deletes_copy=node.deleting)

    def _carry_deletion(self, node):
        kind, name = node.kind, node.name
        finalizers = (node.source.get("metadata") or {}).get("finalizers") or ()
        policy = ("Foreground" if FOREGROUND_FINALIZER in finalizers
                  else ORPHAN_POLICY if DELETION_ORPHAN_FINALIZER in finalizers else "Background")
        if ((node.copy or {}).get("metadata") or {}).get("deletionTimestamp"):
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

    def verify(self, graph):
        """Every copy (but those being deleted: they go away once their controllers have finished) compared with its
        source after translation; refused (MigrationError) when any differs."""
        checked = [node for node in graph.copyable() if not node.deleting]
        live = self._live_copies(checked)
        owner_targets, orphaning = graph.owner_targets(), graph.orphaning()
        pairs = []
        for node in sorted(checked, key=MoveNode.report_order):
            refs, _dropped = remap_owner_references(node.source, owner_targets, graph.moved_set, orphaning)
            body, status = desired_target(node.source, node.kind, self.direction, self.group_map, refs)
            pairs.append(("%s %s/%s" % (node.kind.kind, self.hcp_namespace, node.name), body, status, live.get(node.uid)))
        failures = verify_copies(pairs)
        self.verified = {"checked": len(pairs), "failures": failures}
        if failures:
            raise MigrationError(failure_message(failures, len(pairs)))

    def _live_copies(self, nodes):
        """source uid -> its copy as the server holds it now (read back, not what it answered), or None; in check mode
        the dry runs' answers."""
        if self.client.dry_run:
            return dict((node.uid, node.copy) for node in nodes)
        kinds = sorted(dict((node.kind.key, node.kind) for node in nodes).values(), key=lambda kind: kind.key)
        lists = parallel_map(lambda kind: self._list(kind.target_group, kind.kind, kind.version, kind.plural),
                             kinds, self.parallelism)
        by_name = {(kind.key, object_name(item)): item for kind, items in zip(kinds, lists) for item in items}
        return dict((node.uid, by_name.get((node.kind.key, node.name))) for node in nodes)

    def delete(self, graph, carry):
        """Re-point the dependents at the copies, then delete the sources children first (DeleteEngine); refused while
        a copy differs from its source or, without carry, while a deletion is in flight."""
        self._refuse_unresolved_conflicts()
        if not carry:  # with carry, nothing was skipped: the copies go on with the deletions
            self._refuse_deletions_in_flight(graph)
        deleter = DeleteEngine(self.client, self.report, self.hcp_namespace, self.parallelism)
        deleter.repoint_dependents(graph, dependent_resources(graph.served, graph.moved, self.params.get("dependent_resources")))
        deleter.delete_sources(graph, graph.to_delete())

    def _refuse_unresolved_conflicts(self):
        unresolved = [conflict for conflict in self.report.conflicts if not conflict["overwritten"]]
        if unresolved:
            raise MigrationError(
                "not deleting any source: %d copies differ from their sources (%s); inspect the conflicts, then re-run "
                "with force: true to overwrite the copies from the sources, or fix the sources"
                % (len(unresolved), ", ".join("%s %s" % (c["kind"], c["name"]) for c in unresolved[:10])))

    def _refuse_deletions_in_flight(self, graph):
        """An object skipped because it is being deleted (or goes with an owner that is) and that still holds a
        finalizer has a deletion in flight: a controller drains its node, terminates its instance. Stripping the
        finalizer would complete the deletion without that work, and no controller would ever do it. The garbage
        collector's own finalizers (orphan, foregroundDeletion) it removes itself; a source this module's earlier
        delete phase deleted (its copy complete) is its own deletion, not one in flight."""
        held = sorted((node.kind.kind, node.name, tuple(node.controller_finalizers())) for node in graph.skipped()
                      if node.controller_finalizers() and not is_marked_for_deletion(node.source) and not node.carried)
        if held:
            raise MigrationError(
                "not deleting any source: a deletion is in flight - %d object%s not copied (being deleted, or going "
                "with an owner that is) still hold%s finalizers: %s; removing them would end the deletion without "
                "the work they stand for (a node drained, an instance terminated); let the controllers finish it "
                "(the objects go away), then re-run"
                % (len(held), "" if len(held) == 1 else "s", "s" if len(held) == 1 else "",
                   ", ".join("%s %s/%s [%s]" % (kind, self.hcp_namespace, name, ", ".join(finalizers))
                             for kind, name, finalizers in held[:10])))


class ObjectMigrateModule(MigrateService, ModuleService):
    """capi_object_migrate's service (k8s/runner.py): one MigrateService run, its result migrate_result."""

    MINIMUMS = PARALLELISM_MINIMUM
    # a typo in the namespace must not read as "nothing to migrate"
    NAMESPACES = (("hcp_namespace", None),)
    PARALLELISM_OPTION, CONNECTIONS = "parallelism", 2

    @classmethod
    def from_run(cls, run):
        group_map = GroupMap(run.params.get("extra_groups") or {})
        return cls(cls.connect(run), run.params, group_map, diff=run.diff)

    def run(self):
        self.warnings = MigrateService.run(self).warnings
        return migrate_result(self)

    def partial(self):
        return dict(migrate_result(self), changed=bool(self.report.changed))


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
