"""`molecule test -s default`: converge, idempotence and verify of the roles against the local API server."""
import os
import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_molecule_default_scenario_converges_idempotently_and_verifies():
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["ANSIBLE_CONFIG"] = os.path.join(REPO_ROOT, "ansible.cfg")
    env["NO_COLOR"] = "1"
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "molecule"), "test", "-s", "default"],
                            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    for action in ("create", "converge", "idempotence", "verify", "destroy"):
        assert "%s: Executed: Successful" % action in output, "molecule did not report %s as successful:\n%s" % (action, output[-4000:])
    assert "failed=0" in output and "successful=7" in output
