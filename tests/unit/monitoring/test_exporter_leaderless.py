"""The fleet exporter's leaderless figure (capi_proxy/exporter/__init__.py): the capi-migration-leaderless-seconds annotation the
migration writes when it ends, read into each HostedCluster's record, served as a gauge per HostedCluster and a
histogram over the fleet; a malformed figure is left out and logged once, and never makes the state invalid. The
HostedClusters are moved by the state machine itself (the helpers of tests/unit/proxy/test_capi_proxy_exporter.py)."""
import io
import json

import pytest

from capi_proxy import exporter
from capi_proxy.logs import JsonLogger
from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    LEADERLESS_ANNOTATION,
    PRIVATE_TYPES_ANNOTATION,
    SCOPE_ANNOTATION,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine
from tests.unit.proxy.test_capi_proxy_exporter import _hostedcluster, _scrape, _value, legacy, migrated


def _with_figure(hostedcluster, text):
    hostedcluster["metadata"]["annotations"][LEADERLESS_ANNOTATION] = text
    return hostedcluster


def test_the_figure_is_read_from_the_annotation():
    record = exporter.record_of(_with_figure(migrated("done-1"), "41.3"))
    assert (record.state, record.leaderless, record.ignored, record.problem) == (machine.MIGRATED, 41.3, "", "")


def test_a_hostedcluster_migrated_before_the_figure_existed_has_none():
    record = exporter.record_of(migrated("old-1"))
    assert (record.state, record.leaderless, record.ignored) == (machine.MIGRATED, None, "")


@pytest.mark.parametrize("text", ["", "forty", "41.3s", "nan", "NaN", "inf", "-inf", "1e400", "-1", "-0.5"])
def test_a_malformed_figure_is_left_out_and_the_state_kept(text):
    record = exporter.record_of(_with_figure(migrated("done-1"), text))
    assert (record.state, record.problem, record.leaderless) == (machine.MIGRATED, "", None)
    assert LEADERLESS_ANNOTATION in record.ignored and repr(text) in record.ignored


def test_an_invalid_hostedcluster_keeps_its_figure():
    """The figure is the migration's measure, not a marker: contradictory markers do not make it unreadable."""
    odd = _hostedcluster("odd-1", annotations={SCOPE_ANNOTATION: "legacy", PRIVATE_TYPES_ANNOTATION: "true",
                                               LEADERLESS_ANNOTATION: "12"})
    record = exporter.record_of(odd)
    assert (record.state, record.leaderless) == (machine.INVALID, 12.0)


def _fleet():
    return [_with_figure(migrated("quick-1"), "0"), _with_figure(migrated("done-1"), "41.3"),
            _with_figure(migrated("slow-1"), "75"), _with_figure(migrated("stalled-1"), "400.5"),
            migrated("old-1"), legacy("legacy-1"), _with_figure(migrated("odd-1"), "soon")]


def test_the_gauge_has_one_series_per_hostedcluster_with_the_figure():
    cache = exporter.FleetCache()
    cache.replace(_fleet())
    _text, samples = _scrape(cache)
    figures = {dict(labels)["name"]: value for (name, labels), value in samples.items()
               if name == exporter.PREFIX + "leaderless_seconds"}
    assert figures == {"quick-1": 0.0, "done-1": 41.3, "slow-1": 75.0, "stalled-1": 400.5}
    assert _value(samples, "leaderless_seconds", namespace="clusters", name="slow-1") == 75.0
    assert _value(samples, "hosted_cluster_state", namespace="clusters", name="odd-1", state="migrated") == 1
    assert _value(samples, "invalid_hosted_clusters_total") == 0


def test_the_histogram_observes_each_hostedcluster_with_the_figure():
    cache = exporter.FleetCache()
    cache.replace(_fleet())
    _text, samples = _scrape(cache)
    assert _value(samples, "migration_leaderless_seconds_count") == 4
    assert _value(samples, "migration_leaderless_seconds_sum") == pytest.approx(0 + 41.3 + 75 + 400.5)
    expected = {"1.0": 1, "5.0": 1, "30.0": 1, "45.0": 2, "60.0": 2, "90.0": 3, "300.0": 3, "+Inf": 4}
    for bound, count in expected.items():
        assert _value(samples, "migration_leaderless_seconds_bucket", le=bound) == count, bound
    assert list(exporter.LEADERLESS_BUCKETS) == sorted(exporter.LEADERLESS_BUCKETS)


def test_a_fleet_without_the_figure_has_an_empty_histogram_and_no_gauge_series():
    cache = exporter.FleetCache()
    cache.replace([migrated("old-1"), legacy("legacy-1")])
    text, samples = _scrape(cache)
    assert _value(samples, "migration_leaderless_seconds_count") == 0
    assert _value(samples, "migration_leaderless_seconds_bucket", le="+Inf") == 0
    assert "# TYPE hypershift_private_capi_leaderless_seconds gauge" in text
    assert not [key for key in samples if key[0] == exporter.PREFIX + "leaderless_seconds"]


def test_a_malformed_figure_is_logged_once_by_name_as_kept_state():
    stream = io.StringIO()
    cache = exporter.FleetCache(JsonLogger("info", stream=stream))
    odd = _with_figure(migrated("odd-1"), "-3")
    cache.replace([odd, _with_figure(migrated("done-1"), "41.3")])
    cache.put(odd)  # the same problem again (a resync): not logged again
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert len(lines) == 1
    assert (lines[0]["namespace"], lines[0]["name"], lines[0]["level"]) == ("clusters", "odd-1", "warning")
    assert LEADERLESS_ANNOTATION in lines[0]["problem"] and "state kept" in lines[0]["msg"]


def test_the_figure_adds_one_series_per_hostedcluster():
    cache = exporter.FleetCache()
    cache.replace([_with_figure(migrated("done-%d" % index), "3") for index in range(5)])
    _text, samples = _scrape(cache)
    per_cluster = [key for key in samples if ("name", "done-3") in key[1]]
    assert len(per_cluster) == len(machine.STATES) + 3  # the states, start, end, the figure
