"""Conformance with kubectl (subprocess, default flags): typed creates, strategic merge patch directives,
server-side dry run, field validation, printer columns of real CAPI CRDs, RBAC with ServiceAccount tokens.

The server is seeded with the real CAPI CRDs (testenv/upstream/capi/crds); see tests/kubeapi/README.md for the
issue checklist these tests belong to.
"""
import json

import pytest

from testenv.client import wait_for

MACHINE = """
apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata: {name: %(name)s, namespace: default, labels: {pool: %(pool)s}}
spec:
  clusterName: prod
  version: v1.31.0
  bootstrap: {dataSecretName: boot}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachine, name: %(name)s}
"""

SMP_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: smp, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: smp}}
  template:
    metadata: {labels: {app: smp}}
    spec:
      initContainers:
      - {name: init, image: "busybox:1"}
      containers:
      - name: app
        image: nginx:1.25
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
        ports: [{containerPort: 80, name: http}]
        volumeMounts: [{name: data, mountPath: /data}]
      - {name: sidecar, image: "busybox:1"}
      volumes:
      - {name: data, emptyDir: {}}
      - {name: cache, emptyDir: {}}
"""


@pytest.fixture(scope="module")
def server(kubeapi_capi):
    return kubeapi_capi


def test_typed_create_commands_send_protobuf_and_work(server):
    """kubectl create <kind> encodes protobuf: every typed generator kubectl has for our kinds."""
    commands = [
        ("namespace", "team-a"),
        ("deployment", "web", "--image=nginx:1.27", "--replicas=2", "--port=8080", "-n", "team-a"),
        ("deployment", "idle", "--image=busybox:1", "--replicas=0", "-n", "team-a", "--", "sleep", "3600"),
        ("configmap", "settings", "--from-literal=mode=fast", "-n", "team-a"),
        ("secret", "generic", "creds", "--from-literal=password=s3cr3t", "-n", "team-a"),
        ("serviceaccount", "builder", "-n", "team-a"),
        ("service", "clusterip", "web", "--tcp=80:8080", "-n", "team-a"),
        ("service", "nodeport", "web-np", "--tcp=80:8080", "-n", "team-a"),
        ("role", "reader", "--verb=get,list", "--resource=pods,configmaps", "-n", "team-a"),
        ("rolebinding", "reader", "--role=reader", "--serviceaccount=team-a:builder", "-n", "team-a"),
        ("clusterrole", "node-reader", "--verb=get", "--resource=namespaces"),
        ("clusterrolebinding", "node-reader", "--clusterrole=node-reader", "--group=readers"),
    ]
    for command in commands:
        result = server.kubectl("create", *command)
        assert "created" in result.stdout, result
    deployment = server.kubectl_json("get", "deployment", "web", "-n", "team-a")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert (container["name"], container["image"], container["ports"]) == (
        "nginx", "nginx:1.27", [{"containerPort": 8080, "protocol": "TCP"}])
    assert deployment["spec"]["replicas"] == 2 and deployment["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate", "defaults applied like the real server"
    idle = server.kubectl_json("get", "deployment", "idle", "-n", "team-a")
    assert idle["spec"]["replicas"] == 0, "a pointer field at its zero value must survive protobuf decoding"
    assert idle["spec"]["template"]["spec"]["containers"][0]["command"] == ["sleep", "3600"]
    assert server.kubectl_json("get", "secret", "creds", "-n", "team-a")["data"] == {"password": "czNjcjN0"}
    assert server.kubectl_json("get", "cm", "settings", "-n", "team-a")["data"] == {"mode": "fast"}
    service = server.kubectl_json("get", "service", "web", "-n", "team-a")
    assert service["spec"]["ports"] == [{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}]
    assert service["spec"]["selector"] == {"app": "web"} and service["spec"]["clusterIP"]
    node_port = server.kubectl_json("get", "service", "web-np", "-n", "team-a")["spec"]["ports"][0]["nodePort"]
    assert 30000 <= node_port <= 32767, "NodePort services get a port from the node port range"
    binding = server.kubectl_json("get", "rolebinding", "reader", "-n", "team-a")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "builder", "namespace": "team-a"}]
    assert server.kubectl_json("get", "clusterrole", "node-reader")["rules"] == [
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}]
    server.kubectl("rollout", "status", "deployment/web", "-n", "team-a", "--timeout=20s")
    server.kubectl("scale", "deployment/web", "-n", "team-a", "--replicas=1")
    server.kubectl("rollout", "status", "deployment/web", "-n", "team-a", "--timeout=20s")
    wait_for(lambda: len(server.kubectl_json("get", "pods", "-n", "team-a", "-l", "app=web")["items"]) == 1,
             "the scaled-down pod to be removed")
    token = server.kubectl("create", "token", "builder", "-n", "team-a", "--duration=20m").stdout.strip()
    assert server.kubectl("get", "cm", "-n", "team-a", "-o", "name", token=token).stdout.split() == [
        "configmap/kube-root-ca.crt", "configmap/settings"]
    invalid = server.kubectl("create", "token", "builder", "-n", "team-a", "--duration=1s", check=False)
    assert 'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 1: may not ' \
           'specify a duration less than 10 minutes' in invalid.stderr


def test_strategic_merge_patch_merge_keys_and_directives(server):
    server.kubectl("apply", "-f", "-", input=SMP_DEPLOYMENT)
    server.kubectl("patch", "deployment", "smp", "--type", "strategic", "-p", json.dumps({"spec": {"template": {
        "spec": {
            "containers": [
                {"name": "app", "image": "nginx:1.27", "env": [{"name": "B", "value": "two"}, {"name": "C", "value": "3"}],
                 "ports": [{"containerPort": 443, "name": "https"}],
                 "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]},
                {"name": "sidecar", "$patch": "delete"}],
            "initContainers": [{"name": "init2", "image": "busybox:2"}],
            "volumes": [{"name": "cache", "$patch": "delete"}, {"name": "logs", "emptyDir": {}}]}}}}))
    spec = server.kubectl_json("get", "deployment", "smp")["spec"]["template"]["spec"]
    app = spec["containers"][0]
    assert [c["name"] for c in spec["containers"]] == ["app"], "$patch: delete removes the item by merge key"
    assert app["image"] == "nginx:1.27"
    assert app["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "two"}, {"name": "C", "value": "3"}]
    assert [p["containerPort"] for p in app["ports"]] == [443, 80]
    assert [m["name"] for m in app["volumeMounts"]] == ["cache", "data"]
    assert [c["name"] for c in spec["initContainers"]] == ["init2", "init"]
    assert [v["name"] for v in spec["volumes"]] == ["logs", "data"]
    server.kubectl("patch", "deployment", "smp", "--type", "strategic", "-p", json.dumps({"spec": {"template": {
        "metadata": {"labels": {"$patch": "replace", "app": "smp"}},
        "spec": {"containers": [{"name": "app", "env": [{"$patch": "replace"}, {"name": "ONLY", "value": "x"}]}],
                 "$setElementOrder/volumes": [{"name": "data"}, {"name": "logs"}]}}}}))
    template = server.kubectl_json("get", "deployment", "smp")["spec"]["template"]
    assert template["spec"]["containers"][0]["env"] == [{"name": "ONLY", "value": "x"}]
    assert [v["name"] for v in template["spec"]["volumes"]] == ["data", "logs"]
    assert template["metadata"]["labels"] == {"app": "smp"}
    bad = server.kubectl("patch", "deployment", "smp", "--type", "strategic", "-p",
                         '{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}', check=False)
    assert bad.returncode != 0 and "does not contain declared merge key: name" in bad.stderr


def test_custom_resources_refuse_strategic_merge_patch_and_print_columns(server):
    for name, pool in (("m-1", "blue"), ("m-2", "green")):
        server.kubectl("apply", "-f", "-", input=MACHINE % {"name": name, "pool": pool})
    refused = server.kubectl("patch", "machine", "m-1", "--type", "strategic", "-p", '{"spec":{"providerID":"x"}}',
                             check=False)
    assert refused.returncode != 0
    assert ("application/strategic-merge-patch+json is not supported by cluster.x-k8s.io/v1beta2, Kind=Machine: the "
            "body of the request was in an unknown format - accepted media types include: "
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml") \
        in refused.stderr
    server.kubectl("patch", "machine", "m-1", "--subresource=status", "--type=merge", "-p", json.dumps({"status": {
        "phase": "Running", "nodeRef": {"name": "node-1"}, "conditions": [
            {"type": "Ready", "status": "True", "reason": "Ready", "message": "",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}))
    lines = server.kubectl("get", "machines").stdout.splitlines()
    assert lines[0].split() == ["NAME", "CLUSTER", "NODE", "NAME", "FAILURE", "DOMAIN", "READY", "AVAILABLE",
                                "UP-TO-DATE", "PHASE", "AGE", "VERSION"]
    first = lines[1].split()
    assert first[:4] == ["m-1", "prod", "node-1", "True"] and first[-3:-1][0] == "Running" and first[-1] == "v1.31.0"
    wide = server.kubectl("get", "machines", "-o", "wide").stdout.splitlines()[0]
    assert "PROVIDER ID" in wide, "priority 10 columns only in -o wide"
    old = server.kubectl("get", "machines.v1beta1.cluster.x-k8s.io", "m-1").stdout.splitlines()
    assert old[0].split()[:3] == ["NAME", "CLUSTER", "NODENAME"] and "Running" in old[1]
    server.kubectl("label", "machine", "m-2", "pool=red", "--overwrite")
    assert server.kubectl("get", "machines", "-l", "pool in (red,blue)", "-o", "name").stdout.split() == [
        "machine.cluster.x-k8s.io/m-1", "machine.cluster.x-k8s.io/m-2"]


def test_field_validation_strict_warn_ignore(server):
    def manifest(name):
        return MACHINE % {"name": name, "pool": "x"} + "  bogus: 1\n"
    strict = server.kubectl("apply", "-f", "-", input=manifest("fv-strict"), check=False)
    assert strict.returncode != 0 and ('Machine in version "v1beta2" cannot be handled as a Machine: strict decoding '
                                       'error: unknown field "spec.bogus"') in strict.stderr
    warn = server.kubectl("apply", "--validate=warn", "-f", "-", input=manifest("fv-warn"))
    assert 'Warning: unknown field "spec.bogus"' in warn.stderr
    ignore = server.kubectl("apply", "--validate=false", "-f", "-", input=manifest("fv-ignore"))
    assert "Warning" not in ignore.stderr
    for name in ("fv-warn", "fv-ignore"):
        assert "bogus" not in server.kubectl_json("get", "machine", name)["spec"], "unknown fields are pruned"
    ssa = server.kubectl("apply", "--server-side", "-f", "-", input=manifest("fv-ssa"), check=False)
    assert ssa.returncode != 0 and ("failed to create typed patch object (default/fv-ssa; cluster.x-k8s.io/v1beta2, "
                                    "Kind=Machine): .spec.bogus: field not declared in schema") in ssa.stderr
    builtin = server.kubectl("create", "-f", "-", check=False, input=SMP_DEPLOYMENT.replace(
        "name: smp, namespace", "name: strict, namespace").replace("image: nginx:1.25", "image: nginx:1.25\n        colour: red"))
    assert ('Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field '
            '"spec.template.spec.containers[0].colour"') in builtin.stderr


def test_server_side_dry_run_on_every_verb(server):
    server.kubectl("create", "configmap", "dry-base", "--from-literal=a=1")
    commands = [
        ("create", "configmap", "dry-new", "--from-literal=a=1"),
        ("apply", "-f", "-"),
        ("apply", "--server-side", "-f", "-"),
        ("patch", "configmap", "dry-base", "-p", '{"data":{"a":"2"}}'),
        ("label", "configmap", "dry-base", "tier=x"),
        ("annotate", "configmap", "dry-base", "note=y"),
        ("scale", "machinedeployment", "md-dry", "--replicas=5"),
        ("delete", "configmap", "dry-base"),
        ("delete", "configmaps", "--all"),
    ]
    server.kubectl("apply", "-f", "-", input="""
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {name: md-dry, namespace: default}
spec:
  clusterName: prod
  replicas: 1
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      clusterName: prod
      bootstrap: {dataSecretName: boot}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachineTemplate, name: t}
