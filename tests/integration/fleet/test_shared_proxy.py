"""The shared topology of the API proxy (private_capi_proxy_topology shared, 2026-12-04): one proxy Deployment per HCP
namespace behind a Service over TLS instead of a sidecar in every CAPI-dependent Pod, on the real node with the real
core manager v1.14.2 electing its leader through it.

migrate_fleet.yml (private_capi_migrate_proxy_topology shared, the default strategy zero_stop) puts the shared proxy in ahead (its certificate made in the same
module run, its Pods Ready before any workload is pointed at it), flips it and migrates; no Deployment is ever short of
an available replica, and the manager leads again through the proxy and reads the private objects as cluster.x-k8s.io.
A client reaches the proxy with its own token only: the proxy lends no identity. verify_fleet.yml accepts the
Deployments pointed at it; rollback.yml flips it back without a Pod restart; the role's absent state restores every
Deployment as it was and deletes the shared proxy.
"""
import os
import re
import tempfile
import urllib.request

import pytest
from kubernetes import client as k8s_client

from testenv.client import wait_for
from testenv.cluster.cluster import rss_kib
from testenv.cluster.testing import container_processes, container_uids, pod_is_ready
from testenv.hcp import fleet
from testenv.module_runner import run_module
from tests.integration.fleet.support import (
    core_manager_leads, hcp_ns, hostedcluster_states, list_items, migrated_content_problems, run_playbook, snapshot,
    start_electing_fleet, write_inventory)
from tests.integration.fleet.test_zero_stop import Sampler, put_sidecars_in_ahead

pytestmark = pytest.mark.slow

NAME = "hc-01"
NAMESPACE = hcp_ns(NAME)
SHARED = {"private_capi_migrate_proxy_topology": "shared"}
PROXY = "capi-proxy"
MACHINES = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/%s/machines" % NAMESPACE


def deployments(server):
    return {d["metadata"]["name"]: d for d in list_items(server, "/apis/apps/v1/namespaces/%s/deployments" % NAMESPACE)}


def pods(server, prefix):
    return [pod for pod in list_items(server, "/api/v1/namespaces/%s/pods" % NAMESPACE)
            if pod["metadata"]["name"].startswith(prefix + "-") and not pod["metadata"].get("deletionTimestamp")]


def leads(server):
    """The one live cluster-api Pod, when its manager holds the Lease (else None)."""
    return core_manager_leads(server, NAMESPACE)


def mode_data(server):
    return server.request("GET", "/api/v1/namespaces/%s/configmaps/capi-proxy-mode" % NAMESPACE).json().get("data") or {}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("shared-proxy")
    server, crds = start_electing_fleet(tmp_path, NAME, machines=2)
    try:
        yield {"server": server, "crds": crds, "tmp": str(tmp_path),
               "inventory": write_inventory(tmp_path, server.kubeconfig), "before": snapshot(server, crds, NAMESPACE),
               "templates": {name: d["spec"]["template"] for name, d in deployments(server).items()}}
    finally:
        server.stop()


def proxy_rss_mb(server):
    """The summed RSS of the shared proxy's processes (every replica), in MB."""
    total = 0
    for pod in pods(server, PROXY):
        total += sum(rss_kib(pid) or 0 for pid in container_processes(pod, "kube-apiserver-proxy"))
    return total / 1024.0


def proxy_requests(pod):
    """{(group, verb): requests} of hypershift_api_proxy_requests_total of a proxy Pod (its metrics port)."""
    with urllib.request.urlopen("http://%s:9090/metrics" % pod["status"]["podIP"], timeout=10) as answer:
        text = answer.read().decode()
    counts = {}
    for line in text.splitlines():
        if line.startswith("hypershift_api_proxy_requests_total{"):
            labels = dict(part.split("=", 1) for part in line[line.index("{") + 1:line.rindex("}")].split(","))
            key = (labels["group"].strip('"'), labels["verb"].strip('"'))
            counts[key] = counts.get(key, 0) + float(line.rsplit(" ", 1)[1])
    return counts


