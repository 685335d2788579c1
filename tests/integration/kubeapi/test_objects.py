"""Object semantics and bad requests over raw HTTPS: Status bodies, validation, dry run, subresources."""

import pytest

from testenv.client import wait_for

CM = "/api/v1/namespaces/default/configmaps"
CLUSTERS = "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters"


def configmap(name, **extra):
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    body.update(extra)
    return body


def test_bad_requests_get_real_status_bodies(kubeapi):
    malformed = kubeapi.request("POST", CM, "{bad")
    assert malformed.status == 400
    assert malformed.json()["message"] == ("couldn't get version/kind; json parse error: invalid character 'b' "
                                           "looking for beginning of object key string")
    assert kubeapi.request("POST", CM, "x", content_type="text/plain").json()["reason"] == "UnsupportedMediaType"
    too_large = kubeapi.request("POST", CM, configmap("big", data={"k": "x" * (3 * 1024 * 1024)}))
    assert (too_large.status, too_large.json()["reason"]) == (413, "RequestEntityTooLarge")
    unknown = kubeapi.request("GET", "/api/v1/namespaces/default/widgets")
    assert unknown.status == 404 and unknown.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the server could not find the requested resource", "reason": "NotFound", "details": {},
        "code": 404}
    invalid = kubeapi.request("POST", CM, configmap("Bad_Name", metadata={"name": "Bad_Name", "labels": {
        "ok": "not ok!"}}))
    body = invalid.json()
    assert invalid.status == 422 and body["reason"] == "Invalid"
    assert body["details"]["kind"] == "ConfigMap" and body["details"]["name"] == "Bad_Name"
    assert {c["field"] for c in body["details"]["causes"]} == {"metadata.name", "metadata.labels"}
    assert body["message"].startswith('ConfigMap "Bad_Name" is invalid: [metadata.name: Invalid value: "Bad_Name": '
                                      "a lowercase RFC 1123 subdomain")
    assert kubeapi.request("GET", "/api/v1/namespaces", token=False).status == 403
    unauthorized = kubeapi.request("GET", "/api/v1/namespaces", token="not-a-token")
    assert unauthorized.status == 401 and unauthorized.json()["reason"] == "Unauthorized"
    assert kubeapi.request("GET", "/version", token=False).status == 200
    assert kubeapi.alive()


def test_namespace_rules(kubeapi):
    missing = kubeapi.request("POST", "/api/v1/namespaces/nowhere/configmaps", configmap("x"))
    assert missing.status == 404 and missing.json()["message"] == 'namespaces "nowhere" not found'
    mismatch = kubeapi.request("POST", CM, configmap("x", metadata={"name": "x", "namespace": "other"}))
    assert mismatch.status == 400 and "does not match the namespace" in mismatch.json()["message"]
    assert kubeapi.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": "temp"}}).status == 201
    wait_for(lambda: kubeapi.request("GET", "/api/v1/namespaces/temp/serviceaccounts/default").status == 200,
             "the default ServiceAccount")
    kubeapi.request("POST", "/api/v1/namespaces/temp/configmaps", configmap("held", metadata={
        "name": "held", "finalizers": ["example.com/hold"]}))
    deleting = kubeapi.request("DELETE", "/api/v1/namespaces/temp")
    assert deleting.status == 200 and deleting.json()["status"]["phase"] == "Terminating"
    refused = kubeapi.request("POST", "/api/v1/namespaces/temp/configmaps", configmap("late"))
    assert refused.status == 403
    assert refused.json()["message"] == ('configmaps "late" is forbidden: unable to create new content in namespace '
                                         'temp because it is being terminated')
    wait_for(lambda: kubeapi.request("GET", "/api/v1/namespaces/temp/configmaps/held").json()["metadata"].get(
        "deletionTimestamp"), "the held ConfigMap to be marked for deletion")
    kubeapi.request("PATCH", "/api/v1/namespaces/temp/configmaps/held", {"metadata": {"finalizers": None}},
                    content_type="application/merge-patch+json")
    wait_for(lambda: kubeapi.request("GET", "/api/v1/namespaces/temp").status == 404, "namespace removal")


def test_dry_run_stores_nothing(kubeapi):
    before = kubeapi.request("GET", CM).json()["metadata"]["resourceVersion"]
    created = kubeapi.request("POST", CM + "?dryRun=All", configmap("dry"))
    assert created.status == 201 and created.json()["metadata"]["uid"]
    assert kubeapi.request("GET", CM + "/dry").status == 404
    kubeapi.request("POST", CM, configmap("wet", data={"a": "1"}))
    rv = kubeapi.request("GET", CM).json()["metadata"]["resourceVersion"]
    assert int(rv) > int(before)
    patched = kubeapi.request("PATCH", CM + "/wet?dryRun=All", {"data": {"a": "2"}},
                              content_type="application/merge-patch+json")
    assert patched.json()["data"] == {"a": "2"}
    deleted = kubeapi.request("DELETE", CM + "/wet?dryRun=All")
    assert deleted.status == 200
    current = kubeapi.request("GET", CM + "/wet").json()
    assert current["data"] == {"a": "1"}
    assert kubeapi.request("GET", CM).json()["metadata"]["resourceVersion"] == rv


