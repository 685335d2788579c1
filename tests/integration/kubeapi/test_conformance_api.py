"""Conformance over raw HTTPS with the real CAPI CRDs: discovery, schema enforcement, conversion, writes
(dry run, field validation, field managers, status subresource), error bodies, bad requests, CRD deletion,
fault injection. See tests/kubeapi/README.md "Conformance coverage" for the issue checklist.
"""
import concurrent.futures
import copy
import json
import os
import time

import pytest
import yaml

from tests.integration.conftest import CAPI_CRDS
from testenv.client import wait_for

CM = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
MACHINES = "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/machines"
IPADDRESSES = "/apis/ipam.cluster.x-k8s.io/v1beta2/namespaces/default/ipaddresses"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
SMP = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def machine(name, **spec):
    body = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": name},
            "spec": {"clusterName": "prod", "bootstrap": {"dataSecretName": "boot"},
                     "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachine",
                                           "name": name}}}
    body["spec"].update(spec)
    return body


def deployment(name, replicas=1):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}}


@pytest.fixture(scope="module")
def server(kubeapi_capi):
    return kubeapi_capi


def test_discovery_documents_include_crd_groups(server):
    assert server.request("GET", "/version").json()["major"] == "1"
    assert server.request("GET", "/api").json()["versions"] == ["v1"]
    core = {r["name"]: r for r in server.request("GET", "/api/v1").json()["resources"]}
    assert {"namespaces", "configmaps", "secrets", "serviceaccounts", "serviceaccounts/token", "services", "events",
            "pods", "pods/status", "namespaces/finalize"} <= set(core)
    assert core["configmaps"]["namespaced"] and core["configmaps"]["shortNames"] == ["cm"]
    groups = {g["name"]: g for g in server.request("GET", "/apis").json()["groups"]}
    assert {"apps", "rbac.authorization.k8s.io", "apiextensions.k8s.io", "coordination.k8s.io", "events.k8s.io",
            "cluster.x-k8s.io", "ipam.cluster.x-k8s.io", "addons.cluster.x-k8s.io"} <= set(groups)
    assert groups["cluster.x-k8s.io"]["preferredVersion"]["version"] == "v1beta2"
    group = server.request("GET", "/apis/cluster.x-k8s.io").json()
    assert [v["version"] for v in group["versions"]] == ["v1beta2", "v1beta1"]
    capi = {r["name"]: r for r in server.request("GET", "/apis/cluster.x-k8s.io/v1beta2").json()["resources"]}
    assert {"machines", "machines/status", "machinedeployments/scale", "clusters"} <= set(capi)
    assert capi["machinedeployments"]["shortNames"] == ["md"] and capi["machines"]["categories"] == ["cluster-api"]
    apps = {r["name"] for r in server.request("GET", "/apis/apps/v1").json()["resources"]}
    assert {"deployments", "deployments/status", "deployments/scale"} <= apps
    aggregated = server.request("GET", "/apis", headers={
        "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
    assert aggregated.json()["kind"] == "APIGroupDiscoveryList"
    assert "cluster.x-k8s.io" in {g["metadata"]["name"] for g in aggregated.json()["items"]}
    openapi = server.request("GET", "/openapi/v3").json()["paths"]
    assert "apis/cluster.x-k8s.io/v1beta2" in openapi and "api/v1" in openapi
    assert server.request("GET", "/apis/nope.example.com").status == 404
    assert server.request("GET", "/apis/cluster.x-k8s.io/v9").status == 404


def test_crd_schema_is_enforced_with_real_capi_crds(server):
    missing = server.request("POST", IPADDRESSES, {"apiVersion": "ipam.cluster.x-k8s.io/v1beta2",
                                                   "kind": "IPAddress", "metadata": {"name": "ip-1"},
                                                   "spec": {"address": "", "prefix": "x"}})
    body = missing.json()
    assert missing.status == 422 and body["reason"] == "Invalid"
    assert body["details"]["group"] == "ipam.cluster.x-k8s.io" and body["details"]["kind"] == "IPAddress"
    causes = {(c["field"], c["reason"]) for c in body["details"]["causes"]}
    assert {("spec.claimRef", "FieldValueRequired"), ("spec.poolRef", "FieldValueRequired"),
            ("spec.prefix", "FieldValueTypeInvalid")} <= causes
    assert any(c["field"] == "spec.address" and "should be at least 1 chars long" in c["message"]
               for c in body["details"]["causes"])
    # v1beta1 declares claimRef.name with `default: ""`
    defaulted = server.request("POST", IPADDRESSES.replace("v1beta2", "v1beta1"), {
        "apiVersion": "ipam.cluster.x-k8s.io/v1beta1", "kind": "IPAddress", "metadata": {"name": "ip-2"},
        "spec": {"address": "10.0.0.2", "prefix": 24, "claimRef": {}, "unknown": True,
                 "poolRef": {"apiGroup": "ipam.example.com", "kind": "Pool", "name": "p"}}})
    assert defaulted.status == 201, defaulted
    spec = defaulted.json()["spec"]
    assert spec["claimRef"] == {"name": ""}, "schema defaults are applied"
    assert "unknown" not in spec, "unknown fields are pruned"
    enum = server.request("POST", MACHINES, machine("enum", taints=[{"key": "k", "effect": "Sometimes",
                                                                     "propagation": "Always"}]))
    assert enum.status == 422 and enum.json()["details"]["causes"][0] == {
        "reason": "FieldValueNotSupported", "field": "spec.taints[0].effect",
        "message": 'Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'}
    cluster = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "topo"},
               "spec": {"topology": {"classRef": {"name": "quick-start"}, "version": "v1.31.0",
                                     "variables": [{"name": "free", "value": {"any": {"shape": [1, "two"]}}}]}}}
    kept = server.request("POST", "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters", cluster)
    assert kept.status == 201, kept
    assert kept.json()["spec"]["topology"]["variables"][0]["value"] == {"any": {"shape": [1, "two"]}}, \
        "x-kubernetes-preserve-unknown-fields keeps what it holds"


