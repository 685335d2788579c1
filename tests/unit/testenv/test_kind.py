"""testenv/kind.py's pieces that need no docker: the wrappers this VM needs, the archives kind reads, its config."""
import io
import json
import os
import subprocess
import tarfile

import pytest

from testenv import kind


def _script(tmp_path, text, name):
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def _recorder(tmp_path):
    """A stand-in for the real binary: writes its arguments to argv.txt."""
    return _script(tmp_path, "#!/bin/sh\nprintf '%%s\\n' \"$@\" > %s\n" % (tmp_path / "argv.txt"), "real")


CAPS = ["CAP_CHOWN", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN"]


@pytest.mark.skipif(not os.path.exists("/usr/bin/jq"), reason="jq (apt-get install -y jq)")
def test_the_runc_wrapper_takes_only_cap_sys_resource_out_of_a_bundle_and_an_exec(tmp_path):
    wrapper = _script(tmp_path, kind.runc_wrapper(_recorder(tmp_path)), "runc")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "config.json").write_text(json.dumps({"process": {"args": ["/sbin/init"], "capabilities": {
        "bounding": CAPS, "effective": CAPS, "permitted": CAPS}}}))
    subprocess.run([wrapper, "create", "--bundle", str(bundle), "node"], check=True)
    config = json.loads((bundle / "config.json").read_text())
    assert config["process"]["capabilities"] == {key: ["CAP_CHOWN", "CAP_SYS_ADMIN"]
                                                 for key in ("bounding", "effective", "permitted")}
    assert config["process"]["args"] == ["/sbin/init"]
    assert (tmp_path / "argv.txt").read_text().split() == ["create", "--bundle", str(bundle), "node"]
    process = tmp_path / "process.json"
    process.write_text(json.dumps({"args": ["sh"], "capabilities": {"bounding": CAPS}}))
    subprocess.run([wrapper, "exec", "--process=%s" % process, "node"], check=True)
    assert json.loads(process.read_text())["capabilities"] == {"bounding": ["CAP_CHOWN", "CAP_SYS_ADMIN"]}
    subprocess.run([wrapper, "--version"], check=True)  # no bundle, no process: passed through untouched
    assert (tmp_path / "argv.txt").read_text().split() == ["--version"]


def test_the_ctr_wrapper_answers_info_with_version_and_drops_only_the_label(tmp_path):
    wrapper = _script(tmp_path, kind.ctr_wrapper(_recorder(tmp_path)), "ctr")
    subprocess.run([wrapper, "info"], check=True)
    assert (tmp_path / "argv.txt").read_text().split() == ["version"]
    subprocess.run([wrapper, "-n", "k8s.io", "images", "import", "--label=io.cri-containerd.pinned=pinned",
                    "--all-platforms", "-"], check=True)
    assert (tmp_path / "argv.txt").read_text().split() == ["-n", "k8s.io", "images", "import", "--all-platforms", "-"]


@pytest.mark.parametrize("tag, reference", [
    ("kindest/kindnetd:v1", "docker.io/kindest/kindnetd:v1"),
    ("busybox:1", "docker.io/busybox:1"),
    ("registry.k8s.io/etcd:3.6.5-0", "registry.k8s.io/etcd:3.6.5-0"),
    ("localhost:5000/a:b", "localhost:5000/a:b"),
    ("localhost/kind-base:x", "localhost/kind-base:x"),
])
def test_docker_reference_qualifies_what_docker_save_shortens(tag, reference):
    assert kind.docker_reference(tag) == reference


def _docker_save(repositories, manifest):
    """An archive laid out as docker save writes one: layers, then manifest.json, then repositories."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, payload in (("abc/layer.tar", b"layer"), ("manifest.json", json.dumps(manifest).encode()),
                              ("repositories", json.dumps(repositories).encode())):
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return out.getvalue()


def test_repositories_first_makes_kind_see_every_image_of_the_archive():
    raw = _docker_save({"kindest/kindnetd": {"v1": "aa"}, "registry.k8s.io/etcd": {"3.6.5-0": "bb"}},
                       [{"RepoTags": ["kindest/kindnetd:v1"], "Layers": ["abc/layer.tar"]},
                        {"RepoTags": ["registry.k8s.io/etcd:3.6.5-0"], "Layers": ["abc/layer.tar"]}])
    # as docker save writes it, kind reads manifest.json's first image alone, and unqualified
    assert kind.archive_tags(raw) == ["kindest/kindnetd:v1"]
    fixed = kind.repositories_first(raw)
    assert kind.archive_tags(fixed) == ["docker.io/kindest/kindnetd:v1", "registry.k8s.io/etcd:3.6.5-0"]
    with tarfile.open(fileobj=io.BytesIO(fixed)) as tar:
        assert tar.getnames()[0] == "repositories"
        assert tar.extractfile("abc/layer.tar").read() == b"layer"
        assert json.loads(tar.extractfile("manifest.json").read())[1]["RepoTags"] == ["registry.k8s.io/etcd:3.6.5-0"]


def test_the_kind_config_carries_the_vm_settings():
    config = kind.kind_config("localhost/node:x")
    assert config["nodes"] == [{"role": "control-plane", "image": "localhost/node:x"}]
    assert config["networking"]["disableDefaultCNI"] is True
    assert "restrict_oom_score_adj = true" in config["containerdConfigPatches"][0]
    assert "failCgroupV1: false" in config["kubeadmConfigPatches"][0]


def test_every_image_kubeadm_asks_for_is_in_an_archive():
    tags = [tag for tags in kind.KIND_IMAGES.values() for tag in tags]
    assert len(tags) == len(set(tags)) == 10
    for component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"):
        assert "registry.k8s.io/%s:%s" % (component, kind.KUBE_VERSION) in kind.KIND_IMAGES[component]


@pytest.mark.parametrize("bounding, lacks", [("000001fffeffffff", True), ("000001ffffffffff", False)])
def test_lacks_sys_resource_reads_the_bounding_set(bounding, lacks):
    status = "Name:\tx\nCapPrm:\t000001ffffffffff\nCapBnd:\t%s\n" % bounding
    assert kind.lacks_sys_resource(status) is lacks


def test_check_names_each_missing_tool_with_its_package(monkeypatch, capsys):
    """`python -m testenv.kind check` (molecule/kind's first create task) on a machine without docker, debootstrap
    and jq: exit 1 at once, each named with what installs it."""
    monkeypatch.setenv("PATH", "/nonexistent")
    assert kind.main(["check"]) == 1
    error = capsys.readouterr().err
    for named in ("dockerd (apt-get install -y docker.io)", "docker (apt-get install -y docker.io)",
                  "debootstrap (apt-get install -y debootstrap)", "jq (apt-get install -y jq)"):
        assert named in error, error


def test_check_says_nothing_where_everything_is_there(monkeypatch, tmp_path, capsys):
    for tool in ("dockerd", "docker", "debootstrap", "jq"):
        (tmp_path / tool).write_text("#!/bin/sh\n")
        (tmp_path / tool).chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(kind.os, "geteuid", lambda: 0)
    assert kind.main(["check"]) == 0
    assert capsys.readouterr().err == ""