def test_migrate_fleet_with_the_shared_proxy_never_stops_a_deployment_and_the_manager_leads_through_it(world):
    server = world["server"]
    sampler = Sampler(server, namespaces=(NAMESPACE,))
    try:
        migrated = run_playbook("migrate_fleet.yml", world["inventory"], SHARED)
    finally:
        short = sampler.stop()
    assert migrated.returncode == 0, (migrated.stdout + migrated.stderr)[-6000:]
    assert hostedcluster_states(server) == {NAME: "migrated"}
    assert sampler.samples > 3 and short == [], "a Deployment was short of available replicas: %s" % short
    assert not migrated_content_problems(world["before"], snapshot(server, world["crds"], NAMESPACE))
    found = deployments(server)
    proxy = found[PROXY]
    assert proxy["status"].get("availableReplicas") == 2 == proxy["spec"]["replicas"]
    # no sidecar anywhere: every CAPI-dependent Deployment names the shared proxy's Service
    for name in fleet.CAPI_DEPLOYMENTS:
        spec = found[name]["spec"]["template"]["spec"]
        assert [c["name"] for c in spec["containers"]] == [c["name"] for c in world["templates"][name]["spec"]["containers"]]
        assert {"name": "KUBECONFIG", "value": "/etc/capi-proxy/kubeconfig"} in spec["containers"][0]["env"], name
    proxies = pods(server, PROXY)
    assert len(proxies) == 2 and all(pod_is_ready(pod) for pod in proxies)
    for pod in proxies:
        status = pod["status"]["containerStatuses"][0]
        assert status["containerID"].startswith("containerd://") and status["restartCount"] == 0
        assert container_uids(pod) == {"kube-apiserver-proxy": 1001}
    data = mode_data(server)
    assert data["mode"] == "translate" and all(data["applied." + pod["metadata"]["name"]] == "translate"
                                               for pod in proxies)
    new = wait_for(lambda: leads(server), "the new Pod's manager to hold its Lease", timeout=120, interval=1)
    # the manager's leader election (its Lease renewed every few seconds) and its informers go through the proxy
    served = {}
    for pod in pods(server, PROXY):
        for key, count in proxy_requests(pod).items():
            served[key] = served.get(key, 0) + count
    print("shared proxy: 2 replicas, %.1f MB RSS in all; the manager %s leads; requests served %s"
          % (proxy_rss_mb(server), new, sorted(served.items())))
    # its Lease's renewals are the namespace's only updates through the proxy (the placeholders send nothing); their
    # group label is "other" until the proxy's discovery index lists coordination.k8s.io
    assert sum(count for (_group, verb), count in served.items() if verb == "update") > 0, served


def test_a_client_reaches_the_shared_proxy_with_its_own_token_and_nothing_without_one(world):
    """From this host, a proxy Pod's address (the test bed's pod network; a Service address is routed only inside the
    nodes' network namespaces, where kube-proxy serves it - the manager's requests above went that way), verified as
    the workloads verify it: the ConfigMap's CA bundle and the Service's name."""
    server = world["server"]
    address = pods(server, PROXY)[0]["status"]["podIP"]
    bundle = server.request("GET", "/api/v1/namespaces/%s/configmaps/capi-proxy-kubeconfig" % NAMESPACE).json()[
        "data"]["ca.crt"]

    def token(account):
        answer = server.request("POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (NAMESPACE, account),
                                {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                 "spec": {"expirationSeconds": 600}})
        assert answer.status == 201, answer.body[:300]
        return answer.json()["status"]["token"]

    with tempfile.NamedTemporaryFile("w", suffix=".crt", delete=False) as handle:
        handle.write(bundle)
    try:
        def machines(bearer):
            configuration = k8s_client.Configuration()
            configuration.host = "https://%s:8080" % address
            configuration.ssl_ca_cert = handle.name
            configuration.tls_server_name = "%s.%s.svc" % (PROXY, NAMESPACE)  # what the certificate names
            if bearer:
                configuration.api_key = {"authorization": "Bearer " + bearer}
            with k8s_client.ApiClient(configuration) as api:
                return k8s_client.CustomObjectsApi(api).list_namespaced_custom_object(
                    "cluster.x-k8s.io", "v1beta2", NAMESPACE, "machines")

        served = machines(token("cluster-api"))
        private = sorted(m["metadata"]["name"] for m in list_items(server, MACHINES))
        assert sorted(m["metadata"]["name"] for m in served["items"]) == private and len(private) == 2
        assert {m["apiVersion"] for m in served["items"]} == {"cluster.x-k8s.io/v1beta2"}
        # no token: the proxy sends none of its own (anonymous upstream); another account: its own rights, none on CAPI
        for bearer, codes in ((None, (401, 403)), (token("default"), (403,))):
            with pytest.raises(k8s_client.ApiException) as refused:
                machines(bearer)
            assert refused.value.status in codes, refused.value
    finally:
        os.unlink(handle.name)


