"""`molecule test -s default`: a fleet of 2 HostedClusters on the local API server migrated by
playbooks/migrate_fleet.yml (converge), the same playbook again changing nothing (idempotence), then
playbooks/verify_fleet.yml and the operator's checks (verify); `molecule syntax -s kind` for the Docker scenario."""
import os
import re
import subprocess
import sys

from testenv import REPO_ROOT

MOLECULE = os.path.join(os.path.dirname(sys.executable), "molecule")
ACTIONS = ("create", "prepare", "converge", "idempotence", "verify", "destroy")
HOSTS = ("management-cluster/clusters/hc-01", "management-cluster/clusters/hc-02")


def _molecule(*args):
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["ANSIBLE_CONFIG"] = os.path.join(REPO_ROOT, "ansible.cfg")
    env["NO_COLOR"] = "1"
    env["PYTHONUNBUFFERED"] = "1"  # molecule's log lines (stderr) and Ansible's output (stdout) in their real order
    result = subprocess.run([MOLECULE] + list(args), cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=900, check=False)
    return result.returncode, result.stdout


def _step_output(output, action, previous):
    """The Ansible output molecule printed for one action: what lies between the previous action's end and its own."""
    start = output.index("[default > %s] Executed" % previous)
    return output[start:output.index("[default > %s] Executed" % action, start)]


def _recap(step, host):
    found = re.search(r"^%s\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=0\s+failed=(\d+)" % re.escape(host), step, re.M)
    assert found, "no recap line for %s in:\n%s" % (host, step[-3000:])
    return tuple(int(value) for value in found.groups())


def test_molecule_default_scenario_migrates_the_fleet_idempotently_and_verifies():
    returncode, output = _molecule("test", "-s", "default")
    assert returncode == 0, output[-6000:]
    for action in ACTIONS:
        assert "[default > %s] Executed: Successful" % action in output, \
            "molecule did not report %s as successful:\n%s" % (action, output[-4000:])

    converge = _step_output(output, "converge", "prepare")
    assert "PLAY [Migrate each selected HostedCluster]" in converge, converge[-3000:]
    for host in HOSTS:
        ok, changed, failed = _recap(converge, host)
        assert failed == 0 and changed >= 5, (host, ok, changed, converge[-3000:])

    # idempotence: molecule runs the whole fleet playbook again; every host's recap shows nothing changed and the
    # migrated HostedClusters are no longer selected
    idempotence = _step_output(output, "idempotence", "converge")
    assert "PLAY [Plan the fleet run" in idempotence, idempotence[-3000:]
    for host in ("localhost", "management-cluster"):
        ok, changed, failed = _recap(idempotence, host)
        assert (changed, failed) == (0, 0) and ok > 3, (host, ok, changed, idempotence[-3000:])
    assert not any(re.search(r"^%s\s+:" % re.escape(host), idempotence, re.M) for host in HOSTS), idempotence[-3000:]

    verify = _step_output(output, "verify", "idempotence")
    assert "TASK [Check each standard CAPI CRD has an Established twin" in verify
    assert "Check every HostedCluster is labelled migrated and holds no lock" in verify


def test_molecule_kind_scenario_is_well_formed():
    returncode, output = _molecule("syntax", "-s", "kind")
    assert returncode == 0 and "[kind > syntax] Executed: Successful" in output, output[-4000:]
