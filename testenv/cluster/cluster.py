"""Run a real Kubernetes control plane on 127.0.0.1 for tests.

etcd, kube-apiserver (RBAC on), kube-controller-manager, kube-scheduler, and
KWOK (fake nodes and pods) or real nodes (testenv.cluster.node: kubelet,
containerd, kube-proxy), each a child process with its log in the state
directory. Certificates are made with the ``openssl`` command.

    with Cluster(state_dir) as c:          # start() ... stop()
        c.kubeconfig                        # admin (system:masters) kubeconfig
        c.admin_token, c.tokens["alice"]    # static bearer tokens (admin; test users alice, bob, carol)
        c.create_fake_node("kwok-node-0")   # a Node that KWOK keeps Ready

Python 3.11 standard library only (plus the ``openssl`` command).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .build import ensure_binaries
from .kwok_stages import STAGES_YAML

LOG = logging.getLogger("testenv.cluster")

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
# KWOK's Nodes beside real ones (testing.start_cluster bulk_nodes): the scheduler puts no Pod there that does not
# tolerate this (a Pod bound by nodeName is not scheduled)
KWOK_TAINT = {"key": KWOK_NODE_ANNOTATION, "value": "fake", "effect": "NoSchedule"}
FAKE_NODE_PREFIX = "kwok-node-"
SERVICE_CIDR = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"  # first address of SERVICE_CIDR: the kubernetes Service
POD_CIDR = "10.244.0.1/16"  # pod IPs KWOK hands out


def fake_node_name(index):
    """The name of start_cluster's index-th KWOK Node."""
    return "%s%d" % (FAKE_NODE_PREFIX, index)


ADMIN_USER = "testenv-admin"
# the static bearer tokens (--token-auth-file): user -> groups; fresh random tokens at each start
TOKEN_USERS = {ADMIN_USER: ("system:masters",), "alice": (), "bob": (), "carol": ()}

# Go's GC target for the test bed's components (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KWOK, and
# on a real node containerd, kubelet, kube-proxy, CoreDNS) unless the environment sets GOGC: 400 for Go's 100 trades
# heap for CPU, which is what limits a 2-core machine running the tests. kube-apiserver started with HyperShift's 39
# CRDs and idle 30 s after: 12.0 and 12.1 CPU-s at 100, 10.1 and 9.3 at 400 (2026-12-03, /tmp scratch runs of
# start_cluster). `make bench` sets GOGC=100: its memory figures are a default runtime's.
TESTBED_GOGC = "400"


def component_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a test-bed component: env (default: this process's) with GOGC (TESTBED_GOGC) unless set."""
    env = dict(os.environ if env is None else env)
    env.setdefault("GOGC", TESTBED_GOGC)
    return env


DEFAULT_CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
    "daemonset-controller",
    "job-controller",
    "cronjob-controller",
    "ttl-after-finished-controller",
    "disruption-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "clusterrole-aggregation-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "pod-garbage-collector-controller",
    # Removes the node.kubernetes.io/not-ready taint the apiserver puts on
    # new Nodes once KWOK reports them Ready (and watches KWOK's leases).
    "node-lifecycle-controller",
)


# Metadata-level events of what clients do; the control plane's own components (controller-manager, scheduler, KWOK,
# the apiserver's loopback, kube-system service accounts) and health probes are left out.
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: [system:kube-controller-manager, system:kube-scheduler, kwok-controller, system:kube-proxy, testenv-coredns,
         system:apiserver]
- level: None
  userGroups: ["system:serviceaccounts:kube-system", "system:nodes"]
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
- level: Request  # a DELETE's dryRun is in its body (DeleteOptions), not always in the URI
  verbs: [delete, deletecollection]
