# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner and API work of hypershift.private_capi.private_crd_render (render logic: render.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.diff import diff_objects
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    CapiTranslationError,
    GroupMap,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import CRD_MANAGED_LABEL, SOURCE_HASH_ANNOTATION
from ansible_collections.hypershift.private_capi.plugins.module_utils.crds.role import twin_problems
from ansible_collections.hypershift.private_capi.plugins.module_utils.crds.render import (
    MANAGED_LABEL_VALUE,
    CrdRenderError,
    RenderOptions,
    change_kind,
    live_matches,
    merged_for_replace,
    render_all,
    served_versions,
    strip_server_fields,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiError, api_path
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import ModuleService

try:
    import yaml
except ImportError:  # reported by AnsibleK8SModule's requirement check
    yaml = None

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CONFLICT_RETRIES = 5
BLOCKING_OBJECTS_SHOWN = 20
YAML_SUFFIXES = (".yaml", ".yml", ".json")


def load_file(path):
    """(origin, index, document) for each non-empty YAML document of one file; CrdRenderError on a parse error."""
    documents = []
    try:
        with open(path, "r") as handle:
            index = 0
            for document in yaml.load_all(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
                if document is not None:
                    documents.append((path, index, document))
                index += 1
    except yaml.YAMLError as exc:
        raise CrdRenderError("%s document %d: not valid YAML: %s" % (path, len(documents), exc))
    except (IOError, OSError) as exc:
        raise CrdRenderError("%s: cannot read: %s" % (path, exc))
    return documents


def load_src(src):
    """Documents of a file, or of every *.yaml/*.yml/*.json file below a directory (sorted paths)."""
    if os.path.isdir(src):
        paths = []
        for root, dirs, files in os.walk(src):
            dirs.sort()
            paths.extend(os.path.join(root, name) for name in sorted(files) if name.endswith(YAML_SUFFIXES))
        if not paths:
            raise CrdRenderError("src %s: the directory holds no .yaml/.yml/.json file" % src)
    elif os.path.exists(src):
        paths = [src]
    else:
        raise CrdRenderError("src %s: no such file or directory" % src)
    documents = []
    for path in sorted(paths):
        documents.extend(load_file(path))
    return documents


def load_cluster_sources(client, group_map):
    """Every installed CRD whose group is a standard CAPI group (one LIST), reduced to its source fields."""
    crds = client.list(CRD_PATH, "list CustomResourceDefinitions")
    sources = [strip_server_fields(crd) for crd in crds if group_map.is_standard((crd.get("spec") or {}).get("group", ""))]
    return [("cluster", index, crd) for index, crd in enumerate(sorted(sources, key=lambda crd: crd["metadata"]["name"]))]


def build_options(params):
    try:
        group_map = GroupMap(params.get("extra_groups") or {})
    except CapiTranslationError as exc:
        raise CrdRenderError("extra_groups: %s" % exc)
    return RenderOptions(
        group_map=group_map,
        short_name_prefix=params["short_name_prefix"],
        category=params["category"],
        webhook_service_name=params["conversion_webhook_service_name"],
        webhook_service_namespace=params["conversion_webhook_service_namespace"],
        webhook_service_path=params["conversion_webhook_service_path"],
        webhook_service_port=params["conversion_webhook_service_port"],
        webhook_url=params.get("conversion_webhook_url"),
        webhook_ca_bundle=params.get("conversion_webhook_ca_bundle"),
    )


def _compared(crd):
    """The parts of a CRD this module owns or cares about, for diffs (no status or server metadata)."""
    metadata = crd.get("metadata") or {}
    return {
        "metadata": {"labels": metadata.get("labels") or {}, "annotations": metadata.get("annotations") or {}},
        "spec": crd.get("spec") or {},
    }


def _diff_entry(name, changes):
    return {
        "before_header": "CustomResourceDefinition %s (live)" % name,
        "after_header": "CustomResourceDefinition %s (desired)" % name,
        "before": {change["path"]: change["before"] for change in changes if change["change"] != "added"},
        "after": {change["path"]: change["after"] for change in changes if change["change"] != "removed"},
    }


class PrivateCrdService(object):
    """Applies or removes rendered twins; every write is conflict-checked, dry-run in check mode."""

    def __init__(self, client):
        self.client = client

    def apply(self, desired):
        name = desired["metadata"]["name"]
        path = "%s/%s" % (CRD_PATH, name)
        what_get = "get %s" % describe("CustomResourceDefinition", name)
        for _attempt in range(CONFLICT_RETRIES):
            live = self.client.get_or_none(path, what_get)
            source_hash = desired["metadata"]["annotations"][SOURCE_HASH_ANNOTATION]
            if live is None:
                try:
                    self.client.create(CRD_PATH, desired, "create %s" % describe("CustomResourceDefinition", name))
                except ApiError as exc:
                    if exc.is_already_exists:  # another run created it in between: judge it as found
                        continue
                    raise
                summary = {"metadata.name": name, "spec.group": desired["spec"]["group"],
                           "spec.versions": [v["name"] for v in desired["spec"]["versions"]]}
                return {"name": name, "action": "created", "changed": True, "source_hash": source_hash,
                        "previous_source_hash": None,
                        "diff": {"before_header": name, "after_header": name, "before": {}, "after": summary}}
            previous_hash = ((live.get("metadata") or {}).get("annotations") or {}).get(SOURCE_HASH_ANNOTATION)
            result = {"name": name, "source_hash": source_hash, "previous_source_hash": previous_hash}
            if live_matches(desired, live):
                result.update(action="unchanged", changed=False)
                return result
            kind = change_kind(desired, live)
            try:
                written = self.client.replace(path, merged_for_replace(desired, live),
                                              "replace %s" % describe("CustomResourceDefinition", name))
            except ApiError as exc:
                if exc.is_conflict:
                    continue
                raise
            changes = diff_objects(_compared(live), _compared(written))
            result.update(action=kind + "d" if changes else "unchanged", changed=bool(changes))
            if changes:
                result["diff"] = _diff_entry(name, changes)
            return result
        raise ApiError(409, "Conflict", "the CRD kept changing under us (%d conflicts in a row); re-run" % CONFLICT_RETRIES,
                       "update %s" % describe("CustomResourceDefinition", name))

    def objects_of(self, live):
        """Up to BLOCKING_OBJECTS_SHOWN objects of a live CRD's kind, as 'Kind namespace/name'."""
        spec = live.get("spec") or {}
        versions = served_versions(live)
        if not versions:
            return []
        # the storage version reads stored objects without a round trip through the conversion webhook
        storage = [v["name"] for v in spec.get("versions") or () if v.get("storage") and v["name"] in versions]
        path = api_path(spec["group"], (storage or versions)[0], spec["names"]["plural"])
        try:
            items = self.client.list(path, "list %s objects" % live["metadata"]["name"], limit=BLOCKING_OBJECTS_SHOWN)
        except ApiError as exc:
            if exc.is_not_found:  # not established yet: it serves nothing, so it stores nothing either
                return []
            raise
        kind = spec["names"]["kind"]
        return [describe(kind, item["metadata"]["name"], item["metadata"].get("namespace")) for item in items]

    def remove(self, rendered):
        """Delete twins only when none of their kinds holds an object; fail listing them otherwise."""
        results = []
        blockers = {}
        to_delete = []
        for desired in rendered:
            name = desired["metadata"]["name"]
            live = self.client.get_or_none("%s/%s" % (CRD_PATH, name), "get %s" % describe("CustomResourceDefinition", name))
            if live is None:
                results.append({"name": name, "action": "absent", "changed": False})
                continue
            labels = (live.get("metadata") or {}).get("labels") or {}
            if labels.get(CRD_MANAGED_LABEL) != MANAGED_LABEL_VALUE:
                results.append({"name": name, "action": "unmanaged", "changed": False,
                                "reason": "label %s=%s missing: not made by this collection, left alone"
                                % (CRD_MANAGED_LABEL, MANAGED_LABEL_VALUE)})
                continue
            if (live.get("metadata") or {}).get("deletionTimestamp"):
                # the API server is already deleting it (its customresourcecleanup finalizer removes the objects first)
                results.append({"name": name, "action": "deleting", "changed": False})
                continue
            objects = self.objects_of(live)
            if objects:
                blockers[name] = objects
            to_delete.append(name)
        if blockers:
            listing = "; ".join("%s: %s" % (name, ", ".join(objects)) for name, objects in sorted(blockers.items()))
            raise CrdRenderError(
                "refusing to delete private CRDs that still hold objects (deleting a CRD deletes all its objects): %s. "
                "Migrate or delete those objects first; nothing was deleted" % listing
            )
        for name in to_delete:
            self.client.delete("%s/%s" % (CRD_PATH, name), "delete %s" % describe("CustomResourceDefinition", name))
            results.append({"name": name, "action": "deleted", "changed": True,
                            "diff": {"before_header": name, "after_header": name, "before": {"metadata.name": name},
                                     "after": {}}})
        return results

    def wait_gone(self, names, timeout, sleep=0.5):
        """Poll until none of the named CRDs exists any more; CrdRenderError naming those left on timeout.

        Deleting a CRD is asynchronous: the API server marks it, deletes its objects, then removes it.
        """
        deadline = time.monotonic() + timeout
        pending = list(names)
        while True:
            pending = [name for name in pending if self.client.get_or_none(
                "%s/%s" % (CRD_PATH, name), "get %s" % describe("CustomResourceDefinition", name)) is not None]
            if not pending:
                return
            if time.monotonic() >= deadline:
                raise CrdRenderError("timed out after %ss waiting for the API server to finish deleting: %s; "
                                     "read their status.conditions (Terminating) and re-run" % (timeout, ", ".join(pending)))
            time.sleep(sleep)

    def wait_established(self, names, timeout, sleep=1.0):
        """Poll until every named CRD reports Established=True; CrdRenderError naming the laggards on timeout."""
        deadline = time.monotonic() + timeout
        pending = list(names)
        while True:
            still = []
            for name in pending:
                live = self.client.get_or_none("%s/%s" % (CRD_PATH, name), "get %s" % describe("CustomResourceDefinition", name))
                conditions = ((live or {}).get("status") or {}).get("conditions") or ()
                if not any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                    still.append((name, conditions))
            if not still:
                return
            if time.monotonic() >= deadline:
                laggards = "; ".join(
                    "%s (conditions %s)" % (name, [(c.get("type"), c.get("status"), c.get("message")) for c in conditions])
                    for name, conditions in still
                )
                raise CrdRenderError("timed out after %ss waiting for Established on: %s" % (timeout, laggards))
            pending = [name for name, _conditions in still]
            time.sleep(sleep)


class PrivateCrdModule(ModuleService):
    """private_crd_render's service (k8s/runner.py): render, then apply or remove. No RV(api_calls) or
    RV(elapsed_seconds), as documented; a client only where the run reads or writes the cluster."""

    TAIL = ()

    @classmethod
    def option_problems(cls, params):
        if params["from_cluster"] and (params["src"] or params["definitions"] is not None):
            return ["from_cluster: true reads the CRDs from the cluster; do not also pass src or definitions"]
        if not params["from_cluster"] and not params["src"] and params["definitions"] is None:
            return ["no input: pass definitions (a list of CRDs), src (a file or directory) or from_cluster: true"]
        return []

    @classmethod
    def from_run(cls, run):
        reads = run.params["from_cluster"] or run.params["state"] != "rendered"
        return cls(cls.connect(run) if reads else None, run.params, check_mode=run.check_mode, diff=run.diff)

    def _documents(self, group_map):
        params = self.params
        if params["from_cluster"]:
            return load_cluster_sources(self.client, group_map)
        if params["src"]:
            return load_src(params["src"])
        return [("definitions", index, document) for index, document in enumerate(params["definitions"] or ())]

    def _write(self, rendered):
        """apply (state present) or remove (state absent) the rendered twins, awaited where O(wait): the results."""
        params = self.params
        service = PrivateCrdService(self.client)
        if params["state"] == "present":
            results = [service.apply(crd) for crd in rendered]
            if params["wait"] and not self.check_mode and results:
                service.wait_established([result["name"] for result in results], params["wait_timeout"])
            return results
        results = service.remove(rendered)
        going = [result["name"] for result in results if result["action"] in ("deleted", "deleting")]
        if params["wait"] and not self.check_mode and going:
            service.wait_gone(going, params["wait_timeout"])
        return results

    def run(self):
        state = self.params["state"]
        options = build_options(self.params)
        rendering = render_all(self._documents(options.group_map), options)
        outcome = {"changed": False, "state": state, "rendered": rendering.rendered_names,
                   "skipped": rendering.skipped, "results": []}
        if not rendering.rendered:
            self.warnings.append("no standard CAPI CRD found in the input; nothing to %s"
                                 % ("render" if state == "rendered" else state))
        if state == "rendered" or (state == "present" and self.check_mode):
            # in check mode nothing is applied: what would be (the private_crds role judges its twins by it)
            outcome["crds"] = rendering.rendered
        if state == "rendered":
            return outcome
        results = self._write(rendering.rendered)
        diffs = [result.pop("diff") for result in results if "diff" in result]
        outcome.update(results=results, changed=any(result["changed"] for result in results))
        if state == "present" and self.params["verify"]:
            # read back after the writes and the wait: the judgement of role.twin_problems (the filter's), on the CRDs
            # as installed now (in check mode the planned twins stand in for those not installed)
            installed = self.client.list(CRD_PATH, "list CustomResourceDefinitions (verify)")
            outcome["twin_problems"] = twin_problems(installed, self.params["extra_groups"], rendering.rendered,
                                                     self.check_mode)
        if self.diff:
            outcome["diff"] = diffs
        return outcome
