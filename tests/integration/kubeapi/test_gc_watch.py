"""Garbage collection (background, foreground, orphan), watch resume and 410, pagination."""
import time

import pytest

from testenv.client import wait_for
from tests.kubeapi.testing import start_server

CM = "/api/v1/namespaces/default/configmaps"


def make(server, name, owners=(), finalizers=()):
    meta = {"name": name}
    if owners:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"],
                                    "uid": o["metadata"]["uid"], "blockOwnerDeletion": True} for o in owners]
    if finalizers:
        meta["finalizers"] = list(finalizers)
    response = server.request("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})
    assert response.status == 201, response
    return response.json()


def exists(server, name):
    return server.request("GET", CM + "/" + name).status == 200


def test_background_deletes_dependents_after_owner(kubeapi):
    owner = make(kubeapi, "bg-owner")
    make(kubeapi, "bg-child", [owner])
    kubeapi.request("DELETE", CM + "/bg-owner")
    assert not exists(kubeapi, "bg-owner")
    wait_for(lambda: not exists(kubeapi, "bg-child"), "background garbage collection of bg-child")


def test_dependent_of_unknown_uid_is_collected_but_other_owner_keeps_it(kubeapi):
    ghost = {"metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"}}
    make(kubeapi, "orphan-child", [ghost])
    wait_for(lambda: not exists(kubeapi, "orphan-child"), "collection of a dependent whose owner uid is absent")
    living = make(kubeapi, "living")
    make(kubeapi, "two-owners", [ghost, living])
    wait_for(lambda: len(kubeapi.request("GET", CM + "/two-owners").json()["metadata"].get(
        "ownerReferences", [])) == 1, "the dangling reference to be removed")
    assert exists(kubeapi, "two-owners")


def test_foreground_waits_for_blocking_dependents(kubeapi):
    owner = make(kubeapi, "fg-owner")
    make(kubeapi, "fg-child", [owner], finalizers=["example.com/slow"])
    deleting = kubeapi.request("DELETE", CM + "/fg-owner", {"propagationPolicy": "Foreground"}).json()
    assert "foregroundDeletion" in deleting["metadata"]["finalizers"] and deleting["metadata"]["deletionTimestamp"]
    wait_for(lambda: kubeapi.request("GET", CM + "/fg-child").json()["metadata"].get("deletionTimestamp"),
             "the dependent to be deleted first")
    time.sleep(0.3)
    assert exists(kubeapi, "fg-owner"), "the owner must wait for its blocking dependent"
    kubeapi.request("PATCH", CM + "/fg-child", {"metadata": {"finalizers": None}},
                    content_type="application/merge-patch+json")
    wait_for(lambda: not exists(kubeapi, "fg-owner"), "the owner after its dependents are gone")


def test_orphan_removes_owner_reference(kubeapi):
    owner = make(kubeapi, "or-owner")
    make(kubeapi, "or-child", [owner])
    kubeapi.request("DELETE", CM + "/or-owner?propagationPolicy=Orphan")
    wait_for(lambda: not exists(kubeapi, "or-owner"), "the orphaning owner deletion")
    child = kubeapi.request("GET", CM + "/or-child").json()
    assert "ownerReferences" not in child["metadata"]


def test_pagination_is_a_consistent_snapshot(kubeapi):
    kubeapi.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": "pages"}})
    for index in range(7):
        kubeapi.request("POST", "/api/v1/namespaces/pages/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p%d" % index, "labels": {"n": str(index)}}})
    wait_for(lambda: kubeapi.request("GET", "/api/v1/namespaces/pages/configmaps/kube-root-ca.crt").status == 200,
             "namespace defaults")
    first = kubeapi.request("GET", "/api/v1/namespaces/pages/configmaps?limit=3").json()
    token = first["metadata"]["continue"]
    assert first["metadata"]["remainingItemCount"] == 5
    kubeapi.request("DELETE", "/api/v1/namespaces/pages/configmaps/p5")
    kubeapi.request("POST", "/api/v1/namespaces/pages/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p9"}})
    names = [i["metadata"]["name"] for i in first["items"]]
    while token:
        page = kubeapi.request("GET", "/api/v1/namespaces/pages/configmaps?limit=3&continue=" + token).json()
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        names += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
    assert names == ["kube-root-ca.crt"] + ["p%d" % i for i in range(7)]
    selected = kubeapi.request("GET", "/api/v1/namespaces/pages/configmaps?labelSelector=n+notin+(1,2),n").json()
    assert [i["metadata"]["name"] for i in selected["items"]] == ["p0", "p3", "p4", "p6"]
    by_name = kubeapi.request("GET", "/api/v1/configmaps?fieldSelector=metadata.name%3Dp3").json()
    assert [i["metadata"]["namespace"] for i in by_name["items"]] == ["pages"]
    bad = kubeapi.request("GET", "/api/v1/configmaps?fieldSelector=spec.x%3Dy")
    assert bad.status == 400


def test_watch_resume_selectors_and_bookmarks(kubeapi):
    start = kubeapi.request("GET", CM).json()["metadata"]["resourceVersion"]
    make(kubeapi, "w1")
    kubeapi.request("PATCH", CM + "/w1", {"metadata": {"labels": {"watched": "yes"}}},
                    content_type="application/merge-patch+json")
    kubeapi.request("DELETE", CM + "/w1")
    events = kubeapi.watch_lines(CM + "?watch=true&resourceVersion=%s&timeoutSeconds=1" % start)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(start)
    filtered = kubeapi.watch_lines(CM + "?watch=true&resourceVersion=%s&timeoutSeconds=1&labelSelector=watched"
                                   % start)
    assert [e["type"] for e in filtered] == ["ADDED", "DELETED"]
    legacy = kubeapi.watch_lines("/api/v1/watch/namespaces/default/configmaps?resourceVersion=%s&timeoutSeconds=1"
                                 % start)
    assert len(legacy) == 3
    bookmarks = kubeapi.watch_lines(CM + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion="
                                    + str(rvs[-1]), max_events=1)
    assert bookmarks[0]["type"] == "BOOKMARK" and int(bookmarks[0]["object"]["metadata"]["resourceVersion"]) >= \
        rvs[-1]


@pytest.fixture(scope="module")
def short_history(tmp_path_factory):
    server = start_server(tmp_path_factory.mktemp("short"), extra_args=["--watch-history", "5"])
    yield server
    assert server.stop() == 0


def test_watch_and_continue_past_history_get_410(short_history):
    server = short_history
    make(server, "before")
    first = server.request("GET", CM + "?limit=1").json()
    old_rv = int(first["metadata"]["resourceVersion"])
    for index in range(8):
        make(server, "h%d" % index)
    events = server.watch_lines(CM + "?watch=true&resourceVersion=%d" % (old_rv - 5), timeout=10)
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"].startswith("too old resource version: %d (" % (old_rv - 5))
    expired = server.request("GET", CM + "?limit=1&continue=" + first["metadata"]["continue"])
    assert expired.status == 410 and expired.json()["reason"] == "Expired"
    assert expired.json()["message"].startswith("The provided continue parameter is too old")
