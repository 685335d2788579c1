#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: k8s_lists
short_description: Read several Kubernetes collections (or named objects) in one module run (read-only)
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Read-only. LISTs every collection named in O(lists) - in parallel, following C(continue) - and returns each one's
    objects in the order asked, shaped like a looped M(kubernetes.core.k8s_info) (RV(results[].resources)).
  - One module process instead of one per collection - each M(kubernetes.core.k8s_info) run costs a Python start
    and a client import (about 0.8 s on two cores), which is most of the time a role spends reading.
  - Kinds are resolved as M(kubernetes.core.k8s_info) resolves them (API discovery - kind, plural, singular or short
    name). A kind the server does not serve gives RV(results[].api_found=false) and no objects, as
    M(kubernetes.core.k8s_info) does.
  - Never changes anything; check mode reads the same way.
  - Used by the roles C(hypershift.private_capi.api_proxy) (Deployments and the RBAC the private-group grants derive
    from), C(hypershift.private_capi.migrate) (the private objects a rollback deletes, one LIST per private kind),
    C(hypershift.private_capi.conversion_shim) (the fleet exporter and its alerts) and
    C(hypershift.private_capi.dual_operator) (the operator namespace's Deployments).
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.read_only
options:
  lists:
    description:
      - The collections to read, in the order RV(results) returns them.
    type: list
    elements: dict
    required: true
    suboptions:
      api_version:
        description:
          - C(group/version) of the kind, or C(v1) for the core group.
        type: str
        required: true
      kind:
        description:
          - Kind (or plural, singular or short name) to list.
        type: str
        required: true
      namespace:
        description:
          - Namespace to list in; empty lists a namespaced kind in every namespace. Ignored for cluster-scoped kinds.
          - A namespace given must exist (one GET of it per distinct namespace, see the notes); a 403 on that GET
            counts as unknown.
        type: str
        default: ""
      label_selectors:
        description:
          - Label selectors, ANDed (as in M(kubernetes.core.k8s_info)).
        type: list
        elements: str
        default: []
      field_selectors:
        description:
          - Field selectors, ANDed (as in M(kubernetes.core.k8s_info)).
        type: list
        elements: str
        default: []
      name:
        description:
          - Read the one object of this name (a GET) instead of the collection - RV(results[].resources) holds it, or
            nothing when it does not exist, as M(kubernetes.core.k8s_info) with a name returns it.
          - Not with O(lists[].label_selectors) or O(lists[].field_selectors).
        type: str
        default: ""
  parallelism:
    description:
      - LISTs in flight at once.
    type: int
    default: 4
notes:
  - RBAC - C(list) on the resource of each O(lists) entry in its namespace (cluster-wide for an empty namespace or a
    cluster-scoped kind), C(get) instead for an entry with O(lists[].name); C(get) on C(namespaces) for the namespaces
    named (optional, see below).
"""

EXAMPLES = r"""
- name: Deployments of an HCP namespace and the RBAC they are bound by, in one module run
  hypershift.private_capi.k8s_lists:
    kubeconfig: ~/.kube/management-cluster
    lists:
      - {api_version: apps/v1, kind: Deployment, namespace: clusters-prod-01}
      - {api_version: rbac.authorization.k8s.io/v1, kind: RoleBinding, namespace: clusters-prod-01}
      - {api_version: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding}
  register: found

- name: Use them as a looped k8s_info's results
  ansible.builtin.debug:
    msg: "{{ found.results[0].resources | map(attribute='metadata.name') | list }}"

- name: One Deployment by name (a GET; resources is empty when it does not exist) and a cluster-wide LIST, in one run
  hypershift.private_capi.k8s_lists:
    lists:
      - {api_version: apps/v1, kind: Deployment, namespace: hypershift, name: operator}
      - {api_version: apiextensions.k8s.io/v1, kind: CustomResourceDefinition}

- name: HostedClusters not yet migrated, in every namespace
  hypershift.private_capi.k8s_lists:
    lists:
      - api_version: hypershift.openshift.io/v1beta1
        kind: HostedCluster
        label_selectors: ["hypershift.openshift.io/capi-migration-state!=migrated"]
"""

RETURN = r"""
api_calls: {returned: success, type: dict, sample: {"total": 3, "by_method": {"GET": 3}}, description: "Requests this run sent to the API server -
  C(total) and C(by_method) (discovery not included)."}
results:
  description: One entry per O(lists) entry, in the same order.
  returned: success
  type: list
  elements: dict
  contains:
    api_version:
      description: The O(lists[].api_version) asked for.
      type: str
      sample: apps/v1
    kind:
      description: The O(lists[].kind) asked for.
      type: str
      sample: Deployment
    namespace:
      description: The namespace listed in (empty - every namespace, or a cluster-scoped kind).
      type: str
      sample: clusters-prod-01
    api_found:
      description: Whether the server serves the kind.
      type: bool
      sample: true
    resources:
      description: The objects, each with C(apiVersion) and C(kind) set.
      type: list
      elements: dict
"""

import copy

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec, parallelism_option
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.lists import ListsService
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import NAMESPACE, OBJECT_NAME
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module

LIST_OPTIONS = dict(
    api_version=dict(type="str", required=True),
    kind=dict(type="str", required=True),
    namespace=dict(type="str", default=""),
    label_selectors=dict(type="list", elements="str", default=[]),
    field_selectors=dict(type="list", elements="str", default=[]),
    name=dict(type="str", default=""),
)
# options holding a namespace or object names (checked before any API call); "" lists every namespace
NAME_RULES = [("lists[].namespace", NAMESPACE.or_empty("every namespace")),
              ("lists[].name", OBJECT_NAME.or_empty("the whole collection"))]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(
        lists=dict(type="list", elements="dict", required=True, options=LIST_OPTIONS),
        parallelism=parallelism_option(default=4),
    )
    return copy.deepcopy(spec)


def main():
    run_module(argspec, NAME_RULES, ListsService)


if __name__ == "__main__":
    main()