""")

    def stored():
        return {(c["metadata"]["name"], c["metadata"]["resourceVersion"])
                for c in server.kubectl_json("get", "configmaps")["items"]}
    before = stored()
    server.reset_requests()
    applied = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dry-applied}\ndata: {k: v}\n"
    for command in commands:
        result = server.kubectl(*(list(command) + ["--dry-run=server"]), input=applied)
        assert command[0] == "patch" or "(server dry run)" in result.stdout, result  # patch prints no suffix
    entries = server.request_counts()["entries"]
    writes = [e for e in entries if e["verb"] in ("create", "update", "patch", "delete", "deletecollection")]
    assert {e["verb"] for e in writes} >= {"create", "patch", "delete"}
    assert stored() == before, "nothing stored"
    assert server.kubectl_json("get", "configmap", "dry-base")["data"] == {"a": "1"}
    assert server.kubectl("get", "configmap", "dry-new", check=False).returncode != 0
    assert server.kubectl_json("get", "machinedeployment", "md-dry")["spec"]["replicas"] == 1


def test_service_account_tokens_rbac_and_can_i(server):
    server.kubectl("create", "serviceaccount", "robot")
    token = server.kubectl("create", "token", "robot").stdout.strip()
    whoami = json.loads(server.kubectl("auth", "whoami", "-o", "json", token=token).stdout)
    assert whoami["status"]["userInfo"]["username"] == "system:serviceaccount:default:robot"
    assert "system:serviceaccounts:default" in whoami["status"]["userInfo"]["groups"]
    assert "configmaps" in server.kubectl("api-resources", "-o", "name", token=token).stdout, \
        "system:discovery lets every authenticated user discover"
    denied = server.kubectl("get", "pods", token=token, check=False)
    assert 'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:default:robot" cannot ' \
           'list resource "pods" in API group "" in the namespace "default"' in denied.stderr
    server.kubectl("create", "role", "cm-one", "--verb=get", "--resource=configmaps", "--resource-name=allowed")
    server.kubectl("create", "role", "scaler", "--verb=get,update,patch", "--resource=deployments,deployments/scale")
    server.kubectl("create", "rolebinding", "robot-cm", "--role=cm-one", "--serviceaccount=default:robot")
    server.kubectl("create", "rolebinding", "robot-scale", "--role=scaler", "--serviceaccount=default:robot")
    server.kubectl("create", "configmap", "allowed")
    server.kubectl("create", "configmap", "other")
    server.kubectl("create", "deployment", "scaled", "--image=nginx", "--replicas=1")
    assert server.kubectl("get", "configmap", "allowed", "-o", "name", token=token).stdout.strip() == \
        "configmap/allowed"
    other = server.kubectl("get", "configmap", "other", token=token, check=False)
    assert 'configmaps "other" is forbidden: User "system:serviceaccount:default:robot" cannot get resource ' \
           '"configmaps" in API group "" in the namespace "default"' in other.stderr
    elsewhere = server.kubectl("get", "configmap", "allowed", "-n", "kube-system", token=token, check=False)
    assert 'in the namespace "kube-system"' in elsewhere.stderr, "a RoleBinding grants only its namespace"
    answers = {args: server.kubectl("auth", "can-i", *args, token=token, check=False).stdout.strip()
               for args in (("get", "configmaps/allowed"), ("get", "configmaps/other"),
                            ("update", "deployments", "--subresource=scale"), ("delete", "deployments"),
                            ("create", "selfsubjectaccessreviews.authorization.k8s.io"))}
    assert answers == {("get", "configmaps/allowed"): "yes", ("get", "configmaps/other"): "no",
                       ("update", "deployments", "--subresource=scale"): "yes", ("delete", "deployments"): "no",
                       ("create", "selfsubjectaccessreviews.authorization.k8s.io"): "yes"}
    server.kubectl("scale", "deployment", "scaled", "--replicas=2", token=token)
    assert server.kubectl_json("get", "deployment", "scaled")["spec"]["replicas"] == 2
    rules = server.kubectl("auth", "can-i", "--list", token=token).stdout
    assert "configmaps" in rules and "[allowed]" in rules and "deployments.apps/scale" in rules
    admin_view = server.kubectl_json("get", "clusterrole", "view")
    assert any("configmaps" in rule.get("resources", []) for rule in admin_view["rules"]), \
        "aggregated ClusterRoles carry the aggregated rules"
    server.kubectl("create", "rolebinding", "robot-view", "--clusterrole=view", "--serviceaccount=default:robot")
    assert server.kubectl("auth", "can-i", "list", "pods", token=token).stdout.strip() == "yes"
    unauthorized = server.kubectl("get", "pods", token="not-a-token", check=False)
    assert "You must be logged in to the server (Unauthorized)" in unauthorized.stderr


def test_scale_subresource_of_a_crd_wait_and_cascading_deletes(server):
    server.kubectl("apply", "-f", "-", input="""
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {name: md-scale, namespace: default}
spec:
  clusterName: prod
  replicas: 1
  selector: {matchLabels: {pool: a}}
  template:
    metadata: {labels: {pool: a}}
    spec:
      clusterName: prod
      bootstrap: {dataSecretName: boot}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachineTemplate, name: t}
