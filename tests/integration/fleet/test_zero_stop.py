"""hcp_migrate_window's zero_stop strategy on the real control plane: the controllers' Deployments are never scaled.

The proxy sidecars go in ahead, in pass-through (the api_proxy role, private_capi_proxy_mode passthrough), and their
Pods run for real (a real node, testenv.cluster.node: the proxy image built from the collection tarball); CAPI is
paused (hcp_quiesce); then one module run checks, copies, flips every sidecar of the namespace to translate (each
acknowledges it in the mode ConfigMap) and unpauses the copies. A sampler reads the Deployments every 0.2 s the whole
time: none is ever below its replicas available once the sidecars are in. Without sidecars the window is refused
before any change, naming the Deployment and the step that fixes it.
"""
import json
import os
import subprocess
import threading
import time

import pytest

from testenv import REPO_ROOT
from testenv.client import wait_for
from testenv.cluster.testing import container_processes
from testenv.hcp import fleet
from testenv.module_runner import run_module
from tests.integration.fleet.support import list_items, start_fleet

pytestmark = pytest.mark.slow

HC = "hc-01"
NS = "clusters-" + HC
DEPLOYMENTS = list(fleet.CAPI_DEPLOYMENTS)
PRIVATE = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/%s/" % NS
STANDARD = "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/" % NS
MODE = "/api/v1/namespaces/%s/configmaps/capi-proxy-mode" % NS
PLAYBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "playbooks", "proxy_ahead.yml")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server, _crds = start_fleet(tmp_path_factory.mktemp("zero-stop"), fleet.fleet_spec(1, machines=2))
    yield server
    assert server.stop() == 0


class Sampler(object):
    """Every Deployment's available replicas against its spec, read every 0.2 s: the samples where one was short of an
    available replica or scaled below the replicas it had when sampling began."""

    def __init__(self, server, namespaces=(NS,)):
        self.server = server
        self.namespaces = list(namespaces)
        self.replicas = {}
        self.short = []
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            for namespace in self.namespaces:
                for deployment in list_items(self.server, "/apis/apps/v1/namespaces/%s/deployments" % namespace):
                    wanted = deployment["spec"].get("replicas", 1)
                    available = (deployment.get("status") or {}).get("availableReplicas") or 0
                    key = (namespace, deployment["metadata"]["name"])
                    first = self.replicas.setdefault(key, wanted)  # never scaled below what it had
                    if key[1] in DEPLOYMENTS and (available < min(wanted, 1) or wanted < first):
                        self.short.append((time.monotonic(), namespace, deployment["metadata"]["name"], available,
                                           wanted))
            self.samples += 1
            self._stop.wait(0.2)

    def stop(self):
        self._stop.set()
        self._thread.join(10)
        return self.short


def window(server, **options):
    return run_module("hcp_migrate_window", dict({
        "kubeconfig": server.kubeconfig, "hcp_namespace": NS, "deployments": DEPLOYMENTS, "strategy": "zero_stop",
        "pause_group": "cluster.hypershift.openshift.io", "hostedcluster_name": HC, "flip_timeout": 60}, **options))


def pause_standard(server):
    paused = run_module("hcp_quiesce", {"kubeconfig": server.kubeconfig, "hcp_namespace": NS,
                                        "pause_group": "cluster.x-k8s.io"})
    assert not paused.failed, paused


