"""controller_files' parents: the missing directories of the run's outputs made first, parents first, each once; in
check mode none; a second run changes nothing (ansible-playbook on localhost, the collection as ansible.cfg finds it)."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.hypershift.private_capi.plugins.action.controller_files import (
    FileSpecError, directory_list, file_specs, missing_directories)
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

DIRECTORIES_PLAY = """- hosts: localhost
  gather_facts: false
  tasks:
    - hypershift.private_capi.controller_files:
        directories: ["%(root)s/run-1/clusters"]
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


def test_directories_are_made_with_their_parents_and_need_no_files(tmp_path):
    root = str(tmp_path)
    assert missing_directories([], [root + "/a/b", root + "/a"]) == [root + "/a", root + "/a/b"]
    assert missing_directories([root + "/c/one.json"], [root + "/a"]) == [root + "/a", root + "/c"]
    assert missing_directories([], [root]) == []
    assert file_specs(None, [root + "/a"]) == [] and directory_list(None) == []


@pytest.mark.parametrize("directories, files, named", [
    (["reports/run-1"], None, "directories[0] 'reports/run-1' is not an absolute path"),
    ("/tmp/one", None, "directories must be a list"),
    (None, [], "files must be a non-empty list"),
    ([], None, "files must be a non-empty list"),
])
def test_bad_directories_or_nothing_to_do_is_refused_naming_it(directories, files, named):
    with pytest.raises(FileSpecError) as refused:
        file_specs(files, directory_list(directories))
    assert named in str(refused.value)


def run(tmp_path, *args, play=PLAY):
    playbook = tmp_path / "play.yml"
    out = tmp_path / "out.json"
    playbook.write_text(play % {"root": tmp_path / "reports", "out": out})
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


def test_directories_option_creates_once_and_check_mode_none(tmp_path):
    root = str(tmp_path / "reports")
    planned = run(tmp_path, "--check", play=DIRECTORIES_PLAY)
    assert planned["changed"] and planned["directories"] == [root, root + "/run-1", root + "/run-1/clusters"]
    assert planned["files"] == [] and not os.path.exists(root)
    written = run(tmp_path, play=DIRECTORIES_PLAY)
    assert written["changed"] and os.path.isdir(root + "/run-1/clusters")
    assert oct(os.stat(root + "/run-1/clusters").st_mode & 0o777) == "0o755"
    assert not run(tmp_path, play=DIRECTORIES_PLAY)["changed"]
