"""CustomResourceDefinitions as the client sees them: private CRDs shown as the standard ones, the standard
CRDs they shadow hidden. Pure."""
from urllib.parse import parse_qsl, quote

from capi_proxy import bodies, discovery
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.selectors import (  # noqa: F401
    matches,
    requirements as _requirements,
)
from capi_proxy.core import DROPPED_LABEL_PREFIXES, TO_STANDARD, standard_view_labels, translate_crd_name, translate_object


def _text(requirement):
    key, operator, values = requirement
    if operator in ("in", "notin"):
        return "%s %s (%s)" % (key, operator, ",".join(values))
    return {"!": "!" + key, "exists": key}.get(operator) or "%s%s%s" % (key, operator, values[0])


def split_selector(query):
    """(query for the server, requirements the proxy judges itself or None) of a CRD request: the requirements on
    the labels a twin keeps aside (clusterctl's) cannot be judged by the server, whose twins lack them."""
    pairs = parse_qsl(query, keep_blank_values=True)
    selector = next((value for key, value in pairs if key == "labelSelector"), None)
    requirements = _requirements(selector) if selector else None
    if not requirements:
        return query, None
    local = [req for req in requirements if req[0].startswith(DROPPED_LABEL_PREFIXES)]
    if not local:
        return query, None
    upstream = ",".join(_text(req) for req in requirements if req not in local)
    rebuilt = [(key, upstream if key == "labelSelector" else value) for key, value in pairs
               if key != "labelSelector" or upstream]
    return "&".join("%s=%s" % (quote(key, safe=""), quote(value, safe="")) for key, value in rebuilt), local


def crd_view(document, group_map, show_private, selector=None):
    """CRDs as the client sees them: private CRDs as the standard ones, shadowed standard CRDs hidden.

    document is the caller's own parsed tree: anything that is not a CRD is translated in place. selector: the
    requirements of split_selector, judged on the lists' items as the client sees them.
    """
    viewed = _view(document, group_map, show_private)
    if selector and isinstance(viewed, dict) and isinstance(viewed.get("items"), list):
        viewed["items"] = [item for item in viewed["items"]
                           if matches((item.get("metadata") or {}).get("labels"), selector)]
    return viewed


def _view(document, group_map, show_private):
    if document is None:
        return document
    if "type" in document and isinstance(document.get("object"), dict) and "apiVersion" not in document:
        viewed = crd_view(document["object"], group_map, show_private)
        return None if viewed is None else dict(document, object=viewed)
    if document.get("kind") == "PartialObjectMetadataList" and isinstance(document.get("items"), list):
        return dict(document, items=[shown for item in document["items"]
                                     for shown in _metadata_view(item, group_map, show_private)])
    if document.get("kind") == "PartialObjectMetadata":
        shown = _metadata_view(document, group_map, False)
        return shown[0] if shown else None
    if document.get("kind") == "CustomResourceDefinitionList" and isinstance(document.get("items"), list):
        items = []
        for item in document["items"]:
            group = (item.get("spec") or {}).get("group") or ""
            if group_map.is_standard(group):
                continue
            if group_map.is_private(group) and show_private:
                items.append(item)
            items.append(_standard_crd(item, group_map))
        return dict(document, items=items)
    if document.get("kind") == "CustomResourceDefinition":
        group = (document.get("spec") or {}).get("group") or ""
        if group_map.is_standard(group):
            return None
        return _standard_crd(document, group_map)
    return bodies.translate_response(document, TO_STANDARD, group_map, in_place=True)


def _metadata_view(item, group_map, show_private):
    """A CRD in the metadata-only form (PartialObjectMetadata, as controller-runtime's metadata cache lists and
    watches CRDs to read their contract labels): the group is only in the name, <plural>.<group>. Returns what the
    client sees: nothing for a shadowed standard CRD, the private one as the standard one (and, with show_private,
    itself too), anything else as it is."""
    metadata = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
    name = metadata.get("name") or ""
    group = name.partition(".")[2]
    if group_map.is_standard(group):
        return []
    if not group_map.is_private(group):
        return [item]
    standard = dict(item, metadata=_standard_metadata(dict(metadata, name=translate_crd_name(name, TO_STANDARD, group_map))))
    return [item, standard] if show_private else [standard]


def _standard_metadata(metadata):
    """A twin's metadata as the standard CRD's: with the labels it keeps aside (clusterctl's) shown again."""
    labels = standard_view_labels(metadata)
    return metadata if labels is None else dict(metadata, labels=labels)


def _standard_crd(crd, group_map):
    group = (crd.get("spec") or {}).get("group") or ""
    if not group_map.is_private(group):
        return crd
    shell = dict(crd)
    missing = [field for field in ("apiVersion", "kind") if field not in shell]
    shell.setdefault("apiVersion", "apiextensions.k8s.io/v1")
    shell.setdefault("kind", "CustomResourceDefinition")  # items of a List carry no kind
    translated = translate_object(shell, TO_STANDARD, group_map)
    for field in missing:
        del translated[field]
    if isinstance(translated.get("metadata"), dict):
        translated["metadata"] = _standard_metadata(translated["metadata"])
    names = (translated.get("spec") or {}).get("names")
    if isinstance(names, dict):
        translated["spec"]["names"] = discovery.restore_names(names)
    return translated