def test_conversion_webhook_service_reference_is_treated_as_none(server):
    with open(os.path.join(CAPI_CRDS, "cluster.x-k8s.io_machinesets.yaml")) as handle:
        crd = yaml.safe_load(handle)
    current = server.request("GET", CRDS + "/machinesets.cluster.x-k8s.io").json()
    crd["metadata"] = {"name": current["metadata"]["name"], "resourceVersion": current["metadata"]["resourceVersion"]}
    # what a real CAPI install (kustomize) injects: a conversion webhook behind a Service
    crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
        "service": {"namespace": "capi-system", "name": "capi-webhook-service", "path": "/convert"}}}}
    assert server.request("PUT", CRDS + "/machinesets.cluster.x-k8s.io", crd).status == 200
    base = "/apis/cluster.x-k8s.io/%s/namespaces/default/machinesets"
    created = server.request("POST", base % "v1beta2", {
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "metadata": {"name": "ms"},
        "spec": {"clusterName": "prod", "replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
                     "clusterName": "prod", "bootstrap": {"dataSecretName": "x"},
                     "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachine",
                                           "name": "t"}}}}})
    assert created.status == 201, created
    for _round in range(2):
        old = server.request("GET", base % "v1beta1" + "/ms").json()
        assert old["apiVersion"] == "cluster.x-k8s.io/v1beta1" and old["spec"]["clusterName"] == "prod"
    listed = server.request("GET", base % "v1beta1").json()
    assert listed["apiVersion"] == "cluster.x-k8s.io/v1beta1"
    assert server.log().count("conversion webhook service capi-system/capi-webhook-service is not reachable") == 1


