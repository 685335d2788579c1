# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The fleet's alerts and scrapes, as the Prometheus Operator's PrometheusRule, ServiceMonitor (the exporter) and
PodMonitor (the proxy sidecars) (pure: no API call).

The series are the fleet exporter's (`capi-proxy exporter`, capi_proxy/exporter/__init__.py): one per HostedCluster and state,
the lock holder of each in-progress HostedCluster, the failure reason of each failed one, the longest time a CAPI
manager of each migrated one had no leader. Two alerts also read kube-state-metrics (the conversion shim's Deployment,
the proxy sidecar containers). Every expression takes the `max` over the exporter's own series, so two scrapes of them
(a second exporter, a second Prometheus) never double an alert.

files/monitoring/prometheusrule.yml is `prometheus_rule()` with the conversion_shim role's defaults, written by
hack/render_monitoring.py and held equal by tests/unit/monitoring; tests/integration/monitoring checks it with promtool
(check rules, test rules with a case per alert). docs/operator-guide.md#monitoring has a runbook section per alert.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

PREFIX = "hypershift_private_capi_"
RUNBOOK_BASE = "https://github.com/openshift/hypershift/blob/main/docs/operator-guide.md"
# The sidecar's container name (plugins/module_utils/hcp/sidecar.py CONTAINER_NAME; a unit test keeps them equal,
# without this module importing the sidecar's).
SIDECAR_CONTAINER = "kube-apiserver-proxy"
# ... and the name of its metrics port (sidecar.py's container port; the same unit test), which the PodMonitor scrapes
SIDECAR_METRICS_PORT = "proxy-metrics"
# The sidecars' latency histogram (capi_proxy/metrics.py) and the enhancement's alert on it: p95 over 100 ms for 10 min
PROXY_REQUEST_SECONDS = "hypershift_api_proxy_request_duration_seconds"
STUCK_SECONDS = 3600
# The label the alerts name a HostedCluster's namespace by (the exporter's NAMESPACE_LABELS; a unit test keeps them
# equal): its series also carry `namespace`, which user-workload monitoring overwrites with the exporter's namespace.
HC_NAMESPACE = "hostedcluster_namespace"
# leaderless_alert_seconds: a CAPI manager without a live leader for longer than this in a migration is alerted on (a
# released Lease is taken at the new Pod's next retry, at most 57.2 s after the release with HyperShift's flags, plus the
# old Pod's termination; one left to expire takes 137 s and more: plugins/module_utils/hcp/leadership.py).
DEFAULTS = {"namespace": "hypershift", "shim_name": "capi-conversion-shim", "exporter_name": "capi-conversion-shim-exporter",
            "rule_name": "hypershift-private-capi", "runbook_base": RUNBOOK_BASE, "leaderless_alert_seconds": 90,
            "proxy_monitor_name": "capi-proxy-sidecars", "proxy_latency_alert_seconds": 0.1}
# HyperShiftPrivateCAPILeaderless is about a migration that ended: it fires for this long after the end, then clears
LEADERLESS_ALERT_WINDOW_SECONDS = 86400
ALERTS = ("HyperShiftPrivateCAPIMigrationFailed", "HyperShiftPrivateCAPIMigrationStuck",
          "HyperShiftPrivateCAPIRollbackFailed", "HyperShiftPrivateCAPIInvalidState",
          "HyperShiftPrivateCAPIConversionShimNotReady", "HyperShiftPrivateCAPIProxySidecarNotReady",
          "HyperShiftPrivateCAPILeaderless", "HyperShiftAPIProxyHighLatency")


def _anchor(alert):
    """The runbook section of an alert in docs/operator-guide.md (its heading is the alert's name)."""
    return alert.lower()


def _alert(alert, expr, for_, severity, summary, description, settings):
    """One alerting rule; @ns@ in its expression and texts names the HostedCluster's namespace label (HC_NAMESPACE)."""
    expr, summary, description = (text.replace("@ns@", HC_NAMESPACE) for text in (expr, summary, description))
    rule = {"alert": alert, "expr": expr}
    if for_:
        rule["for"] = for_
    rule["labels"] = {"severity": severity}
    rule["annotations"] = {"summary": summary, "description": description,
                           "runbook_url": "%s#%s" % (settings["runbook_base"], _anchor(alert))}
    return rule


