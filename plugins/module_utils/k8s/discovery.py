# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which resources the API server serves, read from API discovery: plain ServedResource records per group, in
preference order.

Aggregated discovery (one request for /apis, one for /api) is used when the server offers it, the legacy documents
otherwise. What the migration makes of them (the kinds that move, the resources scanned for dependents) is
move/kinds.py's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import (
    AGGREGATED_DISCOVERY_ACCEPT,
    call_with_retries,
    parallel_map,
)


class DiscoveryError(PrivateCapiError, ValueError):
    """The API does not serve what the migration needs; the message says what to install or change."""


class ServedResource(object):
    __slots__ = ("group", "version", "plural", "kind", "namespaced", "verbs", "status")

    def __init__(self, group, version, plural, kind, namespaced, verbs, status):
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind
        self.namespaced = namespaced
        self.verbs = frozenset(verbs or ())
        self.status = status

    @property
    def api_version(self):
        return "%s/%s" % (self.group, self.version) if self.group else self.version

    def names(self):
        """Lower-case names a user may give in `kinds` / `dependent_resources`."""
        return {self.kind.lower(), self.plural, "%s.%s" % (self.plural, self.group),
                "%s.%s" % (self.kind.lower(), self.group)}

    def matches(self, names):
        """Whether any of the lower-case `names` names this resource."""
        return bool(self.names() & names)


def _from_aggregated(document):
    """{group: [(version, [ServedResource])]} in preference order, from an APIGroupDiscoveryList."""
    groups = {}
    for item in document.get("items") or ():
        group = (item.get("metadata") or {}).get("name") or ""
        versions = []
        for version_entry in item.get("versions") or ():
            version = version_entry.get("version")
            resources = []
            for entry in version_entry.get("resources") or ():
                subresources = {sub.get("subresource") for sub in entry.get("subresources") or ()}
                kind = (entry.get("responseKind") or {}).get("kind") or ""
                resources.append(ServedResource(group, version, entry.get("resource"), kind,
                                                entry.get("scope") == "Namespaced", entry.get("verbs"),
                                                "status" in subresources))
            versions.append((version, resources))
        groups[group] = versions
    return groups


def _from_resource_list(group, version, document):
    plurals = {entry.get("name") for entry in document.get("resources") or ()}
    resources = []
    for entry in document.get("resources") or ():
        name = entry.get("name") or ""
        if "/" in name:
            continue
        resources.append(ServedResource(group, version, name, entry.get("kind") or "", bool(entry.get("namespaced")),
                                        entry.get("verbs"), name + "/status" in plurals))
    return resources


def read_served_resources(client, parallelism):
    """{group: [(version, [ServedResource])]} with the preferred version first ('' is the core group)."""
    def get(path, headers=None):
        return call_with_retries(lambda: client.request("GET", path, "discovery GET %s" % path, headers=headers))

    headers = {"Accept": AGGREGATED_DISCOVERY_ACCEPT}
    apis, core = parallel_map(lambda path: get(path, headers), ["/apis", "/api"], parallelism)
    if apis.get("kind") == "APIGroupDiscoveryList" and core.get("kind") == "APIGroupDiscoveryList":
        groups = _from_aggregated(apis)
        groups.update(_from_aggregated(core))
        return groups
    # legacy discovery: one request per group version (preferred version first)
    wanted = [("", version) for version in core.get("versions") or ()]
    preference = {"": list(core.get("versions") or ())}
    for api_group in apis.get("groups") or ():
        name = api_group.get("name")
        preferred = (api_group.get("preferredVersion") or {}).get("version")
        versions = [entry.get("version") for entry in api_group.get("versions") or ()]
        versions.sort(key=lambda version: version != preferred)
        preference[name] = versions
        wanted.extend((name, version) for version in versions)

    def read(pair):
        group, version = pair
        path = "/api/%s" % version if not group else "/apis/%s/%s" % (group, version)
        return pair, _from_resource_list(group, version, get(path))

    listed = dict(parallel_map(read, wanted, parallelism))
    return {group: [(version, listed[(group, version)]) for version in versions] for group, versions in preference.items()}


def preferred_resources(versions):
    """Each resource of a group once, in the most preferred version that serves it (kinds of one group may be
    served in different versions: the AWS kinds in v1beta2, the KubeVirt kinds only in v1alpha1)."""
    chosen = {}
    for _version, resources in versions:
        for resource in resources:
            chosen.setdefault(resource.plural, resource)
    return [chosen[plural] for plural in sorted(chosen)]


def capi_resources(served, is_group):
    """The namespaced, listable resources of every served group for which is_group(group) holds, each once in its
    group's most preferred version serving it, sorted by group then plural (the core group '' never counts).

    The one CAPI resource discovery: capi_verify reads the standard and the private ones (is_group: a GroupMap's
    is_standard or is_private), the inventory both at once."""
    chosen = []
    for group in sorted(served):
        if not group or not is_group(group):
            continue
        chosen.extend(resource for resource in preferred_resources(served[group])
                      if resource.namespaced and "list" in resource.verbs)
    return chosen
