"""The fleet exporter, its pure parts: each HostedCluster's record (judged by the state machine the migration_state
module uses: the objects here are moved by machine.plan_transition itself), the series computed from the records, malformed
annotations as the state invalid (no error, one log line naming the HostedCluster), and the paged list."""
import datetime
import io
import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from capi_proxy import exporter
from capi_proxy.logs import JsonLogger
from capi_proxy.metrics import Registry
from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    FAILED_ANNOTATION,
    HISTORY_ANNOTATION,
    IN_PROGRESS_ANNOTATION,
    LEASE_ACQUIRE_TIME_ANNOTATION,
    PRIVATE_TYPES_ANNOTATION,
    ROLLBACK_FAILED_ANNOTATION,
    SCOPE_ANNOTATION,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine

T0 = datetime.datetime(2026, 11, 1, 12, 0, tzinfo=datetime.timezone.utc)


def _at(seconds):
    return T0 + datetime.timedelta(seconds=seconds)


def _hostedcluster(name, namespace="clusters", annotations=None):
    return {"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster",
            "metadata": {"name": name, "namespace": namespace, "annotations": dict(annotations or {})}}


def _moved(hostedcluster, *moves):
    """hostedcluster after machine.plan_transition of each (state, seconds after T0, options)."""
    for requested, seconds, options in moves:
        hostedcluster = machine.plan_transition(hostedcluster, requested, options.pop("holder", "run-1"), _at(seconds),
                                                **options).updated_object()
    return hostedcluster


def legacy(name):
    return _moved(_hostedcluster(name), (machine.LEGACY, 0, {}))


def in_progress(name, started=60, holder="run-1"):
    return _moved(legacy(name), (machine.IN_PROGRESS, started, {"holder": holder}))


def migrated(name, started=60, seconds=400):
    return _moved(in_progress(name, started), (machine.MIGRATED, started + seconds, {}))


def failed(name, reason="copy: the API server refused the Machine", started=60, seconds=90):
    return _moved(in_progress(name, started), (machine.FAILED, started + seconds, {"reason": reason}))


def test_each_state_is_the_state_machines_judgement():
    fleet = [_hostedcluster("new-1"), legacy("legacy-1"), in_progress("busy-1"), migrated("done-1"), failed("bad-1")]
    records = [exporter.record_of(hostedcluster) for hostedcluster in fleet]
    assert [record.state for record in records] == [machine.state_of(each) for each in fleet] == [
        machine.NEW, machine.LEGACY, machine.IN_PROGRESS, machine.MIGRATED, machine.FAILED]
    assert all(record.problem == "" for record in records)


def test_a_finished_migration_has_its_start_end_and_outcome_from_the_history():
    record = exporter.record_of(migrated("done-1", started=60, seconds=400))
    assert (record.start, record.end, record.outcome) == (_at(60).timestamp(), _at(460).timestamp(), "migrated")
    assert record.holder is None and record.failure_reason is None


def test_a_failed_migration_keeps_its_reason_and_its_times():
    record = exporter.record_of(failed("bad-1", reason="pause: timed out", started=60, seconds=90))
    assert (record.state, record.failure_reason, record.outcome) == (machine.FAILED, "pause: timed out", "failed")
    assert record.end - record.start == 90


def test_an_in_progress_migration_names_its_lock_holder_and_has_no_end():
    record = exporter.record_of(in_progress("busy-1", started=120, holder="20261101T120000-abc"))
    assert (record.holder, record.direction) == ("20261101T120000-abc", machine.MIGRATE)
    assert (record.start, record.end, record.outcome) == (_at(120).timestamp(), None, None)


def test_a_taken_over_lock_keeps_the_migrations_start_and_names_the_new_holder():
    hostedcluster = _moved(in_progress("busy-1", started=60), (machine.IN_PROGRESS, 5000, {"holder": "run-2",
                                                                                           "takeover": True}))
    record = exporter.record_of(hostedcluster)
    assert (record.holder, record.start) == ("run-2", _at(60).timestamp())


