"""Giving freed memory back to the system after a burst (a LIST of thousands of objects, a wave of watches).

CPython frees a parsed body or a closed watch to the C allocator, but glibc keeps pages that sit between
live allocations, so a sidecar's RSS stays at its peak for as long as the pod lives. After such a burst
the proxy asks glibc to return whatever is free (malloc_trim), at most once per interval and only once
the burst is over (a timer that each new release pushes back). Elsewhere (musl, macOS) it does nothing.
"""
import ctypes
import ctypes.util

# aiohttp's client keeps each closed TLS connection (its SSL object and buffers) until its next sweep of closed
# transports, every 2 s (TCPConnector, enable_cleanup_closed): a trim before that sweep finds those pages still in
# use (measured on kube-apiserver after 200 watches: 55 MB with 1.5 s, 46.5 MB with 2.2 s). aiohttp sweeps only where
# CPython's TLS transports need it (NEEDS_CLEANUP_CLOSED: Python 3.11, the image's, among them); elsewhere the
# connections go at once and the longer delay costs nothing. One second past the sweep:
DEFAULT_DELAY_SECONDS = 3.0
LARGE_BODY_BYTES = 256 * 1024  # a released body at least this large is worth a trim


def find_malloc_trim():
    """libc's malloc_trim, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        function = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_size_t,)
    function.restype = ctypes.c_int
    return function


class Trimmer(object):
    """released() after a burst ends; the trim runs on the event loop delay seconds after the last release."""

    def __init__(self, loop_getter, delay=DEFAULT_DELAY_SECONDS, trim=None, on_trim=None):
        self._loop_getter = loop_getter
        self._delay = delay
        self._trim = find_malloc_trim() if trim is None else trim
        self._on_trim = on_trim
        self._handle = None

    @property
    def available(self):
        return self._trim is not None and self._delay > 0

    def released(self):
        if not self.available:
            return
        if self._handle is not None:
            self._handle.cancel()
        self._handle = self._loop_getter().call_later(self._delay, self._run)

    def released_body(self, size):
        if size >= LARGE_BODY_BYTES:
            self.released()

    def _run(self):
        self._handle = None
        self._trim(0)
        if self._on_trim is not None:
            self._on_trim()

    def cancel(self):
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
