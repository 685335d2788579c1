"""testenv's free_port: a port is claimed across processes (a reservation file), a dead owner's claim taken over."""
import os
import subprocess
import sys

from testenv.cluster import cluster


def test_a_port_is_claimed_once_and_a_dead_owners_claim_is_taken_over(tmp_path, monkeypatch):
    monkeypatch.setattr(cluster, "PORT_RESERVATIONS", tmp_path)
    assert cluster._reserve(24001) is True
    assert (tmp_path / "24001").read_text() == str(os.getpid())
    assert cluster._reserve(24001) is False  # this process holds it already
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (tmp_path / "24002").write_text(str(live.pid))
        assert cluster._reserve(24002) is False  # a live process holds it
    finally:
        live.kill()
        live.wait()
    assert cluster._reserve(24002) is True  # its owner is gone: taken over
    (tmp_path / "24003").write_text("")  # being written by its owner
    assert cluster._reserve(24003) is False


def test_free_port_hands_out_claimed_ports(tmp_path, monkeypatch):
    monkeypatch.setattr(cluster, "PORT_RESERVATIONS", tmp_path)
    ports = {cluster.free_port() for _ in range(5)}
    assert len(ports) == 5
    assert {int(path.name) for path in tmp_path.iterdir()} >= {p for p in ports if p < cluster._ephemeral_low()}