- level: Metadata
"""


class ClusterError(RuntimeError):
    pass


# --------------------------------------------------------------------------
# helpers


EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
LOWEST_LISTEN_PORT = 20000
_HANDED_OUT: set = set()


def _ephemeral_low() -> int:
    try:
        with open(EPHEMERAL_RANGE_FILE) as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _bound_port(port: int):
    """The port a bind to 127.0.0.1:port gets (for 0, the kernel's pick), released at once; None when it is taken."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return None
        return s.getsockname()[1]


# Ports handed out, one file each (the owner's pid), shared by every process of a test run: pytest's two workers and
# the e2e process each start control planes whose ports are picked seconds before the servers bind them
PORT_RESERVATIONS = Path(os.environ.get("TESTENV_PORT_DIR", "/tmp/testenv-ports"))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reserve(port: int) -> bool:
    """Claim port for this process across processes (a file created exclusively); a claim whose owner is gone is
    taken over. False when a live process holds it."""
    PORT_RESERVATIONS.mkdir(parents=True, exist_ok=True)
    path = PORT_RESERVATIONS / str(port)
    for _attempt in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                owner = int(path.read_text() or "0")
            except (OSError, ValueError):
                return False  # being written by its owner right now
            if owner == os.getpid() or _pid_alive(owner):
                return False
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            continue
        with os.fdopen(fd, "w") as handle:
            handle.write(str(os.getpid()))
        return True
    return False


def free_port() -> int:
    """A free local port for a server to listen on, below the kernel's ephemeral range. A port the kernel picks
    (bind to 0) lies in that range, so the next outgoing connection may get it before the server binds it; seen in
    CI: kube-apiserver exiting with 'bind: address already in use' on 127.0.0.1:53053. Where the range leaves no
    room below it, the kernel's pick. A port is also claimed across processes (PORT_RESERVATIONS): a warm make test
    of 2026-12-04 saw kube-controller-manager of one worker find its port taken by a server of the other, picked in
    the seconds between the pick and the bind."""
    low = _ephemeral_low()
    if low - LOWEST_LISTEN_PORT >= 1000:
        for _attempt in range(200):
            port = secrets.SystemRandom().randrange(LOWEST_LISTEN_PORT, low)
            if port not in _HANDED_OUT and _bound_port(port) and _reserve(port):
                _HANDED_OUT.add(port)  # never twice from this process: the first taker may not listen yet
                return port
    port = _bound_port(0)
    if port is None:
        raise ClusterError("no free local port: binding 127.0.0.1:0 failed")
    return port


def die_with_parent() -> None:
    """In the child before exec: SIGKILL when the process that started it dies (Linux PR_SET_PDEATHSIG), so a
    test run killed by a timeout, or a fixture that failed half-way, leaves no control plane running."""
    import ctypes  # pylint: disable=import-outside-toplevel

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)


def terminate(popen: subprocess.Popen, timeout: float = 15.0) -> int | None:
    """SIGTERM, `timeout` seconds to exit, then SIGKILL; the exit code (None when it was never started)."""
    if popen is None:
        return None
    if popen.poll() is None:
        popen.terminate()
        try:
            popen.wait(timeout)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()
    return popen.returncode


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ClusterError(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-2000:]}")


