# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Does the conversion webhook of a CAPI CRD answer? One read at the version other than the one a caller lists at.

kube-apiserver converts every object it returns at a version other than the stored one through the CRD's conversion
webhook; for the private twins that is the collection's conversion shim (role conversion_shim). A LIST of the HCP
namespace's private Clusters at the other version converts the Cluster it holds, so a dead shim shows here before the
CAPI clients that read v1beta1 (and kube-apiserver's own watch cache) meet it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiError, api_path
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe

OTHER_VERSION = {"v1beta2": "v1beta1", "v1beta1": "v1beta2"}


def conversion_problem(client, group, version, plural, namespace):
    """None when `plural.group` read at the version other than `version` answers (or is not served at it); else what
    failed, naming the CRD and where to look."""
    other = OTHER_VERSION.get(version)
    if other is None:
        return None
    what = "list %s at %s (a conversion)" % (describe("%s.%s" % (plural, group), namespace=namespace), other)
    try:
        client.request("GET", api_path(group, other, plural, namespace), what, query={"limit": 1})
    except ApiError as error:
        if error.status == 404:  # the CRD does not serve that version: nothing converts
            return None
        if error.status is not None and error.status < 500:  # refused (RBAC, a policy): not the webhook's answer
            return ("reading %s.%s at %s in namespace %s was refused (HTTP %s: %s): give the identity list on it "
                    "(docs/operator-guide.md, RBAC)" % (plural, group, other, namespace, error.status,
                                                        (error.api_message or "")[:200]))
        return ("reading %s.%s at %s in namespace %s failed (HTTP %s: %s): the CRD's conversion webhook does not "
                "answer; for the private groups check the conversion shim (role conversion_shim: its Deployment, "
                "Service and Endpoints)" % (plural, group, other, namespace, error.status,
                                            (error.api_message or "")[:200]))
    return None
