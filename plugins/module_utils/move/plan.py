# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What capi_object_migrate writes, decided without I/O (pure; inputs are never mutated).

* ``desired_target``: the copy of one source object - groups translated by the translation core
  (translate.groups.translate_object), server-set metadata stripped, ownerReferences re-pointed at the owners'
  copies (new apiVersion and uid, controller/blockOwnerDeletion kept), provenance annotations added.
* ``decide``: what an existing target needs (nothing, its status, its ownerReferences, or - when it differs
  from its source - a report, or an overwrite with force).
* ``canonical``: the comparable form used by decide and by verify.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    CARRIED_ANNOTATION,
    CARRIED_DELETION_ANNOTATION,
    DELETE_LABEL,
    FINALIZERS_ANNOTATION,
    SOURCE_UID_ANNOTATION,
    SOURCE_VERSION_ANNOTATION,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.graph import DELETION_ORPHAN_FINALIZER
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.diff import diff_objects
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import copy_json, translate_object
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe_object

DELETE_LABEL_VALUE = "true"
MIGRATION_ANNOTATIONS = (SOURCE_UID_ANNOTATION, SOURCE_VERSION_ANNOTATION, FINALIZERS_ANNOTATION, CARRIED_ANNOTATION,
                         CARRIED_DELETION_ANNOTATION)
SERVER_SET_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
                       "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink")
GC_FINALIZERS = ("orphan", "foregroundDeletion")
DIFF_LIMIT = 10

# decide() outcomes
IN_SYNC = "in_sync"
FIX = "fix"
DIFFERS = "differs"


class MigrationPlanError(PrivateCapiError, ValueError):
    """Input the plan cannot handle; the message names the object and what to do."""


class MovedKind(object):
    """One resource that moves: where it is read (source) and written (target), in the same version."""

    __slots__ = ("kind", "plural", "version", "source_group", "target_group", "source_status", "target_status")

    def __init__(self, kind, plural, version, source_group, target_group, source_status=True, target_status=True):
        self.kind = kind
        self.plural = plural
        self.version = version
        self.source_group = source_group
        self.target_group = target_group
        self.source_status = source_status
        self.target_status = target_status

    @property
    def source_api_version(self):
        return "%s/%s" % (self.source_group, self.version)

    @property
    def target_api_version(self):
        return "%s/%s" % (self.target_group, self.version)

    @property
    def key(self):
        """'plural.group' of the source resource (unique per moved resource)."""
        return "%s.%s" % (self.plural, self.source_group)

    def as_dict(self):
        return {"kind": self.kind, "resource": self.plural, "version": self.version,
                "source_group": self.source_group, "target_group": self.target_group,
                "status_subresource": self.target_status}

    def __repr__(self):
        return "MovedKind(%s %s -> %s)" % (self.kind, self.source_api_version, self.target_api_version)


def group_of(api_version):
    return api_version.rpartition("/")[0] if isinstance(api_version, str) and "/" in api_version else ""


def original_finalizers(source):
    """The source's finalizers, as they were before the delete phase removed them (kept in an annotation)."""
    metadata = source.get("metadata") or {}
    recorded = (metadata.get("annotations") or {}).get(FINALIZERS_ANNOTATION)
    if recorded is not None and (metadata.get("labels") or {}).get(DELETE_LABEL) == DELETE_LABEL_VALUE:
        try:
            finalizers = json.loads(recorded)
        except ValueError:
            raise MigrationPlanError("%s: annotation %s is not JSON (%r); restore it or remove the label %s"
                                     % (describe_object(source), FINALIZERS_ANNOTATION, recorded, DELETE_LABEL))
        if isinstance(finalizers, list):
            return finalizers
    return list(metadata.get("finalizers") or ())


def carried_copy_uid(source):
    """The uid of the copy an earlier run carried this source's deletion (or its owner's) to, or None: that copy is the
    target group's now, gone once its controllers finished, and never to be made again."""
    return ((source.get("metadata") or {}).get("annotations") or {}).get(CARRIED_ANNOTATION) or None


