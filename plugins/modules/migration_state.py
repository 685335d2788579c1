#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: migration_state
short_description: Read and move a HostedCluster through the private-CAPI migration states
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Reads and changes the migration state of a HyperShift C(HostedCluster) (C(hypershift.openshift.io/v1beta1)).
    Annotations on the HostedCluster are the source of truth; the label
    C(hypershift.openshift.io/capi-migration-state) (V(legacy), V(in-progress), V(migrated), V(failed)) mirrors
    them so a fleet can be selected with one label selector.
  - States and their annotations - C(new) has none of them; V(legacy) has C(hypershift.openshift.io/scope=legacy);
    V(in-progress) adds C(hypershift.openshift.io/migration-in-progress=true) and the lease; V(migrated) has
    C(hypershift.openshift.io/private-capi-types=true) and no scope; V(failed) has
    C(hypershift.openshift.io/migration-failed=<reason>) with scope legacy; C(invalid) is any contradictory
    combination, chiefly scope legacy together with C(private-capi-types).
  - "Legal moves - new -> legacy; legacy -> in-progress; in-progress -> migrated; in-progress -> failed;
    failed -> legacy (with O(force=true), after remediation). Any other move fails with the current state,
    the requested one and the legal moves from here, and writes nothing. Asking for the current state is
    C(changed=false)."
  - "B(Rollback) of a migrated HostedCluster to the standard CAPI types is a separate path, refused unless
    O(rollback=true) is given - migrated -> in-progress (C(private-capi-types) removed, scope legacy, the lock with
    C(hypershift.openshift.io/capi-migration-lease-direction=rollback)), then in-progress -> legacy, only for a lock
    taken that way. A rollback lock is never renewed, taken over or finished without O(rollback=true), so a
    migration run cannot resume it as a migration; O(rollback=true) on a migration's lock, or from legacy, failed or
    new, is refused too. Asking for V(legacy) with O(rollback=true) on a legacy HostedCluster is C(changed=false), so
    a finished rollback can be re-run. The C(hypershift.private_capi) playbook C(playbooks/rollback.yml) does the
    whole rollback."
  - Each move is one write of the HostedCluster guarded by the resourceVersion it was judged on. When another
    writer got in first (HTTP 409), the module reads the object again and judges the move again, a bounded number
    of times. So of two runs taking the lock at once exactly one wins; the other fails naming the winner.
  - The in-progress lock is a lease kept in the annotations C(hypershift.openshift.io/capi-migration-lease-holder),
    C(...-lease-acquire-time), C(...-lease-renew-time) and C(...-lease-duration-seconds). Asking for V(in-progress)
    again with the same O(holder) renews it (C(changed=false), RV(renewed=true)). A different holder fails, naming
    the holder and the lease's age, unless the lease has expired or O(takeover=true) is given. B(That is how a run
    that died is resumed) - run the same playbook again after the lease expires, or at once with O(takeover=true)
    when you know the other run is dead. Moving on from V(in-progress) (to V(migrated) or V(failed)) is judged the
    same way, so only the holder can finish a migration it holds.
  - Each move appends who and when to the annotation C(hypershift.openshift.io/capi-migration-history) (a JSON list
    of the last 20 moves) and emits a core/v1 Event on the HostedCluster.
  - O(state=query) reports one HostedCluster (O(hostedcluster_name) and O(hostedcluster_namespace)), all in
    O(hostedcluster_namespace), or all in the cluster, with one GET or one LIST (filtered by the mirror label when
    O(query_states) allows). It detects the invalid state and, only with O(repair=true), repairs it from the group
    the CAPI objects in the HCP namespace (C(<hostedcluster_namespace>-<hostedcluster_name>)) really use -
    V(legacy) when they are all in C(cluster.x-k8s.io), V(migrated) when all are in
    C(cluster.hypershift.openshift.io), otherwise it fails and leaves the annotations to a human.
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.write
options:
  hostedcluster_name:
    description:
      - Name of the HostedCluster. Required unless O(state=query).
      - The options that name a HostedCluster are the same in every module of the collection; C(name) and
        C(namespace), the names of 1.0.0, still work and warn until 2.0.0.
    type: str
    aliases: [name]
  hostedcluster_namespace:
    description:
      - Namespace of the HostedCluster (usually C(clusters)). Required with O(hostedcluster_name).
      - With O(state=query) and no O(hostedcluster_name), limits the query to this namespace.
    type: str
    aliases: [namespace]
  state:
    description:
      - The state to move to, or V(query) to read states without changing them (apart from O(repair)).
    type: str
    choices: [legacy, in-progress, migrated, failed, query]
    default: query
  reason:
    description:
      - Why the migration failed; required with O(state=failed), written to C(hypershift.openshift.io/migration-failed).
      - With other moves, recorded in the history and the Event.
    type: str
  force:
    description:
      - Confirms the remediation move failed -> legacy. Has no other effect.
    type: bool
    default: false
  holder:
    description:
      - Who holds the in-progress lease, returned as RV(holder).
      - Defaults to one id per C(ansible-playbook) run, set by the collection's action plugin -
        C(<controller host>:<pid of the ansible-playbook main process>:<its start time>), for example
        C(controller-0:41234:20260301T101500.42Z). So every task of one run that leaves O(holder) unset acts as the
        same holder - the task that takes the lock and the task that moves to V(migrated) or V(failed) - while
        another run (even a later one with a reused pid) is a different holder. Two hosts of one run that target the
        same HostedCluster therefore share the lock; give them distinct holders if they must exclude each other.
      - When the module runs without its action plugin (outside C(ansible-playbook)), the default is an id unique
        to that module run (C(<host>:<pid>:<random>)); pass RV(holder) on (for example C({{ lock.holder }})) to
        renew the lease or finish the migration in a later run.
      - An empty value means the default.
    type: str
  lease_seconds:
    description:
      - How long the lease this run takes or renews lasts without renewal, in seconds; recorded on the HostedCluster.
      - Expiry of another holder's lease is judged by the duration that holder recorded (this value when none is).
    type: int
    default: 900
  takeover:
    description:
      - Take the in-progress lease from another holder even though it has not expired (to resume a run that died).
      - With O(state=query) and O(direction), judge RV(hostedclusters[].action) as a run that would take the lock over.
    type: bool
    default: false
  rollback:
    description:
      - Ask for the rollback path (see the description) - with O(state=in-progress) take, renew or take over the
        rollback lock of a migrated HostedCluster; with O(state=legacy) end a rollback lock (or confirm a finished
        rollback). Any other use fails and writes nothing.
    type: bool
    default: false
  query_states:
    description:
      - With O(state=query) and no O(hostedcluster_name), report only HostedClusters in these states. The LIST uses a label
        selector on the mirror label unless C(new) or C(invalid) is asked for (those have no label value).
    type: list
    elements: str
    choices: [new, legacy, in-progress, migrated, failed, invalid]
  repair:
    description:
      - With O(state=query), repair every invalid HostedCluster found (see the description).
    type: bool
    default: false
  direction:
    description:
      - With O(state=query), also say what a run acting as O(holder) (with O(takeover) and O(retry_failed)) should do
        with each HostedCluster found, in RV(hostedclusters[].action) and RV(hostedclusters[].reason) - V(migrate) for
        a migration to the private CAPI types (the C(migrate) role), V(rollback) for a rollback of a migrated
        HostedCluster (C(playbooks/rollback.yml)). Nothing is written.
      - Without it, no action or reason is returned.
      - Only with O(state=query).
    type: str
    choices: [migrate, rollback]
  retry_failed:
    description:
      - With O(state=query) and O(direction=migrate), judge a V(failed) HostedCluster as to be retried
        (RV(hostedclusters[].action=mark-legacy-and-migrate)) rather than skipped. It is still moved to V(legacy) by
        a separate move with O(force=true).
    type: bool
    default: false
