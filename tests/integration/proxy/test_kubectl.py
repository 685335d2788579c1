"""kubectl through the proxy: cluster.x-k8s.io in, private groups stored, never a private name out."""
import json
import shutil
import subprocess
import time

import pytest

pytestmark = pytest.mark.kubectl

PRIVATE = "hypershift.openshift.io"
OBJECTS = """
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSCluster
metadata: {name: kc, namespace: hcp}
spec: {region: us-east-1}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSMachineTemplate
metadata: {name: kc-workers, namespace: hcp}
spec:
  template:
    spec: {instanceType: m5.large}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: kc, namespace: hcp}
spec:
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSCluster, name: kc}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata:
  name: kc-workers
  namespace: hcp
  labels: {cluster.x-k8s.io/cluster-name: kc}
spec:
  clusterName: kc
  replicas: 1
  selector:
    matchLabels: {cluster.x-k8s.io/cluster-name: kc}
  template:
    metadata:
      labels: {cluster.x-k8s.io/cluster-name: kc}
    spec:
      clusterName: kc
      bootstrap: {dataSecretName: user-data-kc}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSMachineTemplate, name: kc-workers}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata:
  name: kc-m1
  namespace: hcp
  labels: {cluster.x-k8s.io/cluster-name: kc}
spec:
  clusterName: kc
  bootstrap: {dataSecretName: user-data-kc}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSMachine, name: kc-m1}
"""


@pytest.fixture(scope="module")
def applied(stack):
    result = stack.kubectl("apply", "-f", "-", input_text=OBJECTS)
    assert "cluster.cluster.x-k8s.io/kc created" in result.stdout, result.stdout
    return stack


def test_api_resources_show_standard_groups_only(stack):
    everything = stack.kubectl("api-resources").stdout
    assert PRIVATE.replace("hypershift.", "cluster.hypershift.") not in everything
    capi = stack.kubectl("api-resources", "--api-group=cluster.x-k8s.io", "-o", "wide").stdout
    rows = {line.split()[0]: line for line in capi.splitlines()[1:]}
    assert {"machines", "machinesets", "machinedeployments", "clusters"} <= set(rows)
    assert " ma " in rows["machines"] and "cluster.x-k8s.io/v1beta2" in rows["machines"]  # short name restored
    infra = stack.kubectl("api-resources", "--api-group=infrastructure.cluster.x-k8s.io").stdout
    assert "awsmachines" in infra


