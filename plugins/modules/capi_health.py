#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: capi_health
short_description: Health checks of the CAPI objects of one hosted control plane namespace after a migration
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Read-only. Lists every kind of O(kinds) in its target group (one LIST per kind) and runs the enhancement's
    health checks on them, failing with one line per failed check when any fails.
  - B(Cluster) - at least one; each in a phase of O(cluster_phases), infrastructure ready (v1beta1
    C(status.infrastructureReady) or v1beta2 C(status.initialization.infrastructureProvisioned)), not paused.
  - B(Counts) - per kind, as many objects as O(source_counts) says there were sources, minus the O(not_copied) of
    that kind.
  - B(Machines) - each in a phase of O(machine_phases) (unset counts as V(Pending)), except Machines whose source
    (same name, in the kind's C(source_group)) is already unhealthy - those were unhealthy before the migration.
  - Objects on their way out are neither counted nor judged by phase - those being deleted and those an owner being
    deleted takes along (by C(ownerReferences), as the garbage collector does). An example is a Machine whose deletion
    C(capi_object_migrate) carried across (O(hypershift.private_capi.capi_object_migrate#module:carry_deletions)).
    Its controllers may finish the deletion at any moment.
  - B(Conversion) - the C(Cluster) kind is also read at the other CAPI version (V(v1beta1) when its entry says
    V(v1beta2), and the reverse), which the API server converts through the CRD's conversion webhook (for the private
    twins, the collection's conversion shim); a failed read fails the check. A version the CRD does not serve is
    skipped.
  - B(Deployments) - each of O(deployments) has all of its C(spec.replicas) available.
  - With O(stable_seconds) the checks run again after that many seconds and must still pass.
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.read_only
  - hypershift.private_capi.hostedcluster.hcp_namespace_required
options:
  kinds:
    description:
      - The kinds to check, as M(hypershift.private_capi.capi_object_migrate) returns them in
        RV(hypershift.private_capi.capi_object_migrate#module:kinds) - each with C(kind), C(resource), C(version),
        C(target_group) (read) and C(source_group) (for the Machines' sources).
        Must include the C(Cluster) kind.
    type: list
    elements: dict
    required: true
  source_counts:
    description:
      - Per kind, the number of source objects - a number, or capi_object_migrate's
        RV(hypershift.private_capi.capi_object_migrate#module:counts) entry. Of an entry, C(remaining) is used (the
        sources less those on their way out), or C(found) where there is no C(remaining).
    type: dict
    default: {}
  not_copied:
    description:
      - Objects counted in O(source_counts) that were deliberately not copied (each with its C(kind)). Objects that
        were being deleted need no entry when O(source_counts) comes from C(capi_object_migrate) (its C(remaining)
        leaves them out).
    type: list
    elements: dict
    default: []
  cluster_phases:
    description:
      - Healthy Cluster phases.
    type: list
    elements: str
    default: [Provisioned, Provisioning]
  machine_phases:
    description:
      - Healthy Machine phases.
    type: list
    elements: str
    default: [Running, Provisioning, Pending, Provisioned]
  deployments:
    description:
      - Deployments of the namespace that must have all their replicas available.
    type: list
    elements: str
    default: []
  stable_seconds:
    description:
      - Run the checks again after this many seconds; both rounds must pass (0 checks once).
    type: int
    default: 0
notes:
  - RBAC in the HCP namespace - C(list) on the resources of O(kinds) in their target groups, on C(machines) of the
    source group and, with O(deployments), on C(apps/deployments).
seealso:
  - module: hypershift.private_capi.capi_object_migrate
  - module: hypershift.private_capi.hcp_quiesce
"""

EXAMPLES = r"""
- name: Copy the CAPI objects to the private groups
  hypershift.private_capi.capi_object_migrate:
    hcp_namespace: clusters-prod-01
  register: copy

- name: Check the copies are healthy, and still after 30 seconds
  hypershift.private_capi.capi_health:
    hcp_namespace: clusters-prod-01
    kinds: "{{ copy.kinds }}"
    source_counts: "{{ copy.counts }}"
    deployments: [cluster-api, capi-provider]
    stable_seconds: 30
"""

RETURN = r"""
api_calls: {returned: success, type: dict, description: "Requests this run sent to the API server - C(total) and C(by_method)."}
elapsed_seconds: {returned: success, type: float, description: "Wall time of the run."}
failures:
  description: One line per failed check (empty when healthy); the module fails when there is any.
  returned: always
  type: list
  elements: str
  sample: ["Cluster prod-01-x7k2p phase is Failed, expected one of Provisioned/Provisioning"]
counts:
  description: Objects found per kind in the target groups (last round).
  returned: always
  type: dict
  sample: {"Cluster": 1, "Machine": 3}
unhealthy_before:
  description: Names of the Machines whose source was already unhealthy (not failures).
  returned: always
  type: list
  elements: str
rounds:
  description: Rounds of checks run (2 with O(stable_seconds) when the first passed).
  returned: always
  type: int
  sample: 1
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.health import HealthModule, health_options
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import NAMESPACE, OBJECT_NAME
from ansible_collections.hypershift.private_capi.plugins.module_utils.modules import HCP_NAMESPACE_REQUIRED, option

# options holding a namespace or object names (checked before any API call)
NAME_RULES = [("hcp_namespace", NAMESPACE), ("deployments[]", OBJECT_NAME)]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(health_options())
    spec.update(hcp_namespace=option(HCP_NAMESPACE_REQUIRED, renamed_from="namespace"))
    return spec


def main():
    run_module(argspec, NAME_RULES, HealthModule)


if __name__ == "__main__":
    main()