attributes:
  check_mode:
    details: Writes (the HostedCluster and its Event) are sent with the server-side dry run C(dryRun=All).
  diff_mode:
    details: Shows the HostedCluster's annotations and labels before and after a move.
  action:
    description: Has an action plugin, which runs on the controller before the module.
    support: full
    details: It only fills in the default O(holder) of the C(ansible-playbook) run; the module does the rest.
notes:
  - The RBAC the module needs - C(get), C(list) and C(update) on C(hostedclusters.hypershift.openshift.io),
    C(create) on C(events) in the HostedCluster namespaces, and for O(repair) C(list) on C(clusters),
    C(machinedeployments), C(machinesets) and C(machines) of C(cluster.x-k8s.io) and
    C(cluster.hypershift.openshift.io) in the HCP namespaces.
seealso:
  - module: hypershift.private_capi.private_crd_render
"""

EXAMPLES = r"""
- name: Mark an existing HostedCluster legacy (before the new operator is installed)
  hypershift.private_capi.migration_state:
    hostedcluster_name: prod-01
    hostedcluster_namespace: clusters
    state: legacy

- name: Take the migration lock
  hypershift.private_capi.migration_state:
    hostedcluster_name: prod-01
    hostedcluster_namespace: clusters
    state: in-progress
    lease_seconds: 1800
  register: lock

