# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which CustomResourceDefinitions convert through a webhook Service: pure functions over listed CRDs.

A Service that a CRD's conversion webhook names must stay: without it every read or watch of that CRD's objects at a
version other than the stored one fails, and kube-apiserver logs the failures without pause.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def conversion_service(crd):
    """{"namespace", "name", "port", "path"} of the Service a CRD converts through, or None (no webhook, or a URL)."""
    conversion = (crd.get("spec") or {}).get("conversion") or {}
    if conversion.get("strategy") != "Webhook":
        return None
    service = ((conversion.get("webhook") or {}).get("clientConfig") or {}).get("service")
    if not isinstance(service, dict) or not service.get("name"):
        return None
    return {"namespace": service.get("namespace", ""), "name": service["name"], "port": service.get("port", 443),
            "path": service.get("path", "")}


def crds_naming_service(crds, namespace, name):
    """The CRDs whose conversion webhook is Service namespace/name (any port and path), sorted by name: each
    {"name", "group", "port", "path", "deleting"} (deleting: the API server is removing it, but it still converts)."""
    users = []
    for crd in crds:
        service = conversion_service(crd)
        if service is None or service["namespace"] != namespace or service["name"] != name:
            continue
        metadata = crd.get("metadata") or {}
        users.append({"name": metadata.get("name", ""), "group": (crd.get("spec") or {}).get("group", ""),
                      "port": service["port"], "path": service["path"],
                      "deleting": bool(metadata.get("deletionTimestamp"))})
    return sorted(users, key=lambda user: user["name"])
