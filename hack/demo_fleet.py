"""The fleet demo (`make demo`): a real local management cluster (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and a real node, built from upstream by testenv/cluster) with 6 HostedClusters (AWS and KubeVirt), one
of which a ValidatingAdmissionPolicy refuses to migrate, migrated by playbooks/migrate_fleet.yml, then checked by
playbooks/verify_fleet.yml. One demo per --workdir at a time (a second is refused, naming the first's pid); demos in
different workdirs run side by side (each its own bridge, node and ports).

    .venv/bin/python hack/demo_fleet.py [--count 6] [--machines 2] [--serial 6] [--faulty hc-03] [--workdir DIR]
        [--strategy zero_stop|scale_down]

Expected end: every HostedCluster migrated but the faulty one, which is rolled back (state failed, scope legacy,
its HCP namespace as it was). Exits 0 when that is what happened. The server is stopped whatever happens.
"""
import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO_ROOT, os.path.join(REPO_ROOT, ".collections")]

import yaml  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.hypershift.private_capi.plugins.module_utils.fleet.report import (  # noqa: E402  pylint: disable=wrong-import-position
    timing_headline, window_headline)
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import PRIVATE_SUFFIX  # noqa: E402  pylint: disable=wrong-import-position
from testenv import capi, yamlio  # noqa: E402  pylint: disable=wrong-import-position
from testenv.client import wait_for  # noqa: E402  pylint: disable=wrong-import-position
from testenv.hcp import build, fleet  # noqa: E402  pylint: disable=wrong-import-position
from testenv.cluster import build as cluster_build  # noqa: E402  pylint: disable=wrong-import-position
from testenv.cluster.admission import refuse  # noqa: E402  pylint: disable=wrong-import-position
from testenv.cluster.testing import start_cluster  # noqa: E402  pylint: disable=wrong-import-position
from testenv.cluster.testing import containers_named, unwell  # noqa: E402  pylint: disable=wrong-import-position
from testenv.monitoring import start_prometheus  # noqa: E402  pylint: disable=wrong-import-position
from hack.demo_monitoring import print_scraped, scraped  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.hypershift.private_capi.plugins.module_utils import monitoring  # noqa: E402  pylint: disable=wrong-import-position

BIN = os.path.dirname(sys.executable)
SIDECAR = "kube-apiserver-proxy"  # roles/api_proxy/vars/main.yml
FAST_VARS = {"private_capi_migrate_pause_settle_seconds": 0, "private_capi_migrate_health_stable_seconds": 0}
# lines of the playbooks' output worth showing live (the rest goes to the log file)
SHOWN_PREFIXES = ("PLAY [", "PLAY RECAP", "fatal:", "failed:")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--count", type=int, default=6, help="HostedClusters (platforms AWS and KubeVirt in turn)")
    parser.add_argument("--machines", type=int, default=2, help="Machines of each HostedCluster's one NodePool")
    parser.add_argument("--serial", type=int, default=6, help="HostedClusters migrated at once (and forks)")
    parser.add_argument("--faulty", default="hc-03", help="the HostedCluster whose private Machines the server refuses")
    parser.add_argument("--strategy", default="zero_stop", choices=("zero_stop", "scale_down"),
                        help="private_capi_migrate_strategy (zero_stop: the controllers never stop)")
    parser.add_argument("--workdir", default=os.path.join(REPO_ROOT, "reports", "demo"),
                        help="server state, seed, inventory and logs (the reports go to its parent)")
    return parser.parse_args(argv)


