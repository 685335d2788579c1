"""The conversion_shim role with private_capi_monitoring on the real control plane: the fleet exporter's Deployment
runs for real (in the proxy image, on the test bed's real node: testenv.cluster.node) with its own ServiceAccount and
ClusterRole, lists the HostedClusters in-cluster and becomes Ready; its /metrics at the pod IP counts the fleet; the
PrometheusRule and ServiceMonitor are applied because the server serves monitoring.coreos.com (minimal CRDs of the
Prometheus Operator's two kinds here); a second run changes nothing; turned off, the role removes them all.

The server is this module's own `bare_cluster` with the namespace `hypershift`, HyperShift's HostedCluster CRD and two
HostedClusters (one migrated). Traffic only to the server and to the pod IP the test bed gave the exporter."""
import datetime
import json
import os
import urllib.request

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils import monitoring
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine
from testenv import REPO_ROOT, proxy_stack, yamlio
from testenv.client import wait_for
from testenv.cluster.testing import install_crds, pod_is_ready
from testenv.hcp import fleet
from tests.integration.crds.test_conversion_shim import _play, get

pytestmark = pytest.mark.slow

NAMESPACE = "hypershift"
EXPORTER = "capi-conversion-shim-exporter"
CLUSTER_ROLE = "capi-conversion-shim-exporter-hypershift"
HOSTEDCLUSTER_CRD = os.path.join(REPO_ROOT, "testenv", "upstream", "hypershift", "crds",
                                 "hostedclusters-Hypershift-Default.crd.yaml")
