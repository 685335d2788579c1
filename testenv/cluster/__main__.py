"""python -m testenv.cluster {build,serve} ...

build  [NAME...]                      build (or find) the binaries, print their paths
serve  --kubeconfig PATH [--state-dir DIR] [--fake-nodes N] [--without kwok --nodes N [--fleet-images]]
                                      run the control plane until SIGINT/SIGTERM
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from . import build
from .cluster import Cluster, ClusterError, fake_node_name


def fleet_images() -> list[Path]:
    """The image archives of testenv.hcp.fleet's fixtures on every platform (a placeholder under each image name)."""
    from testenv import capi  # pylint: disable=import-outside-toplevel
    from testenv.hcp import build as hcp_build, fleet  # pylint: disable=import-outside-toplevel
    with tempfile.TemporaryDirectory(prefix="testenv-fleet-images-") as seed:
        fleet.seed_fleet_dir(seed, fleet.fleet_spec(len(hcp_build.PLATFORMS), platforms=tuple(hcp_build.PLATFORMS),
                                                    machines=1))
        return capi.node_images(fleet.seed_objects(seed), managers=())


def serve(args: argparse.Namespace) -> int:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())

    tmp = None
    if args.state_dir:
        state_dir = Path(args.state_dir)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="testenv-cluster-")
        state_dir = Path(tmp.name)
    components = tuple(c for c in ("kube-controller-manager", "kube-scheduler", "kwok") if c not in args.without)
    node_images = []
    if args.nodes:
        from .images import proxy_archive  # pylint: disable=import-outside-toplevel
        node_images = [proxy_archive()]
        if args.fleet_images:
            node_images += fleet_images()
    cluster = Cluster(state_dir, kubeconfig=Path(args.kubeconfig), components=components, nodes=args.nodes,
                      node_images=node_images)
    try:
        try:
            cluster.start()
            for i in range(args.fake_nodes):
                cluster.create_fake_node(fake_node_name(i))
        except (ClusterError, build.BuildError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        info = cluster.describe()
        print(json.dumps(info, indent=2), flush=True)
        print(
            f"ready in {info['timings_seconds']['total']:.1f}s; "
            f"export KUBECONFIG={cluster.kubeconfig}; Ctrl-C to stop",
            file=sys.stderr,
            flush=True,
        )
        while not stop.wait(1.0):
            dead = [p for p in cluster.processes if not p.alive()]
            if dead:
                p = dead[0]
                print(
                    f"error: {p.name} exited with {p.popen.returncode}; last lines of {p.log}:\n"
                    + p.tail(),
                    file=sys.stderr,
                )
                return 1
        return 0
    finally:
        t = time.monotonic()
        cluster.stop()
        print(f"stopped in {time.monotonic() - t:.1f}s", file=sys.stderr)
        if tmp is not None:
            tmp.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testenv.cluster")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build (or find) the binaries and print their paths")
    b.add_argument("names", nargs="*")
    b.add_argument("--json", action="store_true")
    s = sub.add_parser("serve", help="run the control plane until interrupted")
    s.add_argument("--kubeconfig", required=True, help="where to write the admin kubeconfig")
    s.add_argument("--state-dir", help="certificates, etcd data and logs (default: a temp dir)")
    s.add_argument("--fake-nodes", type=int, default=0, help="KWOK nodes to create")
    s.add_argument(
        "--without",
        action="append",
        default=[],
        choices=["kube-controller-manager", "kube-scheduler", "kwok"],
        help="leave this component out (repeatable)",
    )
    s.add_argument("--nodes", type=int, default=0, help="real nodes (testenv/cluster/node.py: kubelet, containerd) "
                   "with the collection's image side-loaded")
    s.add_argument("--fleet-images", action="store_true", help="with --nodes: also the images of the fleet "
                   "fixtures (testenv/hcp/fleet.py), as a placeholder")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    if args.command == "build":
        return build.main([*args.names, *(["--json"] if args.json else [])])
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
