# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which resources capi_object_migrate moves and which it scans for dependents, from what discovery serves.

Nothing is hard-coded: every namespaced resource served in a group the GroupMap maps (in the source naming of the
direction) moves, in the source group's preferred version, to the same resource and version of the translated group
(a MovedKind, plan.py). Pure: it reads k8s/discovery.py's ServedResource records.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.discovery import (
    DiscoveryError,
    capi_resources,
    preferred_resources,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.plan import MovedKind
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import TO_PRIVATE

# Events are high-volume, never own anything and never carry ownerReferences to CAPI objects that matter.
SKIPPED_DEPENDENT_RESOURCES = frozenset((("", "events"), ("events.k8s.io", "events")))


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
        candidates = [resource for resource in candidates if resource.matches(wanted)]
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
            if wanted is not None and not resource.matches(wanted):
                continue
            chosen.append(resource)
    return chosen
