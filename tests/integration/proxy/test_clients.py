"""Python clients through the proxy: DynamicClient, a CAPI-style controller, version adaptation, CRD look-ups."""
import json
import socket
import threading
import time
import urllib.request

import pytest
from kubernetes import client, dynamic

from testenv.proxy_stack import http

PRIVATE = b"hypershift.openshift.io"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def _namespace(stack, name):
    stack.server.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def machine(name, namespace, version="v1beta2"):
    spec = {"clusterName": "c", "bootstrap": {"dataSecretName": "user-data"}}
    if version == "v1beta2":
        spec["infrastructureRef"] = {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine", "name": name}
    else:
        spec["infrastructureRef"] = {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachine",
                                     "name": name, "namespace": namespace}
    return {"apiVersion": "cluster.x-k8s.io/" + version, "kind": "Machine",
            "metadata": {"name": name, "namespace": namespace, "labels": {"cluster.x-k8s.io/cluster-name": "c"}},
            "spec": spec}


def dynamic_client(url, token):
    configuration = client.Configuration()
    configuration.host = url
    configuration.api_key = {"authorization": "Bearer " + token}
    return dynamic.DynamicClient(client.ApiClient(configuration))


def test_dynamic_client_crud(stack):
    _namespace(stack, "dyn")
    dyn = dynamic_client(stack.plain_proxy.url, stack.server.admin_token)
    machines = dyn.resources.get(api_version="cluster.x-k8s.io/v1beta2", kind="Machine")
    created = machines.create(body=machine("d1", "dyn"), namespace="dyn")
    assert created.apiVersion == "cluster.x-k8s.io/v1beta2"
    patched = machines.patch(name="d1", namespace="dyn", body={"metadata": {"labels": {"x": "y"}}},
                             content_type="application/merge-patch+json")
    assert patched.metadata.labels["x"] == "y"
    listed = machines.get(namespace="dyn")
    assert [item.metadata.name for item in listed.items] == ["d1"]
    assert json.dumps(listed.to_dict()).find("hypershift") < 0
    stored = stack.server.request("GET", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/dyn/machines/d1")
    assert stored.json()["metadata"]["labels"]["x"] == "y"
    # the same object through the v1beta1 API the server does not serve for Machines (adaptation)
    old_api = dyn.resources.get(api_version="cluster.x-k8s.io/v1beta1", kind="Machine")
    old = old_api.get(name="d1", namespace="dyn")
    assert old.apiVersion == "cluster.x-k8s.io/v1beta1"
    assert old.spec.infrastructureRef.apiVersion == "infrastructure.cluster.x-k8s.io/v1beta2"
    machines.delete(name="d1", namespace="dyn")
    assert stack.server.request("GET", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/dyn/machines/d1").status == 404


class MachineController(object):
    """CAPI-style: list, then watch Machines of one namespace and set status.phase=Running via /status."""

    def __init__(self, base_url, token, namespace, version):
        self.base = "%s/apis/cluster.x-k8s.io/%s/namespaces/%s/machines" % (base_url, version, namespace)
        self.token = token
        self.version = version
        self.seen_bytes = []
        self.patched = set()
        self.errors = []
        self.stop = threading.Event()
        self.stream = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def close(self):
        """Stop and end the watch: kube-apiserver keeps a watch open for half an hour, and the proxy waits for
        its open requests before it exits."""
        self.stop.set()
        stream = self.stream
        if stream is not None:
            try:
                with socket.fromfd(stream.fileno(), socket.AF_INET, socket.SOCK_STREAM) as duplicate:
                    duplicate.shutdown(socket.SHUT_RDWR)
            except (OSError, ValueError):  # already closed
                pass
        self.thread.join(10)

    def _request(self, method, url, body=None, content_type="application/json"):
        request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
        request.add_header("Authorization", "Bearer " + self.token)
        request.add_header("Content-Type", content_type)
        return urllib.request.urlopen(request, timeout=30)

    def _reconcile(self, obj):
        if obj["apiVersion"] != "cluster.x-k8s.io/" + self.version:
            self.errors.append("unexpected apiVersion %s" % obj["apiVersion"])
        if (obj.get("status") or {}).get("phase") == "Running":
            return
        name = obj["metadata"]["name"]
        with self._request("PATCH", "%s/%s/status" % (self.base, name), {"status": {"phase": "Running"}},
                           "application/merge-patch+json") as response:
            body = response.read()
            self.seen_bytes.append(body)
            if json.loads(body)["status"]["phase"] != "Running":
                self.errors.append("patch of %s did not stick" % name)
        self.patched.add(name)

    def _run(self):
        try:
            with self._request("GET", self.base) as response:
                body = response.read()
            self.seen_bytes.append(body)
            listing = json.loads(body)
            for item in listing["items"]:
                self._reconcile(dict(item, apiVersion=listing["apiVersion"]))
            url = "%s?watch=1&allowWatchBookmarks=true&resourceVersion=%s" % (self.base, listing["metadata"]["resourceVersion"])
            with self._request("GET", url) as stream:
                self.stream = stream
                while not self.stop.is_set():
                    line = stream.readline()
                    if not line:
                        break
                    self.seen_bytes.append(line)
                    event = json.loads(line)
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._reconcile(event["object"])
        except Exception as exc:  # pylint: disable=broad-except  # reported by the test
            if not self.stop.is_set():
                self.errors.append(repr(exc))


@pytest.mark.parametrize("version", ["v1beta2", "v1beta1"])
def test_capi_style_controller_never_sees_private_groups(stack, version):
    namespace = "ctl-" + version
    _namespace(stack, namespace)
    controller = MachineController(stack.plain_proxy.url, stack.server.admin_token, namespace, version)
    controller.thread.start()
    time.sleep(0.3)
    names = ["m%d" % index for index in range(3)]
    for name in names:  # created behind the proxy's back, in the private group, as the migration would
        body = json.loads(json.dumps(machine(name, namespace)).replace("cluster.x-k8s.io/v", "cluster.hypershift.openshift.io/v")
                          .replace('"infrastructure.cluster.x-k8s.io"', '"infrastructure.cluster.hypershift.openshift.io"'))
        assert stack.server.request("POST", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/%s/machines"
                                    % namespace, body).status == 201
    deadline = time.monotonic() + 20
    while controller.patched != set(names) and time.monotonic() < deadline and not controller.errors:
        time.sleep(0.05)
    controller.close()
    assert not controller.errors, controller.errors
    assert controller.patched == set(names)
    assert not any(PRIVATE in chunk for chunk in controller.seen_bytes)
    for name in names:
        stored = stack.server.request("GET", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/%s/machines/%s"
                                      % (namespace, name)).json()
        assert stored["status"]["phase"] == "Running"


def test_v1beta1_client_against_v1beta2_only_kind_round_trips(stack):
    """Machines are served only as v1beta2: a v1beta1 client creates, reads, lists, watches and patches."""
    _namespace(stack, "old")
    url = stack.plain_proxy.url + "/apis/cluster.x-k8s.io/v1beta1/namespaces/old/machines"
    token = stack.server.admin_token
    sent = machine("o1", "old", "v1beta1")
    sent["spec"]["nodeDrainTimeout"] = "5m0s"
    status, _headers, body = http("POST", url, sent, token)
    assert status == 201, body
    created = json.loads(body)
    assert created["apiVersion"] == "cluster.x-k8s.io/v1beta1"
    assert created["spec"] == sent["spec"]
    stored = stack.server.request("GET", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/old/machines/o1").json()
    assert stored["spec"]["deletion"]["nodeDrainTimeoutSeconds"] == 300
    assert stored["spec"]["infrastructureRef"]["apiGroup"] == "infrastructure.cluster.hypershift.openshift.io"
    status, _headers, body = http("PATCH", url + "/o1", b'{"spec":{"providerID":"aws:///x/i-1"}}', token,
                                  headers={"Content-Type": "application/merge-patch+json"})
    assert status == 200, body
    assert json.loads(body)["spec"]["providerID"] == "aws:///x/i-1"
    status, _headers, body = http("GET", url, None, token)
    listing = json.loads(body)
    assert listing["apiVersion"] == "cluster.x-k8s.io/v1beta1" and listing["items"][0]["spec"]["nodeDrainTimeout"] == "5m0s"
    events = _watch_events(stack.plain_proxy.url + "/apis/cluster.x-k8s.io/v1beta1/namespaces/old/machines?watch=1"
                           "&resourceVersion=0", token, 1)
    assert events[0]["object"]["apiVersion"] == "cluster.x-k8s.io/v1beta1"
    assert events[0]["object"]["spec"]["nodeDrainTimeout"] == "5m0s"
    discovery = json.loads(http("GET", stack.plain_proxy.url + "/apis/cluster.x-k8s.io/v1beta1", None, token)[2])
    assert "machines" in [resource["name"] for resource in discovery["resources"]]


def test_v1beta2_client_against_v1beta1_only_kind_round_trips(stack):
    """MachineSets are served and stored only as v1beta1: a v1beta2 client writes and reads them losslessly."""
    _namespace(stack, "new")
    url = stack.plain_proxy.url + "/apis/cluster.x-k8s.io/v1beta2/namespaces/new/machinesets"
    token = stack.server.admin_token
    sent = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet",
            "metadata": {"name": "s1", "namespace": "new"},
            "spec": {"clusterName": "c", "replicas": 2,
                     "selector": {"matchLabels": {"cluster.x-k8s.io/set-name": "s1"}},
                     "template": {"metadata": {"labels": {"cluster.x-k8s.io/set-name": "s1"}},
                                  "spec": {"clusterName": "c", "bootstrap": {"dataSecretName": "user-data"},
                                           "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                                                 "kind": "AWSMachineTemplate", "name": "t"}}}}}
    status, _headers, body = http("POST", url, sent, token)
    assert status == 201, body
    stored = stack.server.request("GET", "/apis/cluster.hypershift.openshift.io/v1beta1/namespaces/new/machinesets/s1").json()
    assert stored["spec"]["template"]["spec"]["infrastructureRef"]["apiVersion"] == \
        "infrastructure.cluster.hypershift.openshift.io/v1beta2"  # from the CRD's contract label
    got = json.loads(http("GET", url + "/s1", None, token)[2])
    assert got["apiVersion"] == "cluster.x-k8s.io/v1beta2"
    assert got["spec"] == sent["spec"]
    status, _headers, body = http("PATCH", url + "/s1", [{"op": "replace", "path": "/spec/replicas", "value": 4}], token,
                                  headers={"Content-Type": "application/json-patch+json"})
    assert status == 200 and json.loads(body)["spec"]["replicas"] == 4, body
    scale = json.loads(http("GET", url + "/s1/scale", None, token)[2])
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 4


def _watch_events(url, token, count):
    request = urllib.request.Request(url)
    request.add_header("Authorization", "Bearer " + token)
    events = []
    with urllib.request.urlopen(request, timeout=20) as stream:
        while len(events) < count:
            events.append(json.loads(stream.readline()))
    return events


def test_crd_lookups_present_private_crds_as_standard(stack):
    token = stack.server.admin_token
    base = stack.plain_proxy.url + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    status, _headers, body = http("GET", base + "/awsmachines.infrastructure.cluster.x-k8s.io", None, token)
    assert status == 200, body
    crd = json.loads(body)
    assert crd["metadata"]["name"] == "awsmachines.infrastructure.cluster.x-k8s.io"
    assert crd["spec"]["group"] == "infrastructure.cluster.x-k8s.io"
    assert crd["metadata"]["labels"]["cluster.x-k8s.io/v1beta2"] == "v1beta2"  # contract label kept
    machines = json.loads(http("GET", base + "/machines.cluster.x-k8s.io", None, token)[2])
    assert machines["spec"]["names"]["shortNames"] == ["ma"]
    listing = json.loads(http("GET", base, None, token)[2])
    names = [item["metadata"]["name"] for item in listing["items"]]
    assert "machines.cluster.x-k8s.io" in names and not [name for name in names if "hypershift" in name]


def test_non_capi_objects_show_standard_owner_references(stack):
    _namespace(stack, "plain")
    token = stack.server.admin_token
    # a real owner: kube-controller-manager's garbage collector deletes a dependent whose owner does not exist
    cluster = {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Cluster",
               "metadata": {"name": "c", "namespace": "plain"}, "spec": {"paused": True}}
    created = stack.server.request("POST", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/plain/clusters", cluster)
    assert created.status == 201, created
    owner = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "name": "c", "uid": created.json()["metadata"]["uid"]}
    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "owned", "namespace": "plain", "ownerReferences": [owner]},
                  "data": {"note": "cluster.x-k8s.io/v1beta2 stays text"}}
    status, _headers, body = http("POST", stack.plain_proxy.url + "/api/v1/namespaces/plain/configmaps", config_map, token)
    assert status == 201, body
    stored = stack.server.request("GET", "/api/v1/namespaces/plain/configmaps/owned").json()
    assert stored["metadata"]["ownerReferences"][0]["apiVersion"] == "cluster.hypershift.openshift.io/v1beta2"
    assert stored["data"]["note"] == "cluster.x-k8s.io/v1beta2 stays text"
    seen = json.loads(http("GET", stack.plain_proxy.url + "/api/v1/namespaces/plain/configmaps/owned", None, token)[2])
    assert seen["metadata"]["ownerReferences"][0]["apiVersion"] == "cluster.x-k8s.io/v1beta2"


@pytest.mark.parametrize("accept", ["application/json", AGGREGATED])
def test_discovery_hides_private_groups(stack, accept):
    status, _headers, body = http("GET", stack.plain_proxy.url + "/apis", None, stack.server.admin_token,
                                  headers={"Accept": accept})
    assert status == 200 and PRIVATE not in body
    document = json.loads(body)
    if document["kind"] == "APIGroupDiscoveryList":
        groups = {item["metadata"]["name"]: item for item in document["items"]}
        versions = {entry["version"]: [r["resource"] for r in entry["resources"]] for entry in groups["cluster.x-k8s.io"]["versions"]}
        assert "machines" in versions["v1beta1"] and "machinesets" in versions["v1beta2"]  # adapted entries
    else:
        names = [group["name"] for group in document["groups"]]
        assert "cluster.x-k8s.io" in names and "infrastructure.cluster.x-k8s.io" in names


def test_a_large_list_is_translated_while_it_streams_in(stack):
    """kube-apiserver streams a LIST of custom resources item by item; the proxy translates the items as they come
    (capi_proxy/proxy/liststream.py) and answers exactly the bytes its whole-body translation gives."""
    from capi_proxy.metrics import ProxyMetrics  # pylint: disable=import-outside-toplevel
    from capi_proxy.proxy.pathing import parse_target  # pylint: disable=import-outside-toplevel
    from capi_proxy.proxy.routing import Route  # pylint: disable=import-outside-toplevel
    from capi_proxy.proxy.translation import Translator  # pylint: disable=import-outside-toplevel
    from capi_proxy.core import DEFAULT_GROUP_MAP  # pylint: disable=import-outside-toplevel

    _namespace(stack, "stream")
    private_path = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/stream/machines"
    standard_path = "/apis/cluster.x-k8s.io/v1beta2/namespaces/stream/machines"
    for index in range(300):
        item = machine("m-%d" % index, "stream")
        item["apiVersion"] = "cluster.hypershift.openshift.io/v1beta2"
        item["spec"]["infrastructureRef"]["apiGroup"] = "infrastructure.cluster.hypershift.openshift.io"
        item["metadata"]["ownerReferences"] = [  # two owners: "},{" inside each item too
            {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": kind, "name": "owner", "uid": "u-%s" % kind}
            for kind in ("MachineSet", "Cluster")]
        assert stack.server.request("POST", private_path, item).status == 201
    direct = stack.server.request("GET", private_path)
    assert direct.status == 200 and len(direct.body) > 200 * 1024
    status, _headers, proxied = http("GET", stack.plain_proxy.url + standard_path, token=stack.server.admin_token)
    assert status == 200
    route = Route("capi", parse_target(standard_path, "GET", {}), private_path)
    assert proxied == Translator(DEFAULT_GROUP_MAP, False, None, ProxyMetrics()).response_bytes(direct.body, route)
    listed = json.loads(proxied)
    assert len(listed["items"]) == 300 and PRIVATE not in proxied
    assert listed["items"][7]["metadata"]["ownerReferences"][1]["apiVersion"] == "cluster.x-k8s.io/v1beta2"
    records = stack.plain_proxy.wait_log_records(
        lambda record: record.get("msg") == "request" and record.get("path") == standard_path)
    assert records and records[-1]["streamed"] is True, records[-1:]


def test_an_adapted_patch_without_a_resource_version_is_never_answered_with_a_conflict(stack):
    """kube-apiserver retries a patch's conflicts itself (storage GuaranteedUpdate), so a client that sent no
    resourceVersion never gets 409. Through the version adaptation a patch is a read and a write: writers that change
    the object in between must not turn into a 409 either (CI once saw v1.10.10's MachineHealthCheck log 'the object
    has been modified' after the proxy gave up on its fifth try). A patch that carries a resourceVersion asked for
    the lock: its conflict is its answer."""
    _namespace(stack, "busy")
    token = stack.server.admin_token
    url = stack.plain_proxy.url + "/apis/cluster.x-k8s.io/v1beta1/namespaces/busy/machines"
    status, _headers, body = http("POST", url, machine("b1", "busy", "v1beta1"), token)
    assert status == 201, body
    stale_version = json.loads(body)["metadata"]["resourceVersion"]
    private = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/busy/machines/b1"
    stop, writes, failures = threading.Event(), [0, 0, 0], []

    def writer(index):
        while not stop.is_set():  # another controller, writing the same Machine all the time
            response = stack.server.request("PATCH", private, {"metadata": {"labels": {"writer-%d" % index: str(writes[index])}}},
                                            content_type="application/merge-patch+json")
            if response.status != 200:
                failures.append(response)
            writes[index] += 1

    threads = [threading.Thread(target=writer, args=(index,), daemon=True) for index in range(3)]
    for thread in threads:
        thread.start()
    answers = []
    try:
        for round_ in range(60):
            answers.append(http("PATCH", url + "/b1", {"metadata": {"labels": {"patched": str(round_)}}}, token,
                                headers={"Content-Type": "application/merge-patch+json"})[:3:2])
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert not failures, failures[:3]
    assert min(writes) > 10, writes  # the writers ran all along (about one write per patch each)
    assert [status for status, _body in answers] == [200] * 60, [answer for answer in answers if answer[0] != 200][:3]
    stored = stack.server.request("GET", private).json()
    assert stored["metadata"]["labels"]["patched"] == "59"
    assert stored["metadata"]["labels"]["writer-0"] == str(writes[0] - 1)
    status, _headers, body = http("PATCH", url + "/b1", {"metadata": {"resourceVersion": stale_version,
                                                                      "labels": {"patched": "stale"}}}, token,
                                  headers={"Content-Type": "application/merge-patch+json"})
    assert status == 409 and json.loads(body)["reason"] == "Conflict", body
    assert stack.server.request("GET", private).json()["metadata"]["labels"]["patched"] == "59"


IPAM_TWINS = ("ipaddresses.ipam.cluster.hypershift.openshift.io", "ipaddressclaims.ipam.cluster.hypershift.openshift.io")


def _ipam_versions(source, accept):
    """The versions of the ipam group in the /apis discovery answer of source, the server or a proxy's URL (None: the
    group is absent)."""
    if isinstance(source, str):
        status, _headers, body = http("GET", source + "/apis", None, None, headers={"Accept": accept})
    else:
        answer = source.request("GET", "/apis", headers={"Accept": accept})
        status, body = answer.status, answer.body
    assert status == 200, body
    document = json.loads(body)
    if document["kind"] == "APIGroupDiscoveryList":
        found = [item for item in document["items"] if item["metadata"]["name"].startswith("ipam.cluster.")]
        return [entry["version"] for entry in found[0]["versions"]] if found else None
    found = [group for group in document["groups"] if group["name"].startswith("ipam.cluster.")]
    return [entry["version"] for entry in found[0]["versions"]] if found else None


def _within(seconds, check):
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


@pytest.mark.parametrize("accept", [AGGREGATED, "application/json"])
def test_discovery_follows_a_crd_group_that_goes_and_comes_back_within_a_second(stack, accept):
    """Removed, then created again after the proxy has loaded its index: the proxy shows each change within 1 s of
    the server (the index TTL, 30 s, is only a backstop)."""
    server, crds_path = stack.server, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
    twins = []
    for name in IPAM_TWINS:
        live = server.request("GET", crds_path + name).json()
        twins.append({"apiVersion": live["apiVersion"], "kind": live["kind"], "spec": live["spec"],
                      "metadata": {key: live["metadata"][key] for key in ("name", "labels", "annotations")
                                   if key in live["metadata"]}})
    assert _ipam_versions(stack.proxy.url, accept)  # the proxy's index holds the group now
    before = set(_ipam_versions(server, accept))
    try:
        for twin in twins:
            assert server.request("DELETE", crds_path + twin["metadata"]["name"]).status == 200
        # kube-apiserver first removes the CRD's objects (its cleanup finalizer): on a loaded 2-core machine >30 s
        assert _within(120, lambda: _ipam_versions(server, accept) is None), "the server still serves ipam"
        assert _within(1, lambda: _ipam_versions(stack.proxy.url, accept) is None), \
            "the proxy still shows ipam.cluster.x-k8s.io 1 s after the server dropped it"
        # past the index's minimum refresh interval, a client asking for a kind it does not hold makes it reload: from
        # here on the proxy's index holds no ipam group
        time.sleep(1.1)
        assert http("GET", stack.proxy.url + "/apis/ipam.cluster.x-k8s.io/v1beta2/nosuchkinds", None, None)[0] == 404
    finally:
        for twin in twins:
            server.request("POST", crds_path.rstrip("/"), twin)
    # kube-apiserver adds a CRD group's versions one by one (CI of f3312e2, 2026-12-02: v1alpha1 alone first): wait
    # for all it served before, then the proxy must show them within 1 s
    served = _within(120, lambda: set(_ipam_versions(server, accept) or ()) == before and _ipam_versions(server, accept))
    assert served, "the server does not serve the ipam twins' versions %s again" % sorted(before)
    shown = _within(1, lambda: set(_ipam_versions(stack.proxy.url, accept) or ()) == before)
    assert shown, "the proxy does not show ipam.cluster.x-k8s.io %s within 1 s of the server" % served
    # kube-apiserver installs a group-version's own discovery document apart from the group list (seen 404 there
    # after /apis listed the version): wait for the server's, then the proxy must follow within 1 s

    def _lists_ipaddresses(status, body):
        return status == 200 and b'"ipaddresses"' in body

    on_server = _within(120, lambda: _lists_ipaddresses(
        *_status_body(server.request("GET", "/apis/ipam.cluster.hypershift.openshift.io/" + served[0]))))
    assert on_server, "the server does not serve /apis/ipam.cluster.hypershift.openshift.io/%s" % served[0]
    through = _within(1, lambda: _lists_ipaddresses(
        *http("GET", stack.proxy.url + "/apis/ipam.cluster.x-k8s.io/" + served[0], None, None)[::2]))
    assert through, "the proxy does not list ipaddresses in ipam.cluster.x-k8s.io/%s within 1 s of the server" % served[0]


def _status_body(answer):
    return answer.status, answer.body
