#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: capi_verify
short_description: Prove, read-only, that one HostedCluster is migrated to the private CAPI types
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Read-only. Reads the HostedCluster, its HostedControlPlane, API discovery, every namespaced resource of the
    standard (C(*cluster.x-k8s.io)) and the private (C(*cluster.hypershift.openshift.io)) CAPI groups in the HCP
    namespace (one LIST each, in parallel), the owners the private objects reference outside themselves, the
    Deployments and the proxy's kubeconfig ConfigMap, and judges them.
  - B(State) - the HostedCluster's migration state is C(migrated).
  - B(Nothing left behind) - no object in a standard CAPI group.
  - B(Counts) - the private objects per kind equal the record the migrate role took before the copy (annotation
    C(hypershift.openshift.io/capi-migration-counts) on the HostedCluster). Objects on their way out (RV(leaving_counts))
    are not counted; the record leaves out the deletions that were in flight then.
  - B(Owners) - every ownerReference of a private object (not on its way out) resolves - to another private object,
    the HostedCluster or the HostedControlPlane by uid, or else to an object read by name whose uid matches.
  - B(HostedControlPlane) present; B(sidecars) - each existing Deployment of O(deployments) has the container
    C(kube-apiserver-proxy), and the ConfigMap O(proxy_config_map) exists.
  - B(Conversion) - the private C(Cluster)s are read at the CAPI version other than the preferred one, which the API
    server converts through the collection's conversion shim; a failed read is a problem that names the shim.
  - The module does not fail when a check fails; it returns RV(ok) false and the RV(problems). It fails only when it
    cannot read (O(hostedcluster_namespace), the HCP namespace or the HostedCluster does not exist, or the API refuses a read).
  - Used by the role C(hypershift.private_capi.verify) and C(playbooks/verify_fleet.yml).
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.read_only
  - hypershift.private_capi.options.parallelism
  - hypershift.private_capi.hostedcluster
options:
  hostedcluster_name:
    aliases: [name]
  hostedcluster_namespace:
    aliases: [namespace]
  hcp_namespace:
    # C(namespace) named the HostedCluster's namespace here in 1.0.0, not the HCP namespace
    aliases: []
  management_cluster:
    description:
      - Name of the management cluster, returned in the result (for fleet tables).
    type: str
    default: default
  deployments:
    description:
      - The CAPI-dependent Deployments that must carry the proxy sidecar when they exist.
    type: list
    elements: str
    default: [cluster-api, capi-provider, control-plane-operator, cluster-autoscaler, machine-approver,
              hosted-cluster-config-operator, karpenter-operator]
  proxy_config_map:
    description:
      - Name of the ConfigMap holding the sidecar's kubeconfig (written by the role C(hypershift.private_capi.api_proxy)).
    type: str
    default: capi-proxy-kubeconfig
  extra_groups:
    description:
      - Provider groups moved besides the CAPI ones (standard group -> private group), as given to
        M(hypershift.private_capi.capi_object_migrate).
    type: dict
    default:
      capi-provider.agent-install.openshift.io: capi-provider.agent-install.hypershift.openshift.io
notes:
  - RBAC - C(get) on C(hypershift.openshift.io) hostedclusters (HostedCluster namespace) and hostedcontrolplanes (HCP
    namespace); discovery; in the HCP namespace C(list) on every resource of the standard and private CAPI groups and
    on C(apps/deployments), C(get) on C(configmaps) and on the kinds the private objects' ownerReferences name.
seealso:
  - module: hypershift.private_capi.capi_object_migrate
  - module: hypershift.private_capi.migration_state
"""

EXAMPLES = r"""
- name: Verify one HostedCluster
  hypershift.private_capi.capi_verify:
    hostedcluster_name: prod-01
    hostedcluster_namespace: clusters
  register: verified

- name: Fail with what is wrong
  ansible.builtin.fail:
    msg: "{{ verified.problems | join('; ') }}"
  when: not verified.ok