def test_a_second_pre_install_changes_nothing(world):
    """The api_proxy role again as the migrate role ran it (the shared topology, its defaults, pass-through asked for):
    every object, the certificate and every Deployment found as wanted, nothing written, the mode kept, no Pod
    replaced."""
    server = world["server"]
    before = sorted(pod["metadata"]["name"] for pod in list_items(server, "/api/v1/namespaces/%s/pods" % NAMESPACE))
    again = put_sidecars_in_ahead(server, topology="shared")  # hc-01: test_zero_stop's NS too
    assert re.search(r"localhost\s+: ok=\d+\s+changed=0 ", again.stdout), again.stdout[-3000:]
    assert mode_data(server)["mode"] == "translate", "an existing mode ConfigMap keeps its mode"
    assert sorted(pod["metadata"]["name"] for pod in list_items(
        server, "/api/v1/namespaces/%s/pods" % NAMESPACE)) == before


def test_verify_fleet_accepts_the_deployments_pointed_at_the_shared_proxy(world):
    verified = run_playbook("verify_fleet.yml", world["inventory"])
    assert verified.returncode == 0, (verified.stdout + verified.stderr)[-5000:]


def test_the_way_back_flips_the_shared_proxy_without_a_restart(world):
    server = world["server"]
    before = sorted(pod["metadata"]["name"] for pod in pods(server, PROXY))
    leader = leads(server)
    rolled_back = run_playbook("rollback.yml", world["inventory"], {"private_capi_rollback_names": [NAME]})
    assert rolled_back.returncode == 0, (rolled_back.stdout + rolled_back.stderr)[-5000:]
    assert hostedcluster_states(server) == {NAME: "legacy"}
    data = mode_data(server)
    assert data["mode"] == "passthrough" and all(data["applied." + name] == "passthrough" for name in before)
    assert sorted(pod["metadata"]["name"] for pod in pods(server, PROXY)) == before
    assert all(pod["status"]["containerStatuses"][0]["restartCount"] == 0 for pod in pods(server, PROXY))
    assert leader and leads(server) == leader


def test_the_shared_proxy_comes_out_and_every_deployment_is_as_it_was(world):
    server = world["server"]
    removed = run_module("api_proxy_apply", {"kubeconfig": server.kubeconfig, "state": "absent",
                                             "hcp_namespace": NAMESPACE, "deployments": list(fleet.CAPI_DEPLOYMENTS),
                                             "skip_missing": True, "wait_timeout": 180}, timeout=240)
    assert not removed.failed, (removed.get("msg"), removed.get("exception"))
    deleted = sorted((a["kind"], a["name"]) for a in removed["actions"] if a["action"] == "deleted")
    assert [item for item in deleted if item[1] == PROXY] == [
        ("Deployment", PROXY), ("PodDisruptionBudget", PROXY), ("Service", PROXY), ("ServiceAccount", PROXY)]
    found = deployments(server)
    assert PROXY not in found
    for name, template in world["templates"].items():
        assert found[name]["spec"]["template"] == template, name
    for path in ("/api/v1/namespaces/%s/services/%s", "/apis/policy/v1/namespaces/%s/poddisruptionbudgets/%s",
                 "/api/v1/namespaces/%s/serviceaccounts/%s"):
        assert server.request("GET", path % (NAMESPACE, PROXY)).status == 404, path
    again = run_module("api_proxy_apply", {"kubeconfig": server.kubeconfig, "state": "absent",
                                           "hcp_namespace": NAMESPACE, "deployments": list(fleet.CAPI_DEPLOYMENTS),
                                           "skip_missing": True})
    assert not again.failed and again["changed"] is False, again
    wait_for(lambda: leads(server), "the core manager to lead without the proxy", timeout=180, interval=1)
