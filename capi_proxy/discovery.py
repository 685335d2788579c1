"""Discovery as the client sees it: standard groups synthesised from the private ones. Pure.

* ServedIndex: what the API server serves per (group, version, resource), from aggregated discovery
  (apidiscovery.k8s.io/v2 APIGroupDiscoveryList); the proxy builds it with its own credentials and
  uses it for version adaptation (a convertible core kind served in only one of v1beta1/v1beta2 is
  offered in both).
* Rewrites of the client's own discovery answers (legacy APIGroupList / APIGroup / APIResourceList
  and aggregated lists): private groups renamed to their standard names with the core's
  translate_object / GroupMap; standard groups that also exist upstream (the platform's own CAPI)
  are shadowed: the proxy routes them to the private group, so listing both would lie.
"""
import copy

from capi_proxy.core import (
    CONVERTIBLE_KINDS,
    CORE_STANDARD_GROUP,
    DEFAULT_CATEGORY,
    DEFAULT_SHORT_NAME_PREFIX,
    STANDARD_CATEGORY,
    SUPPORTED_VERSIONS,
    TO_STANDARD,
    translate_object,
)

AGGREGATED_KIND = "APIGroupDiscoveryList"
_ADAPTATIONS_REMEMBERED = 4096  # per index: resources are named by clients, so the memo is bounded


def wants_aggregated(accept):
    """True when the client's Accept prefers aggregated discovery (kubectl 1.30+, client-go)."""
    for part in (accept or "").split(","):
        params = dict(item.strip().split("=", 1) for item in part.split(";")[1:] if "=" in item)
        if params.get("as") == "APIGroupDiscoveryList" and params.get("g") == "apidiscovery.k8s.io":
            return True
        if part.split(";")[0].strip() in ("application/json", "*/*", "application/*"):
            return False
    return False


def restore_short_names(short_names):
    """Private CRDs carry prefixed short names (crd_render: 'ma' -> 'hcpma'); the standard view drops the prefix."""
    prefix = DEFAULT_SHORT_NAME_PREFIX
    return [name[len(prefix):] if name.startswith(prefix) and len(name) > len(prefix) else name
            for name in short_names]


def restore_categories(categories):
    """crd_render: 'cluster-api' -> 'hypershift-capi', other 'x' -> 'hypershift-capi-x'; undo for the standard view."""
    restored = []
    for category in categories:
        if category == DEFAULT_CATEGORY:
            restored.append(STANDARD_CATEGORY)
        elif category.startswith(DEFAULT_CATEGORY + "-"):
            restored.append(category[len(DEFAULT_CATEGORY) + 1:])
        else:
            restored.append(category)
    return restored


def restore_names(names):
    """A copy of a CRD's spec.names (or an APIResource) with short names and categories restored."""
    names = dict(names)
    if isinstance(names.get("shortNames"), list):
        names["shortNames"] = restore_short_names(names["shortNames"])
    if isinstance(names.get("categories"), list):
        names["categories"] = restore_categories(names["categories"])
    return names


def _is_adaptable(standard_group, kind):
    return standard_group == CORE_STANDARD_GROUP and kind in CONVERTIBLE_KINDS


class ServedIndex(object):
    """(group, version) -> {resource: aggregated APIResource entry}, plus group -> versions (preferred first)."""

    def __init__(self, aggregated, group_map):
        self.group_map = group_map
        self.resources = {}
        self.versions = {}
        self._adaptations = {}  # (private group, version, resource) -> adaptation(): the index never changes
        for item in (aggregated or {}).get("items") or ():
            group = (item.get("metadata") or {}).get("name")
            if not group:
                continue
            self.versions[group] = [entry.get("version") for entry in item.get("versions") or ()]
            for entry in item.get("versions") or ():
                self.resources[(group, entry.get("version"))] = {
                    resource.get("resource"): resource for resource in entry.get("resources") or ()}

    def entry(self, group, version, resource):
        return self.resources.get((group, version), {}).get(resource)

    def adaptation(self, private_group, version, resource):
        """The served version to use instead of `version` for resource, or None (served, or not adaptable)."""
        key = (private_group, version, resource)
        try:
            return self._adaptations[key]
        except KeyError:
            pass
        served = self._adaptation(private_group, version, resource)
        if len(self._adaptations) < _ADAPTATIONS_REMEMBERED:
            self._adaptations[key] = served
        return served

    def _adaptation(self, private_group, version, resource):
        if self.entry(private_group, version, resource) is not None or version not in SUPPORTED_VERSIONS:
            return None
        standard_group = self.group_map.to_standard(private_group)
        for other in reversed(SUPPORTED_VERSIONS):  # prefer v1beta2, the hub
            entry = self.entry(private_group, other, resource)
            if other != version and entry is not None:
                kind = (entry.get("responseKind") or {}).get("kind")
                if _is_adaptable(standard_group, kind):
                    return other
        return None

    def adapted_entries(self, private_group, version):
        """Aggregated entries (responseKind in `version`) for resources offered in `version` by adaptation."""
        entries = []
        if version not in SUPPORTED_VERSIONS:
            return entries
        for other in SUPPORTED_VERSIONS:
            if other == version:
                continue
            for resource, entry in sorted(self.resources.get((private_group, other), {}).items()):
                if self.adaptation(private_group, version, resource) == other:
                    adapted = copy.deepcopy(entry)
                    adapted["responseKind"] = dict(adapted.get("responseKind") or {}, version=version)
                    for sub in adapted.get("subresources") or ():
                        kind = sub.get("responseKind") or {}
                        if kind.get("group") == private_group and kind.get("version") == other:
                            sub["responseKind"] = dict(kind, version=version)
                    entries.append(adapted)
        return entries

    def adapted_versions(self, private_group):
        """Versions offered for private_group (served ones first, in server order, then adapted ones)."""
        versions = list(self.versions.get(private_group) or ())
        for version in reversed(SUPPORTED_VERSIONS):
            if version not in versions and self.adapted_entries(private_group, version):
                versions.append(version)
        return versions


