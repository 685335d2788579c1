"""Build (once per version) the binaries of a real Kubernetes control plane.

``ensure_binaries()`` returns ``{binary name: absolute path}`` for
kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kwok
(and kubectl of the same Kubernetes version when asked for by name).

Where they come from, in order:

1. ``KUBEBUILDER_ASSETS`` (setup-envtest layout: one flat directory of
   binaries). If it holds at least ``kube-apiserver`` and ``etcd``, those and
   whichever of the others are present are used, and nothing is built.
2. A per-version cache outside the checkout::

       ${XDG_CACHE_HOME:-~/.cache}/hypershift-private-capi/bin/<component>-<version>/<binary>

   Missing binaries are built there with ``go build`` from the small Go
   modules in ``go/`` next to this file. Their go.mod files are the single
   source of truth for the versions: a binary's version is the version that
   go.mod requires of the module its main package lives in.

Run as ``python testenv/cluster/build.py [--json] [NAME...]`` to build and
print the paths. Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import fcntl
import functools
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

LOG = logging.getLogger("testenv.cluster.build")

GO_DIR = Path(__file__).resolve().parent / "go"
CACHE_APP = "hypershift-private-capi"
REQUIRED_ASSETS = ("kube-apiserver", "etcd")
TAIL_LINES = 30
NICE = 19


class BuildError(RuntimeError):
    """A binary could not be found or built."""


@dataclass(frozen=True)
class Binary:
    name: str  # file name of the binary
    component: str  # cache directory prefix: <component>-<version>
    moddir: str  # Go module directory under go/
    package: str  # main package, listed as a `tool` in that go.mod
    envtest: bool = True  # may come from KUBEBUILDER_ASSETS (setup-envtest ships control-plane binaries only)
    tags: tuple[str, ...] = ()  # Go build tags
    # The main package built when it is not `package` itself: the Go module's own (go/<moddir>/main.go), which
    # imports part of `package`'s module (CoreDNS with some of its plugins); `package`, then a require, gives the version.
    main: str = ""


BINARIES: dict[str, Binary] = {
    b.name: b
    for b in (
        Binary("kube-apiserver", "kubernetes", "kube", "k8s.io/kubernetes/cmd/kube-apiserver"),
        Binary(
            "kube-controller-manager",
            "kubernetes",
            "kube",
            "k8s.io/kubernetes/cmd/kube-controller-manager",
        ),
        Binary("kube-scheduler", "kubernetes", "kube", "k8s.io/kubernetes/cmd/kube-scheduler"),
        Binary("etcd", "etcd", "etcd", "go.etcd.io/etcd/server/v3"),
        Binary("kwok", "kwok", "kwok", "sigs.k8s.io/kwok/cmd/kwok"),
        # Not built unless asked for: a kubectl matching the server.
        Binary("kubectl", "kubernetes", "kube", "k8s.io/kubernetes/cmd/kubectl"),
        # The real node (testenv/cluster/node.py): a kubelet of the same release, with containerd and runc from Debian.
        Binary("kubelet", "kubernetes", "kube", "k8s.io/kubernetes/cmd/kubelet", envtest=False),
        # ... and kube-proxy, which routes the kubernetes Service's ClusterIP from the Pods (in-cluster clients)
        Binary("kube-proxy", "kubernetes", "kube", "k8s.io/kubernetes/cmd/kube-proxy", envtest=False),
        # kind's node image (testenv/kind.py, issue 59): kubeadm of the same release, beside its kubelet and kubectl
        Binary("kubeadm", "kubernetes", "kube", "k8s.io/kubernetes/cmd/kubeadm", envtest=False),
        # ... and kind itself, which builds the node image and runs its clusters
        Binary("kind", "kind", "kind", "sigs.k8s.io/kind", envtest=False),
        # ... and CoreDNS, the cluster DNS: a Pod resolves kubernetes.default.svc (the sidecar's kubeconfig names it).
        # With the plugins of a Kubernetes cluster's Corefile only (go/coredns/main.go): half the build of all of them.
        Binary("coredns", "coredns-k8s", "coredns", "github.com/coredns/coredns", envtest=False,
               main="testenv/cluster/go/coredns"),
        # The real Cluster API controllers (testenv/capi.py): the core manager and the Docker provider, whose
        # in-memory backend (DevCluster/DevMachine) fakes machines and workload API servers without docker.
        Binary("capi-manager", "cluster-api", "capi", "sigs.k8s.io/cluster-api/core", envtest=False),
        Binary("capd-manager", "cluster-api", "capi", "sigs.k8s.io/cluster-api/test/infrastructure/docker",
               envtest=False),
        # clusterctl of the same release: describe and move --dry-run through the proxy (tests/integration/e2e).
        Binary("clusterctl", "cluster-api", "capi", "sigs.k8s.io/cluster-api/cmd/clusterctl", envtest=False),
        # The same pair from the last release whose controllers are cluster.x-k8s.io/v1beta1 clients (v1.10): the
        # end-to-end test of the proxy's version adaptation.
        Binary("capi-manager-v1beta1", "cluster-api", "capi-v1beta1", "sigs.k8s.io/cluster-api", envtest=False),
        Binary("capd-manager-v1beta1", "cluster-api", "capi-v1beta1",
               "sigs.k8s.io/cluster-api/test/infrastructure/docker", envtest=False),
        # The monitoring tests (tests/integration/monitoring) and the demo: a real Prometheus scraping the exporter,
        # and promtool checking and unit-testing the PrometheusRule (no control plane needed for promtool). Built with
        # Prometheus' own `remove_all_sd` tag (plugins/*.go): both scrape static targets, and the service discovery
        # plugins (AWS, Azure, GCE, Kubernetes, Consul ... SDKs) were most of the 986 s a new machine spent on it.
        # Debian's package would be Prometheus 2.42 (bookworm), a second version beside the one the tests use.
        Binary("prometheus", "prometheus-static", "prometheus", "github.com/prometheus/prometheus/cmd/prometheus",
               envtest=False, tags=("remove_all_sd",)),
        Binary("promtool", "prometheus-static", "prometheus", "github.com/prometheus/prometheus/cmd/promtool",
               envtest=False, tags=("remove_all_sd",)),
    )
}
DEFAULT_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kwok")
CAPI_BINARIES = ("capi-manager", "capd-manager", "clusterctl")
CAPI_V1BETA1_BINARIES = ("capi-manager-v1beta1", "capd-manager-v1beta1")
MONITORING_BINARIES = ("prometheus", "promtool")


# --------------------------------------------------------------------------
# go.mod reading


@dataclass(frozen=True)
class GoMod:
    path: Path
    go: str
    requires: dict[str, str]
    tools: tuple[str, ...]
    replaces: dict[str, str]  # module => version it is replaced by (module replacements only)

    def module_of(self, package: str) -> tuple[str, str]:
        """(module path, version) of the required module that holds package."""
        best = ""
        for mod in self.requires:
            if (package == mod or package.startswith(mod + "/")) and len(mod) > len(best):
                best = mod
        if not best:
            raise BuildError(f"{self.path}: no require line covers package {package}")
        return best, self.requires[best]


def read_gomod(path: Path) -> GoMod:
    """Parse the parts of a go.mod needed here: the go, require and tool lines."""
    go = ""
    requires: dict[str, str] = {}
    tools: list[str] = []
    replaces: dict[str, str] = {}
    block = None  # verb of the ( ... ) block being read
    for raw in path.read_text().splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if block is not None:
            if line == ")":
                block = None
                continue
            verb, words = block, line.split()
        else:
            verb, *words = line.split()
            if words == ["("]:
                block = verb
                continue
        if verb == "go" and words:
            go = words[0]
        elif verb == "require" and len(words) >= 2:
            requires[words[0]] = words[1]
        elif verb == "tool" and words:
            tools.append(words[0])
        elif verb == "replace" and "=>" in words:
            new = words[words.index("=>") + 1 :]
            if len(new) == 2:
                replaces[words[0]] = new[1]
    return GoMod(path, go, requires, tuple(tools), replaces)


def binary_version(binary: Binary) -> tuple[str, str]:
    """(module path, version) a binary is built from, as pinned in its go.mod."""
    gomod = read_gomod(GO_DIR / binary.moddir / "go.mod")
    if binary.package not in gomod.tools and not binary.main:
        raise BuildError(f"{gomod.path}: {binary.package} is not listed as a tool")
    return gomod.module_of(binary.package)


# --------------------------------------------------------------------------
# version stamping (-ldflags -X)


def _go_json(go: str, args: list[str], cwd: Path, env: dict[str, str]) -> dict:
    proc = subprocess.run(
        [go, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise BuildError(_failure(" ".join([go, *args]), cwd, proc.stdout + proc.stderr))
    return json.loads(proc.stdout)


def _ldflags(binary: Binary, version: str, build_date: str) -> list[str]:
    """-X settings each upstream release build makes, with the pinned version."""
    plain = version.lstrip("v")
    if binary.component == "kubernetes":
        # hack/lib/version.sh: kube::version::ldflags sets these in both
        # k8s.io/client-go/pkg/version and k8s.io/component-base/version.
        major, minor = plain.split(".")[:2]
        values = {
            "gitVersion": version,
            "gitMajor": major,
            "gitMinor": minor,
            # The module proxy does not tell the release's git commit.
            "gitCommit": "",
            "gitTreeState": "clean",
            "buildDate": build_date,
        }
        return [
            f"-X {pkg}.{key}={val}"
            for pkg in ("k8s.io/client-go/pkg/version", "k8s.io/component-base/version")
            for key, val in values.items()
        ]
    if binary.component == "etcd":
        # etcd's ./build sets api/v3/version.GitSHA; Version is a var too.
        return [
            f"-X go.etcd.io/etcd/api/v3/version.Version={plain}",
            "-X go.etcd.io/etcd/api/v3/version.GitSHA=unknown",
        ]
    if binary.component == "kwok":
        # kwok's hack/releases.sh: --version and --kube-version.
        kube = binary_version(BINARIES["kube-apiserver"])[1]
        return [
            f"-X sigs.k8s.io/kwok/pkg/consts.Version={version}",
            f"-X sigs.k8s.io/kwok/pkg/consts.KubeVersion={kube}",
        ]
    if binary.component == "cluster-api":
        # cluster-api's Makefile (LDFLAGS from hack/version.sh) sets these in sigs.k8s.io/cluster-api/version.
        major, minor = plain.split(".")[:2]
        values = {"gitVersion": version, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean",
                  "buildDate": build_date}
        return [f"-X sigs.k8s.io/cluster-api/version.{key}={val}" for key, val in values.items()]
    if binary.moddir == "prometheus":
        # Prometheus's .promu.yml sets these in github.com/prometheus/common/version; the Go module v0.MNN.P is the
        # release vM.NN.P (v0.316.0 is Prometheus 3.16.0).
        values = {"Version": prometheus_release(version), "Revision": "unknown", "Branch": "HEAD",
                  "BuildUser": "testenv", "BuildDate": build_date}
        return [f"-X github.com/prometheus/common/version.{key}={val}" for key, val in values.items()]
    return []


def prometheus_release(module_version: str) -> str:
    """The Prometheus release of a github.com/prometheus/prometheus module version: v0.316.0 -> 3.16.0."""
    minor, patch = module_version.lstrip("v").split(".")[1:3]
    return f"{int(minor) // 100}.{int(minor) % 100}.{patch}"


@functools.lru_cache(maxsize=None)
def module_dir(module: str, moddir: str = "capi") -> Path:
    """Where the Go module cache holds the source of module as pinned in go/<moddir>/go.mod (downloading it when
    missing): the CAPI CRDs are read from there, never copied into the checkout."""
    go = _find_go()
    env = _go_env(go)
    info = _go_json(go, ["mod", "download", "-json", module], GO_DIR / moddir, env)
    if not info.get("Dir"):
        raise BuildError(f"go mod download {module} (in {GO_DIR / moddir}) gave no directory: {info}")
    return Path(info["Dir"])


# --------------------------------------------------------------------------
# cache and build


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / CACHE_APP / "bin"


def cached_path(name: str) -> Path:
    binary = BINARIES[name]
    version = binary_version(binary)[1]
    return cache_root() / f"{binary.component}-{version}" / name


def _is_exe(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK) and path.stat().st_size > 0


def _failure(cmd: str, cwd: Path, output: str) -> str:
    tail = "\n".join(deque(output.splitlines(), maxlen=TAIL_LINES))
    return f"command failed (in {cwd}):\n  {cmd}\nlast {TAIL_LINES} lines of its output:\n{tail}"


def _find_go() -> str:
    go = shutil.which("go")
    if not go:
        assets = os.environ.get("KUBEBUILDER_ASSETS")
        why = f"KUBEBUILDER_ASSETS={assets} lacks them" if assets else "KUBEBUILDER_ASSETS not set"
        raise BuildError(
            f"no `go` on PATH and {why}: install Go 1.26+ "
            "or set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd"
        )
    return go


def _go_env(go: str) -> dict[str, str]:
    env = dict(os.environ)
    env["CGO_ENABLED"] = "0"  # static, like upstream release server binaries
    return env


def _check_go_version(go: str, need: str, env: dict[str, str]) -> str:
    """Fail early and clearly when the local Go is older than a go.mod needs.

    Returns the local Go version (go1.26.8).
    """
    out = subprocess.run(
        [go, "env", "GOVERSION", "GOTOOLCHAIN"], env=env, capture_output=True, text=True, check=False
    ).stdout.split()
    have = out[0] if out else ""
    toolchain = out[1] if len(out) > 1 else ""
    if toolchain not in ("", "local"):
        return have  # the go command may switch toolchains by itself

    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", v)[:3])

    if have and key(have) < key(need):
        raise BuildError(
            f"{go} is {have} but go.mod needs go >= {need}: install Go 1.26+ "
            "or set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd"
        )
    return have


def _build(go: str, binary: Binary, dest: Path) -> float:
    moddir = GO_DIR / binary.moddir
    env = _go_env(go)
    gomod = read_gomod(moddir / "go.mod")
    go_version = _check_go_version(go, gomod.go, env)
    module, version = gomod.module_of(binary.package)
    if module == "k8s.io/kubernetes":
        # Its staging modules must be the release's own tags: v1.34.4 -> v0.34.4.
        staging = "v0." + version.split(".", 1)[1]
        wrong = {m: v for m, v in gomod.replaces.items() if m.startswith("k8s.io/") and v != staging}
        if wrong:
            raise BuildError(
                f"{gomod.path}: k8s.io/kubernetes {version} needs its staging modules at {staging}: {wrong}"
            )
    info = _go_json(go, ["list", "-m", "-json", module], moddir, env)
    build_date = (info.get("Time") or "1970-01-01T00:00:00Z").replace("+00:00", "Z")
    ldflags = " ".join(["-s", "-w", *_ldflags(binary, version, build_date)])

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    cmd = [go, "build", "-trimpath", *(["-tags", ",".join(binary.tags)] if binary.tags else []), f"-ldflags={ldflags}",
           "-o", str(tmp), binary.main or binary.package]
    nice = shutil.which("nice")
    if nice:
        cmd = [nice, "-n", str(NICE), *cmd]
    log_path = dest.with_name(f"build-{dest.name}.log")
    LOG.info("building %s %s (%s); log: %s", binary.name, version, binary.package, log_path)
    start = time.monotonic()
    try:
        with open(log_path, "w") as log:
            log.write("$ " + shlex.join(cmd) + "\n")
            log.flush()
            proc = subprocess.run(
                cmd, cwd=moddir, env=env, stdout=log, stderr=subprocess.STDOUT, check=False
            )
        elapsed = time.monotonic() - start
        if proc.returncode != 0 or not _is_exe(tmp):
            output = log_path.read_text(errors="replace").split("\n", 1)[-1]
            raise BuildError(_failure(shlex.join(cmd), moddir, output) + f"\n(full log: {log_path})")
        os.replace(tmp, dest)  # atomic: a killed build never leaves a half binary
    finally:
        tmp.unlink(missing_ok=True)
    stamp = {
        "binary": binary.name,
        "module": module,
        "version": version,
        "package": binary.package,
        **({"main": binary.main} if binary.main else {}),
        "build_seconds": round(elapsed, 1),
        "ldflags": ldflags,
        "go": go_version,
    }
    dest.with_name(f"build-{dest.name}.json").write_text(json.dumps(stamp, indent=2) + "\n")
    LOG.info("built %s in %.0fs: %s", binary.name, elapsed, dest)
    return elapsed


def _from_assets(names: list[str]) -> dict[str, str] | None:
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if not assets:
        return None
    root = Path(assets).expanduser()
    found = {n: os.path.abspath(root / n) for n in BINARIES if BINARIES[n].envtest and _is_exe(root / n)}
    missing = [n for n in REQUIRED_ASSETS if n not in found]
    if missing:
        LOG.warning(
            "KUBEBUILDER_ASSETS=%s lacks %s; using the build cache instead",
            assets,
            ", ".join(missing),
        )
        return None
    return {n: p for n, p in found.items() if n in names}


def ensure_binaries(names: Iterable[str] | None = None) -> dict[str, str]:
    """Return {name: path} of the control-plane binaries, building missing ones.

    ``names`` picks the binaries (default: DEFAULT_BINARIES; ``kubectl`` and
    the Cluster API managers, CAPI_BINARIES, only when named). With
    KUBEBUILDER_ASSETS the control-plane binaries are the ones found there;
    the Cluster API managers, which setup-envtest does not ship, always come
    from the build cache.
    """
    wanted = list(names) if names is not None else list(DEFAULT_BINARIES)
    unknown = [n for n in wanted if n not in BINARIES]
    if unknown:
        raise BuildError(f"unknown binaries {unknown}; known: {sorted(BINARIES)}")

    result: dict[str, str] = {}
    from_assets = _from_assets([n for n in wanted if BINARIES[n].envtest])
    if from_assets is not None:
        result.update(from_assets)
        wanted = [n for n in wanted if not BINARIES[n].envtest]
    go = None
    for name in wanted:
        dest = cached_path(name)
        if not _is_exe(dest):
            go = go or _find_go()
            dest.parent.mkdir(parents=True, exist_ok=True)
            # One builder per component directory at a time (parallel test
            # workers); the others wait and then find the binary built.
            with open(dest.parent / ".lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not _is_exe(dest):
                    for stale in dest.parent.glob(f".{name}.tmp-*"):
                        stale.unlink(missing_ok=True)
                    _build(go, BINARIES[name], dest)
        result[name] = str(dest)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "names", nargs="*", help=f"any of {', '.join(BINARIES)} (default: the control plane, without kubectl, the Cluster API managers, prometheus and promtool)"
    )
    parser.add_argument("--json", action="store_true", help="print the paths as JSON")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    try:
        paths = ensure_binaries(args.names or None)
    except BuildError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(paths, indent=2))
    else:
        for name, path in paths.items():
            print(f"{name}\t{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
