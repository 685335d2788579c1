"""Container images without a registry, for the real node (testenv/cluster/node.py).

An image of static binaries needs no base and no build engine: `oci_archive` writes the OCI image layout (one
uncompressed layer, its config, the manifest and index.json naming the image) as a tar that `ctr images import`
side-loads into containerd's `k8s.io` namespace, where the kubelet finds it (imagePullPolicy IfNotPresent; nothing is
ever pulled). Archives are cached beside the binaries they hold (the binary cache of testenv/cluster/build.py), keyed by
the content, so a second node imports without building.

- the pause image (`PAUSE_IMAGE`): Kubernetes' own build/pause/linux/pause.c of the same module (v1.34.4), compiled
  static with the host's gcc, as build/pause/Makefile does (`-Os -Wall -Werror -static`), run as 65535 like upstream;
- `binary_image`: any static Go binary of the cache (the CAPI managers) as `/<name>`, run as 65532 (distroless'
  nonroot, as upstream CAPI images run).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from testenv.cluster.build import BuildError, cached_path, module_dir

PAUSE_VERSION = "3.10.1"  # build/pause/Makefile TAG of k8s.io/kubernetes v1.34.4
PAUSE_IMAGE = f"registry.k8s.io/pause:{PAUSE_VERSION}"  # containerd's sandbox_image (node.py) names the same
NONROOT = "65532:65532"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def _blob(payload: bytes) -> tuple[str, int]:
    return "sha256:" + hashlib.sha256(payload).hexdigest(), len(payload)


def _layer(files: list[tuple[str, Path, int]]) -> bytes:
    """An uncompressed tar of files [(path in the image, source file, mode)], owned by root, mtime 0 (reproducible)."""
    stream = io.BytesIO()
    with tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({str(Path(name).parent) for name, _source, _mode in files} - {"/", "."})
        for directory in dirs:
            info = tarfile.TarInfo(directory.lstrip("/"))
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, source, mode in files:
            info = tarfile.TarInfo(name.lstrip("/"))
            info.size, info.mode = source.stat().st_size, mode
            with open(source, "rb") as handle:
                tar.addfile(info, handle)
    return stream.getvalue()


def oci_archive(dest: Path, image: str | list[str], files: list[tuple[str, Path, int]], entrypoint: list[str],
                user: str) -> Path:
    """Write the OCI image `image` (one layer of files, its entrypoint and user; a list: one image under each name) as
    the tar archive dest."""
    names = [image] if isinstance(image, str) else list(image)
    layer = _layer(files)
    layer_digest, layer_size = _blob(layer)
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": entrypoint, "User": user, "Env": ["PATH=/usr/local/bin:/usr/bin:/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    }, sort_keys=True).encode()
    config_digest, config_size = _blob(config)
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest, "size": layer_size}],
    }, sort_keys=True).encode()
    manifest_digest, manifest_size = _blob(manifest)
    index = json.dumps({"schemaVersion": 2, "manifests": [{
        "mediaType": OCI_MANIFEST, "digest": manifest_digest, "size": manifest_size,
        "platform": {"architecture": "amd64", "os": "linux"},
        "annotations": {"io.containerd.image.name": name,
                        "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1]}} for name in names]},
        sort_keys=True).encode()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    with tarfile.open(tmp, "w") as tar:
        for name, payload in [("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'), ("index.json", index)] + [
                ("blobs/sha256/" + digest.split(":", 1)[1], payload)
                for digest, payload in ((layer_digest, layer), (config_digest, config), (manifest_digest, manifest))]:
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    os.replace(tmp, dest)
    return dest


def _pause_binary(dest: Path) -> Path:
    """Kubernetes' pause, compiled static from the module's build/pause/linux/pause.c into dest (once)."""
    if dest.exists():
        return dest
    source = module_dir("k8s.io/kubernetes", "kube") / "build" / "pause" / "linux" / "pause.c"
    gcc = shutil.which("gcc")
    if gcc is None:
        raise BuildError("the pause image is compiled from Kubernetes' build/pause/linux/pause.c: install gcc and the "
                         "static C library (Debian: apt-get install gcc libc6-dev)")
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    done = subprocess.run([gcc, "-Os", "-Wall", "-Werror", "-static", f"-DVERSION=v{PAUSE_VERSION}", "-o",
                           str(tmp), str(source)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BuildError(f"gcc could not build {source} (static; Debian: apt-get install libc6-dev):\n{done.stderr}")
    os.replace(tmp, dest)
    return dest


def pause_binary() -> Path:
    """The pause binary, compiled once into the binary cache (beside the kubelet of the same module)."""
    return _pause_binary(cached_path("kubelet").parent / f"pause-{PAUSE_VERSION}")


def pause_archive() -> Path:
    """The pause image's archive, built once into the binary cache from the Kubernetes module's pause.c."""
    dest = cached_path("kubelet").parent / f"pause-{PAUSE_VERSION}.oci.tar"
    if not dest.exists():
        oci_archive(dest, PAUSE_IMAGE, [("/pause", pause_binary(), 0o755)], ["/pause"], "65535:65535")
    return dest


def placeholder_archive(images: list[str], commands: list[str] = ()) -> Path:
    """One image under each of the names `images`: the pause binary, which holds a container's place (any args,
    until SIGTERM) for a Deployment whose real image the test bed has no build of (HyperShift's and OpenShift's); also
    at each path of `commands`, the executables the fixtures' containers name."""
    names, paths = sorted(set(images)), sorted(set(commands) - {"/pause"})
    stamp = hashlib.sha256("\0".join(names + ["--"] + paths).encode()).hexdigest()[:12]
    dest = cached_path("kubelet").parent / f"placeholder-{stamp}.oci.tar"
    if not dest.exists():
        binary = pause_binary()
        oci_archive(dest, names, [(path, binary, 0o755) for path in ["/pause"] + paths], ["/pause"], NONROOT)
    return dest


