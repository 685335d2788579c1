"""ApiClient.watch and ChangeBell (plugins/module_utils/k8s) on a real kube-apiserver: the events of a WATCH through the
kubernetes client, a bell that rings within a second of a change, and one refused by RBAC that says so at once."""
import threading
import time
import uuid

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiClient, ApiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.watch import ChangeBell


def namespace(server):
    name = "watch-" + uuid.uuid4().hex[:8]
    assert server.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}}).status == 201
    return name, "/api/v1/namespaces/%s/secrets" % name  # the controllers create none


def create_later(server, path, name, delay):
    def create():
        time.sleep(delay)
        assert server.request("POST", path, {"metadata": {"name": name}}).status == 201
    thread = threading.Thread(target=create, daemon=True)
    thread.start()
    return thread


def test_a_watch_yields_each_change_as_the_server_sends_it(real_cluster):
    _name, path = namespace(real_cluster)
    client = ApiClient.from_kubeconfig(real_cluster.kubeconfig)
    listed = real_cluster.request("GET", path).json()["metadata"]["resourceVersion"]
    create_later(real_cluster, path, "one", 0.5)
    started = time.monotonic()
    events = []
    for event in client.watch(path, "watch Secrets", resource_version=listed, timeout_seconds=3):
        events.append((round(time.monotonic() - started, 1), event))
        if event["type"] == "ADDED":
            break
    at, added = events[-1]
    assert added["object"]["metadata"]["name"] == "one" and int(added["object"]["metadata"]["resourceVersion"]) > int(listed)
    assert at < 2, "the event came when the server sent it, not at the watch's end (%s s)" % at
    assert client.calls_by_method == {"WATCH": 1}


def test_a_bell_rings_within_a_second_of_a_change_and_stops_at_once(real_cluster):
    _name, path = namespace(real_cluster)
    client = ApiClient.from_kubeconfig(real_cluster.kubeconfig)
    bell = ChangeBell(client, [path])
    try:
        assert bell.wait(1) == set(), "nothing changed in the new namespace"
        create_later(real_cluster, path, "two", 0.5)
        started = time.monotonic()
        assert bell.wait(10) == {path}
        assert time.monotonic() - started < 2
    finally:
        started = time.monotonic()
        bell.stop()
    assert time.monotonic() - started < 1, "stop shuts the watch's connection"
    assert bell.broken is None


def test_a_watch_refused_by_rbac_breaks_the_bell_naming_the_path(real_cluster):
    _name, path = namespace(real_cluster)
    client = ApiClient.from_kubeconfig(real_cluster.kubeconfig_for("alice"))
    try:
        next(iter(client.watch(path, "watch Secrets", timeout_seconds=1)))
        raise AssertionError("alice may not watch")
    except ApiError as exc:
        assert exc.status == 403 and "watch Secrets" in str(exc), str(exc)
    with ChangeBell(client, [path]) as bell:
        started = time.monotonic()
        assert bell.wait(5) == set() and time.monotonic() - started < 3
        assert bell.broken and path in bell.broken and "403" in bell.broken
