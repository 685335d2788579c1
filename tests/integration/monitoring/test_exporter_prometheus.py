"""The fleet exporter and a real Prometheus against the real control plane: a fleet of three HostedClusters, one of
them refused (its private Machines refused by a ValidatingAdmissionPolicy, so it fails and is rolled back), the
failure budget at 0 % (the run stops after it: the third is not attempted). The exporter (the installed package's
`capi-proxy exporter`, a host process) lists and watches the HostedClusters from before the run; Prometheus (built from
v0.316.0, a host process) scrapes it every second. Afterwards, Prometheus's migrated, failed and pending totals equal
the fleet report's counts, and the duration histogram counts every finished migration. Traffic only on loopback."""
import importlib.util
import io
import json
import os

import pytest

from testenv.cluster.admission import refuse
from testenv.client import wait_for
from testenv.hcp import build, fleet
from tests.integration.fleet.support import (
    bed_webhook_vars, hostedcluster_states, run_playbook, start_fleet, write_inventory)
from testenv import REPO_ROOT
from testenv.monitoring import start_exporter, start_prometheus
from tests.integration.monitoring.support import scalar, write_rule_file

pytestmark = pytest.mark.slow

NAMES = ["hc-01", "hc-02", "hc-03"]
FAULTY = "hc-02"
REFUSAL = "refused by the monitoring test's ValidatingAdmissionPolicy"
P = "hypershift_private_capi_"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("monitoring")
    server, _crds = start_fleet(tmp_path, fleet.fleet_spec(len(NAMES), machines=1), pods="kwok-only")
    processes = []
    try:
        with server.api_client() as api:
            refuse(api, "refuse-" + FAULTY, group="cluster.hypershift.openshift.io", resource="machines",
                   namespace="clusters-" + FAULTY, message=REFUSAL,
                   probe=build.private_machine_probe("clusters-" + FAULTY))
        exporter, metrics_url = start_exporter(server.kubeconfig, tmp_path)
        processes.append(exporter)
        prometheus, prometheus_url = start_prometheus(tmp_path, metrics_url, write_rule_file(tmp_path))
        processes.append(prometheus)
        wait_for(lambda: scalar(prometheus_url, P + "exporter_synced") == 1,
                 "Prometheus to scrape the synced exporter (exporter log: %s)" % exporter.log_path, timeout=90,
                 interval=0.5)
        yield {"server": server, "inventory": write_inventory(tmp_path, server.kubeconfig),
               "root": str(tmp_path / "reports"), "prometheus": prometheus_url, "exporter": exporter}
    finally:
        for process in reversed(processes):
            process.stop()
        assert server.stop() == 0


def test_prometheus_counts_what_the_fleet_report_counts(world):
    prometheus = world["prometheus"]
    before = scalar(prometheus, P + "pending_hosted_clusters_total")
    assert before == len(NAMES), world["exporter"].output()[-3000:]
    result = run_playbook("migrate_fleet.yml", world["inventory"], dict(
        bed_webhook_vars(world["server"]), private_capi_fleet_names=NAMES, private_capi_fleet_run_id="monitoring-1",
        private_capi_fleet_report_root=world["root"], private_capi_fleet_max_fail_percentage=0), timeout=1200)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output[-4000:]
    with open(os.path.join(world["root"], "monitoring-1", "report.json")) as handle:
        report = json.load(handle)
    totals = report["totals"]
    assert totals == {"migrated": 1, "failed": 1, "not attempted": 1}, totals
    states = hostedcluster_states(world["server"])
    assert [states[name] for name in NAMES] == ["migrated", "failed", "legacy"], states

    expected = {P + "migrated_hosted_clusters_total": totals["migrated"],
                "sum(%smigration_failed_hosted_clusters_total)" % P: totals["failed"],
                P + "pending_hosted_clusters_total": totals["not attempted"],
                P + "in_progress_hosted_clusters_total": 0,
                # every finished migration, whichever way it ended
                "sum(%smigration_duration_seconds_count)" % P: totals["migrated"] + totals["failed"],
                '%smigration_duration_seconds_count{outcome="migrated"}' % P: totals["migrated"],
                "count(%shosted_cluster_state == 1)" % P: len(NAMES)}

    def seen():
        return {promql: scalar(prometheus, promql) for promql in expected}
    wait_for(lambda: seen() == expected, "Prometheus's totals to equal the report's: %s" % expected, timeout=60,
             interval=0.5)
    failure = scalar(prometheus, '%smigration_failure_info{hostedcluster_namespace="clusters", name="%s"}' % (P, FAULTY))
    assert failure == 1
    # the Failed alert fires for it (the rule file loaded into this Prometheus)
    wait_for(lambda: scalar(prometheus, 'ALERTS{alertname="HyperShiftPrivateCAPIMigrationFailed", '
                                        'alertstate="firing", name="%s"}' % FAULTY) == 1,
             "HyperShiftPrivateCAPIMigrationFailed to fire for %s" % FAULTY, timeout=30, interval=0.5)
    # the migrated cluster's duration is its lock-to-end time, within the run's wall time
    duration = scalar(prometheus, '%smigration_duration_seconds_sum{outcome="migrated"}' % P)
    assert 0 < duration < report["wall_seconds"] + 1, (duration, report["wall_seconds"])


def test_the_demo_prints_what_prometheus_holds(world):
    """hack/demo_monitoring.py print_scraped, on the Prometheus of the run above (the fleet demo calls it)."""
    spec = importlib.util.spec_from_file_location("demo_monitoring", os.path.join(REPO_ROOT, "hack", "demo_monitoring.py"))
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    out = io.StringIO()
    found = demo.print_scraped(world["prometheus"], out=out)
    text = out.getvalue()
    assert found["totals"]["migrated"] == 1 and found["totals"]["failed"] == 1, text
    assert "clusters/hc-01: migrated" in text and "clusters/hc-02: failed (" in text and "clusters/hc-03: legacy" in text
    assert "ALERT HyperShiftPrivateCAPIMigrationFailed hostedcluster_namespace=clusters name=hc-02" in text, text
