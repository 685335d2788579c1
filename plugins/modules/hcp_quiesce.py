#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: hcp_quiesce
short_description: Fence, pause and stop (or resume) the CAPI consumers of one hosted control plane namespace
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - One call does what a step of the CAPI migration needs around the copy, in a fixed order, so that a migration
    spends one module run per step instead of a chain of reads and patches.
  - B(O(state=quiesced)), in this order - with O(fence=true) the HyperShift operator is fenced first
    (C(HostedCluster.spec.pausedUntil=true); the original value is kept once in the annotation
    C(hypershift.openshift.io/capi-migration-paused-until), V(none) when unset), because the operator un-pauses the
    Cluster on every reconcile; with O(pause_group) the C(Cluster) of that group gets C(spec.paused=true) and its
    C(MachineDeployments) and C(MachineSets) the C(cluster.x-k8s.io/paused) annotation, and after O(settle_seconds)
    the Clusters are read again and the run fails if one was un-paused; each Deployment of O(deployments) that
    exists gets its replica count recorded once (annotation C(hypershift.openshift.io/capi-migration-replicas), so a
    resumed run keeps the original; beside it C(hypershift.openshift.io/capi-migration-stopped-at), the time of that
    first scale to 0) and is scaled to 0; then the run waits up to O(wait_timeout) seconds until no
    pod of those Deployments (or of their ReplicaSets) is left.
  - B(O(state=resumed)), in this order - each recorded Deployment of O(deployments) is scaled back to its recorded
    replicas and the run waits up to O(wait_timeout) seconds until each has that many available replicas; with
    O(pause_group) the C(Cluster) of that group gets C(spec.paused=false) and the paused annotation is removed from
    its C(MachineDeployments) and C(MachineSets); with O(remove_records=true) the replica records (and their times)
    are removed; with a wait, the result says how long the controllers were down (RV(controllers_down_seconds)); with
    O(fence=true) the fence is lifted (C(spec.pausedUntil) back to the recorded value, the record and the annotation
    C(hypershift.openshift.io/capi-migration-phase) removed).
  - The version of the paused objects is the storage version of the CRD C(clusters.<pause_group>). With
    O(state=resumed) a group whose CRD is not installed has nothing to unpause; with O(state=quiesced) it is an
    error.
  - Every write is a JSON merge patch sent only when something differs, so a second run changes nothing. In check
    mode nothing is written; the patches a real run would send are returned. Errors
    are not retried - the step fails, naming the object, and the caller rolls back.
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.write
  - hypershift.private_capi.options.holder
  - hypershift.private_capi.hostedcluster
options:
  hcp_namespace:
    description:
      - The HCP namespace whose objects and Deployments are handled.
      - Empty means the HostedCluster's, C(<hostedcluster_namespace>-<hostedcluster_name>) with the dots of the
        name as dashes; without O(hostedcluster_name) it is required.
  state:
    description:
      - V(quiesced) fences, pauses and stops; V(resumed) scales back, unpauses, removes the records and lifts the fence.
    type: str
    choices: [quiesced, resumed]
    default: quiesced
  hostedcluster_name:
    description:
      - Name of the HostedCluster whose operator is fenced (needed with O(fence=true)); with O(state=quiesced) its
        annotations are returned in RV(hostedcluster_annotations) even without O(fence).
    required: false
    default: ""
  fence:
    description:
      - Put up (O(state=quiesced)) or lift (O(state=resumed)) the fence on the HostedCluster.
    type: bool
    default: false
  fence_hold_seconds:
    description:
      - With O(fence=true) and O(state=quiesced), a hold instead of the fence - the pre-install's
        (C(playbooks/preinstall_proxy.yml)). C(spec.pausedUntil) becomes the time this many seconds from now (RFC 3339,
        which HyperShift honours as it honours V(true)), the original recorded as the fence records it, so that the
        migration's fence takes the hold over and lifting it restores the original. If no migration comes, the hold
        ends by itself and HyperShift reconciles the HostedCluster again.
      - Nothing is written when a pause already holds - V(true), or a time at least half a hold away - so a second
        run within half a hold changes nothing.
      - Refused, changing nothing, unless the HostedCluster is V(legacy), V(new) or V(failed) (no migration holds it);
        the write carries the C(resourceVersion) read, so a lock taken meanwhile fails it with a conflict.
      - V(0) (the default) fences until the fence is lifted (C(spec.pausedUntil=true)).
    type: int
    default: 0
    version_added: 1.2.0
  pause_group:
    description:
      - The core CAPI group whose Cluster, MachineDeployments and MachineSets are paused or unpaused -
        V(cluster.x-k8s.io) (standard) or V(cluster.hypershift.openshift.io) (private). Empty leaves them alone.
    type: str
    default: ""
  settle_seconds:
    description:
      - With O(state=quiesced) and O(pause_group), wait this long and fail if a Cluster was un-paused (0 skips the
        check; skipped in check mode).
    type: int
    default: 0
  deployments:
    description:
      - Names of the CAPI-dependent Deployments of the namespace; those that exist are handled, the others ignored.
    type: list
    elements: str
    default: []
  wait_timeout:
    description:
      - Seconds to wait for the pods to go (V(quiesced)) or the Deployments to be available (V(resumed)); 0 does not
        wait. No wait in check mode.
    type: int
    default: 300
  remove_records:
    description:
      - With O(state=resumed), remove the replica records from the Deployments once they are back.
    type: bool
    default: false
  deployment_patches:
    description:
      - With O(state=resumed), JSON merge patches of Deployments (each with C(metadata.name); C(apiVersion), C(kind)
        and C(metadata.namespace) are ignored) sent in the same write that scales each one back, so that one
        rollout brings it back changed - the migrate role passes the API proxy sidecar patches the C(api_proxy) role
        computed (C(private_capi_proxy_steps=prepare)).
      - A patch already in place changes nothing - for a Deployment already back at its record, a server-side dry run of
        the patch judges (a patch of a list, such as the containers, lacks the fields the API server defaults). A
        patch naming a Deployment not in O(deployments) is an error.
    type: list
    elements: dict
    default: []