def test_a_rollback_lock_starts_when_it_was_taken_and_a_rolled_back_cluster_has_no_finished_migration():
    rolling = _moved(migrated("back-1"), (machine.IN_PROGRESS, 2000, {"rollback": True, "holder": "rb-1"}))
    record = exporter.record_of(rolling)
    assert (record.state, record.direction, record.holder) == (machine.IN_PROGRESS, machine.ROLLBACK, "rb-1")
    assert (record.start, record.end) == (_at(2000).timestamp(), None)
    back = exporter.record_of(_moved(rolling, (machine.LEGACY, 2100, {"rollback": True, "holder": "rb-1"})))
    assert (back.state, back.start, back.end, back.outcome) == (machine.LEGACY, None, None, None)


def test_a_retried_migration_is_measured_from_its_own_lock():
    retried = _moved(failed("again-1", started=60, seconds=30), (machine.LEGACY, 1000, {"force": True}),
                     (machine.IN_PROGRESS, 1100, {}), (machine.MIGRATED, 1400, {}))
    record = exporter.record_of(retried)
    assert (record.outcome, record.end - record.start) == ("migrated", 300)


@pytest.mark.parametrize("annotations, problem", [
    ({SCOPE_ANNOTATION: "legacy", PRIVATE_TYPES_ANNOTATION: "true"}, "contradictory markers"),
    ({SCOPE_ANNOTATION: "legacy", IN_PROGRESS_ANNOTATION: "yes"}, IN_PROGRESS_ANNOTATION),
    ({PRIVATE_TYPES_ANNOTATION: "True"}, PRIVATE_TYPES_ANNOTATION),
    ({SCOPE_ANNOTATION: "Legacy"}, SCOPE_ANNOTATION),
    ({SCOPE_ANNOTATION: "legacy", FAILED_ANNOTATION: "  "}, FAILED_ANNOTATION),
    ({SCOPE_ANNOTATION: "legacy", IN_PROGRESS_ANNOTATION: "true", LEASE_ACQUIRE_TIME_ANNOTATION: "yesterday"},
     LEASE_ACQUIRE_TIME_ANNOTATION),
    ({SCOPE_ANNOTATION: "legacy", HISTORY_ANNOTATION: "{not json"}, HISTORY_ANNOTATION),
    ({SCOPE_ANNOTATION: "legacy", HISTORY_ANNOTATION: '{"from": "legacy"}'}, HISTORY_ANNOTATION),
    ({SCOPE_ANNOTATION: "legacy", HISTORY_ANNOTATION: '[1, 2]'}, HISTORY_ANNOTATION),
])
def test_malformed_migration_annotations_make_the_state_invalid_and_say_why(annotations, problem):
    record = exporter.record_of(_hostedcluster("odd-1", annotations=annotations))
    assert record.state == machine.INVALID
    assert problem in record.problem


@pytest.mark.parametrize("hostedcluster", [
    {}, {"metadata": None}, {"metadata": {"name": "x", "annotations": {SCOPE_ANNOTATION: 1}}},
    {"metadata": {"name": "x", "annotations": ["a"]}}, None,
])
def test_objects_that_are_no_hostedcluster_never_raise(hostedcluster):
    assert exporter.record_of(hostedcluster).state == machine.INVALID


def test_label_values_from_annotations_are_bounded():
    record = exporter.record_of(failed("bad-1", reason="x" * 10000))
    assert len(record.failure_reason) == exporter.MAX_LABEL_CHARS


def _scrape(cache):
    registry = Registry()
    registry.collectors.register(exporter.FleetCollector(cache))
    text = registry.render()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return text, samples


def _value(samples, metric, **labels):
    if "namespace" in labels and "name" in labels:  # a HostedCluster's series: its namespace under both labels
        labels[exporter.NAMESPACE_LABELS[1]] = labels["namespace"]
    return samples.get((exporter.PREFIX + metric, tuple(sorted(labels.items()))))