- name: Renew it during a long step (the same playbook run is the same holder by default)
  hypershift.private_capi.migration_state:
    hostedcluster_name: prod-01
    hostedcluster_namespace: clusters
    state: in-progress

- name: Finish
  hypershift.private_capi.migration_state:
    hostedcluster_name: prod-01
    hostedcluster_namespace: clusters
    state: migrated

- name: Finish a lock another run took (its holder id, as that run returned it in holder)
  hypershift.private_capi.migration_state:
    hostedcluster_name: prod-01
    hostedcluster_namespace: clusters
    state: migrated
    holder: "{{ previous_run_holder }}"

- name: Record a failure (after rolling back)
  hypershift.private_capi.migration_state:
    hostedcluster_name: prod-01
    hostedcluster_namespace: clusters
    state: failed
    reason: "verify: Machine count 2 != 3"
    holder: "{{ lock.holder }}"

- name: Back to legacy once remediated
  hypershift.private_capi.migration_state:
    hostedcluster_name: prod-01
    hostedcluster_namespace: clusters
    state: legacy
    force: true

- name: Roll a migrated HostedCluster back - take the rollback lock (migrated -> in-progress, direction rollback)
  hypershift.private_capi.migration_state:
    hostedcluster_name: prod-01
    hostedcluster_namespace: clusters
    state: in-progress
    rollback: true
    holder: rollback-20260301
  register: rollback_lock

- name: Objects copied back, sidecars out, private objects deleted - finish the rollback (in-progress -> legacy)
  hypershift.private_capi.migration_state:
    hostedcluster_name: prod-01
    hostedcluster_namespace: clusters
    state: legacy
    rollback: true
    holder: "{{ rollback_lock.holder }}"

- name: Resume a run that died (its lease has not expired yet)
  hypershift.private_capi.migration_state:
    hostedcluster_name: prod-01
    hostedcluster_namespace: clusters
    state: in-progress
    takeover: true

- name: Which HostedClusters still need migrating (one LIST with a label selector)
  hypershift.private_capi.migration_state:
    state: query
    query_states: [legacy, failed]
  register: fleet

- name: What should this run do with prod-01 (the migrate role asks this before it takes the lock)
  hypershift.private_capi.migration_state:
    hostedcluster_name: prod-01
    hostedcluster_namespace: clusters
    state: query
    direction: migrate
    retry_failed: true
  register: found

- name: Find and repair invalid states everywhere
  hypershift.private_capi.migration_state:
    state: query
    repair: true
"""

RETURN = r"""
state:
  description: The state after the module ran (moves only).
  returned: when O(state) is not V(query)
  type: str
  sample: in-progress
from_state:
  description: The state found before the move.
  returned: when O(state) is not V(query)
  type: str
  sample: legacy
holder:
  description: The lease holder this run acted as (the O(holder) option or the default, see O(holder)).
  returned: always
  type: str
  sample: "controller-0:41234:20260301T101500.42Z"
