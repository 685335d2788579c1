"""Discovery documents: /version, /api, /apis (legacy and aggregated apidiscovery.k8s.io/v2) and group versions."""
import base64
import hashlib

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

VERSION_INFO = {"major": "1", "minor": "33", "emulationMajor": "1", "emulationMinor": "33",
                "minCompatibilityMajor": "1", "minCompatibilityMinor": "32", "gitVersion": "v1.33.0-kubeapi",
                "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                "buildDate": "2025-04-23T00:00:00Z", "goVersion": "go1.24.2", "compiler": "gc",
                "platform": "linux/amd64"}


def storage_version_hash(group, version, kind):
    digest = hashlib.sha256(("%s/%s/%s" % (group, version, kind)).encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _subresource_entries(rtype, version):
    """[(subresource, (group, version, kind), verbs)] served for a resource version."""
    entries = []
    if rtype.builtin:
        subs = rtype.subresources
    else:
        info = rtype.version(version)
        subs = set()
        if info.status:
            subs.add("status")
        if info.scale:
            subs.add("scale")
    own = (rtype.group, version, rtype.kind)
    for sub in sorted(subs):
        if sub == "status":
            entries.append(("status", own, ["get", "patch", "update"]))
        elif sub == "scale":
            entries.append(("scale", ("autoscaling", "v1", "Scale"), ["get", "patch", "update"]))
        elif sub == "token":
            entries.append(("token", ("authentication.k8s.io", "v1", "TokenRequest"), ["create"]))
        elif sub == "finalize":
            entries.append(("finalize", own, ["update"]))
    return entries


def resource_list(registry, group, version):
    resources = []
    for rtype in sorted(registry.resources_in(group, version), key=lambda r: r.plural):
        entry = {"name": rtype.plural, "singularName": rtype.singular, "namespaced": rtype.namespaced,
                 "kind": rtype.kind, "verbs": list(rtype.verbs)}
        if rtype.short_names:
            entry["shortNames"] = list(rtype.short_names)
        if rtype.categories:
            entry["categories"] = list(rtype.categories)
        if rtype.verbs != ["create"]:
            entry["storageVersionHash"] = storage_version_hash(rtype.group, rtype.storage_version, rtype.kind)
        resources.append(entry)
        for sub, (sgroup, sversion, skind), verbs in _subresource_entries(rtype, version):
            sub_entry = {"name": "%s/%s" % (rtype.plural, sub), "singularName": "", "namespaced": rtype.namespaced,
                         "kind": skind, "verbs": verbs}
            if (sgroup, sversion) != (group, version):
                sub_entry["group"] = sgroup
                sub_entry["version"] = sversion
            resources.append(sub_entry)
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": "%s/%s" % (group, version) if group else version, "resources": resources}


def api_versions(server_address):
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _group(group, versions):
    entries = [{"groupVersion": "%s/%s" % (group, v), "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry):
    groups = [_group(g, versions) for g, versions in registry.groups().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry, group):
    versions = registry.groups().get(group)
    if not versions:
        return None
    doc = _group(group, versions)
    doc.update({"kind": "APIGroup", "apiVersion": "v1"})
    return doc


def _aggregated_resources(registry, group, version):
    resources = []
    for rtype in sorted(registry.resources_in(group, version), key=lambda r: r.plural):
        entry = {"resource": rtype.plural,
                 "responseKind": {"group": group, "version": version, "kind": rtype.kind},
                 "scope": "Namespaced" if rtype.namespaced else "Cluster",
                 "singularResource": rtype.singular, "verbs": list(rtype.verbs)}
        if rtype.short_names:
            entry["shortNames"] = list(rtype.short_names)
        if rtype.categories:
            entry["categories"] = list(rtype.categories)
        subresources = []
        for sub, (sgroup, sversion, skind), verbs in _subresource_entries(rtype, version):
            subresources.append({"subresource": sub,
                                 "responseKind": {"group": sgroup, "version": sversion, "kind": skind},
                                 "verbs": verbs})
        if subresources:
            entry["subresources"] = subresources
        resources.append(entry)
    return resources


def aggregated(registry, core, api_version="apidiscovery.k8s.io/v2"):
    """APIGroupDiscoveryList for /api (core=True) or /apis."""
    items = []
    for group, versions in registry.groups().items():
        if bool(group) == core:
            continue
        metadata = {"creationTimestamp": None}
        if group:
            metadata["name"] = group
        items.append({"metadata": metadata,
                      "versions": [{"version": v, "resources": _aggregated_resources(registry, group, v),
                                    "freshness": "Current"} for v in versions]})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items}


def wants_aggregated(accept):
    """The aggregated media type a client prefers, or None for the legacy documents."""
    for part in (accept or "").split(","):
        params = {p.split("=", 1)[0].strip(): p.split("=", 1)[1].strip() for p in part.split(";")[1:] if "=" in p}
        if params.get("as") == "APIGroupDiscoveryList" and params.get("g") == "apidiscovery.k8s.io":
            if params.get("v") == "v2":
                return AGGREGATED_V2
            if params.get("v") == "v2beta1":
                return AGGREGATED_V2BETA1
        elif part.split(";")[0].strip() in ("application/json", "*/*", "application/*"):
            return None
    return None