def run_playbook(playbook, inventory, extra_vars, forks, log_path):
    """ansible-playbook with its whole output in log_path and the play headers, failures and recap on the console."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    command = [os.path.join(BIN, "ansible-playbook"), "-i", inventory, "-f", str(forks),
               os.path.join(REPO_ROOT, "playbooks", playbook), "-e", json.dumps(extra_vars)]
    shown_command = command[:1] + [os.path.relpath(c, REPO_ROOT) if c.startswith(REPO_ROOT) else c for c in command[1:]]
    print("$ " + " ".join(shown_command), flush=True)
    started = time.monotonic()
    in_summary = in_recap = False
    with open(log_path, "w") as log, subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                                                      stderr=subprocess.STDOUT, text=True) as process:
        for line in process.stdout:
            log.write(line)
            # the summary/table tasks' messages and the recap are shown whole
            if line.startswith("TASK ["):
                in_summary = ": Summary]" in line or ": Verification table]" in line
            in_recap = in_recap or line.startswith("PLAY RECAP")
            if in_summary or in_recap or line.startswith(SHOWN_PREFIXES):
                shown = line.rstrip()
                print("  " + (shown[:240] + " ..." if len(shown) > 240 and not in_summary else shown), flush=True)
    elapsed = time.monotonic() - started
    print("  (%s: exit %d in %.0f s; full output in %s)"
          % (playbook, process.returncode, elapsed, os.path.relpath(log_path, REPO_ROOT)), flush=True)
    return process.returncode


def hostedcluster_states(server):
    listed = server.request("GET", "/apis/hypershift.openshift.io/v1beta1/namespaces/%s/hostedclusters"
                            % fleet.HC_NAMESPACE).json()
    return {hc["metadata"]["name"]: (hc["metadata"].get("labels") or {}).get(fleet.STATE_LABEL, "?")
            for hc in listed["items"]}


def private_crds(server):
    listed = server.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions").json()["items"]
    return sorted(crd["metadata"]["name"] for crd in listed if crd["spec"]["group"].endswith(PRIVATE_SUFFIX))


def latest_report(report_root):
    runs = sorted(name for name in os.listdir(report_root) if name.startswith("fleet-"))
    return os.path.join(report_root, runs[-1]) if runs else None


def electing(server, count):
    """Each HCP namespace's cluster-api runs the real core manager v1.14.2 as HyperShift runs it (its leader election:
    lease 137 s, renew 107 s, retry 26 s), reconciling nothing of the fixture (testenv.capi.electing_core_manager):
    the pre-install rolls it, and the report's leaderless figures are its Lease's, handed over by the run."""
    started = time.monotonic()
    namespaces = ["%s-hc-%02d" % (fleet.HC_NAMESPACE, index) for index in range(1, count + 1)]
    for namespace in namespaces:
        capi.run_electing_core_manager(server, namespace)
    lease = capi.LEADER_LEASES["cluster-api"]
    wait_for(lambda: all(capi.lease_holder_pod(server, namespace, lease).startswith("cluster-api-")
                         for namespace in namespaces), "the core managers to hold their Leases", timeout=300, interval=1)
    print("== the core manager of cluster-api (CAPI v1.14.2, HyperShift's leader election) leads in each of the %d HCP "
          "namespaces, %.0f s" % (len(namespaces), time.monotonic() - started), flush=True)


class BackgroundBuild:
    """A binary the demo needs only at its end (Prometheus, for the fleet metrics), built by testenv/cluster/build.py in
    a thread from the demo's start: its go build runs at nice 19, so it takes the CPU the demo leaves (the pre-install
    waits about 45 s with 2 cores mostly idle for the CAPI managers' next leader election, client-go's retry period)
    and the demo's own processes keep theirs. On a new machine that takes Prometheus' build (about 90 s on 2 cores)
    off `make demo`'s wall time; with the binary in the cache it does nothing."""

    def __init__(self, name):
        self.name, self.error, self.seconds = name, None, 0.0
        self.cached = os.access(cluster_build.cached_path(name), os.X_OK)
        self.thread = threading.Thread(target=self._build, name="build-" + name)
        self.thread.start()

    def _build(self):
        started = time.monotonic()
        try:
            cluster_build.ensure_binaries([self.name])
        except (cluster_build.BuildError, OSError) as error:
            self.error = error
        self.seconds = time.monotonic() - started

    def wait(self):
        """Wait for the build; None when the binary is there, else why not."""
        waited = time.monotonic()
        self.thread.join()
        if not self.cached:
            print("== %s built in the background in %.0f s (the demo waited %.0f s for it)"
                  % (self.name, self.seconds, time.monotonic() - waited), flush=True)
        return None if self.error is None else "%s: %s" % (self.name, self.error)