def test_update_conflicts_preconditions_and_generate_name(kubeapi):
    obj = kubeapi.request("POST", CM, configmap("", metadata={"generateName": "gen-"})).json()
    name = obj["metadata"]["name"]
    assert name.startswith("gen-") and len(name) == len("gen-") + 5
    stale = dict(obj, data={"x": "1"})
    assert kubeapi.request("PUT", CM + "/" + name, stale).status == 200
    conflict = kubeapi.request("PUT", CM + "/" + name, dict(obj, data={"x": "2"}))
    assert conflict.status == 409 and conflict.json()["message"] == (
        'Operation cannot be fulfilled on configmaps "%s": the object has been modified; please apply your '
        'changes to the latest version and try again' % name)
    unconditional = dict(obj, data={"x": "3"})
    unconditional["metadata"] = {"name": name}
    assert kubeapi.request("PUT", CM + "/" + name, unconditional).status == 200
    precondition = kubeapi.request("DELETE", CM + "/" + name, {"preconditions": {"uid": "other"}})
    assert precondition.status == 409 and "Precondition failed: UID in precondition: other" in \
        precondition.json()["message"]
    gone = kubeapi.request("DELETE", CM + "/" + name)
    assert gone.json()["status"] == "Success" and gone.json()["details"]["uid"] == obj["metadata"]["uid"]


def test_finalizers_hold_deletion(kubeapi):
    kubeapi.request("POST", CM, configmap("final", metadata={"name": "final", "finalizers": ["example.com/x"]}))
    response = kubeapi.request("DELETE", CM + "/final").json()
    assert response["metadata"]["deletionTimestamp"]
    adding = kubeapi.request("PATCH", CM + "/final", {"metadata": {"finalizers": ["example.com/x", "example.com/y"]}},
                             content_type="application/merge-patch+json")
    assert adding.status == 422 and "no new finalizers can be added" in adding.json()["message"]
    assert kubeapi.request("PATCH", CM + "/final", [{"op": "remove", "path": "/metadata/finalizers"}],
                           content_type="application/json-patch+json").status == 200
    assert kubeapi.request("GET", CM + "/final").status == 404


def test_custom_resource_schema_status_and_generation(kubeapi_capi):
    server = kubeapi_capi
    body = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "c1"},
            "spec": {"paused": True, "unknownField": 1}, "status": {"phase": "Provisioned"}}
    strict = server.request("POST", CLUSTERS + "?fieldValidation=Strict", body)
    assert strict.status == 400 and strict.json()["message"] == (
        'Cluster in version "v1beta2" cannot be handled as a Cluster: strict decoding error: unknown field '
        '"spec.unknownField"')
    created = server.request("POST", CLUSTERS, body)
    assert created.status == 201 and 'unknown field \\"spec.unknownField\\"' in created.headers["Warning"]
    obj = created.json()
    assert "unknownField" not in obj["spec"]
    assert "status" not in obj, "a create must drop .status when the status subresource is enabled"
    assert obj["metadata"]["generation"] == 1
    smp = server.request("PATCH", CLUSTERS + "/c1", {"spec": {"paused": False}},
                         content_type="application/strategic-merge-patch+json")
    assert smp.status == 415
    status = server.request("PATCH", CLUSTERS + "/c1/status", {"status": {"phase": "Provisioned"},
                                                               "spec": {"paused": False}},
                            content_type="application/merge-patch+json").json()
    assert status["status"]["phase"] == "Provisioned" and status["spec"]["paused"] is True
    assert status["metadata"]["generation"] == 1
    spec = server.request("PATCH", CLUSTERS + "/c1", {"spec": {"paused": False}, "status": {"phase": "Failed"}},
                          content_type="application/merge-patch+json").json()
    assert spec["metadata"]["generation"] == 2 and spec["status"]["phase"] == "Provisioned"
    wrong = server.request("PATCH", CLUSTERS + "/c1", {"spec": {"paused": "yes"}},
                           content_type="application/merge-patch+json")
    assert wrong.status == 422 and wrong.json()["details"]["causes"][0]["field"] == "spec.paused"


def test_fault_injection_and_request_log(kubeapi):
    kubeapi.reset_requests()
    rule = kubeapi.add_fault({"verb": "get", "resource": "configmaps", "name": "flaky*", "nth": 2, "count": 1,
                              "action": "error", "code": 503, "message": "injected outage"})
    kubeapi.request("POST", CM, configmap("flaky-1"))
    assert kubeapi.request("GET", CM + "/flaky-1").status == 200
    failed = kubeapi.request("GET", CM + "/flaky-1")
    assert failed.status == 503 and failed.json()["message"] == "injected outage"
    assert kubeapi.request("GET", CM + "/flaky-1").status == 200, "count=1 fires once"
    kubeapi.add_fault({"verb": "list", "resource": "configmaps", "action": "drop"})
    with pytest.raises(OSError):  # http.client.RemoteDisconnected: closed without a response
        kubeapi.request("GET", CM)
    kubeapi.clear_faults()
    assert kubeapi.request("GET", CM).status == 200
    counts = kubeapi.request_counts()
    assert counts["by_verb"]["get"] == 3 and counts["by_verb"]["create"] == 1
    assert counts["by_resource"]["core/configmaps"]["get"] == 3
    assert rule["id"]
    alice = kubeapi.request("GET", "/kubeapi/v1/requests", token=kubeapi.token_for("alice"))
    assert alice.status == 403