attributes:
  check_mode:
    details: Reads only - no write is sent (not even a server-side dry run) and nothing is waited for; RV(actions)
      and the diff show the patches that would be sent.
  diff_mode:
    details: C(before) and C(after) hold, per C(Kind/name), the fields each patch changes.
notes:
  - RBAC in the HCP namespace - C(get), C(list) on C(customresourcedefinitions) (cluster-scoped); C(list), C(patch)
    on C(clusters), C(machinedeployments), C(machinesets) of O(pause_group); C(list), C(patch) on
    C(apps/deployments); C(list) on C(pods); with O(fence) C(get), C(patch) on the C(hostedclusters).
seealso:
  - module: hypershift.private_capi.capi_object_migrate
  - module: hypershift.private_capi.migration_state
  - module: hypershift.private_capi.capi_health
"""

EXAMPLES = r"""
- name: Fence the operator and pause the standard CAPI objects of clusters-prod-01 (check that the pause holds)
  hypershift.private_capi.hcp_quiesce:
    hcp_namespace: clusters-prod-01
    hostedcluster_name: prod-01
    fence: true
    pause_group: cluster.x-k8s.io
    settle_seconds: 2

- name: Record and scale the CAPI-dependent Deployments to zero, wait for their pods to go
  hypershift.private_capi.hcp_quiesce:
    hcp_namespace: clusters-prod-01
    deployments: [cluster-api, capi-provider, control-plane-operator]
    wait_timeout: 300
  register: stopped

- name: Scale them back, wait for availability, unpause the private Cluster
  hypershift.private_capi.hcp_quiesce:
    hcp_namespace: clusters-prod-01
    state: resumed
    deployments: [cluster-api, capi-provider, control-plane-operator]
    pause_group: cluster.hypershift.openshift.io
    wait_timeout: 600

