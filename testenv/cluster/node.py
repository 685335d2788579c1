"""A real node for the test bed: kubelet v1.34.4 (built from the same k8s.io/kubernetes module as kube-apiserver),
containerd and runc (Debian packages, hack/node-prereqs.sh), the CNI bridge, kube-proxy and the cluster DNS (CoreDNS
v1.12.4 on the node's address), registered with the test bed's kube-apiserver. Pods on it are real containers: the image's USER, runAsNonRoot, memory limits (the kernel's OOM
killer), init containers, probes sent by the kubelet, restarts.

Everything of one node lives in two namespaces of its own, so that nodes of several test clusters (pytest's workers,
the e2e process, a demo) run side by side without touching each other or the host:
- a network namespace `tpcN-nodeI`: its veth `eth0` (10.(200+N).0.(2+I)/24) joins the cluster's bridge `tpcN` on the
  host (10.(200+N).0.1, where kube-apiserver listens), its Pods get 10.(200+N).(1+I).0/24 on the CNI bridge `cni0`,
  and the host routes that /24 to the node. kube-proxy's iptables rules, the kubelet's ports and the CNI bridge are
  the node's own;
- a private mount namespace held by one `sleep` process: containerd's and the kubelet's mounts (overlay rootfs,
  secret tmpfs, the Pods' network namespace files) never reach the host's table, and all of them go when the node
  stops.

Settings the VM needs, each with its reason (the VMs are cgroup v1 hybrid without CAP_SYS_RESOURCE):
- containerd CRI `restrict_oom_score_adj = true`: runc otherwise fails writing a Pod's oom_score_adj below the
  caller's (`nsexec: failed to update /proc/self/oom_score_adj: Permission denied`); the kubelet's own `oomScoreAdj`
  is 0 for the same reason;
- `cgroupDriver: cgroupfs` and runc's `SystemdCgroup = false`: no systemd runs here; `cgroupRoot: /tpcN-nodeI` puts
  every Pod under one subtree per node, removed when the node stops;
- `failCgroupV1: false`: the host has cgroup v1 (hybrid layout); kubelet v1.34 only warns then, a later release
  refuses by default;
- `failSwapOn: false`: harmless here (swap is off), so that a machine with swap still runs the node;
- eviction off (no thresholds, `evictionHard: {}`, and `localStorageCapacityIsolation: false`) and image garbage
  collection off (thresholds at 100 %): the side-loaded images cannot be pulled again, and a test machine's disk must
  not evict the fixtures' Pods. With neither thresholds nor local storage isolation the eviction manager collects no
  stats at all (k8s.io/kubernetes v1.34.4 pkg/kubelet/eviction/eviction_manager.go synchronize returns at once);
  with thresholds at the floor it read every container's stats through containerd and its shims every 10 s. The
  node then reports no ephemeral-storage capacity: no fixture requests any;
- `--housekeeping-interval=60s` (cAdvisor's, 10 s by default): the per-container stats it refreshes serve the
  summary API and /metrics/cadvisor, which nothing here reads (the fleet bench reads the proxies' RSS from their
  cgroups). Both cost CPU in proportion to the Pods on the node: with 50 HostedClusters' Pods on two nodes
  (2026-12-05, scratch runs of the fleet bench's pre-install) the two kubelets used 0.18 cores at rest, were 0.25,
  and the pre-install took 193.5 s, was 226.5 s;
- the kubelet sets kernel tunables on the host at start (protectKernelDefaults false; true would refuse to start
  with the VM's values): vm.overcommit_memory=1, vm.panic_on_oom=0, kernel.panic=10, kernel.panic_on_oops=1,
  kernel.keys.root_maxkeys=1000000, kernel.keys.root_maxbytes=25000000. The node records the values it found
  (KERNEL_TUNABLES) and puts them back when the last node of the machine stops.
"""
from __future__ import annotations