PLAYBOOK = """
- name: conversion_shim with its monitoring on the local management cluster
  hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/hypershift.private_capi.private_capi:
      kubeconfig: "{{ kubeconfig }}"
  tasks:
    - name: The role
      ansible.builtin.include_role:
        name: hypershift.private_capi.conversion_shim
"""
OBJECTS = [
    ("Deployment", "/apis/apps/v1/namespaces/%s/deployments/%s" % (NAMESPACE, EXPORTER)),
    ("Service", "/api/v1/namespaces/%s/services/%s" % (NAMESPACE, EXPORTER)),
    ("ServiceAccount", "/api/v1/namespaces/%s/serviceaccounts/%s" % (NAMESPACE, EXPORTER)),
    ("ClusterRole", "/apis/rbac.authorization.k8s.io/v1/clusterroles/%s" % CLUSTER_ROLE),
    ("ClusterRoleBinding", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/%s" % CLUSTER_ROLE),
    ("PrometheusRule", "/apis/monitoring.coreos.com/v1/namespaces/%s/prometheusrules/hypershift-private-capi"
     % NAMESPACE),
    ("ServiceMonitor", "/apis/monitoring.coreos.com/v1/namespaces/%s/servicemonitors/%s" % (NAMESPACE, EXPORTER)),
    ("PodMonitor", "/apis/monitoring.coreos.com/v1/namespaces/%s/podmonitors/capi-proxy-sidecars" % NAMESPACE),
]


def _monitoring_crd(kind, plural):
    """The Prometheus Operator's kind, schema left open (the server only has to serve it)."""
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.monitoring.coreos.com" % plural},
            "spec": {"group": "monitoring.coreos.com", "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": kind + "List"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def _hostedcluster(name, migrated):
    hostedcluster = fleet.hostedcluster_objects("AWS", fleet.HC_NAMESPACE, name, state="legacy")[0]
    hostedcluster.pop("status", None)
    if migrated:
        now = datetime.datetime.now(datetime.timezone.utc)
        for requested, seconds in ((machine.IN_PROGRESS, -300), (machine.MIGRATED, -60)):
            hostedcluster = machine.plan_transition(hostedcluster, requested, "role-test",
                                                    now + datetime.timedelta(seconds=seconds)).updated_object()
    return hostedcluster


@pytest.fixture(scope="module")
def server(bare_cluster):
    with open(HOSTEDCLUSTER_CRD) as handle:
        crds = yamlio.load_all(handle)
    crds += [_monitoring_crd("PrometheusRule", "prometheusrules"), _monitoring_crd("ServiceMonitor", "servicemonitors"),
             _monitoring_crd("PodMonitor", "podmonitors")]
    with bare_cluster.api_client() as api:
        install_crds(api, crds)
    proxy_stack.create_namespace(bare_cluster, NAMESPACE)
    proxy_stack.create_namespace(bare_cluster, fleet.HC_NAMESPACE)
    for name, migrated in (("hc-legacy", False), ("hc-done", True)):
        response = bare_cluster.request(
            "POST", "/apis/hypershift.openshift.io/v1beta1/namespaces/%s/hostedclusters" % fleet.HC_NAMESPACE,
            _hostedcluster(name, migrated))
        assert response.status == 201, response
    return bare_cluster


@pytest.fixture(scope="module")
def playbook(tmp_path_factory):
    path = os.path.join(str(tmp_path_factory.mktemp("monitoring-role")), "conversion_shim.yml")
    with open(path, "w") as handle:
        handle.write(PLAYBOOK)
    return path


def play(server, playbook, monitoring_on):
    """(return code, recap counts, output) of the role's playbook with the exporter on or off (one shim replica)."""
    return _play(server, os.path.dirname(playbook), os.path.basename(playbook)[:-len(".yml")],
                 "private_capi_shim_replicas=1", "private_capi_monitoring=%s" % str(monitoring_on).lower())


def existing(server):
    return [what for what, path in OBJECTS if get(server, path) is not None]


def _exporter_pod(server):
    pods = get(server, "/api/v1/namespaces/%s/pods?labelSelector=%s" % (
        NAMESPACE, "app.kubernetes.io/instance%3D" + EXPORTER))["items"]
    ready = [pod for pod in pods if pod.get("status", {}).get("podIP") and pod_is_ready(pod)]
    return ready[0] if ready else None


def test_the_role_runs_the_exporter_which_lists_the_fleet_in_cluster(server, playbook):
    code, counts, output = play(server, playbook, True)
    assert code == 0 and counts["changed"] > 0, output[-6000:]
    assert existing(server) == [what for what, _path in OBJECTS], output[-6000:]
    rule = get(server, OBJECTS[5][1])
    assert rule["spec"] == monitoring.prometheus_rule({"namespace": NAMESPACE})["spec"]
    assert get(server, OBJECTS[3][1])["rules"] == [{"apiGroups": ["hypershift.openshift.io"],
                                                    "resources": ["hostedclusters"], "verbs": ["list", "watch"]}]
    # Ready only once it has listed every HostedCluster, with its own service account's rights
    pod = wait_for(lambda: _exporter_pod(server), "the exporter's Pod to be Ready", timeout=120, interval=0.5)
    with urllib.request.urlopen("http://%s:9091/metrics" % pod["status"]["podIP"], timeout=10) as response:
        text = response.read().decode()
    assert "\nhypershift_private_capi_migrated_hosted_clusters_total 1.0\n" in text, text[:3000]
    assert "\nhypershift_private_capi_pending_hosted_clusters_total 1.0\n" in text, text[:3000]
    assert ('hypershift_private_capi_hosted_cluster_state{hostedcluster_namespace="clusters",name="hc-done",'
            'namespace="clusters",state="migrated"} 1.0') \
        in text
    # the shim's Service does not select the exporter's Pod
    shim_service = get(server, "/api/v1/namespaces/%s/services/capi-conversion-webhook-shim" % NAMESPACE)
    assert any(pod["metadata"]["labels"].get(key) != value for key, value in shim_service["spec"]["selector"].items())


def test_a_second_run_changes_nothing(server, playbook):
    code, counts, output = play(server, playbook, True)
    assert code == 0 and counts["changed"] == 0, output[-6000:]


def test_turned_off_the_role_removes_the_exporter_its_alerts_and_its_scrape(server, playbook):
    code, counts, output = play(server, playbook, False)
    assert code == 0 and counts["changed"] > 0, output[-6000:]
    wait_for(lambda: existing(server) == [], "every monitoring object to be gone (left: %s)" % existing(server),
             timeout=60, interval=0.5)
    assert get(server, "/apis/apps/v1/namespaces/%s/deployments/capi-conversion-shim" % NAMESPACE) is not None
    assert json.dumps(play(server, playbook, False)[1]).find('"changed": 0') >= 0
