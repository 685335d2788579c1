"""The conversion_shim role, and the private_crds role deploying it, against the real control plane.

The server is this module's own `bare_cluster` (no CRDs at the start) with the namespace `hypershift` and two standard
CAPI CRDs that serve v1beta1 and v1beta2 (so their twins convert by webhook). The tests run in file order on that one
server: check mode writes nothing; the role creates every object and the Deployment becomes Available (the test bed
runs the shim's Pods for real: a real node, testenv.cluster.node); a second run changes nothing; the Secret's CA verifies the serving
certificate for the Service's DNS name; private_crds writes the shim's Service and CA into the twins, and
kube-apiserver converts private objects through it; absent is refused while a twin names the Service and removes
everything once none does.
"""
import base64
import os
import re
import socket
import ssl
import subprocess
import sys
import time

import pytest
import yaml

from testenv import REPO_ROOT, proxy_stack
from testenv.cluster.testing import install_crds, pod_is_ready
from testenv.module_runner import run_module
from testenv.upstream import CAPI_CRDS

pytestmark = pytest.mark.slow

NAMESPACE = "hypershift"
NAME = "capi-conversion-shim"
SERVICE = "capi-conversion-webhook-shim"
SECRET = "capi-conversion-shim-tls"
CLUSTER_ROLE = "capi-conversion-shim-hypershift"
SERVICE_DNS = "%s.%s.svc" % (SERVICE, NAMESPACE)
STANDARD = ("cluster.x-k8s.io_machines.yaml", "cluster.x-k8s.io_clusters.yaml")
TWINS = ("machines.cluster.hypershift.openshift.io", "clusters.cluster.hypershift.openshift.io")
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
ANSIBLE_PLAYBOOK = os.path.join(REPO_ROOT, ".venv", "bin", "ansible-playbook")
RECAP_RE = re.compile(r"^localhost\s*:\s*(?P<counts>(?:\w+=\d+\s*)+)$", re.MULTILINE)
# every object the role makes: (what, path)
OBJECTS = [
    ("Deployment", "/apis/apps/v1/namespaces/%s/deployments/%s" % (NAMESPACE, NAME)),
    ("Service", "/api/v1/namespaces/%s/services/%s" % (NAMESPACE, SERVICE)),
    ("PodDisruptionBudget", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets/%s" % (NAMESPACE, NAME)),
    ("ServiceAccount", "/api/v1/namespaces/%s/serviceaccounts/%s" % (NAMESPACE, NAME)),
    ("ConfigMap", "/api/v1/namespaces/%s/configmaps/%s-kubeconfig" % (NAMESPACE, NAME)),
    ("Secret", "/api/v1/namespaces/%s/secrets/%s" % (NAMESPACE, SECRET)),
    ("Secret (CA)", "/api/v1/namespaces/%s/secrets/%s-ca" % (NAMESPACE, SECRET)),
    ("ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles/%s" % CLUSTER_ROLE),
    ("ClusterRoleBinding", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/%s" % CLUSTER_ROLE),
]
PLAYBOOK = """
- name: {role} on the local management cluster
  hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/hypershift.private_capi.private_capi:
      kubeconfig: "{{{{ kubeconfig }}}}"
  tasks:
    - name: The role
      ansible.builtin.include_role:
        name: hypershift.private_capi.{role}
"""


@pytest.fixture(scope="module")
def server(bare_cluster):
    crds = []
    for name in STANDARD:
        with open(os.path.join(CAPI_CRDS, name)) as handle:
            crds.append(yaml.safe_load(handle))
    with bare_cluster.api_client() as api:
        install_crds(api, crds)
    proxy_stack.create_namespace(bare_cluster, NAMESPACE)
    return bare_cluster


@pytest.fixture(scope="module")
def playbooks(tmp_path_factory):
    """A playbook per role ({role}.yml), credentials from one module_defaults entry."""
    directory = str(tmp_path_factory.mktemp("shim-playbooks"))
    for role in ("conversion_shim", "private_crds"):
        with open(os.path.join(directory, role + ".yml"), "w") as handle:
            handle.write(PLAYBOOK.format(role=role))
    return directory


@pytest.fixture
def play(server, playbooks):
    """play(role, *extra vars, check=False): (return code, recap counts, output) of one ansible-playbook run."""
    return lambda role, *extra, check=False: _play(server, playbooks, role, *extra, check=check)


def _play(server, playbooks, role, *extra, check=False):
    """(return code, recap counts, output) of one ansible-playbook run of the role."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    command = [ANSIBLE_PLAYBOOK, "-i", "localhost,", os.path.join(playbooks, role + ".yml"),
               "-e", "kubeconfig=%s" % server.kubeconfig, "-e", "ansible_python_interpreter=%s" % sys.executable,
               "-e", "private_capi_shim_wait_timeout=120"]
    for item in extra:
        command += ["-e", item]
    if check:
        command += ["--check", "--diff"]
    completed = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600,
                               check=False)
    output = completed.stdout + completed.stderr
    match = RECAP_RE.search(completed.stdout)
    assert match, output[-6000:]
    counts = {key: int(value) for key, value in (item.split("=") for item in match.group("counts").split())}
    return completed.returncode, counts, output


def get(server, path):
    response = server.request("GET", path)
    return response.json() if response.status == 200 else None


def existing(server):
    return [what for what, path in OBJECTS if get(server, path) is not None]


def test_check_mode_writes_nothing(server, play):
    code, counts, output = play("conversion_shim", check=True)
    assert code == 0 and counts["changed"] > 0, output[-6000:]
    assert existing(server) == [], output[-6000:]


def test_the_role_creates_every_object_and_waits_until_the_deployment_is_available(server, play):
    code, counts, output = play("conversion_shim")
    assert code == 0 and counts["changed"] > 0, output[-6000:]
    assert existing(server) == [what for what, _path in OBJECTS]

    deployment = get(server, OBJECTS[0][1])
    assert deployment["status"]["availableReplicas"] == deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["image"] == "quay.io/hypershift/capi-proxy:1.0.0"
    assert container["args"][:4] == ["shim", "--listen=0.0.0.0:9443", "--tls-cert=/tls/tls.crt",
                                     "--tls-key=/tls/tls.key"]
    agent = "capi-provider.agent-install.openshift.io=capi-provider.agent-install.hypershift.openshift.io"
    assert "--extra-group=" + agent in container["args"] and "--standard-groups" not in container["args"]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "https", "scheme": "HTTPS"}
    assert {"name": "https", "containerPort": 9443, "protocol": "TCP"} in container["ports"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["serviceAccountName"] == NAME
    anti = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert anti["topologyKey"] == "kubernetes.io/hostname"
    assert pod["volumes"][0] == {"name": "tls", "secret": {"secretName": SECRET, "defaultMode": 420}}

    service = get(server, OBJECTS[1][1])
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["ports"][0]["port"] == 443 and service["spec"]["ports"][0]["targetPort"] == "https"
    assert "annotations" not in service["metadata"]  # no OpenShift service CA here: the module's own CA
    assert get(server, OBJECTS[2][1])["spec"]["minAvailable"] == 1
    rules = get(server, OBJECTS[7][1])["rules"]
    assert rules == [{"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
                      "verbs": ["list"]}]
    binding = get(server, OBJECTS[8][1])
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]
    kubeconfig = yaml.safe_load(get(server, OBJECTS[4][1])["data"]["upstream.kubeconfig"])
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "https://kubernetes.default.svc"
    assert kubeconfig["users"][0]["user"] == {"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}


def test_a_second_run_changes_nothing_and_check_mode_agrees(server, play):
    template = get(server, OBJECTS[0][1])["spec"]["template"]
    code, counts, output = play("conversion_shim")
    assert code == 0 and counts["changed"] == 0, output[-6000:]
    code, counts, output = play("conversion_shim", check=True)
    assert code == 0 and counts["changed"] == 0, output[-6000:]
    assert get(server, OBJECTS[0][1])["spec"]["template"] == template


def _tls_handshake(port, ca_pem, server_name):
    context = ssl.create_default_context(cadata=ca_pem)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname=server_name) as tls:
            tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % server_name.encode())
            return tls.recv(200).decode("ascii", "replace")


def test_the_secret_ca_verifies_the_serving_certificate_for_the_service_name(server, play, tmp_path):
    secret = get(server, OBJECTS[5][1])
    assert secret["type"] == "kubernetes.io/tls" and sorted(secret["data"]) == ["ca.crt", "tls.crt", "tls.key"]
    files = {}
    for key in ("tls.crt", "tls.key"):
        files[key] = str(tmp_path / key)
        with open(files[key], "wb") as handle:
            handle.write(base64.b64decode(secret["data"][key]))
    ca_pem = base64.b64decode(secret["data"]["ca.crt"]).decode()
    shim = proxy_stack.start_shim(tmp_path, files["tls.crt"], files["tls.key"], ca_pem, wait=False)
    try:
        port = int(shim.url.rsplit(":", 1)[1])
        deadline = time.monotonic() + 30
        while True:
            try:
                answer = _tls_handshake(port, ca_pem, SERVICE_DNS)
                break
            except ConnectionRefusedError:
                assert shim.alive() and time.monotonic() < deadline, shim.log()
                time.sleep(0.1)
        assert answer.startswith("HTTP/1.1 200"), answer
        assert _tls_handshake(port, ca_pem, SERVICE_DNS + ".cluster.local").startswith("HTTP/1.1 200")
        with pytest.raises(ssl.SSLCertVerificationError):
            _tls_handshake(port, ca_pem, "other.%s.svc" % NAMESPACE)
    finally:
        shim.stop()


def test_private_crds_deploy_the_shim_first_and_write_its_service_and_ca_into_the_twins(server, play):
    code, counts, output = play("private_crds", "private_capi_crds_wait_timeout=60")
    assert code == 0, output[-6000:]
    ca_bundle = get(server, OBJECTS[5][1])["data"]["ca.crt"]
    for name in TWINS:
        client_config = get(server, "%s/%s" % (CRD_PATH, name))["spec"]["conversion"]["webhook"]["clientConfig"]
        assert client_config == {"service": {"namespace": NAMESPACE, "name": SERVICE, "path": "/convert", "port": 443},
                                 "caBundle": ca_bundle}, name
    code, counts, output = play("private_crds", "private_capi_crds_wait_timeout=60")
    assert code == 0 and counts["changed"] == 0, output[-6000:]


def test_kube_apiserver_converts_the_private_objects_through_the_shim_it_deployed(server):
    """The shim's Pods run for real here (a real node, testenv.cluster.node): a private Cluster
    written at v1beta2 (its storage version) reads at v1beta1 through the Service, the CA of the twin verifying it."""
    _converted_through_the_shim(server)


def _converted_through_the_shim(server):
    base = "/apis/cluster.hypershift.openshift.io/%s/namespaces/" + NAMESPACE + "/clusters"
    body = {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": "through-the-shim", "namespace": NAMESPACE},
            "spec": {"clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]}}}}
    created = server.request("POST", base % "v1beta2", body)
    assert created.status == 201, created
    try:
        read = server.request("GET", (base % "v1beta1") + "/through-the-shim")
        assert read.status == 200, read
        assert read.json()["apiVersion"] == "cluster.hypershift.openshift.io/v1beta1"
        assert read.json()["spec"]["clusterNetwork"]["pods"]["cidrBlocks"] == ["192.168.0.0/16"]
        assert not server.conversion_failures(), server.conversion_failures()[:5]
    finally:
        server.request("DELETE", (base % "v1beta2") + "/through-the-shim")


def _shim_pods(server):
    selector = get(server, OBJECTS[0][1])["spec"]["selector"]["matchLabels"]  # the Deployment's
    query = ",".join("%s%%3D%s" % item for item in sorted(selector.items()))
    return [pod for pod in get(server, "/api/v1/namespaces/%s/pods?labelSelector=%s" % (NAMESPACE, query))["items"]
            if not pod["metadata"].get("deletionTimestamp")]


def test_the_two_replicas_run_on_two_nodes_and_the_budget_keeps_one_through_evictions(server):
    """On the module's two real nodes the shim's replicas spread (the role's preferred anti-affinity, decided by the
    real scheduler), and its PodDisruptionBudget (minAvailable 1), enforced by kube-apiserver's eviction API and the
    disruption controller, lets a drain evict one replica and refuses the second until the first is replaced."""
    pods = _shim_pods(server)
    assert len(pods) == 2 and all(pod_is_ready(pod) for pod in pods), pods
    assert len({pod["spec"]["nodeName"] for pod in pods}) == 2, [pod["spec"]["nodeName"] for pod in pods]

    def evict(pod):
        return server.request("POST", "/api/v1/namespaces/%s/pods/%s/eviction" % (NAMESPACE, pod["metadata"]["name"]),
                              {"apiVersion": "policy/v1", "kind": "Eviction",
                               "metadata": {"name": pod["metadata"]["name"], "namespace": NAMESPACE}})
    first = evict(pods[0])
    assert first.status == 201, first
    second = evict(pods[1])
    assert second.status == 429, second  # the budget: one replica must stay
    deadline = time.monotonic() + 120
    while not (len(_shim_pods(server)) == 2 and all(pod_is_ready(pod) for pod in _shim_pods(server))):
        assert time.monotonic() < deadline, "the evicted replica was not replaced: %s" % _shim_pods(server)
        time.sleep(0.5)
    _converted_through_the_shim(server)


def test_private_crds_refuse_webhook_settings_that_disagree_with_the_shim(server, play):
    code, _counts, output = play("private_crds", "private_capi_crds_conversion_webhook_service_namespace=other")
    assert code != 0
    assert "private_capi_crds_conversion_webhook_service_namespace is other, the shim's is hypershift" in output
    assert get(server, "%s/%s" % (CRD_PATH, TWINS[0]))["spec"]["conversion"]["webhook"]["clientConfig"]["service"][
        "namespace"] == NAMESPACE


def test_absent_is_refused_while_a_crd_names_the_service(server, play):
    code, _counts, output = play("conversion_shim", "private_capi_shim_state=absent")
    assert code != 0
    refusal = "CRDs %s convert through Service %s/%s" % (", ".join(sorted(TWINS)), NAMESPACE, SERVICE)
    assert refusal in output, output[-4000:]
    assert "Nothing was removed" in output
    assert existing(server) == [what for what, _path in OBJECTS]
    code, counts, output = play("conversion_shim", "private_capi_shim_state=absent",
                                "private_capi_shim_keep_when_in_use=true")
    assert code == 0 and counts["changed"] == 0 and "stays" in output, output[-4000:]


def test_absent_removes_everything_once_no_crd_names_the_service(server, play):
    removed = run_module("private_crd_render", dict(kubeconfig=server.kubeconfig, from_cluster=True, state="absent",
                                                    wait=True, wait_timeout=60))
    assert not removed.failed, removed.get("msg")
    code, counts, output = play("conversion_shim", "private_capi_shim_state=absent", check=True)
    assert code == 0 and counts["changed"] > 0, output[-6000:]
    assert existing(server) == [what for what, _path in OBJECTS]  # check mode removed nothing
    code, counts, output = play("conversion_shim", "private_capi_shim_state=absent")
    assert code == 0 and counts["changed"] > 0, output[-6000:]
    deadline = time.monotonic() + 60
    while existing(server) and time.monotonic() < deadline:  # the Deployment goes once the garbage collector is done
        time.sleep(0.5)
    assert existing(server) == []
    code, counts, output = play("conversion_shim", "private_capi_shim_state=absent")
    assert code == 0 and counts["changed"] == 0, output[-6000:]
