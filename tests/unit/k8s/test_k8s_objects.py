"""hypershift.private_capi.k8s_objects' service (k8s/objects.py) against an in-memory stand-in of the collection's
ApiClient (the methods the service calls; the real client and API server are the roles' integration tests'): what
it writes for each state and option, what it reports, and the judgements it waits with."""
import copy

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s import objects
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiClient, ApiError


def deployment(name="shim", replicas=2, image="img:1", **status):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "hypershift", "name": name},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": image}]}}},
            "status": status}


def rule(name="prometheus-rule"):
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"namespace": "hypershift", "name": name}, "spec": {"groups": []}}


class Store(object):
    """The objects by path; every write recorded as (verb, path, content type); strategic merge patches of custom
    resources refused with 415 as kube-apiserver refuses them."""

    def __init__(self, *live):
        self.objects = {}
        self.writes = []
        self.version = 1
        for obj in live:
            self._put(self._name_path(obj), copy.deepcopy(obj))

    def _name_path(self, obj):
        return "%s/%s" % (self.collection_path(obj["apiVersion"], obj["kind"], obj["metadata"]["namespace"], "")[0],
                          obj["metadata"]["name"])

    def _put(self, path, obj):
        self.version += 1
        obj = dict(obj, metadata=dict(obj["metadata"], resourceVersion=str(self.version)))
        self.objects[path] = obj
        return copy.deepcopy(obj)

    def collection_path(self, api_version, kind, namespace, _what):
        if kind == "Unserved":
            return None, False
        return "/apis/%s/namespaces/%s/%ss" % (api_version, namespace, kind.lower()), True

    def get_or_none(self, path, _what):
        return copy.deepcopy(self.objects.get(path))

    def create(self, collection, body, _what):
        self.writes.append(("create", collection, None))
        return self._put("%s/%s" % (collection, body["metadata"]["name"]), body)

    def patch(self, path, body, _what, content_type=None):
        self.writes.append(("patch", path, content_type))
        if content_type == objects.STRATEGIC_MERGE_PATCH and "monitoring" in path:
            raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format", "patch")
        merged = dict(self.objects[path], **dict((key, value) for key, value in body.items() if key != "metadata"))
        if merged == self.objects[path]:
            return copy.deepcopy(self.objects[path])
        return self._put(path, merged)

    def replace(self, path, body, _what):
        self.writes.append(("replace", path, body["metadata"].get("resourceVersion")))
        return self._put(path, body)

    def delete(self, path, _what):
        self.writes.append(("delete", path, None))
        if path not in self.objects:  # gone since the GET
            raise ApiError(404, "NotFound", "not found", "delete")
        del self.objects[path]

    delete_existing = ApiClient.delete_existing  # the real client's GET then DELETE over this stand-in's


class RacedStore(Store):
    """An object another client deletes between the GET and the DELETE."""

    def get_or_none(self, path, what):
        found = super(RacedStore, self).get_or_none(path, what)
        self.objects.pop(path, None)
        return found


def run(store, definitions, check_mode=False, diff=False, **options):
    params = dict(definitions=definitions, state="present", force=False, merge_type="strategic-merge", wait=False,
                  wait_timeout=5, wait_sleep=0.1)
    params.update(options)
    return objects.ObjectsService(store, params, check_mode=check_mode, diff=diff).run()


def test_present_creates_then_patches_what_differs_and_a_second_run_changes_nothing():
    store = Store()
    first = run(store, [deployment(), rule()])
    assert [result["action"] for result in first["results"]] == ["created", "created"] and first["changed"]
    second = run(store, [deployment(), rule()], diff=True)
    assert [result["action"] for result in second["results"]] == ["unchanged", "unchanged"]
    assert not second["changed"] and "diff" not in second
    changed = run(store, [deployment(image="img:2")], diff=True)
    assert changed["results"][0]["action"] == "patched" and changed["changed"]
    before, after = changed["diff"]["before"], changed["diff"]["after"]
    assert list(before) == ["Deployment hypershift/shim"]
    assert "resourceVersion" not in after["Deployment hypershift/shim"]["metadata"]
    assert after["Deployment hypershift/shim"]["spec"]["template"]["spec"]["containers"][0]["image"] == "img:2"


