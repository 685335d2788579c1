# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filter hcp_namespace (docs: hcp_namespace.yml beside this file): HyperShift's rule, from module_utils/hypershift."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift
from ansible_collections.hypershift.private_capi.plugins.module_utils.filters.args import checked_arguments

USAGE = "{{ hostedcluster_name | hypershift.private_capi.hcp_namespace(hostedcluster_namespace) }}"


@checked_arguments("hcp_namespace", USAGE, AnsibleFilterError)
def hcp_namespace(name, namespace):
    """The HCP namespace of HostedCluster namespace/name."""
    for argument, value in (("the input (the HostedCluster's name)", name), ("namespace", namespace)):
        if not isinstance(value, str) or not value:
            raise AnsibleFilterError("hcp_namespace: %s must be a non-empty string, got %r; usage: %s"
                                     % (argument, value, USAGE))
    return hypershift.hcp_namespace(namespace, name)


class FilterModule(object):
    def filters(self):
        return {"hcp_namespace": hcp_namespace}
