#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: capi_steady
short_description: Whether one HostedCluster is steady enough to migrate, and if not what it waits for
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Read-only. A migration pauses the cluster and stops its CAPI controllers; anything in flight then stays half
    done in the one window where nobody can finish it (a Machine whose node drains and whose instance terminates, a
    MachineDeployment half rolled out, a NodePool upgrading). This module says whether anything is in flight.
  - B(Steady) means all of - no CAPI object of O(hcp_namespace) (any kind of the standard groups C(cluster.x-k8s.io)
    and C(*.cluster.x-k8s.io)) is being deleted; every C(MachineDeployment) is rolled out (one C(MachineSet) with
    replicas; replicas, up-to-date, ready and desired replicas equal; its spec observed); no C(Machine) is
    C(Pending), C(Provisioning), C(Provisioned) or C(Deleting), and none is being remediated (condition
    C(HealthCheckSucceeded) or C(OwnerRemediated) C(False)); no C(MachineHealthCheck) has fewer healthy Machines
    than expected while it may still remediate; no C(NodePool) of the HostedCluster is updating (C(UpdatingVersion),
    C(UpdatingConfig), C(UpdatingPlatformMachineTemplate)); the C(HostedCluster) is C(Available) and not
    C(Progressing); the standard CRDs' conversion webhook answers (the C(Cluster)s are read at a version other
    than the stored one, which the API server converts through it); and, where the private C(Cluster) twin is
    installed with a conversion webhook, so does the collection's conversion shim (a server-side dry-run create of
    a private C(Cluster) at the version it does not store; nothing is written).
  - Each reason names the object and what is waited for. With O(wait_timeout), the module reads again every
    O(poll_seconds) until the cluster is steady or the time is up (the controllers still run meanwhile, so
    deletions and rollouts can finish). A cluster that is not steady is a result (RV(steady) false), not a failure.
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.read_only
  - hypershift.private_capi.hostedcluster
options:
  wait_timeout:
    description:
      - Seconds to keep reading until the cluster is steady; 0 reads once.
    type: int
    default: 0
  poll_seconds:
    description: Seconds between two reads while waiting (at least 1).
    type: int
    default: 5
notes:
  - RBAC - C(get) on the HostedCluster and C(list) on C(nodepools) in O(hostedcluster_namespace); C(list) on
    C(customresourcedefinitions); C(list) on every standard CAPI resource in O(hcp_namespace); C(create) (a server-side
    dry run, nothing is written) on C(clusters.cluster.hypershift.openshift.io) in O(hcp_namespace) where that twin is
    installed.
seealso:
  - module: hypershift.private_capi.hcp_quiesce
  - module: hypershift.private_capi.capi_object_migrate
"""

EXAMPLES = r"""
- name: Wait up to 10 minutes for the HostedCluster to be steady
  hypershift.private_capi.capi_steady:
    hcp_namespace: clusters-prod-01
    hostedcluster_name: prod-01
    wait_timeout: 600
  register: steady

- name: Say what it waits for
  ansible.builtin.debug:
    msg: "{{ 'steady' if steady.steady else steady.reasons }}"
"""

RETURN = r"""
api_calls: {returned: success, type: dict, description: "Requests this run sent to the API server - C(total) and C(by_method)."}
elapsed_seconds: {returned: success, type: float, description: "Wall time of the run."}
steady:
  description: Whether nothing was in flight at the last read.
  returned: success
  type: bool
  sample: false
reasons:
  description: What keeps the cluster from being steady at the last read, one line per object (empty when steady).
  returned: success
  type: list
  elements: str
  sample: ["Machine clusters-prod-01/prod-01-pool-1-x7k2p-9vq2d is being deleted since 2026-11-24T21:14:03Z
           (finalizers machine.cluster.x-k8s.io): waiting for its deletion to finish"]
waited_seconds:
  description: Seconds from the first read to the last.
  returned: success
  type: float
  sample: 12.0
polls:
  description: Reads made.
  returned: success
  type: int
  sample: 3
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.steady import SteadyService
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.modules import (
    HOSTEDCLUSTER_NAME_RULES, hostedcluster_options)


NAME_RULES = HOSTEDCLUSTER_NAME_RULES


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(hostedcluster_options(renamed_from={"hcp_namespace": "namespace"}))
    spec.update(
        wait_timeout=dict(type="int", default=0),
        poll_seconds=dict(type="int", default=5),
    )
    return spec


def main():
    run_module(argspec, NAME_RULES, SteadyService)


if __name__ == "__main__":
    main()
