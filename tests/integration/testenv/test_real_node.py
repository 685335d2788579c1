"""The test bed's real node (testenv/cluster/node.py): kubelet v1.34.4 built from the same module as kube-apiserver,
containerd and runc from Debian, the CNI bridge and kube-proxy, in a network and a mount namespace of its own.

What a kubelet does (and the imitation of one the tests ran on until 2026-12-02 did not): the image's USER (the proxy image's 1001) under runAsNonRoot with a
read-only root and no capabilities, the kubernetes Service's name resolved (CoreDNS) and its ClusterIP routed to
kube-apiserver (kube-proxy), a memory limit enforced by the kernel (OOMKilled). Then the node stops and leaves nothing
on the host: no network namespace, veth, cgroup or mount of its own. A machine that cannot run the node (not root)
is told so by hack/node-prereqs.sh, which `make test` and `make demo` run first.

The proxy image is the one a user builds (`make image`, hack/image-prereqs.sh; testenv.cluster.images.proxy_archive),
side-loaded with `ctr images import` from `podman save`: nothing is pulled.
"""
import json
import os
import subprocess
import time

import pytest

from testenv import REPO_ROOT
from testenv.cluster import images
from testenv.cluster.testing import pod_is_ready, start_cluster

IMAGE = images.proxy_image()
NAMESPACE = "default"
# what the container reports in its termination message: who it runs as, and the API server's answer through the
# kubernetes Service (the in-cluster address the kubelet puts in its environment)
REPORT = """
import json, os, socket, ssl, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
url = "https://%s:%s/version" % (os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
resolved = socket.gethostbyname("kubernetes.default.svc")
request = urllib.request.Request(url, headers={"Authorization": "Bearer " + open(sa + "token").read()})
version = json.load(urllib.request.urlopen(request, context=ssl.create_default_context(cafile=sa + "ca.crt")))
try:
    open("/written", "w")
    writable = True
except OSError:
    writable = False
open("/dev/termination-log", "w").write(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "server": url,
                                                    "resolved": resolved,
                                                    "gitVersion": version["gitVersion"], "root_writable": writable}))
"""


def _run(command, timeout=1800):
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT, check=False)
    assert done.returncode == 0, (command, done.stdout[-3000:], done.stderr[-3000:])
    return done


@pytest.fixture(scope="module")
def image_archive():
    _run(["bash", os.path.join(REPO_ROOT, "hack", "node-prereqs.sh")])
    return images.proxy_archive()


@pytest.fixture(scope="module")
def server(tmp_path_factory, image_archive):
    started = start_cluster(tmp_path_factory.mktemp("real-node"), pods="node", nodes=2, node_images=[image_archive])
    nodes = list(started.cluster.real_nodes)
    netns_before = set(os.listdir("/run/netns"))
    yield started
    assert started.stop() == 0, started.log()
    # nothing of the nodes is left on the host: their namespaces, veths, cgroups, mounts, and no Pod's netns file
    for node in nodes:
        assert node.netns not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert subprocess.run(["ip", "link", "show", node.host_veth], capture_output=True).returncode != 0
        assert not os.path.exists("/sys/fs/cgroup/memory/" + node.netns)
        with open("/proc/self/mountinfo") as mounts:
            assert str(node.state) not in mounts.read()
    assert not {name for name in os.listdir("/run/netns") if name.startswith("cni-")} - netns_before


