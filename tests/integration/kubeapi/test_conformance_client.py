"""Conformance with the kubernetes Python client: typed APIs for every built-in resource, DynamicClient on
real CAPI custom resources, selectors, pagination, watches (selectors, bookmarks, 410 Gone), garbage
collection with blockOwnerDeletion. See tests/kubeapi/README.md "Conformance coverage".
"""
import time

import pytest
from kubernetes import client, dynamic, watch
from kubernetes.client.rest import ApiException

from testenv.client import wait_for
from tests.kubeapi.testing import start_server


@pytest.fixture(scope="module")
def api(kubeapi_capi):
    with kubeapi_capi.api_client() as api_client:
        yield api_client


def meta(name, **extra):
    return client.V1ObjectMeta(name=name, **extra)


def test_typed_apis_for_every_builtin_resource(api):
    core, apps, rbac = client.CoreV1Api(api), client.AppsV1Api(api), client.RbacAuthorizationV1Api(api)
    coordination, events = client.CoordinationV1Api(api), client.EventsV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=meta("builtins")))
    ns = "builtins"
    core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=meta("cm"), data={"a": "1"}))
    core.create_namespaced_secret(ns, client.V1Secret(metadata=meta("secret"), string_data={"k": "v"}))
    core.create_namespaced_service_account(ns, client.V1ServiceAccount(metadata=meta("sa")))
    service = core.create_namespaced_service(ns, client.V1Service(metadata=meta("svc"), spec=client.V1ServiceSpec(
        selector={"app": "x"}, ports=[client.V1ServicePort(port=80, target_port=8080)])))
    assert service.spec.cluster_ip and service.spec.type == "ClusterIP"
    pod = core.create_namespaced_pod(ns, client.V1Pod(metadata=meta("pod"), spec=client.V1PodSpec(
        containers=[client.V1Container(name="c", image="busybox:1")])))
    assert pod.spec.restart_policy == "Always" and pod.spec.containers[0].image_pull_policy == "IfNotPresent"
    core.patch_namespaced_pod_status("pod", ns, {"status": {"phase": "Running"}})
    assert core.read_namespaced_pod("pod", ns).status.phase == "Running"
    core.create_namespaced_event(ns, client.CoreV1Event(
        metadata=meta("ev"), involved_object=client.V1ObjectReference(kind="Pod", name="pod", namespace=ns),
        reason="Started", message="started", type="Normal"))
    # read untyped: like a real server, an old-style Event has "eventTime": null, which the typed model rejects
    shared = dynamic.DynamicClient(api).resources.get(api_version="events.k8s.io/v1", kind="Event").get(
        name="ev", namespace=ns)
    assert (shared.regarding.name, shared.note, shared.reason) == ("pod", "started", "Started"), \
        "core/v1 and events.k8s.io/v1 Events share storage"
    assert [e.metadata.name for e in events.list_namespaced_event(ns, field_selector="metadata.name=none").items] \
        == []
    coordination.create_namespaced_lease(ns, client.V1Lease(metadata=meta("lock"), spec=client.V1LeaseSpec(
        holder_identity="me", lease_duration_seconds=15)))
    apps.create_namespaced_deployment(ns, client.V1Deployment(metadata=meta("dep"), spec=client.V1DeploymentSpec(
        replicas=1, selector=client.V1LabelSelector(match_labels={"app": "dep"}),
        template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels={"app": "dep"}), spec=client.V1PodSpec(
            containers=[client.V1Container(name="c", image="nginx:1.27")])))))
    rule = client.V1PolicyRule(api_groups=[""], resources=["configmaps"], verbs=["get"])
    rbac.create_namespaced_role(ns, client.V1Role(metadata=meta("role"), rules=[rule]))
    subject = client.RbacV1Subject(kind="User", name="alice", api_group="rbac.authorization.k8s.io")
    rbac.create_namespaced_role_binding(ns, client.V1RoleBinding(metadata=meta("rb"), subjects=[subject],
                                                                 role_ref=client.V1RoleRef(
        api_group="rbac.authorization.k8s.io", kind="Role", name="role")))
    rbac.create_cluster_role(client.V1ClusterRole(metadata=meta("builtins-cr"), rules=[rule]))
    rbac.create_cluster_role_binding(client.V1ClusterRoleBinding(metadata=meta("builtins-crb"), subjects=[subject],
                                                                 role_ref=client.V1RoleRef(
        api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="builtins-cr")))
    crds = client.ApiextensionsV1Api(api).list_custom_resource_definition().items
    machines = [c for c in crds if c.metadata.name == "machines.cluster.x-k8s.io"][0]
    assert {c.type: c.status for c in machines.status.conditions} == {"NamesAccepted": "True", "Established": "True"}
    listed = {
        "configmaps": core.list_namespaced_config_map(ns), "secrets": core.list_namespaced_secret(ns),
        "serviceaccounts": core.list_namespaced_service_account(ns), "services": core.list_namespaced_service(ns),
        "pods": core.list_namespaced_pod(ns), "events": core.list_namespaced_event(ns),
        "leases": coordination.list_namespaced_lease(ns), "deployments": apps.list_namespaced_deployment(ns),
        "roles": rbac.list_namespaced_role(ns), "rolebindings": rbac.list_namespaced_role_binding(ns)}
    assert {kind: len(result.items) >= 1 for kind, result in listed.items()} == {kind: True for kind in listed}
    assert rbac.read_cluster_role_binding("builtins-crb").role_ref.name == "builtins-cr"
    core.delete_namespace(ns)
    wait_for(lambda: not any(n.metadata.name == ns for n in core.list_namespace().items), "namespace deletion")
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_config_map("cm", ns)
    assert gone.value.status == 404
    assert rbac.read_cluster_role("builtins-cr").metadata.name == "builtins-cr", "cluster objects stay"


