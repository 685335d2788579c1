"""The fleet's alerts and scrape (plugins/module_utils/monitoring.py): the shipped files are what it renders, every
alert has its runbook section in the operator guide, every series the exporter serves and every alert is documented,
and the expressions name only series the exporter serves (or kube-state-metrics'). promtool checks them for real:
tests/integration/monitoring."""
import os
import re
import subprocess
import sys

import pytest

from capi_proxy import exporter
from capi_proxy.metrics import ProxyMetrics
from ansible_collections.hypershift.private_capi.plugins.module_utils import monitoring
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import sidecar
from testenv import REPO_ROOT

GUIDE = os.path.join(REPO_ROOT, "docs", "operator-guide.md")
KUBE_STATE_METRICS = {"kube_deployment_status_replicas_available", "kube_deployment_spec_replicas",
                      "kube_pod_container_status_ready"}


def _guide():
    with open(GUIDE, encoding="utf-8") as handle:
        return handle.read()


def test_the_shipped_files_are_what_the_source_renders():
    result = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "hack", "render_monitoring.py"), "--check"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_its_runbook_section_and_url():
    guide = _guide()
    rules = monitoring.alerting_rules()
    assert tuple(rule["alert"] for rule in rules) == monitoring.ALERTS
    for rule in rules:
        assert "\n#### %s\n" % rule["alert"] in guide, rule["alert"]
        assert rule["annotations"]["runbook_url"].endswith("operator-guide.md#" + rule["alert"].lower())
        assert rule["labels"]["severity"] in ("warning", "critical")


def _exported_names():
    cache = exporter.FleetCache()
    cache.replace([], now=1.0)
    names = set()
    for family in exporter.families(cache.snapshot(), True, 1.0):
        names.add(family.name)
    return names


def test_every_series_and_label_is_documented():
    guide = _guide()
    for name in _exported_names():
        assert "`%s`" % name in guide or "`%s` (histogram" % name in guide, name
    for label in ("namespace", "hostedcluster_namespace", "name", "state", "failure_reason", "holder", "direction",
                  "outcome", "reason"):
        assert "`%s`" % label in guide, label


def test_the_expressions_name_only_series_that_exist():
    exported = _exported_names()
    for rule in monitoring.alerting_rules():
        for name in re.findall(r"\b(hypershift_private_capi_\w+|kube_\w+)", rule["expr"]):
            assert name in exported or name in KUBE_STATE_METRICS, (rule["alert"], name)


def test_the_latency_alert_reads_the_histogram_the_proxy_serves_with_a_bucket_at_its_threshold():
    metrics = ProxyMetrics()
    metrics.request_seconds.observe(0.2, "get")
    served = metrics.registry.render()
    rule = [rule for rule in monitoring.alerting_rules() if rule["alert"] == "HyperShiftAPIProxyHighLatency"][0]
    assert re.findall(r"\b(hypershift_api_proxy_\w+)", rule["expr"]) == [monitoring.PROXY_REQUEST_SECONDS + "_bucket"]
    assert '%s_bucket{le="0.1",verb="get"} 0.0' % monitoring.PROXY_REQUEST_SECONDS in served
    assert '%s_bucket{le="0.5",verb="get"} 1.0' % monitoring.PROXY_REQUEST_SECONDS in served
    assert rule["expr"].endswith("> 0.1") and rule["for"] == "10m"


def test_the_sidecar_container_is_the_one_the_collection_deploys():
    assert monitoring.SIDECAR_CONTAINER == sidecar.CONTAINER_NAME
    assert monitoring.SIDECAR_METRICS_PORT == sidecar.METRICS_PORT_NAME


def test_every_hostedcluster_series_carries_its_namespace_twice_and_the_alerts_read_the_label_uwm_keeps():
    cache = exporter.FleetCache()
    cache.replace([{"metadata": {"namespace": "clusters", "name": "hc-1", "annotations": {}}}], now=1.0)
    per_cluster = [sample for family in exporter.families(cache.snapshot(), True, 1.0) for sample in family.samples
                   if "name" in sample.labels]
    assert per_cluster and all(sample.labels["namespace"] == sample.labels[monitoring.HC_NAMESPACE] == "clusters"
                               for sample in per_cluster)
    assert exporter.NAMESPACE_LABELS == ("namespace", monitoring.HC_NAMESPACE)
    for rule in monitoring.alerting_rules():
        if "hypershift_private_capi_" in rule["expr"] and "name" in rule["expr"]:
            # user-workload monitoring overwrites `namespace` with the exporter's: no HostedCluster alert groups by it
            assert "(namespace, name" not in rule["expr"] and "$labels.namespace }}/{{ $labels.name" not in str(
                rule["annotations"]), rule["alert"]


def test_the_settings_name_the_shim_and_the_exporter():
    rule = monitoring.prometheus_rule({"namespace": "ops", "shim_name": "shim-x"})
    assert rule["metadata"]["namespace"] == "ops"
    shim_alert = [each for each in rule["spec"]["groups"][0]["rules"]
                  if each["alert"] == "HyperShiftPrivateCAPIConversionShimNotReady"][0]
    assert 'namespace="ops", deployment="shim-x"' in shim_alert["expr"]
    assert monitoring.rule_file()["groups"][0]["name"] == "hypershift-private-capi.rules"


def _leaderless(settings=None):
    rules = monitoring.alerting_rules(settings)
    return [rule for rule in rules if rule["alert"] == "HyperShiftPrivateCAPILeaderless"][0]


def test_the_leaderless_alert_reads_each_hostedclusters_figure_against_the_default_threshold():
    rule = _leaderless()
    assert monitoring.DEFAULTS["leaderless_alert_seconds"] == 90
    assert rule["expr"] == ("max by (hostedcluster_namespace, name) (hypershift_private_capi_leaderless_seconds) > 90\n"
                            "  and on (hostedcluster_namespace, name)\n"
                            "    (time() - max by (hostedcluster_namespace, name) "
                            "(hypershift_private_capi_migration_end_timestamp_seconds)) < 86400")
    assert "for" not in rule and rule["labels"] == {"severity": "warning"}
    assert "over 90 seconds" in rule["annotations"]["summary"] and "for a day" in rule["annotations"]["description"]
    assert "{{ $value | humanizeDuration }}" in rule["annotations"]["description"]
    assert "docs/operator-guide.md" in rule["annotations"]["description"]
    assert "Lease" in rule["annotations"]["description"]


@pytest.mark.parametrize("threshold, literal", [(90, "90"), (2.5, "2.5"), (120.0, "120"), (0, "0")])
def test_the_leaderless_threshold_comes_from_the_settings(threshold, literal):
    rule = _leaderless({"leaderless_alert_seconds": threshold})
    assert rule["expr"].split("\n")[0].endswith(") > %s" % literal)
    assert "over %s seconds" % literal in rule["annotations"]["summary"]
    shipped = monitoring.prometheus_rule({"leaderless_alert_seconds": threshold})["spec"]["groups"][0]["rules"]
    assert [each for each in shipped if each["alert"] == "HyperShiftPrivateCAPILeaderless"] == [rule]


@pytest.mark.parametrize("threshold", [-1, float("nan"), float("inf"), "60", None, True])
def test_a_leaderless_threshold_that_is_no_number_of_seconds_is_refused(threshold):
    with pytest.raises(ValueError, match="leaderless_alert_seconds"):
        monitoring.alerting_rules({"leaderless_alert_seconds": threshold})
