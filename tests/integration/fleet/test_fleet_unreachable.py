"""A management cluster whose kube-apiserver stops in the middle of a fleet run (issue 36, "Must show").

Two real control planes, mc-1 and mc-2, each with the same two HostedClusters (hc-01, hc-02: the report must tell
them apart by management cluster). migrate_fleet.yml runs over both at the default serial 1 (mc-1's clusters first).
A finalizer the test put on the cluster-api Pod of mc-1/hc-01 holds that Pod in Terminating, so the migration waits in
its window (HostedCluster in-progress, CAPI Deployments at 0) - as behind a Pod slow to go; there the test stops mc-1's
kube-apiserver process (etcd and the other components keep running). Then:
- the run goes on: mc-2's HostedClusters are migrated; the run exits non-zero;
- the report lists all four selected HostedClusters; mc-1's two (the one in flight and the one it never reached) are
  `unknown`, each with the error (the API server refused the connection) and the command that resumes; the one in
  flight also with its phases and how far it got (failed in scale_down, rollback failed, Deployments maybe at 0); the
  summary's counts add up to the selection; report.md names each cluster with its management cluster;
- kube-apiserver is started again on the same port and etcd data: mc-1/hc-01 is still locked by the run, hc-02 is
  untouched; the test's hold on the Pod is lifted;
- the resume command the report printed (same run id) converges: all four `migrated`, every CAPI object of every HCP
  namespace there as its private twin with the same content, counts per kind as before. The standard sources the
  finish deleted (Orphan propagation) may stay a while on their way out - kube-controller-manager's garbage collector
  is behind after the restart (seen: up to about a minute) - and must be gone within LEAVING_TIMEOUT.
Measured on 2 cores with three HostedClusters per management cluster: about 3.5 to 4 minutes (two control planes
up 25 s, the run 80 s, the resume 70 s, the leftovers 0 to 55 s); two each save about a minute; timings.txt in the test's directory.
"""
import json
import os
import re
import shlex
import socket
import subprocess
import time
from collections import Counter

import pytest
import yaml

from ansible_collections.hypershift.private_capi.plugins.module_utils.fleet.report import resume_command
from testenv.client import wait_for
from testenv.cluster.testing import pod_is_ready
from testenv.hcp import fleet
from tests.integration.fleet.support import (
    bed_webhook_vars, hcp_ns, hostedcluster, hostedcluster_states, kill_playbook, list_items, migrated_content_problems, private_keys,
    read_report, run_playbook, snapshot, standard_keys, start_fleet, start_playbook)

pytestmark = pytest.mark.slow

NAMES = ("hc-01", "hc-02")
STOPPED, HEALTHY = "mc-1", "mc-2"
IN_FLIGHT = "hc-01"
RUN_ID = "unreachable-mc-1"
HOLD = "test.hypershift.openshift.io/hold"  # a Pod finalizer of the test's: the Pod stays Terminating until lifted
HOLDER = "hypershift.openshift.io/capi-migration-lease-holder"
RUN_TIMEOUT = 600
LEAVING_TIMEOUT = 300
HC_API = "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters"


def write_inventory(path, servers):
    """The static inventory of the management clusters (servers: {name: RealServer}), each with its own /convert."""
    hosts = {name: dict(bed_webhook_vars(server), private_capi_kubeconfig=server.kubeconfig)
             for name, server in servers.items()}
    with open(path, "w") as handle:
        # the strategy on every host (group all): the HostedClusters the fleet role adds as hosts run it
        yaml.safe_dump({"all": {"vars": {"private_capi_migrate_strategy": "scale_down"},
                                "children": {"management_clusters": {"hosts": hosts}}}}, handle)
    return path


def capi_pod(server, name):
    """The Pod of the cluster-api Deployment in the HCP namespace of HostedCluster clusters/<name>."""
    pods = [pod for pod in list_items(server, "/api/v1/namespaces/%s/pods" % hcp_ns(name))
            if any(ref["kind"] == "ReplicaSet" and ref["name"].rsplit("-", 1)[0] == "cluster-api"
                   for ref in pod["metadata"].get("ownerReferences") or ())]
    assert len(pods) == 1, [pod["metadata"]["name"] for pod in pods]
    return pods[0]


def set_finalizers(server, name, pod, finalizers):
    response = server.request("PATCH", "/api/v1/namespaces/%s/pods/%s" % (hcp_ns(name), pod),
                              body={"metadata": {"finalizers": finalizers}}, content_type="application/merge-patch+json")
    assert response.status == 200, response


def scaled_to_zero(server):
    """Whether every Deployment of IN_FLIGHT's HCP namespace is scaled to 0 (the window's scale-down patches are sent
    one after the other: the held Pod may be Terminating before the last of them went out)."""
    deployments = list_items(server, "/apis/apps/v1/namespaces/%s/deployments" % hcp_ns(IN_FLIGHT))
    return bool(deployments) and all(d["spec"]["replicas"] == 0 for d in deployments)