"""

RETURN = r"""
api_calls: {returned: success, type: dict, description: "Requests this run sent to the API server - C(total) and C(by_method)."}
elapsed_seconds: {returned: success, type: float, description: "Wall time of the run."}
ok:
  description: Every check passed.
  returned: success
  type: bool
  sample: true
problems:
  description: One line per failed check, each naming the HostedCluster, what was expected, what was found and what to do.
  returned: success
  type: list
  elements: str
  sample: ["HostedCluster clusters/prod-01: 2 private Machine objects, the record before migration says 3; compare the
           HCP namespace with the run's report"]
name:
  description: Name of the HostedCluster.
  returned: success
  type: str
namespace:
  description: Namespace of the HostedCluster.
  returned: success
  type: str
hcp_namespace:
  description: The HCP namespace read.
  returned: success
  type: str
management_cluster:
  description: O(management_cluster), for fleet tables.
  returned: success
  type: str
state:
  description: The HostedCluster's migration state (C(legacy), C(in-progress), C(migrated), C(failed), ...).
  returned: success
  type: str
  sample: migrated
objects:
  description: Objects in the private CAPI groups.
  returned: success
  type: int
  sample: 9
standard_left:
  description: Objects left in the standard CAPI groups.
  returned: success
  type: int
  sample: 0
standard_counts:
  description: Objects per kind in the standard CAPI groups (kinds with none included).
  returned: success
  type: dict
  sample: {"Cluster": 0, "Machine": 0}
private_counts:
  description:
    - Objects per kind in the private CAPI groups (kinds with none included), less those in RV(leaving_counts).
    - These are compared with the count record.
  returned: success
  type: dict
  sample: {"Cluster": 1, "Machine": 3}
leaving_counts:
  description:
    - Private objects per kind on their way out - being deleted, or taken along by an owner that is (kinds with none
      left out). Examples are a deletion carried across by the migration, or one begun since.
    - They are not compared. The record leaves out the deletions in flight when the migration counted.
  returned: success
  type: dict
  sample: {"Machine": 1}
record:
  description: The count record on the HostedCluster (JSON text), or null when there is none.
  returned: success
  type: str
  sample: '{"Cluster": 1, "Machine": 3}'
outside_owners:
  description: The ownerReferences of private objects that point at none of them, the HostedCluster or the
    HostedControlPlane (each looked up by name).
  returned: success
  type: list
  elements: dict
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.verify import VerifyService
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import (
    auth_argspec, extra_groups_option, parallelism_option)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import NAMESPACE, OBJECT_NAME
from ansible_collections.hypershift.private_capi.plugins.module_utils.modules import HCP_NAMESPACE_RULE, hostedcluster_options
# extra_groups: every provider a HostedCluster may use, the Agent provider's pair included
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    AGENT_EXTRA_GROUPS as AGENT_DEFAULT)

DEFAULT_DEPLOYMENTS = ["cluster-api", "capi-provider", "control-plane-operator", "cluster-autoscaler",
                       "machine-approver", "hosted-cluster-config-operator", "karpenter-operator"]
# options holding a namespace or object names (checked before any API call)
NAME_RULES = [("hostedcluster_name", OBJECT_NAME), ("hostedcluster_namespace", NAMESPACE),
              ("hcp_namespace", HCP_NAMESPACE_RULE),
              ("deployments[]", OBJECT_NAME), ("proxy_config_map", OBJECT_NAME)]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(hostedcluster_options(renamed_from={"hostedcluster_name": "name", "hostedcluster_namespace": "namespace"}))
    spec.update(
        management_cluster=dict(type="str", default="default"),
        deployments=dict(type="list", elements="str", default=list(DEFAULT_DEPLOYMENTS)),
        proxy_config_map=dict(type="str", default="capi-proxy-kubeconfig"),
        extra_groups=extra_groups_option(AGENT_DEFAULT),
        parallelism=parallelism_option(),
    )
    return spec


def main():
    run_module(argspec, NAME_RULES, VerifyService)


if __name__ == "__main__":
    main()
