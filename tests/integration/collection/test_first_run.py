"""A new user's first runs, from the collection installed from its tarball (issue 34): `-i localhost,` runs the
localhost plays locally (no SSH), a run that selects no HostedCluster fails saying why unless
private_capi_fleet_allow_empty, nothing is written inside the installed collection, a check-mode run writes no report,
reports go to the current directory, and translate_examples.yml says what data it needs. No control plane needed."""
import json
import os
import shutil
import subprocess
import sysconfig
import tempfile

import pytest

from testenv import REPO_ROOT
from tests.integration.collection.test_collection_build import BIN, _run

NO_INVENTORY = ("the inventory has no management cluster: group management_clusters is empty and there is no "
                "HostedCluster host")
ALLOW = "set private_capi_fleet_allow_empty=true"


def _listing(root):
    """Every file and directory under root with its mtime and size: what a run must leave as it found it."""
    found = {}
    for directory, subdirs, files in os.walk(root):
        for name in subdirs + files:
            path = os.path.join(directory, name)
            status = os.lstat(path)
            found[os.path.relpath(path, root)] = (status.st_mtime_ns, status.st_size)
    return found


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The tarball built and installed as a user does, kubernetes.core beside it, and a user's environment: none of
    the checkout's Ansible settings. The venv's .pth puts the checkout's .collections on sys.path, so
    ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false keeps Ansible to the installed copy."""
    tmp_path = tmp_path_factory.mktemp("first-run")
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(tmp_path / "absent.cfg"), ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false")
    build_dir = tmp_path / "build"
    _run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(build_dir), REPO_ROOT],
         cwd=REPO_ROOT)
    tarballs = sorted(build_dir.glob("hypershift-private_capi-*.tar.gz"))
    assert len(tarballs) == 1, tarballs
    collections = tmp_path / "collections"
    _run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--offline", "--no-deps", "--force",
          "-p", str(collections), str(tarballs[0])], cwd=str(tmp_path), env=env)
    kubernetes_core = os.path.join(sysconfig.get_paths()["purelib"], "ansible_collections", "kubernetes", "core")
    assert os.path.isdir(kubernetes_core), "kubernetes.core is not in the venv (%s): make venv" % kubernetes_core
    shutil.copytree(kubernetes_core, str(collections / "ansible_collections" / "kubernetes" / "core"), symlinks=True)
    collection = collections / "ansible_collections" / "hypershift" / "private_capi"
    assert (collection / "playbooks" / "migrate_fleet.yml").is_file()
    del env["ANSIBLE_CONFIG"]  # no ansible.cfg at all: the user's cwd has none
    env.update(ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_NOCOLOR="1")
    return {"collection": str(collection), "env": env, "tmp": tmp_path}


def playbook(installed, name, *arguments, cwd=None):
    """ansible-playbook hypershift.private_capi.<name> -i localhost, in an empty directory of the user's; returns
    (returncode, output, the collection changed: [paths], the files the run left in its directory)."""
    cwd = cwd or tempfile.mkdtemp(prefix="cwd-%s-" % name, dir=str(installed["tmp"]))
    os.makedirs(cwd, exist_ok=True)
    before = _listing(installed["collection"])
    result = subprocess.run([os.path.join(BIN, "ansible-playbook"), "hypershift.private_capi." + name, "-i", "localhost,"]
                            + list(arguments), cwd=cwd, env=installed["env"], capture_output=True, text=True,
                            timeout=300, check=False)
    after = _listing(installed["collection"])
    changed = sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))
    return result.returncode, result.stdout + result.stderr, changed, sorted(_listing(cwd))


def assert_local(output):
    assert "UNREACHABLE" not in output and "ssh" not in output.lower(), output[-3000:]


def test_verify_fleet_check_without_inventory_runs_locally_and_fails_saying_there_is_no_inventory(installed):
    code, output, changed, left = playbook(installed, "verify_fleet", "--check")
    assert_local(output)
    assert code != 0, output[-3000:]
    assert "0 HostedClusters selected: " + NO_INVENTORY in output and ALLOW in output, output[-3000:]
    # the installed copy ran (the failure names its task file), and wrote nothing in it nor in the user's directory
    assert os.path.join(installed["collection"], "roles", "fleet", "tasks", "select.yml") in output
    assert changed == [], changed
    assert left == [], left


def test_verify_fleet_check_with_an_empty_fleet_allowed_succeeds_and_writes_nothing(installed):
    code, output, changed, left = playbook(installed, "verify_fleet", "--check", "-e", "private_capi_fleet_allow_empty=true")
    assert_local(output)
    assert code == 0, output[-3000:]
    assert "Nothing to do: " + NO_INVENTORY in output
    assert "not written (check mode; -e private_capi_verify_report_in_check_mode=true writes it)" in output
    assert (changed, left) == ([], [])


def test_migrate_fleet_check_without_inventory_runs_locally_and_fails_saying_there_is_no_inventory(installed):
    code, output, changed, left = playbook(installed, "migrate_fleet", "--check")
    assert_local(output)
    assert code != 0, output[-3000:]
    assert "0 HostedClusters selected: " + NO_INVENTORY in output and ALLOW in output, output[-3000:]
    assert "no report written (check mode; -e private_capi_fleet_report_in_check_mode=true writes one)" in output
    assert (changed, left) == ([], [])


def test_a_real_run_with_an_empty_fleet_allowed_writes_its_reports_in_the_current_directory(installed):
    cwd = str(installed["tmp"] / "user-dir")
    code, output, changed, left = playbook(installed, "migrate_fleet", "-e", "private_capi_fleet_allow_empty=true",
                                           cwd=cwd)
    assert_local(output)
    assert code == 0, output[-3000:]
    assert changed == [], changed
    runs = [path for path in left if path.count(os.sep) == 1 and path.startswith("reports" + os.sep + "fleet-")]
    assert len(runs) == 1, left
    with open(os.path.join(cwd, runs[0], "report.json")) as handle:
        report = json.load(handle)
    assert (report["clusters_total"], report["check_mode"]) == (0, False)
    assert "report in %s" % os.path.join(cwd, runs[0]) in output
    code, output, changed, left = playbook(installed, "verify_fleet", "-e", "private_capi_fleet_allow_empty=true",
                                           cwd=cwd)
    assert code == 0 and changed == [], output[-3000:]
    assert len([path for path in left if path.startswith(os.path.join("reports", "verify-"))]) == 1, left


def test_rollback_without_inventory_fails_saying_there_is_no_inventory(installed):
    code, output, changed, left = playbook(installed, "rollback", "--check", "-e", "private_capi_rollback_names=[hc-01]")
    assert_local(output)
    assert code != 0, output[-3000:]
    assert "private_capi_rollback_names: 'hc-01' matches 0 HostedClusters; found no HostedCluster: " + NO_INVENTORY in output
    assert ALLOW in output, output[-3000:]
    assert (changed, left) == ([], [])


def test_translate_examples_says_what_private_capi_examples_dir_must_hold(installed):
    code, output, changed, _left = playbook(installed, "translate_examples")
    assert_local(output)
    assert code != 0, output[-3000:]
    # the examples do not ship in the tarball: the default folder is missing, and the message says what to give
    assert "No Cluster API examples in private_capi_examples_dir (%s: not a directory)" % os.path.join(
        installed["collection"], "testenv", "upstream", "capi", "examples") in output, output[-3000:]
    assert "in subfolders v1beta1/ and v1beta2/, as in testenv/upstream/capi/examples" in output
    assert "Set it (-e private_capi_examples_dir=DIR)" in output
    assert changed == []
