# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner of hypershift.private_capi.capi_verify: read-only proof that one HostedCluster is migrated.

VerifyService reads, in one process: the HostedCluster (state, count record), its HostedControlPlane, API discovery,
every namespaced resource of the standard and the private CAPI groups in the HCP namespace (one LIST each, in
parallel), the owners the private objects reference outside themselves, the Deployments and the proxy's kubeconfig
ConfigMap. The judgement is capi_verify_judge.capi_verify_judge (pure). Nothing is written.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import COUNTS_ANNOTATION
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.conversion import conversion_problem
from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine as states
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import GroupMap
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.discovery import (
    capi_resources,
    read_served_resources,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.judge import (
    VerifyInputError,
    capi_owners_outside,
    capi_verify_judge,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import PARALLELISM_MINIMUM
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.graph import OwnershipCycleError, leaving
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import ModuleService
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import (
    api_path,
    parallel_map,
)

HYPERSHIFT_GROUP = hypershift.HOSTEDCLUSTER_GROUP
HYPERSHIFT_VERSION = hypershift.HOSTEDCLUSTER_VERSION


def owner_resource(served, ref):
    """The ServedResource an ownerReference names (its version if served, else the group's preferred), or None."""
    group, _slash, version = (ref.get("apiVersion") or "").rpartition("/")
    versions = served.get(group) or ()
    candidates = [resource for _version, resources in versions for resource in resources if resource.kind == ref.get("kind")]
    exact = [resource for resource in candidates if resource.version == version]
    return (exact or candidates or [None])[0]


def counts_by_kind(listed, only=None):
    """{kind: number of objects} over (ServedResource, items) pairs; with only(item), the items it accepts."""
    counts = {}
    for resource, items in listed:
        counts[resource.kind] = counts.get(resource.kind, 0) + len([item for item in items if only is None or only(item)])
    return counts


class VerifyService(ModuleService):
    """capi_verify's service (k8s/runner.py): read-only, never changed."""

    DERIVED = hypershift.HCP_NAMESPACE_DERIVED
    MINIMUMS = PARALLELISM_MINIMUM
    NAMESPACES = (("hostedcluster_namespace", None), ("hcp_namespace", None))

    @classmethod
    def from_run(cls, run):
        return cls(cls.connect(run), run.params)

    def __init__(self, client, params):
        self.client = client
        self.params = params
        self.hostedcluster_name = params["hostedcluster_name"]
        self.hostedcluster_namespace = params["hostedcluster_namespace"]
        self.hcp_namespace = params["hcp_namespace"]
        self.group_map = GroupMap(params.get("extra_groups") or {})
        self.parallelism = params.get("parallelism") or 8

    def _list(self, resource):
        return resource, self.client.list(api_path(resource.group, resource.version, resource.plural, self.hcp_namespace),
                                          "list " + describe("%s.%s" % (resource.plural, resource.group),
                                                             namespace=self.hcp_namespace))

    def _owner(self, served, ref):
        resource = owner_resource(served, ref)
        found = None
        if resource is not None:
            namespace = self.hcp_namespace if resource.namespaced else None
            found = self.client.get_or_none(api_path(resource.group, resource.version, resource.plural, namespace,
                                                     ref.get("name")),
                                            describe(ref.get("kind"), ref.get("name"), namespace))
        return {"item": ref, "resources": [found] if found else []}

    def read(self):
        """Everything the judgement needs, as the dict capi_verify_judge takes."""
        where = describe(hypershift.HOSTEDCLUSTER_KIND, self.hostedcluster_name, self.hostedcluster_namespace)
        name = self.hostedcluster_name
        hostedcluster = self.client.get_or_none(api_path(HYPERSHIFT_GROUP, HYPERSHIFT_VERSION, hypershift.HOSTEDCLUSTER_PLURAL,
                                                         self.hostedcluster_namespace, name), where)
        if hostedcluster is None:
            raise VerifyInputError("%s not found: check hostedcluster_name and hostedcluster_namespace (nothing was read "
                                   "further)" % where)
        hostedcontrolplane = self.client.get_or_none(
            api_path(HYPERSHIFT_GROUP, HYPERSHIFT_VERSION, "hostedcontrolplanes", self.hcp_namespace, name),
            describe("HostedControlPlane", name, self.hcp_namespace))
        self.client.size_connection_pool(self.parallelism)
        served = read_served_resources(self.client, self.parallelism)
        standard = capi_resources(served, self.group_map.is_standard)
        private = capi_resources(served, self.group_map.is_private)
        listed = parallel_map(self._list, standard + private, self.parallelism)
        standard_listed, private_listed = listed[:len(standard)], listed[len(standard):]
        private_objects = [obj for _resource, items in private_listed for obj in items]
        # on their way out (a deletion carried across, or begun since): neither counted (the record leaves them out
        # too) nor judged by their owners (an owner may already be gone)
        try:
            gone = leaving(private_objects)
        except OwnershipCycleError:  # no order to judge by; counted as before (the module fails only when it cannot read)
            gone = {}
        outside = capi_owners_outside([obj for obj in private_objects if obj["metadata"]["uid"] not in gone],
                                      private_objects + [obj for obj in (hostedcluster, hostedcontrolplane) if obj])
        lookups = parallel_map(lambda ref: self._owner(served, ref), outside, self.parallelism)
        deployments = self.client.list(api_path("apps", "v1", "deployments", self.hcp_namespace),
                                       "list " + describe("deployments.apps", namespace=self.hcp_namespace))
        config_map = self.client.get_or_none(api_path("", "v1", "configmaps", self.hcp_namespace,
                                                      self.params["proxy_config_map"]),
                                             describe("ConfigMap", self.params["proxy_config_map"], self.hcp_namespace))
        annotations = (hostedcluster.get("metadata") or {}).get("annotations") or {}
        clusters = [resource for resource in private if resource.kind == "Cluster" and resource.namespaced]
        return {
            "conversion_problem": conversion_problem(self.client, clusters[0].group, clusters[0].version,
                                                     clusters[0].plural, self.hcp_namespace) if clusters else None,
            "management_cluster": self.params.get("management_cluster"),
            "namespace": self.hostedcluster_namespace, "name": self.hostedcluster_name,
            "hcp_namespace": self.hcp_namespace,
            "state": states.state_of(hostedcluster),
            "standard_counts": counts_by_kind(standard_listed),
            "private_counts": counts_by_kind(private_listed, lambda item: item["metadata"]["uid"] not in gone),
            "leaving_counts": dict((kind, count) for kind, count in counts_by_kind(
                private_listed, lambda item: item["metadata"]["uid"] in gone).items() if count),
            "record": annotations.get(COUNTS_ANNOTATION),
            "hostedcontrolplane": hostedcontrolplane is not None,
            "outside_owners": outside,
            "owner_lookups": lookups,
            "deployments": deployments,
            "deployment_names": self.params["deployments"],
            "config_map_present": config_map is not None,
        }

    def run(self):
        inputs = self.read()
        result = capi_verify_judge(inputs)
        result.update(hcp_namespace=self.hcp_namespace, standard_counts=inputs["standard_counts"],
                      private_counts=inputs["private_counts"], leaving_counts=inputs["leaving_counts"],
                      record=inputs["record"],
                      outside_owners=inputs["outside_owners"], changed=False)
        return result
