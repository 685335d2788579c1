"""The built collection tarball is clean and works when installed the way users install it."""
import os
import subprocess
import sys
import tarfile
import textwrap

from testenv import REPO_ROOT

BIN = os.path.dirname(sys.executable)
FORBIDDEN_PREFIXES = (".venv/", ".collections/", ".build/", ".git/", ".pytest_cache/", ".hypothesis/", ".ansible/", "tests/output/")


def _run(args, cwd, env=None):
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, "%s failed (rc=%s):\n%s\n%s" % (args, result.returncode, result.stdout, result.stderr)
    return result


def test_built_tarball_installs_and_serves_filters_by_fqcn(tmp_path):
    build_dir = tmp_path / "build"
    _run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(build_dir), REPO_ROOT], cwd=REPO_ROOT)
    tarballs = sorted(build_dir.glob("hypershift-private_capi-*.tar.gz"))
    assert len(tarballs) == 1, tarballs

    with tarfile.open(tarballs[0]) as tar:
        names = tar.getnames()
    leaked = [n for n in names if n.startswith(FORBIDDEN_PREFIXES) or "__pycache__" in n or n.endswith(".tar.gz")]
    assert not leaked, "build leaked local state into the tarball: %s" % leaked[:20]
    for required in ("MANIFEST.json", "FILES.json", "meta/runtime.yml", "plugins/filter/capi.py",
                     "plugins/module_utils/translate/groups.py", "plugins/filter/to_private_capi.yml", "LICENSE",
                     "CHANGELOG.rst", "changelogs/changelog.yaml", "meta/execution-environment.yml",
                     "meta/ee-requirements.txt", "meta/rbac/migrate.yaml", "tests/sanity/ignore-2.16.txt", "tests/sanity/ignore-2.20.txt"):
        assert required in names, "%s missing from the tarball" % required
    # only what runs from the artifact: what needs the test bed (testenv/, not shipped) stays in the repository
    checkout_only = [n for n in names if n.split("/")[0] in ("testenv", "benchmarks", "hack", "molecule", "Makefile")
                     or (n.startswith("tests/") and not n.startswith("tests/sanity"))]
    assert not checkout_only, "the tarball ships what runs only from a checkout: %s" % checkout_only[:20]
    with tarfile.open(tarballs[0]) as tar:
        python_sources = {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers()
                          if m.isfile() and m.name.endswith(".py")}
    needing_testenv = [n for n, text in python_sources.items() if "import testenv" in text or "from testenv" in text]
    assert not needing_testenv, needing_testenv

    # A user's environment: none of the checkout's Ansible settings (make exports ANSIBLE_CONFIG, whose
    # collections_path holds the checkout's own link and would make galaxy skip the install).
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env["ANSIBLE_CONFIG"] = str(tmp_path / "absent.cfg")
    collections_dir = tmp_path / "collections"
    _run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--offline", "--no-deps", "--force",
          "-p", str(collections_dir), str(tarballs[0])], cwd=str(tmp_path), env=env)
    assert (collections_dir / "ansible_collections" / "hypershift" / "private_capi" / "plugins" / "filter" / "capi.py").is_file()

    playbook = tmp_path / "use_filters.yml"
    playbook.write_text(textwrap.dedent("""\
        - name: Use the installed collection's filters by FQCN
          hosts: localhost
          gather_facts: false
          tasks:
            - name: Translate an apiVersion both ways
              ansible.builtin.assert:
                that:
                  - "'infrastructure.cluster.x-k8s.io/v1beta2' | hypershift.private_capi.to_private_capi
                     == 'infrastructure.cluster.hypershift.openshift.io/v1beta2'"
                  - "'cluster.hypershift.openshift.io/v1beta1' | hypershift.private_capi.to_standard_capi
                     == 'cluster.x-k8s.io/v1beta1'"
        """))
    env["ANSIBLE_COLLECTIONS_PATH"] = str(collections_dir)
    env["ANSIBLE_COLLECTIONS_SCAN_SYS_PATH"] = "false"
    result = _run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local", str(playbook)], cwd=str(tmp_path), env=env)
    assert "failed=0" in result.stdout and "ok=1" in result.stdout, result.stdout
