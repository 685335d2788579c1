"""The monitoring binaries in testenv/cluster/build.py: pinned by their own Go module, stamped with the Prometheus
release their module version is (no build here: tests/integration/monitoring builds and runs them)."""
from testenv.cluster import build


def test_prometheus_and_promtool_are_pinned_by_one_module_at_v0_316_0():
    for name in build.MONITORING_BINARIES:
        binary = build.BINARIES[name]
        assert not binary.envtest and binary.moddir == "prometheus"
        assert build.binary_version(binary) == ("github.com/prometheus/prometheus", "v0.316.0")
    assert build.cached_path("prometheus").parent.name == "prometheus-static-v0.316.0"
    assert build.cached_path("prometheus").parent == build.cached_path("promtool").parent
    # static targets only (the tests and the demo): no service discovery plugin is compiled in
    assert build.BINARIES["prometheus"].tags == build.BINARIES["promtool"].tags == ("remove_all_sd",)


def test_the_module_version_is_stamped_as_the_prometheus_release():
    assert build.prometheus_release("v0.316.0") == "3.16.0"
    assert build.prometheus_release("v0.309.1") == "3.9.1"
    flags = build._ldflags(build.BINARIES["promtool"], "v0.316.0", "2026-11-05T15:06:51Z")  # pylint: disable=protected-access
    assert "-X github.com/prometheus/common/version.Version=3.16.0" in flags