def fleet():
    return [_hostedcluster("new-1"), legacy("legacy-1"), legacy("legacy-2"), in_progress("busy-1", holder="run-9"),
            migrated("done-1", seconds=100), migrated("done-2", seconds=700), migrated("done-3", seconds=2000),
            failed("bad-1", reason="copy: refused"), failed("bad-2", reason="copy: refused"),
            failed("bad-3", reason="verify: counts differ"),
            _hostedcluster("odd-1", annotations={SCOPE_ANNOTATION: "legacy", PRIVATE_TYPES_ANNOTATION: "true"})]


def test_the_totals_count_the_fleet_by_state():
    cache = exporter.FleetCache()
    cache.replace(fleet(), now=1000.0)
    _text, samples = _scrape(cache)
    assert _value(samples, "migrated_hosted_clusters_total") == 3
    assert _value(samples, "pending_hosted_clusters_total") == 3  # new-1, legacy-1, legacy-2
    assert _value(samples, "in_progress_hosted_clusters_total") == 1
    assert _value(samples, "invalid_hosted_clusters_total") == 1
    assert _value(samples, "migration_failed_hosted_clusters_total", failure_reason="copy: refused") == 2
    assert _value(samples, "migration_failed_hosted_clusters_total", failure_reason="verify: counts differ") == 1
    assert _value(samples, "exporter_synced") == 1
    assert _value(samples, "exporter_last_list_timestamp_seconds") == 1000.0


def test_the_state_series_are_one_hot_per_hostedcluster():
    cache = exporter.FleetCache()
    cache.replace(fleet())
    _text, samples = _scrape(cache)
    for hostedcluster in fleet():
        name = hostedcluster["metadata"]["name"]
        values = {state: _value(samples, "hosted_cluster_state", namespace="clusters", name=name, state=state)
                  for state in machine.STATES}
        assert sorted(values.values()) == [0.0] * (len(machine.STATES) - 1) + [1.0], (name, values)
    assert _value(samples, "hosted_cluster_state", namespace="clusters", name="odd-1", state="invalid") == 1


def test_the_lock_holder_failure_reason_and_times_per_hostedcluster():
    cache = exporter.FleetCache()
    cache.replace(fleet())
    _text, samples = _scrape(cache)
    assert _value(samples, "migration_lock_info", namespace="clusters", name="busy-1", holder="run-9",
                  direction="migrate") == 1
    assert _value(samples, "migration_failure_info", namespace="clusters", name="bad-3",
                  failure_reason="verify: counts differ") == 1
    assert _value(samples, "migration_start_timestamp_seconds", namespace="clusters", name="done-1") == _at(60).timestamp()
    assert _value(samples, "migration_end_timestamp_seconds", namespace="clusters", name="done-1") == _at(160).timestamp()
    assert _value(samples, "migration_end_timestamp_seconds", namespace="clusters", name="busy-1") is None
    assert not [key for key in samples if key[0] == exporter.PREFIX + "migration_lock_info"
                and dict(key[1])["name"] != "busy-1"]


def test_the_duration_histogram_observes_each_finished_migration():
    cache = exporter.FleetCache()
    cache.replace(fleet())
    _text, samples = _scrape(cache)
    assert _value(samples, "migration_duration_seconds_count", outcome="migrated") == 3
    assert _value(samples, "migration_duration_seconds_sum", outcome="migrated") == 100 + 700 + 2000
    assert _value(samples, "migration_duration_seconds_bucket", outcome="migrated", le="60.0") == 0
    assert _value(samples, "migration_duration_seconds_bucket", outcome="migrated", le="120.0") == 1
    assert _value(samples, "migration_duration_seconds_bucket", outcome="migrated", le="900.0") == 2
    assert _value(samples, "migration_duration_seconds_bucket", outcome="migrated", le="1800.0") == 2
    assert _value(samples, "migration_duration_seconds_bucket", outcome="migrated", le="+Inf") == 3
    assert _value(samples, "migration_duration_seconds_count", outcome="failed") == 3