def demo(args, server, seed):
    print("== loading the fleet: %d HostedClusters x 1 NodePool x %d Machines (AWS, KubeVirt)"
          % (args.count, args.machines), flush=True)
    started = time.monotonic()
    loaded = fleet.load_fleet_dir(server.kubeconfig, seed, crds_installed=True)
    print("   %d objects loaded in %.1f s" % (loaded, time.monotonic() - started), flush=True)
    electing(server, args.count)
    # a ValidatingAdmissionPolicy refuses every private Machine of one HCP namespace (no probe: the private CRDs do not
    # exist yet - migrate_fleet.yml creates them - and the policy is in force long before the first copy)
    namespace = "clusters-" + args.faulty
    with server.api_client() as api:
        refuse(api, "demo-refuse-private-machines", group="cluster.hypershift.openshift.io", resource="machines",
               namespace=namespace, message="the demo's ValidatingAdmissionPolicy refuses private Machines in "
               + namespace)
    print("== ValidatingAdmissionPolicy demo-refuse-private-machines refuses private Machines in %s (it must roll "
          "back)" % namespace)
    inventory = os.path.join(args.workdir, "inventory.yml")
    with open(inventory, "w") as handle:
        yaml.safe_dump({"all": {"children": {"management_clusters": {"hosts": {
            "mc-demo": {"private_capi_kubeconfig": server.kubeconfig}}}}}}, handle)
    report_root = os.path.dirname(args.workdir)
    private_before = private_crds(server)
    print("== private CRDs before the run: %d (a real management cluster has none; migrate_fleet.yml creates them)"
          % len(private_before), flush=True)
    print("== migrating the fleet (serial %d)" % args.serial, flush=True)
    run_playbook("migrate_fleet.yml", inventory,
                 dict(FAST_VARS, private_capi_fleet_serial=args.serial, private_capi_fleet_report_root=report_root,
                      private_capi_migrate_strategy=args.strategy, private_capi_monitoring=True),
                 args.serial, os.path.join(args.workdir, "migrate_fleet.log"))
    verify_playbook = os.path.join(REPO_ROOT, "playbooks", "verify_fleet.yml")
    verified = None
    if os.path.exists(verify_playbook):
        print("== verifying the fleet (read-only)", flush=True)
        verified = run_playbook("verify_fleet.yml", inventory, {"private_capi_verify_report_root": report_root},
                                args.serial, os.path.join(args.workdir, "verify_fleet.log"))
    private_after = private_crds(server)
    print("== private CRDs after the run: %d, created by the collection (role private_crds)" % len(private_after))
    states = hostedcluster_states(server)
    expected = {name: ("failed" if name == args.faulty else "migrated") for name in states}
    print("== HostedCluster states")
    for name in sorted(states):
        print("   %-10s %-10s %s" % (name, states[name], "ok" if states[name] == expected[name] else
                                     "UNEXPECTED (expected %s)" % expected[name]))
    report = latest_report(report_root)
    print("== report: %s/report.md (Mermaid gantt) and report.json" % os.path.relpath(report, REPO_ROOT)
          if report else "== no report was written")
    if report and os.path.exists(os.path.join(report, "report.json")):
        with open(os.path.join(report, "report.json")) as handle:  # each figure named: wall, batch, one cluster alone
            document = json.load(handle)
        print("   %s" % timing_headline(document))
        # the way back beside the way forward: the rolled-back cluster's window against the migrated clusters' p50
        print("   %s" % window_headline(document))
    print("== the CAPI translation demo of the examples: ansible-playbook -i localhost, playbooks/translate_examples.yml")
    # verify_fleet.yml must fail exactly the faulty cluster (rolled back, so not migrated)
    unverified = None
    if verified is not None:
        results = sorted(name for name in os.listdir(report_root) if name.startswith("verify-"))
        with open(os.path.join(report_root, results[-1])) as handle:
            unverified = sorted(row["name"] for row in json.load(handle) if not row["ok"])
        print("== verify: not verified %s (expected [%r])" % (unverified, args.faulty))
    fleet_scraped = scrape_the_fleet(args, server, args.prometheus_build)
    # what a kubelet would have done to them: every sidecar probed at its pod IP all along, none restarted
    sidecars = containers_named(server, SIDECAR)
    problems = unwell(sidecars)
    print("== proxy sidecars: %d running as containers on the real node, %d Ready, restarts %d%s"
          % (len(sidecars), len([s for s in sidecars.values() if s["ready"]]),
             sum(s["restartCount"] for s in sidecars.values()), "".join("\n   " + line for line in problems)))
    success = (not private_before and bool(private_after) and states == expected and len(states) == args.count and unverified in (None, [args.faulty])
               and bool(sidecars) and not problems and fleet_scraped)
    print("== demo %s" % ("OK: every HostedCluster migrated except %s, rolled back" % args.faulty if success
                          else "FAILED: see the logs in " + os.path.relpath(args.workdir, REPO_ROOT)))
    return 0 if success else 1


EXPORTER = ("hypershift", "capi-conversion-shim-exporter", 9091)  # the conversion_shim role's defaults


