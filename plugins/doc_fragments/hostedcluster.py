# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """The options that name a HostedCluster and its HCP namespace: one name per thing in every module (their specs:
    module_utils/modules.py). A module overrides what it needs (required, the meaning of empty, its old names)."""

    # hypershift.private_capi.hostedcluster: the HostedCluster and its HCP namespace derived from it (C(namespace) in
    # 1.0.0's modules but capi_verify, which overrides the aliases)
    DOCUMENTATION = r"""
options:
  hostedcluster_name:
    description:
      - Name of the HostedCluster (also the name of its HostedControlPlane).
    type: str
    required: true
  hostedcluster_namespace:
    description:
      - Namespace of the HostedCluster.
    type: str
    default: clusters
  hcp_namespace:
    description:
      - The HCP namespace - the namespace of the HostedCluster's hosted control plane and of its CAPI objects.
      - Empty means the one HyperShift gives the HostedCluster, C(<hostedcluster_namespace>-<hostedcluster_name>)
        with the dots of the name as dashes.
    type: str
    default: ""
    aliases: [namespace]
notes:
  - The options that name a HostedCluster are the same in every module of the collection - O(hostedcluster_name),
    O(hostedcluster_namespace) and, for its HCP namespace, C(hcp_namespace). The names the modules of 1.0.0 used
    (C(name), C(namespace), C(hostedcontrolplane_name)) still work as aliases and warn; they are removed in 2.0.0.
"""

    # hypershift.private_capi.hostedcluster.hcp_namespace_required: modules that work in an HCP namespace without the
    # HostedCluster
    HCP_NAMESPACE_REQUIRED = r"""
options:
  hcp_namespace:
    description:
      - The HCP namespace - the namespace of a HostedCluster's hosted control plane and of its CAPI objects,
        C(<hostedcluster namespace>-<hostedcluster name>) as HyperShift names it.
    type: str
    required: true
    aliases: [namespace]
notes:
  - The HCP namespace is O(hcp_namespace) in every module of the collection. The name the modules of 1.0.0 used,
    C(namespace), still works as an alias and warns; it is removed in 2.0.0.
"""