def test_object_metadata_resource_versions_generation_and_names(server):
    first = server.request("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "meta-a"}}).json()
    second = server.request("POST", MACHINES, machine("meta-m")).json()
    third = server.request("POST", "/api/v1/namespaces/default/secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"generateName": "meta-"}, "stringData": {"k": "v"}}).json()
    rvs = [int(o["metadata"]["resourceVersion"]) for o in (first, second, third)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3, "one global, increasing resourceVersion"
    assert first["metadata"]["uid"] != second["metadata"]["uid"] and first["metadata"]["creationTimestamp"]
    assert third["metadata"]["name"].startswith("meta-") and third["data"] == {"k": "dg=="}
    assert "generation" not in first["metadata"] and second["metadata"]["generation"] == 1
    path = MACHINES + "/meta-m"
    server.request("PATCH", path, {"metadata": {"labels": {"a": "b"}}}, content_type=MERGE)
    server.request("PATCH", path + "/status", {"status": {"phase": "Running"}}, content_type=MERGE)
    assert server.request("GET", path).json()["metadata"]["generation"] == 1, "metadata and status keep generation"
    server.request("PATCH", path, {"spec": {"providerID": "p"}}, content_type=MERGE)
    assert server.request("GET", path).json()["metadata"]["generation"] == 2
    names = {"/api/v1/namespaces": ("Namespace", "v1", "a.b", "must not contain dots"),
             "/api/v1/namespaces/default/services": ("Service", "v1", "9svc", "a DNS-1035 label must consist"),
             CM: ("ConfigMap", "v1", "UPPER", "a lowercase RFC 1123 subdomain must consist")}
    for path, (kind, version, name, text) in names.items():
        response = server.request("POST", path, {"apiVersion": version, "kind": kind, "metadata": {"name": name},
                                                 "spec": {"ports": [{"port": 80}]} if kind == "Service" else {}}
                                  if kind != "ConfigMap" else {"apiVersion": version, "kind": kind,
                                                               "metadata": {"name": name}})
        assert response.status == 422 and text in response.json()["message"], (path, response)
    label = server.request("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "labels", "labels": {"bad key": "v", "ok": "-bad-"}}}).json()
    assert [c["field"] for c in label["details"]["causes"]] == ["metadata.labels", "metadata.labels"]
    assert 'Invalid value: "bad key": name part must consist of alphanumeric characters' in label["message"]


def test_dry_run_on_every_write_verb(server):
    server.request("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry", "labels": {
        "dry": "yes"}}, "data": {"a": "1"}})
    stored = server.request("GET", CM + "/dry").json()
    before = server.state()["resourceVersion"]
    dry = "?dryRun=All"
    changed = dict(stored, data={"a": "put"})
    answers = [
        server.request("POST", CM + dry, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry-new"}}),
        server.request("PUT", CM + "/dry" + dry, changed),
        server.request("PATCH", CM + "/dry" + dry, {"data": {"a": "merge"}}, content_type=MERGE),
        server.request("PATCH", CM + "/dry" + dry, [{"op": "replace", "path": "/data/a", "value": "json"}],
                       content_type=JSON_PATCH),
        server.request("PATCH", CM + "/dry" + dry, {"data": {"a": "smp"}}, content_type=SMP),
        server.request("PATCH", CM + "/dry" + dry + "&fieldManager=dry&force=true",
                       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dry}\ndata: {a: apply}\n",
                       content_type=APPLY),
        server.request("PATCH", CM + "/dry-applied" + dry + "&fieldManager=dry",
                       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dry-applied}\n", content_type=APPLY),
        server.request("DELETE", CM + "/dry" + dry),
        server.request("DELETE", CM + dry + "&labelSelector=dry%3Dyes"),
    ]
    assert [a.status for a in answers] == [201, 200, 200, 200, 200, 200, 201, 200, 200], answers
    assert [a.json()["data"]["a"] for a in answers[1:6]] == ["put", "merge", "json", "smp", "apply"]
    assert [i["metadata"]["name"] for i in answers[8].json()["items"]] == ["dry"]
    assert server.state()["resourceVersion"] == before, "dry runs never store"
    assert server.request("GET", CM + "/dry").json() == stored
    assert server.request("GET", CM + "/dry-new").status == 404
    bad = server.request("POST", CM + "?dryRun=Some", {"apiVersion": "v1", "kind": "ConfigMap",
                                                       "metadata": {"name": "x"}})
    assert bad.status == 400 and bad.json()["message"] == 'dryRun: Unsupported value: "Some": supported values: "All"'


def test_field_validation_strict_warn_ignore_on_every_write(server):
    server.request("POST", DEPLOYMENTS, deployment("fv"))
    unknown = deployment("fv")
    unknown["spec"]["template"]["spec"]["containers"][0]["colour"] = "red"
    created = server.request("POST", DEPLOYMENTS + "?fieldValidation=Strict",
                             dict(unknown, metadata={"name": "fv-strict"}))
    assert created.status == 400 and created.json()["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field '
        '"spec.template.spec.containers[0].colour"')
    warned = server.request("POST", DEPLOYMENTS + "?fieldValidation=Warn", dict(unknown, metadata={"name": "fv-warn"}))
    assert warned.status == 201 and warned.headers["Warning"] == \
        '299 - "unknown field \\"spec.template.spec.containers[0].colour\\""'
    assert "colour" not in warned.json()["spec"]["template"]["spec"]["containers"][0]
    ignored = server.request("POST", DEPLOYMENTS + "?fieldValidation=Ignore",
                             dict(unknown, metadata={"name": "fv-ignore"}))
    assert ignored.status == 201 and "Warning" not in ignored.headers
    assert server.request("POST", DEPLOYMENTS, dict(unknown, metadata={"name": "fv-default"})).headers["Warning"], \
        "without fieldValidation the server warns"
    current = server.request("GET", DEPLOYMENTS + "/fv").json()
    current["spec"]["bogus"] = 1
    put = server.request("PUT", DEPLOYMENTS + "/fv?fieldValidation=Strict", current)
    assert put.status == 400 and put.json()["message"].endswith('strict decoding error: unknown field "spec.bogus"')
    merge = server.request("PATCH", DEPLOYMENTS + "/fv?fieldValidation=Strict", {"spec": {"bogus": 1}},
                           content_type=MERGE)
    body = merge.json()
    assert merge.status == 422 and body["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert body["message"].endswith('": strict decoding error: unknown field "spec.bogus"')
    assert body["details"]["causes"][0]["field"] == "patch" and "name" not in body["details"]
    smp = server.request("PATCH", DEPLOYMENTS + "/fv?fieldValidation=Strict", {"spec": {"bogus": 1}},
                         content_type=SMP)
    assert smp.status == 422 and smp.json()["message"] == (
        ' "" is invalid: patch: Invalid value: "map[spec:map[bogus:1]]": strict decoding error: unknown field '
        '"spec.bogus"')
    custom = server.request("PATCH", MACHINES + "/fv-m?fieldValidation=Strict", {"spec": {"bogus": 1}},
                            content_type=MERGE)
    assert custom.status == 404
    server.request("POST", MACHINES, machine("fv-m"))
    custom = server.request("PATCH", MACHINES + "/fv-m?fieldValidation=Warn", {"spec": {"bogus": 1}},
                            content_type=MERGE)
    assert custom.status == 200 and 'unknown field \\"spec.bogus\\"' in custom.headers["Warning"]
    duplicate = server.request("POST", CM + "?fieldValidation=Strict",
                               '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup"},"data":{},"data":{}}')
    assert duplicate.status == 400 and 'duplicate field "data"' in duplicate.json()["message"]
    bad = server.request("POST", CM + "?fieldValidation=Loose", {"apiVersion": "v1", "kind": "ConfigMap",
                                                                 "metadata": {"name": "x"}})
    assert bad.status == 400 and "fieldValidation" in bad.json()["message"]


def test_status_subresource_and_field_managers(server):
    body = deployment("status-split")
    body["status"] = {"replicas": 99}
    created = server.request("POST", DEPLOYMENTS + "?fieldManager=creator", body).json()
    assert "replicas" not in created.get("status", {}), "main-resource writes ignore .status"
    managers = {(m["manager"], m["operation"], m.get("subresource", "")): m for m in created["metadata"]["managedFields"]}
    assert set(managers) == {("creator", "Update", "")}
    assert "f:status" not in managers[("creator", "Update", "")]["fieldsV1"]
    path = DEPLOYMENTS + "/status-split"
    status = server.request("PATCH", path + "/status?fieldManager=statuser", {
        "spec": {"replicas": 7}, "status": {"observedGeneration": 5}}, content_type=MERGE).json()
    assert status["spec"]["replicas"] == 1 and status["status"]["observedGeneration"] == 5
    entry = [m for m in status["metadata"]["managedFields"] if m["manager"] == "statuser"][0]
    assert entry["subresource"] == "status" and list(entry["fieldsV1"]) == ["f:status"]
    applied = server.request("PATCH", path + "?fieldManager=applier&force=true", (  # takes spec.replicas over
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: status-split}\n"
        "spec: {replicas: 3}\nstatus: {observedGeneration: 1}\n"), content_type=APPLY).json()
    applier = [m for m in applied["metadata"]["managedFields"] if m["manager"] == "applier"][0]
    assert applier["operation"] == "Apply" and applier["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert applied["spec"]["replicas"] == 3 and applied["status"]["observedGeneration"] == 5
    status_apply = server.request("PATCH", path + "/status?fieldManager=status-applier&force=true", (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: status-split}\n"
        "spec: {replicas: 4}\nstatus: {observedGeneration: 6}\n"), content_type=APPLY).json()
    entry = [m for m in status_apply["metadata"]["managedFields"] if m["manager"] == "status-applier"][0]
    assert entry["subresource"] == "status" and entry["fieldsV1"] == {"f:status": {"f:observedGeneration": {}}}
    assert status_apply["spec"]["replicas"] == 3
    conflict = server.request("PATCH", path + "?fieldManager=rival", (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: status-split}\nspec: {replicas: 5}\n"),
        content_type=APPLY)
    assert conflict.status == 409 and conflict.json()["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "applier"',
         "field": ".spec.replicas"}]
    default_manager = server.request("PATCH", path, {"metadata": {"labels": {"x": "y"}}}, content_type=MERGE,
                                     headers={"User-Agent": "my-tool/1.0 (linux)"}).json()
    assert "my-tool" in {m["manager"] for m in default_manager["metadata"]["managedFields"]}


def test_error_bodies_are_real_status_objects(server):
    missing = server.request("GET", DEPLOYMENTS + "/nope").json()
    assert missing == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": 'deployments.apps "nope" not found', "reason": "NotFound",
                       "details": {"name": "nope", "group": "apps", "kind": "deployments"}, "code": 404}
    server.request("POST", MACHINES, machine("twice"))
    exists = server.request("POST", MACHINES, machine("twice")).json()
    assert (exists["code"], exists["reason"], exists["message"], exists["details"]) == (
        409, "AlreadyExists", 'machines.cluster.x-k8s.io "twice" already exists',
        {"name": "twice", "group": "cluster.x-k8s.io", "kind": "machines"})
    invalid = server.request("POST", MACHINES, {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                                                "metadata": {"name": "empty"}, "spec": {}}).json()
    assert invalid["code"] == 422 and invalid["details"]["name"] == "empty"
    assert {c["field"] for c in invalid["details"]["causes"]} == {
        "spec.clusterName", "spec.bootstrap", "spec.infrastructureRef"}
    assert invalid["message"].startswith('Machine.cluster.x-k8s.io "empty" is invalid: [spec.')
    json_patch = server.request("PATCH", MACHINES + "/twice", [{"op": "test", "path": "/spec/clusterName",
                                                                "value": "other"}], content_type=JSON_PATCH)
    assert json_patch.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                 "message": "the server rejected our request due to an error in our request",
                                 "reason": "Invalid", "details": {}, "code": 422}
    rules = server.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {}}, token=server.token_for(
        "alice"))
    assert (rules.status, rules.json()["message"]) == (400, "no namespace on request")
    rules = server.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}},
        token=server.token_for("alice")).json()
    assert rules["status"]["incomplete"] is False and {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": [
        "selfsubjectaccessreviews", "selfsubjectrulesreviews"]} in rules["status"]["resourceRules"]
    review = server.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {}}).json()
    assert review["code"] == 422 and review["message"] == (
        'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": '
        'exactly one of nonResourceAttributes or resourceAttributes must be specified')
    not_allowed = server.request("POST", "/api/v1/namespaces/default/configmaps/x", {})
    assert not_allowed.status == 405 and not_allowed.json()["reason"] == "MethodNotAllowed"
    stale = server.request("GET", MACHINES + "/twice").json()
    server.request("PATCH", MACHINES + "/twice", {"spec": {"providerID": "a"}}, content_type=MERGE)
    conflict = server.request("PUT", MACHINES + "/twice", stale).json()
    assert conflict["reason"] == "Conflict" and conflict["details"] == {
        "name": "twice", "group": "cluster.x-k8s.io", "kind": "machines"}


