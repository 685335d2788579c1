"""Version adaptation: objects converted between the client's version and the served one. Pure.

Only the core's convert_object converts; this module decides which documents are CAPI objects
(convertible kinds, their Lists and WatchEvents) and applies PATCH bodies for read-modify-write.
"""

import jsonpatch

from capi_proxy.core import CONVERTIBLE_KINDS, ConversionError, convert_object, merge_patch
from capi_proxy.errors import ProxyError


def _is_convertible(document):
    kind = document.get("kind")
    if not isinstance(kind, str):
        return False
    if kind in CONVERTIBLE_KINDS:
        return True
    return kind.endswith("List") and kind[:-len("List")] in CONVERTIBLE_KINDS and isinstance(document.get("items"), list)


def _with_version(api_version, version):
    group, slash, _old = api_version.partition("/")
    return group + "/" + version if slash else api_version


def convert_document(document, version, crds, code=500):
    """document (object, List or WatchEvent) converted to version; others (Status, Table, Scale) unchanged."""
    if not isinstance(document, dict):
        return document
    try:
        if "type" in document and isinstance(document.get("object"), dict) and "apiVersion" not in document:
            event_object = document["object"]
            if document.get("type") == "BOOKMARK" and isinstance(event_object.get("apiVersion"), str):
                converted = dict(event_object, apiVersion=_with_version(event_object["apiVersion"], version))
            else:
                converted = convert_document(event_object, version, crds, code)
            return dict(document, object=converted)
        if _is_convertible(document):
            return convert_object(document, version, crds=crds)
        if document.get("kind") == "Table" and isinstance(document.get("rows"), list):
            rows = [dict(row, object=convert_document(row["object"], version, crds, code))
                    if isinstance(row, dict) and isinstance(row.get("object"), dict) else row
                    for row in document["rows"]]
            return dict(document, rows=rows)
    except ConversionError as exc:
        raise ProxyError(code, "version adaptation to %s failed: %s" % (version, exc))
    return document


def apply_patch(current, patch_document, patch_type):
    """The object after a JSON or merge patch; ProxyError 422/415 when it cannot be applied here."""
    if patch_type == "application/merge-patch+json":
        return merge_patch(current, patch_document)
    if patch_type == "application/json-patch+json":
        try:
            return jsonpatch.apply_patch(current, patch_document)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, ValueError) as exc:
            raise ProxyError(422, "the JSON patch does not apply to the current object: %s" % exc, "Invalid")
    raise ProxyError(415, "patch type %s is not supported for custom resources whose version the proxy adapts; "
                          "use a JSON merge patch or a JSON patch" % patch_type)
