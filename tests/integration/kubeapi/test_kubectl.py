"""kubectl (subprocess, default flags) against the local API server."""
import json
import time

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
"""

CONFIGMAP = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: default
data:
  mode: %s
"""


def test_version_and_api_resources(kubeapi):
    version = json.loads(kubeapi.kubectl("version", "-o", "json").stdout)
    assert version["serverVersion"]["major"] == "1"
    resources = kubeapi.kubectl("api-resources", "-o", "name").stdout.split()
    for name in ("configmaps", "deployments.apps", "customresourcedefinitions.apiextensions.k8s.io",
                 "leases.coordination.k8s.io", "roles.rbac.authorization.k8s.io", "events.events.k8s.io"):
        assert name in resources


def test_apply_client_side_then_update(kubeapi):
    kubeapi.kubectl("apply", "-f", "-", input=CONFIGMAP % "one")
    first = kubeapi.kubectl_json("get", "configmap", "settings")
    assert first["data"] == {"mode": "one"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in first["metadata"]["annotations"]
    result = kubeapi.kubectl("apply", "-f", "-", input=CONFIGMAP % "two")
    assert "configured" in result.stdout
    second = kubeapi.kubectl_json("get", "configmap", "settings")
    assert second["data"] == {"mode": "two"}
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    unchanged = kubeapi.kubectl("apply", "-f", "-", input=CONFIGMAP % "two")
    assert "unchanged" in unchanged.stdout
    assert kubeapi.kubectl_json("get", "configmap", "settings")["metadata"]["resourceVersion"] == \
        second["metadata"]["resourceVersion"]


def test_apply_server_side_and_conflict(kubeapi):
    manifest = CONFIGMAP.replace("settings", "ssa") % "a"
    kubeapi.kubectl("apply", "--server-side", "-f", "-", input=manifest)
    managers = [m["manager"] for m in kubeapi.kubectl_json("get", "cm", "ssa", "--show-managed-fields")["metadata"]["managedFields"]]
    assert "kubectl" in managers
    other = kubeapi.kubectl("apply", "--server-side", "--field-manager", "other", "-f", "-",
                            input=CONFIGMAP.replace("settings", "ssa") % "b", check=False)
    assert other.returncode != 0 and "conflict" in other.stderr.lower()
    kubeapi.kubectl("apply", "--server-side", "--field-manager", "other", "--force-conflicts", "-f", "-",
                    input=CONFIGMAP.replace("settings", "ssa") % "b")
    assert kubeapi.kubectl_json("get", "cm", "ssa")["data"]["mode"] == "b"


def test_patch_label_annotate(kubeapi):
    kubeapi.kubectl("create", "configmap", "patchme", "--from-literal=a=1")
    kubeapi.kubectl("patch", "configmap", "patchme", "-p", '{"data":{"b":"2"}}')
    kubeapi.kubectl("patch", "configmap", "patchme", "--type=merge", "-p", '{"data":{"c":"3"}}')
    kubeapi.kubectl("patch", "configmap", "patchme", "--type=json", "-p", '[{"op":"remove","path":"/data/a"}]')
    kubeapi.kubectl("label", "configmap", "patchme", "tier=backend")
    kubeapi.kubectl("annotate", "configmap", "patchme", "owner=team-a")
    obj = kubeapi.kubectl_json("get", "configmap", "patchme")
    assert obj["data"] == {"b": "2", "c": "3"}
    assert obj["metadata"]["labels"] == {"tier": "backend"}
    assert obj["metadata"]["annotations"]["owner"] == "team-a"
    listed = kubeapi.kubectl("get", "configmaps", "-l", "tier=backend", "-o", "name").stdout.split()
    assert listed == ["configmap/patchme"]
    bad = kubeapi.kubectl("label", "configmap", "patchme", "bad key=x", check=False)
    assert bad.returncode != 0


def test_deployment_wait_scale_and_pods(kubeapi):
    kubeapi.kubectl("apply", "-f", "-", input=DEPLOYMENT)
    kubeapi.kubectl("wait", "--for=condition=Available", "deployment/web", "--timeout=20s")
    kubeapi.kubectl("rollout", "status", "deployment/web", "--timeout=20s")
    pods = kubeapi.kubectl_json("get", "pods", "-l", "app=web")["items"]
    assert len(pods) == 2
    assert all(p["metadata"]["name"].startswith("web-") and p["metadata"]["labels"]["pod-template-hash"]
               for p in pods)
    kubeapi.kubectl("scale", "deployment/web", "--replicas=3")
    kubeapi.kubectl("wait", "--for=jsonpath={.status.availableReplicas}=3", "deployment/web", "--timeout=20s")
    kubeapi.kubectl("scale", "deployment/web", "--replicas=1")
    kubeapi.kubectl("wait", "--for=jsonpath={.status.replicas}=1", "deployment/web", "--timeout=20s")
    deadline = time.monotonic() + 20
    while len(kubeapi.kubectl_json("get", "pods", "-l", "app=web")["items"]) != 1:
        assert time.monotonic() < deadline, "scaled-down pods were not removed after their grace delay"
        time.sleep(0.2)
    table = kubeapi.kubectl("get", "deployment", "web").stdout
    assert "READY" in table and "1/1" in table


def test_delete_and_wait(kubeapi):
    kubeapi.kubectl("create", "configmap", "doomed")
    result = kubeapi.kubectl("delete", "configmap", "doomed")
    assert 'configmap "doomed" deleted' in result.stdout
    missing = kubeapi.kubectl("get", "configmap", "doomed", check=False)
    assert missing.returncode != 0
    assert 'configmaps "doomed" not found' in missing.stderr


def test_token_can_i_whoami(kubeapi):
    token = kubeapi.kubectl("create", "token", "default").stdout.strip()
    assert token.count(".") == 2
    who = kubeapi.kubectl("auth", "whoami", "-o", "json", token=token)
    assert json.loads(who.stdout)["status"]["userInfo"]["username"] == "system:serviceaccount:default:default"
    assert kubeapi.kubectl("auth", "can-i", "create", "pods").stdout.strip() == "yes"
    denied = kubeapi.kubectl("auth", "can-i", "create", "pods", token=kubeapi.token_for("alice"), check=False)
    assert denied.stdout.strip() == "no"
    forbidden = kubeapi.kubectl("get", "pods", token=kubeapi.token_for("alice"), check=False)
    assert 'User "alice" cannot list resource "pods" in API group "" in the namespace "default"' in \
        forbidden.stderr
    kubeapi.kubectl("create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice")
    assert kubeapi.kubectl("auth", "can-i", "list", "pods", token=kubeapi.token_for("alice")).stdout.strip() == \
        "yes"
    kubeapi.kubectl("get", "pods", token=kubeapi.token_for("alice"))


def test_crd_printer_columns_and_explainable_resources(kubeapi_capi):
    server = kubeapi_capi
    server.kubectl("apply", "-f", "-", input="""
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {name: md-0, namespace: default}
spec:
  clusterName: prod
  replicas: 2
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      clusterName: prod
      version: v1.31.0
      bootstrap: {dataSecretName: boot}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachineTemplate, name: t}
""")
    table = server.kubectl("get", "machinedeployments").stdout
    header = table.splitlines()[0].split()
    assert header[:3] == ["NAME", "CLUSTER", "AVAILABLE"]
    assert "prod" in table and "v1.31.0" in table
    strict = server.kubectl("apply", "-f", "-", check=False, input="""
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: c1, namespace: default}
spec: {paused: true, bogus: 1}
""")
    assert strict.returncode != 0 and 'unknown field "spec.bogus"' in strict.stderr
