# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner of hypershift.private_capi.k8s_lists: several LISTs (or GETs of named objects) in one module run, each
shaped as kubernetes.core's k8s_info returns it, sent in parallel over one client."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import PARALLELISM_MINIMUM
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import parallel_map
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import API_CALLS, ModuleService
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException


def resolve(client, wanted):
    """(what, path or None, namespace listed in) of one O(lists) entry, by discovery."""
    namespace = wanted["namespace"] or None
    what = "%s %s%s" % (wanted["api_version"], wanted["kind"], " in namespace %s" % namespace if namespace else "")
    path, namespaced = client.collection_path(wanted["api_version"], wanted["kind"], namespace, what)
    return what, path, (namespace or "") if namespaced else ""


def read(client, wanted, resolved):
    """One k8s_info-shaped result for one O(lists) entry."""
    what, path, namespace = resolved
    result = dict(api_version=wanted["api_version"], kind=wanted["kind"], namespace=namespace,
                  api_found=path is not None, resources=[])
    if path is None:
        return result
    if wanted.get("name"):
        found = client.get_or_none("%s/%s" % (path, wanted["name"]), "%s named %s" % (what, wanted["name"]))
        result["resources"] = [found] if found is not None else []
    else:
        result["resources"] = client.list(path, what, label_selector=",".join(wanted["label_selectors"]) or None,
                                          field_selector=",".join(wanted["field_selectors"]) or None)
    return result


class ListsService(ModuleService):
    """k8s_lists' service (k8s/runner.py): discovery, the namespace checks, then the LISTs in parallel. Read-only;
    no RV(elapsed_seconds)."""

    MINIMUMS = PARALLELISM_MINIMUM
    PARALLELISM_OPTION = "parallelism"
    TAIL = (API_CALLS,)

    def run(self):
        return read_lists(self.client, self.params["lists"], self.params["parallelism"])


def read_lists(client, wanted, parallelism):
    """k8s_lists' result: each entry of wanted (O(lists)) resolved by discovery, its namespace checked, then read."""
    both = [index for index, entry in enumerate(wanted)
            if entry.get("name") and (entry.get("label_selectors") or entry.get("field_selectors"))]
    if both:
        raise PrivateCapiError("lists[%d] names an object (%s) and has selectors: a name reads that one object, "
                               "selectors filter a collection - give one or the other" % (both[0], wanted[both[0]]["name"]))
    try:
        # discovery first, one entry at a time (the client's discovery cache is not thread-safe); then the LISTs
        resolved = [resolve(client, entry) for entry in wanted]
        # a namespace that does not exist fails (one GET each), so a typo does not read as "no objects"
        client.require_namespaces(("lists[%d].namespace" % index, namespace)
                                  for index, (_what, path, namespace) in enumerate(resolved) if path is not None)
        results = parallel_map(lambda index: read(client, wanted[index], resolved[index]), range(len(wanted)),
                               parallelism)
    except PrivateCapiError:
        raise
    except CoreException as error:  # kubernetes.core's own (discovery): no message of ours to add but what failed
        raise PrivateCapiError("could not read: %s" % error)
    return dict(changed=False, results=results)