def test_dynamic_client_on_capi_custom_resources(api):
    dyn = dynamic.DynamicClient(api)
    machines = dyn.resources.get(api_version="cluster.x-k8s.io/v1beta2", kind="Machine")
    body = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"name": "dyn-1", "labels": {"pool": "a"}},
            "spec": {"clusterName": "prod", "bootstrap": {"dataSecretName": "b"},
                     "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachine",
                                           "name": "dyn-1"}}}
    created = machines.create(body=body, namespace="default")
    assert created.metadata.generation == 1
    patched = machines.patch(name="dyn-1", namespace="default", body={"spec": {"providerID": "docker://1"}},
                             content_type="application/merge-patch+json")
    assert patched.spec.providerID == "docker://1" and patched.metadata.generation == 2
    applied = machines.server_side_apply(body=dict(body, metadata={"name": "dyn-2", "labels": {"pool": "b"}}),
                                         namespace="default", field_manager="ansible-test")
    assert applied.metadata.managedFields[0].manager == "ansible-test"
    old = dyn.resources.get(api_version="cluster.x-k8s.io/v1beta1", kind="Machine")
    assert old.get(name="dyn-1", namespace="default").apiVersion == "cluster.x-k8s.io/v1beta1"
    assert [m.metadata.name for m in machines.get(namespace="default", label_selector="pool=b").items] == ["dyn-2"]
    with pytest.raises(dynamic.exceptions.UnprocessibleEntityError) as invalid:
        machines.create(body=dict(body, metadata={"name": "dyn-3"}, spec={"clusterName": 5}), namespace="default")
    assert invalid.value.status == 422
    machines.delete(name="dyn-2", namespace="default")
    with pytest.raises(dynamic.exceptions.NotFoundError):
        machines.get(name="dyn-2", namespace="default")


def test_label_selector_operators_field_selectors_and_pagination(api):
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=meta("selectors")))
    labels = {"a": {"env": "prod", "tier": "web"}, "b": {"env": "dev", "tier": "web"}, "c": {"env": "test"}, "d": {}}
    for name, values in labels.items():
        core.create_namespaced_config_map("selectors", client.V1ConfigMap(metadata=meta(name, labels=values)))

    def names(**kwargs):
        return [c.metadata.name for c in core.list_namespaced_config_map("selectors", **kwargs).items
                if c.metadata.name != "kube-root-ca.crt"]

    expected = {"env=prod": ["a"], "env==dev": ["b"], "env!=prod": ["b", "c", "d"], "env in (dev,test)": ["b", "c"],
                "env notin (dev,test)": ["a", "d"], "tier": ["a", "b"], "!tier": ["c", "d"],
                "tier=web,env!=dev": ["a"]}
    assert {selector: names(label_selector=selector) for selector in expected} == expected
    assert names(field_selector="metadata.name=c") == ["c"]
    assert names(field_selector="metadata.name!=c,metadata.namespace=selectors") == ["a", "b", "d"]
    with pytest.raises(ApiException) as bad:
        names(label_selector="env in prod")
    assert bad.value.status == 400
    with pytest.raises(ApiException) as unsupported:
        names(field_selector="data.x=1")
    assert unsupported.value.status == 400 and \
        '\\"data.x\\" is not a known field selector: only \\"metadata.name\\", \\"metadata.namespace\\"' in \
        unsupported.value.body
    running = client.CoreV1Api(api).list_pod_for_all_namespaces(field_selector="status.phase=Running")
    assert all(p.status.phase == "Running" for p in running.items)
    first = core.list_namespaced_config_map("selectors", limit=2)
    assert len(first.items) == 2 and first.metadata._continue and first.metadata.remaining_item_count == 3
    core.create_namespaced_config_map("selectors", client.V1ConfigMap(metadata=meta("e")))
    rest = core.list_namespaced_config_map("selectors", limit=10, _continue=first.metadata._continue)
    assert rest.metadata.resource_version == first.metadata.resource_version, "continue keeps the snapshot"
    assert [c.metadata.name for c in first.items + rest.items] == ["a", "b", "c", "d", "kube-root-ca.crt"]