renewed:
  description: Whether the run renewed its own lease.
  returned: when O(state) is not V(query)
  type: bool
took_over:
  description: Whether the run took the lease over from another holder.
  returned: when O(state) is not V(query)
  type: bool
refused:
  description:
    - Why the state machine refused the move, as data (the module fails with the full message in C(msg)).
    - A playbook follows RV(refused.status) and never reads the message to tell a live lock from another refusal.
  returned: when the module failed because the move is not allowed (not on an API or option error)
  type: dict
  contains:
    reason:
      description: V(lock-held) when another run holds a live lock (lease not expired, no O(takeover)); V(not-allowed) for any other refused move.
      type: str
      sample: lock-held
    holder:
      description: The run holding the lock (V(lock-held)); null otherwise.
      type: str
      sample: fleet-20261127T101500Z-1a2b
    status:
      description: The status a run records for this HostedCluster - V(skipped) (the holder keeps it) or V(refused).
      type: str
      sample: skipped
conflicts:
  description: How many times the guarded write met a newer resourceVersion and was judged again.
  returned: when O(state) is not V(query)
  type: int
  sample: 0
event:
  description: Name of the Event emitted for the move, or null when nothing moved.
  returned: when O(state) is not V(query)
  type: str
message:
  description: What the move did.
  returned: when O(state) is not V(query)
  type: str
  sample: CAPI migration state legacy -> in-progress by controller-0:41234:9f1c2a7b
hostedcluster:
  description: The HostedCluster's state after the move, in the same form as the items of RV(hostedclusters).
  returned: when O(state) is not V(query)
  type: dict