def _pod(name, spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": dict({"restartPolicy": "Never", "automountServiceAccountToken": True}, **spec)}


def _finished(server, name, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = server.request("GET", "/api/v1/namespaces/%s/pods/%s" % (NAMESPACE, name)).json()
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return pod
        time.sleep(0.5)
    raise AssertionError("Pod %s did not finish in %ss: %s" % (name, timeout, json.dumps(pod.get("status"))[:2000]))


def _create(server, pod):
    response = server.request("POST", "/api/v1/namespaces/%s/pods" % NAMESPACE, pod)
    assert response.status == 201, response


def test_the_nodes_are_kubelets_with_containerd(server):
    nodes = server.request("GET", "/api/v1/nodes").json()["items"]
    assert sorted(node["metadata"]["name"] for node in nodes) == ["node-0", "node-1"]
    for node in nodes:
        info = node["status"]["nodeInfo"]
        assert info["kubeletVersion"] == "v1.34.4" and info["containerRuntimeVersion"].startswith("containerd://")
        assert not any(key.startswith("kwok.x-k8s.io") for key in node["metadata"].get("annotations") or {})
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready[0]["status"] == "True", ready


def test_two_replicas_spread_over_the_two_nodes(server):
    """Each node has its own containerd, cgroup root, Pod subnet and ports: a Deployment whose replicas must not
    share a node (required anti-affinity, as the conversion shim's two replicas prefer) runs one on each."""
    labels = {"app": "spread"}
    response = server.request("POST", "/apis/apps/v1/namespaces/%s/deployments" % NAMESPACE, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "spread", "namespace": NAMESPACE},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}]}},
            "containers": [{"name": "pause", "image": images.PAUSE_IMAGE}]}}}})
    assert response.status == 201, response
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pods = server.request("GET", "/api/v1/namespaces/%s/pods?labelSelector=app%%3Dspread" % NAMESPACE).json()["items"]
        ready = [pod for pod in pods if pod_is_ready(pod)]
        if len(ready) == 2:
            break
        time.sleep(0.5)
    assert sorted(pod["spec"]["nodeName"] for pod in ready) == ["node-0", "node-1"], pods
    subnets = sorted(".".join(pod["status"]["podIP"].split(".")[:3]) for pod in ready)
    assert subnets[0] != subnets[1], "each node hands out its own Pod subnet: %s" % subnets


def test_the_proxy_image_runs_as_its_user_with_no_privilege_and_reaches_the_api_through_the_service(server):
    """The image's USER 1001 under runAsNonRoot, a read-only root and no capability; KUBERNETES_SERVICE_HOST is the
    kubernetes Service's ClusterIP, routed by kube-proxy in the node's namespace to kube-apiserver."""
    _create(server, _pod("as-shipped", {"containers": [{
        "name": "probe", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
        "command": ["/opt/capi-proxy/bin/python", "-c", REPORT],
        "securityContext": {"runAsNonRoot": True, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]}}}]}))
    pod = _finished(server, "as-shipped")
    status = pod["status"]["containerStatuses"][0]
    assert pod["status"]["phase"] == "Succeeded", status
    assert status["containerID"].startswith("containerd://")
    report = json.loads(status["state"]["terminated"]["message"])
    assert report["uid"] == 1001 and report["root_writable"] is False, report
    assert report["server"] == "https://10.96.0.1:443/version" and report["gitVersion"] == "v1.34.4", report
    assert report["resolved"] == "10.96.0.1", "the cluster DNS (CoreDNS on the node) names the kubernetes Service"


def test_a_memory_limit_is_enforced_by_the_kernel(server):
    _create(server, _pod("greedy", {"containers": [{
        "name": "greedy", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
        "command": ["/opt/capi-proxy/bin/python", "-c", "import time; b = bytearray(200 << 20); time.sleep(5)"],
        "resources": {"limits": {"memory": "64Mi", "cpu": "500m"}, "requests": {"memory": "64Mi", "cpu": "50m"}}}]}))
    pod = _finished(server, "greedy")
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert pod["status"]["phase"] == "Failed" and terminated["reason"] == "OOMKilled", terminated


def test_without_root_the_prerequisites_say_what_is_missing_and_change_nothing():
    """hack/node-prereqs.sh (`make node-binaries`, before `make test` and `make demo`) as a user who is not root:
    exit 1, a message naming what is missing and how to get it, and nothing installed or set up."""
    netns = lambda: set(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else set()  # noqa: E731
    netns_before = netns()
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "bash",
                           os.path.join(REPO_ROOT, "hack", "node-prereqs.sh")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "run as root (the kubelet, containerd and runc need it)" in done.stderr, done.stderr
    assert "installing" not in done.stdout
    assert netns() == netns_before
