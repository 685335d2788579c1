"""testenv/faultproxy.py in front of a real kube-apiserver (testenv.cluster), driven with the kubernetes client:
error/hang/drop rules with nth and count, streamed watches, request counts and bearer tokens passed through."""
import json
import queue
import threading
import time

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from testenv.cluster.cluster import Cluster
from testenv.faultproxy import start_fault_proxy

NS = "default"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """etcd and kube-apiserver only: the proxy needs nothing else."""
    real = Cluster(tmp_path_factory.mktemp("faultproxy-cluster"), components=())
    with real:
        yield real


@pytest.fixture(scope="module")
def proxy(cluster, tmp_path_factory):
    started = start_fault_proxy(cluster, tmp_path_factory.mktemp("faultproxy"))
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def no_faults(proxy):
    proxy.clear_faults()
    yield
    proxy.clear_faults()


@pytest.fixture(name="api_client")
def api_client_factory(proxy, tmp_path):
    """api_client(token) -> a kubernetes ApiClient reaching the apiserver through the proxy, urllib3 retries off."""
    clients = []

    def make(token):
        path = proxy.kubeconfig(tmp_path / ("kubeconfig-%d" % len(clients)), token)
        configuration = client.Configuration()
        config.load_kube_config(config_file=str(path), client_configuration=configuration)
        configuration.retries = False
        clients.append(client.ApiClient(configuration))
        return clients[-1]

    yield make
    for made in clients:
        made.close()


@pytest.fixture
def core(api_client, cluster):
    return client.CoreV1Api(api_client(cluster.admin_token))


def configmap(core, name):
    return core.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name)))


def read_status(core, name):
    try:
        core.read_namespaced_config_map(name, NS)
        return 200
    except ApiException as exc:
        return exc.status


def test_error_rule_answers_a_status(core, proxy):
    configmap(core, "cm-error")
    rule = proxy.add_fault({"verb": "get", "resource": "configmaps", "name": "cm-error", "code": 503,
                            "message": "etcd is sad"})
    assert rule["id"] and rule["action"] == "error" and rule["remaining"] == 1
    with pytest.raises(ApiException) as raised:
        core.read_namespaced_config_map("cm-error", NS)
    assert raised.value.status == 503
    status = json.loads(raised.value.body)
    assert (status["kind"], status["reason"], status["message"], status["code"]) == (
        "Status", "ServiceUnavailable", "etcd is sad", 503)
    assert core.read_namespaced_config_map("cm-error", NS).metadata.name == "cm-error", "count 1: fired once"


def test_nth_and_count(core, proxy):
    configmap(core, "cm-nth")
    proxy.add_fault({"verb": "get", "resource": "configmaps", "name": "cm-nth", "nth": 2, "count": 2,
                     "code": 429, "message": "slow down"})
    proxy.add_fault({"verb": "get", "resource": "configmaps", "name": "cm-other", "code": 404})
    core.read_namespaced_config_map("cm-nth", NS)
    with pytest.raises(ApiException) as raised:
        core.read_namespaced_config_map("cm-nth", NS)
    assert raised.value.headers["Retry-After"] == "1"
    assert json.loads(raised.value.body)["details"] == {"retryAfterSeconds": 1}
    assert [read_status(core, "cm-nth") for attempt in range(3)] == [429, 200, 200]
    fired, untouched = proxy.faults()
    assert (fired["hits"], fired["fired"], fired["remaining"]) == (5, 2, 0)
    assert (untouched["hits"], untouched["fired"]) == (0, 0)


def test_bad_rule_is_a_value_error(proxy):
    with pytest.raises(ValueError, match="fault rule field 'action'"):
        proxy.add_fault({"action": "explode"})


def test_hang_delays_then_forwards(core, proxy):
    configmap(core, "cm-hang")
    proxy.add_fault({"verb": "get", "resource": "configmaps", "name": "cm-hang", "action": "hang", "seconds": 1})
    started = time.monotonic()
    assert core.read_namespaced_config_map("cm-hang", NS).metadata.name == "cm-hang"
    assert time.monotonic() - started >= 1.0
    started = time.monotonic()
    core.read_namespaced_config_map("cm-hang", NS)
    assert time.monotonic() - started < 1.0, "count 1: the second read is not delayed"


