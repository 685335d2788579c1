"""Shared helpers of the fleet tests: a local API server loaded with a fleet, and ansible-playbook runs against it."""
import json
import os
import subprocess
import sys

import yaml

from tests.conftest import REPO_ROOT
from tests.fixtures.hcp import build, fleet, state
from tests.kubeapi.testing import start_server

ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
FAST_VARS = {"private_capi_migrate_pause_settle_seconds": 0, "private_capi_migrate_health_stable_seconds": 0}


def start_fleet(tmp_path, spec):
    """A server (zero controller delays) with the fleet of spec loaded; returns (server, crds)."""
    seed = os.path.join(str(tmp_path), "seed")
    fleet.seed_fleet_dir(seed, spec)
    server = start_server(tmp_path, extra_args=["--deployment-delay", "0", "--pod-grace-delay", "0"])
    fleet.load_fleet_dir(server.kubeconfig, seed)
    with open(os.path.join(seed, "crds.yaml")) as handle:
        crds = [doc for doc in yaml.safe_load_all(handle) if doc]
    return server, crds


def write_inventory(tmp_path, kubeconfig, name="mc-1"):
    path = os.path.join(str(tmp_path), "inventory.yml")
    with open(path, "w") as handle:
        yaml.safe_dump({"all": {"children": {"management_clusters": {"hosts": {
            name: {"private_capi_kubeconfig": kubeconfig}}}}}}, handle)
    return path


def run_playbook(playbook, inventory, extra_vars=None, check=False, timeout=600):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    command = [ANSIBLE_PLAYBOOK, "-i", inventory, os.path.join(REPO_ROOT, "playbooks", playbook),
               "-e", json.dumps(dict(FAST_VARS, **(extra_vars or {})))]
    if check:
        command.append("--check")
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def hostedcluster_states(server):
    listed = server.request("GET", "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters").json()
    return {hc["metadata"]["name"]: (hc["metadata"].get("labels") or {}).get(fleet.STATE_LABEL)
            for hc in listed["items"]}


def snapshot(server, crds, namespace):
    return state.snapshot(build.RestSession(server.kubeconfig), namespace, crds)


def read_report(report_root):
    runs = sorted(os.listdir(report_root))
    with open(os.path.join(report_root, runs[-1], "report.json")) as handle:
        return json.load(handle)
