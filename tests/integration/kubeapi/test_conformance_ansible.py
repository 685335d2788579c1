"""kubernetes.core (k8s, k8s_info, k8s_scale, k8s_json_patch; apply, server-side apply, wait, state: absent,
check mode) through the real ansible-playbook against the local API server: playbooks/conformance.yml."""
import os
import re
import subprocess

import yaml

from testenv.upstream import CAPI_EXAMPLES_V1BETA2
from tests.conftest import REPO_ROOT

ANSIBLE_PLAYBOOK = os.path.join(REPO_ROOT, ".venv", "bin", "ansible-playbook")
PLAYBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "playbooks", "conformance.yml")
RECAP_RE = re.compile(r"^localhost\s*:\s*(?P<counts>(?:\w+=\d+\s*)+)$", re.MULTILINE)


def restricted_kubeconfig(server):
    """A kubeconfig for the static test user alice (no RBAC grants)."""
    with open(server.kubeconfig) as handle:
        config = yaml.safe_load(handle)
    config["users"][0]["user"]["token"] = server.token_for("alice")
    path = os.path.join(server.workdir, "alice.kubeconfig")
    with open(path, "w") as handle:
        yaml.safe_dump(config, handle)
    return path


def run_playbook(server, *extra_args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
               K8S_AUTH_KUBECONFIG=server.kubeconfig)
    command = [ANSIBLE_PLAYBOOK, PLAYBOOK, "-e", "capi_examples=%s" % CAPI_EXAMPLES_V1BETA2,
               "-e", "restricted_kubeconfig=%s" % restricted_kubeconfig(server)] + list(extra_args)
    completed = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300,
                               check=False)
    output = completed.stdout + completed.stderr
    match = RECAP_RE.search(completed.stdout)
    assert match, "no PLAY RECAP in ansible-playbook output:\n%s" % output
    counts = {key: int(value) for key, value in (item.split("=") for item in match.group("counts").split())}
    return completed.returncode, counts, output


def test_kubernetes_core_modules_against_the_local_server(kubeapi_capi):
    server = kubeapi_capi
    server.reset_requests()
    returncode, counts, output = run_playbook(server)
    assert returncode == 0 and counts["failed"] == 0, output
    assert counts["rescued"] == 4, output
    by_verb = server.request_counts()["by_verb"]
    assert by_verb.get("create", 0) >= 5 and by_verb.get("patch", 0) >= 5 and by_verb.get("delete", 0) >= 3, by_verb
    entries = server.request_counts()["entries"]
    assert any(e["code"] == 403 and e["user"] == "alice" for e in entries), "the restricted user was refused"
    assert server.request("GET", "/apis/apps/v1/namespaces/ansible/deployments/web").status == 404
    assert server.request("GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters/my-cluster").status \
        == 404
    settings = server.request("GET", "/api/v1/namespaces/ansible/configmaps/settings").json()
    assert settings["data"] == {"mode": "fast"}
