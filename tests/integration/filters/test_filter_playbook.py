"""Runs tests/integration/playbooks/filters.yml with the real ansible-playbook: the filters by FQCN."""
import os
import re
import subprocess

from testenv.upstream import CAPI_EXAMPLES
from testenv import REPO_ROOT

ANSIBLE_PLAYBOOK = os.path.join(REPO_ROOT, ".venv", "bin", "ansible-playbook")
PLAYBOOK = os.path.join(REPO_ROOT, "tests", "integration", "playbooks", "filters.yml")
RECAP_RE = re.compile(r"^localhost\s*:\s*(?P<counts>(?:\w+=\d+\s*)+)$", re.MULTILINE)
EXPECTED_OK = 10  # tasks in filters.yml that run without tags (the failing one in the block is rescued)


def run_playbook(*extra_args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    command = [ANSIBLE_PLAYBOOK, PLAYBOOK, "-e", "examples_dir=%s" % CAPI_EXAMPLES] + list(extra_args)
    completed = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    output = completed.stdout + completed.stderr
    match = RECAP_RE.search(completed.stdout)
    assert match, "no PLAY RECAP in ansible-playbook output:\n%s" % output
    counts = {key: int(value) for key, value in (item.split("=") for item in match.group("counts").split())}
    return completed.returncode, counts, output


def test_filters_playbook_passes_on_real_examples():
    returncode, counts, output = run_playbook()
    assert returncode == 0, output
    assert counts["failed"] == 0, output
    assert counts["ok"] == EXPECTED_OK, output
    assert counts["rescued"] == 1, output  # the bad-version conversion was refused and the refusal checked


def test_bad_input_fails_with_the_filter_message():
    returncode, counts, output = run_playbook("--tags", "bad_input")
    assert returncode == 2, output
    assert counts["failed"] == 1 and counts["ok"] == 0, output
    assert "to_private_capi: cannot translate int 42: expected an apiVersion string, a URL path" in output, output


def test_bad_filter_arguments_fail_with_the_filter_message():
    """Issue 16 item 9f through real templating: the filters' own messages, not Python's missing-argument TypeError."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    playbook = os.path.join(REPO_ROOT, "tests", "integration", "playbooks", "filter_arguments.yml")
    completed = subprocess.run([ANSIBLE_PLAYBOOK, playbook], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                               timeout=300, check=False)
    output = completed.stdout + completed.stderr
    match = RECAP_RE.search(completed.stdout)
    assert completed.returncode == 0 and match, output
    counts = {key: int(value) for key, value in (item.split("=") for item in match.group("counts").split())}
    assert counts["rescued"] == 4 and counts["failed"] == 0, output
    assert "required positional argument" not in output, output
