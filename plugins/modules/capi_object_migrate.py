#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: capi_object_migrate
short_description: Move the CAPI objects of one hosted control plane namespace between the standard and private groups
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Copies every Cluster API (CAPI) object of one hosted control plane (HCP) namespace from the standard groups
    (C(cluster.x-k8s.io), C(<x>.cluster.x-k8s.io)) to the private ones (C(cluster.hypershift.openshift.io),
    C(<x>.cluster.hypershift.openshift.io)), or back with O(direction=to_standard) for a rollback, and with
    O(delete_source=true) deletes the source objects afterwards.
  - B(What moves) is read from API discovery, never from a list in the code - every namespaced resource served in a
    group the translation maps, in the source group's preferred version, to the same resource and version of the
    translated group (the private CRDs must be installed, see M(hypershift.private_capi.private_crd_render)).
    O(kinds) narrows the set. Groups outside the suffix pattern, such as the Agent provider's
    C(capi-provider.agent-install.openshift.io), move only when named in O(extra_groups).
  - B(Owners first.) The objects form a graph through C(metadata.ownerReferences) (matched by uid, as the garbage
    collector does). Copies are created level by level, so every copied ownerReference carries the new owner's
    apiVersion and new uid (a stale uid would make the garbage collector delete the copy); C(controller) and
    C(blockOwnerDeletion) are kept. References to owners that are not moved stay as they are.
  - B(Content.) The copy is the source translated by the collection's translation core - apiVersion,
    ownerReferences, and every object reference naming a mapped group (C(infrastructureRef), C(bootstrap.configRef),
    template references, v1beta2 C(apiGroup) references). C(spec.controlPlaneRef) to the HostedControlPlane, label
    and annotation keys and values, finalizers, MachineDeployment and MachineSet templates and their
    C(machine-template-hash) labels stay exactly as they were, so no controller sees a template change and rolls
    nodes. Server-set metadata (uid, resourceVersion, creationTimestamp, generation) is not copied; the status is
    written through the status subresource after the create, unchanged, including failure fields.
  - B(managedFields.) When some manager server-side applied the source, the copy gets the source's managedFields
    (one more write that changes no field), their apiVersions in the copy's group and their owner keys re-pointed,
    so CAPI's controllers still own what they applied (and can remove it); the rollback carries them back. A source
    only Update managers wrote stays owned by the collection's field manager.
  - B(Provenance and resuming.) Every copy carries the annotations C(hypershift.openshift.io/capi-migration-source-uid)
    and C(...-source-resource-version). A run matches existing copies by name and that uid, so a re-run after an
    interruption at any point creates only what is missing and completes what is incomplete (a missing status,
    stale ownerReferences). A copy whose source is unchanged since it was copied is left alone even when it has
    moved on (new controllers own it). A target that exists but was not copied from this source, or whose source
    changed after the copy, is reported in RV(conflicts) and overwritten only with O(force=true).
  - B(Objects already being deleted) (C(deletionTimestamp) set) are not copied, nor are dependents that their deletion
    takes along; they are listed in RV(skipped). O(delete_source=true) refuses to delete any source while one of
    them still holds a finalizer - its deletion is in flight (for a Machine, draining its node and terminating its
    instance), and the module never removes a finalizer from an object it did not copy; let the controllers finish
    such deletions (the objects go away), then re-run. Skipped objects without finalizers go as they would have.
  - B(Deleting the sources) (O(delete_source=true), only while the controllers of the source groups are scaled to
    zero) happens after every copy is complete and none conflicts. First every object outside the moved kinds whose
    ownerReferences name a moved source (the HostedControlPlane owned by the CAPI Cluster, Secrets, objects of
    groups that are not mapped) is re-pointed at the copy. Then the sources are deleted children first, always
    with C(propagationPolicy=Orphan), so the deletion cannot cascade into anything - a source with finalizers has
    them removed in one write that labels it C(hypershift.openshift.io/capi-migration-delete=true) (and records
    them in C(hypershift.openshift.io/capi-migration-finalizers)), and each kind of a level is then deleted with one
    collection DELETE selected by that label; a source without finalizers is deleted with uid and resourceVersion
    preconditions.
  - B(Concurrency.) Updates are guarded by resourceVersion; a conflict (HTTP 409) is read again and judged again (at
    most 5 times); 429, 5xx and lost connections are retried with exponential backoff (6 attempts); any other error
    stops the run, naming the object. Requests go out on up to O(parallelism) connections where the order allows
    (all objects of one ownership level at once). With O(require_paused=true) the module refuses to run while a
    source Cluster is not paused.
  - Performance on the collection's local API server (2 cores), 220 objects (100 Machines) - 3.1 API calls per
    object including the deletion, about 1 second; see the collection's docs/capi_object_migrate.md.
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.write
  - hypershift.private_capi.options.extra_groups
  - hypershift.private_capi.options.parallelism
  - hypershift.private_capi.hostedcluster.hcp_namespace_required