def test_bad_requests_never_crash_the_server_or_lose_state(server):
    for index in range(5):
        server.request("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep-%d" % index},
                                    "data": {"i": str(index)}})
    before = {path: server.request("GET", path).json()["items"] for path in (CM, MACHINES, "/api/v1/namespaces")}
    oversized = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
                            "data": {"k": "x" * (3 * 1024 * 1024 + 10)}})
    bad = [
        ("POST", CM, "{bad json", "application/json", 400),
        ("POST", CM, "a: [unclosed", "application/yaml", 400),
        ("POST", CM, "\xff\xfe", "application/json", 400),
        ("POST", CM, "k8s\x00garbage", "application/vnd.kubernetes.protobuf", 400),
        ("POST", MACHINES, "k8s\x00", "application/vnd.kubernetes.protobuf", 415),
        ("POST", CM, "<xml/>", "application/xml", 415),
        ("PATCH", MACHINES + "/x", "{}", SMP, 415),
        ("PATCH", CM + "/keep-0", "{}", "text/plain", 415),
        ("PATCH", CM + "/keep-0", '{"op":"add"}', JSON_PATCH, 400),
        ("PATCH", CM + "/keep-0", "[1,2", MERGE, 400),
        ("POST", "/api/v1/namespaces/default/widgets", "{}", "application/json", 404),
        ("GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/gadgets", None, None, 404),
        ("POST", CM, oversized, "application/json", 413),
        ("POST", CM, json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}),
         "application/json", 422),
        ("POST", CM, json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}),
         "application/json", 400),
        ("POST", CM, json.dumps([1, 2]), "application/json", 400),
        ("POST", CM, json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "typed"},
                                 "data": {"a": 1}}), "application/json", 400),
        ("POST", DEPLOYMENTS, json.dumps(dict(deployment("typed"), spec={"replicas": "two"})), "application/json", 400),
        ("PATCH", CM + "/keep-0", '{"data":{"a":[1]}}', MERGE, 422),
        ("PUT", CM + "/keep-1", json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}),
         "application/json", 400),
        ("GET", CM + "?limit=abc", None, None, 400),
        ("GET", CM + "?labelSelector=a%20in%20(", None, None, 400),
        ("GET", CM + "?fieldSelector=spec.nope%3D1", None, None, 400),
        ("GET", CM + "?watch=true&resourceVersion=abc", None, None, 400),
        ("DELETE", CM + "/keep-2", '{"propagationPolicy":"Sometimes"}', "application/json", 422),
        ("DELETE", CM + "/keep-2", '{"preconditions":{"uid":"x"}}', "application/json", 409),
    ]

    def send(item):
        method, path, body, content_type, _unused = item
        return server.request(method, path, body.encode("latin-1") if isinstance(body, str) else body,
                              content_type=content_type)

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        for _round in range(3):
            answers = list(pool.map(send, bad))
            for item, answer in zip(bad, answers):
                assert answer.status == item[4], (item[:2], item[3], answer)
                status = answer.json()
                assert status["kind"] == "Status" and status["code"] == item[4] and status["message"], answer
    typed = server.request("POST", DEPLOYMENTS, dict(deployment("typed"), spec={"replicas": "two"})).json()
    assert typed["message"] == ('Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal '
                                'string into Go struct field DeploymentSpec.spec.replicas of type int32')
    assert server.alive()
    assert {path: server.request("GET", path).json()["items"] for path in before} == before, \
        "no bad request changed or lost anything"
    assert server.request("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after"}}).status \
        == 201


