"""Upstream's own conversions, as a program: the Go half of the differential conversion test.

``ensure_convdiff()`` builds (once per cluster-api version, into the same cache as the other binaries) the test
binary of cluster-api's conversion package (``sigs.k8s.io/cluster-api/core/webhooks/conversion`` at the version
``go/capi/go.mod`` pins) with one file added: ``go/convdiff/overlay/zz_convdiff_test.go``, which exposes upstream's
Convert* functions and fuzzer functions over JSON lines. The package is copied out of the Go module cache into a
build directory beside the binary (the module cache is read-only, and ``go -overlay`` refuses files under it); the
checkout is never written.

``Upstream(path).run(requests)`` sends a batch of requests and returns the results in order (see the Go file for the
protocol). Run as ``python -m testenv.cluster.convdiff`` to build and print the path.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from testenv.cluster.build import (
    GO_DIR,
    LOG,
    NICE,
    BuildError,
    _failure,
    _find_go,
    _go_env,
    _is_exe,
    cache_root,
    module_dir,
    read_gomod,
)

MODULE = "sigs.k8s.io/cluster-api"
PACKAGE_DIR = "core/webhooks/conversion"
OVERLAY = GO_DIR / "convdiff" / "overlay" / "zz_convdiff_test.go"
NAME = "convdiff.test"


def pinned_version() -> str:
    return read_gomod(GO_DIR / "capi" / "go.mod").requires[MODULE]


def cached_path() -> Path:
    return cache_root() / f"cluster-api-{pinned_version()}" / NAME


def _build(dest: Path) -> float:
    go = _find_go()
    env = _go_env(go)
    src = dest.parent / "convdiff-src"
    shutil.rmtree(src, ignore_errors=True)
    (src / "conversion").mkdir(parents=True)
    for name in ("go.mod", "go.sum"):  # the module the managers build in: same pins, go.sum covers the test deps
        shutil.copyfile(GO_DIR / "capi" / name, src / name)
    upstream = module_dir(MODULE) / PACKAGE_DIR
    for path in sorted(upstream.glob("*.go")):
        shutil.copyfile(path, src / "conversion" / path.name)
    shutil.copyfile(OVERLAY, src / "conversion" / OVERLAY.name)
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    cmd = [go, "test", "-c", "-trimpath", "-o", str(tmp), "./conversion"]
    nice = shutil.which("nice")
    if nice:
        cmd = [nice, "-n", str(NICE), *cmd]
    LOG.info("building %s (upstream %s %s with %s)", dest, MODULE, PACKAGE_DIR, OVERLAY.name)
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not _is_exe(tmp):
            raise BuildError(_failure(" ".join(cmd), src, proc.stdout + proc.stderr))
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return time.monotonic() - start


def _stamp() -> str:
    """What the binary was built from: a changed overlay file rebuilds it."""
    return json.dumps({"version": pinned_version(), "overlay": OVERLAY.read_text()}, sort_keys=True)


def ensure_convdiff() -> str:
    dest = cached_path()
    stamp_path = dest.with_name("build-convdiff.stamp")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / ".lock-convdiff", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = _stamp()
        if not (_is_exe(dest) and stamp_path.is_file() and stamp_path.read_text() == stamp):
            elapsed = _build(dest)
            stamp_path.write_text(stamp)
            LOG.info("built %s in %.0fs", dest, elapsed)
    return str(dest)


class Upstream:
    """Batches of requests to the upstream binary (one process per batch)."""

    def __init__(self, path: str):
        self.path = path

    def run(self, requests: list[dict]) -> list[dict]:
        with tempfile.TemporaryDirectory(prefix="convdiff-") as tmp:
            req, res = Path(tmp) / "requests.jsonl", Path(tmp) / "results.jsonl"
            req.write_text("".join(json.dumps(r) + "\n" for r in requests))
            env = dict(os.environ, CONVDIFF_REQUESTS=str(req), CONVDIFF_RESULTS=str(res))
            proc = subprocess.run([self.path, "-test.run", "^TestConvDiff$", "-test.count", "1"], env=env,
                                  capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise RuntimeError(f"{self.path} failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
            results = [json.loads(line) for line in res.read_text().splitlines()]
        if len(results) != len(requests):
            raise RuntimeError(f"{self.path}: {len(requests)} requests, {len(results)} results")
        return results


def main() -> int:
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    try:
        print(ensure_convdiff())
    except BuildError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
