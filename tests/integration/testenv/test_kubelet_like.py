"""The stand-in kubelet (testenv.cluster.pods, hybrid mode) behaves like a kubelet where the test bed relies on it:
- it runs the Pods of a mapped image on every KWOK node, not only the first (issue 46: with two fake nodes the
  conversion shim's second replica stayed Pending, so the shim was never Available);
- it survives a kube-apiserver outage: the Pods it runs keep their processes and network namespaces and answer
  their probes during and after it, and it runs the Pods created after the restart (issue 46: it logged a connection
  error and never ran a Pod again). The Pods here are Ready only while the API server answers, as the proxy sidecar's
  /readyz is: their status changes in the outage, which the old code could not send, and its Pods died of that;
- it puts a Pod's status back when another writer changed it (the node lifecycle controller marks the Pods of a node
  NotReady when the node's heartbeats stopped for its grace period, as they do in a long outage).

One control plane for the module: two KWOK nodes, and an image mapped to the stand-in process (testenv.cluster.standin)
so its Pods run for real. The test traffic goes to the pod IPs, inside the network namespaces the test bed made."""
import ipaddress
import subprocess
import sys
import time
import urllib.request

import pytest

from testenv import REPO_ROOT
from testenv.client import wait_for
from testenv.cluster.testing import start_cluster

NAMESPACE = "kubelet-like"
IMAGE = "registry.example/testenv-echo:1"
# the image-to-binary map's entry for IMAGE: the stand-in, answering HTTP on the ports its args name
IMAGES = {"testenv-echo": {"entrypoint": [sys.executable, "-m", "testenv.cluster.standin"],
                           "env": {"PYTHONPATH": REPO_ROOT}}}
PORT = 8080
OUTAGE_SECONDS = 6
NEW_POD_TIMEOUT = 60


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    started = start_cluster(tmp_path_factory.mktemp("kubelet-like"), fake_nodes=2, images=IMAGES)
    response = started.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                              "metadata": {"name": NAMESPACE}})
    assert response.status == 201, response
    yield started
    assert started.stop() == 0, started.log()


def pod_spec(server, labels=None):
    """The stand-in on PORT (liveness there), Ready while it answers there and kube-apiserver answers /readyz at the
    kubernetes Service's address in the pod network, as the proxy sidecar's readiness follows the API server."""
    readyz = ("import ssl, sys, urllib.request; urllib.request.urlopen('http://127.0.0.1:%d/', timeout=2); "
              "urllib.request.urlopen(sys.argv[1], timeout=2, context=ssl.create_default_context(cafile=sys.argv[2]))"
              % PORT)
    container = {"name": "echo", "image": IMAGE, "args": [str(PORT)], "ports": [{"containerPort": PORT}],
                 "livenessProbe": {"httpGet": {"path": "/", "port": PORT}, "periodSeconds": 1,
                                   "initialDelaySeconds": 15},
                 "readinessProbe": {"exec": {"command": [
                     sys.executable, "-c", readyz, "https://%s/readyz" % server.cluster.pod_network.gateway,
                     server.ca_file]}, "periodSeconds": 1, "failureThreshold": 1, "timeoutSeconds": 5}}
    spec = {"containers": [container], "terminationGracePeriodSeconds": 2}
    if labels:  # one replica per node, as the shim's anti-affinity asks (here required, not preferred)
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": labels}}]}}
    return spec


@pytest.fixture(scope="module")
def echo(server):
    """A Deployment of two replicas of the mapped image, one per node; returns its name once it is Available."""
    labels = {"app": "echo"}
    response = server.request("POST", "/apis/apps/v1/namespaces/%s/deployments" % NAMESPACE, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "echo", "namespace": NAMESPACE},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": pod_spec(server, labels)}}})
    assert response.status == 201, response
    wait_for(lambda: available(server, "echo", 2), "Deployment %s/echo to be Available with 2 replicas "
             "(testenv.cluster.pods: logs/netns-pods.log)" % NAMESPACE, timeout=90, interval=0.5)
    return "echo"


def available(server, name, replicas):
    deployment = server.request("GET", "/apis/apps/v1/namespaces/%s/deployments/%s" % (NAMESPACE, name)).json()
    status = deployment.get("status") or {}
    return (status.get("observedGeneration") == deployment["metadata"]["generation"]
            and status.get("updatedReplicas") == status.get("availableReplicas") == replicas)


def pods(server, selector="app=echo"):
    listing = server.request("GET", "/api/v1/namespaces/%s/pods?labelSelector=%s" % (NAMESPACE, selector)).json()
    return [pod for pod in listing["items"] if not pod["metadata"].get("deletionTimestamp")]


def ready(pod):
    return any(condition["type"] == "Ready" and condition["status"] == "True"
               for condition in (pod.get("status") or {}).get("conditions") or ())


def answers(pod_ip):
    """What the kubelet's liveness probe sees: GET / at the pod IP from outside the Pod."""
    try:
        with urllib.request.urlopen("http://%s:%d/" % (pod_ip, PORT), timeout=2) as response:
            return response.status == 200
    except OSError:  # refused or timed out: nothing listens there any more
        return False