def is_carried(source):
    return carried_copy_uid(source) is not None


def carried_mark(copy_uid, deletes_copy):
    """The annotations that mark a carried source (see carried_copy_uid and carries_deletion)."""
    annotations = {CARRIED_ANNOTATION: copy_uid}
    if deletes_copy:
        annotations[CARRIED_DELETION_ANNOTATION] = "true"
    return annotations


def carries_deletion(source):
    """A carried source that was itself being deleted when it was carried: this module deletes its copy."""
    return is_carried(source) and ((source.get("metadata") or {}).get("annotations") or {}).get(
        CARRIED_DELETION_ANNOTATION) == "true"


def is_marked_for_deletion(source):
    """A previous delete phase approved this source (its copy was complete) and removed its finalizers."""
    return ((source.get("metadata") or {}).get("labels") or {}).get(DELETE_LABEL) == DELETE_LABEL_VALUE


def deleted_by_this_module(source, target):
    """A source a previous delete phase of this module deleted after copying it, found still going by a re-run: not a
    deletion in flight (nothing to carry across, its copy stays). Either labelled for deletion (it had finalizers,
    removed then), or deleted with Orphan propagation holding no finalizer but the garbage collector's own while it
    orphans the dependents, and target (the object of the same name in the target group, or None) copied from it."""
    if is_marked_for_deletion(source):
        return True
    metadata = source.get("metadata") or {}
    return bool(metadata.get("deletionTimestamp")) and set(metadata.get("finalizers") or ()) <= {DELETION_ORPHAN_FINALIZER} \
        and target is not None and copied_from(source, target)


def copied_from(source, target):
    """target's provenance names source: its uid, or its controller owner's (propagated by a controller, see decide)."""
    linked = ((target.get("metadata") or {}).get("annotations") or {}).get(SOURCE_UID_ANNOTATION)
    return linked is not None and linked in ((source.get("metadata") or {}).get("uid"), _controller_uid(source))


def remap_owner_references(source, owner_targets, moved_kinds, skipped_orphaning):
    """(refs for the copy, dropped [(ref, why)]).

    owner_targets: source uid -> (target apiVersion, target uid) of copied owners.
    moved_kinds: {(source group, kind)} that this run moves; a reference to a moved kind whose uid is not
    among the sources is dangling (the garbage collector will act on it) and is dropped from the copy; a
    reference to anything else (kinds not moved, other groups) is kept exactly as it is.
    skipped_orphaning: uids of owners that are being deleted but orphan their dependents (refs dropped).
    """
    refs = []
    dropped = []
    for ref in (source.get("metadata") or {}).get("ownerReferences") or ():
        uid = ref.get("uid")
        if uid in owner_targets:
            api_version, target_uid = owner_targets[uid]
            remapped = copy_json(ref)
            remapped["apiVersion"] = api_version
            remapped["uid"] = target_uid
            refs.append(remapped)
        elif uid in skipped_orphaning:
            dropped.append((ref, "the owner is being deleted and orphans its dependents"))
        elif (group_of(ref.get("apiVersion")), ref.get("kind")) in moved_kinds:
            dropped.append((ref, "no such owner among the source objects (dangling reference)"))
        else:
            refs.append(copy_json(ref))
    return refs, dropped