def binary_image(name: str, image: str) -> Path:
    """The archive of image `image` holding the cached static binary `name` as /<name> (its entrypoint)."""
    binary = cached_path(name)
    if not binary.exists():
        raise BuildError(f"{binary} is not built: python -m testenv.cluster build {name}")
    stamp = hashlib.sha256(f"{image}\0{binary.stat().st_size}\0{binary.stat().st_mtime_ns}".encode()).hexdigest()[:12]
    dest = binary.parent / f"{name}-{stamp}.oci.tar"
    if not dest.exists():
        oci_archive(dest, image, [(f"/{name}", binary, 0o755)], [f"/{name}"], NONROOT)
    return dest


REPO = Path(__file__).resolve().parents[2]
PROXY_BASE_IMAGE = "localhost/capi-proxy-base:bookworm"  # hack/local-base-image.sh's Debian base (no registry here)
# what the proxy image is built from: the collection tarball's Python, its packaging, the Containerfile
PROXY_INPUTS = ("capi_proxy", "plugins/module_utils", "pyproject.toml", "galaxy.yml", "requirements.txt", "Containerfile")


def proxy_image() -> str:
    """The image the roles deploy by default (private_capi_proxy_image): the collection's version."""
    version = next(line.split(":", 1)[1].strip() for line in (REPO / "galaxy.yml").read_text().splitlines()
                   if line.startswith("version:"))
    return f"quay.io/hypershift/capi-proxy:{version}"


def _inputs_digest() -> str:
    digest = hashlib.sha256()
    for name in PROXY_INPUTS:
        path = REPO / name
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(str(file.relative_to(REPO)).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def proxy_archive() -> Path:
    """The proxy image as a user builds it (`make image` with podman on hack/local-base-image.sh's base, named as the
    roles deploy it: proxy_image()), saved as a docker archive for `ctr images import`. Cached per content of its
    inputs beside the binaries; built under a lock, so parallel test workers build it once."""
    import fcntl  # pylint: disable=import-outside-toplevel
    directory = cached_path("kubelet").parent.parent / "images"
    directory.mkdir(parents=True, exist_ok=True)
    dest = directory / f"capi-proxy-{_inputs_digest()}.docker.tar"
    with open(directory / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if dest.exists():
            return dest
        image = proxy_image()
        for command, env in ((["bash", str(REPO / "hack" / "image-prereqs.sh"), PROXY_BASE_IMAGE], {}),
                             (["make", "--no-print-directory", "image", f"IMAGE={image}",
                               f"BASE_IMAGE={PROXY_BASE_IMAGE}", "CONTAINER_ENGINE=podman"],
                              {"BUILDAH_ISOLATION": "chroot"})):
            done = subprocess.run(command, cwd=REPO, env=dict(os.environ, **env), capture_output=True, text=True,
                                  check=False)
            if done.returncode != 0:
                raise BuildError(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
        done = subprocess.run(["podman", "save", "--format", "docker-archive", "-o", str(tmp), image],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise BuildError(f"podman save {image}: {done.stderr}")
        os.replace(tmp, dest)
        for stale in directory.glob("capi-proxy-*.docker.tar"):
            if stale != dest:
                stale.unlink()
        return dest
