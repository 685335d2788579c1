#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: hcp_migrate_rollback
short_description: Take one hosted control plane back to the standard CAPI types, in one module run
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - The way back from the private CAPI groups to the standard ones for one HostedCluster whose lock this run holds, in
    one module run, so that the controllers are down for the work alone. RV(marks) says when each phase began. Two
    paths share the steps.
  - B(path=rollback) - a migrated HostedCluster under a rollback lock (M(hypershift.private_capi.migration_state) with
    O(hypershift.private_capi.migration_state#module:rollback=true)), as C(playbooks/rollback.yml) runs it.
    B(pause) - the HyperShift operator fenced (O(fence)), the private C(Cluster), MachineDeployments and MachineSets
    paused, the Deployments of O(deployments) recorded and scaled to 0 (waiting up to O(scale_down_timeout)).
    B(copy) - every private object copied back to the standard groups, owners first, status included, and verified
    field by field. B(proxy) - the sidecar's kubeconfig ConfigMap (O(proxy_config_map)) and the RBAC the C(api_proxy)
    role created for the namespace deleted, the signal C(hypershift.openshift.io/private-capi-types) taken off the
    HostedControlPlane. B(resume) - the HostedCluster records the phase C(revert-resume), and each Deployment goes back
    to its recorded replicas with the sidecar taken out in the same write (the recorded env, mounts and volumes back),
    waiting up to O(available_timeout) until it is available. Then the standard C(Cluster) and its MachineDeployments
    and MachineSets are unpaused. B(verify) - one standard object per private one that stays, no standard C(Cluster)
    paused, no sidecar, every Deployment available (see the filter C(hypershift.private_capi.capi_rollback_judge));
    a problem stops the run before anything private is deleted. B(finish) - the phase C(revert-finish) recorded,
    dependents (the HostedControlPlane) re-pointed at the standard objects and the private objects deleted (Orphan),
    the count record removed, the replica records removed and the fence lifted. B(state) - in-progress -> legacy.
  - B(path=rescue) - a failed migration, as the C(migrate) role runs it after any failure with the migration lock held.
    B(scale_down) - the Deployments stopped (replicas recorded unless an earlier step did). B(proxy) - as above, and the
    count record removed. B(copy) - when the failed migration had begun deleting the standard objects (the HostedCluster
    records the phase C(finish)), every private object is copied back and deleted (O(hypershift.private_capi.capi_object_migrate#module:force=true));
    otherwise the private copies are discarded - the marks the attempt left on standard objects whose deletion it carried
    are removed, then the private objects are deleted, children first, with the migration's own deletion rule
    (finalizers removed in the write that labels them, propagation Orphan, so nothing cascades to the standard objects).
    B(resume) - the Deployments back without sidecar, the standard objects unpaused, the records removed, the fence
    lifted. B(state) - in-progress -> failed with O(reason).
  - B(Zero stop) (O(strategy=zero_stop)). Where every Deployment of O(deployments) that exists runs a proxy sidecar that follows the namespace's
    mode ConfigMap C(capi-proxy-mode) (put in ahead, as O(hypershift.private_capi.hcp_migrate_window#module:strategy=zero_stop)
    needs), no Deployment is scaled or patched on either path - the controllers never stop (RV(strategy)). The private
    objects are paused instead, and instead of the sidecar's removal every sidecar is flipped back to pass-through
    (C(data.mode), waiting up to O(flip_timeout) for each running sidecar's acknowledgement) after the copy back and
    before the private objects are deleted or discarded; the sidecars, their ConfigMaps and RBAC stay (RV(flip)). A
    sidecar put in by an older release (it does not follow the mode ConfigMap) takes the paths above.
  - B(Resumable.) What is done is read from the cluster - a run killed at any request is re-run to the same end. A
    rollback goes on from the phase the HostedCluster records (RV(resumed_from)). Resumed after C(revert-resume), its
    copy only completes and is not verified again, because the standard controllers may have moved the objects on since.
  - A failure stops the run where it is and names its phase (RV(phase)) beside what was done; the lock stays held.
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.write
  - hypershift.private_capi.options.deployments
  - hypershift.private_capi.options.extra_groups
  - hypershift.private_capi.options.parallelism
  - hypershift.private_capi.hostedcluster
options:
  path:
    description:
      - V(rollback) - a migrated HostedCluster back to legacy. V(rescue) - a failed migration back to the standard
        objects, ending failed with O(reason).
    type: str
    choices: [rollback, rescue]
    required: true
  holder:
    description:
      - The holder of the lock (the run id it was taken with); the final move is refused for another holder. This
        module process also takes a lease token of its own on the HostedCluster before its first write and checks it
        before each write - once another process has taken it (a resumed run's module, while this one was left
        running by a killed playbook), this one writes nothing more (RV(lease_token)).
    type: str
    required: true
  reason:
    description:
      - Why the migration failed - written to the HostedCluster with the move to failed. Required with O(path=rescue)
        (checked before any API call).
    type: str
    default: ""
  fence:
    description:
      - Fence the HyperShift operator (C(spec.pausedUntil), the original kept) while the rollback runs (O(path=rollback)).
    type: bool
    default: true
  settle_seconds:
    description:
      - Seconds the private pause must hold before the Deployments stop (O(path=rollback); see
        M(hypershift.private_capi.hcp_quiesce)).
    type: int
    default: 0
  scale_down_timeout:
    description:
      - Seconds to wait for the pods of the Deployments to go before any CAPI object is touched; 0 does not wait.
        After a failed window they are gone already; after a failure at the health step they still run.
  flip_timeout:
    description:
      - On the zero-stop way back, seconds to wait for every running sidecar to acknowledge pass-through.
    type: int
    default: 60
  strategy:
    description:
      - V(zero_stop) keeps the controllers running where every sidecar follows the mode ConfigMap (else, with a
        warning, the scale_down path); V(scale_down) stops the Deployments and takes the sidecars out.
    type: str
    choices: [zero_stop, scale_down]
    default: zero_stop
  proxy_config_map:
    description:
      - The sidecar's kubeconfig ConfigMap in O(hcp_namespace), deleted with the sidecar (the C(api_proxy) role's
        C(private_capi_proxy_config_map_name)).
    type: str
    default: capi-proxy-kubeconfig
attributes:
  check_mode:
    details: The Deployments, the HostedCluster and the HostedControlPlane get no write (nothing is waited for); copies
      and deletions are sent as server-side dry runs (C(dryRun=All)); no state is moved.
  diff_mode:
    details: One entry per quiesce step, per created, changed or deleted object and for the state move.
notes:
  - RBAC in the HCP namespace - that of M(hypershift.private_capi.hcp_quiesce) and of
    M(hypershift.private_capi.capi_object_migrate) with O(hypershift.private_capi.capi_object_migrate#module:delete_source)
    in the direction to the standard groups; C(get), C(patch) on C(hostedcontrolplanes); C(delete) on the ConfigMap;
    C(list), C(delete) on the RBAC objects the C(api_proxy) role created (by label); C(get), C(patch) on the
    HostedCluster and what M(hypershift.private_capi.migration_state) needs for the final move.
  - RBAC for the managers' leader Leases - C(list) on C(pods) and C(coordination.k8s.io/leases) in the HCP namespace;
    where a Lease is handed over C(update) on leases and C(get) on C(nodes).
seealso:
  - module: hypershift.private_capi.hcp_migrate_window
  - module: hypershift.private_capi.hcp_migrate_finish
  - module: hypershift.private_capi.migration_state
"""

EXAMPLES = r"""
- name: Take the rollback lock of prod-01
  hypershift.private_capi.migration_state:
    hostedcluster_name: prod-01
    hostedcluster_namespace: clusters
    state: in-progress
    rollback: true
    holder: rollback-20261127
    reason: the new operator crashes

- name: Roll prod-01 back to the standard CAPI types (resumable - re-run with the same holder)
  hypershift.private_capi.hcp_migrate_rollback:
    path: rollback
    hcp_namespace: clusters-prod-01
    hostedcluster_name: prod-01
    holder: rollback-20261127
    deployments: [cluster-api, capi-provider, control-plane-operator]
  register: rolled_back

- name: How long the controllers were down
  ansible.builtin.debug:
    msg: "{{ rolled_back.controllers_down_seconds }} s, of which {{ rolled_back.waited_seconds }} s waiting"

- name: After a failed migration, back to the standard objects, ending failed with the reason
  hypershift.private_capi.hcp_migrate_rollback:
    path: rescue
    hcp_namespace: clusters-prod-01
    hostedcluster_name: prod-01
    holder: fleet-20261127
    reason: "copy - Machine m-0 refused by policy"
    deployments: [cluster-api, capi-provider, control-plane-operator]
"""

RETURN = r"""
api_calls: {returned: always, type: dict, sample: {"total": 88, "by_method": {"GET": 40, "POST": 12, "PATCH": 20, "DELETE": 16}}, description:
  "Requests this run sent to the API server - C(total) and C(by_method)."}
elapsed_seconds: {returned: always, type: float, sample: 9.8, description: "Wall time of the run."}
path:
  description: The path run (O(path)).
  returned: always
  type: str
  sample: rollback
strategy:
  description: V(zero_stop) when the sidecars follow the mode ConfigMap (no Deployment touched, the sidecars flipped
    back to pass-through), else V(scale_down).
  returned: always
  type: str
  sample: zero_stop
flip:
  description: On the zero-stop way back, the flip to pass-through - C(mode), C(changed), C(pods) (whose sidecars
    acknowledged it) and C(waited_seconds).
  returned: with RV(strategy=zero_stop), once the flip has run
  type: dict
  sample: {"mode": "passthrough", "changed": true, "pods": ["cluster-api-7c9d8f6b5-x2x7k"], "waited_seconds": 0.28}
phase:
  description: The last phase begun - V(pause), V(scale_down), V(copy), V(proxy), V(resume), V(verify), V(finish) or
    V(state); on a failure, the one that failed.
  returned: always
  type: str
  sample: state
marks:
  description: When each phase began, in order - C(name) and C(at) (UTC, C(%Y-%m-%dT%H:%M:%S.%f)).
  returned: always
  type: list
  elements: dict
  sample: [{"name": "pause", "at": "2026-11-27T13:01:02.000100"}, {"name": "copy", "at": "2026-11-27T13:01:03.512004"}]
resumed_from:
  description: Where a rollback went on - empty (from the start), V(revert-resume) or V(revert-finish); empty for a rescue.
  returned: always
  type: str
proxy:
  description: C(changed), C(deployments) (those the sidecar was taken out of, in the scale-up write), C(deleted) (the
    ConfigMap and RBAC objects deleted) and C(signal_removed).
  returned: always
  type: dict
  sample: {"changed": true, "deployments": ["cluster-api"], "deleted": ["ConfigMap clusters-prod-01/capi-proxy-kubeconfig"]}
records:
  description: C(changed) and C(annotations) - what this run wrote on the HostedCluster (the phase, null for a removed
    annotation).
  returned: always
  type: dict
problems:
  description: What the rollback's verification found (empty when it held; the run fails when not).
  returned: always
  type: list
  elements: str
plan:
  description: In check mode, with O(path=rollback), what the rollback would do step by step (the counts to copy back,
    the Deployments the sidecar would come out of); the rollback playbook prints it.
  returned: check mode, O(path=rollback)
  type: list
  elements: str
scale_down:
  description: The stop step's result, as M(hypershift.private_capi.hcp_quiesce) returns it.
  returned: when the Deployments were stopped by this run
  type: dict
resume:
  description: The start step's result, as M(hypershift.private_capi.hcp_quiesce) returns it with
    O(hypershift.private_capi.hcp_quiesce#module:state=resumed).
  returned: once the start has begun
  type: dict
release:
  description: The rollback's last quiesce step (records removed, fence lifted), as M(hypershift.private_capi.hcp_quiesce)
    returns it.
  returned: once a rollback's finish has begun
  type: dict
copied:
  description: The copy back (or, for a rescue of intact sources, the discard of the private copies), as
    M(hypershift.private_capi.capi_object_migrate) returns it (C(counts), C(kinds), C(plan), C(verify), ...).
  returned: once the copy has begun
  type: dict
deleted:
  description: The deletion of the private objects of a rollback, as M(hypershift.private_capi.capi_object_migrate)
    returns it.
  returned: once a rollback's finish has begun
  type: dict
moved:
  description: The final move's result, as M(hypershift.private_capi.migration_state) returns it.
  returned: when the state was moved (not in check mode)
  type: dict
after:
  description: The state after the final move, read back from the HostedCluster as
    M(hypershift.private_capi.migration_state) with O(hypershift.private_capi.migration_state#module:state=query)
    answers it (C(hostedclusters), C(read_at), C(counts)), so that the rollback role's record needs no module run of its
    own. Left out, with a warning, when that read fails (the role then reads the state itself).
  returned: when the state was moved and read back (not in check mode)
  type: dict
  sample: {"changed": false, "hostedclusters": [{"name": "example", "namespace": "clusters", "state": "legacy"}],
    "read_at": "2026-12-02T21:40:00.000000", "counts": {"legacy": 1}}
stopped_at:
  description: When these Deployments were first scaled to 0 (the record kept across runs), or null.
  returned: always
  type: str
available_at:
  description: When every Deployment was available again, or null (no wait, check mode).
  returned: always
  type: str
controllers_down_seconds:
  description: Seconds from RV(stopped_at) to RV(available_at) - the window without CAPI controllers - or null.
  returned: always
  type: float
  sample: 6.2
leaderless_seconds:
  description:
    - The longest time a manager of O(deployments) had no live leader during this run, or null (none elects a leader
      with a Lease, or check mode) - read when the run begins, where the stopped Deployments' Pods are gone, and when it
      ends; a Lease that changed hands between two reads counts the whole interval (an upper bound).
    - A Lease whose holder's Pod is gone (the scale-down) is handed over - its holder cleared, conditional on the
      C(resourceVersion) read - when the Pod's node is Ready, so that the manager's new Pod takes it at once instead
      of after the lease expires (see M(hypershift.private_capi.api_proxy_apply), O(hypershift.private_capi.api_proxy_apply#module:leader_handover)).
  returned: always
  type: float
  sample: 0.0
leadership:
  description: The Leases followed, or null - C(leases) (per Lease its C(deployment), C(leaderless_seconds), C(live) at the
    end, C(why) not), C(released) (those this run handed over and why), C(waited) (those it did not, and why) and
    C(errors) (what could not be read or written - the run does not fail for it).
  returned: always
  type: dict
  sample: {"leaderless_seconds": 0.0, "leases": [{"lease": "controller-leader-election-capi", "deployment": "cluster-api",
           "live": true, "why": "", "leaderless_seconds": 0.0}], "released": [], "waited": [], "errors": []}
waited_seconds:
  description: The seconds spent waiting on Kubernetes (pods to go, Deployments to be available).
  returned: always
  type: float
  sample: 3.1
lease_token: {returned: "with a lock holder, not in check mode", type: dict, sample: {"id": "5f0c2a9e41d7b3c8", "fenced": null, "waited_seconds": 0.0,
  "lost": null, "unlocked": null}, description: ["This module process's lease token on the HostedCluster's lock (see O(holder)) - C(id); C(fenced),
  the live token of another process it took (C(id), C(run), C(pid), C(host), C(age_seconds)) or null; C(waited_seconds) for that process's writes in
  flight; C(lost), why this process stopped writing, or null; C(unlocked), why it took no token (the HostedCluster is not locked by its run - a re-run
  with nothing to do succeeds, a write is refused), or null."]}
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.rollback import RollbackService
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import sidecar
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.quiesce import deployments_options
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.strategy import STRATEGIES, ZERO_STOP
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import copy_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import OBJECT_NAME
from ansible_collections.hypershift.private_capi.plugins.module_utils.modules import HOSTEDCLUSTER_NAME_RULES, hostedcluster_options

# options holding a namespace or object names (checked before any API call)
NAME_RULES = HOSTEDCLUSTER_NAME_RULES + [("deployments[]", OBJECT_NAME), ("proxy_config_map", OBJECT_NAME)]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = copy_argspec()
    spec.update(hostedcluster_options(renamed_from={"hcp_namespace": "namespace"}))
    spec.update(deployments_options())
    spec.update(
        path=dict(type="str", required=True, choices=["rollback", "rescue"]),
        holder=dict(type="str", required=True),
        reason=dict(type="str", default=""),
        fence=dict(type="bool", default=True),
        settle_seconds=dict(type="int", default=0),
        proxy_config_map=dict(type="str", default=sidecar.DEFAULT_CONFIG_MAP),
        flip_timeout=dict(type="int", default=60),
        strategy=dict(type="str", default=ZERO_STOP, choices=list(STRATEGIES)),
    )
    return spec


def main():
    run_module(argspec, NAME_RULES, RollbackService)


if __name__ == "__main__":
    main()