def test_watch_resume_selectors_timeout_and_bookmarks(api):
    core = client.CoreV1Api(api)
    start = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=meta("w-1", labels={"w": "yes"})))
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=meta("w-2")))
    core.patch_namespaced_config_map("w-2", "default", {"metadata": {"labels": {"w": "yes"}}})
    core.patch_namespaced_config_map("w-1", "default", {"metadata": {"labels": {"w": "no"}}})
    core.delete_namespaced_config_map("w-2", "default")
    started = time.monotonic()
    events = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(
        core.list_namespaced_config_map, "default", resource_version=start, label_selector="w=yes",
        timeout_seconds=1)]
    assert time.monotonic() - started < 5, "timeoutSeconds ends the watch"
    assert events == [("ADDED", "w-1"), ("ADDED", "w-2"), ("DELETED", "w-1"), ("DELETED", "w-2")], \
        "selector transitions become ADDED/DELETED"
    by_field = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(
        core.list_namespaced_config_map, "default", resource_version=start, field_selector="metadata.name=w-1",
        timeout_seconds=1)]
    assert by_field == [("ADDED", "w-1"), ("MODIFIED", "w-1")]
    bookmarks = []
    for event in watch.Watch().stream(core.list_namespaced_config_map, "default", allow_watch_bookmarks=True,
                                      resource_version=core.list_namespaced_config_map("default").metadata.
                                      resource_version, timeout_seconds=3):
        bookmarks.append(event)
        if event["type"] == "BOOKMARK":
            break
    assert bookmarks[-1]["type"] == "BOOKMARK"


@pytest.fixture(scope="module")
def short_history(tmp_path_factory):
    server = start_server(tmp_path_factory.mktemp("short"), extra_args=["--watch-history", "3"])
    yield server
    assert server.stop() == 0


def test_watch_past_the_history_window_is_410_gone(short_history):
    with short_history.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        old = core.list_namespaced_config_map("default").metadata.resource_version
        for index in range(6):
            core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=meta("g-%d" % index)))
        with pytest.raises(ApiException) as gone:
            for _round in watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=old,
                                               timeout_seconds=2):
                pass
        assert gone.value.status == 410 and "too old resource version" in gone.value.reason


def test_block_owner_deletion_and_deployment_pods(api):
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    owner = core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=meta("bo-owner")))
    reference = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name="bo-owner", uid=owner.metadata.uid,
                                        block_owner_deletion=False)
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=meta(
        "bo-free", owner_references=[reference], finalizers=["example.com/hold"])))
    core.delete_namespaced_config_map("bo-owner", "default", propagation_policy="Foreground")
    wait_for(lambda: "bo-owner" not in [c.metadata.name for c in core.list_namespaced_config_map("default").items],
             "the owner: a dependent without blockOwnerDeletion does not hold it")
    held = core.read_namespaced_config_map("bo-free", "default")
    assert held.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("bo-free", "default", {"metadata": {"finalizers": None}})
    apps.create_namespaced_deployment("default", client.V1Deployment(metadata=meta("gc"), spec=client.V1DeploymentSpec(
        replicas=2, selector=client.V1LabelSelector(match_labels={"app": "gc"}),
        template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels={"app": "gc", "tier": "x"}),
                                          spec=client.V1PodSpec(containers=[client.V1Container(
                                              name="c", image="nginx:1.27")])))))
    pods = wait_for(lambda: [p for p in core.list_namespaced_pod("default", label_selector="app=gc").items
                             if p.status.phase == "Running"] if len(core.list_namespaced_pod(
                                 "default", label_selector="app=gc").items) == 2 else None, "two pods")
    deployment = apps.read_namespaced_deployment("gc", "default")
    for pod in pods:
        assert pod.metadata.name.startswith("gc-") and pod.metadata.labels["tier"] == "x"
        assert pod.metadata.owner_references[0].uid == deployment.metadata.uid
    status = wait_for(lambda: apps.read_namespaced_deployment_status("gc", "default").status
                      if apps.read_namespaced_deployment_status("gc", "default").status.available_replicas == 2
                      else None, "the deployment status")
    assert (status.replicas, status.ready_replicas, status.updated_replicas, status.observed_generation) == (2, 2, 2, 1)
    assert {c.type: c.status for c in status.conditions}["Available"] == "True"
    apps.delete_namespaced_deployment("gc", "default")
    wait_for(lambda: not core.list_namespaced_pod("default", label_selector="app=gc").items,
             "background collection of the deployment's pods")
