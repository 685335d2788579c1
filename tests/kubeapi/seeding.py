"""Load manifests from --seed directories: CRDs first, then Namespaces, then everything else."""
import json
import logging
import os

import yaml

from . import errors
from .api import WriteOptions
from .handlers_resource import _NoTimestampLoader

LOG = logging.getLogger("kubeapi.seeding")
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def _documents(path):
    with open(path, "r", encoding="utf-8") as handle:
        text = handle.read()
    if path.endswith(".json"):
        docs = [json.loads(text)]
    else:
        docs = list(yaml.load_all(text, Loader=_NoTimestampLoader))
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        if doc.get("kind", "").endswith("List") and isinstance(doc.get("items"), list):
            for item in doc["items"]:
                if isinstance(item, dict):
                    yield item
        else:
            yield doc


def manifests(directories):
    """[(path, object)] of every manifest under the directories, in file-name order."""
    found = []
    for directory in directories:
        if os.path.isfile(directory):
            paths = [directory]
        else:
            paths = []
            for root, dirs, files in os.walk(directory):
                dirs.sort()
                paths.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(MANIFEST_SUFFIXES))
        for path in paths:
            for doc in _documents(path):
                found.append((path, doc))
    return found


def _rank(obj):
    kind = obj.get("kind")
    if kind == "CustomResourceDefinition":
        return 0
    if kind == "Namespace" and obj.get("apiVersion") == "v1":
        return 1
    return 2


async def load_seed_dirs(server, directories):
    docs = sorted(manifests(directories), key=lambda item: _rank(item[1]))
    options = WriteOptions(field_manager="kubeapi-seed", field_validation="Ignore")
    created = skipped = unserved = 0
    for path, obj in docs:
        api_version = obj.get("apiVersion", "")
        group, _separator, version = api_version.rpartition("/")
        rtype = server.registry.by_kind(group, obj.get("kind", ""))
        if rtype is None or rtype.version(version) is None:
            # like `kubectl apply` on a kind without CRD: reported, the rest still loads
            LOG.warning('seed %s: skipped %s %s: no matches for kind "%s" in version "%s" (is its CRD among the '
                        'seeds?)', path, obj.get("kind"), (obj.get("metadata") or {}).get("name"), obj.get("kind"),
                        api_version)
            unserved += 1
            continue
        meta = obj.setdefault("metadata", {})
        meta.pop("resourceVersion", None)
        namespace = meta.get("namespace") or ("default" if rtype.namespaced else "")
        if rtype.namespaced and server.store.get(("", "namespaces"), "", namespace) is None:
            ns_type = server.registry.by_storage(("", "namespaces"))
            await server.api.create(ns_type, "v1", "", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": namespace}}, options)
        existing = server.store.get(rtype.storage_group_resource, namespace if rtype.namespaced else "",
                                    meta.get("name", ""))
        if existing is not None:
            skipped += 1
            continue
        status = obj.get("status")
        try:
            result = await server.api.create(rtype, version, namespace, obj, options)
            if status is not None and rtype.has_status(version):
                result = dict(result, status=status)
                await server.api.update(rtype, version, namespace, result["metadata"]["name"], result, options,
                                        "status")
        except errors.ApiError as err:
            raise SystemExit("seed %s: %s %s: %s" % (path, obj.get("kind"), meta.get("name"), err.message))
        created += 1
    LOG.info("seeded %d objects (%d already present, %d of unserved kinds skipped) from %s", created, skipped,
             unserved, ", ".join(directories))