def put_sidecars_in_ahead(server, topology="sidecar"):
    """The api_proxy role in pass-through for NS's CAPI-dependent Deployments (playbooks/proxy_ahead.yml); the run."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    command = [os.path.join(REPO_ROOT, ".venv", "bin", "ansible-playbook"), "-i", "localhost,", PLAYBOOK,
               "-e", json.dumps({"kubeconfig": server.kubeconfig, "namespace": NS, "deployments": DEPLOYMENTS,
                                 "topology": topology})]
    result = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=400, check=False)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    return result


def mode_data(server):
    response = server.request("GET", MODE)
    return response.json().get("data") or {} if response.status == 200 else None


def sidecar_pods(server):
    return sorted(pod["metadata"]["name"] for pod in list_items(server, "/api/v1/namespaces/%s/pods" % NS)
                  if not pod["metadata"].get("deletionTimestamp")
                  and any(c["name"] == "kube-apiserver-proxy" for c in pod["spec"]["containers"]))


def test_a_window_without_sidecars_is_refused_before_any_change(server):
    pause_standard(server)
    since = len(server.request_counts()["entries"])
    refused = window(server)
    assert refused.failed and refused["phase"] == "check"
    assert "cannot be flipped, nothing was changed" in refused["msg"]
    assert ("Deployment %s/cluster-api has no API proxy sidecar: put it in first with migrate_fleet.yml with private_capi_migrate_strategy=zero_stop"
            % NS) in refused["msg"]
    assert "the proxy mode ConfigMap %s/capi-proxy-mode: the ConfigMap does not exist" % NS in refused["msg"]
    assert [entry for entry in server.request_counts(since)["entries"]
            if entry["verb"] not in ("get", "list", "watch")] == []
    assert list_items(server, PRIVATE + "machines") == []


def test_the_zero_stop_window_flips_every_sidecar_and_never_stops_a_deployment(server):
    put_sidecars_in_ahead(server)
    pods = sidecar_pods(server)
    assert len(pods) == len(DEPLOYMENTS)
    deadline = time.monotonic() + 30
    while any(mode_data(server).get("applied." + pod) != "passthrough" for pod in pods):
        assert time.monotonic() < deadline, mode_data(server)
        time.sleep(0.2)
    standard_machines = sorted(m["metadata"]["name"] for m in list_items(server, STANDARD + "machines"))
    sampler = Sampler(server)
    try:
        done = window(server)
    finally:
        short = sampler.stop()
    assert not done.failed, (dict(done), done.stderr[-3000:])
    result = done
    assert result["strategy"] == "zero_stop" and result["stopped"] is False
    assert result["controllers_down_seconds"] == 0.0 and result["stopped_at"] is None
    assert [mark["name"] for mark in result["marks"]] == ["check", "copy", "flip", "resume", "signal"]
    assert result["flip"]["mode"] == "translate" and result["flip"]["changed"] is True
    assert result["flip"]["pods"] == pods and result["unpaused_at"]
    data = mode_data(server)
    assert data["mode"] == "translate" and all(data["applied." + pod] == "translate" for pod in pods)
    assert sorted(m["metadata"]["name"] for m in list_items(server, PRIVATE + "machines")) == standard_machines
    cluster = list_items(server, PRIVATE + "clusters")[0]
    assert not cluster["spec"].get("paused"), "the copies are unpaused"
    assert sampler.samples > 3 and short == [], "a Deployment was short of available replicas: %s" % short
    assert sidecar_pods(server) == pods, "the flip restarted no Pod"


def test_a_second_run_writes_no_flip_and_changes_no_pod(server):
    pods = sidecar_pods(server)
    again = window(server)
    assert not again.failed, again
    assert again["flip"]["changed"] is False and again["flip"]["pods"] == pods
    assert mode_data(server)["mode"] == "translate" and sidecar_pods(server) == pods


def test_the_zero_stop_rescue_flips_back_and_discards_the_copies_with_the_controllers_running(server):
    """A migration that failed after the flip (the lock held, the copies serving): hcp_migrate_rollback's rescue
    pauses the copies, flips every sidecar back to pass-through, discards the copies, unpauses the standard objects and
    moves the HostedCluster to failed - no Deployment scaled or patched, no Pod restarted."""
    holder = "fleet-20261129T000000Z-zerostop"
    locked = run_module("migration_state", {"kubeconfig": server.kubeconfig, "hostedcluster_name": HC,
                                            "hostedcluster_namespace": fleet.HC_NAMESPACE,
                                            "state": "in-progress", "holder": holder})
    assert not locked.failed, locked
    pods = sidecar_pods(server)
    templates = {d["metadata"]["name"]: d["spec"]["template"]
                 for d in list_items(server, "/apis/apps/v1/namespaces/%s/deployments" % NS)}
    sampler = Sampler(server)
    try:
        rescued = run_module("hcp_migrate_rollback", {
            "kubeconfig": server.kubeconfig, "path": "rescue", "hcp_namespace": NS, "hostedcluster_name": HC,
            "hostedcluster_namespace": fleet.HC_NAMESPACE, "holder": holder, "reason": "the test failure", "strategy": "zero_stop",
            "deployments": DEPLOYMENTS})
    finally:
        short = sampler.stop()
    assert not rescued.failed, (dict(rescued), rescued.stderr[-3000:])
    assert rescued["strategy"] == "zero_stop" and rescued["controllers_down_seconds"] == 0.0
    assert rescued["flip"]["mode"] == "passthrough" and rescued["flip"]["pods"] == pods
    data = mode_data(server)
    assert data["mode"] == "passthrough" and all(data["applied." + pod] == "passthrough" for pod in pods)
    assert list_items(server, PRIVATE + "machines") == [] and list_items(server, PRIVATE + "clusters") == []
    assert not list_items(server, STANDARD + "clusters")[0]["spec"].get("paused"), "the standard objects are unpaused"
    assert rescued["moved"]["state"] == "failed"
    assert short == [], "a Deployment was short of available replicas: %s" % short
    assert sidecar_pods(server) == pods and {
        d["metadata"]["name"]: d["spec"]["template"]
        for d in list_items(server, "/apis/apps/v1/namespaces/%s/deployments" % NS)} == templates


def sidecar_pid(server, pod):
    """The host pid of the sidecar container's process of Pod pod (a container of the real node, in its cgroup)."""
    pids = container_processes(server.request("GET", "/api/v1/namespaces/%s/pods/%s" % (NS, pod)).json(),
                               "kube-apiserver-proxy")
    return pids[0] if pids else None