""")
    server.kubectl("scale", "machinedeployment", "md-scale", "--replicas=3")
    server.kubectl("wait", "--for=jsonpath={.spec.replicas}=3", "machinedeployment/md-scale", "--timeout=10s")
    scale = server.request("GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/machinedeployments/md-scale/"
                                  "scale").json()
    assert scale["kind"] == "Scale" and scale["spec"] == {"replicas": 3}
    server.kubectl("create", "deployment", "orphaner", "--image=nginx", "--replicas=2")
    server.kubectl("rollout", "status", "deployment/orphaner", "--timeout=20s")
    server.kubectl("delete", "deployment", "orphaner", "--cascade=orphan")
    pods = server.kubectl_json("get", "pods", "-l", "app=orphaner")["items"]
    assert len(pods) == 2 and all("ownerReferences" not in p["metadata"] for p in pods)
    server.kubectl("create", "deployment", "fore", "--image=nginx", "--replicas=2")
    server.kubectl("rollout", "status", "deployment/fore", "--timeout=20s")
    server.kubectl("delete", "deployment", "fore", "--cascade=foreground", "--timeout=20s")
    assert server.kubectl_json("get", "pods", "-l", "app=fore")["items"] == []
    server.kubectl("delete", "pods", "-l", "app=orphaner", "--wait=false")
    server.kubectl("wait", "--for=delete", "pod", "-l", "app=orphaner", "--timeout=20s")
