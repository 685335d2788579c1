"""kind clusters on a machine that reaches no container registry (issue 59: molecule's kind scenario, run for real).

    python -m testenv.kind build                       the base and node images (cached), prints the node image
    python -m testenv.kind create [--name N] --kubeconfig PATH
    python -m testenv.kind load [--name N] ARCHIVE...   side-loads image archives into the node's containerd
    python -m testenv.kind delete [--name N]           and stops the dockerd `create` started, once unused
    python -m testenv.kind check                       says what the machine lacks (exit 1), or nothing

What kind would download is built here instead (first run on 2026-12-03, a VM of this project's kind):
- kind itself and kubeadm, kubelet, kubectl, kube-proxy, the control plane's binaries, etcd and CoreDNS come from the
  binary cache (testenv/cluster/build.py; kind from testenv/cluster/go/kind, v0.33.0);
- the base image: a Debian bookworm rootfs (debootstrap, from a Debian mirror) with systemd, Debian's containerd 1.6,
  runc and CNI plugins, and kind's own files (images/base/files of the kind module), set up as kind's base Dockerfile
  does, then `docker import`;
- the node image: `kind build node-image --type file` of a server tarball assembled here. Every image kubeadm and kind
  require (KIND_IMAGES) is in its four archives, each archive's `repositories` entry first (kind reads the first of
  `repositories` or `manifest.json`, and only manifest.json's first image), so the build fetches nothing. CoreDNS and
  etcd are the cache's (1.12.4, 3.6.16) under the tags kubeadm v1.34.4 asks for; kindnetd and local-path are
  placeholders (the pause binary): kindnetd's source is not on the module proxy, so the default CNI is off
  (`disableDefaultCNI`) and the base holds a static ptp + host-local conflist for the single node.

What this VM needs, each for its reason:
- CAP_SYS_RESOURCE is not in the bounding set: a privileged container (kind's node, and kube-proxy in it) asks for
  every capability and runc fails with "unable to apply caps: operation not permitted". RUNC_WRAPPER takes that one
  capability out of the container's (and an exec's) set: dockerd runs it as its default runtime, and the node's
  containerd finds it first on its PATH (/usr/local/sbin/runc).
- containerd's CRI needs `restrict_oom_score_adj = true` (kind's containerdConfigPatches), as on the test bed's node.
- Debian's ctr 1.6 has no `ctr info` and no `images import --label`: CTR_WRAPPER (ctr version; the pin label dropped,
  kind turns image garbage collection off).
- dockerd (Debian's docker.io 20.10, no systemd here) is started with --iptables=false --ip-forward=false: it would
  otherwise set the host's FORWARD policy to DROP and turn on forwarding, beside the test bed's bridges. The kind node's
  API is published on 127.0.0.1 by docker-proxy; nothing needs forwarding.
- The node's kubelet writes host-wide sysctls (KERNEL_TUNABLES, as the test bed's node does): create records them,
  delete puts them back.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from testenv.cluster.build import BuildError, cache_root, ensure_binaries, module_dir
from testenv.cluster.images import PAUSE_IMAGE, pause_binary
from testenv.cluster.node import record_tunables, restore_tunables

CLUSTER = "private-capi-molecule"
KUBE_VERSION = "v1.34.4"
# `kubeadm config images list --kubernetes-version v1.34.4`, the base's sandbox image and kind v0.33.0's CNI and
# storage images (pkg/build/nodeimage/const_cni.go, const_storage.go): without one of these the build fetches it
KIND_IMAGES = {
    "kube-apiserver": [f"registry.k8s.io/kube-apiserver:{KUBE_VERSION}", "registry.k8s.io/etcd:3.6.5-0",
                       "registry.k8s.io/coredns/coredns:v1.12.1", PAUSE_IMAGE,
                       "docker.io/kindest/kindnetd:v20260820-69b56db7",
                       "docker.io/kindest/local-path-provisioner:v20260820-69b56db7",
                       "docker.io/kindest/local-path-helper:v20260131-7181c60a"],
    "kube-controller-manager": [f"registry.k8s.io/kube-controller-manager:{KUBE_VERSION}"],
    "kube-scheduler": [f"registry.k8s.io/kube-scheduler:{KUBE_VERSION}"],
    "kube-proxy": [f"registry.k8s.io/kube-proxy:{KUBE_VERSION}"],
}
BASE_PACKAGES = ("systemd", "systemd-sysv", "dbus", "iptables", "nftables", "iproute2", "kmod", "jq", "procps",
                 "ca-certificates", "containerd", "runc", "containernetworking-plugins", "util-linux", "mount",
                 "libseccomp2", "conntrack")
DOCKERD_PID = Path("/run/private-capi-dockerd.pid")
TUNABLES_RECORD = Path("/run/private-capi-kind-tunables.json")
CAP_SYS_RESOURCE = 24

RUNC_WRAPPER = """#!/bin/sh
# runc without CAP_SYS_RESOURCE in a container's (or an exec's) capabilities: this machine's bounding set lacks it
# (testenv/kind.py)
strip() {
  jq "($2 // {}) |= with_entries(.value |= map(select(. != \\"CAP_SYS_RESOURCE\\")))" "$1" > "$1.nosysres" &&
    mv "$1.nosysres" "$1"
}
bundle=""; process=""; prev=""
for a in "$@"; do
  case "$prev" in --bundle|-b) bundle="$a";; --process|-p) process="$a";; esac
  case "$a" in --bundle=*) bundle="${a#--bundle=}";; --process=*) process="${a#--process=}";; esac
  prev="$a"
