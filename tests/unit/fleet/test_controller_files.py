"""controller_files' parents: the missing directories of the run's outputs made first, parents first, each once; in
check mode none; a second run changes nothing (ansible-playbook on localhost, the collection as ansible.cfg finds it)."""
import json
import os
import subprocess
import sys

from ansible_collections.hypershift.private_capi.plugins.action.controller_files import missing_directories
from testenv import REPO_ROOT

PLAY = """- hosts: localhost
  gather_facts: false
  tasks:
    - hypershift.private_capi.controller_files:
        files:
          - {path: "%(root)s/run-1/clusters/a.json", content: "{}"}
          - {path: "%(root)s/run-1/b.json", content: "[]"}
        parents: true
      register: written
    - hypershift.private_capi.controller_files:
        files: [{path: "%(out)s", content: "{{ written | to_json }}"}]
      check_mode: false
"""


def test_missing_directories_parents_first_each_once(tmp_path):
    root = str(tmp_path)
    paths = [root + "/a/b/one.json", root + "/a/b/two.json", root + "/a/three.json", root + "/four.json"]
    assert missing_directories(paths) == [root + "/a", root + "/a/b"]
    os.makedirs(root + "/a/b")
    assert missing_directories(paths) == []


def run(tmp_path, *args):
    playbook = tmp_path / "play.yml"
    out = tmp_path / "out.json"
    playbook.write_text(PLAY % {"root": tmp_path / "reports", "out": out})
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"))
    completed = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                                "-c", "local", str(playbook)] + list(args), cwd=REPO_ROOT, env=env,
                               capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return json.loads(out.read_text())


def test_parents_creates_the_directories_once_and_check_mode_none(tmp_path):
    root = str(tmp_path / "reports")
    planned = run(tmp_path, "--check")
    assert planned["changed"] and planned["directories"] == [root, root + "/run-1", root + "/run-1/clusters"]
    assert not os.path.exists(root)
    written = run(tmp_path)
    assert written["changed"] and written["directories"] == planned["directories"]
    assert json.load(open(root + "/run-1/clusters/a.json")) == {} and oct(os.stat(root + "/run-1").st_mode & 0o777) == "0o755"
    again = run(tmp_path)
    assert not again["changed"] and again["directories"] == []