def _seconds(settings, key):
    """settings[key] as a PromQL number (60, 2.5); refused unless a finite non-negative number."""
    value = settings[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
        raise ValueError("monitoring setting %s=%r: expected a finite non-negative number of seconds" % (key, value))
    return "%d" % value if float(value).is_integer() else repr(float(value))


def _leaderless_alert(settings):
    """HyperShiftPrivateCAPILeaderless: a migration that left a CAPI manager without a leader for longer than the
    threshold, for LEADERLESS_ALERT_WINDOW_SECONDS after it ended."""
    leaderless_seconds = _seconds(settings, "leaderless_alert_seconds")
    leaderless_expr = ("max by (@ns@, name) (%sleaderless_seconds) > %s\n  and on (@ns@, name)\n"
                       "    (time() - max by (@ns@, name) (%smigration_end_timestamp_seconds)) < %d"
                       % (PREFIX, leaderless_seconds, PREFIX, LEADERLESS_ALERT_WINDOW_SECONDS))
    return _alert("HyperShiftPrivateCAPILeaderless", leaderless_expr, "", "warning",
                  "A CAPI manager of HostedCluster {{ $labels.@ns@ }}/{{ $labels.name }} had no leader for over %s "
                  "seconds during its migration." % leaderless_seconds,
                  "During the last migration of HostedCluster {{ $labels.@ns@ }}/{{ $labels.name }} (pre-install "
                  "included), a CAPI manager of its HCP namespace (cluster-api, the provider, ...) had no live leader "
                  "for {{ $value | humanizeDuration }}: it reconciled nothing for that long (no Machine replaced, no "
                  "scaling). Read the leaderless figures of the run's fleet report, the leader-election Lease of that "
                  "manager in the HCP namespace (holder, renew time) and its Pods' logs; docs/operator-guide.md. It "
                  "fires for a day after that migration ended.", settings)


def _proxy_latency_alert(settings):
    """HyperShiftAPIProxyHighLatency, the enhancement's: a sidecar whose p95 answer time (its request-duration
    histogram, the API server's time included) stays over the threshold for 10 minutes."""
    threshold = _seconds(settings, "proxy_latency_alert_seconds")
    expr = ("histogram_quantile(0.95,\n  sum by (namespace, pod, le) (rate(%s_bucket[5m]))\n) > %s"
            % (PROXY_REQUEST_SECONDS, threshold))
    return _alert("HyperShiftAPIProxyHighLatency", expr, "10m", "warning",
                  "The CAPI proxy sidecar of Pod {{ $labels.namespace }}/{{ $labels.pod }} answers slowly.",
                  "The p95 answer time of the CAPI proxy sidecar of Pod {{ $labels.namespace }}/{{ $labels.pod }} "
                  "has been over %s s for 10 minutes (now {{ $value | humanizeDuration }}): the CAPI controller of "
                  "that Pod waits that long for its objects. Compare the proxy's own time "
                  "(hypershift_api_proxy_own_duration_seconds) with the API server's "
                  "(hypershift_api_proxy_upstream_duration_seconds): a slow API server, or a sidecar short of CPU "
                  "(throttled at its limit) or memory; docs/operator-guide.md." % threshold, settings)


def alerting_rules(settings=None):
    """The rules of the group hypershift-private-capi.rules (a list of Prometheus alerting rules)."""
    settings = dict(DEFAULTS, **(settings or {}))
    shim = "%s/%s" % (settings["namespace"], settings["shim_name"])
    migrated_hcp_namespaces = (
        'label_join(\n    max by (@ns@, name) (%shosted_cluster_state{state="migrated"}) == 1,\n'
        '    "namespace", "-", "@ns@", "name"\n  )' % PREFIX)
    return [
        _alert("HyperShiftPrivateCAPIMigrationFailed",
               "max by (@ns@, name, failure_reason) (%smigration_failure_info) == 1" % PREFIX, "", "warning",
               "The private CAPI migration of HostedCluster {{ $labels.@ns@ }}/{{ $labels.name }} failed.",
               "HostedCluster {{ $labels.@ns@ }}/{{ $labels.name }} is in the failed state: its migration was "
               "rolled back and the legacy operator reconciles it again. Reason: {{ $labels.failure_reason }}. "
               "Remediate, then re-run migrate_fleet.yml with -e private_capi_migrate_retry_failed=true.", settings),
        _alert("HyperShiftPrivateCAPIMigrationStuck",
               "(time() - max by (@ns@, name) (%smigration_start_timestamp_seconds))\n"
               "  * on (@ns@, name) group_left (holder, direction)\n"
               "    max by (@ns@, name, holder, direction) (%smigration_lock_info)\n"
               "  > %d" % (PREFIX, PREFIX, STUCK_SECONDS), "", "critical",
               "HostedCluster {{ $labels.@ns@ }}/{{ $labels.name }} has been in progress for over an hour.",
               "The {{ $labels.direction }} lock of HostedCluster {{ $labels.@ns@ }}/{{ $labels.name }} is held "
               "by run {{ $labels.holder }}; it started {{ $value | humanizeDuration }} ago and a migration takes minutes. "
               "If that run died, resume it: migrate_fleet.yml (or rollback.yml for a rollback) with its run id "
               "{{ $labels.holder }}.", settings),
        _alert("HyperShiftPrivateCAPIRollbackFailed",
               "max by (@ns@, name, reason) (%srollback_failed_info) == 1" % PREFIX, "", "critical",
               "A rescue or rollback of HostedCluster {{ $labels.@ns@ }}/{{ $labels.name }} failed.",
               "The last rescue or rollback of HostedCluster {{ $labels.@ns@ }}/{{ $labels.name }} failed "
               "({{ $labels.reason }}): its CAPI objects or controllers may be half way. Resume the rollback with "
               "its run id before anything else touches the cluster.", settings),
        _alert("HyperShiftPrivateCAPIInvalidState",
               "max by (@ns@, name) (%shosted_cluster_state{state=\"invalid\"}) == 1" % PREFIX, "15m", "warning",
               "The migration annotations of HostedCluster {{ $labels.@ns@ }}/{{ $labels.name }} cannot be "
               "judged.",
               "HostedCluster {{ $labels.@ns@ }}/{{ $labels.name }} has contradictory or malformed migration "
               "annotations (the exporter's log says which); no run migrates it until it is repaired with "
               "migration_state state=query repair=true.", settings),
        _alert("HyperShiftPrivateCAPIConversionShimNotReady",
               "max(\n  max(kube_deployment_status_replicas_available{%(shim)s}) < 1\n"
               "  or (\n    absent(kube_deployment_spec_replicas{%(shim)s})\n"
               "    and on () count(kube_deployment_spec_replicas) > 0\n  )\n"
               ")\nand on () max(%(prefix)smigrated_hosted_clusters_total) > 0"
               % {"shim": 'namespace="%s", deployment="%s"' % (settings["namespace"], settings["shim_name"]),
                  "prefix": PREFIX}, "5m", "critical",
               "The private CAPI conversion shim %s has no available replica." % shim,
               "Deployment %s (the conversion webhook of the private CAPI CRDs) has no available replica, or is "
               "gone, while HostedClusters are migrated: the API server fails every read of their CAPI objects at a "
               "version other than the stored one." % shim, settings),
        _alert("HyperShiftPrivateCAPIProxySidecarNotReady",
               "max by (namespace, pod) (kube_pod_container_status_ready{container=\"%s\"}) == 0\n"
               "  and on (namespace) %s" % (SIDECAR_CONTAINER, migrated_hcp_namespaces), "10m", "warning",
               "The CAPI proxy sidecar of Pod {{ $labels.namespace }}/{{ $labels.pod }} is not Ready.",
               "Container %s of Pod {{ $labels.namespace }}/{{ $labels.pod }}, in the HCP namespace of a migrated "
               "HostedCluster, has not been Ready for 10 minutes: that CAPI controller cannot reach its objects "
               "(they exist only in the private group, which the sidecar translates)." % SIDECAR_CONTAINER, settings),
        _leaderless_alert(settings),
        _proxy_latency_alert(settings),
    ]


EXPORTER_APP = "capi-fleet-exporter"


def selector_labels(settings):
    """The exporter's Pods and Service (never the shim's: its Service must not select them)."""
    return {"app.kubernetes.io/name": EXPORTER_APP, "app.kubernetes.io/instance": settings["exporter_name"]}


def labels(settings):
    return dict(selector_labels(settings), **{"app.kubernetes.io/component": "fleet-exporter",
                                              "app.kubernetes.io/part-of": "hypershift-private-capi",
                                              "app.kubernetes.io/managed-by": "hypershift.private_capi.conversion_shim"})


def prometheus_rule(settings=None):
    """The PrometheusRule (monitoring.coreos.com/v1) of every alert, in the shim's namespace."""
    settings = dict(DEFAULTS, **(settings or {}))
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": settings["rule_name"], "namespace": settings["namespace"],
                         "labels": labels(settings)},
            "spec": {"groups": [{"name": "hypershift-private-capi.rules", "rules": alerting_rules(settings)}]}}


