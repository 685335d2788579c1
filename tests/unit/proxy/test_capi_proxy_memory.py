"""The proxy's memory care: the trim after bursts, the trust store it does not load, watch relays that keep nothing."""
import asyncio
import os
import platform


from capi_proxy.proxy import memory, watch
from capi_proxy.errors import ProxyError
from capi_proxy.kubeconfig import trust_only_the_named_ca


class FakeHandle(object):
    def __init__(self, delay, callback):
        self.delay = delay
        self.callback = callback
        self.cancelled = False

    def cancel(self):
        self.cancelled = True


class FakeLoop(object):
    def __init__(self):
        self.handles = []

    def call_later(self, delay, callback):
        self.handles.append(FakeHandle(delay, callback))
        return self.handles[-1]

    def fire_pending(self):
        for handle in [handle for handle in self.handles if not handle.cancelled]:
            handle.cancelled = True
            handle.callback()


def make_trimmer(delay=1.0):
    loop, calls, trims = FakeLoop(), [], []
    trimmer = memory.Trimmer(lambda: loop, delay, trim=calls.append, on_trim=lambda: trims.append(1))
    return trimmer, loop, calls, trims


def test_trim_runs_once_after_the_last_release_of_a_burst():
    trimmer, loop, calls, trims = make_trimmer(delay=1.5)
    for _release in range(5):
        trimmer.released()
    assert [handle.delay for handle in loop.handles] == [1.5] * 5
    assert [handle.cancelled for handle in loop.handles] == [True] * 4 + [False]  # each release pushes the trim back
    assert calls == []
    loop.fire_pending()
    assert calls == [0] and trims == [1]
    trimmer.released()
    loop.fire_pending()
    assert calls == [0, 0]


def test_small_bodies_do_not_trim_large_ones_do():
    trimmer, loop, _calls, _trims = make_trimmer()
    trimmer.released_body(memory.LARGE_BODY_BYTES - 1)
    assert loop.handles == []
    trimmer.released_body(memory.LARGE_BODY_BYTES)
    assert len(loop.handles) == 1


def test_delay_zero_or_no_malloc_trim_turns_it_off(monkeypatch):
    trimmer, loop, _calls, _trims = make_trimmer(delay=0)
    trimmer.released()
    assert not trimmer.available and loop.handles == []
    monkeypatch.setattr(memory, "find_malloc_trim", lambda: None)  # a C library without it (musl, macOS)
    missing = memory.Trimmer(lambda: loop, 1.0)
    missing.released()
    assert not missing.available and loop.handles == []


def test_cancel_drops_a_pending_trim():
    trimmer, loop, calls, _trims = make_trimmer()
    trimmer.released()
    trimmer.cancel()
    loop.fire_pending()
    assert calls == []


def test_malloc_trim_is_found_on_glibc_and_callable():
    function = memory.find_malloc_trim()
    if platform.libc_ver()[0] == "glibc":  # every machine this project runs on (Debian)
        assert function is not None, "glibc has malloc_trim: find_malloc_trim must find it"
    if function is not None:
        assert function(0) in (0, 1)


def test_only_a_kubeconfig_that_names_its_ca_empties_the_default_trust_store():
    environ = {}
    assert trust_only_the_named_ca(make_upstream(is_tls=True, names_ca=True), environ)
    assert environ == {"SSL_CERT_FILE": os.devnull, "SSL_CERT_DIR": os.devnull}
    for is_tls, names_ca in ((True, False), (False, False), (False, True)):
        environ = {}
        assert not trust_only_the_named_ca(make_upstream(is_tls=is_tls, names_ca=names_ca), environ)
        assert environ == {}  # a publicly trusted API server still verifies against the system store


def make_upstream(is_tls, names_ca):
    upstream = type("Upstream", (), {})()
    upstream.is_tls = is_tls
    upstream.names_ca = names_ca
    return upstream


def test_complete_lines_translates_whole_lines_and_keeps_the_tail():
    pending = bytearray(b'{"a":1}\n\n{"b":2}\n{"c"')
    output, consumed, events, failed = watch.complete_lines(pending, lambda line: line.upper() + b"\n")
    assert output == b'{"A":1}\n{"B":2}\n' and consumed == len(b'{"a":1}\n\n{"b":2}\n') and events == 2 and not failed


def test_complete_lines_ends_with_an_error_event_when_a_line_fails():
    def transform(line):
        if b"bad" in line:
            raise ProxyError(500, "cannot translate a watch event: bad")
        return line + b"\n"

    output, consumed, events, failed = watch.complete_lines(bytearray(b'{"ok":1}\n{"bad":1}\n{"later":1}\n'), transform)
    assert failed and events == 1 and consumed == len(b'{"ok":1}\n{"bad":1}\n')
    first, error = output.splitlines()
    assert first == b'{"ok":1}' and b'"type": "ERROR"' in error and b"bad" in error


class FakeContent(object):
    def __init__(self, chunks):
        self.chunks = chunks

    async def iter_any(self):
        for chunk in self.chunks:
            yield chunk


class FakeClient(object):
    def __init__(self):
        self.writes = []

    async def write(self, data):
        self.writes.append(data)


def relay(chunks, max_event_bytes=watch.DEFAULT_MAX_EVENT_BYTES):
    upstream = type("Response", (), {"content": FakeContent(chunks)})()
    client, counted = FakeClient(), []
    events = asyncio.run(watch.relay_events(upstream, client, lambda line: line.replace(b"x", b"y") + b"\n",
                                            max_event_bytes, on_event=counted.append))
    return events, client.writes, counted


def test_relay_writes_each_event_as_soon_as_its_line_is_complete():
    events, writes, counted = relay([b'{"x":', b'1}\n{"x":2}', b'\n', b'{"x":3}'])
    assert events == 3
    assert writes == [b'{"y":1}\n', b'{"y":2}\n', b'{"y":3}\n']  # the last one: the stream ended without a newline
    assert counted == [1, 1]


def test_relay_ends_an_oversized_event_with_an_error():
    events, writes, _counted = relay([b'{"x":"' + b"a" * 64, b"a" * 64], max_event_bytes=100)
    assert events == 0 and len(writes) == 1 and b"larger than 100 bytes" in writes[0]


def test_default_trim_waits_for_the_client_sweep_of_closed_tls_connections():
    """aiohttp frees a closed upstream TLS connection only at its next sweep of closed transports: a trim scheduled
    before that sweep gives nothing back (on kube-apiserver after 200 watches: 55 MB with 1.5 s, 46.5 MB with 2.2 s)."""
    import aiohttp.connector  # pylint: disable=import-outside-toplevel
    sweep = aiohttp.connector.TCPConnector._cleanup_closed_period  # pylint: disable=protected-access
    assert memory.DEFAULT_DELAY_SECONDS >= sweep + 0.5
