#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: conversion_webhook_users
short_description: The CRDs whose conversion webhook is a given Service (read-only)
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Read-only. Lists the CustomResourceDefinitions (one LIST) and returns those whose C(spec.conversion) is a
    C(Webhook) at the Service O(service_namespace)/O(service_name), on any port and path. CRDs that convert through a
    URL, or not at all, are not counted.
  - A Service such a CRD names must stay. Without it every read or watch of the CRD's objects at a version other
    than the stored one fails, and kube-apiserver logs conversion failures without pause. The role
    C(hypershift.private_capi.conversion_shim) removes the shim only when RV(in_use) is false.
  - CRDs being deleted are counted (RV(crds[].deleting)). The API server still converts their objects until they
    are gone.
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.read_only
options:
  service_namespace:
    description:
      - Namespace of the webhook Service.
    type: str
    required: true
  service_name:
    description:
      - Name of the webhook Service.
    type: str
    required: true
notes:
  - The RBAC the module needs - C(list) on C(customresourcedefinitions.apiextensions.k8s.io).
seealso:
  - module: hypershift.private_capi.private_crd_render
  - module: hypershift.private_capi.serving_certificate
"""

EXAMPLES = r"""
- name: Which CRDs still convert through the shim's Service
  hypershift.private_capi.conversion_webhook_users:
    service_namespace: hypershift
    service_name: capi-conversion-webhook-shim
  register: shim_users

- name: Remove the shim's Service only when no CRD needs it
  kubernetes.core.k8s:
    state: absent
    api_version: v1
    kind: Service
    namespace: hypershift
    name: capi-conversion-webhook-shim
  when: not shim_users.in_use
"""

RETURN = r"""
api_calls: {returned: success, type: dict, sample: {"total": 1, "by_method": {"GET": 1}}, description: "Requests this run sent to the API server -
  C(total) and C(by_method)."}
in_use:
  description: Whether any CRD converts through the Service.
  returned: success
  type: bool
  sample: true
crds:
  description: The CRDs that convert through the Service, sorted by name.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: The CRD's name.
      type: str
      sample: machines.cluster.hypershift.openshift.io
    group:
      description: Its API group.
      type: str
      sample: cluster.hypershift.openshift.io
    port:
      description: The Service port the webhook names.
      type: int
      sample: 443
    path:
      description: The webhook's path.
      type: str
      sample: /convert
    deleting:
      description: Whether the API server is deleting the CRD (it still converts until it is gone).
      type: bool
      sample: false
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import NAMESPACE, SERVICE_NAME
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.shim.users import WebhookUsersService

# options holding a namespace or object names (checked before any API call)
NAME_RULES = [("service_namespace", NAMESPACE), ("service_name", SERVICE_NAME)]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(
        service_namespace=dict(type="str", required=True),
        service_name=dict(type="str", required=True),
    )
    return spec


def main():
    run_module(argspec, NAME_RULES, WebhookUsersService)


if __name__ == "__main__":
    main()