def _standard_aggregated_resource(entry, group_map):
    entry = restore_names(entry)
    for field in ("responseKind",):
        if isinstance(entry.get(field), dict) and isinstance(entry[field].get("group"), str):
            entry[field] = dict(entry[field], group=group_map.to_standard(entry[field]["group"]))
    subresources = []
    for sub in entry.get("subresources") or ():
        sub = dict(sub)
        kind = sub.get("responseKind")
        if isinstance(kind, dict) and isinstance(kind.get("group"), str):
            sub["responseKind"] = dict(kind, group=group_map.to_standard(kind["group"]))
        subresources.append(sub)
    if subresources:
        entry["subresources"] = subresources
    return entry


def aggregated_to_standard(document, index, group_map, show_private):
    """APIGroupDiscoveryList with private groups renamed (and adapted versions added), shadowed ones dropped."""
    if not isinstance(document, dict) or document.get("kind") != AGGREGATED_KIND:
        return document
    items = []
    for item in document.get("items") or ():
        group = (item.get("metadata") or {}).get("name") or ""
        if group and group_map.is_standard(group):
            continue  # shadowed: requests for it reach the private group
        if not (group and group_map.is_private(group)):
            items.append(item)
            continue
        if show_private:
            items.append(item)
        standard = dict(item, metadata=dict(item.get("metadata") or {}, name=group_map.to_standard(group)))
        versions = []
        served = {entry.get("version"): entry for entry in item.get("versions") or ()}
        for version in index.adapted_versions(group) if index else list(served):
            entry = served.get(version)
            resources = [] if entry is None else list(entry.get("resources") or ())
            resources += index.adapted_entries(group, version) if index else []
            new_entry = dict(entry or {"version": version, "freshness": "Current"})
            new_entry["resources"] = [_standard_aggregated_resource(resource, group_map) for resource in resources]
            versions.append(new_entry)
        standard["versions"] = versions
        items.append(standard)
    return dict(document, items=items)


def _api_group_entry(group_entry, group_map, index):
    """One APIGroup (legacy discovery) renamed to the standard group, adapted versions appended."""
    private = group_entry.get("name")
    translated = translate_object(dict(group_entry, apiVersion="v1", kind="APIGroup"), TO_STANDARD, group_map)
    if index is not None:
        known = [version.get("version") for version in translated.get("versions") or ()]
        for version in index.adapted_versions(private):
            if version not in known:
                translated.setdefault("versions", []).append(
                    {"groupVersion": "%s/%s" % (translated["name"], version), "version": version})
    return translated


def group_list_to_standard(document, index, group_map, show_private):
    """Legacy /apis APIGroupList: private groups renamed (plus kept when show_private), shadowed dropped."""
    if not isinstance(document, dict) or document.get("kind") != "APIGroupList":
        return document
    groups = []
    for group_entry in document.get("groups") or ():
        name = group_entry.get("name") or ""
        if group_map.is_standard(name):
            continue
        if not group_map.is_private(name):
            groups.append(group_entry)
            continue
        if show_private:
            groups.append(group_entry)
        standard = _api_group_entry(group_entry, group_map, index)
        standard.pop("apiVersion", None)
        standard.pop("kind", None)
        groups.append(standard)
    return dict(document, groups=groups)


def api_group_to_standard(document, index, group_map):
    """Legacy /apis/<group> APIGroup of a private group, as its standard twin."""
    if not isinstance(document, dict) or document.get("kind") != "APIGroup":
        return document
    return _api_group_entry(document, group_map, index)


def _legacy_resources(entry, group_map):
    """Legacy APIResource entries (the resource and its subresources) for one aggregated entry."""
    entry = _standard_aggregated_resource(entry, group_map)
    kind = (entry.get("responseKind") or {}).get("kind")
    resource = {"name": entry.get("resource"), "singularName": entry.get("singularResource", ""),
                "namespaced": entry.get("scope") == "Namespaced", "kind": kind, "verbs": entry.get("verbs") or []}
    for field in ("shortNames", "categories"):
        if entry.get(field):
            resource[field] = entry[field]
    resources = [resource]
    for sub in entry.get("subresources") or ():
        sub_kind = sub.get("responseKind") or {}
        legacy = {"name": "%s/%s" % (entry.get("resource"), sub.get("subresource")), "singularName": "",
                  "namespaced": resource["namespaced"], "kind": sub_kind.get("kind"), "verbs": sub.get("verbs") or []}
        if sub_kind.get("group") and sub_kind.get("group") != group_map.to_standard(sub_kind.get("group")):
            legacy["group"] = sub_kind["group"]
        resources.append(legacy)
    return resources


def resource_list_to_standard(document, private_group, version, index, group_map):
    """Legacy /apis/<group>/<version> APIResourceList: served resources renamed plus adapted ones.

    document is the upstream answer for this version, or None when only adaptation offers it.
    """
    if document is None:
        document = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "%s/%s" % (private_group, version),
                    "resources": []}
    translated = translate_object(document, TO_STANDARD, group_map)
    resources = []
    for resource in translated.get("resources") or ():
        resource = restore_names(resource)
        resources.append(resource)
    if index is not None:
        for entry in index.adapted_entries(private_group, version):
            resources.extend(_legacy_resources(entry, group_map))
    translated["resources"] = resources
    return translated
