"""`molecule test -s kind`, every step of its sequence: a kind cluster built here (testenv/kind.py), with one
HostedCluster under the real CAPI v1.14.2 managers in their containers (testenv/capi_hosted.py), migrated by
playbooks/migrate_fleet.yml with the default zero-stop strategy (converge), the same playbook again changing nothing
(idempotence), then playbooks/verify_fleet.yml, the operator's checks, kind's node, nothing replaced, the managers
leading through their sidecars and a scale on the private group (verify)."""
import os
import re
import subprocess
import sys

from testenv import REPO_ROOT

MOLECULE = os.path.join(os.path.dirname(sys.executable), "molecule")
ACTIONS = ("syntax", "create", "prepare", "converge", "idempotence", "verify", "destroy")


def _molecule(*args):
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["ANSIBLE_CONFIG"] = os.path.join(REPO_ROOT, "ansible.cfg")
    env["NO_COLOR"] = "1"
    env["PYTHONUNBUFFERED"] = "1"  # molecule's log lines (stderr) and Ansible's output (stdout) in their real order
    result = subprocess.run([MOLECULE] + list(args), cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=1800, check=False)
    return result.returncode, result.stdout


def _step_output(output, action, previous):
    """The Ansible output molecule printed for one action: what lies between the previous action's end and its own."""
    start = output.index("[kind > %s] Executed" % previous)
    return output[start:output.index("[kind > %s] Executed" % action, start)]


def _recap(step, host):
    found = re.search(r"^%s\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=0\s+failed=(\d+)" % re.escape(host), step, re.M)
    assert found, "no recap line for %s in:\n%s" % (host, step[-3000:])
    return tuple(int(value) for value in found.groups())


def test_molecule_kind_scenario_passes_every_step_on_a_kind_cluster_built_here():
    returncode, output = _molecule("test", "-s", "kind")
    assert returncode == 0, output[-6000:]
    for action in ACTIONS:
        assert "[kind > %s] Executed: Successful" % action in output, \
            "molecule did not report %s as successful:\n%s" % (action, output[-4000:])
    assert output.count("[kind > destroy] Executed: Successful") == 2, output[-4000:]  # first and last

    converge = _step_output(output, "converge", "prepare")
    ok, changed, failed = _recap(converge, "management-cluster/clusters/wl")
    assert failed == 0 and changed >= 5, (ok, changed, converge[-3000:])

    idempotence = _step_output(output, "idempotence", "converge")
    for host in ("localhost", "management-cluster"):
        ok, changed, failed = _recap(idempotence, host)
        assert (changed, failed) == (0, 0) and ok > 3, (host, ok, changed, idempotence[-3000:])

    verify = _step_output(output, "verify", "idempotence")
    node = re.search(r"private-capi-molecule-control-plane\s+Ready\s+control-plane\s+\S+\s+(v\S+)\s.*(containerd://[\d.]+)",
                     verify)
    assert node and node.group(1) == "v1.34.4", verify[-3000:]
    print("kind's node: kubelet %s, %s" % node.groups())
    found = re.search(r"migrated with the controllers up \(controllers_down_seconds 0[^\n\"]*", verify)
    assert found, verify[-3000:]
    print(found.group(0))
    # destroy deleted the cluster and stopped the dockerd testenv.kind had started
    containers = subprocess.run(["docker", "ps", "-aq", "--filter", "name=private-capi-molecule"],
                                capture_output=True, text=True, check=False)
    assert containers.returncode != 0 or not containers.stdout.strip(), containers.stdout