def test_deleting_a_crd_refuses_new_objects_then_removes_everything(server):
    with open(os.path.join(CAPI_CRDS, "cluster.x-k8s.io_machinedrainrules.yaml")) as handle:
        crd = yaml.safe_load(handle)
    base = "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/machinedrainrules"
    rule = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDrainRule",
            "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
            "spec": {"drain": {"behavior": "Skip"}, "machines": [{"selector": {}}]}}
    created = server.request("POST", base, rule)
    assert created.status == 201, created
    assert server.request("DELETE", CRDS + "/" + crd["metadata"]["name"]).status == 200
    wait_for(lambda: any(c["type"] == "Terminating" and c["status"] == "True" for c in server.request(
        "GET", CRDS + "/" + crd["metadata"]["name"]).json()["status"]["conditions"]), "the Terminating condition")
    refused = server.request("POST", base, dict(rule, metadata={"name": "late"}))
    assert refused.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": "create not allowed while custom resource definition is terminating",
                              "reason": "MethodNotAllowed",
                              "details": {"group": "cluster.x-k8s.io", "kind": "machinedrainrules"}, "code": 405}
    assert server.request("GET", base + "/held").json()["metadata"]["deletionTimestamp"]
    server.request("PATCH", base + "/held", {"metadata": {"finalizers": None}}, content_type=MERGE)
    wait_for(lambda: server.request("GET", CRDS + "/" + crd["metadata"]["name"]).status == 404, "the CRD to go")
    assert server.request("GET", base).status == 404
    again = copy.deepcopy(crd)
    assert server.request("POST", CRDS, again).status == 201
    wait_for(lambda: server.request("GET", base).status == 200, "the recreated CRD to be served")
    assert server.request("GET", base).json()["items"] == []