def desired_target(source, moved_kind, direction, group_map, owner_refs):
    """(body to create without status, status to write through /status or None).

    owner_refs: the copy's ownerReferences (from remap_owner_references). The status is split off only
    when the target serves the status subresource (a create would drop it); otherwise it stays in the body.
    """
    translated = translate_object(source, direction, group_map)
    translated["apiVersion"] = moved_kind.target_api_version
    metadata = translated.setdefault("metadata", {})
    for field in SERVER_SET_METADATA:
        metadata.pop(field, None)
    source_metadata = source.get("metadata") or {}
    annotations = dict(metadata.get("annotations") or {})
    for key in MIGRATION_ANNOTATIONS:  # the source's own marks are never copied; the copy gets its provenance
        annotations.pop(key, None)
    annotations[SOURCE_UID_ANNOTATION] = source_metadata.get("uid")
    annotations[SOURCE_VERSION_ANNOTATION] = source_metadata.get("resourceVersion")
    metadata["annotations"] = annotations
    labels = dict(metadata.get("labels") or {})
    labels.pop(DELETE_LABEL, None)
    if labels:
        metadata["labels"] = labels
    else:
        metadata.pop("labels", None)
    finalizers = [name for name in original_finalizers(source) if name not in GC_FINALIZERS]
    if finalizers:
        metadata["finalizers"] = finalizers
    else:
        metadata.pop("finalizers", None)
    if owner_refs:
        metadata["ownerReferences"] = copy_json(owner_refs)
    else:
        metadata.pop("ownerReferences", None)
    status = None
    if moved_kind.target_status:
        status = translated.pop("status", None)
    return translated, status


def canonical(obj, keep_status=True, keep_owner_refs=True):
    """A comparable copy: server-set metadata, the migration's own annotations/label and empty maps removed."""
    result = copy_json(obj)
    metadata = result.get("metadata") or {}
    for field in SERVER_SET_METADATA + ("namespace",):
        metadata.pop(field, None)
    for field, drop in (("annotations", MIGRATION_ANNOTATIONS), ("labels", (DELETE_LABEL,))):
        values = metadata.get(field)
        if values is not None:
            values = {key: value for key, value in values.items() if key not in drop}
            if values:
                metadata[field] = values
            else:
                metadata.pop(field)
    for field in ("finalizers", "ownerReferences"):
        if not metadata.get(field):
            metadata.pop(field, None)
    if not keep_owner_refs:
        metadata.pop("ownerReferences", None)
    if not keep_status or not result.get("status"):
        result.pop("status", None)
    return result


class Decision(object):
    """What an existing target needs: outcome IN_SYNC, FIX (owners and/or status) or DIFFERS (with differences)."""

    __slots__ = ("outcome", "fix_owners", "fix_status", "differences", "reason")

    def __init__(self, outcome, fix_owners=False, fix_status=False, differences=(), reason=""):
        self.outcome = outcome
        self.fix_owners = fix_owners
        self.fix_status = fix_status
        self.differences = list(differences)
        self.reason = reason


def _owner_refs(obj):
    return (obj.get("metadata") or {}).get("ownerReferences") or []


def _controller_uid(obj):
    return next((ref.get("uid") for ref in _owner_refs(obj) if ref.get("controller")), None)