def wait_until_held_in_the_window(server, process, output_path, pod):
    """Until the migration of STOPPED/IN_FLIGHT has locked it and scaled its CAPI Deployments to 0 (the held Pod is
    Terminating): the migration then waits for that Pod to go."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while True:
        assert process.poll() is None, "the run ended (%s) before %s/%s was held in its window:\n%s" % (
            process.returncode, STOPPED, IN_FLIGHT, open(output_path).read()[-4000:])
        assert time.monotonic() < deadline, "%s/%s not held in its window within %ss:\n%s" % (
            STOPPED, IN_FLIGHT, RUN_TIMEOUT, open(output_path).read()[-4000:])
        response = server.request("GET", "/api/v1/namespaces/%s/pods/%s" % (hcp_ns(IN_FLIGHT), pod))
        if response.status == 200 and response.json()["metadata"].get("deletionTimestamp") \
                and hostedcluster_states(server)[IN_FLIGHT] == "in-progress" and scaled_to_zero(server):
            return
        time.sleep(0.1)


def _text(output):
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def deployment_states(server):
    """The in-flight HCP namespace's Deployments: replicas wanted, and the status the deployment controller wrote."""
    return json.dumps({d["metadata"]["name"]: [d["spec"].get("replicas"), d["metadata"].get("generation"), d.get("status")]
                       for d in list_items(server, "/apis/apps/v1/namespaces/%s/deployments" % hcp_ns(IN_FLIGHT))})


def pod_states(server):
    """The in-flight HCP namespace's Pods: node, phase, deletion, Ready."""
    return json.dumps({p["metadata"]["name"]: [p["spec"].get("nodeName"), (p.get("status") or {}).get("phase"),
                                               p["metadata"].get("deletionTimestamp"), p["metadata"].get("finalizers"),
                                               pod_is_ready(p)]
                       for p in list_items(server, "/api/v1/namespaces/%s/pods" % hcp_ns(IN_FLIGHT))})