def test_apply_stores_private_and_reads_standard(applied):
    stored = applied.server.request("GET", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/hcp/clusters/kc")
    assert stored.status == 200 and stored.json()["spec"]["infrastructureRef"]["apiGroup"] == \
        "infrastructure.cluster.hypershift.openshift.io"
    out = applied.kubectl("get", "clusters.cluster.x-k8s.io", "kc", "-n", "hcp", "-o", "json").stdout
    assert PRIVATE not in out
    cluster = json.loads(out)
    assert cluster["apiVersion"] == "cluster.x-k8s.io/v1beta2"
    assert cluster["spec"]["infrastructureRef"]["apiGroup"] == "infrastructure.cluster.x-k8s.io"
    listing = applied.kubectl("get", "ma,md,cl", "-n", "hcp", "-o", "name").stdout.split()
    assert "machine.cluster.x-k8s.io/kc-m1" in listing and "cluster.cluster.x-k8s.io/kc" in listing
    table = applied.kubectl("get", "machinedeployments", "-n", "hcp").stdout  # server-side Table
    assert "kc-workers" in table and PRIVATE not in table


def test_apply_again_is_unchanged_and_get_v1beta1_converts(applied):
    again = applied.kubectl("apply", "-f", "-", input_text=OBJECTS).stdout
    assert "cluster.cluster.x-k8s.io/kc unchanged" in again, again
    old = json.loads(applied.kubectl("get", "clusters.v1beta1.cluster.x-k8s.io", "kc", "-n", "hcp", "-o", "json").stdout)
    assert old["apiVersion"] == "cluster.x-k8s.io/v1beta1"
    assert old["spec"]["infrastructureRef"]["apiVersion"] == "infrastructure.cluster.x-k8s.io/v1beta2"


def test_patch_label_scale_wait(applied):
    applied.kubectl("patch", "machine.cluster.x-k8s.io", "kc-m1", "-n", "hcp", "--type", "merge",
                    "-p", '{"spec":{"providerID":"aws:///us-east-1a/i-0abc"}}')
    applied.kubectl("patch", "machine.cluster.x-k8s.io", "kc-m1", "-n", "hcp", "--type", "json", "-p",
                    '[{"op":"add","path":"/metadata/ownerReferences","value":[{"apiVersion":"cluster.x-k8s.io/v1beta2",'
                    '"kind":"Cluster","name":"kc","uid":"%s"}]}]' % _uid(applied, "clusters", "kc"))
    applied.kubectl("label", "machines.cluster.x-k8s.io", "kc-m1", "-n", "hcp", "node-role=worker")
    stored = applied.server.request("GET", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/hcp/machines/kc-m1").json()
    assert stored["spec"]["providerID"] == "aws:///us-east-1a/i-0abc"
    assert stored["metadata"]["labels"]["node-role"] == "worker"
    assert stored["metadata"]["ownerReferences"][0]["apiVersion"] == "cluster.hypershift.openshift.io/v1beta2"
    seen = json.loads(applied.kubectl("get", "machine.cluster.x-k8s.io", "kc-m1", "-n", "hcp", "-o", "json").stdout)
    assert seen["metadata"]["ownerReferences"][0]["apiVersion"] == "cluster.x-k8s.io/v1beta2"
    applied.kubectl("scale", "machinedeployment.cluster.x-k8s.io/kc-workers", "-n", "hcp", "--replicas=3")
    applied.kubectl("wait", "machinedeployment.cluster.x-k8s.io/kc-workers", "-n", "hcp",
                    "--for=jsonpath={.spec.replicas}=3", "--timeout=20s")


def test_get_watch_streams_events(applied):
    binary = shutil.which("kubectl")
    watcher = subprocess.Popen([binary, "--kubeconfig", applied.kubeconfig, "--cache-dir", applied.kubectl_cache, "get",
                                "machines.cluster.x-k8s.io", "-n", "hcp", "-w", "--output-watch-events", "-o", "json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)  # the initial list is sent first; then the watch is open
        applied.kubectl("apply", "-f", "-", input_text=OBJECTS.rsplit("---", maxsplit=1)[-1].replace("kc-m1", "kc-m2"))
        decoder = json.JSONDecoder()
        buffer = ""
        events = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(e["object"]["metadata"]["name"] == "kc-m2" for e in events):
            buffer += watcher.stdout.readline()
            try:
                event, end = decoder.raw_decode(buffer.strip())
                events.append(event)
                buffer = buffer.strip()[end:]
            except ValueError:
                continue
        added = [event for event in events if event["object"]["metadata"]["name"] == "kc-m2"]
        assert added and added[0]["type"] == "ADDED", events
        assert added[0]["object"]["apiVersion"] == "cluster.x-k8s.io/v1beta2"
    finally:
        watcher.terminate()
        watcher.wait(10)


def test_delete(applied):
    applied.kubectl("delete", "machine.cluster.x-k8s.io", "kc-m2", "-n", "hcp", "--wait=true")
    gone = applied.server.request("GET", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/hcp/machines/kc-m2")
    assert gone.status == 404
    missing = applied.kubectl("get", "machine.cluster.x-k8s.io", "kc-m2", "-n", "hcp", check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr


def _uid(stack, plural, name):
    return stack.server.request("GET", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/hcp/%s/%s"
                                % (plural, name)).json()["metadata"]["uid"]


@pytest.mark.parametrize("args, expected", [
    (["machine"], ["GROUP:      cluster.x-k8s.io", "KIND:       Machine", "VERSION:    v1beta2"]),
    (["machine.spec.infrastructureRef"], ["FIELD: infrastructureRef", "apiGroup"]),
    (["clusters.spec.infrastructureRef", "--api-version", "cluster.x-k8s.io/v1beta1"],
     ["VERSION:    v1beta1", "FIELD: infrastructureRef", "apiVersion"]),
    (["awsmachines.spec", "--api-version", "infrastructure.cluster.x-k8s.io/v1beta2"],
     ["GROUP:      infrastructure.cluster.x-k8s.io", "FIELD: spec"]),
])
def test_explain_through_the_proxy_as_against_the_server(stack, args, expected):
    """kubectl explain reads the OpenAPI v3 index (text/plain from kube-apiserver) and follows its 301 to the hashed
    group document: both name the standard groups through the proxy, as on a server that stores them."""
    result = stack.kubectl("explain", *args)
    for line in expected:
        assert line in result.stdout, result.stdout[:2000]
    assert "hypershift" not in result.stdout


def test_clusterctl_labels_kept_aside_select_crds_through_the_proxy_and_never_at_the_server(stack):
    """A twin rendered from a CRD that clusterctl labelled keeps the labels aside (annotation): clusterctl through
    the proxy selects it by them (the proxy judges those requirements), the platform's own at the server never."""
    from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.crd_names import (
        SOURCE_LABELS_ANNOTATION)
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/machinedrainrules.cluster.hypershift.openshift.io"
    patch = {"metadata": {"annotations": {SOURCE_LABELS_ANNOTATION: json.dumps({"clusterctl.cluster.x-k8s.io": ""})}}}
    assert stack.server.request("PATCH", path, patch, content_type="application/merge-patch+json").status == 200
    try:
        through = stack.kubectl("get", "crd", "-l", "clusterctl.cluster.x-k8s.io,!app", "-o", "name").stdout.split()
        assert through == ["customresourcedefinition.apiextensions.k8s.io/machinedrainrules.cluster.x-k8s.io"], through
        labels = json.loads(stack.kubectl("get", "crd", "machinedrainrules.cluster.x-k8s.io", "-o", "json").stdout)[
            "metadata"]["labels"]
        assert labels["clusterctl.cluster.x-k8s.io"] == ""
        direct = stack.server.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
                                             "?labelSelector=clusterctl.cluster.x-k8s.io").json()["items"]
        assert direct == []
    finally:
        patch["metadata"]["annotations"][SOURCE_LABELS_ANNOTATION] = None
        stack.server.request("PATCH", path, patch, content_type="application/merge-patch+json")


def test_clusterctl_move_dry_run_through_the_proxy_finds_every_object_and_uses_the_platform_inventory(applied):
    """clusterctl move --dry-run of the pinned release through the proxy: it discovers the CAPI objects by the labels
    the twins keep aside. Its inventory group is no HyperShift CAPI type (EXCLUDED_STANDARD_GROUPS): the inventory CRD
    it ensures passes through unchanged as providers.clusterctl.cluster.x-k8s.io, and no private twin of it
    (providers.clusterctl.cluster.hypershift.openshift.io) is ever made."""
    from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.crd_names import (
        SOURCE_LABELS_ANNOTATION)
    from testenv.cluster.build import ensure_binaries

    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
    twins = {"clusters.cluster": "cluster-api", "machines.cluster": "cluster-api",
             "machinedeployments.cluster": "cluster-api", "awsclusters.infrastructure.cluster": "infrastructure-aws",
             "awsmachinetemplates.infrastructure.cluster": "infrastructure-aws"}
    for twin, provider in twins.items():  # as private_crd_render keeps the labels of CRDs clusterctl installed
        labels = {"clusterctl.cluster.x-k8s.io": "", "cluster.x-k8s.io/provider": provider}
        patch = {"metadata": {"annotations": {SOURCE_LABELS_ANNOTATION: json.dumps(labels)}}}
        assert applied.server.request("PATCH", crds + twin + "." + PRIVATE, patch,
                                      content_type="application/merge-patch+json").status == 200
    clusterctl = ensure_binaries(["clusterctl"])["clusterctl"]
    inventory = crds + "providers.clusterctl.cluster.x-k8s.io"
    assert applied.server.request("GET", inventory).status == 404, "the test bed starts without clusterctl's inventory"
    try:
        result = subprocess.run([clusterctl, "move", "--dry-run", "-n", "hcp", "--kubeconfig", applied.kubeconfig,
                                 "-v", "5"], capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0, result.stdout + result.stderr
        for line in ("Cluster count=1", "MachineDeployment count=1", "Machine count=1", "AWSCluster count=1",
                     "Creating Cluster=\"kc\" Namespace=\"hcp\""):
            assert line in result.stdout + result.stderr, (line, result.stdout + result.stderr)
        assert "hypershift" not in result.stdout + result.stderr
        assert applied.server.request("GET", inventory).status == 200
        assert applied.server.request("GET", crds + "providers.clusterctl.cluster." + PRIVATE).status == 404
        cluster = applied.server.request("GET", "/apis/cluster.%s/v1beta2/namespaces/hcp/clusters/kc" % PRIVATE).json()
        assert not cluster["spec"].get("paused"), "a dry run pauses nothing"
    finally:
        applied.server.request("DELETE", inventory)
        for twin in twins:
            applied.server.request("PATCH", crds + twin + "." + PRIVATE,
                                   {"metadata": {"annotations": {SOURCE_LABELS_ANNOTATION: None}}},
                                   content_type="application/merge-patch+json")