- name: Pre-install - hold the operator off hc-01 for two hours (the migration's fence takes the hold over)
  hypershift.private_capi.hcp_quiesce:
    hcp_namespace: clusters-hc-01
    hostedcluster_name: hc-01
    fence: true
    fence_hold_seconds: 7200

- name: Rollback - back to the record, standard objects unpaused, records removed, fence lifted
  hypershift.private_capi.hcp_quiesce:
    hcp_namespace: clusters-prod-01
    state: resumed
    hostedcluster_name: prod-01
    fence: true
    deployments: [cluster-api, capi-provider, control-plane-operator]
    pause_group: cluster.x-k8s.io
    remove_records: true
"""

RETURN = r"""
api_calls: {returned: always, type: dict, sample: {"total": 9, "by_method": {"GET": 6, "PATCH": 3}}, description: "Requests this run sent to the API
  server - C(total) and C(by_method)."}
elapsed_seconds: {returned: always, type: float, sample: 0.21, description: "Wall time of the run."}
core_version:
  description: Storage version of the CRD C(clusters.<pause_group>), or null (no O(pause_group), or not installed).
  returned: always
  type: str
  sample: v1beta2
deployments:
  description: The Deployments of O(deployments) that exist in the namespace, sorted.
  returned: always
  type: list
  elements: str
  sample: [capi-provider, cluster-api]
replicas:
  description: Per Deployment, the recorded replicas (the count it goes back to).
  returned: always
  type: dict
  sample: {"cluster-api": 1, "capi-provider": 1}
paused_until_recorded:
  description: The recorded original C(spec.pausedUntil) of the HostedCluster (V(none) when it was unset).
  returned: with O(fence=true)
  type: str
  sample: none
paused_until:
  description: The HostedCluster's C(spec.pausedUntil) after this run (as written, or as found when nothing was written).
  returned: with O(fence=true)
  type: str
  sample: "2026-12-05T01:30:00Z"
hostedcluster_annotations:
  description: The HostedCluster's annotations as read before the fence was put up or lifted.
  returned: with O(fence=true), and with O(state=quiesced) whenever O(hostedcluster_name) is set
  type: dict
waited_seconds:
  description: Seconds spent waiting for pods to go or Deployments to be available.
  returned: always
  type: float
  sample: 0.4
stopped_at:
  description:
    - When a migration first scaled these Deployments to 0 (UTC, C(%Y-%m-%dT%H:%M:%S.%fZ)), as recorded in the
      annotation C(hypershift.openshift.io/capi-migration-stopped-at) beside the replica record; the earliest of
      them. Kept across runs, so a resumed migration measures the whole window.
    - C(null) when no Deployment carries the record (nothing was stopped, or a release without it stopped them).
  returned: always
  type: str
  sample: "2026-11-24T21:14:03.512004Z"
available_at:
  description: I(state=resumed) with a wait - when every recorded Deployment was available again; else C(null).
  returned: always
  type: str
  sample: "2026-11-24T21:14:09.102113Z"
controllers_down_seconds:
  description:
    - I(state=resumed) with a wait - seconds from I(stopped_at) to I(available_at), the window in which the CAPI
      controllers did not run; else C(null).
  returned: always
  type: float
  sample: 5.59
actions:
  description: The patches sent (or, in check mode, that would be), in order - C(action), C(kind), C(name).
  returned: always
  type: list
  elements: dict
  sample: [{"action": "pause", "kind": "Cluster", "name": "prod-01-x7k2p"}]
lease_token: {returned: "with a lock holder, not in check mode", type: dict, sample: {"id": "5f0c2a9e41d7b3c8", "fenced": null, "waited_seconds": 0.0,
  "lost": null, "unlocked": null}, description: ["This module process's lease token on the HostedCluster's lock (see O(holder)) - C(id); C(fenced),
  the live token of another process it took (C(id), C(run), C(pid), C(host), C(age_seconds)) or null; C(waited_seconds) for that process's writes in
  flight; C(lost), why this process stopped writing, or null; C(unlocked), why it took no token (the HostedCluster is not locked by its run - a re-run
  with nothing to do succeeds, a write is refused), or null."]}
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.quiesce import QuiesceModule
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import API_GROUP, NAMESPACE, OBJECT_NAME
from ansible_collections.hypershift.private_capi.plugins.module_utils.modules import HCP_NAMESPACE_RULE, hostedcluster_options

# options holding a namespace or object names (checked before any API call)
NAME_RULES = [("hcp_namespace", HCP_NAMESPACE_RULE), ("hostedcluster_name", OBJECT_NAME.or_empty("no HostedCluster")),
              ("hostedcluster_namespace", NAMESPACE), ("deployments[]", OBJECT_NAME),
              ("pause_group", API_GROUP.or_empty("leave them alone"))]  # goes into the CRD name clusters.<group>


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(hostedcluster_options(renamed_from={"hcp_namespace": "namespace"},
                                      hostedcluster_name=dict(required=False, default="")))
    spec.update(
        state=dict(type="str", choices=["quiesced", "resumed"], default="quiesced"),
        fence=dict(type="bool", default=False),
        fence_hold_seconds=dict(type="int", default=0),
        holder=dict(type="str", default=""),
        pause_group=dict(type="str", default=""),
        settle_seconds=dict(type="int", default=0),
        deployments=dict(type="list", elements="str", default=[]),
        wait_timeout=dict(type="int", default=300),
        remove_records=dict(type="bool", default=False),
        deployment_patches=dict(type="list", elements="dict", default=[]),
    )
    return spec


def main():
    run_module(argspec, NAME_RULES, QuiesceModule)


if __name__ == "__main__":
    main()
