# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The object move as one graph (pure: no I/O): a MoveNode per source object, the MoveGraph of them all.

A node carries everything one run learns about its source object: the object as read, its kind (a MovedKind), the
object of its name in the target group as read, the copy this run wrote or read, where owner references to it are
re-pointed, and the flags the steps set (why it is not copied, whether it is copied, whether its copy is deleted
with it, ...). The graph holds the nodes in read order with the facts of the whole run (the moved kinds, the targets
by (kind key, name)) and orders them by ownership (graph.py's OwnershipGraph: owners first; the delete phase goes
the other way). Every step of MigrateService (move/service.py) and the engines (copy.py, delete.py) take the graph,
never parallel maps keyed by uid (issue 58).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.move.graph import (
    DELETION_ORPHAN_FINALIZER,
    OwnershipGraph,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.plan import (
    GC_FINALIZERS,
    carried_copy_uid,
    carries_deletion,
    deleted_by_this_module,
    is_carried,
)


def _metadata(obj):
    return (obj or {}).get("metadata") or {}


class MoveNode(object):
    """One source object of the move and what the run has learned about it so far."""

    __slots__ = ("uid", "source", "kind", "target", "copy", "owner_target", "skipped", "own", "copyable", "orphaning",
                 "deleting", "gone")

    def __init__(self, source, kind, target):
        self.uid = source["metadata"]["uid"]
        self.source = source  # as read; the answer to this run's carried mark replaces it (the delete needs its resourceVersion)
        self.kind = kind  # its MovedKind
        self.target = target  # the object of its name in the target group as read, or None
        self.copy = None  # its copy as this run wrote it (or found it), or None
        self.owner_target = None  # (apiVersion, uid) of its copy: what owner references to it are re-pointed at
        self.skipped = None  # why the ownership graph does not copy it (being deleted, or taken along), or None
        self.own = False  # skipped: deleted by this module's earlier delete phase, not a deletion in flight
        self.copyable = False  # copied by this run (the copy step's choice, before any mark)
        self.orphaning = False  # skipped, and orphans its dependents: their copies drop the reference to it
        self.deleting = False  # its copy is deleted by this run (carry_deletions)
        self.gone = False  # its deletion finished in the source group before it could be marked

    @property
    def name(self):
        return _metadata(self.source).get("name")

    @property
    def carried(self):
        """An earlier run (or this one, once marked) carried its deletion: its copy is the target group's now."""
        return is_carried(self.source)

    def report_order(self):
        """The order of the report's entries and of each step's requests: kind, then name."""
        return (self.kind.kind, self.name)

    def controller_finalizers(self):
        """Its finalizers but the garbage collector's own: a controller's work (a drain, a termination) they hold."""
        return [name for name in _metadata(self.source).get("finalizers") or () if name not in GC_FINALIZERS]

    def only_the_gc_holds(self):
        """Being deleted, held by none but the garbage collector's finalizers: it finishes without anyone's help."""
        return bool(_metadata(self.source).get("deletionTimestamp")) and not self.controller_finalizers()


class MoveGraph(object):
    """Every source object of one run as a MoveNode (nodes: uid -> node, in read order) and the run's shared facts.

    moved: the moved kinds ([MovedKind]); sources and targets: {kind key: [objects as listed]} (targets only of the
    kinds read); served: discovery's answer the kinds came from (the delete phase picks the dependents from it).
    """

    def __init__(self, moved, sources, targets, served):
        self.moved = moved
        self.served = served
        self.kinds_by_key = dict((kind.key, kind) for kind in moved)
        self.moved_set = set((kind.source_group, kind.kind) for kind in moved)
        self.targets = {}  # (kind key, name) -> target object
        for key, items in targets.items():
            for item in items:
                self.targets[(key, _metadata(item).get("name"))] = item
        self.nodes = {}
        for key, items in sources.items():
            for item in items:
                kind = self.kinds_by_key[key]
                self.nodes[item["metadata"]["uid"]] = MoveNode(item, kind, self.targets.get((key, _metadata(item).get("name"))))
        self.ownership = None

    def link_owners(self):
        """Orders the nodes by ownership (OwnershipGraph, which refuses a cycle) and notes why each skipped one is."""
        self.ownership = OwnershipGraph([node.source for node in self.nodes.values()])
        for uid, reason in self.ownership.skipped.items():
            self.nodes[uid].skipped = reason

    def levels(self, nodes):
        """Lists of nodes, owners first: every owner of a member sits in an earlier list."""
        return [[self.nodes[uid] for uid in members] for members in self.ownership.levels([node.uid for node in nodes])]

    def skipped(self):
        """The nodes the ownership graph does not copy, in its order."""
        return [self.nodes[uid] for uid in self.ownership.skipped]

    def copyable(self):
        return [node for node in self.nodes.values() if node.copyable]

    def choose_copies(self, carry):
        """Which nodes are copied: those not skipped, with carry also those skipped but this module's own deletions;
        never a carried one (its copy may be gone already). Sets own, copyable, orphaning and deleting (those copied
        while someone else deletes them: their copies are deleted next)."""
        for node in self.skipped():
            node.own = not node.carried and deleted_by_this_module(node.source, node.target)
        for node in self.nodes.values():
            node.copyable = (node.skipped is None or carry and not node.own) and not node.carried
            node.orphaning = node.skipped is not None and DELETION_ORPHAN_FINALIZER in (
                _metadata(node.source).get("finalizers") or ())
            node.deleting = node.copyable and bool(_metadata(node.source).get("deletionTimestamp"))

    def take_carried(self):
        """The nodes an earlier run carried: not copied again, but their dependents not yet carried (a run stopped
        between two marks) still name the copy as their owner; a copy whose deletion was carried, still there, is
        taken as this run's copy and deleted (deleting)."""
        for node in self.nodes.values():
            copy_uid = carried_copy_uid(node.source)
            if copy_uid is None:
                continue
            node.owner_target = (node.kind.target_api_version, copy_uid)
            if node.target is not None and node.target["metadata"].get("uid") == copy_uid and carries_deletion(node.source):
                node.copy = node.target
                node.deleting = True

    def owner_targets(self):
        """source uid -> (apiVersion, uid) of its copy, for every node with one so far."""
        return dict((uid, node.owner_target) for uid, node in self.nodes.items() if node.owner_target is not None)

    def orphaning(self):
        return set(uid for uid, node in self.nodes.items() if node.orphaning)

    def deleting(self):
        """The nodes whose copies this run deletes: the copied ones being deleted, then those an earlier run carried."""
        copied = [node for node in self.nodes.values() if node.deleting and node.copyable]
        return copied + [node for node in self.nodes.values() if node.deleting and not node.copyable]

    def to_mark(self):
        """The skipped nodes copied by this run and not carried yet: each is marked with its copy's uid."""
        return [node for node in self.skipped() if node.copy is not None and not node.carried]

    def to_delete(self):
        """The sources the delete phase deletes: the copied ones, and the carried ones (their copies are the target
        group's now) but those whose deletion the garbage collector alone holds now (this module's own, an earlier
        delete phase's); none gone meanwhile."""
        return [node for node in self.nodes.values() if not node.gone and (
            node.copyable or node.carried and not node.only_the_gc_holds())]
