#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: capi_access_review
short_description: Pre-flight - whether the identity holds every right an entry point of the collection uses
version_added: 1.1.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Read-only. Asks the API server whether the connection's identity holds each right O(entry_point) uses, as the
    collection's one RBAC source lists them (the rules the shipped C(meta/rbac/<entry point>.yaml) grant and
    C(docs/operator-guide.md) tabulates), in the namespaces given.
  - A rule on all resources of a group is checked for each resource the API serves there (discovery), so rules
    naming the kinds one by one pass as well as a wildcard; groups the API does not serve need nothing.
  - One C(SelfSubjectRulesReview) per namespace, then a C(SelfSubjectAccessReview) for each right that review does not
    show (the authorizer's own answer). The API server stores neither; nothing changes, in check mode or not.
  - Conditional rules are asked too (the run may come to need them), among them the rules held only to be granted
    (the source grants no C(escalate) or C(bind)).
  - A missing right is a result (RV(allowed) false, with RV(missing_rules) to add and RV(message)), or a failure with
    O(fail_on_denied).
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.read_only
options:
  entry_point:
    description:
      - Whose rules to check - the playbooks C(migrate_fleet.yml) (V(migrate)), C(verify_fleet.yml) (V(verify)),
        C(rollback.yml) (V(rollback)), or the inventory plugin (V(inventory)).
    type: str
    required: true
    choices: [migrate, verify, rollback, inventory]
  hostedcluster_namespaces:
    description: HostedCluster namespaces to check the rules of that scope in.
    type: list
    elements: str
    default: []
  discover_hostedcluster_namespaces:
    description:
      - Also check the HostedCluster namespaces' rules in the namespace of every HostedCluster the identity can list
        (one LIST of all namespaces), as the fleet playbooks do once per management cluster before their first change.
      - When the identity may not list HostedClusters, that right is reported missing like any other.
    type: bool
    default: false
  hcp_namespaces:
    description: HCP namespaces to check the rules of that scope in.
    type: list
    elements: str
    default: []
  operator_namespace:
    description: The HyperShift operator's namespace; V(null) leaves that scope's rules out.
    type: str
    default: hypershift
  subject:
    description: What the check is for, the first words of RV(message) (for example the HostedCluster).
    type: str
    default: the access review
  fail_on_denied:
    description: Fail when a right is missing, instead of returning RV(allowed) false.
    type: bool
    default: false
notes:
  - RBAC - C(create) on C(selfsubjectrulesreviews) and C(selfsubjectaccessreviews) (every authenticated identity
    may, through the default ClusterRole C(system:basic-user)), and discovery.
seealso:
  - module: hypershift.private_capi.migration_state
"""

EXAMPLES = r"""
- name: Check, before the first change, that the job may migrate hc-01
  hypershift.private_capi.capi_access_review:
    entry_point: migrate
    hostedcluster_namespaces: [clusters]
    hcp_namespaces: [clusters-hc-01]
    subject: clusters/hc-01
  register: access

- name: Refuse the cluster with the rules to add
  ansible.builtin.fail:
    msg: "{{ access.message }}"
  when: not access.allowed
"""

RETURN = r"""
allowed:
  description: Whether every checked right is held.
  returned: success
  type: bool
  sample: false
namespaces:
  description: The namespaces checked, per scope (with O(discover_hostedcluster_namespaces), those found).
  returned: success
  type: dict
  sample: {"hostedcluster-namespaces": ["clusters"], "hcp-namespaces": ["clusters-hc-01"],
           "operator-namespace": ["hypershift"]}
checked:
  description: Rights checked (verb, group, resource, namespace).
  returned: success
  type: int
  sample: 214
reviews:
  description: Access and rules reviews sent.
  returned: success
  type: int
  sample: 3
denied:
  description: Each right not held.
  returned: always
  type: list
  elements: dict
  sample: [{"verb": "patch", "api_group": "apps", "resource": "deployments", "namespace": "clusters-hc-01",
            "scope": "hcp-namespaces"}]
missing_rules:
  description: The rules to add, one per namespace and resource with its verbs, and why the collection uses them.
  returned: always
  type: list
  elements: dict
  sample: [{"scope": "hcp-namespaces", "namespace": "clusters-hc-01", "apiGroups": ["apps"],
            "resources": ["deployments"], "verbs": ["patch"], "why": "Scale the CAPI-dependent Deployments to 0."}]
message:
  description: With a missing right, what is missing, where, and what to do.
  returned: when a right is missing
  type: str
api_calls: {returned: success, type: dict, description: "Requests this run sent to the API server - C(total) and C(by_method)."}
elapsed_seconds: {returned: success, type: float, description: "Wall time of the run."}
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac.service import AccessReviewModule
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import NAMESPACE
from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac.rules import JOB_ENTRY_POINTS

NAME_RULES = [("hostedcluster_namespaces[]", NAMESPACE), ("hcp_namespaces[]", NAMESPACE),
              ("operator_namespace", NAMESPACE)]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(
        entry_point=dict(type="str", required=True, choices=list(JOB_ENTRY_POINTS)),
        hostedcluster_namespaces=dict(type="list", elements="str", default=[]),
        discover_hostedcluster_namespaces=dict(type="bool", default=False),
        hcp_namespaces=dict(type="list", elements="str", default=[]),
        operator_namespace=dict(type="str", default="hypershift"),
        subject=dict(type="str", default="the access review"),
        fail_on_denied=dict(type="bool", default=False),
    )
    return spec


def main():
    run_module(argspec, NAME_RULES, AccessReviewModule)


if __name__ == "__main__":
    main()