def service_monitor(settings=None, selector=None, port="metrics", interval="30s"):
    """The ServiceMonitor of the exporter's Service: honorLabels keeps the exporter's namespace and name labels
    (the HostedCluster's) instead of renaming them exported_*."""
    settings = dict(DEFAULTS, **(settings or {}))
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": settings["exporter_name"], "namespace": settings["namespace"],
                         "labels": labels(settings)},
            "spec": {"selector": {"matchLabels": selector or selector_labels(settings)},
                     "namespaceSelector": {"matchNames": [settings["namespace"]]},
                     "endpoints": [{"port": port, "path": "/metrics", "interval": interval, "scheme": "http",
                                    "honorLabels": True}]}}


def pod_monitor(settings=None, interval="30s"):
    """The PodMonitor of the proxy sidecars: every Pod of any namespace with a container port named
    SIDECAR_METRICS_PORT (only the sidecar has one), so that HyperShiftAPIProxyHighLatency has its series. The Pods
    keep their own namespace and pod labels (the alert groups by them)."""
    settings = dict(DEFAULTS, **(settings or {}))
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
            "metadata": {"name": settings["proxy_monitor_name"], "namespace": settings["namespace"],
                         "labels": labels(settings)},
            "spec": {"selector": {}, "namespaceSelector": {"any": True},
                     "podMetricsEndpoints": [{"port": SIDECAR_METRICS_PORT, "path": "/metrics", "interval": interval,
                                              "scheme": "http"}]}}


def rule_file(settings=None):
    """The PrometheusRule's spec as a Prometheus rule file (groups:), what promtool and Prometheus read."""
    return prometheus_rule(settings)["spec"]