def scrape_the_fleet(args, server, prometheus_build):
    """The fleet exporter the conversion_shim role deployed (private_capi_monitoring: true), scraped at its pod IP by a
    real Prometheus with the collection's rules (testenv.monitoring); prints what Prometheus holds and which alerts
    fire. Whether its totals are the report's: migrated count - 1, failed 1."""
    namespace, name, port = EXPORTER
    pods = [pod for pod in server.request("GET", "/api/v1/namespaces/%s/pods" % namespace).json()["items"]
            if pod["metadata"]["name"].startswith(name + "-") and (pod.get("status") or {}).get("podIP")]
    if not pods:
        print("== fleet metrics: no exporter Pod %s/%s-* runs" % (namespace, name))
        return False
    unbuilt = prometheus_build.wait()
    if unbuilt:
        print("== fleet metrics: no Prometheus: " + unbuilt)
        return False
    directory = os.path.join(args.workdir, "prometheus")
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    rules = os.path.join(directory, "rules.yml")
    with open(rules, "w") as handle:
        yaml.safe_dump(monitoring.rule_file(), handle, sort_keys=False)
    process, url = start_prometheus(directory, "http://%s:%d/metrics" % (pods[0]["status"]["podIP"], port), rules)
    try:
        wanted = {"migrated": args.count - 1, "failed": 1}
        deadline = time.monotonic() + 60
        while True:
            try:
                found = scraped(url)
            except OSError:
                found = None
            if found and all(found["totals"].get(key) == value for key, value in wanted.items()) and found["alerts"]:
                break
            if time.monotonic() > deadline:
                print("== fleet metrics: Prometheus did not see %s within 60 s: %s" % (wanted, found))
                return False
            time.sleep(1)
        print("== fleet metrics, as a real Prometheus scraped them from the exporter (%s:%d) with the collection's "
              "rules:" % (pods[0]["status"]["podIP"], port), flush=True)
        print_scraped(url)
        return True
    finally:
        process.stop()


def hold_workdir(workdir):
    """An exclusive lock on workdir for this demo's life (the open file, returned); None when another demo holds it."""
    lock = open(os.path.join(workdir, ".lock"), "a+")  # pylint: disable=consider-using-with
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "?"
        lock.close()
        print("demo_fleet: another demo (pid %s) runs in %s: wait for it to end, or give this one its own --workdir "
              "(two demos run side by side, each with its own control plane and node)" % (holder, workdir),
              file=sys.stderr)
        return None
    lock.truncate(0)
    lock.write(str(os.getpid()))
    lock.flush()
    return lock


def main(argv=None):
    args = parse_args(argv)
    args.workdir = os.path.abspath(args.workdir)
    os.makedirs(args.workdir, exist_ok=True)
    lock = hold_workdir(args.workdir)
    if lock is None:
        return 1
    started = time.monotonic()
    args.prometheus_build = BackgroundBuild("prometheus")
    if not args.prometheus_build.cached:
        print("== building Prometheus (testenv/cluster/build.py) in the background at nice 19 while the demo runs; "
              "it scrapes the fleet exporter at the end", flush=True)
    seed = os.path.join(args.workdir, "seed")
    shutil.rmtree(seed, ignore_errors=True)
    fleet.seed_fleet_dir(seed, fleet.fleet_spec(args.count, machines=args.machines))
    with open(os.path.join(seed, "crds.yaml")) as handle:
        # as on a real management cluster: the standard CAPI CRDs only; migrate_fleet.yml creates the private twins
        crds = [crd for crd in yamlio.load_all(handle) if not crd["spec"]["group"].endswith(PRIVATE_SUFFIX)]
    # every core CAPI CRD HyperShift installs: the core manager of each cluster-api (electing) starts only with them
    crds += [crd for crd in build.all_core_crds() if crd["metadata"]["name"] not in {c["metadata"]["name"] for c in crds}]
    state_dir = os.path.join(args.workdir, "cluster")
    shutil.rmtree(state_dir, ignore_errors=True)
    print("== starting the control plane: the real etcd, kube-apiserver, kube-controller-manager, kube-scheduler "
          "(testenv/cluster builds them from upstream on first use: about 6 min on 2 cores) and a real node: kubelet "
          "v1.34.4 with containerd, runc and kube-proxy (testenv/cluster/node.py), the images side-loaded",
          flush=True)
    begun = time.monotonic()
    server = start_cluster(state_dir, crds=crds, pods="node", node_images=capi.node_images(
        fleet.seed_objects(seed), managers=("cluster-api",)))
    print("== control plane: kube-apiserver %s at %s, ready in %.1f s (logs in %s)"
          % (server.request("GET", "/version").json()["gitVersion"], server.url, time.monotonic() - begun,
             os.path.relpath(state_dir, REPO_ROOT)), flush=True)
    try:
        code = demo(args, server, seed)
    finally:
        stopped = server.stop()
        print("== control plane stopped (exit %s); demo wall time %.0f s" % (stopped, time.monotonic() - started))
        if args.prometheus_build.thread.is_alive():
            print("== waiting for the Prometheus build to end (into the cache, for the next demo)", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
