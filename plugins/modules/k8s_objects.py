#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: k8s_objects
short_description: Create, update or delete a list of Kubernetes objects in one module run
version_added: 1.2.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Writes each object of O(definitions) in order, as M(kubernetes.core.k8s) writes it - with O(state=present) a
    missing object is created and an existing one patched with its definition (a strategic merge patch, or a JSON
    merge patch where the API server has none for the kind, as for custom resources), or replaced with O(force=true);
    with O(state=absent) it is deleted.
  - The collection's roles write their own manifests with it - the conversion shim's and the dual operator's. Where
    the task's connection is local it runs in the controller's worker process, where each
    M(kubernetes.core.k8s) task cost a module process (a Python start, the module's payload compiled, the client
    imported - 0.4 to 0.9 CPU-seconds on two cores).
  - Kinds are resolved as M(kubernetes.core.k8s) resolves them (API discovery).
  - C(changed) compares each object before and after its write, without the fields the server keeps of its own
    (C(resourceVersion), C(managedFields), C(generation)) and without C(status); a second run with the same
    definitions reports C(changed=false).
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.write
options:
  definitions:
    description:
      - The objects, each a complete manifest with C(apiVersion), C(kind) and C(metadata.name) (and
        C(metadata.namespace) for a namespaced kind). For O(state=absent) the identity is enough.
    type: list
    elements: dict
    required: true
  state:
    description:
      - V(present) creates or updates each object; V(absent) deletes it (an object already gone is V(absent) in
        RV(results)).
    type: str
    choices: [present, absent]
    default: present
  force:
    description:
      - With O(state=present), replace an existing object with its definition (C(PUT)) instead of patching it, so
        that fields the definition leaves out are removed.
    type: bool
    default: false
  merge_type:
    description:
      - The patch of an existing object. V(strategic-merge) merges lists that have a merge key (a Pod template's
        containers by name); the API server has none for custom resources, which are then merge-patched.
    type: str
    choices: [strategic-merge, merge]
    default: strategic-merge
  wait:
    description:
      - With O(state=present), wait until each Deployment of O(definitions) has rolled out (its template observed,
        every replica updated and available, no old replica left); other kinds are ready once written.
      - With O(state=absent), wait until each deleted object is gone.
      - Not in check mode.
    type: bool
    default: false
  wait_timeout:
    description: Seconds O(wait) waits; the module fails naming the objects it still waits for.
    type: int
    default: 120
  wait_sleep:
    description: Seconds between two reads while waiting (at least 0.1).
    type: float
    default: 1.0
attributes:
  check_mode:
    details: Writes are sent with the server-side dry run C(dryRun=All), so the API server validates them.
  diff_mode:
    details: The objects that changed, before and after, without the fields the server keeps of its own.
notes:
  - RBAC - C(get) on each object's kind, and C(create) and C(patch) (C(update) with O(force)) for O(state=present),
    C(delete) for O(state=absent).
seealso:
  - module: kubernetes.core.k8s
  - module: hypershift.private_capi.k8s_lists
"""

EXAMPLES = r"""
- name: The shim's ServiceAccount, Service and PodDisruptionBudget
  hypershift.private_capi.k8s_objects:
    definitions: "{{ manifests }}"

- name: Replace the legacy operator's Deployment and wait until it has rolled out
  hypershift.private_capi.k8s_objects:
    definitions: ["{{ legacy_deployment }}"]
    force: true
    wait: true
    wait_timeout: 300

- name: Delete the legacy operator and its Lease, and wait until they are gone
  hypershift.private_capi.k8s_objects:
    state: absent
    definitions:
      - {apiVersion: apps/v1, kind: Deployment, metadata: {namespace: hypershift, name: operator-legacy}}
      - {apiVersion: coordination.k8s.io/v1, kind: Lease, metadata: {namespace: hypershift, name: hypershift-operator-leader-elect}}
    wait: true
"""

RETURN = r"""
results:
  description: One entry per definition, in order.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description: The object's kind.
      type: str
      sample: Deployment
    namespace:
      description: Its namespace (empty for a cluster-scoped kind).
      type: str
      sample: hypershift
    name:
      description: Its name.
      type: str
      sample: capi-conversion-webhook-shim
    action:
      description: V(created), V(patched), V(replaced), V(unchanged), V(deleted) or V(absent) (already gone).
      type: str
      sample: patched
resources:
  description:
    - Each object of O(definitions) as last read or written - after O(wait), as the wait read it last (also when it
      timed out) - in order; an object deleted or absent is left out.
  returned: always
  type: list
  elements: dict
timed_out:
  description: Whether O(wait) ended before every object was ready (or gone); the module then fails naming them.
  returned: always
  type: bool
  sample: false
diff:
  description: With C(--diff) and a change, C(before) and C(after) of each object that changed, by C(<kind> <namespace>/<name>).
  returned: when diff mode is on and something changed
  type: dict
"""

import copy

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.objects import OPTIONS, ObjectsService
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module

NAME_RULES = []  # names come with each definition; the API server judges them


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(copy.deepcopy(OPTIONS))
    return spec


def main():
    run_module(argspec, NAME_RULES, ObjectsService)


if __name__ == "__main__":
    main()