def test_a_sidecar_killed_mid_flip_comes_back_in_the_mode_flipped_to(server):
    """The window again after the rescue (mode passthrough, the standard objects back): the moment the mode ConfigMap
    says translate, one sidecar's process is SIGKILLed before it can acknowledge. Its container restarts in the same Pod,
    reads the mode as it starts and acknowledges translate; the flip waits for it while it counts as running, and the
    window succeeds."""
    pause_standard(server)
    pods = sidecar_pods(server)
    victim = pods[0]
    pid = sidecar_pid(server, victim)
    assert pid, "the sidecar process of %s" % victim
    killed = []

    def kill_at_the_flip():
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed:
            data = mode_data(server) or {}
            if data.get("mode") == "translate":
                os.kill(pid, 9)
                killed.append(data.get("applied." + victim))
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_at_the_flip, daemon=True)
    killer.start()
    done = window(server)
    killer.join(10)
    assert killed, "the flip was never seen"
    assert not done.failed, (dict(done), done.stderr[-3000:])
    assert done["flip"]["mode"] == "translate"
    # The flip waits for the sidecars that run. The victim is among them when the flip saw it before its container was
    # reported down (then it waited for its acknowledgement); otherwise it was not waited for, and its new process reads
    # the mode as it starts (a sidecar that does not know its mode answers nothing but 503): either way it comes back
    # in translate, in its Pod.
    if victim in done["flip"]["pods"]:
        assert mode_data(server)["applied." + victim] == "translate"
    wait_for(lambda: (mode_data(server) or {}).get("applied." + victim) == "translate",
             "the restarted sidecar of %s to acknowledge translate" % victim, timeout=120)
    assert sidecar_pods(server) == pods, "no Pod replaced: the container restarted in its Pod"

    def restarts():
        pod = server.request("GET", "/api/v1/namespaces/%s/pods/%s" % (NS, victim)).json()
        return [c["restartCount"] for c in pod["status"]["containerStatuses"] if c["name"] == "kube-apiserver-proxy"]
    # the kubelet reports the restart in the Pod's status on its own time, which may come after the new process's
    # acknowledgement (seen under load, 2026-12-02: restartCount still 0 at the first read)
    wait_for(lambda: restarts() != [0], "the restart of %s's sidecar in its status" % victim, timeout=60, interval=0.5)
    assert restarts() == [1]
