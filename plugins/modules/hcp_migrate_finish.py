#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: hcp_migrate_finish
short_description: Check a migrated hosted control plane, delete its standard CAPI objects and mark it migrated
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Steps 6 and 7 of a migration in one module run, once the CAPI controllers run on the private copies (after
    M(hypershift.private_capi.hcp_migrate_window)). In this order (RV(step) names the last one begun, RV(marks) says
    when the phases C(health) and C(finish) began).
  - B(health) - with O(health), the checks of M(hypershift.private_capi.capi_health) on the copies; a failure stops
    the run before any write, with the failures in the message (RV(phase=health)). Not in check mode.
  - B(record) - the HostedCluster gets the annotation C(hypershift.openshift.io/capi-migration-phase=finish) (a
    rollback from here on copies the private objects back, the sources being partly deleted) and, once, the source
    counts per kind in C(hypershift.openshift.io/capi-migration-counts) (M(hypershift.private_capi.capi_verify)
    compares the end state with them; a resumed run keeps the first record).
  - B(delete) - the dependents are re-pointed at the copies and the standard objects deleted (orphaning, children
    first), as M(hypershift.private_capi.capi_object_migrate) does with
    O(hypershift.private_capi.capi_object_migrate#module:delete_source=true).
  - B(release) - the replica records are removed from the Deployments of O(deployments) and the fence is lifted (the
    HostedCluster's C(spec.pausedUntil) back to the recorded value, the records and the phase annotation removed), as
    M(hypershift.private_capi.hcp_quiesce) does with O(hypershift.private_capi.hcp_quiesce#module:remove_records=true)
    and O(hypershift.private_capi.hcp_quiesce#module:fence=true).
  - B(state) - the HostedCluster moves from C(migration-in-progress) to C(migrated), held by O(holder), as
    M(hypershift.private_capi.migration_state) moves it (resourceVersion-guarded, an Event written). Not in check
    mode (the lock a check run reads was never written).
  - Each step changes only what differs, so a run interrupted at any point is re-run to the same end, and a second
    run changes nothing. A failure stops the run and names its step beside what was done; the migrate role rolls
    back.
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.write
  - hypershift.private_capi.options.extra_groups
  - hypershift.private_capi.options.parallelism
  - hypershift.private_capi.hostedcluster
options:
  holder:
    description:
      - The holder of the migration lock (the run id the lock was taken with); the move to C(migrated) is refused
        for another holder. This module process also takes a lease token of its own on the HostedCluster before its
        first write and checks it before each write - once another process has taken it (a resumed run's module,
        while this one was left running by a killed playbook), this one writes nothing more (RV(lease_token)).
    type: str
    required: true
  source_counts:
    description:
      - The source counts per kind to record once (C({kind - count}); the migrate role passes what the copy found
        without the objects on their way out, RV(hypershift.private_capi.capi_object_migrate#module:counts) C(remaining)).
    type: dict
    default: {}
  leaderless_seconds:
    description:
      - The longest time a CAPI manager of O(hcp_namespace) had no live leader in this migration so far (its pre-install
        and its window; the migrate role passes its record's C(leaderless.seconds)). Recorded on the HostedCluster with
        the source counts, as the annotation C(hypershift.openshift.io/capi-migration-leaderless-seconds) the fleet
        exporter serves (C(hypershift_private_capi_leaderless_seconds)); omitted - nothing recorded.
    type: float
  deployments:
    description:
      - Names of the CAPI-dependent Deployments whose replica records are removed; those absent are ignored.
    type: list
    elements: str
    default: []
  carry_deletions:
    description:
      - Deletions in flight were carried to the copies (see M(hypershift.private_capi.capi_object_migrate)).
    type: bool
    default: false
  health:
    description:
      - The health checks that gate the rest, as M(hypershift.private_capi.capi_health) takes them (its options
        without O(hypershift.private_capi.capi_health#module:namespace)). Omitted, no check is made.
    type: dict
    suboptions:
      kinds:
        description: The resources to check - RV(hypershift.private_capi.capi_object_migrate#module:kinds) of the copy.
        type: list
        elements: dict
        required: true
      source_counts:
        description: Per kind, the source count (or RV(hypershift.private_capi.capi_object_migrate#module:counts)).
        type: dict
        default: {}
      not_copied:
        description: Objects the copy left out (RV(hypershift.private_capi.capi_object_migrate#module:skipped)).
        type: list
        elements: dict
        default: []
      cluster_phases:
        description: The healthy phases of the C(Cluster).
        type: list
        elements: str
        default: [Provisioned, Provisioning]
      machine_phases:
        description: The healthy phases of a C(Machine).
        type: list
        elements: str
        default: [Running, Provisioning, Pending, Provisioned]
      deployments:
        description: Deployments that must be available.
        type: list
        elements: str
        default: []
      stable_seconds:
        description: Check again after this many seconds (0 checks once).
        type: int
        default: 0
  dependent_resources:
    description:
      - Scan only these resources (plural or plural.group) for objects owned by the sources (see
        M(hypershift.private_capi.capi_object_migrate)). Default is every namespaced resource not moved, except events.
    type: list
    elements: str
attributes:
  check_mode:
    details: The HostedCluster and the Deployments get no write; the deletions go out with the server-side dry run
      C(dryRun=All); the state is not moved.
  diff_mode:
    details: One entry for the record, one per re-pointed or deleted object, one for the release, one for the move.
notes:
  - RBAC - that of M(hypershift.private_capi.capi_object_migrate) with
    O(hypershift.private_capi.capi_object_migrate#module:delete_source=true) in the HCP namespace; C(list), C(patch)
    on C(apps/deployments) there; C(get), C(patch), C(update) on the C(hostedclusters) and C(create) on C(events) in
    the HostedCluster's namespace.
seealso:
  - module: hypershift.private_capi.hcp_migrate_window
  - module: hypershift.private_capi.capi_object_migrate
  - module: hypershift.private_capi.hcp_quiesce
  - module: hypershift.private_capi.migration_state
"""

EXAMPLES = r"""
- name: Delete the standard objects of clusters-prod-01, lift the fence, in-progress -> migrated
  hypershift.private_capi.hcp_migrate_finish:
    hcp_namespace: clusters-prod-01
    hostedcluster_name: prod-01
    holder: "{{ run_id }}"
    source_counts: {"Cluster": 1, "Machine": 3, "MachineSet": 1, "MachineDeployment": 1}
    deployments: [cluster-api, capi-provider, control-plane-operator]
  register: finished

- name: The state after
  ansible.builtin.debug:
    msg: "{{ finished.moved.hostedcluster.state }}"
"""

RETURN = r"""
api_calls: {returned: always, type: dict, sample: {"total": 40, "by_method": {"GET": 20, "PATCH": 8, "DELETE": 11, "PUT": 1}}, description: "Requests
  this run sent to the API server - C(total) and C(by_method)."}
elapsed_seconds: {returned: always, type: float, sample: 0.9, description: "Wall time of the run."}
step:
  description: The last step begun - V(health), V(record), V(delete), V(release) or V(state); on a failure, the one
    that failed.
  returned: always
  type: str
  sample: state
phase:
  description: The migrate role's phase of RV(step) - V(health), or V(finish) for the others.
  returned: always
  type: str
  sample: finish
marks:
  description: When the phases V(health) and V(finish) began - C(name) and C(at) (UTC, C(%Y-%m-%dT%H:%M:%S.%f)).
  returned: always
  type: list
  elements: dict
health:
  description: The health checks' result, as M(hypershift.private_capi.capi_health) returns it (C(failures),
    C(counts), C(unhealthy_before), C(rounds)).
  returned: with O(health), outside check mode
  type: dict
record:
  description: C(changed) and the C(annotations) written on the HostedCluster by the record step.
  returned: always
  type: dict
  sample: {"changed": true, "annotations": {"hypershift.openshift.io/capi-migration-phase": "finish"}}
delete:
  description: The delete step's result, as M(hypershift.private_capi.capi_object_migrate) returns it (C(counts),
    C(plan), C(dependents), C(kinds)).
  returned: once the delete step has begun
  type: dict
release:
  description: The release step's result, as M(hypershift.private_capi.hcp_quiesce) returns it (C(actions),
    C(deployments), C(paused_until_recorded)).
  returned: once the release step has begun
  type: dict
moved:
  description: The move to C(migrated), as M(hypershift.private_capi.migration_state) returns it (C(changed),
    C(from_state), C(state), C(holder), C(event), C(hostedcluster)).
  returned: once the state step has run (not in check mode)
  type: dict
after:
  description: The state after the move, read back from the HostedCluster as M(hypershift.private_capi.migration_state)
    with O(hypershift.private_capi.migration_state#module:state=query) answers it (C(hostedclusters), C(read_at),
    C(counts)), so that the migrate role's record needs no module run of its own. Left out, with a warning, when that
    read fails (the migration is done; the role then reads the state itself).
  returned: once the state step has run and read it back (not in check mode)
  type: dict
  sample: {"changed": false, "hostedclusters": [{"name": "example", "namespace": "clusters", "state": "migrated"}],
    "read_at": "2026-12-02T21:40:00.000000", "counts": {"migrated": 1}}
lease_token: {returned: "with a lock holder, not in check mode", type: dict, sample: {"id": "5f0c2a9e41d7b3c8", "fenced": null, "waited_seconds": 0.0,
  "lost": null, "unlocked": null}, description: ["This module process's lease token on the HostedCluster's lock (see O(holder)) - C(id); C(fenced),
  the live token of another process it took (C(id), C(run), C(pid), C(host), C(age_seconds)) or null; C(waited_seconds) for that process's writes in
  flight; C(lost), why this process stopped writing, or null; C(unlocked), why it took no token (the HostedCluster is not locked by its run - a re-run
  with nothing to do succeeds, a write is refused), or null."]}
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.finish import FinishService
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.health import health_options
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import copy_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import OBJECT_NAME
from ansible_collections.hypershift.private_capi.plugins.module_utils.modules import (
    HOSTEDCLUSTER_NAME_RULES, hostedcluster_options)

# options holding a namespace or object names (checked before any API call)
NAME_RULES = HOSTEDCLUSTER_NAME_RULES + [("deployments[]", OBJECT_NAME)]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = copy_argspec()
    spec.update(hostedcluster_options(renamed_from={"hcp_namespace": "namespace"}))
    spec.update(
        holder=dict(type="str", required=True),
        source_counts=dict(type="dict", default={}),
        leaderless_seconds=dict(type="float"),
        deployments=dict(type="list", elements="str", default=[]),
        carry_deletions=dict(type="bool", default=False),
        dependent_resources=dict(type="list", elements="str"),
        health=dict(type="dict", options=health_options()),
    )
    return spec


def main():
    run_module(argspec, NAME_RULES, FinishService)


if __name__ == "__main__":
    main()
