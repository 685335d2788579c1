"""execution-environment.yml is valid for ansible-builder and its build context carries what the job needs:
kubernetes.core and this collection, whose meta/execution-environment.yml brings its Python requirements as
ranges. `ansible-builder create` needs no container engine;
the galaxy stage and the builder's dependency introspection are then replayed here on the generated context."""
import os
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

from testenv import REPO_ROOT

BIN = os.path.dirname(sys.executable)
EE_FILE = os.path.join(REPO_ROOT, "execution-environment.yml")


def _run(args, cwd):
    result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, "%s failed (rc=%s):\n%s\n%s" % (args, result.returncode, result.stdout, result.stderr)
    return result


def _requirement_lines(path):
    with open(path) as handle:
        return [line.strip() for line in handle if line.strip() and not line.lstrip().startswith("#")]


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    """The EE definition with the files it names beside it (the tarball `make build` writes), then its build context."""
    tmp_path = tmp_path_factory.mktemp("ee")
    definition_dir = tmp_path / "definition"
    definition_dir.mkdir()
    with open(EE_FILE) as handle:
        definition = yaml.safe_load(handle)
    shutil.copy(EE_FILE, str(definition_dir / "execution-environment.yml"))
    _run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(definition_dir), REPO_ROOT],
         cwd=REPO_ROOT)
    context_dir = tmp_path / "context"
    result = _run([os.path.join(BIN, "ansible-builder"), "create", "-f", str(definition_dir / "execution-environment.yml"),
                   "-c", str(context_dir), "--output-filename", "Containerfile"], cwd=str(definition_dir))
    return {"tmp": tmp_path, "dir": context_dir, "definition": definition, "output": result.stdout + result.stderr}


def test_every_build_file_the_definition_names_is_found(context):
    # the builder only warns about an additional_build_files source that matches nothing; here that is an error
    assert "No matches" not in context["output"], context["output"]
    for entry in context["definition"]["additional_build_files"]:
        copied = context["dir"] / "_build" / entry["dest"] / os.path.basename(entry["src"])
        assert copied.is_file(), "%s not copied into the build context:\n%s" % (entry["src"], context["output"])


def test_containerfile_installs_the_pinned_ansible_and_the_collections(context):
    containerfile = (context["dir"] / "Containerfile").read_text()
    assert 'ARG EE_BASE_IMAGE="quay.io/centos/centos:stream9"' in containerfile
    pinned_core = [line for line in _requirement_lines(os.path.join(REPO_ROOT, "requirements.txt"))
                   if line.startswith("ansible-core==")]
    assert pinned_core and 'ARG ANSIBLE_INSTALL_REFS="%s ansible-runner==' % pinned_core[0] in containerfile, \
        "the EE's ansible-core must be the one requirements.txt pins (%s)" % pinned_core
    assert "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml" in containerfile
    assert "introspect.py introspect" in containerfile


def test_context_carries_none_of_the_checkouts_pins(context):
    # an EE that includes the collection must not inherit requirements.txt's exact pins or the proxy's packages
    assert "python" not in context["definition"]["dependencies"], context["definition"]["dependencies"]
    assert not (context["dir"] / "_build" / "requirements.txt").exists()


def test_galaxy_stage_installs_our_collection_from_the_context(context):
    build_dir = context["dir"] / "_build"
    with open(str(build_dir / "requirements.yml")) as handle:
        collections = yaml.safe_load(handle)["collections"]
    names = [entry["name"] for entry in collections]
    assert "kubernetes.core" in names, names
    local = [entry for entry in collections if entry.get("type") == "file"]
    assert len(local) == 1, collections
    # the galaxy stage runs in /build, the context's _build directory: the relative path must resolve there
    assert (build_dir / local[0]["name"]).is_file(), "%s is not in the build context" % local[0]["name"]
    with tarfile.open(str(build_dir / local[0]["name"])) as tar:
        manifest = yaml.safe_load(tar.extractfile("MANIFEST.json"))["collection_info"]
    with open(os.path.join(REPO_ROOT, "galaxy.yml")) as handle:
        galaxy = yaml.safe_load(handle)
    assert (manifest["namespace"], manifest["name"], manifest["version"]) == \
        (galaxy["namespace"], galaxy["name"], galaxy["version"]), "rename the tarball in execution-environment.yml"
    collections_dir = context["tmp"] / "collections"
    # an image's environment: none of the checkout's Ansible settings (its collections_path links this checkout)
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env["ANSIBLE_CONFIG"] = str(context["tmp"] / "absent.cfg")
    result = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--offline", "--no-deps",
                             "--force", "-p", str(collections_dir), local[0]["name"]],
                            cwd=str(build_dir), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (collections_dir / "ansible_collections" / "hypershift" / "private_capi" / "meta" / "runtime.yml").is_file(), \
        result.stdout + result.stderr

    # the builder stage: its introspection reads the installed collection's meta/execution-environment.yml
    merged = context["tmp"] / "merged-requirements.txt"
    merged_bindep = context["tmp"] / "merged-bindep.txt"
    _run([sys.executable, str(build_dir / "scripts" / "introspect.py"), "introspect", str(collections_dir),
          "--write-pip=" + str(merged), "--write-bindep=" + str(merged_bindep)], cwd=str(build_dir))
    merged_lines = [line.split("#")[0].strip() for line in _requirement_lines(str(merged))]
    # the builder drops what ansible-core itself requires (PyYAML among them): ansible_core installs it
    ours = [line for line in _requirement_lines(os.path.join(REPO_ROOT, "meta", "ee-requirements.txt"))
            if not line.startswith("PyYAML")]
    assert ours and set(ours) <= set(merged_lines), (ours, merged_lines)
    assert not [line for line in merged_lines if "==" in line], "exact pins reach the EE: %s" % merged_lines
    for proxy_only in ("aiohttp", "orjson", "prometheus-client", "prometheus_client"):
        assert not [line for line in merged_lines if line.lower().startswith(proxy_only)], merged_lines
    assert _requirement_lines(os.path.join(REPO_ROOT, "bindep.txt")) == \
        [line.split("#")[0].strip() for line in _requirement_lines(str(merged_bindep))]
    # the final stage pip-installs these after dependencies.ansible_core: an ansible-core pin must be the same one
    core_pins = {line.split("#")[0].strip() for line in merged_lines if line.startswith("ansible-core")}
    assert core_pins <= {context["definition"]["dependencies"]["ansible_core"]["package_pip"]}, core_pins
