"""The fleet bench's pre-install play (PRIVATE_CAPI_BENCH_PREINSTALL): its summary read, an incomplete one refused."""
import json

import pytest

from benchmarks import bench_fleet


def _summary(tmp_path, by_status):
    path = tmp_path / "preinstall.json"
    path.write_text(json.dumps({"fleet": {"hostedclusters": sum(by_status.values()), "by_status": by_status,
                                          "pods_replaced": 12, "longest_unready_seconds": 0.0,
                                          "rollout_p50_seconds": 40.0}}))
    return str(path)


def test_the_preinstall_figures_are_read_when_every_hostedcluster_was_preinstalled(tmp_path):
    figures = bench_fleet.preinstall_figures(_summary(tmp_path, {"preinstalled": 2}), 2)
    assert (figures["pods_replaced"], figures["rollout_p50_seconds"]) == (12, 40.0)


@pytest.mark.parametrize("by_status", [{"preinstalled": 1, "failed": 1}, {"unchanged": 2}, {"preinstalled": 1}])
def test_a_preinstall_that_left_one_out_is_refused(tmp_path, by_status):
    with pytest.raises(RuntimeError, match="expected 2 HostedClusters pre-installed"):
        bench_fleet.preinstall_figures(_summary(tmp_path, by_status), 2)


def test_the_preinstall_switch_takes_only_0_or_1(monkeypatch):
    monkeypatch.setenv("PRIVATE_CAPI_BENCH_PREINSTALL", "0")
    assert bench_fleet.preinstall_first() is False
    monkeypatch.delenv("PRIVATE_CAPI_BENCH_PREINSTALL")
    assert bench_fleet.preinstall_first() is True
    monkeypatch.setenv("PRIVATE_CAPI_BENCH_PREINSTALL", "yes")
    with pytest.raises(SystemExit, match="must be 1"):
        bench_fleet.preinstall_first()
