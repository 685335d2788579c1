# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""HyperShift's own facts, written once: the HostedCluster API, the HCP namespace it gives each HostedCluster,
and how messages name a HostedCluster. Pure: no I/O, no Ansible."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe_object

HOSTEDCLUSTER_GROUP = "hypershift.openshift.io"
HOSTEDCLUSTER_VERSION = "v1beta1"
HOSTEDCLUSTER_API_VERSION = "%s/%s" % (HOSTEDCLUSTER_GROUP, HOSTEDCLUSTER_VERSION)
HOSTEDCLUSTER_PLURAL = "hostedclusters"
HOSTEDCLUSTER_KIND = "HostedCluster"


def hcp_namespace(namespace, name):
    """The HCP namespace HyperShift gives a HostedCluster (manifests.HostedControlPlaneNamespace): '<ns>-<name>',
    dots in the name as dashes."""
    return "%s-%s" % (namespace, name.replace(".", "-"))


# O(hcp_namespace) filled where it is empty (k8s/runner.py ModuleService.DERIVED)
HCP_NAMESPACE_DERIVED = {"hcp_namespace": (("hostedcluster_namespace", "hostedcluster_name"), hcp_namespace)}


def describe_hostedcluster(hostedcluster):
    """'HostedCluster <namespace>/<name>' for messages (messages.describe_object)."""
    return describe_object(hostedcluster if isinstance(hostedcluster, dict) else {}, kind=HOSTEDCLUSTER_KIND)