def test_a_custom_resource_is_merge_patched_where_strategic_merge_is_refused():
    store = Store(rule())
    run(store, [rule()])
    assert [write[2] for write in store.writes] == [objects.STRATEGIC_MERGE_PATCH, objects.MERGE_PATCH]
    store.writes[:] = []
    run(store, [rule()], merge_type="merge")
    assert [write[2] for write in store.writes] == [objects.MERGE_PATCH]


def test_force_replaces_with_the_live_resource_version():
    store = Store(deployment())
    live_version = store.objects[store._name_path(deployment())]["metadata"]["resourceVersion"]
    result = run(store, [deployment(replicas=3)], force=True)
    assert store.writes == [("replace", store._name_path(deployment()), live_version)]
    assert result["results"][0]["action"] == "replaced"


def test_absent_deletes_what_exists_and_names_what_is_already_gone():
    store = Store(deployment())
    result = run(store, [deployment(), rule()], state="absent")
    assert [result["action"] for result in result["results"]] == ["deleted", "absent"] and result["changed"]
    again = run(store, [deployment()], state="absent")
    assert again["results"][0]["action"] == "absent" and not again["changed"]


def test_an_object_deleted_by_another_client_since_the_get_counts_as_deleted():
    result = run(RacedStore(deployment()), [deployment()], state="absent")
    assert result["results"][0]["action"] == "deleted" and result["changed"]


def test_the_wait_ends_when_the_deployment_has_rolled_out_and_names_it_on_timeout():
    ready = deployment(observedGeneration=1, replicas=2, updatedReplicas=2, availableReplicas=2)
    store = Store()
    done = run(store, [ready], wait=True)  # written with its status (the stand-in keeps it): rolled out at once
    assert not done["timed_out"] and done["resources"][0]["status"]["availableReplicas"] == 2
    stuck = objects.ObjectsService(Store(), dict(
        definitions=[deployment(updatedReplicas=1, availableReplicas=1, replicas=2)], state="present", force=False,
        merge_type="strategic-merge", wait=True, wait_timeout=1, wait_sleep=0.1))
    with pytest.raises(objects.WaitTimedOut, match=r"timed out after 1 s waiting for them to be ready .*Deployment "
                                                   r"hypershift/shim"):
        stuck.run()
    partial = stuck.partial()  # what the failed run returns: the Deployment as last read, for the role's message
    assert partial["timed_out"] and partial["resources"][0]["status"]["availableReplicas"] == 1


def test_check_mode_writes_through_the_client_and_never_waits():
    store = Store()
    result = run(store, [deployment()], check_mode=True, wait=True, wait_timeout=0)
    assert result["results"][0]["action"] == "created"  # the client sends it as a dry run (ApiClient.dry_run)


@pytest.mark.parametrize("definition, problem", [
    ({"kind": "Deployment", "metadata": {"name": "a"}}, "definitions[0] (Deployment a) lacks apiVersion"),
    ({"apiVersion": "v1", "metadata": {}}, "definitions[0] (object <no name>) lacks kind, metadata.name"),
])
def test_definition_problems_name_the_index_and_what_is_missing(definition, problem):
    assert objects.definition_problems([definition]) == [problem]


def test_an_unserved_kind_says_what_to_install():
    bad = {"apiVersion": "example.com/v1", "kind": "Unserved", "metadata": {"namespace": "n", "name": "x"}}
    with pytest.raises(objects.ObjectsError, match="does not serve kind Unserved of example.com/v1; install its CRD"):
        run(Store(), [bad])


@pytest.mark.parametrize("obj, state, expected", [
    (None, "absent", True),
    (deployment(), "absent", False),
    (None, "present", False),
    (rule(), "present", True),
    (deployment(observedGeneration=1, replicas=2, updatedReplicas=2, availableReplicas=2), "present", True),
    (deployment(observedGeneration=1, replicas=3, updatedReplicas=2, availableReplicas=2), "present", False),
])
def test_awaited(obj, state, expected):
    assert objects.awaited(obj, state) is expected
