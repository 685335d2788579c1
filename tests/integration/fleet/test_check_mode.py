"""`--check` on a fleet writes nothing and prints the plan (issue 7, "Must show").

The proof that nothing was written is the server's own: its global resourceVersion (bumped by every stored write,
Events included) is the same after the run, and no mutating request reached it; the HCP namespaces, HostedClusters
and Deployments read back exactly as before. On the controller it writes no report unless
private_capi_fleet_report_in_check_mode asks for one (then marked as a dry run), and prints the summary either way.
"""
import os
import re

import pytest

from testenv.faults import is_write
from testenv.hcp import fleet
from tests.integration.fleet.support import bed_webhook_vars, differences, read_report, run_playbook, snapshot, start_fleet, write_inventory

NAMES = ("hc-01", "hc-02", "hc-03")


def _cluster_view(server, crds):
    hostedclusters = server.request("GET", "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters")
    view = {"hostedclusters": [(hc["metadata"], hc["spec"]) for hc in hostedclusters.json()["items"]],
            "crds": sorted(crd["metadata"]["name"] for crd in server.request(
                "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions").json()["items"])}
    for name in NAMES:
        namespace = "clusters-" + name
        view[namespace] = snapshot(server, crds, namespace)
        deployments = server.request("GET", "/apis/apps/v1/namespaces/%s/deployments" % namespace).json()["items"]
        view[namespace + "/deployments"] = [(d["metadata"], d["spec"]) for d in deployments]
    return view


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("check-mode")
    server, crds = start_fleet(tmp_path, fleet.fleet_spec(len(NAMES), machines=1), pods="kwok-only", private_crds=False)
    before = _cluster_view(server, crds)
    inventory = write_inventory(tmp_path, server.kubeconfig, host_vars=bed_webhook_vars(server))
    root = os.path.join(str(tmp_path), "reports")
    server.reset_requests()
    extra_vars = {"private_capi_fleet_serial": len(NAMES), "private_capi_fleet_report_root": root,
                  "private_capi_fleet_report_in_check_mode": True}
    result = run_playbook("migrate_fleet.yml", inventory, extra_vars, check=True)
    # the default: no report, no record directory, the summary all the same
    quiet_root = os.path.join(str(tmp_path), "reports-default")
    quiet = run_playbook("migrate_fleet.yml", inventory, dict(extra_vars, private_capi_fleet_report_root=quiet_root,
                                                              private_capi_fleet_report_in_check_mode=False), check=True)
    yield {"server": server, "result": result, "counts": server.request_counts(), "root": root,
           "quiet": quiet, "quiet_root": quiet_root, "before": before,
           "after": _cluster_view(server, crds)}
    assert server.stop() == 0


def test_check_mode_succeeds(dry_run):
    for result in (dry_run["result"], dry_run["quiet"]):
        assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]


def test_check_mode_writes_nothing(dry_run):
    # kube-apiserver's audit log records each write's dryRun (the query, or a DELETE's DeleteOptions body)
    mutating = [e for e in dry_run["counts"]["entries"] if is_write(e)]
    assert mutating, "check mode sends its writes as server-side dry runs"
    stored = [e for e in mutating if not e["dry_run"]]
    assert not stored, "writes stored during --check: %s" % stored
    assert all(200 <= e["code"] < 300 for e in mutating), [e for e in mutating if not 200 <= e["code"] < 300]
    # the pre-flight's access reviews run in check mode too: answered, never stored
    reviews = {e["resource"] for e in dry_run["counts"]["entries"] if e["verb"] == "create" and not is_write(e)}
    assert reviews == {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}, reviews
    changed = differences(dry_run["before"], dry_run["after"])
    assert not changed, "\n".join(changed)


def test_check_mode_prints_the_plan_for_every_cluster(dry_run):
    output = dry_run["result"].stdout
    assert "DRY RUN (check mode): nothing is changed" in output
    assert re.search(r"%d of %d HostedClusters selected" % (len(NAMES), len(NAMES)), output)
    for name in NAMES:
        assert re.search(r"mc-1/clusters/%s \[\w+\] legacy -> migrated: lock, pause, scale 0, crds, copy, proxy, resume, "
                         r"health, delete sources" % name, output), output[-3000:]
    report = read_report(dry_run["root"])
    assert report["check_mode"] is True
    records = {c["name"]: c for c in report["clusters"]}
    for name in NAMES:
        # per cluster what the copy would do (7 CAPI objects: their creates and status writes), state unchanged
        record = records[name]
        assert (record["status"], record["state_after"], record["objects_total"]) == ("planned", "legacy", 7), record
        assert record["plan"] >= 7, record


def test_check_mode_writes_no_report_unless_asked_and_prints_the_summary_all_the_same(dry_run):
    output = dry_run["quiet"].stdout
    assert not os.path.exists(dry_run["quiet_root"]), os.listdir(dry_run["quiet_root"])
    assert "no report written (check mode; -e private_capi_fleet_report_in_check_mode=true writes one)" in output
    # the summary of the records kept in memory: the same lines as the report's, without its path
    assert re.search(r"Fleet migration fleet-\S+ \(DRY RUN\): %d HostedClusters - planned %d" % (len(NAMES), len(NAMES)),
                     output), output[-3000:]
    for name in NAMES:
        assert re.search(r"planned +mc-1/clusters/%s +legacy +-> legacy " % name, output), output[-3000:]
    assert "(.json, .md)" not in output
