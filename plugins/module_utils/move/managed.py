# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""managedFields of a copy: the source's entries carried over, so that field ownership survives the move (pure).

CAPI's controllers own fields by server-side apply (``capi-machineset``, ``capi-machineset-metadata``, topology
managers) and rely on it: a field a manager no longer applies is removed only when that manager owns it. A create
makes its caller own every field, so the copy engine writes the source's entries onto the copy after creating it:

* each entry's ``apiVersion`` in the copy's group (the core's translate_api_version);
* ``k:{"uid":...}`` keys of ``f:ownerReferences`` on the copy's owner uids (the copy's references are remapped);
* plus the collection's own entries (``FIELD_MANAGER``) for what only the migration set (its provenance
  annotations), computed as the fields of its entries that no carried entry owns.

An update that changes no field and sets managedFields explicitly keeps them as given (kube-apiserver's field
manager uses the request's managedFields when present), so this is one PUT guarded by resourceVersion.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    copy_json,
    translate_api_version,
)

_OWNER_REFERENCES = "f:ownerReferences"
_SELF = "."


def field_paths(fields, prefix=()):
    """The set of paths (tuples of fieldsV1 keys) a fieldsV1 tree owns; a node owned itself ends in '.'."""
    paths = set()
    for key, child in (fields or {}).items():
        if key == _SELF:
            paths.add(prefix + (_SELF,))
        elif child:
            paths |= field_paths(child, prefix + (key,))
        else:
            paths.add(prefix + (key,))
    return paths


def fields_of(paths):
    """The fieldsV1 tree of a set of paths (field_paths' inverse)."""
    tree = {}
    for path in sorted(paths):
        node = tree
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node.setdefault(path[-1], {})
    return tree


def _remap_owner_uids(fields, uid_map):
    owners = (fields or {}).get("f:metadata", {}).get(_OWNER_REFERENCES)
    if not isinstance(owners, dict):
        return fields
    remapped = {}
    for key, child in owners.items():
        if key.startswith("k:"):
            try:
                item_key = json.loads(key[2:])
            except ValueError:
                item_key = None
            if isinstance(item_key, dict) and item_key.get("uid") in uid_map:
                key = "k:" + json.dumps(dict(item_key, uid=uid_map[item_key["uid"]]), separators=(",", ":"))
        remapped[key] = child
    fields = copy_json(fields)
    fields["f:metadata"][_OWNER_REFERENCES] = remapped
    return fields


def _entry_key(entry):
    return entry.get("manager"), entry.get("operation"), entry.get("subresource") or ""


def carried_entries(source, direction, group_map, uid_map):
    """The source's managedFields as the copy carries them (apiVersions in the copy's group, owner uids remapped)."""
    carried = []
    for entry in (source.get("metadata") or {}).get("managedFields") or ():
        if not isinstance(entry, dict):
            continue
        entry = copy_json(entry)
        if isinstance(entry.get("apiVersion"), str):
            entry["apiVersion"] = translate_api_version(entry["apiVersion"], direction, group_map)
        if isinstance(entry.get("fieldsV1"), dict):
            entry["fieldsV1"] = _remap_owner_uids(entry["fieldsV1"], uid_map)
        carried.append(entry)
    return carried


def needs_carry(target, carried, own_manager):
    """True while the copy holds none of the carried entries of other managers (a create, or an interrupted run
    that created but did not carry); never once they are there (later writers' ownership is never rolled back).

    Only a source some manager server-side applied needs it: field removal by omission and apply conflicts follow
    Apply ownership, and an object only Update managers wrote behaves the same owned by the collection (it saves a
    write per object: CAPI applies Machines, MachineSets and infrastructure machines, not what HyperShift writes)."""
    others = [entry for entry in carried if entry.get("manager") != own_manager]
    if not any(entry.get("operation") == "Apply" for entry in others):
        return False
    wanted = {_entry_key(entry) for entry in others}
    present = {_entry_key(entry) for entry in (target.get("metadata") or {}).get("managedFields") or ()}
    return not wanted & present


def with_carried(target, carried, own_manager):
    """target's managedFields: the carried entries, plus its own manager's entries reduced to the fields that no
    carried entry owns (what the migration alone set)."""
    owned = set()
    for entry in carried:
        owned |= field_paths(entry.get("fieldsV1"))
    result = [copy_json(entry) for entry in carried]
    carried_keys = {_entry_key(entry) for entry in carried}
    for entry in (target.get("metadata") or {}).get("managedFields") or ():
        if entry.get("manager") != own_manager or _entry_key(entry) in carried_keys:
            continue
        remaining = field_paths(entry.get("fieldsV1")) - owned
        if remaining:
            result.append(dict(copy_json(entry), fieldsV1=fields_of(remaining)))
    return result