options:
  direction:
    description:
      - V(to_private) copies from the standard groups to the private ones; V(to_standard) copies back (rollback).
    type: str
    choices: [to_private, to_standard]
    default: to_private
  delete_source:
    description:
      - After copying, re-point dependents and delete the source objects (see the description).
      - Only while the controllers that serve the source groups are scaled to zero - removing finalizers while they
        run would make them drain and terminate real machines.
    type: bool
    default: false
  require_paused:
    description:
      - Refuse to run while a source C(Cluster) has neither C(spec.paused=true) nor the C(cluster.x-k8s.io/paused)
        annotation.
    type: bool
    default: true
  force:
    description:
      - Overwrite targets that differ from their sources (see RV(conflicts)) with the copy of the source.
    type: bool
    default: false
  carry_deletions:
    description:
      - Copy the objects being deleted (and those their deletion takes along) too, then delete each copy of an object
        being deleted through the API, with the source's propagation, so that it keeps its finalizers and the
        controllers of the target groups finish the deletion (a Machine's drain and instance termination). With
        O(delete_source=true) the sources then go like the others. The migrate role sets it with
        C(private_capi_migrate_allow_unsteady).
      - Before any copy is deleted, each carried source is annotated
        C(hypershift.openshift.io/capi-migration-carried) with its copy's uid, and
        C(hypershift.openshift.io/capi-migration-carried-deletion=true) if it was itself being deleted (its copy is
        deleted here; a source only taken along keeps its copy, which goes with its owner's). A later run (the delete
        phase, a re-run after an interruption) never copies a source so marked again, even once the target's
        controllers have finished the deletion and the copy is gone (the drain and the termination would otherwise run
        twice); it deletes a copy whose deletion was carried if an interrupted run had not yet, and with
        O(delete_source=true) removes the source like the others, whether or not this option is set then. The
        migrate role's rollback of a failed attempt that deletes the partial copies removes these marks.
      - Without it, such objects are not copied and O(delete_source=true) refuses while one holds a finalizer.
    type: bool
    default: false
  verify:
    description:
      - After copying, read every copy back and compare it with its source (after translation), field by field,
        status included; fail listing the first differences if any field differs.
    type: bool
    default: false
  kinds:
    description:
      - Move only these resources. Each entry is a kind (V(Machine)), a plural (V(machines)), or either with its
        source group (V(machines.cluster.x-k8s.io)); case-insensitive. An entry that matches no served resource fails.
      - Default is every namespaced resource of the mapped groups.
    type: list
    elements: str
  dependent_resources:
    description:
      - With O(delete_source=true), scan only these resources (plural or plural.group) for objects owned by moved
        sources. Default is every namespaced resource that is not moved, except events.
    type: list
    elements: str
attributes:
  check_mode:
    details: Every write goes out with the server-side dry run C(dryRun=All); RV(plan) lists the actions in order.
  diff_mode:
    details: One entry per created or changed copy (before and after).
notes:
  - RBAC the module needs in the HCP namespace - C(get), C(list), C(create), C(update) on the resources of the
    target groups (and their C(/status)); C(get), C(list) on the source groups; with O(delete_source) C(patch),
    C(delete) and C(deletecollection) on the source groups and C(list), C(patch) on the scanned dependent resources.
seealso:
  - module: hypershift.private_capi.private_crd_render
  - module: hypershift.private_capi.migration_state
"""

EXAMPLES = r"""
- name: Copy the CAPI objects of clusters-prod-01 to the private groups (Cluster already paused)
  hypershift.private_capi.capi_object_migrate:
    hcp_namespace: clusters-prod-01
    verify: true
  register: copy

- name: What a migration would do, without writing anything
  hypershift.private_capi.capi_object_migrate:
    hcp_namespace: clusters-prod-01
  check_mode: true
  register: preview

- name: Delete the standard-group objects (old CAPI controllers scaled to zero)
  hypershift.private_capi.capi_object_migrate:
    hcp_namespace: clusters-prod-01
    delete_source: true

- name: Agent platform - move the Agent provider's objects too
  hypershift.private_capi.capi_object_migrate:
    hcp_namespace: clusters-agent-01
    extra_groups:
      capi-provider.agent-install.openshift.io: capi-provider.agent-install.hypershift.openshift.io
    delete_source: true

- name: Roll back a migrated namespace
  hypershift.private_capi.capi_object_migrate:
    hcp_namespace: clusters-prod-01
    direction: to_standard
    delete_source: true
"""

RETURN = r"""
api_calls: {returned: always, type: dict, sample: {"total": 684, "by_method": {"GET": 20, "POST": 220, "PUT": 300, "PATCH": 160, "DELETE": 66}},
  description: "Requests this run sent to the API server - C(total) and C(by_method)."}
elapsed_seconds: {returned: always, type: float, sample: 1.07, description: "Wall time of the run."}
counts:
  description:
    - Per kind - sources C(found), copies C(created), copies C(updated) (status or ownerReferences completed, or
      overwritten with O(force)), objects C(skipped) (copy in sync, or not copied), C(conflicts), sources C(deleted).
    - C(leaving) - sources on their way out (being deleted, or taken along by an owner that is). They are not copied,
      or with O(carry_deletions) copied and their deletion carried across.
    - C(remaining) - C(found) minus C(leaving). This is what the target holds once the deletions in flight have
      finished, and what a later count compares with (the migrate role records it for C(capi_verify)).
  returned: always
  type: dict
  sample: {"Machine": {"found": 3, "created": 3, "updated": 0, "skipped": 0, "conflicts": 0, "deleted": 3, "leaving": 0,
                       "remaining": 3}}
uid_map:
  description: Source uid -> uid of its copy, for every copied object (in check mode the dry-run uids).
  returned: always
  type: dict
  sample: {"0b6c...": "9f2e..."}
plan:
  description: The actions in the order they were taken (or, in check mode, would be) - V(create), V(write_status),
    V(update_owner_references), V(overwrite), V(skip), V(carry), V(mark_carried), V(carry_deletion),
    V(carried) (a source an earlier run carried, not copied again), V(conflict), V(repoint_dependent),
    V(await_deletion) (an object of the copy's name left from an earlier deletion, awaited until it has gone, then
    the copy created; C(deletion_timestamp), C(finalizers)), V(restore_finalizers),
    V(remove_finalizers),
    V(delete), V(delete_collection); each with C(kind) and C(name) and, where useful, C(api_version), C(reason).
  returned: always
  type: list
  elements: dict
skipped:
  description: Objects not written, each with C(kind), C(name) and C(reason).
  returned: always
  type: list
  elements: dict
conflicts:
  description: Targets that differ from their sources - C(kind), C(name), C(reason), C(differences) (first differing
    paths) and C(overwritten) (true with O(force)).
  returned: always
  type: list
  elements: dict
dependents:
  description: Objects outside the moved kinds whose ownerReferences were re-pointed at the copies.
  returned: always
  type: list
  elements: dict
kinds:
  description: The resources moved - C(kind), C(resource), C(version), C(source_group), C(target_group),
    C(status_subresource).
  returned: always
  type: list
  elements: dict
verify:
  description: With O(verify=true), C(checked) (copies compared) and C(failures).
  returned: when O(verify=true)
  type: dict
namespace:
  description: The namespace.
  returned: always
  type: str
direction:
  description: The direction.
  returned: always
  type: str
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.move.service import ObjectMigrateModule
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import copy_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import NAMESPACE
from ansible_collections.hypershift.private_capi.plugins.module_utils.modules import HCP_NAMESPACE_REQUIRED, option

# options holding a namespace or object names (checked before any API call)
NAME_RULES = [("hcp_namespace", NAMESPACE)]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = copy_argspec()
    spec.update(
        hcp_namespace=option(HCP_NAMESPACE_REQUIRED, renamed_from="namespace"),
        direction=dict(type="str", choices=["to_private", "to_standard"], default="to_private"),
        delete_source=dict(type="bool", default=False),
        require_paused=dict(type="bool", default=True),
        force=dict(type="bool", default=False),
        carry_deletions=dict(type="bool", default=False),
        verify=dict(type="bool", default=False),
        kinds=dict(type="list", elements="str"),
        dependent_resources=dict(type="list", elements="str"),
    )
    return spec


def main():
    run_module(argspec, NAME_RULES, ObjectMigrateModule)


if __name__ == "__main__":
    main()
