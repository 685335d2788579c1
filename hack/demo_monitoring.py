"""What the fleet demo can show of the fleet's metrics: `print_scraped(prometheus_url)` prints, from a Prometheus that
scrapes `capi-proxy exporter`, the fleet's totals, each HostedCluster's state (with its lock holder or failure reason)
and the alerts firing. Standard library only; used by the demo once it runs an exporter and a Prometheus
(tests/integration/monitoring/support.py starts both as host processes).

    .venv/bin/python hack/demo_monitoring.py http://127.0.0.1:9090
"""
import json
import sys
import urllib.parse
import urllib.request

PREFIX = "hypershift_private_capi_"
NS = "hostedcluster_namespace"  # plugins/module_utils/monitoring.py HC_NAMESPACE: kept where `namespace` is enforced
TOTALS = (("migrated", PREFIX + "migrated_hosted_clusters_total"),
          ("pending", PREFIX + "pending_hosted_clusters_total"),
          ("in progress", PREFIX + "in_progress_hosted_clusters_total"),
          ("failed", "sum(%smigration_failed_hosted_clusters_total)" % PREFIX),
          ("invalid", PREFIX + "invalid_hosted_clusters_total"),
          ("finished migrations", "sum(%smigration_duration_seconds_count)" % PREFIX))


def query(prometheus_url, promql, timeout=10):
    """[(labels, value)] of an instant query."""
    url = "%s/api/v1/query?%s" % (prometheus_url.rstrip("/"), urllib.parse.urlencode({"query": promql}))
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body = json.load(response)
    if body.get("status") != "success":
        raise RuntimeError("Prometheus at %s answered %s for %s" % (prometheus_url, body, promql))
    return [(sample["metric"], float(sample["value"][1])) for sample in body["data"]["result"]]


def _value(prometheus_url, promql):
    result = query(prometheus_url, promql)
    return int(result[0][1]) if result else 0


def scraped(prometheus_url):
    """{totals: {name: int}, clusters: [{namespace, name, state, holder, failure_reason, seconds, leaderless_seconds}],
    alerts: [...]}."""
    totals = dict((label, _value(prometheus_url, promql)) for label, promql in TOTALS)
    holders = dict(((m.get(NS), m.get("name")), m.get("holder")) for m, _v in
                   query(prometheus_url, PREFIX + "migration_lock_info"))
    reasons = dict(((m.get(NS), m.get("name")), m.get("failure_reason")) for m, _v in
                   query(prometheus_url, PREFIX + "migration_failure_info"))
    durations = dict(((m.get(NS), m.get("name")), value) for m, value in query(
        prometheus_url, "%smigration_end_timestamp_seconds - %smigration_start_timestamp_seconds" % (PREFIX, PREFIX)))
    leaderless = dict(((m.get(NS), m.get("name")), value) for m, value in query(
        prometheus_url, PREFIX + "leaderless_seconds"))
    clusters = []
    for metric, _value_ in sorted(query(prometheus_url, "%shosted_cluster_state == 1" % PREFIX),
                                  key=lambda sample: (sample[0].get(NS, ""), sample[0].get("name", ""))):
        key = (metric.get(NS), metric.get("name"))
        clusters.append({"namespace": key[0], "name": key[1], "state": metric.get("state"),
                         "holder": holders.get(key), "failure_reason": reasons.get(key),
                         "seconds": durations.get(key), "leaderless_seconds": leaderless.get(key)})
    alerts = [dict(metric) for metric, _v in query(prometheus_url, 'ALERTS{alertstate="firing"}')]
    return {"totals": totals, "clusters": clusters, "alerts": alerts}


def print_scraped(prometheus_url, out=None):
    """Print what Prometheus at prometheus_url holds of the fleet: totals, one line per HostedCluster, firing alerts."""
    out = out or sys.stdout
    found = scraped(prometheus_url)
    out.write("Prometheus %s: %s\n" % (prometheus_url, ", ".join(
        "%s %d" % pair for pair in found["totals"].items())))
    for cluster in found["clusters"]:
        detail = ""
        if cluster["holder"] is not None:
            detail = " (lock held by %s)" % (cluster["holder"] or "nobody recorded")
        elif cluster["failure_reason"]:
            detail = " (%s)" % cluster["failure_reason"]
        if cluster["seconds"] is not None:
            detail += " migration %.0f s" % cluster["seconds"]
        if cluster.get("leaderless_seconds") is not None:
            detail += ", CAPI managers without a leader %.1f s" % cluster["leaderless_seconds"]
        out.write("  %s/%s: %s%s\n" % (cluster["namespace"], cluster["name"], cluster["state"], detail))
    for alert in found["alerts"]:
        out.write("  ALERT %s %s\n" % (alert.get("alertname"), " ".join(
            "%s=%s" % (key, alert[key]) for key in (NS, "namespace", "name", "pod") if key in alert)))
    return found


if __name__ == "__main__":
    print_scraped(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:9090")