def refuses(server):
    """Whether the server's port refuses a TCP connection (nothing listens there)."""
    try:
        socket.create_connection((server.host, server.port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def wait_until_no_standard_objects(servers, crds, timeout=LEAVING_TIMEOUT):
    """Whether, within timeout, no standard CAPI object is left in any HCP namespace (the garbage collector has
    processed the orphan finalizers of the sources the finish deleted)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(standard_keys(snapshot(servers[mc], crds[mc], hcp_ns(name))) for mc in servers for name in NAMES):
            return True
        time.sleep(2)
    return False


def kind_counts(keys):
    return Counter(key.split("/")[1] for key in keys)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("unreachable")
    timings = {}
    started = time.monotonic()
    servers, crds = {}, {}
    try:
        for mc in (STOPPED, HEALTHY):
            servers[mc], crds[mc] = start_fleet(tmp_path / mc, fleet.fleet_spec(len(NAMES), machines=1),
                                                pods="kwok-only", private_crds=False)
        timings["control planes and fleets up"] = time.monotonic() - started
        stopped, healthy = servers[STOPPED], servers[HEALTHY]
        before = {(mc, name): snapshot(servers[mc], crds[mc], hcp_ns(name)) for mc in servers for name in NAMES}
        inventory = write_inventory(str(tmp_path / "inventory.yml"), servers)
        root = str(tmp_path / "reports")
        common = {"private_capi_fleet_report_root": root}
        held = capi_pod(stopped, IN_FLIGHT)["metadata"]["name"]
        set_finalizers(stopped, IN_FLIGHT, held, [HOLD])

        output = str(tmp_path / "run.log")
        mark = time.monotonic()
        process = start_playbook("migrate_fleet.yml", inventory, output, dict(common, private_capi_fleet_run_id=RUN_ID))
        try:
            wait_until_held_in_the_window(stopped, process, output, held)
            held_at = {"states": hostedcluster_states(stopped),
                       "replicas": {d["metadata"]["name"]: d["spec"]["replicas"] for d in list_items(
                           stopped, "/apis/apps/v1/namespaces/%s/deployments" % hcp_ns(IN_FLIGHT))}}
            stopped.stop_apiserver()
            refused = refuses(stopped)
            timings["run to the stop"] = time.monotonic() - mark
            code = process.wait(RUN_TIMEOUT)
        finally:
            if process.poll() is None:
                kill_playbook(process)
        timings["run"] = time.monotonic() - mark
        with open(output) as handle:
            run_output = handle.read()
        report = read_report(root)
        with open(os.path.join(root, RUN_ID, "report.md")) as handle:
            markdown = handle.read()
        healthy_states = hostedcluster_states(healthy)

        mark = time.monotonic()
        stopped.start_apiserver()
        # ready, and its watch caches filled (until then a LIST answers 429, which clients retry)
        wait_for(lambda: stopped.request("GET", HC_API).status == 200, "the HostedCluster list after the restart")
        timings["kube-apiserver restart"] = time.monotonic() - mark
        after_restart = {"states": hostedcluster_states(stopped),
                         "holder": hostedcluster(stopped, IN_FLIGHT)["metadata"]["annotations"].get(HOLDER),
                         "untouched": {name: snapshot(stopped, crds[STOPPED], hcp_ns(name)) == before[(STOPPED, name)]
                                       for name in NAMES if name != IN_FLIGHT}}
        set_finalizers(stopped, IN_FLIGHT, held, None)  # the test's hold lifted: the Pod goes

        # the resume command as the report printed it, with this test's inventory and report root
        printed = re.search(r"resume with (ansible-playbook \S+ -e \S+)", {
            c["name"]: c for c in report["clusters"] if c["management_cluster"] == STOPPED}[IN_FLIGHT]["reason"])
        assert printed, report["clusters"]
        words = shlex.split(printed.group(1))
        assert words[:2] == ["ansible-playbook", "playbooks/migrate_fleet.yml"] and words[2] == "-e", words
        printed_vars = dict(word.split("=", 1) for word in words[3::2])
        mark = time.monotonic()
        try:
            resumed = run_playbook("migrate_fleet.yml", inventory, dict(common, **printed_vars), timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired as expired:  # seen once (make test of ca0974b, 2026-12-03): say what it waited for
            raise AssertionError("the resume did not end within %d s. %s's Deployments: %s\nPods: %s\nIts output's end:\n%s" % (
                RUN_TIMEOUT, hcp_ns(IN_FLIGHT), deployment_states(stopped), pod_states(stopped),
                _text(expired.stdout)[-4000:])) from expired
        timings["resume"] = time.monotonic() - mark
        after = {(mc, name): snapshot(servers[mc], crds[mc], hcp_ns(name)) for mc in servers for name in NAMES}
        mark = time.monotonic()
        gone = wait_until_no_standard_objects(servers, crds)
        timings["standard objects gone after the resume"] = time.monotonic() - mark if gone else None
        yield {"servers": servers, "before": before, "after": after, "held_at": held_at, "refused": refused,
               "code": code, "output": run_output, "report": report, "markdown": markdown,
               "healthy_states": healthy_states, "after_restart": after_restart, "printed": printed.group(1),
               "printed_vars": printed_vars, "resumed": resumed, "resumed_report": read_report(root),
               "timings": timings}
    finally:
        codes = {mc: server.stop() for mc, server in servers.items()}
        with open(str(tmp_path / "timings.txt"), "w") as handle:
            handle.write("".join("%s: %s\n" % (what, "not within the timeout" if seconds is None else "%.1f s" % seconds)
                                 for what, seconds in timings.items()))
    assert codes == {STOPPED: 0, HEALTHY: 0}, codes


def rows(report, mc):
    return {c["name"]: c for c in report["clusters"] if c["management_cluster"] == mc}


def test_the_stop_came_mid_run_in_the_window_of_the_first_cluster(run):
    held = run["held_at"]
    assert held["states"] == {name: "in-progress" if name == IN_FLIGHT else "legacy" for name in NAMES}, held
    assert held["replicas"] and set(held["replicas"].values()) == {0}, held
    assert run["refused"], "kube-apiserver's port still accepted a connection after its stop"


def test_the_other_management_cluster_finishes(run):
    assert run["code"] != 0, run["output"][-4000:]
    assert run["healthy_states"] == {name: "migrated" for name in NAMES}, run["output"][-4000:]
    assert {name: c["status"] for name, c in rows(run["report"], HEALTHY).items()} == {n: "migrated" for n in NAMES}
    for name in NAMES:
        assert re.search(r"^%s/clusters/%s\s*:.*\bfailed=0\b" % (HEALTHY, name), run["output"], re.MULTILINE), \
            run["output"][-3000:]


def test_the_report_lists_the_stopped_clusters_unknown_with_the_error_and_the_resume_command(run):
    report, url = run["report"], run["servers"][STOPPED].url
    keys = sorted((c["management_cluster"], c["namespace"], c["name"]) for c in report["clusters"])
    assert keys == sorted((mc, "clusters", name) for mc in (STOPPED, HEALTHY) for name in NAMES), keys
    total = 2 * len(NAMES)
    assert report["clusters_total"] == total and sum(report["totals"].values()) == total
    assert report["totals"] == {"migrated": len(NAMES), "unknown": len(NAMES)}, report["totals"]
    command = resume_command(RUN_ID)
    for name, row in rows(report, STOPPED).items():
        assert (row["status"], row["state_before"], row["state_after"]) == ("unknown", "legacy", "unknown"), row
        assert "the API server %s refused the connection" % url in row["reason"], row["reason"]
        assert row["reason"].rstrip().endswith("resume with %s (the same run id takes its own lock back)" % command), \
            row["reason"]
        assert report["unfinished"]["%s/clusters/%s" % (STOPPED, name)].startswith("unknown: "), report["unfinished"]
    # the one in flight says how far it got: stopped in its window, the rollback failed too, controllers maybe at 0
    in_flight = rows(report, STOPPED)[IN_FLIGHT]
    assert re.match(r"its migration failed and so did the rollback: scale_down: .*refused the connection.*"
                    r"ROLLBACK FAILED at .*; its CAPI Deployments were scaled to 0 at \S+ and may still be .*; "
                    r"then task 'Read the state after", in_flight["reason"]), in_flight["reason"]
    names = [phase["name"] for phase in in_flight["phases"]]
    assert "scale_down" in names and "copy" not in names, in_flight["phases"]
    assert in_flight["seconds"] > 0
    for name in NAMES[1:]:  # never reached: the first read failed
        row = rows(report, STOPPED)[name]
        assert row["reason"].startswith("task 'Step 1 - read the state") and row["phases"] == [], row
    assert run["printed"] == command
    assert run["printed_vars"] == {"private_capi_fleet_run_id": RUN_ID}
    # the summary, the Markdown and the run's end say the same
    assert "Fleet migration %s: 4 HostedClusters - migrated 2, unknown 2" % RUN_ID in run["output"], run["output"][-4000:]
    assert "- HostedClusters: 4 (migrated 2, unknown 2)" in run["markdown"]
    section = run["markdown"].split("## HostedClusters in an unknown state", 1)[1].split("\n## ", 1)[0]
    for name in NAMES:
        assert re.search(r"^- `%s/clusters/%s`: .*refused the connection.*%s" % (STOPPED, name, re.escape(command)),
                         section, re.MULTILINE), section
        assert re.search(r"^fatal: \[%s/clusters/%s\]: FAILED!.*unknown: " % (STOPPED, name), run["output"],
                         re.MULTILINE), run["output"][-4000:]
    assert "`%s/clusters/" % HEALTHY not in section, section


def test_after_the_restart_the_in_flight_cluster_is_still_locked_and_the_others_untouched(run):
    after = run["after_restart"]
    assert after["states"] == {name: "in-progress" if name == IN_FLIGHT else "legacy" for name in NAMES}, after
    assert after["holder"] == RUN_ID
    assert after["untouched"] == {name: True for name in NAMES if name != IN_FLIGHT}


def test_the_printed_resume_command_converges_and_nothing_is_lost(run):
    resumed = run["resumed"]
    assert resumed.returncode == 0, (resumed.stdout + resumed.stderr)[-4000:]
    for mc, server in run["servers"].items():
        assert hostedcluster_states(server) == {name: "migrated" for name in NAMES}, mc
    report = run["resumed_report"]
    assert report["run_id"] == RUN_ID and report["totals"] == {"migrated": 2 * len(NAMES)}, report["totals"]
    assert rows(report, STOPPED)[IN_FLIGHT]["resumed"], rows(report, STOPPED)[IN_FLIGHT]
    for (mc, name), before in run["before"].items():
        after = run["after"][(mc, name)]
        # a source the finish deleted may still be on its way out (Orphan propagation: the garbage collector's
        # finalizer), never anything else
        leaving = {key: tuple(after[key]["metadata"].get("finalizers") or ()) for key in standard_keys(after)
                   if after[key]["metadata"].get("deletionTimestamp")}
        assert set(leaving.values()) <= {("orphan",)} and set(leaving) == set(standard_keys(after)), (mc, name, leaving)
        problems = [line for line in migrated_content_problems(before, after)
                    if line[len("standard object left: "):] not in leaving]
        assert problems == [], "%s/%s:\n%s" % (mc, name, "\n".join(problems))
        assert kind_counts(private_keys(after)) == kind_counts(standard_keys(before)), (mc, name)
        hc = hostedcluster(run["servers"][mc], name)
        assert HOLDER not in hc["metadata"]["annotations"] and "pausedUntil" not in hc["spec"], (mc, name)
        deployment = run["servers"][mc].request(
            "GET", "/apis/apps/v1/namespaces/%s/deployments/cluster-api" % hcp_ns(name)).json()
        assert deployment["spec"]["replicas"] == 1 and deployment["status"].get("availableReplicas") == 1, (mc, name)
    # and they do go: the garbage collector, behind for a while after the restart, catches up
    assert run["timings"]["standard objects gone after the resume"] is not None, \
        "standard CAPI objects still there %ss after the resume" % LEAVING_TIMEOUT