done
if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then strip "$bundle/config.json" .process.capabilities; fi
if [ -n "$process" ] && [ -f "$process" ]; then strip "$process" .capabilities; fi
exec %(runc)s "$@"
"""

CTR_WRAPPER = """#!/bin/sh
# Debian's ctr 1.6 under kind's calls (testenv/kind.py): `ctr info` (1.6 has none) is `ctr version`, and
# `images import --label=...` (the pin label; kind turns image garbage collection off) is dropped
[ "$1" = info ] && exec %(ctr)s version
for a in "$@"; do shift; case "$a" in --label=*) ;; *) set -- "$@" "$a";; esac; done
exec %(ctr)s "$@"
"""

# kindnet's shape for one node, without kindnetd: a point-to-point link per Pod, addresses from the node's range
CNI_CONFLIST = {"cniVersion": "0.3.1", "name": "kindnet", "plugins": [
    {"type": "ptp", "ipMasq": False, "mtu": 1500,
     "ipam": {"type": "host-local", "dataDir": "/run/cni-ipam-state", "routes": [{"dst": "0.0.0.0/0"}],
              "ranges": [[{"subnet": "10.244.0.0/24"}]]}},
    {"type": "portmap", "capabilities": {"portMappings": True}}]}


class KindError(RuntimeError):
    pass


def runc_wrapper(runc: str = "/usr/sbin/runc") -> str:
    return RUNC_WRAPPER % {"runc": runc}


def ctr_wrapper(ctr: str = "/usr/bin/ctr") -> str:
    return CTR_WRAPPER % {"ctr": ctr}


def docker_reference(tag: str) -> str:
    """A tag as containerd names it: docker save writes docker.io's images without their registry."""
    first = tag.split("/")[0]
    return tag if "/" in tag and ("." in first or ":" in first or first == "localhost") else "docker.io/" + tag


