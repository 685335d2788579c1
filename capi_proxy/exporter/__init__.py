"""The fleet exporter: `capi-proxy exporter` lists and watches every HostedCluster (hypershift.openshift.io/v1beta1,
all namespaces) and serves Prometheus /metrics about their private-CAPI migration.

What a HostedCluster is in, and since when, is judged by the collection's own state machine
(plugins/module_utils/state/machine.py: state_of_annotations, lease_of, read_history), the same pure functions the
migration_state module uses, imported by its collection path as the proxy imports the translation core. The cache keeps
one small Record per HostedCluster (names, state, failure reason, start and end times, lock holder, leaderless
seconds); every series is computed from those records when Prometheus scrapes (FleetCollector), so nothing is kept
per scrape and nothing ages.

A HostedCluster whose migration annotations cannot be read (contradictory markers, a marker or lease time that is not
one the state machine writes, a history that is not a JSON list) is exported in the state `invalid`, logged once by
name, and never fails a scrape. A leaderless-seconds annotation that is not a finite non-negative number is read as
absent, logged once by name, and leaves the state as the markers say (it is a figure of the migration, not a marker).

The list and the watch go through the official `kubernetes` client (a thread of its own; the HTTP server is aiohttp's,
as the proxy's and the shim's). The series and their labels: docs/operator-guide.md#monitoring.
"""
import argparse
import asyncio
import json
import threading
import time
from collections import namedtuple

from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily

from capi_proxy.cli import address, positive
from capi_proxy.logs import LEVELS, JsonLogger
from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    FAILED_ANNOTATION,
    HISTORY_ANNOTATION,
    IN_PROGRESS_ANNOTATION,
    LEADERLESS_ANNOTATION,
    LEASE_ACQUIRE_TIME_ANNOTATION,
    LEASE_RENEW_TIME_ANNOTATION,
    PRIVATE_TYPES_ANNOTATION,
    ROLLBACK_FAILED_ANNOTATION,
    SCOPE_ANNOTATION,
    parse_seconds,
    parse_time,
)
import ansible_collections.hypershift.private_capi.plugins.module_utils.state.machine as machine  # pylint: disable=consider-using-from-import

GROUP, VERSION, PLURAL = "hypershift.openshift.io", "v1beta1", "hostedclusters"
PREFIX = "hypershift_private_capi_"
# The HostedCluster's namespace, twice on each of its series: `namespace` as HyperShift's own HostedCluster metrics
# name it (platform monitoring keeps it, honorLabels), and `hostedcluster_namespace`, which the alerts group by because
# OpenShift's user-workload monitoring overwrites `namespace` with the exporter's own (its enforced namespace label).
NAMESPACE_LABELS = ("namespace", "hostedcluster_namespace")
# Seconds of one finished migration: the enhancement's 5-15 minutes per HostedCluster in the middle.
DURATION_BUCKETS = (60.0, 120.0, 180.0, 300.0, 450.0, 600.0, 900.0, 1200.0, 1800.0)
# Seconds a CAPI manager had no live leader in one migration: a released Lease is taken at the next retry (<= 57 s with
# HyperShift's flags), one left to expire up to 194 s (plugins/module_utils/hcp/leadership.py).
LEADERLESS_BUCKETS = (1.0, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0, 180.0, 300.0)
# Label values the exporter takes from annotations are cut to this many characters (a record's size is bounded).
MAX_LABEL_CHARS = 128
# A HostedCluster whose migration outcome the histogram observes: how its last migration ended.
OUTCOME_MIGRATED, OUTCOME_FAILED = "migrated", "failed"
OUTCOMES = (OUTCOME_MIGRATED, OUTCOME_FAILED)
# Not started yet: the states the pending gauge counts.
PENDING_STATES = (machine.LEGACY, machine.NEW)
# The values the state machine writes for each marker; anything else is malformed (read as invalid here).
_MARKER_VALUES = {SCOPE_ANNOTATION: (machine.SCOPE_LEGACY,), IN_PROGRESS_ANNOTATION: (machine.TRUE,),
                  PRIVATE_TYPES_ANNOTATION: (machine.TRUE,)}


