#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: hcp_migrate_window
short_description: The window of one hosted control plane's migration - copy its CAPI objects, flip or restart the controllers
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - The window of a migration in one module run - no module start-up and no Ansible task in between - by the
    strategy O(strategy) names. RV(marks) says when each phase began.
  - B(Strategy zero_stop) - the CAPI controllers never stop. The Deployments of O(deployments) run the API proxy
    sidecar already, in pass-through (put in ahead of the window by the C(api_proxy) role with
    C(private_capi_proxy_mode=passthrough), as the C(migrate) role's phase C(sidecar) does with
    C(private_capi_migrate_strategy=zero_stop)), and CAPI reconciliation is paused
    (M(hypershift.private_capi.hcp_quiesce), before this run). B(check) - a Deployment without sidecar, with a
    sidecar that does not follow the namespace's mode ConfigMap C(capi-proxy-mode), or a mode ConfigMap that is
    missing, refuses the run before any change, naming the Deployment and the step that fixes it. A Deployment still
    rolling its sidecar out (a Pod not Ready yet, or not Ready again after a probe failed for a while) is waited for
    up to O(available_timeout) seconds first (C(rollout_waited_seconds) of RV(flip)), then refused the same way.
    B(copy) - as below. B(flip) - one write sets the mode ConfigMap's C(data.mode) to C(translate), then the run
    waits up to O(flip_timeout) seconds until the sidecar of every running Pod of those Deployments has acknowledged
    it (C(data.applied.<pod>)); each sidecar ends its open watches (410 Expired), so the controllers re-list in the
    private groups, without a restart. B(resume) - the copies of O(pause_group) are unpaused (RV(unpaused_at)).
    B(signal) - as below. RV(controllers_down_seconds) is 0. With O(source_pause_group), the run pauses the sources itself
    after the check (phase B(pause)). A run that finds the namespace flipped already (an
    earlier run was killed after the flip) takes the copy as done (a dry run gives its report) and goes on from the
    flip's wait.
  - B(Strategy scale_down) - the window in which a hosted cluster has no CAPI controllers, so that they are down for
    the work alone, in this order.
  - B(scale_down) - each Deployment of O(deployments) that exists gets its replica count recorded once (annotations
    C(hypershift.openshift.io/capi-migration-replicas) and C(...-stopped-at), as
    M(hypershift.private_capi.hcp_quiesce) writes them) and is scaled to 0; the run waits up to
    O(scale_down_timeout) seconds until no pod of those Deployments is left.
  - B(copy) - every CAPI object of the namespace is copied to the private groups, owners first, status included,
    as M(hypershift.private_capi.capi_object_migrate) does with O(verify), O(require_paused) and O(carry_deletions)
    (the source C(Cluster) must be paused; the migrate role pauses it before).
  - B(resume) - each recorded Deployment is scaled back to its record with its patch of O(deployment_patches) (the
    API proxy sidecar) in the same write, and the run waits up to O(available_timeout) seconds until each has that
    many available replicas; then the C(Cluster) of O(pause_group) (the private copy) and its MachineDeployments
    and MachineSets are unpaused. The window ends when the Deployments are available (RV(controllers_down_seconds)).
  - B(signal) - with O(hostedcluster_name), the HostedControlPlane gets O(signal_annotations), so the
    control-plane-operator uses the private types. The controllers run again by then.
  - The replica records stay on the Deployments (a later step removes them, M(hypershift.private_capi.hcp_quiesce)
    with O(hypershift.private_capi.hcp_quiesce#module:remove_records=true)), so a run interrupted at any point is
    re-run to the same end - the Deployments go back to the first record and the copy completes what is missing.
  - B(Idempotence.) When every Deployment is back at its record with its patch in place and a dry-run copy finds
    nothing to do (a patch the object holds already, as a server-side dry run of it judges - the API server's
    defaults included), an earlier run closed the window - the Deployments are not stopped again, the dry-run copy is the
    copy step's result (not verified again - the controllers have run on the copies since, that run verified them
    before starting the controllers), and the run reports C(changed=false) with RV(stopped=false).
  - A failure stops the run where it is and names its phase (RV(phase)) beside what was done; the caller rolls back
    (the migrate role does). Nothing is retried here except the copy's reads.
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.write
  - hypershift.private_capi.options.deployments
  - hypershift.private_capi.options.extra_groups
  - hypershift.private_capi.options.holder
  - hypershift.private_capi.options.parallelism
  - hypershift.private_capi.hostedcluster
options:
  hcp_namespace:
    description:
      - The HCP namespace whose Deployments stop and whose CAPI objects are copied.
      - Empty means the HostedCluster's, C(<hostedcluster_namespace>-<hostedcluster_name>) with the dots of the
        name as dashes; without O(hostedcluster_name) it is required.
  deployment_patches:
    description:
      - JSON merge patches of Deployments (each with C(metadata.name)) sent in the write that scales each one back,
        as M(hypershift.private_capi.hcp_quiesce) takes them - the migrate role passes the API proxy sidecar patches
        the C(api_proxy) role computed before the window. A patch naming a Deployment not present is an error.
    type: list
    elements: dict
    default: []
  pause_group:
    description:
      - The core CAPI group whose Cluster, MachineDeployments and MachineSets are unpaused once the Deployments are
        back - V(cluster.hypershift.openshift.io), the copies. Empty leaves them alone (check mode - no copy exists).
    type: str
    default: ""
  require_paused:
    description:
      - Refuse to copy while a source C(Cluster) is not paused (see M(hypershift.private_capi.capi_object_migrate)).
    type: bool
    default: true
  carry_deletions:
    description:
      - Copy the objects being deleted too and carry their deletions to the copies (see
        M(hypershift.private_capi.capi_object_migrate)).
    type: bool
    default: false
  verify:
    description:
      - Read every copy back and compare it with its source, field by field, status included, before the
        Deployments start again; fail listing the differences.
    type: bool
    default: true
  hostedcluster_name:
    description:
      - Name of the HostedCluster, whose lock O(holder) holds, and of its HostedControlPlane in O(hcp_namespace),
        which gets O(signal_annotations) once the controllers are back. Empty sends no signal.
    required: false
    default: ""
    aliases: [hostedcontrolplane_name]
  strategy:
    description:
      - V(zero_stop) keeps the controllers running and flips the proxy sidecars put in ahead; V(scale_down) stops the
        Deployments for the window and starts them with the sidecar (O(deployment_patches)).
    type: str
    choices: [zero_stop, scale_down]
    default: zero_stop
  flip_timeout:
    description:
      - With O(strategy=zero_stop), seconds to wait for every running sidecar to acknowledge the flip.
    type: int
    default: 60
  source_pause_group:
    description:
      - With O(strategy=zero_stop), the group whose C(Cluster), MachineDeployments and MachineSets this run pauses
        after the check and before the copy (phase B(pause), as M(hypershift.private_capi.hcp_quiesce) pauses them),
        so that CAPI reconciliation is paused for this run's work alone; empty when the caller paused them.
    type: str
    default: ""
  settle_seconds:
    description:
      - With O(source_pause_group), seconds the pause must hold before the copy (see
        M(hypershift.private_capi.hcp_quiesce)); 0 does not check.
    type: int
    default: 0
  signal_annotations:
    description:
      - Annotations set on the HostedControlPlane (only those it does not hold already are written).
      - Default is the control-plane-operator's signal to use the private types,
        C(hypershift.openshift.io/private-capi-types=true); an empty mapping sends none.
    type: dict
attributes:
  check_mode:
    details: The Deployments and the HostedControlPlane get no write (nothing is waited for); the copies are written
      with the server-side dry run C(dryRun=All); the copy step's C(plan) (RV(copied)) and the diff show what a real run
      would do.
  diff_mode:
    details: One entry for the scale down, one per created or changed copy, one for the start and one for the signal.
notes:
  - RBAC in the HCP namespace - that of M(hypershift.private_capi.hcp_quiesce) (Deployments, pods, the private
    core group) and of M(hypershift.private_capi.capi_object_migrate) without O(hypershift.private_capi.capi_object_migrate#module:delete_source);
    C(get), C(patch) on C(hostedcontrolplanes) with O(hostedcluster_name).
  - RBAC for the managers' leader Leases - C(list) on C(pods) and C(coordination.k8s.io/leases) in the HCP namespace;
    where a Lease is handed over C(update) on leases and C(get) on C(nodes).
seealso:
  - module: hypershift.private_capi.hcp_quiesce
  - module: hypershift.private_capi.capi_object_migrate
  - module: hypershift.private_capi.migration_state
"""

EXAMPLES = r"""
- name: Stop, copy, start with the proxy sidecars, signal (the Cluster of clusters-prod-01 already paused)
  hypershift.private_capi.hcp_migrate_window:
    hcp_namespace: clusters-prod-01
    deployments: [cluster-api, capi-provider, control-plane-operator]
    deployment_patches: "{{ api_proxy_patches }}"
    pause_group: cluster.hypershift.openshift.io
    hostedcluster_name: prod-01  # gets the signal hypershift.openshift.io/private-capi-types=true
  register: window

- name: How long the controllers were down, and what of it was waiting on Kubernetes
  ansible.builtin.debug:
    msg: "{{ window.controllers_down_seconds }} s, of which {{ window.waited_seconds }} s waiting"

- name: What the window would do, without writing anything
  hypershift.private_capi.hcp_migrate_window:
    hcp_namespace: clusters-prod-01
    deployments: [cluster-api, capi-provider, control-plane-operator]
  check_mode: true
  register: preview
"""

RETURN = r"""
api_calls: {returned: always, type: dict, sample: {"total": 61, "by_method": {"GET": 30, "POST": 12, "PUT": 12, "PATCH": 7}}, description: "Requests
  this run sent to the API server - C(total) and C(by_method)."}
elapsed_seconds: {returned: always, type: float, sample: 4.61, description: "Wall time of the run."}
phase:
  description: The last phase begun - V(check), V(pause), V(scale_down), V(copy), V(flip), V(resume) or V(signal); on a failure, the one that
    failed.
  returned: always
  type: str
  sample: signal
marks:
  description: When each phase began, in order - C(name) and C(at) (UTC, C(%Y-%m-%dT%H:%M:%S.%f)).
  returned: always
  type: list
  elements: dict
  sample: [{"name": "scale_down", "at": "2026-11-25T13:01:02.000100"}, {"name": "copy", "at": "2026-11-25T13:01:03.512004"}]
stopped:
  description: Whether this run stopped the Deployments (false when an earlier run had closed the window, and with
    O(strategy=zero_stop)).
  returned: always
  type: bool
strategy:
  description: The strategy of this run, O(strategy).
  returned: always
  type: str
  sample: zero_stop
flip:
  description: With O(strategy=zero_stop), the flip - C(mode), C(changed) (this run wrote it), C(pods) (the Pods
    whose sidecars acknowledged it), C(waited_seconds) (for the acknowledgements) and C(rollout_waited_seconds) (the
    check's wait for a rollout to finish).
  returned: with O(strategy=zero_stop), once the check has begun
  type: dict
  sample: {"mode": "translate", "changed": true, "pods": ["cluster-api-7c9d8f6b5-x2x7k"], "waited_seconds": 0.31,
    "rollout_waited_seconds": 0.0}
unpaused_at:
  description: With O(strategy=zero_stop), when the copies' pause was lifted (UTC, C(%Y-%m-%dT%H:%M:%S.%f)); null
    until then.
  returned: with O(strategy=zero_stop), once the check has begun
  type: str
  sample: "2026-11-29T01:02:03.456789"
scale_down:
  description: The stop step's result, as M(hypershift.private_capi.hcp_quiesce) returns it with
    O(hypershift.private_capi.hcp_quiesce#module:state=quiesced) (C(deployments), C(replicas), C(actions),
    C(waited_seconds), C(stopped_at)).
  returned: when this run stopped the Deployments
  type: dict
copied:
  description: The copy step's result, as M(hypershift.private_capi.capi_object_migrate) returns it (C(counts),
    C(kinds), C(plan), C(uid_map), C(skipped), C(conflicts), C(verify)). Not named C(copy) - in a template
    C(window.copy) would be the dictionary's own method.
  returned: once the copy has begun
  type: dict
resume:
  description: The start step's result, as M(hypershift.private_capi.hcp_quiesce) returns it with
    O(hypershift.private_capi.hcp_quiesce#module:state=resumed) (C(deployments), C(replicas), C(actions),
    C(waited_seconds), C(stopped_at), C(available_at), C(controllers_down_seconds)).
  returned: once the resume has begun
  type: dict
stopped_at:
  description: When a migration first scaled these Deployments to 0 (the record kept across runs, C(...Z)), or null.
  returned: always
  type: str
  sample: "2026-11-25T13:01:02.000311Z"
available_at:
  description:
    - When every Deployment was available again, or null (no wait, check mode).
    - When an earlier run closed the window (RV(stopped=false)), when their pods were Ready again by the pods' own
      Ready times (to the second), and RV(waited_seconds) is the whole window - none of it was this run's work.
  returned: always
  type: str
  sample: "2026-11-25T13:01:06.402113Z"
controllers_down_seconds:
  description: Seconds from RV(stopped_at) to RV(available_at) - the window without CAPI controllers - or null.
  returned: always
  type: float
  sample: 4.4
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
  description: Of the window, the seconds spent waiting on Kubernetes (pods to go, Deployments to be available).
  returned: always
  type: float
  sample: 2.9
signal:
  description: C(changed) (whether the HostedControlPlane got an annotation) and C(annotations) (those asked for).
  returned: always
  type: dict
  sample: {"changed": true, "annotations": {"hypershift.openshift.io/private-capi-types": "true"}}
lease_token: {returned: "with a lock holder, not in check mode", type: dict, sample: {"id": "5f0c2a9e41d7b3c8", "fenced": null, "waited_seconds": 0.0,
  "lost": null, "unlocked": null}, description: ["This module process's lease token on the HostedCluster's lock (see O(holder)) - C(id); C(fenced),
  the live token of another process it took (C(id), C(run), C(pid), C(host), C(age_seconds)) or null; C(waited_seconds) for that process's writes in
  flight; C(lost), why this process stopped writing, or null; C(unlocked), why it took no token (the HostedCluster is not locked by its run - a re-run
  with nothing to do succeeds, a write is refused), or null."]}
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.window import WindowService
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.quiesce import deployments_options
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.strategy import STRATEGIES, ZERO_STOP
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import copy_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import API_GROUP, NAMESPACE, OBJECT_NAME
from ansible_collections.hypershift.private_capi.plugins.module_utils.modules import HCP_NAMESPACE_RULE, hostedcluster_options

# options holding a namespace or object names (checked before any API call)
NAME_RULES = [("hcp_namespace", HCP_NAMESPACE_RULE), ("deployments[]", OBJECT_NAME),
              ("hostedcluster_name", OBJECT_NAME.or_empty("no signal")), ("hostedcluster_namespace", NAMESPACE),
              ("pause_group", API_GROUP.or_empty("leave them alone"))]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = copy_argspec()
    spec.update(hostedcluster_options(
        renamed_from={"hcp_namespace": "namespace", "hostedcluster_name": "hostedcontrolplane_name"},
        hostedcluster_name=dict(required=False, default="")))
    spec.update(deployments_options())
    spec.update(
        deployment_patches=dict(type="list", elements="dict", default=[]),
        pause_group=dict(type="str", default=""),
        require_paused=dict(type="bool", default=True),
        carry_deletions=dict(type="bool", default=False),
        verify=dict(type="bool", default=True),
        holder=dict(type="str", default=""),
        signal_annotations=dict(type="dict"),
        strategy=dict(type="str", default=ZERO_STOP, choices=list(STRATEGIES)),
        flip_timeout=dict(type="int", default=60),
        source_pause_group=dict(type="str", default=""),
        settle_seconds=dict(type="int", default=0),
    )
    return spec


def main():
    run_module(argspec, NAME_RULES, WindowService)


if __name__ == "__main__":
    main()