hostedclusters:
  description: One entry per HostedCluster queried.
  returned: O(state=query)
  type: list
  elements: dict
  contains:
    name:
      description: Name.
      type: str
    namespace:
      description: Namespace.
      type: str
    hcp_namespace:
      description:
        - The HCP namespace HyperShift gives this HostedCluster (C(<namespace>-<name>), dots as dashes), the one
          rule the collection keeps for it (also the filter P(hypershift.private_capi.hcp_namespace#filter)).
      type: str
    state:
      description: State judged from the annotations (V(new), V(legacy), V(in-progress), V(migrated), V(failed), V(invalid)).
      type: str
    platform:
      description: The HostedCluster's C(spec.platform.type) (V(None) when it names none).
      type: str
      version_added: 1.0.0
    labels:
      description: The HostedCluster's labels (the fleet selection judges its label selector on them).
      type: dict
      version_added: 1.0.0
    label:
      description: Value of the mirror label, or null.
      type: str
    label_in_sync:
      description: Whether the mirror label agrees with the annotations.
      type: bool
    markers:
      description: The four state annotations as read (C(scope_legacy), C(in_progress), C(private_capi_types), C(failed_reason)).
      type: dict
    failed_reason:
      description: The failure reason, or null.
      type: str
    lease:
      description:
        - The lease (holder, acquire_time, renew_time, duration_seconds, age_seconds, expired, expires_in_seconds) or null.
        - C(direction) is V(rollback) for a lock taken with O(rollback=true), otherwise V(migrate).
      type: dict
    history:
      description: The recorded moves, oldest first (from, to, at, by, and reason/takeover/rollback when set).
      type: list
      elements: dict
    resource_version:
      description: The resourceVersion read.
      type: str
    action:
      description:
        - What a run acting as O(holder) should do with this HostedCluster, judged from its state and lease with
          O(takeover) and O(retry_failed).
        - For O(direction=migrate) - V(migrate) (legacy - take the lock), V(mark-legacy-and-migrate) (new, or failed
          with O(retry_failed=true) - move it to legacy with O(force=true) first), V(resume) (in-progress and the
          lock is free, held by O(holder), expired, or taken over with O(takeover=true)), V(locked) (another run holds
          a live lock), V(skip) (migrated, or failed without O(retry_failed)), V(invalid) (repair it first).
        - For O(direction=rollback) - V(rollback) (migrated - take the rollback lock), V(resume-rollback) (a rollback
          lock held by O(holder), expired, or taken over), V(locked) (another rollback run holds a live rollback
          lock), V(skip) (legacy - nothing to roll back), V(refuse) (new, failed, invalid, or in-progress for a
          migration - RV(hostedclusters[].reason) says what to do instead).
      type: str
      returned: when O(direction) is given
      sample: migrate
    reason:
      description:
        - Why, in the words the C(migrate) role records and prints (empty when there is nothing to say). It may be
          set even when the action goes ahead (a retried failure, or a lock this run may take).
      type: str
      returned: when O(direction) is given
      sample: already migrated
    status:
      description:
        - The status a run records for this HostedCluster before it acts on RV(hostedclusters[].action) - for
          O(direction=migrate) V(migrating), V(skipped) or V(invalid); for O(direction=rollback) V(rolling-back),
          V(skipped) or V(refused). The C(migrate) role records it as it is.
      type: str
      returned: when O(direction) is given
      sample: migrating
counts:
  description: Number of HostedClusters per state.
  returned: O(state=query)
  type: dict
  sample: {legacy: 12, migrated: 30, failed: 1}
invalid:
  description: C(namespace/name) of every HostedCluster found in an invalid state.
  returned: O(state=query)
  type: list
  elements: str
repaired:
  description: The repairs made with O(repair=true) (name, namespace, from_state, state, standard_objects, private_objects, event).
  returned: O(state=query)
  type: list
  elements: dict
read_at:
  description:
    - When the module read the HostedClusters (UTC, C(%Y-%m-%dT%H:%M:%S.%f)); the migrate role's records take their
      first and last phase marks from it.
  returned: O(state=query)
  type: str
  sample: "2026-03-01T10:15:00.420000"
  version_added: 1.0.0
label_selector:
  description: The label selector the fleet LIST used, or null.
  returned: O(state=query)
  type: str
  sample: hypershift.openshift.io/capi-migration-state in (failed,legacy)
"""

import copy

from ansible_collections.hypershift.private_capi.plugins.module_utils.state.service import MigrationStateModule
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import NAMESPACE, OBJECT_NAME
from ansible_collections.hypershift.private_capi.plugins.module_utils.modules import hostedcluster_options

MOVE_STATES = ["legacy", "in-progress", "migrated", "failed"]
QUERYABLE_STATES = ["new", "legacy", "in-progress", "migrated", "failed", "invalid"]
# options holding a namespace or object names (checked before any API call)
NAME_RULES = [("hostedcluster_name", OBJECT_NAME), ("hostedcluster_namespace", NAMESPACE)]
HOSTEDCLUSTER = ("hostedcluster_name", "hostedcluster_namespace")
# a transition names its HostedCluster (a move to failed, why)
REQUIRED_IF = [("state", state, HOSTEDCLUSTER) for state in ("legacy", "in-progress", "migrated")] + [
    ("state", "failed", HOSTEDCLUSTER + ("reason",))]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(hostedcluster_options(
        renamed_from={"hostedcluster_name": "name", "hostedcluster_namespace": "namespace"}, hcp_namespace=False,
        hostedcluster_name=dict(required=False), hostedcluster_namespace=dict(default=None)))
    spec.update(
        state=dict(type="str", choices=MOVE_STATES + ["query"], default="query"),
        reason=dict(type="str"),
        force=dict(type="bool", default=False),
        holder=dict(type="str"),
        lease_seconds=dict(type="int", default=900),
        takeover=dict(type="bool", default=False),
        rollback=dict(type="bool", default=False),
        query_states=dict(type="list", elements="str", choices=QUERYABLE_STATES),
        repair=dict(type="bool", default=False),
        direction=dict(type="str", choices=["migrate", "rollback"]),
        retry_failed=dict(type="bool", default=False),
    )
    return copy.deepcopy(spec)


def main():
    run_module(argspec, NAME_RULES, MigrationStateModule, required_if=REQUIRED_IF,
               required_by={"hostedcluster_name": "hostedcluster_namespace"})  # HostedClusters are namespaced


if __name__ == "__main__":
    main()
