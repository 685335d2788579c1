"""The stand-in kubelet (testenv.cluster.pods, hybrid mode) behaves like a kubelet where the test bed relies on it:
- it runs the Pods of a mapped image on every KWOK node, not only the first (issue 46: with two fake nodes the
  conversion shim's second replica stayed Pending, so the shim was never Available).

One control plane for the module: two KWOK nodes, and an image mapped to the stand-in process (testenv.cluster.standin)
so its Pods run for real. The test traffic goes to the pod IPs, inside the network namespaces the test bed made."""
import ipaddress
import subprocess
import sys
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
    wait_for(lambda: available(server, "echo", 2), "Deployment %s/echo to be Available with 2 replicas (testenv.cluster.pods: "
             "logs/netns-pods.log)" % NAMESPACE, timeout=90, interval=0.5)
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
    with urllib.request.urlopen("http://%s:%d/" % (pod_ip, PORT), timeout=2) as response:
        return response.status == 200


def processes(server, pod):
    """The pids in the Pod's network namespace (its containers' processes); empty when the namespace is gone."""
    netns = "%s-%s" % (server.cluster.pod_network.bridge, pod["metadata"]["uid"][:8])
    listed = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True, check=False)
    return set(listed.stdout.split())


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