def test_fault_injection_hang_error_drop_and_request_counts(server):
    server.request("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "faulty"}})
    server.reset_requests()
    server.add_fault({"verb": "get", "resource": "configmaps", "name": "faulty", "nth": 1, "count": 1,
                      "action": "hang", "seconds": 0.6})
    started = time.monotonic()
    assert server.request("GET", CM + "/faulty").status == 200
    assert time.monotonic() - started >= 0.6, "the hang delays the answer"
    server.add_fault({"verb": "patch", "resource": "machines", "nth": 2, "count": 2, "action": "error", "code": 429,
                      "message": "slow down"})
    server.request("POST", MACHINES, machine("faulty-m"))
    codes = [server.request("PATCH", MACHINES + "/faulty-m", {"metadata": {"labels": {"n": str(i)}}},
                            content_type=MERGE).status for i in range(4)]
    assert codes == [200, 429, 429, 200]
    server.add_fault({"verb": "list", "resource": "configmaps", "namespace": "default", "action": "drop"})
    with pytest.raises(OSError):
        server.request("GET", CM)
    server.clear_faults()
    counts = server.request_counts()
    assert counts["by_resource"]["cluster.x-k8s.io/machines"] == {"create": 1, "patch": 4}
    assert counts["by_resource"]["core/configmaps"]["get"] == 1 and counts["by_resource"]["core/configmaps"]["list"] == 1
    assert counts["by_verb"]["patch"] == 4 and counts["mutating"] == 5
    assert [e["code"] for e in counts["entries"] if e["verb"] == "patch"] == [200, 429, 429, 200]