class Record(namedtuple("Record", "namespace name state failure_reason start end outcome holder direction "
                                  "rollback_failed problem leaderless ignored")):
    """What the metrics need of one HostedCluster (and nothing else): the state (one of machine.STATES), the failure
    reason (failed only), the start of its last migration and the end when it has ended (epoch seconds or None), how
    it ended (OUTCOMES or None), the lock's holder and direction (in-progress only), the failed rollback's note, why
    the state is invalid when the annotations could not be read ("" otherwise), the longest time a CAPI manager had no
    live leader in its last migration (seconds, or None when the migration wrote none), and why that figure was
    ignored ("" when it was not: a malformed figure never makes the state invalid)."""
    __slots__ = ()


def _cut(value):
    text = "" if value is None else str(value)
    return text if len(text) <= MAX_LABEL_CHARS else text[:MAX_LABEL_CHARS - 3] + "..."


def _epoch(text):
    moment = parse_time(text) if isinstance(text, str) else None
    return moment.timestamp() if moment is not None else None


def leaderless_of(annotations):
    """(seconds, why ignored) of the leaderless-seconds annotation: (None, "") when it is absent, (None, the problem)
    when it is not a finite non-negative number."""
    if LEADERLESS_ANNOTATION not in annotations:
        return None, ""
    text = annotations[LEADERLESS_ANNOTATION]
    seconds = parse_seconds(text)
    if seconds is None:
        why = "is not a number of seconds (a finite non-negative decimal)"
        return None, "%s=%r %s" % (LEADERLESS_ANNOTATION, _cut(text), why)
    return seconds, ""


def malformed(annotations):
    """Why the migration annotations cannot be judged ("" when they can): a marker with a value the state machine
    never writes, an in-progress lock without a readable time, a history that is not a JSON list of entries."""
    problems = []
    for key, allowed in _MARKER_VALUES.items():
        if key in annotations and annotations[key] not in allowed:
            problems.append("%s=%r (expected %s)" % (key, annotations[key], " or ".join(allowed)))
    if FAILED_ANNOTATION in annotations and not (isinstance(annotations[FAILED_ANNOTATION], str)
                                                 and annotations[FAILED_ANNOTATION].strip()):
        problems.append("%s is empty" % FAILED_ANNOTATION)
    for key in (LEASE_ACQUIRE_TIME_ANNOTATION, LEASE_RENEW_TIME_ANNOTATION):
        if key in annotations and _epoch(annotations[key]) is None:
            problems.append("%s=%r is not a time" % (key, annotations[key]))
    if HISTORY_ANNOTATION in annotations:
        try:
            history = json.loads(annotations[HISTORY_ANNOTATION])
        except (TypeError, ValueError):
            history = None
        if not isinstance(history, list) or not all(isinstance(entry, dict) for entry in history):
            problems.append("%s is not a JSON list of entries" % HISTORY_ANNOTATION)
    return "; ".join(problems)


def last_migration(history, state, lease):
    """(start, end, outcome) of the HostedCluster's last migration from its history entries (oldest first): start is
    when its lock was taken (legacy -> in-progress), end when that lock ended in migrated or failed. A rollback's moves
    are not a migration. A lock the history no longer holds (it keeps the last machine.HISTORY_LIMIT moves) starts at
    the lease's acquire time while it is held; otherwise (None, None, None)."""
    start = end = outcome = None
    for entry in history:
        if entry.get("rollback"):
            if entry.get("from") == machine.MIGRATED:  # migrated -> in-progress for a rollback: not a migration
                start = end = outcome = None
            continue
        moved = (entry.get("from"), entry.get("to"))
        if moved == (machine.LEGACY, machine.IN_PROGRESS):
            start, end, outcome = _epoch(entry.get("at")), None, None
        elif moved in ((machine.IN_PROGRESS, machine.MIGRATED), (machine.IN_PROGRESS, machine.FAILED)) and start:
            end, outcome = _epoch(entry.get("at")), moved[1]
    if state == machine.IN_PROGRESS and (start is None or end is not None):
        start, end, outcome = (_epoch(lease["acquire_time"]) if lease else None), None, None
    if outcome is not None and (end is None or end < start):
        end = outcome = None
    return start, end, outcome