def decide(source, target, desired_body, desired_status):
    """Judge an existing target (found by name) against its source's desired copy.

    * linked to the source's controller owner instead (the owner's annotations propagated by a controller, as CAPI's
      MachineDeployment controller does to MachineSets) -> adopted by the new controllers: like an unchanged source;
    * not linked (no or another source uid annotation) -> DIFFERS: someone else's object;
    * source unchanged since it was copied (recorded resourceVersion) or already approved for deletion ->
      the target may have moved on (new controllers): only a missing status or stale ownerReferences are
      fixed;
    * source changed since -> compared field by field; equal -> IN_SYNC/FIX, else DIFFERS.
    """
    source_metadata = source.get("metadata") or {}
    target_annotations = (target.get("metadata") or {}).get("annotations") or {}
    linked_uid = target_annotations.get(SOURCE_UID_ANNOTATION)
    fix_owners = _owner_refs(target) != _owner_refs(desired_body)
    if linked_uid is not None and linked_uid != source_metadata.get("uid") and linked_uid == _controller_uid(source):
        # the copy carries its controller owner's provenance: a controller copied the owner's annotations onto it, as
        # CAPI's MachineDeployment controller does to its MachineSets (MachineSetAnnotationsFromMachineDeployment).
        # Only the new controllers, working on the copies, do that: the copy is theirs now and has moved on.
        fix_status = bool(desired_status) and not target.get("status")
        return Decision(FIX if fix_owners or fix_status else IN_SYNC, fix_owners, fix_status,
                        reason="adopted by the new controllers (its owner's provenance was propagated to it)")
    if linked_uid != source_metadata.get("uid"):
        found = "annotation %s=%s" % (SOURCE_UID_ANNOTATION, linked_uid) if linked_uid else "no %s annotation" % SOURCE_UID_ANNOTATION
        differences = diff_objects(canonical(target), canonical(dict(desired_body, status=desired_status)), DIFF_LIMIT)
        return Decision(DIFFERS, differences=differences,
                        reason="the target exists but was not copied from this source (%s, source uid %s)"
                        % (found, source_metadata.get("uid")))
    fix_status = bool(desired_status) and not target.get("status")
    recorded_version = target_annotations.get(SOURCE_VERSION_ANNOTATION)
    if recorded_version == source_metadata.get("resourceVersion") or is_marked_for_deletion(source):
        outcome = FIX if fix_owners or fix_status else IN_SYNC
        return Decision(outcome, fix_owners, fix_status, reason="source unchanged since it was copied")
    differences = diff_objects(canonical(target, keep_status=False, keep_owner_refs=False),
                               canonical(desired_body, keep_status=False, keep_owner_refs=False), DIFF_LIMIT)
    if desired_status is not None and target.get("status") and target.get("status") != desired_status:
        differences += diff_objects({"status": target.get("status")}, {"status": desired_status}, DIFF_LIMIT)
    if differences:
        return Decision(DIFFERS, differences=differences[:DIFF_LIMIT],
                        reason="the source changed after it was copied (resourceVersion %s, copied at %s)"
                        % (source_metadata.get("resourceVersion"), recorded_version))
    outcome = FIX if fix_owners or fix_status else IN_SYNC
    return Decision(outcome, fix_owners, fix_status, reason="source changed but its copy is equal")


def compare_copy(source_desired_body, source_desired_status, target):
    """Verify: every difference between a target and the desired copy of its source (status included)."""
    desired = dict(source_desired_body)
    if source_desired_status is not None:
        desired["status"] = source_desired_status
    return diff_objects(canonical(desired), canonical(target), DIFF_LIMIT)


def marked_for_deletion(source):
    """The source's metadata with finalizers removed, the delete label set and the finalizers recorded.

    Returned as a JSON merge patch body guarded by the source's resourceVersion.
    """
    metadata = source.get("metadata") or {}
    return {"metadata": {
        "resourceVersion": metadata.get("resourceVersion"),
        "finalizers": None,
        "labels": {DELETE_LABEL: DELETE_LABEL_VALUE},
        "annotations": {FINALIZERS_ANNOTATION: json.dumps(original_finalizers(source))},
    }}


def unmarked_for_deletion(obj):
    """obj as it was before marked_for_deletion (its finalizers back, the delete label and the record removed): an
    original the delete phase marked but did not delete, restored by the rescue. A new object; obj is not mutated."""
    restored = copy_json(obj)
    metadata = restored.setdefault("metadata", {})
    finalizers = original_finalizers(obj)
    if finalizers:
        metadata["finalizers"] = finalizers
    else:
        metadata.pop("finalizers", None)
    for field, key in (("labels", DELETE_LABEL), ("annotations", FINALIZERS_ANNOTATION)):
        values = metadata.get(field) or {}
        values.pop(key, None)
        if field in metadata and not values:
            del metadata[field]
    return restored


def repointed_owner_references(dependent, owner_targets):
    """A non-moved dependent's ownerReferences with refs to moved sources re-pointed at their copies, or None."""
    refs = _owner_refs(dependent)
    changed = False
    result = []
    for ref in refs:
        if ref.get("uid") in owner_targets:
            api_version, target_uid = owner_targets[ref["uid"]]
            remapped = copy_json(ref)
            remapped["apiVersion"] = api_version
            remapped["uid"] = target_uid
            result.append(remapped)
            changed = True
        else:
            result.append(copy_json(ref))
    return result if changed else None
