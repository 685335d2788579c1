"""The fleet job under failure on the local control plane: at the default serial 1 a failed HostedCluster (its private
Machines refused by a ValidatingAdmissionPolicy) does not end the fleet - every other selected cluster is migrated and
the report lists them all; a failure budget of 0 % stops the run after the failed cluster, and the report lists the
rest as not attempted, with why and the command that resumes; every host not migrated fails at the end."""
import json
import os
import re

import pytest

from testenv.cluster.admission import refuse
from testenv.hcp import build, fleet
from tests.integration.fleet.support import (
    bed_webhook_vars, hostedcluster_states, run_playbook, snapshot, start_fleet, write_inventory)

pytestmark = pytest.mark.slow

NAMES = ["hc-%02d" % index for index in range(1, 7)]
FAULTY = ("hc-02", "hc-05")
REFUSAL = "refused by the test's ValidatingAdmissionPolicy"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("fleet-budget")
    server, crds = start_fleet(tmp_path, fleet.fleet_spec(len(NAMES), machines=1), pods="kwok-only")
    with server.api_client() as api:  # the real admission chain refuses the faulty clusters' private Machines
        for name in FAULTY:
            refuse(api, "refuse-" + name, group="cluster.hypershift.openshift.io", resource="machines",
                   namespace="clusters-" + name, message=REFUSAL, probe=build.private_machine_probe("clusters-" + name))
    before = {name: snapshot(server, crds, "clusters-" + name) for name in NAMES}
    yield {"server": server, "crds": crds, "before": before, "inventory": write_inventory(tmp_path, server.kubeconfig),
           "root": str(tmp_path / "reports")}
    assert server.stop() == 0


def migrate(world, names, run_id, **extra):
    return run_playbook("migrate_fleet.yml", world["inventory"], dict(
        bed_webhook_vars(world["server"]), private_capi_fleet_names=names, private_capi_fleet_run_id=run_id,
        private_capi_fleet_report_root=world["root"], **extra), timeout=1200)


def report_of(world, run_id):
    with open(os.path.join(world["root"], run_id, "report.json")) as handle:
        return json.load(handle)


def recap(result, name):
    match = re.search(r"^mc-1/clusters/%s\s*:\s*(.*)$" % re.escape(name), result.stdout, re.MULTILINE)
    assert match, "no PLAY RECAP line for %s:\n%s" % (name, result.stdout[-3000:])
    return dict((key, int(value)) for key, value in re.findall(r"(\w+)=(\d+)", match.group(1)))


def test_at_serial_1_a_failed_cluster_does_not_end_the_fleet_and_the_report_lists_every_cluster(world):
    server = world["server"]
    result = migrate(world, NAMES[:3], "budget-serial-1")
    output = result.stdout + result.stderr
    assert result.returncode == 2, output[-4000:]
    states = hostedcluster_states(server)
    assert [states[name] for name in NAMES[:3]] == ["migrated", "failed", "migrated"], output[-4000:]
    # rolled back: the failed cluster's namespace exactly as before
    assert snapshot(server, world["crds"], "clusters-hc-02") == world["before"]["hc-02"]
    report = report_of(world, "budget-serial-1")
    assert report["clusters_total"] == 3 and report["totals"] == {"migrated": 2, "failed": 1}, report["totals"]
    assert [(c["name"], c["status"]) for c in report["clusters"]] == [
        ("hc-01", "migrated"), ("hc-02", "failed"), ("hc-03", "migrated")]
    # the failed host fails at the end, with its reason; the others do not
    assert recap(result, "hc-02")["failed"] == 1 and recap(result, "hc-03")["failed"] == 0, result.stdout[-3000:]
    assert re.search(r"fatal: \[mc-1/clusters/hc-02\]: FAILED!.*failed: .*%s" % REFUSAL, output), output[-4000:]
    assert "Fleet migration budget-serial-1: 3 HostedClusters - migrated 2, failed 1" in output


def test_a_budget_that_stops_the_run_reports_the_rest_not_attempted_with_the_command_that_resumes(world):
    server = world["server"]
    result = migrate(world, NAMES[3:], "budget-zero", private_capi_fleet_max_fail_percentage=0)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output[-4000:]
    states = hostedcluster_states(server)
    assert [states[name] for name in NAMES[3:]] == ["migrated", "failed", "legacy"], output[-4000:]
    assert snapshot(server, world["crds"], "clusters-hc-06") == world["before"]["hc-06"]
    report = report_of(world, "budget-zero")
    assert report["totals"] == {"migrated": 1, "failed": 1, "not attempted": 1}, report["totals"]
    assert sum(report["totals"].values()) == report["clusters_total"] == 3
    rest = {c["name"]: c for c in report["clusters"]}["hc-06"]
    assert rest["reason"].startswith("the failure budget stopped the run: 1 of the 1 HostedClusters of the last batch "
                                     "failed (mc-1/clusters/hc-05), more than private_capi_fleet_max_fail_percentage=0%")
    assert rest["reason"].endswith("resume with ansible-playbook playbooks/migrate_fleet.yml "
                                   "-e private_capi_fleet_run_id=budget-zero"), rest["reason"]
    with open(os.path.join(world["root"], "budget-zero", "selection.json")) as handle:
        assert [row["name"] for row in json.load(handle)] == NAMES[3:]
    with open(os.path.join(world["root"], "budget-zero", "report.md")) as handle:
        markdown = handle.read()
    assert "## HostedClusters not attempted" in markdown and "- `clusters/hc-06`: the failure budget" in markdown
    assert "3 HostedClusters - migrated 1, failed 1, not attempted 1" in output
    assert recap(result, "hc-06")["failed"] == 1
    assert re.search(r"fatal: \[mc-1/clusters/hc-06\]: FAILED!.*not attempted: the failure budget", output)
    # the resume with the same run id and budget migrates the cluster not attempted (the failed one waits for a retry)
    resumed = migrate(world, NAMES[3:], "budget-zero", private_capi_fleet_max_fail_percentage=0)
    assert hostedcluster_states(server)["hc-06"] == "migrated", (resumed.stdout + resumed.stderr)[-4000:]
    assert {c["name"]: c["status"] for c in report_of(world, "budget-zero")["clusters"]}["hc-06"] == "migrated"
