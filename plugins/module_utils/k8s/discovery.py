# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which resources capi_object_migrate moves and which it scans for dependents, read from API discovery.

Nothing is hard-coded: every namespaced resource served in a group the GroupMap maps (in the source
naming of the direction) moves, in the source group's preferred version, to the same resource and
version of the translated group. Aggregated discovery (one request for /apis, one for /api) is used when
the server offers it, the legacy documents otherwise.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import TO_PRIVATE
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.plan import MovedKind
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import (
    AGGREGATED_DISCOVERY_ACCEPT,
    call_with_retries,
    parallel_map,
)

# Events are high-volume, never own anything and never carry ownerReferences to CAPI objects that matter.
SKIPPED_DEPENDENT_RESOURCES = frozenset((("", "events"), ("events.k8s.io", "events")))


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


def _matches(resource, names):
    return bool(resource.names() & names)


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


def moved_kinds(served, group_map, direction, kinds=None):
    """(moved [MovedKind], unserved [(ServedResource, why)]) for every namespaced resource of a mapped group.

    kinds: optional names (Kind, plural, plural.group, kind.group; case-insensitive) that narrow the set;
    a name matching nothing served fails with the served names listed.
    """
    is_source = group_map.is_standard if direction == TO_PRIVATE else group_map.is_private
    candidates = [resource for resource in capi_resources(served, is_source) if {"create", "get"} <= resource.verbs]
    if kinds:
        wanted = {name.lower() for name in kinds}
        unknown = sorted(name for name in wanted if not any(name in resource.names() for resource in candidates))
        if unknown:
            raise DiscoveryError(
                "kinds: %s not served in any %s CAPI group; served: %s. Fix the kinds option (or install the CRDs)"
                % (", ".join(unknown), "standard" if direction == TO_PRIVATE else "private",
                   ", ".join(sorted("%s (%s)" % (r.kind, r.group) for r in candidates)) or "none")
            )
        candidates = [resource for resource in candidates if _matches(resource, wanted)]
    moved = []
    unserved = []
    for resource in candidates:
        target_group = group_map.translate_group(resource.group, direction)
        target = None
        for version, resources in served.get(target_group, ()):
            if version == resource.version:
                target = next((r for r in resources if r.plural == resource.plural), None)
        if target is None or not {"create", "list", "update", "get"} <= target.verbs:
            served_versions = [version for version, _resources in served.get(target_group, ())]
            why = ("%s.%s is not served in version %s (served versions of %s: %s); install the private CRDs "
                   "(hypershift.private_capi.private_crd_render) first"
                   % (resource.plural, target_group, resource.version, target_group, ", ".join(served_versions) or "none"))
            unserved.append((resource, why))
            continue
        moved.append(MovedKind(resource.kind, resource.plural, resource.version, resource.group, target_group,
                               source_status=resource.status, target_status=target.status))
    return moved, unserved


def dependent_resources(served, moved, names=None):
    """Namespaced resources to scan for ownerReferences to moved objects (every one not moved, but events).

    names: optional narrowing list (plural or plural.group, case-insensitive).
    """
    excluded = set(SKIPPED_DEPENDENT_RESOURCES)
    for kind in moved:
        excluded.add((kind.source_group, kind.plural))
        excluded.add((kind.target_group, kind.plural))
    wanted = {name.lower() for name in names} if names else None
    chosen = []
    for group in sorted(served):
        for resource in preferred_resources(served[group]):
            if not resource.namespaced or (group, resource.plural) in excluded:
                continue
            if not {"list", "patch"} <= resource.verbs:
                continue
            if wanted is not None and not _matches(resource, wanted):
                continue
            chosen.append(resource)
    return chosen