def test_a_watch_event_updates_and_a_deletion_removes_one_record():
    cache = exporter.FleetCache()
    cache.replace([legacy("a"), legacy("b")])
    cache.put(migrated("a"))
    cache.remove(legacy("b"))
    assert [(record.name, record.state) for record in cache.snapshot()] == [("a", machine.MIGRATED)]


def test_a_malformed_hostedcluster_is_logged_once_by_name_and_never_fails_the_scrape():
    stream = io.StringIO()
    cache = exporter.FleetCache(JsonLogger("info", stream=stream))
    odd = _hostedcluster("odd-1", namespace="team-a", annotations={IN_PROGRESS_ANNOTATION: "maybe"})
    cache.replace([odd, legacy("fine-1")])
    cache.put(odd)  # the same problem again (a resync): not logged again
    _text, samples = _scrape(cache)
    assert _value(samples, "hosted_cluster_state", namespace="team-a", name="odd-1", state="invalid") == 1
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert len(lines) == 1
    assert (lines[0]["namespace"], lines[0]["name"], lines[0]["level"]) == ("team-a", "odd-1", "warning")
    assert IN_PROGRESS_ANNOTATION in lines[0]["problem"]


def test_a_rollback_that_failed_is_exported():
    hostedcluster = failed("bad-1")
    hostedcluster["metadata"]["annotations"][ROLLBACK_FAILED_ANNOTATION] = "scale back: Deployment not found"
    cache = exporter.FleetCache()
    cache.replace([hostedcluster])
    _text, samples = _scrape(cache)
    assert _value(samples, "rollback_failed_info", namespace="clusters", name="bad-1",
                  reason="scale back: Deployment not found") == 1


def test_series_per_hostedcluster_are_bounded():
    """Six state series, start and end: eight per finished HostedCluster; the lock and failure series only for the
    clusters in those states (the benchmark measures the whole: benchmarks/bench_exporter.py)."""
    cache = exporter.FleetCache()
    cache.replace([migrated("done-%d" % index) for index in range(50)])
    _text, samples = _scrape(cache)
    per_cluster = [key for key in samples if ("name", "done-7") in key[1]]
    assert len(per_cluster) == len(machine.STATES) + 2


def test_an_empty_unsynced_exporter_scrapes():
    text, samples = _scrape(exporter.FleetCache())
    assert _value(samples, "exporter_synced") == 0
    assert _value(samples, "migrated_hosted_clusters_total") == 0
    assert "exporter_last_list_timestamp_seconds" not in text


class _PagedApi(object):
    def __init__(self, hostedclusters, page_size):
        self.pages = [hostedclusters[start:start + page_size] for start in range(0, len(hostedclusters), page_size)]
        self.calls = []

    def list_cluster_custom_object(self, group, version, plural, **kwargs):
        self.calls.append((group, version, plural, kwargs))
        index = int(kwargs.get("_continue") or 0)
        more = index + 1 < len(self.pages)
        return {"items": self.pages[index] if self.pages else [],
                "metadata": {"resourceVersion": "42", "continue": str(index + 1) if more else None}}


def test_the_list_is_paged_and_replaces_the_cache():
    cache = exporter.FleetCache()
    cache.replace([legacy("gone-1")])
    api = _PagedApi([legacy("hc-%d" % index) for index in range(5)], 2)
    assert exporter.list_into(api, cache, 2) == "42"
    assert len(api.calls) == 3
    assert api.calls[0][:3] == ("hypershift.openshift.io", "v1beta1", "hostedclusters")
    assert sorted(record.name for record in cache.snapshot()) == ["hc-%d" % index for index in range(5)]
    assert cache.synced


def test_the_command_line():
    args = exporter.exporter_parser().parse_args(["--listen", "0.0.0.0:9091", "--kubeconfig", "/k"])
    assert (args.listen, args.kubeconfig, args.page_size) == (("0.0.0.0", 9091), "/k", 500)
