"""The api_proxy role against a real control plane: inject, idempotent re-run, check mode, exact removal."""
import copy
import os
import re
import subprocess

import pytest

from testenv import REPO_ROOT
from tests.integration.proxy.conftest import ROLE_IMAGES

PLAYBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "playbooks", "api_proxy.yml")
NAMESPACE = "hcp-role"
SIDECAR = "kube-apiserver-proxy"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def run_playbook(stack, state, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0")
    command = [os.path.join(REPO_ROOT, ".venv", "bin", "ansible-playbook"), "-i", "localhost,", PLAYBOOK,
               "-e", "kubeconfig=%s" % stack.server.kubeconfig, "-e", "proxy_state=%s" % state] + list(extra)
    result = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    recap = re.search(r"localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", result.stdout)
    assert result.returncode == 0 and recap, "ansible-playbook failed:\n%s\n%s" % (result.stdout[-6000:], result.stderr[-3000:])
    return int(recap.group(2))


def _post(stack, path, body):
    response = stack.server.request("POST", path, body)
    assert response.status == 201, response


def _deployment(name, containers, account, volumes=None):
    spec = {"serviceAccountName": account, "containers": containers}
    if volumes:
        spec["volumes"] = volumes
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


@pytest.fixture(scope="module")
def workloads(stack):
    _post(stack, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    for account in ("cluster-api", "capi-provider"):
        _post(stack, "/api/v1/namespaces/%s/serviceaccounts" % NAMESPACE,
              {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": NAMESPACE}})
    # the certs volume's Secret: a kubelet starts no container of a Pod whose Secret volume is missing (the sidecar's
    # Pods run for real here: a real node, testenv.cluster.node)
    _post(stack, "/api/v1/namespaces/%s/secrets" % NAMESPACE, {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "capi-certs", "namespace": NAMESPACE},
        "data": {"tls.crt": "", "tls.key": ""}})
    _post(stack, RBAC + "/namespaces/%s/roles" % NAMESPACE, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "cluster-api", "namespace": NAMESPACE},
        "rules": [{"apiGroups": ["cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io", ""],
                   "resources": ["*"], "verbs": ["*"]},
                  {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]})
    _post(stack, RBAC + "/namespaces/%s/rolebindings" % NAMESPACE, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "cluster-api", "namespace": NAMESPACE},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cluster-api"},
        "subjects": [{"kind": "ServiceAccount", "name": "cluster-api", "namespace": NAMESPACE}]})
    _post(stack, RBAC + "/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "capi-provider-reader"},
        "rules": [{"apiGroups": ["cluster.x-k8s.io"], "resources": ["clusters", "machines"], "verbs": ["get", "list", "watch"]}]})
    _post(stack, RBAC + "/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "capi-provider-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "capi-provider-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "capi-provider", "namespace": NAMESPACE}]})
    _post(stack, "/apis/apps/v1/namespaces/%s/deployments" % NAMESPACE, _deployment("cluster-api", [
        {"name": "manager", "image": ROLE_IMAGES[0], "env": [{"name": "FOO", "value": "bar"}],
         "volumeMounts": [{"name": "certs", "mountPath": "/certs"}]}], "cluster-api",
        volumes=[{"name": "certs", "secret": {"secretName": "capi-certs"}}]))
    _post(stack, "/apis/apps/v1/namespaces/%s/deployments" % NAMESPACE, _deployment("capi-provider", [
        {"name": "manager", "image": ROLE_IMAGES[1]},
        {"name": "token-minter", "image": ROLE_IMAGES[2], "env": [{"name": "KUBECONFIG", "value": "/other"}]}],
        "capi-provider"))
    return stack


def _read(stack, path):
    response = stack.server.request("GET", path)
    return response.status, (response.json() if response.status == 200 else None)


def _essence(deployment):
    """What the role may touch and must restore: labels, annotations (minus the controller's revision), spec."""
    essence = copy.deepcopy({"labels": deployment["metadata"].get("labels"),
                             "annotations": deployment["metadata"].get("annotations") or {}, "spec": deployment["spec"]})
    essence["annotations"].pop("deployment.kubernetes.io/revision", None)
    return essence


def test_role_injects_is_idempotent_and_removes_exactly(workloads):
    stack = workloads
    deployments_path = "/apis/apps/v1/namespaces/%s/deployments/" % NAMESPACE
    before = {name: _essence(_read(stack, deployments_path + name)[1]) for name in ("cluster-api", "capi-provider")}

    assert run_playbook(stack, "present", "--check") > 0
    for name in before:  # check mode changed nothing
        assert _essence(_read(stack, deployments_path + name)[1]) == before[name]

    assert run_playbook(stack, "present") > 0
    manager = _read(stack, deployments_path + "cluster-api")[1]["spec"]["template"]["spec"]
    names = [container["name"] for container in manager["containers"]]
    assert names == [SIDECAR, "manager"]  # the sidecar first: its postStart hook holds the manager until it is ready
    sidecar = manager["containers"][0]
    assert "--listen=127.0.0.1:8080" in sidecar["args"] and "--use-own-credentials" in sidecar["args"]
    assert sidecar["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert sidecar["lifecycle"]["postStart"]["exec"]["command"][:3] == ["capi-proxy", "wait-ready", "--port=8080"]
    env = {item["name"]: item.get("value") for item in manager["containers"][1]["env"]}
    assert env == {"FOO": "bar", "KUBECONFIG": "/etc/capi-proxy/kubeconfig"}
    assert [volume["name"] for volume in manager["volumes"]] == ["certs", "capi-proxy-kubeconfig"]
    provider = _read(stack, deployments_path + "capi-provider")[1]["spec"]["template"]["spec"]
    for container in provider["containers"][1:]:
        assert {"name": "KUBECONFIG", "value": "/etc/capi-proxy/kubeconfig"} in container["env"]
    config_map = _read(stack, "/api/v1/namespaces/%s/configmaps/capi-proxy-kubeconfig" % NAMESPACE)[1]
    assert "http://localhost:8080" in config_map["data"]["kubeconfig"]
    role = _read(stack, RBAC + "/namespaces/%s/roles/private-capi-proxy-cluster-api" % NAMESPACE)[1]
    assert role["rules"] == [{"apiGroups": ["cluster.hypershift.openshift.io", "infrastructure.cluster.hypershift.openshift.io"],
                              "resources": ["*"], "verbs": ["*"]}]
    cluster_role = _read(stack, RBAC + "/clusterroles/private-capi-proxy-%s-capi-provider" % NAMESPACE)[1]
    assert cluster_role["rules"][0]["apiGroups"] == ["cluster.hypershift.openshift.io"]
    assert _read(stack, RBAC + "/clusterrolebindings/private-capi-proxy-crd-reader-%s" % NAMESPACE)[0] == 200

    assert run_playbook(stack, "present") == 0  # idempotent

    assert run_playbook(stack, "absent") > 0
    for name in before:
        assert _essence(_read(stack, deployments_path + name)[1]) == before[name]
    assert _read(stack, "/api/v1/namespaces/%s/configmaps/capi-proxy-kubeconfig" % NAMESPACE)[0] == 404
    assert _read(stack, RBAC + "/namespaces/%s/roles/private-capi-proxy-cluster-api" % NAMESPACE)[0] == 404
    assert _read(stack, RBAC + "/clusterroles/private-capi-proxy-%s-capi-provider" % NAMESPACE)[0] == 404
    assert _read(stack, RBAC + "/clusterroles/private-capi-proxy-crd-reader-%s" % NAMESPACE)[0] == 404
    assert run_playbook(stack, "absent") == 0