def record_of(hostedcluster):
    """The Record of one HostedCluster (a dict as the API server returns it); never raises for what a HostedCluster
    holds: what cannot be read makes the state invalid, with the reason in Record.problem, but for the leaderless
    figure, which is then left out, with the reason in Record.ignored."""
    metadata = hostedcluster.get("metadata") if isinstance(hostedcluster, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    namespace, name = _cut(metadata.get("namespace")), _cut(metadata.get("name"))
    annotations = metadata.get("annotations") or {}
    if not name:
        return Record(namespace, name, machine.INVALID, None, None, None, None, None, None, None,
                      "metadata.name is missing", None, "")
    if not isinstance(annotations, dict) or not all(isinstance(value, str) for value in annotations.values()):
        return Record(namespace, name, machine.INVALID, None, None, None, None, None, None, None,
                      "metadata.annotations is not a map of strings", None, "")
    leaderless, ignored = leaderless_of(annotations)
    problem = malformed(annotations)
    state = machine.state_of_annotations(annotations)
    if state == machine.INVALID and not problem:
        problem = "contradictory markers %s" % json.dumps(machine.markers(annotations), sort_keys=True)
    if problem:
        return Record(namespace, name, machine.INVALID, None, None, None, None, None, None,
                      _cut(annotations.get(ROLLBACK_FAILED_ANNOTATION)) or None, problem, leaderless, ignored)
    lease = machine.lease_of(annotations)
    start, end, outcome = last_migration(machine.read_history(annotations), state, lease)
    holder = direction = None
    if state == machine.IN_PROGRESS:
        holder = _cut(lease["holder"]) if lease else ""
        direction = machine.lease_direction(annotations)
    return Record(namespace, name, state,
                  _cut(annotations.get(FAILED_ANNOTATION)) if state == machine.FAILED else None,
                  start, end, outcome, holder, direction,
                  _cut(annotations.get(ROLLBACK_FAILED_ANNOTATION)) or None, "", leaderless, ignored)


class FleetCache(object):
    """Records by (namespace, name), shared by the watch thread (writes) and scrapes (snapshots)."""

    def __init__(self, logger=None):
        self._records = {}
        self._lock = threading.Lock()
        self.logger = logger
        self.synced = False
        self.last_sync = None

    def _note(self, record, previous):
        if self.logger is None:
            return
        if record.problem and (previous is None or previous.problem != record.problem):
            self.logger.warning("HostedCluster has malformed migration annotations: exported as state invalid",
                                namespace=record.namespace, name=record.name, problem=record.problem)
        if record.ignored and (previous is None or previous.ignored != record.ignored):
            self.logger.warning("HostedCluster has a malformed leaderless-seconds annotation: figure not exported, "
                                "state kept", namespace=record.namespace, name=record.name, problem=record.ignored)

    def put(self, hostedcluster):
        record = record_of(hostedcluster)
        with self._lock:
            previous = self._records.get((record.namespace, record.name))
            self._records[(record.namespace, record.name)] = record
        self._note(record, previous)
        return record

    def remove(self, hostedcluster):
        metadata = (hostedcluster or {}).get("metadata") or {}
        with self._lock:
            self._records.pop((_cut(metadata.get("namespace")), _cut(metadata.get("name"))), None)

    def replace(self, hostedclusters, now=None):
        """A full list: the cache becomes exactly these HostedClusters."""
        records = {}
        for hostedcluster in hostedclusters:
            record = record_of(hostedcluster)
            records[(record.namespace, record.name)] = record
        with self._lock:
            previous, self._records = self._records, records
            self.synced = True
            self.last_sync = time.time() if now is None else now
        for key, record in records.items():
            self._note(record, previous.get(key))

    def snapshot(self):
        with self._lock:
            return list(self._records.values())


def _gauge(name, help_text, labels=()):
    return GaugeMetricFamily(PREFIX + name, help_text, labels=list(labels))


def _buckets(values, bounds):
    """A histogram's cumulative buckets of values: (upper bound, count at or under it) per bound, then +Inf."""
    return [(repr(bound), float(sum(1 for value in values if value <= bound))) for bound in bounds] + [
        ("+Inf", float(len(values)))]


def _cluster_families():
    """The gauge families with one series per HostedCluster, empty: state, start, end, lock, failure,
    rollback_failed, leaderless (that order, as families() yields them)."""
    return (
        _gauge("hosted_cluster_state", "One series per HostedCluster and state: 1 for the state its migration "
               "annotations are in (as the collection's state machine judges them), else 0.",
               (NAMESPACE_LABELS + ("name", "state"))),
        _gauge("migration_start_timestamp_seconds", "When the HostedCluster's last migration took its lock "
               "(legacy -> in-progress), Unix time.", (NAMESPACE_LABELS + ("name",))),
        _gauge("migration_end_timestamp_seconds", "When the HostedCluster's last migration ended (migrated or "
               "failed), Unix time.", (NAMESPACE_LABELS + ("name",))),
        _gauge("migration_lock_info", "1 for each in-progress HostedCluster: the run holding its migration lock "
               "(holder, the run id; empty when none is recorded) and the lock's direction (migrate or rollback).",
               (NAMESPACE_LABELS + ("name", "holder", "direction"))),
        _gauge("migration_failure_info", "1 for each failed HostedCluster, with its failure reason (the "
               "migration-failed annotation).", (NAMESPACE_LABELS + ("name", "failure_reason"))),
        _gauge("rollback_failed_info", "1 for each HostedCluster whose last rescue or rollback failed "
               "(the capi-migration-rollback-failed annotation), with its note.", (NAMESPACE_LABELS + ("name", "reason"))),
        _gauge("leaderless_seconds", "The longest time a CAPI manager of the HostedCluster's HCP namespace "
               "had no live leader (its leader-election Lease without a live holder) over the pre-install and "
               "the window of its last migration, seconds (the capi-migration-leaderless-seconds annotation); "
               "none for a HostedCluster whose migration wrote no such figure.", (NAMESPACE_LABELS + ("name",))),
    )


def _add_cluster(cluster_families, record):
    """The series of one HostedCluster's record in _cluster_families()."""
    state, start, end, lock, failure, rollback_failed, leaderless = cluster_families
    who = [record.namespace] * len(NAMESPACE_LABELS) + [record.name]  # the values of NAMESPACE_LABELS + name
    for each in machine.STATES:
        state.add_metric(who + [each], 1.0 if each == record.state else 0.0)
    if record.start is not None:
        start.add_metric(who, record.start)
    if record.end is not None:
        end.add_metric(who, record.end)
    if record.state == machine.IN_PROGRESS:
        lock.add_metric(who + [record.holder or "", record.direction or ""], 1.0)
    if record.state == machine.FAILED:
        failure.add_metric(who + [record.failure_reason or ""], 1.0)
    if record.rollback_failed:
        rollback_failed.add_metric(who + [record.rollback_failed], 1.0)
    if record.leaderless is not None:
        leaderless.add_metric(who, record.leaderless)


def _total_families(by_state, failed_reasons):
    """The fleet's counts: by state (gauges named *_total, as HyperShift's design names them), failed by reason."""
    totals = [
        ("migrated_hosted_clusters_total", "HostedClusters migrated to the private CAPI types (a gauge: the name "
         "is HyperShift's design's).", by_state[machine.MIGRATED]),
        ("pending_hosted_clusters_total", "HostedClusters still on the standard CAPI types, not started (states "
         "legacy and new; a gauge).", sum(by_state[each] for each in PENDING_STATES)),
        ("in_progress_hosted_clusters_total", "HostedClusters whose migration (or rollback) lock is held (a gauge).",
         by_state[machine.IN_PROGRESS]),
        ("invalid_hosted_clusters_total", "HostedClusters whose migration annotations cannot be judged (a gauge; "
         "the exporter's log names each).", by_state[machine.INVALID]),
    ]
    for name, help_text, value in totals:
        family = _gauge(name, help_text)
        family.add_metric([], float(value))
        yield family
    failed = _gauge("migration_failed_hosted_clusters_total", "HostedClusters in the failed state (rolled back, "
                    "legacy-reconciled, awaiting remediation) by failure reason (a gauge).", ("failure_reason",))
    for reason, count in sorted(failed_reasons.items()):
        failed.add_metric([reason], float(count))
    yield failed


def _histogram_families(durations, leaderless_figures):
    """The last migrations' durations by outcome, and their leaderless figures."""
    histogram = HistogramMetricFamily(
        PREFIX + "migration_duration_seconds", "Seconds from lock to end of each HostedCluster's last finished "
        "migration (from its history annotation; computed at scrape time), by how it ended.", labels=["outcome"])
    for outcome in OUTCOMES:
        histogram.add_metric([outcome], _buckets(durations[outcome], DURATION_BUCKETS), sum(durations[outcome]))
    yield histogram
    leaderless_histogram = HistogramMetricFamily(
        PREFIX + "migration_leaderless_seconds", "The longest time a CAPI manager had no live leader in each "
        "HostedCluster's last migration (from its capi-migration-leaderless-seconds annotation; computed at scrape "
        "time), seconds; HostedClusters without the figure are not observed.")
    leaderless_histogram.add_metric([], _buckets(leaderless_figures, LEADERLESS_BUCKETS), sum(leaderless_figures))
    yield leaderless_histogram


def _sync_families(synced, last_sync):
    synced_family = _gauge("exporter_synced", "1 once the exporter has listed every HostedCluster (its series are "
                           "complete), else 0.")
    synced_family.add_metric([], 1.0 if synced else 0.0)
    yield synced_family
    if last_sync is not None:
        last = _gauge("exporter_last_list_timestamp_seconds", "When the exporter last listed every HostedCluster "
                      "(it lists again after a watch expires), Unix time.")
        last.add_metric([], last_sync)
        yield last


def families(records, synced=True, last_sync=None):
    """Every metric family of the fleet, from records (computed now: called on each scrape): the totals, the
    histograms, the per-HostedCluster series, the exporter's own sync state."""
    by_state = dict((state, 0) for state in machine.STATES)
    failed_reasons = {}
    durations = dict((outcome, []) for outcome in OUTCOMES)
    leaderless_figures = []
    cluster_families = _cluster_families()
    for record in sorted(records, key=lambda each: (each.namespace, each.name)):
        by_state[record.state] += 1
        _add_cluster(cluster_families, record)
        if record.end is not None:
            durations[record.outcome].append(record.end - record.start)
        if record.state == machine.FAILED:
            failed_reasons[record.failure_reason or ""] = failed_reasons.get(record.failure_reason or "", 0) + 1
        if record.leaderless is not None:
            leaderless_figures.append(record.leaderless)
    yield from _total_families(by_state, failed_reasons)
    yield from _histogram_families(durations, leaderless_figures)
    yield from cluster_families
    yield from _sync_families(synced, last_sync)


class FleetCollector(object):
    """A prometheus-client collector over a FleetCache: each scrape computes every series from the records."""

    def __init__(self, cache):
        self.cache = cache

    def describe(self):
        return []  # unchecked collector: its series depend on the fleet

    def collect(self):
        return families(self.cache.snapshot(), self.cache.synced, self.cache.last_sync)


# --------------------------------------------------------------------------------------------------------------------
# The list and the watch (kubernetes client, in a thread)


def _api(kubeconfig):
    """CustomObjectsApi on the kubeconfig (tokenFile re-read), or in-cluster (the Pod's service account)."""
    from kubernetes import client, config  # pylint: disable=import-outside-toplevel
    if kubeconfig:
        api_client = config.new_client_from_config(config_file=kubeconfig)
    else:
        config.load_incluster_config()
        api_client = client.ApiClient()
    return client.CustomObjectsApi(api_client)


def list_into(api, cache, page_size):
    """List every HostedCluster in pages (the cache holds records only, never a whole list) and make the cache
    exactly that list; returns the list's resourceVersion to watch from."""
    items, token = [], None
    while True:
        kwargs = {"limit": page_size}
        if token:
            kwargs["_continue"] = token
        page = api.list_cluster_custom_object(GROUP, VERSION, PLURAL, **kwargs)
        items.extend(record_source(item) for item in page.get("items") or [])
        metadata = page.get("metadata") or {}
        token = metadata.get("continue")
        if not token:
            cache.replace(items)
            return metadata.get("resourceVersion")


def record_source(hostedcluster):
    """Only the metadata fields record_of reads (a page's objects are dropped as soon as it is read)."""
    metadata = hostedcluster.get("metadata") or {}
    return {"metadata": {"namespace": metadata.get("namespace"), "name": metadata.get("name"),
                         "annotations": metadata.get("annotations") or {}}}


def watch_forever(api, cache, logger, stop, page_size=500, watch_seconds=300, backoff_seconds=5.0):
    """List, then watch from the list's resourceVersion; a watch that ends is opened again from the last version seen,
    one that expires (410) or fails lists again (after backoff_seconds on a failure). Runs until stop is set."""
    from kubernetes import watch  # pylint: disable=import-outside-toplevel
    from kubernetes.client.exceptions import ApiException  # pylint: disable=import-outside-toplevel
    while not stop.is_set():
        try:
            version = list_into(api, cache, page_size)
            logger.info("listed HostedClusters", count=len(cache.snapshot()), resource_version=version)
            while not stop.is_set():
                watcher = watch.Watch()
                for event in watcher.stream(api.list_cluster_custom_object, GROUP, VERSION, PLURAL,
                                            resource_version=version, allow_watch_bookmarks=True,
                                            timeout_seconds=watch_seconds):
                    kind, hostedcluster = event.get("type"), event.get("object") or {}
                    version = (hostedcluster.get("metadata") or {}).get("resourceVersion") or version
                    if kind in ("ADDED", "MODIFIED"):
                        cache.put(hostedcluster)
                    elif kind == "DELETED":
                        cache.remove(hostedcluster)
                    elif kind == "ERROR":
                        raise ApiException(status=hostedcluster.get("code") or 500, reason=hostedcluster.get("message"))
                    if stop.is_set():
                        watcher.stop()
                        break
        except ApiException as exc:
            if exc.status == 410:
                logger.info("watch expired: listing again", reason=str(exc.reason))
                continue
            logger.error("HostedClusters cannot be listed or watched", status=exc.status, reason=str(exc.reason))
            stop.wait(backoff_seconds)
        except Exception as exc:  # pylint: disable=broad-except
            logger.error("HostedClusters cannot be listed or watched", error="%s: %s" % (type(exc).__name__, exc))
            stop.wait(backoff_seconds)


# --------------------------------------------------------------------------------------------------------------------
# Command line


def exporter_parser():
    parser = argparse.ArgumentParser(prog="python -m capi_proxy exporter", description=(
        "Prometheus exporter of the fleet's private-CAPI migration: lists and watches every HostedCluster and serves "
        "/metrics (and /healthz, /readyz: ready once the first list is in)."))
    parser.add_argument("--kubeconfig", help="kubeconfig of the API server (default: in-cluster, the Pod's service "
                        "account)")
    parser.add_argument("--listen", type=address, default=("127.0.0.1", 9091),
                        help="HOST:PORT to serve /metrics on (default 127.0.0.1:9091)")
    parser.add_argument("--page-size", type=positive(int), default=500, help="HostedClusters per list page")
    parser.add_argument("--watch-seconds", type=positive(int), default=300,
                        help="seconds one watch request lasts before it is opened again")
    parser.add_argument("--log-level", choices=sorted(LEVELS), default="info")
    return parser


def run_exporter(argv):
    args = exporter_parser().parse_args(argv)
    logger = JsonLogger(args.log_level, component="capi-proxy-exporter")
    try:
        api = _api(args.kubeconfig)
    except Exception as exc:  # pylint: disable=broad-except
        logger.error("cannot start", error="%s: %s" % (type(exc).__name__, exc))
        return 2
    # pylint: disable=import-outside-toplevel
    from aiohttp import web

    from capi_proxy.metrics import Registry
    from capi_proxy.serving import metrics_app, serve
    # pylint: enable=import-outside-toplevel
    cache = FleetCache(logger)
    registry = Registry()
    registry.collectors.register(FleetCollector(cache))
    stop = threading.Event()

    async def readyz(_request):
        if cache.synced:
            return web.Response(text="ok")
        return web.Response(status=503, text="HostedClusters not listed yet")

    thread = threading.Thread(target=watch_forever, name="hostedcluster-watch", daemon=True,
                              args=(api, cache, logger, stop, args.page_size, args.watch_seconds))
    thread.start()
    logger.info("starting", group=GROUP, version=VERSION, resource=PLURAL)
    try:
        asyncio.run(serve([(metrics_app(registry, readyz), args.listen, None)], logger, "capi-proxy-exporter"))
    finally:
        stop.set()
    return 0
