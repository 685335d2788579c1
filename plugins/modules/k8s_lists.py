#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: k8s_lists
short_description: Read several Kubernetes collections in one module run (read-only)
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
    from) and C(hypershift.private_capi.migrate) (the private objects a rollback deletes, one LIST per private kind).
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
  parallelism:
    description:
      - LISTs in flight at once.
    type: int
    default: 4
notes:
  - RBAC - C(list) on the resource of each O(lists) entry in its namespace (cluster-wide for an empty namespace or a
    cluster-scoped kind); C(get) on C(namespaces) for the namespaces named (optional, see below).
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

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import (
    PARALLELISM_MINIMUM, auth_argspec, parallelism_option)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import parallel_map
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import module_main, run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import NAMESPACE
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException

LIST_OPTIONS = dict(
    api_version=dict(type="str", required=True),
    kind=dict(type="str", required=True),
    namespace=dict(type="str", default=""),
    label_selectors=dict(type="list", elements="str", default=[]),
    field_selectors=dict(type="list", elements="str", default=[]),
)
# options holding a namespace or object names (checked before any API call); "" lists every namespace
NAME_RULES = [("lists[].namespace", NAMESPACE.or_empty("every namespace"))]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(
        lists=dict(type="list", elements="dict", required=True, options=LIST_OPTIONS),
        parallelism=parallelism_option(default=4),
    )
    return copy.deepcopy(spec)


def resolve(client, wanted):
    """(what, path or None, namespace listed in) of one O(lists) entry, by discovery."""
    namespace = wanted["namespace"] or None
    what = "%s %s%s" % (wanted["api_version"], wanted["kind"], " in namespace %s" % namespace if namespace else "")
    path, namespaced = client.collection_path(wanted["api_version"], wanted["kind"], namespace, what)
    return what, path, (namespace or "") if namespaced else ""


def read(client, wanted, resolved):
    """One k8s_info-shaped result for one O(lists) entry."""
    what, path, namespace = resolved
    result = dict(api_version=wanted["api_version"], kind=wanted["kind"], namespace=namespace,
                  api_found=path is not None, resources=[])
    if path is not None:
        result["resources"] = client.list(path, what, label_selector=",".join(wanted["label_selectors"]) or None,
                                          field_selector=",".join(wanted["field_selectors"]) or None)
    return result


def work(run):
    """Discovery, the namespace checks, then the LISTs in parallel: the module's result (k8s/runner.py adds api_calls)."""
    params = run.params
    client = run.connect(connections=params["parallelism"])
    wanted = params["lists"]
    try:
        # discovery first, one entry at a time (the client's discovery cache is not thread-safe); then the LISTs
        resolved = [resolve(client, entry) for entry in wanted]
        # a namespace that does not exist fails (one GET each), so a typo does not read as "no objects"
        client.require_namespaces(("lists[%d].namespace" % index, namespace)
                                  for index, (_what, path, namespace) in enumerate(resolved) if path is not None)
        results = parallel_map(lambda index: read(client, wanted[index], resolved[index]), range(len(wanted)),
                               params["parallelism"])
    except PrivateCapiError:
        raise
    except CoreException as error:  # kubernetes.core's own (discovery): no message of ours to add but what failed
        raise PrivateCapiError("could not read: %s" % error)
    return dict(changed=False, results=results)


def run(module):
    run_module(module, work, minimums=PARALLELISM_MINIMUM, elapsed=False)


def main():
    module_main(argspec, NAME_RULES, run)


if __name__ == "__main__":
    main()
