# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The ownership graph of the objects capi_object_migrate moves (pure: no I/O, inputs never mutated).

Owners are found by ownerReferences[].uid, exactly as the garbage collector matches them. The graph gives
the copy order (owners first, in levels whose members can be written in parallel), the delete order
(the reverse) and the objects that must not be copied because they, or an owner that takes them along,
are already being deleted.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe_object

DELETION_ORPHAN_FINALIZER = "orphan"


class OwnershipCycleError(PrivateCapiError, ValueError):
    """ownerReferences form a cycle; no owners-first order exists."""


def _uid(obj):
    return (obj.get("metadata") or {}).get("uid")


def sort_key(obj):
    """Deterministic order inside a level: kind, then name."""
    metadata = obj.get("metadata") or {}
    return (obj.get("kind") or "", metadata.get("name") or "")


class OwnershipGraph(object):
    """Objects keyed by uid, their in-set owners, levels (0 = no in-set owner) and the skip set.

    objects: the source objects (each with metadata.uid). Owner references to uids outside the set are
    ignored here (the plan decides what to do with them).
    """

    def __init__(self, objects):
        self.by_uid = {}
        for obj in objects:
            uid = _uid(obj)
            if not uid:
                raise ValueError("%s has no metadata.uid; pass objects as read from the API server"
                                 % describe_object(obj))
            self.by_uid[uid] = obj
        self.owners = {}
        for uid, obj in self.by_uid.items():
            refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
            self.owners[uid] = sorted({ref.get("uid") for ref in refs if ref.get("uid") in self.by_uid and ref.get("uid") != uid})
        self.level = self._levels()
        self.skipped = self._skipped()

    def _levels(self):
        level = {}
        visiting = set()

        def visit(uid, path):
            if uid in level:
                return level[uid]
            if uid in visiting:
                cycle = path[path.index(uid):] + [uid]
                raise OwnershipCycleError(
                    "ownerReferences form a cycle: %s; no owners-first order exists, fix the ownerReferences of these objects"
                    % " -> ".join(describe_object(self.by_uid[member]) for member in cycle)
                )
            visiting.add(uid)
            owners = self.owners[uid]
            result = 0 if not owners else 1 + max(visit(owner, path + [uid]) for owner in owners)
            visiting.discard(uid)
            level[uid] = result
            return result

        for uid in sorted(self.by_uid):
            visit(uid, [])
        return level

    def levels(self, uids=None):
        """Lists of uids, owners first; every owner of a member sits in an earlier list."""
        chosen = self.by_uid if uids is None else uids
        grouped = {}
        for uid in chosen:
            grouped.setdefault(self.level[uid], []).append(uid)
        return [sorted(grouped[number], key=lambda uid: sort_key(self.by_uid[uid])) for number in sorted(grouped)]

    def _skipped(self):
        """uid -> reason for objects not copied: being deleted, or dependents a deleting owner takes with it."""
        skipped = {}
        for members in self.levels():
            for uid in members:
                obj = self.by_uid[uid]
                metadata = obj.get("metadata") or {}
                if metadata.get("deletionTimestamp"):
                    skipped[uid] = "being deleted (deletionTimestamp %s)" % metadata["deletionTimestamp"]
                    continue
                for owner_uid in self.owners[uid]:
                    if owner_uid not in skipped:
                        continue
                    owner = self.by_uid[owner_uid]
                    if DELETION_ORPHAN_FINALIZER in ((owner.get("metadata") or {}).get("finalizers") or ()):
                        continue  # its owner orphans it: it survives the owner's deletion
                    skipped[uid] = "its owner %s is being deleted and takes it along" % describe_object(owner)
                    break
        return skipped

    def dropped_owner_uids(self, uid):
        """In-set owners of uid that are skipped but orphan their dependents (the copy drops those refs)."""
        return [owner for owner in self.owners[uid] if owner in self.skipped]


def leaving(objects):
    """uid -> reason for the objects on their way out: being deleted, or taken along by an owner that is.

    What a count of objects leaves out when it compares two moments across a deletion in flight (capi_health,
    capi_verify, the rollback's verify): those objects are gone once their controllers have finished.
    """
    return OwnershipGraph(objects).skipped
