"""The proxy's fast paths give the same results as the plain ones: JSON codec, log scrubbing, GC pause, TLS buffer."""
import asyncio.sslproto
import gc
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capi_proxy import bodies, logs
from capi_proxy.proxy.translation import gc_paused
from capi_proxy.upstream import limit_tls_read_buffer
from tests.unit.strategies import proxy_json_values as json_values
from tests.unit.translate.test_capi_groups import EXAMPLE_OBJECTS

# Integers beyond what orjson reads exactly (it would make floats of them), floats, escapes, non-ASCII text.
EDGE_DOCUMENTS = [
    b'{"a": 18446744073709551616}', b'[-9223372036854775809]', b'[18446744073709551615, -9223372036854775808]',
    b'{"n": 123456789012345678901234567890}', b'{"x": "1234567890123456789012", "y": 1}', b'[1.5, -0.0, 1e16, 1E-7]',
    b'{"s": "caf\\u00e9 \\"q\\" \\\\ \\/ \\n \\ud83d\\ude00"}', '{"s": "\u00e9\U0001f600"}'.encode(), b'{"a":1,"a":2}',
    b'\xef\xbb\xbf{"bom": true}', b'{"lone": "\\ud800"}', b'  [ ]  ', b'null', b'"text"', b'0',
]


@pytest.mark.parametrize("raw", EDGE_DOCUMENTS)
def test_loads_reads_what_the_stdlib_reads(raw):
    expected = json.loads(raw)
    document = bodies.loads(raw)
    assert document == expected and json.dumps(document) == json.dumps(expected)  # types too: 2**64 stays an int
    if b"\\ud800" in raw:  # a lone surrogate has no UTF-8 form: refused on the way out, as the stdlib encoder does
        with pytest.raises(UnicodeEncodeError):
            bodies.dumps(document)
    else:
        assert json.loads(bodies.dumps(document)) == expected


@pytest.mark.parametrize("raw", [b"NaN", b"[Infinity]", b'{"a": -Infinity}', b"[1e400]", b"[-1e999]", b"{", b"",
                                 b'{"a": 1} x', b"\xff"])
def test_loads_refuses_what_is_not_rfc_8259_json(raw):
    with pytest.raises(ValueError):
        bodies.loads(raw)


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_loads_and_dumps_agree_with_the_stdlib(value):
    raw = json.dumps(value, ensure_ascii=False).encode()
    document = bodies.loads(raw)
    assert json.dumps(document) == json.dumps(value)  # same values, same key order, ints stay ints
    assert json.loads(bodies.dumps(document)) == value
    assert bodies.loads(json.dumps(value).encode()) == value  # ASCII-escaped input too


@pytest.mark.parametrize("obj", EXAMPLE_OBJECTS[:40])
def test_examples_round_trip_through_the_codec(obj):
    raw = json.dumps(obj, default=str).encode()
    assert bodies.loads(raw) == json.loads(raw)
    assert json.loads(bodies.dumps(bodies.loads(raw))) == json.loads(raw)


def reference_scrub(text):
    """The scrubber without its substring pre-checks: every pattern always runs."""
    for pattern in logs._SECRET_PATTERNS:  # pylint: disable=protected-access
        text = pattern.sub(lambda match: (match.group(1) if match.groups() else "") + "<redacted>", text)
    return text


SECRETS = st.sampled_from(["Bearer abc.def", "bearer  x", "BEARER\tq", "token=s3cr3t&a=1", "access_token=zz", "TOKEN=1",
                           "eyJhbGciOiJI.eyJzdWIiOiJib2IifQ.sig", "to\u212aen=x", "Bearer", "token", "eyJ",
                           "Authorization: x", "AUTHORIZATION=y", "authori\u017ation:\tz", "auth", "=", "z", "J"])


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.one_of(SECRETS, st.text(max_size=10)), max_size=6))
def test_scrub_equals_the_plain_regex_scrub(parts):
    text = " ".join(parts)
    assert logs.scrub(text) == reference_scrub(text)


def test_scrub_redacts_tokens():
    line = logs.scrub('{"h": "Bearer abc.def", "q": "/x?token=s3cr3t&a=1", "jwt": "eyJhbGciOiJI.eyJzdWIiOiJib2IifQ.sig"}')
    assert "abc.def" not in line and "s3cr3t" not in line and "eyJzdWIi" not in line
    assert line.count("<redacted>") == 3


def test_gc_paused_restores_the_collector_state():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # a caller that disabled it keeps it disabled
    finally:
        gc.enable()
    with pytest.raises(KeyError):
        with gc_paused():
            raise KeyError("x")
    assert gc.isenabled()


def test_tls_read_buffer_is_only_ever_lowered():
    protocol = asyncio.sslproto.SSLProtocol
    saved = protocol.max_size
    try:
        protocol.max_size = 256 * 1024
        limit_tls_read_buffer(16 * 1024)
        assert protocol.max_size == 16 * 1024
        limit_tls_read_buffer(64 * 1024)
        assert protocol.max_size == 16 * 1024
    finally:
        protocol.max_size = saved


def test_long_digit_runs_are_found_anywhere():
    raw = b'{"a": "x", "b": [%s]}'
    assert re.search(b"0{19}", (raw % b"1234567890123456789").translate(bodies._DIGITS_AS_ZERO))  # pylint: disable=protected-access
    assert bodies.loads(raw % b"1234567890123456789")["b"] == [1234567890123456789]
    assert bodies.loads(raw % b"99999999999999999999")["b"] == [99999999999999999999]
