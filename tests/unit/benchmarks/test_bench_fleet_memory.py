"""The fleet benchmark's memory check (benchmarks/bench_fleet.py): a run whose estimate does not fit the machine is
refused before anything starts, naming the estimate and how many HostedClusters fit; the peak sampler's arithmetic."""
import pytest

from benchmarks import bench_fleet


def test_a_fleet_that_fits_is_not_refused_and_one_that_does_not_is_refused_with_its_estimate():
    assert bench_fleet.memory_refusal(10, "zero_stop", 23000) is None
    refusal = bench_fleet.memory_refusal(100, "zero_stop", 23000)
    estimate, reckoning = bench_fleet.memory_estimate(100, "zero_stop")
    assert estimate == bench_fleet.FIXED_MB + 100 * (74 + 215)
    assert "100 HostedClusters (strategy zero_stop) need about %d MB (%s)" % (estimate, reckoning) in refusal
    assert "23000 MB available (MemAvailable) less a 1024 MB reserve; at most 72 fit" in refusal
    assert "PRIVATE_CAPI_BENCH_FLEET=72" in refusal and "PRIVATE_CAPI_BENCH_MEMORY_CHECK=0" in refusal
    # scale_down puts no sidecar in: the same machine takes more of them
    assert bench_fleet.memory_refusal(100, "scale_down", 23000) is None


def test_the_shared_topology_counts_two_proxies_per_hostedcluster_and_fits_100_in_this_machine():
    estimate, reckoning = bench_fleet.memory_estimate(100, "zero_stop", "shared")
    assert estimate == bench_fleet.FIXED_MB + 100 * (74 + 100) and "100 MB of API proxies (shared)" in reckoning
    assert bench_fleet.memory_refusal(100, "zero_stop", 23000, "shared") is None
    assert "at most 120 fit" in bench_fleet.memory_refusal(200, "zero_stop", 23000, "shared")


def test_a_machine_without_room_for_one_says_none_fit():
    assert "at most 0 fit" in bench_fleet.memory_refusal(1, "zero_stop", 1500)


def test_main_refuses_before_it_makes_anything(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIVATE_CAPI_BENCH_FLEET", "1000")
    monkeypatch.setattr(bench_fleet, "available_mb", lambda: 24000)
    made = []
    monkeypatch.setattr(bench_fleet.tempfile, "mkdtemp", lambda **kw: made.append(kw) or str(tmp_path))
    with pytest.raises(bench_fleet.MemoryRefused) as stopped:
        bench_fleet.main()
    assert "refused before starting anything: 1000 HostedClusters" in str(stopped.value) and made == []


def test_the_peak_is_the_most_in_use_beyond_the_baseline():
    readings = iter([20000, 19000, 12000, 15000] + [15000] * 1000)
    with bench_fleet.MemoryPeak(interval=0.001, read=lambda: next(readings)) as memory:
        while memory.lowest > 12000:
            pass
    assert memory.baseline == 20000 and memory.peak_mb() == 8000


def test_available_memory_is_read_from_meminfo(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24576000 kB\nMemAvailable:   20480000 kB\n")
    assert bench_fleet.available_mb(str(meminfo)) == 20000
    meminfo.write_text("MemTotal:       24576000 kB\n")
    with pytest.raises(SystemExit):
        bench_fleet.available_mb(str(meminfo))
