"""Pods that run for real (testenv.cluster.pods): the api_proxy role's sidecar with the role's defaults, probed at the
pod IP from outside the Pod as a kubelet probes it, and what a kubelet does when probes fail.

The control plane runs with pods="netns": no KWOK node; each Pod gets a network namespace, its containers run as
processes (the sidecar is the real proxy; the manager a stand-in), its probes come from the root namespace."""
import json
import os
import subprocess
import time
import urllib.request

import pytest

from testenv import REPO_ROOT
from testenv.client import wait_for
from testenv.cluster.pods import get_in_pod
from testenv.cluster.testing import start_cluster
from testenv.hcp import build

PLAYBOOK = os.path.join(REPO_ROOT, "tests", "integration", "proxy", "playbooks", "api_proxy.yml")
NAMESPACE = "hcp-role"  # the playbook's
SIDECAR = "kube-apiserver-proxy"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
LOOPBACK_PROBES = ('{"private_capi_proxy_liveness_probe": {"httpGet": {"path": "/healthz", "port": 8080}, '
                   '"periodSeconds": 1, "failureThreshold": 2}, "private_capi_proxy_readiness_probe": '
                   '{"httpGet": {"path": "/readyz", "port": 8080}, "periodSeconds": 1}, '
                   '"private_capi_proxy_wait_timeout": 0}')


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    started = start_cluster(tmp_path_factory.mktemp("netns-pods"), crds=build.crd_documents(), pods="netns")
    yield started
    assert started.stop() == 0, started.log()


def _post(server, path, body):
    response = server.request("POST", path, body)
    assert response.status == 201, response


@pytest.fixture(scope="module")
def workload(server):
    """An HCP namespace's cluster-api Deployment as HyperShift runs it: its service account bound to a Role on the
    CAPI groups; the manager is a stand-in (no build of its image here) that answers on its declared port."""
    _post(server, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    _post(server, "/api/v1/namespaces/%s/serviceaccounts" % NAMESPACE,
          {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "cluster-api", "namespace": NAMESPACE}})
    _post(server, RBAC + "/namespaces/%s/roles" % NAMESPACE, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "cluster-api", "namespace": NAMESPACE},
        "rules": [{"apiGroups": ["cluster.x-k8s.io"], "resources": ["*"], "verbs": ["*"]}]})
    _post(server, RBAC + "/namespaces/%s/rolebindings" % NAMESPACE, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "cluster-api", "namespace": NAMESPACE},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cluster-api"},
        "subjects": [{"kind": "ServiceAccount", "name": "cluster-api", "namespace": NAMESPACE}]})
    manager = {"name": "manager", "image": "registry.example/capi:1",
               "ports": [{"name": "healthz", "containerPort": 9440}],
               "readinessProbe": {"httpGet": {"path": "/readyz", "port": "healthz"}, "periodSeconds": 1}}
    _post(server, "/apis/apps/v1/namespaces/%s/deployments" % NAMESPACE, {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "cluster-api", "namespace": NAMESPACE, "labels": {"app": "cluster-api"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "cluster-api"}},
                 "template": {"metadata": {"labels": {"app": "cluster-api"}},
                              "spec": {"serviceAccountName": "cluster-api", "containers": [manager]}}}})
    wait_for(lambda: _available(server), "the cluster-api Deployment to be available", timeout=60, interval=0.2)
    return server


def _available(server):
    deployment = server.request("GET", "/apis/apps/v1/namespaces/%s/deployments/cluster-api" % NAMESPACE).json()
    status = deployment.get("status") or {}
    return (status.get("observedGeneration") == deployment["metadata"]["generation"]
            and status.get("updatedReplicas") == status.get("replicas") == status.get("availableReplicas") == 1)


def _pods(server):
    return [pod for pod in server.request("GET", "/api/v1/namespaces/%s/pods" % NAMESPACE).json()["items"]
            if not pod["metadata"].get("deletionTimestamp")]


def _sidecar_status(pod):
    return next(status for status in pod["status"].get("containerStatuses") or () if status["name"] == SIDECAR)


def run_role(server, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    command = [os.path.join(REPO_ROOT, ".venv", "bin", "ansible-playbook"), "-i", "localhost,", PLAYBOOK,
               "-e", "kubeconfig=%s" % server.kubeconfig, "-e", "proxy_state=present",
               "-e", '{"private_capi_proxy_deployments": ["cluster-api"]}'] + list(extra)
    result = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, "ansible-playbook failed:\n%s\n%s" % (result.stdout[-6000:], result.stderr[-3000:])


def _get(url, timeout=2):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.status, response.read()


def test_with_the_role_defaults_the_sidecar_probes_pass_at_the_pod_ip(workload):
    server = workload
    run_role(server)  # the role waits for the Deployment to be available
    assert _available(server)
    (pod,) = _pods(server)
    pod_ip = pod["status"]["podIP"]
    assert pod_ip.startswith("10.2"), pod["status"]
    status = _sidecar_status(pod)
    assert status["ready"] and status["restartCount"] == 0, status
    # what the kubelet sees at the pod IP: the metrics port answers the probes, the proxy port is loopback only
    assert _get("http://%s:9090/readyz" % pod_ip)[0] == 200
    assert _get("http://%s:9090/healthz" % pod_ip)[0] == 200
    with pytest.raises(OSError):
        _get("http://%s:8080/healthz" % pod_ip)
    # the workload's view: the sidecar on loopback reaches kube-apiserver at kubernetes.default.svc with the pod's
    # own service account (the role's kubeconfig ConfigMap and RBAC, the projected token)
    url = "http://127.0.0.1:8080/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/machines" % NAMESPACE
    code, body = get_in_pod(server, pod, url)
    assert code == 200, body
    assert json.loads(body)["apiVersion"] == "cluster.x-k8s.io/v1beta2"
    # a liveness period (10 s) and more later: still never restarted
    time.sleep(12)
    (pod,) = _pods(server)
    status = _sidecar_status(pod)
    assert status["ready"] and status["restartCount"] == 0, status


def test_probes_at_the_loopback_port_fail_and_the_kubelet_restarts_the_sidecar(workload):
    server = workload
    run_role(server, "-e", LOOPBACK_PROBES)

    def restarted():
        pods = [pod for pod in _pods(server) if any(container.get("livenessProbe", {}).get("httpGet", {}).get("port")
                                                    == 8080 for container in pod["spec"]["containers"])]
        statuses = [_sidecar_status(pod) for pod in pods if pod["status"].get("containerStatuses")]
        return [status for status in statuses if status["restartCount"] >= 1 and not status["ready"]]

    wait_for(restarted, "the sidecar probed at the loopback port to be restarted", timeout=60, interval=0.5)
    deployment = server.request("GET", "/apis/apps/v1/namespaces/%s/deployments/cluster-api" % NAMESPACE).json()
    assert deployment["status"].get("updatedReplicas") == 1 and deployment["status"].get("unavailableReplicas") == 1
    events = server.request("GET", "/api/v1/namespaces/%s/events?fieldSelector=reason%%3DUnhealthy" % NAMESPACE).json()
    assert any("Liveness probe failed" in event["message"] for event in events["items"]), events
    # the defaults again: the next rollout is available
    run_role(server)
    wait_for(lambda: _available(server) and len(_pods(server)) == 1, "the rollout back to the defaults", timeout=90)
    (pod,) = _pods(server)
    assert _sidecar_status(pod)["restartCount"] == 0