def test_drop_closes_the_connection(core, proxy):
    proxy.add_fault({"verb": "list", "resource": "configmaps", "namespace": NS, "action": "drop"})
    with pytest.raises((urllib3.exceptions.ProtocolError, urllib3.exceptions.MaxRetryError)):
        core.list_namespaced_config_map(NS)
    assert core.list_namespaced_config_map(NS).items is not None
    assert proxy.request_counts()["by_code"]["499"] == 1


def test_watch_streams_events_of_objects_created_after_it_started(core, proxy):
    resource_version = core.list_namespaced_config_map(NS).metadata.resource_version
    events = queue.Queue()
    watcher = watch.Watch()

    def run():
        try:
            for event in watcher.stream(core.list_namespaced_config_map, NS, resource_version=resource_version,
                                        timeout_seconds=60):
                events.put((event["type"], event["object"].metadata.name))
        except Exception as exc:  # pylint: disable=broad-exception-caught  # reported by the test thread
            events.put(("ERROR", repr(exc)))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    time.sleep(0.5)
    for name in ("cm-watch-1", "cm-watch-2"):
        configmap(core, name)
    seen = [events.get(timeout=10), events.get(timeout=10)]
    watcher.stop()
    assert seen == [("ADDED", "cm-watch-1"), ("ADDED", "cm-watch-2")], "events arrive while the watch is open"
    configmap(core, "cm-watch-3")                          # one more event lets the stream notice stop()
    thread.join(10)
    assert not thread.is_alive()


def test_request_counts(core, proxy):
    configmap(core, "cm-count")
    proxy.reset_requests()
    core.read_namespaced_config_map("cm-count", NS)
    core.list_namespaced_config_map(NS)
    configmap(core, "cm-count-2")
    core.delete_namespaced_config_map("cm-count-2", NS)
    proxy.add_fault({"verb": "get", "resource": "configmaps", "code": 500})
    assert read_status(core, "cm-count") == 500
    counts = proxy.request_counts()
    assert counts["total"] == 5 and counts["mutating"] == 2
    assert counts["by_resource"]["core/configmaps"] == {"get": 2, "list": 1, "create": 1, "delete": 1}
    assert counts["by_verb"] == {"get": 2, "list": 1, "create": 1, "delete": 1}
    assert counts["by_code"] == {"200": 3, "201": 1, "500": 1}
    entries = counts["entries"]
    assert [(e["verb"], e["name"], e["code"]) for e in entries] == [
        ("get", "cm-count", 200), ("list", "", 200), ("create", "", 201), ("delete", "cm-count-2", 200),
        ("get", "cm-count", 500)]
    assert entries[0]["namespace"] == NS and entries[0]["user"] == ""
    since = entries[2]["seq"]
    assert [e["verb"] for e in proxy.request_counts(since=since)["entries"]] == ["delete", "get"]


def test_bearer_tokens_pass_through(api_client, cluster):
    assert set(cluster.tokens) == {"testenv-admin", "alice", "bob", "carol"}
    assert cluster.admin_token == cluster.tokens["testenv-admin"]
    review = client.AuthenticationV1Api(api_client(cluster.tokens["alice"])).create_self_subject_review(
        client.V1SelfSubjectReview())
    assert review.status.user_info.username == "alice"
    assert "system:masters" not in (review.status.user_info.groups or [])
    admin = client.AuthenticationV1Api(api_client(cluster.admin_token)).create_self_subject_review(
        client.V1SelfSubjectReview())
    assert admin.status.user_info.username == "testenv-admin"
    assert "system:masters" in admin.status.user_info.groups
    with pytest.raises(ApiException) as raised:
        client.CoreV1Api(api_client(cluster.tokens["bob"])).list_namespaced_config_map(NS)
    assert raised.value.status == 403, "RBAC of the real apiserver applies to the token's user"
    with pytest.raises(ApiException) as raised:
        client.CoreV1Api(api_client("not-a-token")).list_namespaced_config_map(NS)
    assert raised.value.status == 401
