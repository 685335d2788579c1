"""`capi-proxy wait-ready` (capi_proxy/waitready.py), the sidecar's postStart hook: it returns once the proxy answers
/readyz 200, or after its timeout, and exits 0 either way."""
import http.server
import socket
import threading

import pytest

from capi_proxy.__main__ import main
from capi_proxy.waitready import wait_ready


class FakeClock(object):
    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def test_it_returns_at_the_first_ready_answer():
    fake, answers = FakeClock(), iter([False, False, True])
    ready, waited = wait_ready(8080, 60, interval=0.2, clock=fake.clock, sleep=fake.sleep,
                               probe=lambda port, timeout: next(answers))
    assert ready and waited == pytest.approx(0.4) and fake.sleeps == [0.2, 0.2]


def test_it_gives_up_at_the_timeout_without_sleeping_past_it():
    fake = FakeClock()
    ready, waited = wait_ready(8080, 0.5, interval=0.2, clock=fake.clock, sleep=fake.sleep,
                               probe=lambda port, timeout: False)
    assert not ready and waited == pytest.approx(0.5)
    assert fake.sleeps == pytest.approx([0.2, 0.2, 0.1])


class Readyz(http.server.BaseHTTPRequestHandler):
    not_ready_answers = 2
    paths = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        Readyz.paths.append(self.path)
        status = 503 if len(Readyz.paths) <= Readyz.not_ready_answers else 200
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_on_loopback_it_waits_through_503_until_200_and_exits_0(capsys):
    server = http.server.HTTPServer(("127.0.0.1", 0), Readyz)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Readyz.paths = []
    try:
        assert main(["wait-ready", "--port=%d" % server.server_address[1], "--timeout=10"]) == 0
    finally:
        server.shutdown()
    assert Readyz.paths == ["/readyz"] * 3
    assert "ready after" in capsys.readouterr().err


def test_nothing_listening_it_exits_0_after_the_timeout_saying_so(capsys):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert main(["wait-ready", "--port=%d" % port, "--timeout=0.3"]) == 0
    assert "not ready after 0.3 s; the other containers start all the same" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["--port=0"], ["--port=8080", "--timeout=-1"], ["--port=x"]])
def test_bad_arguments_are_refused(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["wait-ready"] + argv)
    assert exit_info.value.code == 2
    assert "capi-proxy wait-ready" in capsys.readouterr().err
