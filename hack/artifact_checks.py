"""The collection as a user installs it, checked the way Galaxy, Automation Hub and a certification reviewer check it.

    python hack/artifact_checks.py [build|sanity-2.16|sanity-2.20|...|importer|docs|changelog|all]...

`build` makes the tarball (ansible-galaxy collection build, galaxy.yml's build_ignore) and installs it with
`ansible-galaxy collection install --no-deps` into a fresh collections path, with kubernetes.core beside it (from
the `ansible` package of the dev venv: Galaxy is not reachable here). Every other check runs on that installed
copy, never on the checkout:

- `sanity-<ansible-core minor>`: ansible-test sanity (all tests, --requirements) with that ansible-core from PyPI in
  a venv of its own. 2.16 runs on this machine's Python 3.11; 2.20 needs Python 3.12+, which this machine lacks: it
  runs on CPython 3.14 from the python-build-standalone tree that the Go module github.com/kluctl/go-embed-python
  carries (the Go module proxy is reachable where python.org is not). Each check uses tests/sanity/ignore-<minor>.txt
  of the artifact, so those files must name only shipped files.
- `importer`: galaxy-importer (REQUIRE_V1_OR_GREATER, its ansible-lint) on the tarball, with ansible-core alone (no
  kubernetes.core, as Galaxy imports it): no warning, no error, and every module, filter and inventory plugin's
  documentation rendered (importer_result.json).
- `docs`: antsibull-docs lint-collection-docs (with plugin docs) on the installed collection.
- `changelog`: antsibull-changelog lint (fragments) and lint-changelog-yaml on the installed collection.

Tools and interpreters are cached per version under ${XDG_CACHE_HOME:-~/.cache}/hypershift-private-capi (like the
control plane's binaries), so only the first run on a machine downloads. `all` (the default) runs every check and
exits non-zero if one failed, after running the others. Logs: .build/artifact/<check>.log.
"""
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"
OUT = REPO / ".build" / "artifact"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hypershift-private-capi"

# ansible-core versions the collection supports at both ends (meta/runtime.yml requires_ansible), and the Python each
# runs on. "system" is the Python running this script (3.11 here, supported by 2.16 through 2.19).
ANSIBLE_CORE = {
    "2.16": ("2.16.19", "system"),
    "2.20": ("2.20.10", "3.14"),
}
STANDALONE_PYTHON = {
    # minor: (Go module, version, directory of the linux-amd64 tree inside it)
    "3.14": ("github.com/kluctl/go-embed-python", "v0.0.0-3.14.6-20260610-1", "python/internal/data/linux-amd64"),
}
# galaxy-importer lints and reads the docs of the tarball alone, extracted, with ansible-core alone as Galaxy and
# Automation Hub import it: no `ansible` package, so the declared dependency kubernetes.core is absent (every doc
# fragment a module uses must be the collection's own).
GALAXY_IMPORTER = ["galaxy-importer==0.4.44", "ansible-lint==26.10.1", "ansible-core==2.19.14"]
# The one warning galaxy-importer gives for any ignore entry: accepted only while every entry of every ignore file is
# validate-modules:missing-gplv3-license, which an Apache-2.0 module cannot satisfy (the test looks for a GPLv3 header).
ACCEPTED_IGNORE = "validate-modules:missing-gplv3-license"
ANTSIBULL_DOCS = ["antsibull-docs==2.28.0", "ansible-core==2.19.14"]
IMPORTER_CONFIG = """[galaxy-importer]
REQUIRE_V1_OR_GREATER = True
RUN_ANSIBLE_LINT = True
RUN_ANSIBLE_TEST = False
RUN_FLAKE8 = False
LOG_LEVEL_MAIN = INFO
"""


def log(message):
    print("[artifact] %s" % message, flush=True)


def run(args, **kwargs):
    """Run a command, its output to the caller's stdout; return its exit code."""
    kwargs.setdefault("check", False)
    return subprocess.run([str(a) for a in args], **kwargs).returncode


