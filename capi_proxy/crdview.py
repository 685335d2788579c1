"""CustomResourceDefinitions as the client sees them: private CRDs shown as the standard ones, the standard
CRDs they shadow hidden. Pure."""
from capi_proxy import bodies, discovery
from capi_proxy.core import TO_STANDARD, translate_crd_name, translate_object


def crd_view(document, group_map, show_private):
    """CRDs as the client sees them: private CRDs as the standard ones, shadowed standard CRDs hidden.

    document is the caller's own parsed tree: anything that is not a CRD is translated in place.
    """
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
    standard = dict(item, metadata=dict(metadata, name=translate_crd_name(name, TO_STANDARD, group_map)))
    return [item, standard] if show_private else [standard]


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
    names = (translated.get("spec") or {}).get("names")
    if isinstance(names, dict):
        translated["spec"]["names"] = discovery.restore_names(names)
    return translated
