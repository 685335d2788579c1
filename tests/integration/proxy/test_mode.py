"""The proxy's mode followed live from its ConfigMap (capi_proxy/proxy/mode.py), on the real control plane.

Pass-through relays every request unchanged (the standard group is the API server's own: here it serves no standard
CRD, so a standard Machine path is a 404); translate serves the standard group from the private one. A change of
data.mode ends every open watch with a 410 Expired ERROR event and refuses a watch that resumes from before it; each
proxy acknowledges the mode it applied under its Pod's name. A proxy whose ConfigMap is missing is not ready and
answers 503 naming it, then serves once it exists; restarted, a proxy comes back in the mode the ConfigMap holds.
"""
import http.client as http_client
import json
import threading
import time

import pytest

from testenv import proxy_stack as support
from testenv.proxy_stack import http

NAMESPACE = "proxy-mode"
CONFIG_MAP = "capi-proxy-mode"
STANDARD_MACHINES = "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/machines" % NAMESPACE
PRIVATE_MACHINES = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/%s/machines" % NAMESPACE
CONFIG_MAPS = "/api/v1/namespaces/%s/configmaps" % NAMESPACE


def set_mode(stack, mode, name=CONFIG_MAP):
    path = "%s/%s" % (CONFIG_MAPS, name)
    if stack.server.request("GET", path).status == 404:
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"mode": mode}}
        response = stack.server.request("POST", CONFIG_MAPS, body)
    else:
        response = stack.server.request("PATCH", path, {"data": {"mode": mode}},
                                         content_type="application/merge-patch+json")
    assert response.status in (200, 201), response.text
    return response.json()["metadata"]["resourceVersion"]


def start(stack, pod_name, config_map=CONFIG_MAP):
    return support.start_proxy(stack.workdir, stack.server.direct_kubeconfig, "--use-own-credentials",
                               "--mode-config-map", "%s/%s" % (NAMESPACE, config_map), "--pod-name", pod_name,
                               name="proxy-mode-" + pod_name)


def wait_for(condition, what, timeout=15):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("not within %ss: %s" % (timeout, what))
        time.sleep(0.05)


def ready(proxy):
    return http("GET", proxy.url + "/readyz")[0] == 200


def acknowledged(stack, pod_name):
    data = stack.server.request("GET", "%s/%s" % (CONFIG_MAPS, CONFIG_MAP)).json().get("data") or {}
    return data.get("applied." + pod_name)


class Watch(object):
    """One watch through a proxy, its events read in a thread until the stream ends."""

    def __init__(self, proxy, path, token):
        host, port = proxy.url[len("http://"):].split(":")
        self.connection = http_client.HTTPConnection(host, int(port), timeout=60)
        self.connection.request("GET", path, headers={"Authorization": "Bearer " + token,
                                                      "Accept": "application/json"})
        self.response = self.connection.getresponse()
        self.status = self.response.status
        self.events = []
        self.ended = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in self.response:
                if line.strip():
                    self.events.append(json.loads(line))
        finally:
            self.ended.set()
            self.connection.close()


@pytest.fixture(scope="module")
def namespace(stack):
    support.create_namespace(stack.server, NAMESPACE)
    machine = {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Machine",
               "metadata": {"name": "m1", "namespace": NAMESPACE},
               "spec": {"clusterName": "c", "bootstrap": {"dataSecretName": "user-data"},
                        "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine",
                                              "name": "m1"}}}
    response = stack.server.request("POST", PRIVATE_MACHINES, machine)
    assert response.status == 201, response.text
    return NAMESPACE


def test_a_flip_ends_every_open_watch_with_410_and_the_proxy_acknowledges_it(stack, namespace):
    token = stack.server.admin_token
    set_mode(stack, "passthrough")
    proxy = start(stack, "pod-a")
    try:
        wait_for(lambda: ready(proxy), "the proxy ready in pass-through")
        assert wait_for(lambda: acknowledged(stack, "pod-a"), "pod-a's acknowledgement") == "passthrough"
        # pass-through: the API server's own groups, nothing translated
        assert http("GET", proxy.url + STANDARD_MACHINES, token=token)[0] == 404
        status, _headers, body = http("GET", proxy.url + PRIVATE_MACHINES, token=token)
        assert status == 200 and json.loads(body)["items"][0]["apiVersion"] == "cluster.hypershift.openshift.io/v1beta2"
        listed = json.loads(http("GET", proxy.url + CONFIG_MAPS, token=token)[2])
        before = listed["metadata"]["resourceVersion"]
        core_watch = Watch(proxy, CONFIG_MAPS + "?watch=1&resourceVersion=" + before, token)
        private_watch = Watch(proxy, PRIVATE_MACHINES + "?watch=1", token)
        assert (core_watch.status, private_watch.status) == (200, 200)
        time.sleep(0.3)  # both streams open upstream

        set_mode(stack, "translate")
        for opened in (core_watch, private_watch):
            assert opened.ended.wait(10), "the watch did not end after the flip"
            last = opened.events[-1]
            assert last["type"] == "ERROR" and last["object"]["code"] == 410, opened.events
            assert last["object"]["reason"] == "Expired" and "list again" in last["object"]["message"]
        assert wait_for(lambda: acknowledged(stack, "pod-a") == "translate", "pod-a's acknowledgement of translate")
        # translate: the standard group served from the private one
        status, _headers, body = http("GET", proxy.url + STANDARD_MACHINES, token=token)
        assert status == 200 and json.loads(body)["items"][0]["apiVersion"] == "cluster.x-k8s.io/v1beta2"
        # a watch resumed from a resourceVersion of before the flip: 410, the client lists again
        status, _headers, body = http("GET", proxy.url + CONFIG_MAPS + "?watch=1&resourceVersion=" + before,
                                      token=token)
        assert status == 410 and json.loads(body)["reason"] == "Expired"
        # a list is never refused, and a watch from after the flip is served
        fresh = json.loads(http("GET", proxy.url + CONFIG_MAPS, token=token)[2])["metadata"]["resourceVersion"]
        resumed = Watch(proxy, CONFIG_MAPS + "?watch=1&timeoutSeconds=1&resourceVersion=" + fresh, token)
        assert resumed.status == 200 and resumed.ended.wait(10)
        assert [event for event in resumed.events if event["type"] == "ERROR"] == []

        # restarted, it comes back in the mode the ConfigMap records
        assert proxy.stop() == 0
        proxy = start(stack, "pod-a")
        wait_for(lambda: ready(proxy), "the restarted proxy ready")
        assert http("GET", proxy.url + STANDARD_MACHINES, token=token)[0] == 200
        assert proxy.log_records()[-1]["msg"] != "cannot read the proxy mode"
    finally:
        proxy.stop()


def test_without_its_config_map_the_proxy_is_not_ready_and_refuses_naming_it(stack, namespace):
    proxy = start(stack, "pod-b", config_map="capi-proxy-mode-b")
    try:
        time.sleep(0.5)
        status, _headers, body = http("GET", proxy.url + "/readyz")
        assert status == 503
        status, _headers, body = http("GET", proxy.url + CONFIG_MAPS, token=stack.server.admin_token)
        message = json.loads(body)["message"]
        assert status == 503 and "ConfigMap %s/capi-proxy-mode-b" % NAMESPACE in message
        assert "the ConfigMap does not exist" in message
        set_mode(stack, "translate", name="capi-proxy-mode-b")
        wait_for(lambda: ready(proxy), "the proxy ready once its ConfigMap exists")
        assert http("GET", proxy.url + STANDARD_MACHINES, token=stack.server.admin_token)[0] == 200
    finally:
        proxy.stop()
