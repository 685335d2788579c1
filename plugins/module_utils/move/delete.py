# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The delete phase of capi_object_migrate (delete_source: true): re-point dependents, then delete sources.

1. Objects that are not moved but are owned by a moved source (the HostedControlPlane owned by the CAPI
   Cluster, Secrets, provider objects of groups that are not mapped) get their ownerReferences re-pointed
   at the copies (one conflict-checked merge patch each), before any source is deleted.
2. Sources are deleted children first (graph levels, deepest first), always with propagationPolicy
   Orphan, so a deletion can never cascade into anything: a source with finalizers gets them removed
   in one write that also labels it for deletion (and records them), then each kind of the level is
   deleted with one DELETE of the collection selected by that label; a source without finalizers is
   deleted with uid and resourceVersion preconditions. A source that changed since it was judged
   (409) stops the run - the next run judges it again.
Sources that were already being deleted are not touched: the service refuses to delete anything while one of them
holds a finalizer (its deletion is in flight); those without go as they would have.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import DELETE_LABEL
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.copy import (
    MigrationError,
    object_name,
    object_path,
    what,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.plan import (
    DELETE_LABEL_VALUE,
    is_marked_for_deletion,
    marked_for_deletion,
    repointed_owner_references,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import (
    PARTIAL_METADATA_LIST_ACCEPT,
    ApiError,
    api_path,
    call_with_retries,
    parallel_map,
)

ORPHAN = "Orphan"
DELETE_SELECTOR = "%s=%s" % (DELETE_LABEL, DELETE_LABEL_VALUE)
CONFLICT_RETRIES = 5


def _changed_error(description, exc):
    return MigrationError(
        "%s: the object changed after this run judged it (HTTP %s: %s); nothing of it was deleted - re-run the "
        "module, which compares it with its copy again" % (description, exc.status, exc.api_message))


class DeleteEngine(object):
    def __init__(self, client, report, namespace, parallelism=8):
        self.client = client
        self.report = report
        self.namespace = namespace
        self.parallelism = parallelism

    # --- dependents ------------------------------------------------------------------------------
    def repoint_dependents(self, graph, resources):
        """Re-point every ownerReference of a scanned resource that names a moved source (by uid) at the source's copy
        (the nodes' owner_target)."""
        owner_targets = graph.owner_targets()

        def scan(resource):
            path = api_path(resource.group, resource.version, resource.plural, self.namespace)
            items, _meta = call_with_retries(lambda: self.client.list_all(
                path, "list %s in namespace %s (scan for dependents)" % (resource.plural, self.namespace),
                headers={"Accept": PARTIAL_METADATA_LIST_ACCEPT}))
            return [(resource, item) for item in items
                    if repointed_owner_references(item, owner_targets) is not None]

        found = [pair for pairs in parallel_map(scan, resources, self.parallelism) for pair in pairs]
        found.sort(key=lambda pair: (pair[0].kind, object_name(pair[1])))
        parallel_map(lambda pair: self._repoint(pair[0], pair[1], owner_targets), found, self.parallelism)

    def _repoint(self, resource, item, owner_targets):
        name = object_name(item)
        path = api_path(resource.group, resource.version, resource.plural, self.namespace, name)
        description = "re-point ownerReferences of %s %s/%s" % (resource.kind, self.namespace, name)
        current = item
        for _attempt in range(CONFLICT_RETRIES):
            refs = repointed_owner_references(current, owner_targets)
            if refs is None:
                return
            patch = {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"], "ownerReferences": refs}}
            try:
                call_with_retries(lambda: self.client.patch(path, patch, description))
            except ApiError as exc:
                if not exc.is_conflict:
                    raise
                current = call_with_retries(lambda: self.client.get(path, "get %s %s/%s" % (resource.kind, self.namespace, name)))
                continue
            self.report.dependents.append({"kind": resource.kind, "api_version": resource.api_version, "name": name,
                                           "owner_references": refs})
            self.report.step("repoint_dependent", resource.kind, name, api_version=resource.api_version)
            return
        raise MigrationError("%s: it kept changing (%d conflicts); stop its writer and re-run" % (description, CONFLICT_RETRIES))

    # --- sources ---------------------------------------------------------------------------------
    def delete_sources(self, graph, nodes):
        """Deletes the sources of nodes (of graph) children first: graph's levels (owners first), deepest first."""
        for members in reversed(graph.levels(nodes)):
            with_finalizers = [node for node in members if (node.source.get("metadata") or {}).get("finalizers")]
            marked = [node for node in members if node not in with_finalizers and is_marked_for_deletion(node.source)]
            plain = [node for node in members if node not in with_finalizers and node not in marked]
            parallel_map(lambda node: self._mark(node.kind, node.source), with_finalizers, self.parallelism)
            parallel_map(lambda node: self._delete_one(node.kind, node.source), plain, self.parallelism)
            by_kind = {}
            for node in with_finalizers + marked:
                by_kind.setdefault(node.kind.key, (node.kind, []))[1].append(node)
            parallel_map(lambda pair: self._delete_marked(pair[0], pair[1]), sorted(by_kind.values(), key=lambda p: p[0].key),
                         self.parallelism)

    def _mark(self, kind, source):
        name = object_name(source)
        description = what("remove finalizers of (and label for deletion)", kind, self.namespace, name, target=False)
        try:
            call_with_retries(lambda: self.client.patch(object_path(kind, self.namespace, name, target=False),
                                                        marked_for_deletion(source), description))
        except ApiError as exc:
            if exc.is_conflict:
                raise _changed_error(description, exc)
            raise
        self.report.step("remove_finalizers", kind.kind, name, api_version=kind.source_api_version,
                         finalizers=list(source["metadata"]["finalizers"]))

    def _delete_one(self, kind, source):
        metadata = source["metadata"]
        name = metadata["name"]
        description = what("delete", kind, self.namespace, name, target=False)
        preconditions = {"uid": metadata["uid"], "resourceVersion": metadata["resourceVersion"]}
        try:
            call_with_retries(lambda: self.client.delete(object_path(kind, self.namespace, name, target=False), description,
                                                         propagation_policy=ORPHAN, preconditions=preconditions))
        except ApiError as exc:
            if exc.is_not_found:
                pass  # gone already (an earlier attempt whose answer was lost)
            elif exc.is_conflict:
                raise _changed_error(description, exc)
            else:
                raise
        self.report.count(kind.kind, "deleted")
        self.report.step("delete", kind.kind, name, api_version=kind.source_api_version, propagation_policy=ORPHAN)

    def _delete_marked(self, kind, nodes):
        path = object_path(kind, self.namespace, None, target=False)
        description = "delete %s in namespace %s labelled %s (%s/%s)" % (kind.plural, self.namespace, DELETE_SELECTOR,
                                                                         kind.source_group, kind.version)
        call_with_retries(lambda: self.client.delete_collection(path, description, DELETE_SELECTOR, propagation_policy=ORPHAN))
        self.report.count(kind.kind, "deleted", len(nodes))
        self.report.step("delete_collection", kind.kind, "%d object(s)" % len(nodes), api_version=kind.source_api_version,
                         label_selector=DELETE_SELECTOR, propagation_policy=ORPHAN)
