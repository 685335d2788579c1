#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: deployment_rollout
short_description: Wait until Deployments have rolled out, and measure what the rollout cost them (read-only)
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Read-only. Reads the Deployments of O(deployments) in O(hcp_namespace) until each one that exists has rolled
    out (the test of C(kubectl rollout status) - its template observed, every replica updated
    and available, no old replica left), and returns the rollout's figures - the Pods it replaced and the longest time
    a Deployment had no Ready replica while it wanted one.
  - Between two reads it watches the namespace's Deployments and Pods, and reads again when one of them changes (at
    most once every O(poll_seconds)), otherwise every 5 seconds. Without C(watch) on them it reads every
    O(poll_seconds).
  - Their Pods are read with the Deployments when a Pod or one of the Deployments changed, and otherwise once a
    second (and once more when all have rolled out), not on every read.
  - The zero-stop migration (C(private_capi_migrate_strategy=zero_stop)) puts the API proxy sidecar into the
    CAPI-dependent Deployments ahead of the window; this is the wait of that pre-install, and its figures are the
    pre-install's in the fleet report. With HyperShift's Deployments (one replica, C(RollingUpdate) 25%/25%) the old
    Pod goes only once the new one is Ready, so the gap is expected to be 0; a C(Recreate) strategy shows one here.
  - A Deployment of O(deployments) that does not exist is skipped. Never changes anything; check mode reads the same way.
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.read_only
options:
  hcp_namespace:
    description: The namespace of the Deployments (an HCP namespace).
    type: str
    required: true
  deployments:
    description: The Deployments to wait for.
    type: list
    elements: str
    required: true
  wait_timeout:
    description: Seconds to wait for every one of them to roll out; the module fails naming those that did not.
    type: int
    default: 300
  poll_seconds:
    description: The shortest time between two reads, in seconds (at least 0.1); the gap without a Ready replica is
      measured to this.
    type: float
    default: 0.2
notes:
  - RBAC - C(list) and C(watch) on C(deployments) and C(pods) in O(hcp_namespace) (without C(watch) it polls).
seealso:
  - module: hypershift.private_capi.hcp_migrate_window
"""

EXAMPLES = r"""
- name: Wait for the sidecars' rollout in an HCP namespace and measure it
  hypershift.private_capi.deployment_rollout:
    hcp_namespace: clusters-prod-01
    deployments: [cluster-api, capi-provider, cluster-autoscaler, machine-approver]
    wait_timeout: 600
  register: rollout

- name: Say what it cost
  ansible.builtin.debug:
    msg: "{{ rollout.pods_replaced }} Pods replaced, longest gap without a Ready replica {{ rollout.longest_unready_seconds }} s"
"""

RETURN = r"""
api_calls: {returned: success, type: dict, description: "Requests this run sent to the API server - C(total) and C(by_method)."}
elapsed_seconds: {returned: success, type: float, description: "Wall time of the run."}
deployments:
  description: One entry per Deployment of O(deployments) that exists, by name.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: The Deployment.
      type: str
      sample: cluster-api
    pods_replaced:
      description: The Pods seen during the wait that were gone at its end.
      type: list
      elements: str
      sample: [cluster-api-5d8f7c9b4-x2k9p]
    longest_unready_seconds:
      description: The longest time it had no Ready replica while it wanted one.
      type: float
      sample: 0.0
pods_replaced:
  description: Pods replaced, over all the Deployments.
  returned: success
  type: int
  sample: 4
longest_unready_seconds:
  description: The longest time any of them had no Ready replica.
  returned: success
  type: float
  sample: 0.0
waited_seconds:
  description: Seconds from the first read to the last.
  returned: success
  type: float
  sample: 21.4
polls:
  description: Reads made.
  returned: success
  type: int
  sample: 108
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.rollout import RolloutModule
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import NAMESPACE, OBJECT_NAME
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module

NAME_RULES = [("hcp_namespace", NAMESPACE), ("deployments[]", OBJECT_NAME)]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(
        hcp_namespace=dict(type="str", required=True),
        deployments=dict(type="list", elements="str", required=True),
        wait_timeout=dict(type="int", default=300),
        poll_seconds=dict(type="float", default=0.2),
    )
    return spec


def main():
    run_module(argspec, NAME_RULES, RolloutModule)


if __name__ == "__main__":
    main()