class PKI:
    """A CA and the certificates and keys the control plane needs (EC P-256)."""

    def __init__(self, root: Path):
        self.root = root
        self.openssl = shutil.which("openssl")
        if not self.openssl:
            raise ClusterError("the `openssl` command is needed to make certificates")

    def path(self, name: str) -> Path:
        return self.root / name

    def _key_and_csr(self, name: str, subject: str) -> None:
        _run(
            [self.openssl, "req", "-new", "-nodes", "-newkey", "ec",
             "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject],
            self.root,
        )

    def make_ca(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        _run(
            [self.openssl, "req", "-x509", "-new", "-nodes", "-newkey", "ec",
             "-pkeyopt", "ec_paramgen_curve:prime256v1", "-days", "3650",
             "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=testenv-cluster-ca",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"],
            self.root,
        )

    def make_cert(self, name: str, subject: str, *, server_sans: list[str] | None = None) -> None:
        self._key_and_csr(name, subject)
        ext = ["basicConstraints=critical,CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment"]
        if server_sans is not None:
            ext += ["extendedKeyUsage=serverAuth", "subjectAltName=" + ",".join(server_sans)]
        else:
            ext += ["extendedKeyUsage=clientAuth"]
        (self.root / f"{name}.ext").write_text("\n".join(ext) + "\n")
        _run(
            [self.openssl, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt",
             "-CAkey", "ca.key", "-CAcreateserial", "-days", "365", "-sha256",
             "-extfile", f"{name}.ext", "-out", f"{name}.crt"],
            self.root,
        )

    def make_sa_key(self) -> None:
        _run(
            [self.openssl, "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sa.key"],
            self.root,
        )
        _run([self.openssl, "ec", "-in", "sa.key", "-pubout", "-out", "sa.pub"], self.root)


def write_kubeconfig(path: Path, server: str, ca: Path, cert: Path, key: Path, user: str) -> None:
    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    # JSON is valid YAML; kubectl and client-go read either.
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "testenv", "cluster": {"server": server, "certificate-authority-data": b64(ca)}}
        ],
        "users": [
            {"name": user, "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)}}
        ],
        "contexts": [{"name": "testenv", "context": {"cluster": "testenv", "user": user}}],
        "current-context": "testenv",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(config, indent=2) + "\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


# --------------------------------------------------------------------------
# processes


@dataclass
class Process:
    name: str
    cmd: list[str]
    log: Path
    health_url: str = ""
    popen: subprocess.Popen | None = None
    started: float = 0.0
    ready_after: float | None = None  # seconds from start to healthy

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class PodNetwork:
    """The network of one cluster's real nodes (testenv.cluster.node): a bridge `tpcN` with the gateway
    10.(200+N).0.1/24 (the nodes' links; their Pods are routed /24s), N the first index no live cluster holds. Its owner (this process) is written under
    OWNERS, so a bridge left by a killed run is taken back, with its Pods' namespaces."""

    OWNERS = Path("/run/testenv-pods")
    SLOTS = 50

    def __init__(self, index: int):
        self.index = index
        self.bridge = f"tpc{index}"
        self.gateway = f"10.{200 + index}.0.1"
        self.prefix = 24

    @classmethod
    def allocate(cls) -> "PodNetwork":
        if os.geteuid() != 0 or shutil.which("ip") is None:
            raise ClusterError("real nodes need root and the ip command (iproute2): network namespaces, a bridge")
        cls.OWNERS.mkdir(parents=True, exist_ok=True)
        with cls._locked():  # two processes taking back the same stale slot must not undo each other's bridge
            return cls._allocate()

    @classmethod
    @contextlib.contextmanager
    def _locked(cls):
        with open(cls.OWNERS / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    @classmethod
    def _allocate(cls) -> "PodNetwork":
        for index in range(cls.SLOTS):
            network = cls(index)
            owner = cls.OWNERS / network.bridge
            if owner.exists():
                try:
                    held = _pid_alive(int(owner.read_text() or 0))
                except ValueError:
                    held = False
                if held:
                    continue  # a live cluster holds it
                network._release()  # pylint: disable=protected-access
            added = subprocess.run(["ip", "link", "add", network.bridge, "type", "bridge"], capture_output=True,
                                   text=True, check=False)
            if added.returncode != 0:
                continue
            owner.write_text(str(os.getpid()))
            for args in (["addr", "add", f"{network.gateway}/{network.prefix}", "dev", network.bridge],
                         ["link", "set", network.bridge, "up"]):
                subprocess.run(["ip", *args], capture_output=True, check=True)
            return network
        raise ClusterError(f"no free pod network: {cls.SLOTS} bridges tpcN are held by live clusters")

    def release(self) -> None:
        self.OWNERS.mkdir(parents=True, exist_ok=True)
        with self._locked():
            self._release()

    def _release(self) -> None:
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
        for line in listed.splitlines():
            name = line.split()[0] if line.split() else ""
            if name.startswith(self.bridge + "-node"):  # a real node a killed run left: its processes, cgroups
                from .node import stale_node  # pylint: disable=import-outside-toplevel
                stale_node(name)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, check=False)
        (self.OWNERS / self.bridge).unlink(missing_ok=True)


@dataclass
class Cluster:
    state_dir: Path
    binaries: dict[str, str] | None = None
    kubeconfig: Path | None = None  # where to write the admin kubeconfig
    components: tuple[str, ...] = ("kube-controller-manager", "kube-scheduler", "kwok")
    controllers: tuple[str, ...] = DEFAULT_CONTROLLERS
    start_timeout: float = 120.0
    # called with the cluster once kube-apiserver is ready, before the controllers start (install CRDs here: the
    # garbage collector then watches them from its first discovery, not after its 30 s resync)
    prepare: Callable[["Cluster"], None] | None = None
    audit: bool = True  # audit log of the requests of users that are not control-plane components (audit_log)
    processes: list[Process] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict, repr=False)  # user -> static bearer token
    pod_network: PodNetwork | None = None  # with real nodes
    nodes: int = 0  # real nodes (testenv.cluster.node: kubelet, containerd, kube-proxy), kube-apiserver on their bridge
    node_images: list[Path] = field(default_factory=list)  # image archives side-loaded into every real node
    real_nodes: list = field(default_factory=list)
    # an etcd data directory to start from (testing.etcd_seed: the CRDs already stored), copied, never changed
    etcd_seed: Path | None = None

    def __post_init__(self) -> None:
        self.state_dir = Path(self.state_dir).resolve()
        if self.kubeconfig is None:
            self.kubeconfig = self.state_dir / "admin.kubeconfig"
        self.kubeconfig = Path(self.kubeconfig).resolve()
        self.pki = PKI(self.state_dir / "pki")

    # ---- context manager
    def __enter__(self) -> "Cluster":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def host(self) -> str:
        """Where kube-apiserver listens: loopback, or with real nodes the bridge of their links (they reach it there)."""
        return self.pod_network.gateway if self.nodes else "127.0.0.1"

    @property
    def server(self) -> str:
        return f"https://{self.host}:{self.ports['apiserver']}"

    @property
    def admin_token(self) -> str:
        """Bearer token of testenv-admin (group system:masters)."""
        return self.tokens[ADMIN_USER]

    # ---- start
    def start(self) -> "Cluster":
        t0 = time.monotonic()
        want = ["kube-apiserver", "etcd", *self.components,
                *(("kubelet", "kube-proxy", "coredns") if self.nodes else ())]
        if self.binaries is None:
            self.binaries = ensure_binaries(want)
        missing = [n for n in want if n not in self.binaries]
        if missing:
            raise ClusterError(f"binaries not available: {missing} (have {sorted(self.binaries)})")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "logs").mkdir(exist_ok=True)
        for name in ("etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kwok"):
            self.ports[name] = free_port()
        if self.nodes:
            self.pod_network = PodNetwork.allocate()

        self._make_pki()
        self._make_tokens()
        self.timings["pki"] = time.monotonic() - t0

        self._start_etcd()
        self._start_apiserver()
        if self.prepare is not None:
            self.prepare(self)
            self.timings["prepare"] = time.monotonic() - t0
        if "kube-controller-manager" in self.components:
            self._start_controller_manager()
        if "kube-scheduler" in self.components:
            self._start_scheduler()
        if "kwok" in self.components:
            self._start_kwok()
        for proc in self.processes[2:]:
            self._wait_healthy(proc)
        if self.nodes:
            self._start_nodes()
        self.timings["total"] = time.monotonic() - t0
        (self.state_dir / "cluster.json").write_text(json.dumps(self.describe(), indent=2) + "\n")
        return self

    def _make_pki(self) -> None:
        pki = self.pki
        pki.make_ca()
        sans = [
            "IP:127.0.0.1",
            f"IP:{SERVICE_IP}",
            "DNS:localhost",
            "DNS:kubernetes",
            "DNS:kubernetes.default",
            "DNS:kubernetes.default.svc",
            "DNS:kubernetes.default.svc.cluster.local",
        ]
        if self.pod_network is not None:  # the kubernetes Service's address in the pod network
            sans.append(f"IP:{self.pod_network.gateway}")
        pki.make_cert("apiserver", "/CN=kube-apiserver", server_sans=sans)
        pki.make_sa_key()
        users = {
            "admin": "/O=system:masters/CN=testenv-admin",
            "controller-manager": "/CN=system:kube-controller-manager",
            "scheduler": "/CN=system:kube-scheduler",
            "kwok": "/O=system:masters/CN=kwok-controller",
        }
        for index in range(self.nodes):  # the Node authorizer's identity of each kubelet, and kube-proxy's
            users[f"node-{index}"] = f"/O=system:nodes/CN=system:node:node-{index}"
        if self.nodes:
            users["kube-proxy"] = "/CN=system:kube-proxy"
            users["coredns"] = "/O=system:masters/CN=testenv-coredns"  # reads Services, EndpointSlices, Namespaces
        for name, subject in users.items():
            pki.make_cert(name, subject)
        server = self.server
        for name in users:
            path = self.kubeconfig if name == "admin" else self.state_dir / f"{name}.kubeconfig"
            write_kubeconfig(
                path, server, pki.path("ca.crt"), pki.path(f"{name}.crt"), pki.path(f"{name}.key"),
                name,
            )

    def _make_tokens(self) -> None:
        """The --token-auth-file (token,user,uid,"group1,group2") with a fresh random token per TOKEN_USERS user."""
        self.tokens = {user: secrets.token_hex(16) for user in TOKEN_USERS}
        lines = []
        for user, groups in TOKEN_USERS.items():
            line = f"{self.tokens[user]},{user},uid-{user}"
            lines.append(line + (f',"{",".join(groups)}"' if groups else ""))
        path = self.state_dir / "tokens.csv"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("\n".join(lines) + "\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)

    def _spawn(self, name: str, args: list[str], command: list[str] | None = None,
               env: dict[str, str] | None = None) -> Process:
        proc = Process(name, [*(command or [self.binaries[name]]), *args], self.state_dir / "logs" / f"{name}.log")
        with open(proc.log, "ab") as log:
            proc.popen = subprocess.Popen(
                proc.cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.state_dir,
                env=component_env(env),
                start_new_session=True,  # own process group: stop() signals it whole
                preexec_fn=die_with_parent,
            )
        proc.started = time.monotonic()
        self.processes.append(proc)
        LOG.info("started %s pid %s", name, proc.pid)
        return proc

    def _start_etcd(self) -> None:
        data_dir = self.state_dir / "etcd"
        if self.etcd_seed is not None and not data_dir.exists():
            shutil.copytree(self.etcd_seed, data_dir)
        client = f"http://127.0.0.1:{self.ports['etcd']}"
        peer = f"http://127.0.0.1:{self.ports['etcd-peer']}"
        proc = self._spawn(
            "etcd",
            [
                "--name=testenv",
                f"--data-dir={self.state_dir / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=testenv={peer}",
                "--unsafe-no-fsync=true",  # test data only: skip fsync
                "--log-level=warn",
            ],
        )
        proc.health_url = f"{client}/health"
        self._wait_healthy(proc)

    def _start_apiserver(self) -> None:
        pki = self.pki
        proc = self._spawn(
            "kube-apiserver",
            [
                f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
                f"--bind-address={self.host}",
                f"--advertise-address={self.host}",
                f"--secure-port={self.ports['apiserver']}",
                f"--tls-cert-file={pki.path('apiserver.crt')}",
                f"--tls-private-key-file={pki.path('apiserver.key')}",
                f"--client-ca-file={pki.path('ca.crt')}",
                f"--token-auth-file={self.state_dir / 'tokens.csv'}",
                f"--service-account-key-file={pki.path('sa.pub')}",
                f"--service-account-signing-key-file={pki.path('sa.key')}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--authorization-mode=Node,RBAC",
                "--allow-privileged=true",
                f"--cert-dir={self.state_dir / 'apiserver-certs'}",
                "--profiling=false",
                "--v=1",
                # a Service that kube-apiserver calls (a conversion webhook) is reached at its endpoints, the pod
                # IPs of its Ready Pods: kube-proxy routes ClusterIPs inside the nodes' network namespaces, and
                # kube-apiserver runs on the host
                *(["--enable-aggregator-routing=true"] if self.pod_network is not None else []),
                *self._audit_args(),
            ],
        )
        proc.health_url = f"{self.server}/readyz"
        self._wait_healthy(proc)

    @property
    def audit_log(self) -> Path:
        return self.state_dir / "audit.log"

    def _audit_args(self) -> list[str]:
        if not self.audit:
            return []
        policy = self.state_dir / "audit-policy.yaml"
        policy.write_text(AUDIT_POLICY)
        return [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}", "--audit-log-mode=blocking",
                "--audit-log-maxsize=0"]

    def _kube_component_args(self, name: str, port_name: str) -> list[str]:
        kc = self.state_dir / f"{name}.kubeconfig"
        return [
            f"--kubeconfig={kc}",
            f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.ports[port_name]}",
            f"--cert-dir={self.state_dir / (name + '-certs')}",
            "--leader-elect=false",
            "--profiling=false",
        ]

    def _start_controller_manager(self) -> None:
        proc = self._spawn(
            "kube-controller-manager",
            [
                *self._kube_component_args("controller-manager", "controller-manager"),
                "--controllers=" + ",".join(self.controllers),
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={self.pki.path('sa.key')}",
                f"--root-ca-file={self.pki.path('ca.crt')}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--concurrent-gc-syncs=5",
                # as OpenShift runs it (cluster-kube-controller-manager-operator's defaultconfig.yaml: 150 and 300);
                # upstream's 20/30 would throttle the garbage collector's orphaning and the ReplicaSet controller
                "--kube-api-qps=150",
                "--kube-api-burst=300",
            ],
        )
        proc.health_url = f"https://127.0.0.1:{self.ports['controller-manager']}/healthz"

    def _start_scheduler(self) -> None:
        proc = self._spawn("kube-scheduler", self._kube_component_args("scheduler", "scheduler"))
        proc.health_url = f"https://127.0.0.1:{self.ports['scheduler']}/healthz"

    def _start_kwok(self) -> None:
        stages = self.state_dir / "kwok-stages.yaml"
        stages.write_text(STAGES_YAML)
        proc = self._spawn(
            "kwok",
            [
                f"--kubeconfig={self.state_dir / 'kwok.kubeconfig'}",
                f"--config={stages}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
                f"--server-address=127.0.0.1:{self.ports['kwok']}",
                f"--cidr={POD_CIDR}",
                "--node-ip=127.0.0.1",
                "--node-lease-duration-seconds=40",
            ],
        )
        proc.health_url = f"http://127.0.0.1:{self.ports['kwok']}/healthz"

    def _start_nodes(self) -> None:
        """The real nodes (testenv.cluster.node), each Ready before this returns."""
        from .images import pause_archive  # pylint: disable=import-outside-toplevel
        from .node import Node  # pylint: disable=import-outside-toplevel
        t0 = time.monotonic()
        archives = [pause_archive(), *self.node_images]
        for index in range(self.nodes):
            node = Node(f"node-{index}", self.pod_network.bridge, self.pod_network.index, index,
                        self.state_dir / f"node-{index}", self.pki.path("ca.crt"), self.binaries)
            self.real_nodes.append(node)
            node.start(self.state_dir / f"node-{index}.kubeconfig", self.state_dir / "kube-proxy.kubeconfig",
                       self.state_dir / "coredns.kubeconfig", archives)
        deadline = time.monotonic() + self.start_timeout
        names = {node.name for node in self.real_nodes}
        while True:
            items = self.api("GET", "/api/v1/nodes").get("items") or []
            ready = {n["metadata"]["name"] for n in items if any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in (n.get("status") or {}).get("conditions") or ())}
            if names <= ready:
                break
            for node in self.real_nodes:
                node.check_running()
            if time.monotonic() > deadline:
                raise ClusterError(f"real nodes {sorted(names - ready)} not Ready after {self.start_timeout:.0f}s; "
                                   f"logs in {self.state_dir}/node-*/logs")
            time.sleep(0.2)
        self.timings["nodes"] = time.monotonic() - t0

    # ---- health
    def _ssl_context(self, verify: bool) -> ssl.SSLContext:
        if verify:
            ctx = ssl.create_default_context(cafile=str(self.pki.path("ca.crt")))
            ctx.load_cert_chain(str(self.pki.path("admin.crt")), str(self.pki.path("admin.key")))
        else:  # nothing verified: no CA store to load (create_default_context reads the system's on every call)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx

    def _wait_healthy(self, proc: Process) -> None:
        url = proc.health_url
        ctx = self._ssl_context(verify=url.startswith(self.server)) if url.startswith("https") else None
        deadline = proc.started + self.start_timeout
        last = ""
        while True:
            if not proc.alive():
                raise ClusterError(
                    f"{proc.name} exited with {proc.popen.returncode}; last lines of {proc.log}:\n"
                    + proc.tail()
                )
            try:
                with urllib.request.urlopen(url, timeout=2, context=ctx) as resp:
                    if resp.status == 200:
                        proc.ready_after = time.monotonic() - proc.started
                        self.timings[proc.name] = proc.ready_after
                        LOG.info("%s healthy after %.1fs", proc.name, proc.ready_after)
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as err:
                last = f"HTTP {err.code}"
            except (OSError, ssl.SSLError) as err:
                last = str(err)
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"{proc.name} not healthy at {url} after {self.start_timeout:.0f}s ({last}); "
                    f"last lines of {proc.log}:\n" + proc.tail()
                )
            time.sleep(0.2)

    # ---- API helpers
    def api(self, method: str, path: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.server + path, data=data, method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30, context=self._ssl_context(True)) as resp:
            return json.loads(resp.read() or b"{}")

    def create_fake_node(self, name: str, labels: dict[str, str] | None = None,
                         taints: list[dict] | None = None) -> dict:
        """Create a Node that KWOK manages (and so marks Ready), with `taints` if given."""
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
                "labels": {
                    "type": "kwok",
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    **(labels or {}),
                },
            },
            "spec": {"taints": list(taints)} if taints else {},
        }
        return self.api("POST", "/api/v1/nodes", node)

    # ---- introspection
    def describe(self) -> dict:
        return {
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            "state_dir": str(self.state_dir),
            "ports": self.ports,
            "timings_seconds": {k: round(v, 2) for k, v in self.timings.items()},
            "processes": {
                p.name: {"pid": p.pid, "rss_kib": rss_kib(p.pid) if p.alive() else None, "log": str(p.log)}
                for p in self.processes
            },
        }

    # ---- kube-apiserver alone: a management cluster whose API goes away and comes back
    def _apiserver(self) -> Process:
        for proc in self.processes:
            if proc.name == "kube-apiserver":
                return proc
        raise ClusterError("this cluster has no kube-apiserver process (not started, or stopped whole)")

    def stop_apiserver(self, timeout: float = 15.0, sig: int = signal.SIGTERM) -> int | None:
        """Stop the kube-apiserver process alone (``sig``, default SIGTERM; ``timeout`` seconds, then SIGKILL): its
        port refuses connections until restart_apiserver. etcd and its data, and the other components, keep running
        (they retry against the port). Returns the exit code."""
        proc = self._apiserver()
        if proc.alive():
            _signal_group(proc.popen, sig)
            try:
                proc.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                LOG.warning("kube-apiserver did not stop in %.0fs; killing it", timeout)
                _signal_group(proc.popen, signal.SIGKILL)
                proc.popen.wait(timeout=5)
        LOG.info("stopped kube-apiserver pid %s: %s", proc.pid, proc.popen.returncode)
        return proc.popen.returncode

    def restart_apiserver(self) -> Process:
        """Start kube-apiserver again after stop_apiserver: the same command line, so the same port, certificates,
        tokens and etcd (its data as the stopped one left it); the log and the audit log go on in the same files.
        Waits until /readyz answers 200; returns the new Process, in the old one's place in ``processes``."""
        old = self._apiserver()
        if old.alive():
            raise ClusterError(f"kube-apiserver (pid {old.pid}) is running: stop_apiserver first")
        index = self.processes.index(old)
        proc = self._spawn(old.name, old.cmd[1:], command=old.cmd[:1])
        self.processes.remove(proc)
        self.processes[index] = proc
        proc.health_url = old.health_url
        self._wait_healthy(proc)
        return proc

    # ---- stop
    def stop(self, timeout: float = 15.0) -> None:
        """Stop the clients first, then kube-apiserver, then etcd.

        Each tier gets SIGTERM and ``timeout`` seconds, then SIGKILL: the
        apiserver shuts down cleanly only while etcd is still there.
        """
        for node in self.real_nodes:  # they need no API server to stop: their containers go with them
            node.stop()
        self.real_nodes.clear()
        tiers = [
            [p for p in self.processes if p.name not in ("kube-apiserver", "etcd")],
            [p for p in self.processes if p.name == "kube-apiserver"],
            [p for p in self.processes if p.name == "etcd"],
        ]
        for tier in tiers:
            live = [p for p in tier if p.alive()]
            for proc in live:
                _signal_group(proc.popen, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            for proc in live:
                try:
                    proc.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
                    continue
                except subprocess.TimeoutExpired:
                    LOG.warning("%s did not stop in %.0fs; killing it", proc.name, timeout)
                _signal_group(proc.popen, signal.SIGKILL)
                try:
                    proc.popen.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    LOG.error("%s (pid %s) would not die", proc.name, proc.pid)
        self.processes.clear()
        if self.pod_network is not None:
            self.pod_network.release()


def _signal_group(popen: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(popen.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