import json
import logging
import fcntl
import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from testenv.cluster.cluster import SERVICE_CIDR, component_env, die_with_parent

LOG = logging.getLogger("testenv.cluster.node")

CNI_BIN = "/usr/lib/cni"
KERNEL_TUNABLES = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
                   "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes")
TUNABLES_RECORD = Path("/run/testenv-pods/kernel-tunables.json")
# The node's state directory as its daemons see it: bound here in the node's own mount namespace, so that the unix
# sockets under it (containerd's, the kubelet's pod-resources and plugin sockets) stay within 104 bytes whatever the
# state directory's path (pytest's are long); every node has its own namespace, so the same path serves them all
INSIDE = Path("/run/testenv-node")


class NodeError(RuntimeError):
    """The node could not start; the message says what is missing and how to get it."""


def _ip(*args: str, netns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    cmd = ["ip", *(["-n", netns] if netns else []), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise NodeError(f"{' '.join(cmd)}: {done.stderr.strip()}")
    return done


def containerd_config(state: Path, cni_conf: Path) -> str:
    """containerd 1.6's config (version 2) for one node: its own root, state, sockets and runc root under `state` (the
    node's state directory as its daemons see it: INSIDE); the CRI with the side-loaded pause image, cgroupfs,
    restrict_oom_score_adj (module docstring) and the node's CNI config."""
    from testenv.cluster.images import PAUSE_IMAGE  # pylint: disable=import-outside-toplevel
    return f"""version = 2
root = "{state / 'root'}"
state = "{state / 'run'}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{state / 'containerd.sock'}"
[ttrpc]
  address = "{state / 'containerd.sock.ttrpc'}"
[plugins."io.containerd.internal.v1.opt"]
  path = "{state / 'opt'}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{state / 'runc'}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{cni_conf}"
"""


def cni_config(subnet: str, gateway: str, data_dir: Path) -> dict:
    """The node's CNI: a bridge `cni0` whose address is the Pods' gateway, host-local addresses of subnet (its
    reservations in the node's own data_dir, not the host's /var/lib/cni), no NAT (the host routes the subnet to the
    node), and portmap for hostPort."""
    return {"cniVersion": "0.4.0", "name": "testenv", "plugins": [
        {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": False, "hairpinMode": True,
         "ipam": {"type": "host-local", "ranges": [[{"subnet": subnet, "gateway": gateway}]],
                  "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(data_dir)}},
        {"type": "portmap", "capabilities": {"portMappings": True}}]}


def kubelet_config(node: "Node") -> dict:
    """KubeletConfiguration (module docstring for each setting's reason)."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "cgroupDriver": "cgroupfs", "cgroupRoot": f"/{node.netns}", "cgroupsPerQOS": True, "failCgroupV1": False,
        "failSwapOn": False, "oomScoreAdj": 0, "protectKernelDefaults": False,
        "containerRuntimeEndpoint": f"unix://{INSIDE / 'containerd.sock'}",
        "address": node.ip, "port": 10250, "readOnlyPort": 0, "healthzBindAddress": "127.0.0.1", "healthzPort": 10248,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                           "x509": {"clientCAFile": str(node.ca)}},
        "authorization": {"mode": "AlwaysAllow"},  # the kubelet's API is reachable from this node's network alone
        "podLogsDir": str(node.state / "pod-logs"), "maxPods": node.max_pods, "podCIDR": node.pod_subnet,
        "evictionHard": {},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99, "imageMinimumGCAge": "87600h",
        "serializeImagePulls": False, "registerNode": True, "nodeStatusUpdateFrequency": "10s",
        "syncFrequency": "10s", "fileCheckFrequency": "0s", "httpCheckFrequency": "0s",
        "shutdownGracePeriod": "0s", "localStorageCapacityIsolation": False,
        "clusterDomain": "cluster.local", "clusterDNS": [node.ip],  # the node's CoreDNS (corefile)
        "resolvConf": str(node.state / "resolv.conf"),
    }


def kube_proxy_config(node: "Node", kubeconfig: Path) -> dict:
    """KubeProxyConfiguration: iptables in the node's network namespace, the Pods of every node of the cluster network
    as its cluster CIDR; no conntrack sysctl (the table size is the host's, not this node's) and no localhost NodePorts
    (they would set route_localnet)."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
        "mode": "iptables", "clusterCIDR": node.cluster_cidr, "hostnameOverride": node.name,
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "bindAddress": node.ip, "healthzBindAddress": "127.0.0.1:10256", "metricsBindAddress": "127.0.0.1:10249",
        "conntrack": {"maxPerCore": 0, "min": 0},
        "iptables": {"localhostNodePorts": False, "syncPeriod": "30s", "minSyncPeriod": "0s"},
    }


def corefile(node: "Node", kubeconfig: Path) -> str:
    """CoreDNS on the node's address: the Services and Pods of the cluster (its kubernetes plugin, as a cluster's DNS
    add-on runs it), nothing else (no upstream: the test bed reaches no outside name)."""
    return f""".:53 {{
    bind {node.ip}
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
}}
"""


def record_tunables(record: Path = TUNABLES_RECORD) -> None:
    """The host's kernel tunables before the first node's kubelet changes them (module docstring), into record
    unless it holds them already (testenv/kind.py keeps its own record for kind's node)."""
    record.parent.mkdir(parents=True, exist_ok=True)
    if not record.exists():
        values = {name: Path("/proc/sys", name).read_text().strip() for name in KERNEL_TUNABLES}
        record.write_text(json.dumps(values))


def restore_tunables(record: Path = TUNABLES_RECORD) -> None:
    """Put back the tunables of record (none recorded: nothing to do) and remove it."""
    try:
        values = json.loads(record.read_text())
    except (OSError, ValueError):
        return
    for name, value in values.items():
        try:
            Path("/proc/sys", name).write_text(value)
        except OSError as exc:
            LOG.warning("could not put back %s=%s: %s", name, value, exc)
    record.unlink(missing_ok=True)


STORES_KEPT = 24  # image stores kept in the cache (a test module's set of images has its own), newest first


def linked_copy(source: Path, dest: Path) -> None:
    """A containerd root copied as hard links (content blobs and unpacked layers are never written in place), its bolt
    databases as real copies (containerd writes them); a full copy on another filesystem."""
    if subprocess.run(["cp", "-al", str(source), str(dest)], capture_output=True, check=False).returncode != 0:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest, symlinks=True)
    for database in dest.rglob("*.db"):
        copy = database.with_name(database.name + ".copy")
        shutil.copy2(database, copy)
        os.replace(copy, database)


def seed_root(archives: list[Path], root: Path) -> None:
    """A containerd root holding the images of archives (OCI or docker-archive) in the k8s.io namespace, unpacked for
    overlayfs: made once per set of archives by a containerd of its own (no CRI, no network) under the binary cache,
    and reused. Importing the proxy image (323 MB) took 64 s per node on these VMs; hard links of a store take
    well under a second. A new set starts from the largest store whose archives it includes (hard links: the stores
    share their files on disk) and imports the rest. root (a node's containerd root) becomes a linked copy of it. Under
    a lock, so parallel test workers make a store once and none is removed while it is copied."""
    from testenv.cluster.build import cache_root  # pylint: disable=import-outside-toplevel
    keys = {}
    for archive in archives:
        info = Path(archive).stat()
        keys[f"{Path(archive).resolve()}\0{info.st_size}\0{info.st_mtime_ns}"] = Path(archive)
    stores = cache_root() / "containerd-images"
    stores.mkdir(parents=True, exist_ok=True)
    dest = stores / hashlib.sha256("\0\0".join(sorted(keys)).encode()).hexdigest()[:16]
    with open(stores / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (dest / "root").is_dir():
            base, have = None, []
            for store in stores.iterdir():
                try:
                    held = json.loads((store / "archives.json").read_text())
                except (OSError, ValueError):
                    continue
                if set(held) <= set(keys) and len(held) > len(have):
                    base, have = store / "root", held
            tmp = stores / f".{dest.name}.tmp-{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            try:
                _import_into(tmp, [path for key, path in keys.items() if key not in have], base)
                (tmp / "archives.json").write_text(json.dumps(sorted(keys)))
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            os.replace(tmp, dest)
        os.utime(dest)
        for stale in sorted((d for d in stores.iterdir() if d.is_dir() and not d.name.startswith(".")),
                            key=lambda d: d.stat().st_mtime, reverse=True)[STORES_KEPT:]:
            shutil.rmtree(stale, ignore_errors=True)
        if root.exists():
            shutil.rmtree(root)
        linked_copy(dest / "root", root)


def _import_into(directory: Path, archives: list[Path], base: Path | None = None) -> None:
    """`ctr images import` of each archive by a containerd whose root is directory/root (starting as a linked copy
    of base), stopped afterwards."""
    directory.mkdir(parents=True)
    if base is not None:
        linked_copy(base, directory / "root")
    sockets = Path(tempfile.mkdtemp(prefix="testenv-ctd-"))  # a unix socket's path has at most 104 bytes
    socket = sockets / "containerd.sock"
    (directory / "config.toml").write_text(f"""version = 2
root = "{directory / 'root'}"
state = "{directory / 'run'}"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs",
                    "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{socket}"
[ttrpc]
  address = "{sockets / 'containerd.sock.ttrpc'}"
""")
    with open(directory / "containerd.log", "ab") as log:
        daemon = subprocess.Popen(["containerd", "--config", str(directory / "config.toml")], stdin=subprocess.DEVNULL,
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=component_env(),
                                  preexec_fn=die_with_parent)
    try:
        deadline = time.monotonic() + 60
        while not socket.exists():
            if daemon.poll() is not None or time.monotonic() > deadline:
                tail = (directory / "containerd.log").read_text(errors="replace").splitlines()[-5:]
                raise NodeError("containerd for the image store did not start:\n" + "\n".join(tail))
            time.sleep(0.05)
        for archive in archives:
            done = subprocess.run(["ctr", "--address", str(socket), "-n", "k8s.io", "images", "import", str(archive)],
                                  capture_output=True, text=True, timeout=600, check=False)
            if done.returncode != 0:
                raise NodeError(f"ctr images import {archive}: {done.stderr.strip()}")
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        shutil.rmtree(sockets, ignore_errors=True)
    shutil.rmtree(directory / "run", ignore_errors=True)


def _live_nodes() -> list[str]:
    return [line.split()[0] for line in _ip("netns", "list", check=False).stdout.splitlines()
            if line.split() and "-node" in line.split()[0]]


@dataclass
class Node:
    """One node of cluster network `bridge` (10.(200+N).0.0/24 on the host): index I, its namespaces, its daemons."""

    name: str
    bridge: str
    network_index: int
    index: int
    state: Path
    ca: Path
    binaries: dict[str, str]
    max_pods: int = 250
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    commands: dict[str, list[str]] = field(default_factory=dict)  # each daemon's command line, for restart()
    holder: subprocess.Popen | None = None

    def __post_init__(self) -> None:
        self.state = Path(self.state).resolve()
        self.netns = f"{self.bridge}-node{self.index}"
        self.host_veth = f"{self.bridge}n{self.index}"
        self.gateway = f"10.{200 + self.network_index}.0.1"
        self.ip = f"10.{200 + self.network_index}.0.{2 + self.index}"
        self.pod_subnet = f"10.{200 + self.network_index}.{1 + self.index}.0/24"
        self.pod_gateway = f"10.{200 + self.network_index}.{1 + self.index}.1"
        self.cluster_cidr = f"10.{200 + self.network_index}.0.0/16"  # every node's Pod subnet of the network

    # ---- network
    def _network_up(self) -> None:
        _ip("netns", "add", self.netns)
        _ip("link", "add", self.host_veth, "type", "veth", "peer", "name", "eth0", "netns", self.netns)
        _ip("link", "set", self.host_veth, "master", self.bridge, "up")
        _ip("addr", "add", f"{self.ip}/24", "dev", "eth0", netns=self.netns)
        for link in ("lo", "eth0"):
            _ip("link", "set", link, "up", netns=self.netns)
        # no default route: the node and its Pods reach the cluster network (kube-apiserver on the bridge, the other
        # nodes' Pods) and the Service range (before kube-proxy's DNAT), nothing outside the machine; an image
        # missing from the side-loaded ones fails at once instead of asking the host's resolver for a registry
        for network in (self.cluster_cidr, SERVICE_CIDR):
            _ip("route", "add", network, "via", self.gateway, netns=self.netns)
        _ip("route", "replace", self.pod_subnet, "via", self.ip)
        for key, value in (("net/ipv4/ip_forward", "1"), ("net/bridge/bridge-nf-call-iptables", "1")):
            subprocess.run(["ip", "netns", "exec", self.netns, "sh", "-c", f"echo {value} > /proc/sys/{key}"],
                           capture_output=True, check=False)

    def _network_down(self) -> None:
        _ip("route", "del", self.pod_subnet, check=False)
        _ip("link", "del", self.host_veth, check=False)
        _ip("netns", "del", self.netns, check=False)

    # ---- processes
    def _start_holder(self) -> None:
        """The process that holds the node's private mount namespace, inside its network namespace."""
        # not ip netns exec: its fresh /sys would hide the cgroup mounts under /sys/fs/cgroup the kubelet needs. The
        # Pods' network namespace files (containerd's /run/netns/cni-*) and the CNI plugins' cache (/var/lib/cni) go
        # to tmpfs of this namespace: they vanish with it, and no other node or the host sees them
        script = (f"mount --bind {shlex.quote(str(self.state))} {INSIDE} && mount -t tmpfs none /run/netns && "
                  "mount -t tmpfs none /var/lib/cni && exec sleep infinity")
        for directory in ("/var/lib/cni", "/run/netns", INSIDE):
            os.makedirs(directory, exist_ok=True)
        self.holder = subprocess.Popen(["nsenter", f"--net=/run/netns/{self.netns}", "--", "unshare", "--mount",
                                        "--propagation", "private", "sh", "-c", script], start_new_session=True,
                                       preexec_fn=die_with_parent,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        mine = os.readlink("/proc/self/ns/mnt")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the sleep has the new mount namespace once unshare exec'd it
            try:
                child = self._holder_pid()
                if child and os.readlink(f"/proc/{child}/ns/mnt") != mine and \
                        Path(f"/proc/{child}/comm").read_text().strip() == "sleep":
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise NodeError(f"node {self.name}: the namespace holder did not start (unshare --mount, util-linux)")

    def _holder_pid(self) -> int | None:
        """The pid of the holder's sleep (nsenter, unshare and sh's exec in place: the same pid)."""
        return self.holder.pid if self.holder and self.holder.poll() is None else None

    def _spawn(self, name: str, cmd: list[str]) -> subprocess.Popen:
        log = open(self.state / "logs" / f"{name}.log", "ab")  # pylint: disable=consider-using-with
        popen = subprocess.Popen(["nsenter", "-t", str(self._holder_pid()), "-m", "-n", "--", *cmd],
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=component_env(),
                                 start_new_session=True, cwd=self.state, preexec_fn=die_with_parent)
        log.close()
        self.processes[name] = popen
        self.commands[name] = cmd
        LOG.info("node %s: started %s pid %s", self.name, name, popen.pid)
        return popen

    def _wait(self, what: str, ready, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            self.check_running()
            time.sleep(0.1)
        raise NodeError(f"node {self.name}: timed out after {timeout:.0f}s waiting for {what}")

    def _start_containerd(self, command: list[str]) -> None:
        """containerd, until its CRI plugin serves: the kubelet exits at once ("server is not initialized yet") when
        it starts earlier. The plugin's last step before it serves is the log line looked for here, in this start's
        part of the log."""
        log = self.state / "logs" / "containerd.log"
        offset = log.stat().st_size if log.exists() else 0
        self._spawn("containerd", command)

        def serving() -> bool:
            if not (self.state / "containerd.sock").exists():
                return False
            with open(log, "rb") as handle:
                handle.seek(offset)
                if b"Start streaming server" not in handle.read():
                    return False
            time.sleep(0.2)  # the line comes just before the plugin marks itself initialized
            return True
        self._wait("containerd's CRI", serving)

    def kill(self, name: str) -> int:
        """SIGKILL daemon `name` (kubelet, containerd, kube-proxy, coredns) alone, as a crash would: its process
        group, not the containers (containerd's shims left it when they started). Returns its pid."""
        popen = self.processes.pop(name)
        os.killpg(popen.pid, signal.SIGKILL)
        popen.wait(timeout=10)
        return popen.pid

    def restart(self, name: str) -> None:
        """Start daemon `name` again with its command line, as a supervisor (systemd) would after a crash (containerd:
        until its CRI serves)."""
        if name == "containerd":
            self._start_containerd(self.commands[name])
        else:
            self._spawn(name, self.commands[name])

    def check_running(self) -> None:
        """NodeError naming the daemon that exited, and its log."""
        for name, popen in self.processes.items():
            if popen.poll() is not None:
                raise NodeError(f"node {self.name}: {name} exited ({popen.returncode}); "
                                f"log: {self.state / 'logs' / (name + '.log')}")

    # ---- start / stop
    def start(self, kubelet_kubeconfig: Path, proxy_kubeconfig: Path, dns_kubeconfig: Path, archives: list[Path]) -> None:
        for directory in ("logs", "cni", "kubelet", "pod-logs", "opt"):
            (self.state / directory).mkdir(parents=True, exist_ok=True)
        (self.state / "resolv.conf").write_text("nameserver 127.0.0.1\n")
        (self.state / "cni" / "10-testenv.conflist").write_text(json.dumps(cni_config(
            self.pod_subnet, self.pod_gateway, self.state / "cni-ipam")))
        (self.state / "containerd.toml").write_text(containerd_config(INSIDE, self.state / "cni"))
        (self.state / "kubelet.yaml").write_text(json.dumps(kubelet_config(self)))
        (self.state / "kube-proxy.yaml").write_text(json.dumps(kube_proxy_config(self, proxy_kubeconfig)))
        (self.state / "Corefile").write_text(corefile(self, dns_kubeconfig))
        record_tunables()
        self._network_up()
        self._make_cgroup_root()
        self._start_holder()
        seed_root(archives, self.state / "root")  # the images are there, unpacked, when containerd starts
        self._start_containerd(["containerd", "--config", str(self.state / "containerd.toml")])
        self._spawn("kubelet", [self.binaries["kubelet"], f"--config={self.state / 'kubelet.yaml'}",
                                f"--kubeconfig={kubelet_kubeconfig}", f"--root-dir={INSIDE / 'kubelet'}",
                                f"--hostname-override={self.name}", f"--node-ip={self.ip}",
                                "--housekeeping-interval=60s", "--v=1"])
        self._spawn("kube-proxy", [self.binaries["kube-proxy"], f"--config={self.state / 'kube-proxy.yaml'}", "--v=1"])
        self._spawn("coredns", [self.binaries["coredns"], "-conf", str(self.state / "Corefile")])

    def stop(self) -> None:
        """Everything of the node goes: its containers (every process in its cgroups), its daemons and containerd's
        shims (every process in its mount namespace), its mounts (with that namespace), its cgroups, its network
        namespace and veth; the host's kernel tunables are put back when no other node runs."""
        for name in ("coredns", "kube-proxy", "kubelet"):
            popen = self.processes.get(name)
            if popen is not None and popen.poll() is None:
                os.killpg(popen.pid, signal.SIGTERM)
                try:
                    popen.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(popen.pid, signal.SIGKILL)
        self._kill_cgroup_processes()
        if self._holder_pid():
            self._kill_mount_namespace()
        for popen in self.processes.values():
            if popen.poll() is None:
                try:
                    os.killpg(popen.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            popen.wait(timeout=10)
        if self.holder is not None:
            if self.holder.poll() is None:
                os.killpg(self.holder.pid, signal.SIGKILL)
            self.holder.wait(timeout=10)
        self._remove_cgroups()
        self._network_down()
        if not _live_nodes():
            restore_tunables()

    def _make_cgroup_root(self) -> None:
        """cgroupRoot in every v1 hierarchy (the kubelet refuses to start without it); a cpuset needs its parent's
        cpus and mems before anything can join it."""
        for controller in Path("/sys/fs/cgroup").iterdir():
            if controller.name == "unified" or controller.is_symlink() or not (controller / "cgroup.procs").exists():
                continue
            root = controller / self.netns
            root.mkdir(exist_ok=True)
            for name in ("cpuset.cpus", "cpuset.mems"):
                if (controller / name).exists():
                    (root / name).write_text((controller / name).read_text())

    def _kill_mount_namespace(self) -> None:
        """SIGKILL every process in the node's mount namespace (containerd, its shims, which left its process group)."""
        _kill_where(lambda pid: os.readlink(f"/proc/{pid}/ns/mnt"), os.readlink(f"/proc/{self._holder_pid()}/ns/mnt"))

    def _cgroup_dirs(self) -> list[Path]:
        """Every cgroup directory of the node (cgroupRoot in each v1 controller), deepest first."""
        found = []
        for controller in Path("/sys/fs/cgroup").iterdir():
            root = controller / self.netns
            if root.is_dir():
                found.extend(path for path, _dirs, _files in os.walk(root))
        return sorted((Path(path) for path in found), key=lambda path: len(path.parts), reverse=True)

    def _kill_cgroup_processes(self) -> None:
        for _attempt in range(20):
            pids = set()
            for directory in self._cgroup_dirs():
                try:
                    pids.update(int(pid) for pid in (directory / "cgroup.procs").read_text().split())
                except OSError:
                    pass
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)

    def _remove_cgroups(self) -> None:
        for _attempt in range(20):
            left = []
            for directory in self._cgroup_dirs():
                try:
                    directory.rmdir()
                except OSError:
                    left.append(directory)
            if not left:
                return
            time.sleep(0.2)
        LOG.warning("node %s: cgroups left: %s", self.name, left[:5])


def _kill_where(namespace_of, target) -> None:
    """SIGKILL every process (but this one) whose namespace_of(pid) is target."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if namespace_of(entry) == target:
                    os.kill(int(entry), signal.SIGKILL)
            except OSError:
                pass


def stale_node(netns: str) -> None:
    """What a killed run left of node netns `tpcN-nodeI`: its processes (every one in its network namespace: the
    holder, the daemons, containerd's shims) and containers (its cgroups), its cgroups, routes, veth and namespace."""
    try:
        target = os.stat(f"/run/netns/{netns}").st_ino
        _kill_where(lambda pid: os.stat(f"/proc/{pid}/ns/net").st_ino, target)
    except OSError:
        pass
    bridge, index = netns.rsplit("-node", 1)
    node = Node(f"node-{index}", bridge, int(bridge[3:]), int(index), Path("/nonexistent"), Path("/nonexistent"), {})
    node._kill_cgroup_processes()  # pylint: disable=protected-access
    node._remove_cgroups()  # pylint: disable=protected-access
    node._network_down()  # pylint: disable=protected-access