def processes(server, pod):
    """The pids of the container's process (the stand-in) in the Pod's network namespace, not those of its exec
    probes; empty when the namespace is gone."""
    netns = "%s-%s" % (server.cluster.pod_network.bridge, pod["metadata"]["uid"][:8])
    listed = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True, check=False)
    return {pid for pid in listed.stdout.split() if b"testenv.cluster.standin" in cmdline(pid)}


def cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as handle:
            return handle.read()
    except OSError:  # it ended meanwhile
        return b""


def in_pod_network(server, pod_ip):
    network = server.cluster.pod_network
    return ipaddress.ip_address(pod_ip) in ipaddress.ip_network("%s/%d" % (network.gateway, network.prefix),
                                                                strict=False)


def test_the_pods_of_a_mapped_image_run_on_every_kwok_node(server, echo):
    running = pods(server)
    assert sorted(pod["spec"]["nodeName"] for pod in running) == ["kwok-node-0", "kwok-node-1"], running
    for pod in running:
        name, pod_ip = pod["metadata"]["name"], pod["status"].get("podIP")
        assert ready(pod), (name, pod["status"])
        assert pod_ip and in_pod_network(server, pod_ip), (name, pod["status"])  # not a KWOK-made address
        assert processes(server, pod), "pod %s on %s has no process in its network namespace" % (
            name, pod["spec"]["nodeName"])
        assert answers(pod_ip), name


def test_the_pods_outlive_an_apiserver_outage_and_new_ones_run_after_it(server, echo):
    running = pods(server)
    assert len(running) == 2 and all(ready(pod) for pod in running), running
    before = {pod["metadata"]["name"]: (pod["status"]["podIP"], processes(server, pod)) for pod in running}
    assert all(pids for _ip, pids in before.values()), before
    server.stop_apiserver(timeout=2)  # SIGTERM, SIGKILL 2 s later: it waits 15 s for its open watches otherwise
    try:
        deadline = time.monotonic() + OUTAGE_SECONDS
        while time.monotonic() < deadline:  # the Pods go on without the API server (not Ready: their readiness)
            for name, (pod_ip, _pids) in before.items():
                assert answers(pod_ip), "pod %s stopped answering at %s during the outage" % (name, pod_ip)
            time.sleep(0.5)
        during = {pod["metadata"]["name"]: processes(server, pod) for pod in running}
    finally:
        server.start_apiserver()
    assert during == {name: pids for name, (_ip, pids) in before.items()}, "processes changed in the outage"
    started = time.monotonic()
    response = server.request("POST", "/api/v1/namespaces/%s/pods" % NAMESPACE, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "after-outage", "labels": {"app": "after-outage"}},
        "spec": pod_spec(server)})
    assert response.status == 201, response
    (late,) = wait_for(lambda: [pod for pod in pods(server, "app=after-outage") if ready(pod)],
                       "Pod %s/after-outage to be Ready within %d s of its creation after the restart"
                       % (NAMESPACE, NEW_POD_TIMEOUT), timeout=NEW_POD_TIMEOUT, interval=0.5)
    assert answers(late["status"]["podIP"]), late["status"]
    print("the Pod created after the restart was Ready after %.1f s" % (time.monotonic() - started))
    for name, (pod_ip, pids) in before.items():
        assert answers(pod_ip), "pod %s does not answer at %s after the outage" % (name, pod_ip)
    after = {pod["metadata"]["name"]: (pod["status"]["podIP"], processes(server, pod)) for pod in pods(server)}
    assert after == before, "the Deployment's Pods were replaced or restarted by the outage"
    assert available(server, "echo", 2)
    statuses = [status for pod in pods(server) for status in pod["status"]["containerStatuses"]]
    assert all(status["restartCount"] == 0 for status in statuses), statuses


def test_a_pod_status_another_writer_changed_is_put_back(server, echo):
    pod = pods(server)[0]
    name = pod["metadata"]["name"]
    # what the node lifecycle controller writes to each Pod of a node whose heartbeats stopped (MarkPodsNotReady)
    conditions = [dict(condition, status="False") if condition["type"] == "Ready" else condition
                  for condition in pod["status"]["conditions"]]
    response = server.request("PATCH", "/api/v1/namespaces/%s/pods/%s/status" % (NAMESPACE, name),
                              {"status": {"conditions": conditions}},
                              content_type="application/strategic-merge-patch+json")
    assert response.status == 200, response
    assert not ready(response.json())
    wait_for(lambda: ready(server.request("GET", "/api/v1/namespaces/%s/pods/%s" % (NAMESPACE, name)).json()),
             "pod %s/%s to be Ready again: its container still passes its readiness probe" % (NAMESPACE, name),
             timeout=15, interval=0.2)
    wait_for(lambda: available(server, "echo", 2), "Deployment %s/echo Available again" % NAMESPACE, timeout=30)
