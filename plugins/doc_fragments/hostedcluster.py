# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# the HostedCluster's options, its derived HCP namespace and the note on their names, each written once for the
# sections below
HOSTEDCLUSTER_OPTIONS = r"""
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
"""

HCP_NAMESPACE_OPTION = r"""
  hcp_namespace:
    description:
      - The HCP namespace - the namespace of the HostedCluster's hosted control plane and of its CAPI objects.
      - Empty means the one HyperShift gives the HostedCluster, C(<hostedcluster_namespace>-<hostedcluster_name>)
        with the dots of the name as dashes.
    type: str
    default: ""
"""

NAMES_NOTE = r"""
notes:
  - The options that name a HostedCluster are the same in every module of the collection - O(hostedcluster_name),
    O(hostedcluster_namespace) and, for its HCP namespace, C(hcp_namespace). The names the modules of 1.0.0 used
    (C(name), C(namespace), C(hostedcontrolplane_name)) still work as aliases and warn; they are removed in 2.0.0.
"""


class ModuleDocFragment(object):
    """The options that name a HostedCluster and its HCP namespace: one name per thing in every module (their specs:
    module_utils/modules.py). A module overrides what it needs (required, the meaning of empty, its old names)."""

    # hypershift.private_capi.hostedcluster: the HostedCluster
    DOCUMENTATION = "options:" + HOSTEDCLUSTER_OPTIONS + NAMES_NOTE

    # hypershift.private_capi.hostedcluster.hcp_namespace: beside the HostedCluster, its HCP namespace derived from it
    HCP_NAMESPACE = "options:" + HCP_NAMESPACE_OPTION

    # hypershift.private_capi.hostedcluster.with_hcp_namespace: the two above in one, for the modules that named the HCP
    # namespace C(namespace) in 1.0.0
    WITH_HCP_NAMESPACE = ("options:" + HOSTEDCLUSTER_OPTIONS + HCP_NAMESPACE_OPTION + "    aliases: [namespace]\n"
                          + NAMES_NOTE)

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
