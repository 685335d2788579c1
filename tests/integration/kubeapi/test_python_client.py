"""The kubernetes Python client (typed APIs and DynamicClient) against the local API server."""
import time

import pytest
from kubernetes import client, dynamic, watch
from kubernetes.client.rest import ApiException


@pytest.fixture(scope="module")
def api_client(kubeapi):
    with kubeapi.api_client() as api:
        yield api


def test_typed_core_crud(api_client):
    core = client.CoreV1Api(api_client)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="typed")))
    created = core.create_namespaced_config_map("typed", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="cfg", labels={"app": "x"}), data={"k": "v"}))
    assert created.metadata.uid and created.metadata.resource_version
    read = core.read_namespaced_config_map("cfg", "typed")
    assert read.data == {"k": "v"}
    read.data["k"] = "w"
    replaced = core.replace_namespaced_config_map("cfg", "typed", read)
    assert int(replaced.metadata.resource_version) > int(read.metadata.resource_version)
    read.data["k"] = "stale"
    with pytest.raises(ApiException) as stale:
        core.replace_namespaced_config_map("cfg", "typed", read)
    assert stale.value.status == 409
    patched = core.patch_namespaced_config_map("cfg", "typed", {"metadata": {"labels": {"b": "c"}}})
    assert patched.metadata.labels == {"app": "x", "b": "c"}
    listed = core.list_namespaced_config_map("typed", label_selector="app=x")
    assert [c.metadata.name for c in listed.items] == ["cfg"]
    core.delete_namespaced_config_map("cfg", "typed")
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("cfg", "typed")
    assert missing.value.status == 404


def test_typed_apps_deployment_status_and_scale(api_client):
    apps = client.AppsV1Api(api_client)
    body = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="api"),
        spec=client.V1DeploymentSpec(
            replicas=2, selector=client.V1LabelSelector(match_labels={"app": "api"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "api"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox:1")]))))
    created = apps.create_namespaced_deployment("default", body)
    assert created.metadata.generation == 1
    deadline = time.monotonic() + 10
    while True:
        status = apps.read_namespaced_deployment_status("api", "default").status
        if status.available_replicas == 2:
            break
        assert time.monotonic() < deadline, "deployment never became available: %s" % status
        time.sleep(0.1)
    assert status.observed_generation == 1
    assert {c.type for c in status.conditions} == {"Available", "Progressing"}
    scale = apps.read_namespaced_deployment_scale("api", "default")
    assert scale.spec.replicas == 2 and scale.status.selector == "app=api"
    apps.patch_namespaced_deployment_scale("api", "default", {"spec": {"replicas": 0}})
    deployment = apps.read_namespaced_deployment("api", "default")
    assert deployment.spec.replicas == 0 and deployment.metadata.generation == 2


def test_dynamic_client_discovery_and_watch(api_client):
    dyn = dynamic.DynamicClient(api_client)
    leases = dyn.resources.get(api_version="coordination.k8s.io/v1", kind="Lease")
    lease = leases.create(namespace="default", body={
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "lock"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}})
    rv = lease.metadata.resourceVersion
    lease_body = lease.to_dict()
    lease_body["spec"]["holderIdentity"] = "you"
    leases.replace(namespace="default", body=lease_body)
    events = []
    for event in leases.watch(namespace="default", resource_version=rv, timeout=2):
        events.append((event["type"], event["object"].spec.holderIdentity))
        if len(events) == 1:
            break
    assert events == [("MODIFIED", "you")]
    stream = watch.Watch().stream(client.CoreV1Api(api_client).list_namespaced_config_map, "default",
                                  timeout_seconds=1)
    names = {event["object"].metadata.name for event in stream}
    assert "kube-root-ca.crt" in names