def clean_env(tool_venv=None, **extra):
    """A user's environment: none of the checkout's Ansible settings (make exports ANSIBLE_CONFIG) or its venv on the
    PATH; tool_venv's bin first on it when given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV", "PYTHON"))}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p]
    env["PATH"] = os.pathsep.join(([str(tool_venv / "bin")] if tool_venv else []) + path)
    env.update(extra)
    return env


def uv():
    return [str(VENV_BIN / "python"), "-m", "uv"]


def venv(name, packages, python=sys.executable):
    """A cached venv with exactly these packages (the name carries their versions)."""
    path = CACHE / "venvs" / name
    stamp = path / ".installed"
    if stamp.exists():
        return path
    shutil.rmtree(path, ignore_errors=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    log("creating %s (%s)" % (path, " ".join(packages)))
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(path)], check=True)
    subprocess.run(uv() + ["pip", "install", "--quiet", "--python", str(path / "bin" / "python")] + packages + ["pip"],
                   check=True)
    stamp.touch()
    return path


def standalone_python(minor):
    """CPython <minor> from the Go module that carries python-build-standalone's tree, materialised once."""
    module, version, subdir = STANDALONE_PYTHON[minor]
    root = CACHE / "python" / ("%s-%s" % (minor, version))
    binary = root / "bin" / ("python" + minor)
    if binary.exists():
        return binary
    log("materialising CPython %s from the Go module %s@%s" % (minor, module, version))
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(["go", "mod", "init", "pyfetch"], cwd=work, check=True, capture_output=True)
        found = subprocess.run(["go", "mod", "download", "-json", "%s@%s" % (module, version)], cwd=work, check=True,
                               capture_output=True, text=True)
    source = Path(json.loads(found.stdout)["Dir"]) / subdir
    staging = Path(str(root) + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for entry in json.loads((source / "files.json").read_text())["files"]:
        target, origin = staging / entry["name"], source / entry["name"]
        if entry.get("symlink"):
            target.symlink_to(entry["symlink"])
        elif entry["perm"] & 0x80000000:  # Go's fs.ModeDir
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            if origin.exists():
                shutil.copyfile(origin, target)
            else:  # the module keeps its large files gzipped
                with gzip.open(str(origin) + ".gz") as packed, open(target, "wb") as out:
                    shutil.copyfileobj(packed, out)
            target.chmod(entry["perm"] & 0o777)
    shutil.rmtree(root, ignore_errors=True)
    staging.rename(root)
    subprocess.run([str(binary), "-c", "import ssl, sqlite3, venv"], check=True)
    return binary


def installed_root():
    return OUT / "collections" / "ansible_collections" / "hypershift" / "private_capi"


def tarball():
    found = sorted(OUT.glob("hypershift-private_capi-*.tar.gz"))
    if len(found) != 1:
        raise SystemExit("expected one tarball in %s, found %s: run `build` first" % (OUT, found))
    return found[0]


def check_build():
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    env = clean_env(ANSIBLE_CONFIG=str(OUT / "absent.cfg"))
    code = run([VENV_BIN / "ansible-galaxy", "collection", "build", "--output-path", OUT, REPO], env=env)
    if code:
        return code
    code = run([VENV_BIN / "ansible-galaxy", "collection", "install", "--offline", "--no-deps", "--force",
                "-p", OUT / "collections", tarball()], env=env, cwd=OUT)
    if code:
        return code
    core = subprocess.run([str(VENV_BIN / "python"), "-c",
                           "import ansible_collections.kubernetes.core as c; print(list(c.__path__)[0])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    shutil.copytree(core, OUT / "collections" / "ansible_collections" / "kubernetes" / "core")
    log("installed %s into %s" % (tarball().name, OUT / "collections"))
    return 0


def work_copy(prefix):
    """A private copy of the installed collections tree (ansible-test writes into the collection's tests/output)."""
    work = Path(tempfile.mkdtemp(prefix="private-capi-" + prefix))  # outside any git work tree
    shutil.copytree(OUT / "collections" / "ansible_collections", work / "ansible_collections", symlinks=True)
    return work, work / "ansible_collections" / "hypershift" / "private_capi"


def seed_pip_bootstrap(ansible_venv):
    """ansible-test fetches get-pip from a host that is unreachable here: put the stand-in where it looks first,
    under every pip version this ansible-test pins, with the pip wheel beside it for interpreters without ensurepip."""
    cache = Path.home() / ".ansible" / "test" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    pins = set()
    ansible_test = glob.glob(str(ansible_venv / "lib" / "python*" / "site-packages" / "ansible_test"))[0]
    for source in [os.path.join(ansible_test, "_internal", "python_requirements.py")] + glob.glob(
            os.path.join(ansible_test, "_data", "requirements", "*.txt")):
        pins.update(re.findall(r"""(?m)(?:\bpip\s*=\s*['"]|^pip==)([0-9][0-9.]*)""", Path(source).read_text()))
    for pin in pins:
        shutil.copyfile(REPO / "hack" / "get_pip_bootstrap.py", cache / ("get_pip_%s.py" % pin.replace(".", "_")))
        if not list(cache.glob("pip-%s-*.whl" % pin)):
            subprocess.run([str(VENV_BIN / "python"), "-m", "pip", "download", "--quiet", "--no-deps",
                            "--only-binary", ":all:", "-d", str(cache), "pip==%s" % pin], check=True)


def check_sanity(minor):
    version, python = ANSIBLE_CORE[minor]
    interpreter = Path(sys.executable) if python == "system" else standalone_python(python)
    py = "%d.%d" % sys.version_info[:2] if python == "system" else python
    ansible_venv = venv("ansible-core-%s-py%s" % (version, py), ["ansible-core==%s" % version], python=interpreter)
    seed_pip_bootstrap(ansible_venv)
    work, root = work_copy("sanity-%s." % minor)
    try:
        log("ansible-test sanity (ansible-core %s, Python %s) in %s" % (version, py, root))
        return run([ansible_venv / "bin" / "ansible-test", "sanity", "--requirements", "--color", "no",
                    "--python", py], cwd=root,
                   env=clean_env(ansible_venv))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_importer():
    importer = venv("galaxy-importer-" + "-".join(p.split("==")[1] for p in GALAXY_IMPORTER), GALAXY_IMPORTER)
    config = OUT / "galaxy-importer.cfg"
    config.write_text(IMPORTER_CONFIG)
    result = subprocess.run([str(importer / "bin" / "python"), "-m", "galaxy_importer.main", str(tarball())],
                            cwd=str(OUT), capture_output=True, text=True, check=False,
                            env=clean_env(importer, GALAXY_IMPORTER_CONFIG=str(config)))
    sys.stdout.write(result.stdout + result.stderr)
    if result.returncode:
        return result.returncode
    # galaxy-importer reports lint findings and doc problems as warnings and still exits 0: any is a failure here,
    # but for the ignore-file notice when the ignore files hold only the license lines (ACCEPTED_IGNORE)
    findings = [line.strip() for line in (result.stdout + result.stderr).splitlines()
                if "WARNING" in line or "ERROR" in line or "Traceback" in line]
    findings = list(dict.fromkeys(findings))  # the importer repeats its warnings in its summary
    ignore_notices = [line for line in findings if "Ignore files skip ansible-test sanity tests" in line]
    other_entries = [line for ignore in sorted((installed_root() / "tests" / "sanity").glob("ignore-*.txt"))
                     for line in ignore.read_text().splitlines() if line.strip() and ACCEPTED_IGNORE not in line]
    if ignore_notices and not other_entries:
        log("galaxy-importer: accepted %d ignore-file notice(s): every entry is %s (Apache-2.0, no GPLv3 header)"
            % (len(ignore_notices), ACCEPTED_IGNORE))
        findings = [line for line in findings if line not in ignore_notices]
    undocumented = undocumented_plugins(json.loads((OUT / "importer_result.json").read_text()))
    if undocumented:
        findings.append("no documentation rendered for %d plugin(s): %s" % (len(undocumented), ", ".join(undocumented)))
    if findings:
        log("galaxy-importer: %d warning(s) or error(s):\n  %s" % (len(findings), "\n  ".join(findings)))
        return 1
    log("galaxy-importer: documentation rendered for every module, filter and inventory plugin")
    return 0


def undocumented_plugins(result):
    """'<type> <name>' of each plugin of the tarball whose documentation the importer did not render (docs_blob of
    importer_result.json): every module and inventory plugin (a .py each), every filter (a .yml each)."""
    plugins = installed_root() / "plugins"
    expected = {("module", path.stem) for path in (plugins / "modules").glob("*.py") if path.stem != "__init__"}
    expected |= {("inventory", path.stem) for path in (plugins / "inventory").glob("*.py") if path.stem != "__init__"}
    expected |= {("filter", path.stem) for path in (plugins / "filter").glob("*.yml")}
    rendered = {(content["content_type"], content["content_name"]) for content in result["docs_blob"]["contents"]
                if (content.get("doc_strings") or {}).get("doc")}
    return ["%s %s" % missing for missing in sorted(expected - rendered)]


def check_docs():
    docs = venv("antsibull-docs-" + "-".join(p.split("==")[1] for p in ANTSIBULL_DOCS), ANTSIBULL_DOCS)
    work, root = work_copy("docs.")
    try:
        return run([docs / "bin" / "antsibull-docs", "lint-collection-docs", "--plugin-docs", "."], cwd=root,
                   env=clean_env(docs, ANSIBLE_COLLECTIONS_PATH=str(work)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_changelog():
    root = installed_root()
    code = run([VENV_BIN / "antsibull-changelog", "lint"], cwd=root, env=clean_env())
    return code or run([VENV_BIN / "antsibull-changelog", "lint-changelog-yaml", "changelogs/changelog.yaml"], cwd=root,
                       env=clean_env())


CHECKS = {"build": check_build, "importer": check_importer, "docs": check_docs, "changelog": check_changelog}
CHECKS.update({"sanity-%s" % minor: (lambda m=minor: check_sanity(m)) for minor in ANSIBLE_CORE})


def main(argv):
    names = argv or ["all"]
    if names == ["all"]:
        names = ["build"] + sorted(n for n in CHECKS if n != "build")
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise SystemExit("unknown check(s) %s; known: all, %s" % (unknown, ", ".join(CHECKS)))
    failed = []
    for name in names:
        started = time.monotonic()
        log("== %s" % name)
        code = CHECKS[name]()
        log("== %s: %s in %.0f s" % (name, "FAILED (exit %s)" % code if code else "ok", time.monotonic() - started))
        if code:
            failed.append(name)
            if name == "build":
                break
    if failed:
        log("failed: %s" % ", ".join(failed))
        return 1
    log("all clean: %s" % ", ".join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