def repositories_first(archive: bytes) -> bytes:
    """A docker-archive with its `repositories` entry first and every name fully qualified (what kind's
    GetArchiveTags reads: the first of `repositories` or `manifest.json`, and of manifest.json only the first image)."""
    source = tarfile.open(fileobj=io.BytesIO(archive))
    members = sorted(source.getmembers(), key=lambda member: member.name != "repositories")
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as dest:
        for member in members:
            data = source.extractfile(member).read() if member.isfile() else None
            if member.name == "repositories":
                data = json.dumps({docker_reference(name): tags for name, tags in json.loads(data).items()}).encode()
            elif member.name == "manifest.json":
                manifest = json.loads(data)
                for entry in manifest:
                    entry["RepoTags"] = [docker_reference(tag) for tag in entry.get("RepoTags") or ()]
                data = json.dumps(manifest).encode()
            if data is not None:
                member.size = len(data)
            dest.addfile(member, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def archive_tags(archive: bytes) -> list[str]:
    """The image names kind reads from an archive (as repositories_first leaves it)."""
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        first = next(member for member in tar.getmembers() if member.name in ("repositories", "manifest.json"))
        data = json.loads(tar.extractfile(first).read())
    if first.name == "repositories":
        return sorted("%s:%s" % (name, tag) for name, tags in data.items() for tag in tags)
    return list(data[0].get("RepoTags") or ())


def kind_config(image: str) -> dict:
    return {"kind": "Cluster", "apiVersion": "kind.x-k8s.io/v1alpha4",
            "networking": {"disableDefaultCNI": True, "podSubnet": "10.244.0.0/16"},
            "nodes": [{"role": "control-plane", "image": image}],
            "containerdConfigPatches": ['[plugins."io.containerd.grpc.v1.cri"]\n  restrict_oom_score_adj = true'],
            "kubeadmConfigPatches": ["kind: KubeletConfiguration\nfailCgroupV1: false\noomScoreAdj: 0\n"]}


def lacks_sys_resource(status: str) -> bool:
    """Whether /proc/self/status's bounding set lacks CAP_SYS_RESOURCE."""
    for line in status.splitlines():
        if line.startswith("CapBnd:"):
            return not int(line.split()[1], 16) & (1 << CAP_SYS_RESOURCE)
    return False


def missing_prerequisites() -> list[str]:
    """What this machine lacks to run kind, each with how to install it."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (dockerd, debootstrap and kind's privileged node need it)")
    for tool, package in (("dockerd", "docker.io"), ("docker", "docker.io"), ("debootstrap", "debootstrap"),
                          ("jq", "jq")):
        if shutil.which(tool) is None:
            missing.append("%s (apt-get install -y %s)" % (tool, package))
    return missing


def require_prerequisites() -> None:
    """KindError naming everything missing_prerequisites() finds, or nothing."""
    missing = missing_prerequisites()
    if missing:
        raise KindError("kind cannot run on this machine; missing: " + "; ".join(missing))


def _run(cmd, **options):
    options.setdefault("check", False)
    options.setdefault("capture_output", True)
    done = subprocess.run(cmd, **options)
    if done.returncode != 0:
        error = done.stderr or b""
        error = error.decode(errors="replace") if isinstance(error, bytes) else error
        raise KindError("%s failed (exit %d):\n%s" % (" ".join(map(str, cmd[:4])), done.returncode, error[-3000:]))
    return done


def _work() -> Path:
    path = cache_root() / "kind"
    path.mkdir(parents=True, exist_ok=True)
    return path


def ensure_dockerd(timeout: float = 60) -> None:
    """dockerd up, with RUNC_WRAPPER as its default runtime where the machine lacks CAP_SYS_RESOURCE: a dockerd
    already running is used as it is when it has that runtime (or the machine needs none)."""
    wrap = lacks_sys_resource(Path("/proc/self/status").read_text())
    info = subprocess.run(["docker", "info", "--format", "{{json .Runtimes}}"], capture_output=True, text=True,
                          check=False)
    if info.returncode == 0:
        if wrap and "nosysres" not in info.stdout:
            raise KindError("dockerd runs without the runtime this machine needs (it lacks CAP_SYS_RESOURCE): stop "
                            "it, or start it with --add-runtime nosysres=%s --default-runtime nosysres"
                            % (_work() / "runc-nosysres"))
        return
    runtime = []
    if wrap:
        wrapper = _work() / "runc-nosysres"
        wrapper.write_text(runc_wrapper(shutil.which("runc") or "/usr/sbin/runc"))
        wrapper.chmod(0o755)
        runtime = ["--add-runtime", "nosysres=%s" % wrapper, "--default-runtime", "nosysres"]
    with open(_work() / "dockerd.log", "ab") as log:
        subprocess.Popen(["dockerd", "--iptables=false", "--ip-forward=false", "--ip-masq=false",
                          "--pidfile", str(DOCKERD_PID), *runtime], stdin=subprocess.DEVNULL, stdout=log,
                         stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout
    while subprocess.run(["docker", "info"], capture_output=True, check=False).returncode != 0:
        if time.monotonic() > deadline:
            raise KindError("dockerd did not answer within %ds; see %s" % (timeout, _work() / "dockerd.log"))
        time.sleep(0.5)


def _image_exists(image: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", image], capture_output=True, check=False).returncode == 0


def _import(rootfs: Path, image: str, changes: list[str]) -> None:
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*",
                            "-c", "."], stdout=subprocess.PIPE)
    try:
        _run(["docker", "import", *[arg for change in changes for arg in ("--change", change)], "-", image],
             stdin=tar.stdout)
    finally:
        tar.stdout.close()
        tar.wait()


def _digest(*parts) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part if isinstance(part, bytes) else str(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:12]


def base_image(mirror: str = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")) -> str:
    """kind's base image from Debian bookworm (module docstring), built once per content."""
    files = module_dir("sigs.k8s.io/kind", "kind") / "images" / "base" / "files"
    inputs = sorted(path for path in files.rglob("*") if path.is_file())
    image = "localhost/private-capi-kind-base:" + _digest(
        *BASE_PACKAGES, runc_wrapper(), ctr_wrapper(), json.dumps(CNI_CONFLIST),
        *[str(path.relative_to(files)).encode() + path.read_bytes() for path in inputs])
    if _image_exists(image):
        return image
    with tempfile.TemporaryDirectory(prefix="kind-base-", dir=_work()) as work:
        root = Path(work) / "rootfs"
        _run(["debootstrap", "--variant=minbase", "--include=" + ",".join(BASE_PACKAGES), "bookworm", str(root),
              mirror])
        shutil.copytree(files / "etc", root / "etc", dirs_exist_ok=True)
        (root / "etc/systemd/system/containerd-fuse-overlayfs.service").unlink(missing_ok=True)
        for sub in ("usr/local/bin", "kind/bin"):
            shutil.copytree(files / sub, root / sub, dirs_exist_ok=True)
            for path in (root / sub).iterdir():
                path.chmod(0o755)
        (root / "kind").chmod(0o755)
        for pattern in ("lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service",
                        "lib/systemd/system/multi-user.target.wants/*", "etc/systemd/system/*.wants/*",
                        "lib/systemd/system/local-fs.target.wants/*", "lib/systemd/system/sockets.target.wants/*udev*",
                        "lib/systemd/system/sockets.target.wants/*initctl*", "lib/systemd/system/basic.target.wants/*"):
            for path in root.glob(pattern):
                path.unlink()
        with open(root / "etc/systemd/journald.conf", "a") as handle:
            handle.write("ReadKMsg=no\n")
        (root / "sbin/init").unlink(missing_ok=True)
        (root / "sbin/init").symlink_to("/usr/lib/systemd/systemd")
        for name in ("containerd", "containerd-shim-runc-v2"):  # kind's units start /usr/local/bin/containerd
            (root / "usr/local/bin" / name).symlink_to("/usr/bin/" + name)
        (root / "usr/local/bin/ctr").write_text(ctr_wrapper())
        (root / "usr/local/sbin").mkdir(parents=True, exist_ok=True)
        (root / "usr/local/sbin/runc").write_text(runc_wrapper())
        for path in (root / "usr/local/bin/ctr", root / "usr/local/sbin/runc"):
            path.chmod(0o755)
        (root / "opt/cni").mkdir(parents=True, exist_ok=True)
        (root / "opt/cni/bin").symlink_to("/usr/lib/cni")
        (root / "etc/cni/net.d").mkdir(parents=True, exist_ok=True)
        (root / "etc/cni/net.d/10-static.conflist").write_text(json.dumps(CNI_CONFLIST, indent=1))
        config = root / "etc/containerd/config.toml"
        text = config.read_text()
        start = text.find("[proxy_plugins")  # the fuse-overlayfs snapshotter kind builds; Debian has none
        if start >= 0:
            end = text.find("\n\n", start)
            text = text[:start] + (text[end + 2:] if end >= 0 else "")
        config.write_text("\n".join('  sandbox_image = "%s"' % PAUSE_IMAGE if line.strip().startswith("sandbox_image")
                                    else line for line in text.splitlines()) + "\n")
        _run(["chroot", str(root), "/bin/sh", "-c", "systemctl enable kubelet.service containerd.service "
              "undo-mount-hacks.service && systemctl mask systemd-binfmt.service && mkdir -p /etc/kubernetes/manifests"])
        spec = json.loads(_run(["chroot", str(root), "ctr", "oci", "spec"]).stdout)
        spec.setdefault("hooks", {}).setdefault("createContainer", []).append({"path": "/kind/bin/mount-product-files.sh"})
        spec["process"].pop("rlimits", None)
        (root / "etc/containerd/cri-base.json").write_text(json.dumps(spec, indent=1))
        for pattern in ("var/lib/apt/lists/*", "var/cache/apt/*", "usr/share/doc/*", "usr/share/man/*"):
            for path in root.glob(pattern):
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        _import(root, image, ["ENV container=docker", 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]'])
    return image


def node_image() -> str:
    """kind's node image of KUBE_VERSION, built once per content (module docstring)."""
    ensure_dockerd()
    base = base_image()
    binaries = ensure_binaries(["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubelet",
                                "kubeadm", "kubectl", "etcd", "coredns", "kind"])
    pause = pause_binary()
    stamps = [stamp.read_bytes() for stamp in (Path(path).with_name("build-%s.json" % name)
                                               for name, path in sorted(binaries.items()) if name != "kind")
              if stamp.exists()]
    image = "localhost/private-capi-kind-node:%s-%s" % (KUBE_VERSION, _digest(base, *stamps, pause.read_bytes(),
                                                                              json.dumps(KIND_IMAGES)))
    if _image_exists(image):
        return image
    contents = {tag: (binaries[tag.split("/")[-1].split(":")[0]], "/usr/local/bin/" + tag.split("/")[-1].split(":")[0],
                      None) for tag in KIND_IMAGES["kube-apiserver"][:1] + KIND_IMAGES["kube-controller-manager"]
                + KIND_IMAGES["kube-scheduler"]}
    contents["registry.k8s.io/etcd:3.6.5-0"] = (binaries["etcd"], "/usr/local/bin/etcd", None)
    contents["registry.k8s.io/coredns/coredns:v1.12.1"] = (binaries["coredns"], "/coredns", '["/coredns"]')
    for tag in KIND_IMAGES["kube-apiserver"][3:]:
        contents[tag] = (str(pause), "/pause", '["/pause"]')
    with tempfile.TemporaryDirectory(prefix="kind-node-", dir=_work()) as work:
        work = Path(work)
        for tag, (source, target, entrypoint) in contents.items():
            root = work / ("rootfs-" + hashlib.sha256(tag.encode()).hexdigest()[:8])
            (root / target.lstrip("/")).parent.mkdir(parents=True)
            (root / "etc").mkdir()
            (root / "tmp").mkdir()
            (root / "etc/passwd").write_text("root:x:0:0:root:/root:/sbin/nologin\n")
            shutil.copy(source, root / target.lstrip("/"))
            (root / target.lstrip("/")).chmod(0o755)
            _import(root, tag, ["ENV PATH=/usr/local/bin:/usr/bin:/bin"]
                    + (["ENTRYPOINT " + entrypoint] if entrypoint else []))
        # kube-proxy runs iptables/nft: the base's Debian userland with the binary added
        proxy_root = work / "rootfs-kube-proxy"
        container = _run(["docker", "create", base, "/bin/true"], text=True).stdout.strip()
        try:
            proxy_root.mkdir()
            exported = subprocess.Popen(["docker", "export", container], stdout=subprocess.PIPE)
            _run(["tar", "-C", str(proxy_root), "-x"], stdin=exported.stdout)
            exported.wait()
        finally:
            _run(["docker", "rm", container])
        shutil.copy(binaries["kube-proxy"], proxy_root / "usr/local/bin/kube-proxy")
        _import(proxy_root, KIND_IMAGES["kube-proxy"][0], [
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"])
        server = work / "kubernetes/server/bin"
        server.mkdir(parents=True)
        (work / "kubernetes/version").write_text(KUBE_VERSION + "\n")
        for name, tags in KIND_IMAGES.items():
            archive = repositories_first(_run(["docker", "save", *tags]).stdout)
            missing = sorted(set(tags) - set(archive_tags(archive)))
            if missing:
                raise KindError("the %s archive lacks %s: the node image build would fetch them" % (name, missing))
            (server / (name + ".tar")).write_bytes(archive)
        for name in ("kubeadm", "kubelet", "kubectl"):
            shutil.copy(binaries[name], server / name)
        tarball = work / "kubernetes-server-linux-amd64.tar.gz"
        _run(["sh", "-c", 'tar -C "$1" -c kubernetes | gzip -1 > "$2"', "sh", str(work), str(tarball)])
        _run([binaries["kind"], "build", "node-image", "--type", "file", "--base-image", base, "--image", image,
              str(tarball)])
        for tag in [*contents, KIND_IMAGES["kube-proxy"][0]]:  # in the node image now; the layers stay shared
            subprocess.run(["docker", "image", "rm", tag], capture_output=True, check=False)
    return image


def kind_binary() -> str:
    return ensure_binaries(["kind"])["kind"]


def delete(name: str = CLUSTER, stop_engine: bool = True) -> None:
    """Delete cluster `name` (none: nothing to do) and put back the host's tunables its kubelet changed; then
    (stop_engine) stop the dockerd ensure_dockerd started, once no container is left (stop_own_dockerd)."""
    if shutil.which("docker") is not None and subprocess.run(["docker", "info"], capture_output=True,
                                                             check=False).returncode == 0:
        _run([kind_binary(), "delete", "cluster", "--name", name])
    restore_tunables(TUNABLES_RECORD)
    if stop_engine:
        stop_own_dockerd()


def stop_own_dockerd(timeout: float = 30) -> bool:
    """Stop the dockerd this module started (DOCKERD_PID) when it runs no container, with its networks and its
    docker0 bridge, so that the host is as before the first create; a later create starts it again (2-3 s). A dockerd
    started otherwise, or one with containers, is left running. Whether it stopped one."""
    try:
        pid = int(DOCKERD_PID.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    if subprocess.run(["docker", "ps", "-aq"], capture_output=True, text=True, check=False).stdout.strip():
        return False
    subprocess.run(["docker", "network", "prune", "-f"], capture_output=True, check=False)  # kind's bridge
    os.kill(pid, 15)
    deadline = time.monotonic() + timeout
    while Path("/proc/%d" % pid).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    subprocess.run(["ip", "link", "delete", "docker0"], capture_output=True, check=False)
    return True


def load(archives: list[str], name: str = CLUSTER) -> None:
    """Side-load image archives (docker or OCI) into cluster `name`'s containerd (namespace k8s.io), where Pods
    with the pull policy IfNotPresent find them."""
    for archive in archives:
        _run([kind_binary(), "load", "image-archive", archive, "--name", name])


def create(kubeconfig: Path, name: str = CLUSTER, wait: int = 240) -> str:
    """A single-node kind cluster `name` of node_image(); one left over from a killed run is deleted first."""
    require_prerequisites()
    image = node_image()
    delete(name, stop_engine=False)
    record_tunables(TUNABLES_RECORD)
    config = _work() / ("%s.yaml" % name)
    config.write_text(json.dumps(kind_config(image)))  # JSON is YAML
    try:
        _run([kind_binary(), "create", "cluster", "--name", name, "--config", str(config), "--kubeconfig",
              str(kubeconfig), "--wait", "%ds" % wait])
    except KindError:
        delete(name, stop_engine=False)
        raise
    # the storage kind installs runs a placeholder (its image is not built here) that nothing needs
    from kubernetes import client, config  # pylint: disable=import-outside-toplevel
    with config.new_client_from_config(str(kubeconfig)) as api:
        client.CoreV1Api(api).delete_namespace("local-path-storage")
        client.StorageV1Api(api).delete_storage_class("standard")
    return image


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testenv.kind", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build")
    make = sub.add_parser("create")
    make.add_argument("--name", default=CLUSTER)
    make.add_argument("--kubeconfig", required=True, type=Path)
    remove = sub.add_parser("delete")
    remove.add_argument("--name", default=CLUSTER)
    side_load = sub.add_parser("load")
    side_load.add_argument("--name", default=CLUSTER)
    side_load.add_argument("archives", nargs="+")
    need = sub.add_parser("check")
    need.description = "Say what this machine lacks to run kind (exit 1), or nothing."
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            require_prerequisites()
            print(node_image())
            stop_own_dockerd()
        elif args.command == "create":
            print(create(args.kubeconfig, args.name))
        elif args.command == "load":
            load(args.archives, args.name)
        elif args.command == "check":
            require_prerequisites()
        else:
            delete(args.name)
    except (KindError, BuildError) as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
