"""Structured JSON logs on stderr, one line per event, with a request id; credentials never appear."""
import asyncio
import json
import re
import sys
import time

try:
    import orjson
except ImportError:  # pragma: no cover - the stdlib writes the same lines, slower
    orjson = None

LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
_PENDING_LINES_MAX = 256  # more pending lines are written as they come, 256 at a time
# Debug and info lines wait at most this long to be written with others (a process killed meanwhile loses them);
# warnings and errors go out at the loop's next turn, with whatever waits before them.
BATCH_SECONDS = 0.1
_AT_NEXT_TURN = LEVELS["warning"]
# Defence in depth: nothing should ever pass a credential here, but scrub anything that looks like one.
_SECRET_PATTERNS = (
    re.compile(r"(?i)((?:bearer|basic)\s+)[^\s\"',]+"),
    re.compile(r"(?i)((?:access_)?token=)[^&\s\"']+"),
    re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    # any Authorization value, however malformed: "Authorization : x", "authorization:\ttoken\x01"
    re.compile(r"(?i)(authorization\W{0,8}?(?:\s|:|=)\W{0,8})[^\s\"',]+"),
)


def _json_line(record):
    """record as one line of JSON text (orjson: a tenth of the stdlib's time, the same text for these values)."""
    if orjson is not None:
        try:
            return orjson.dumps(record, default=str).decode()
        except TypeError:  # integers beyond 64 bits, lone surrogates: the stdlib writes those
            pass
    return json.dumps(record, default=str, ensure_ascii=False, separators=(",", ":"))


def scrub(text):
    lowered = text.lower()
    # Each pattern only runs when its literal part occurs (a plain substring test costs a tenth of a regex scan).
    present_parts = ("bearer" in lowered or "basic" in lowered, "token=" in lowered, "eyJ" in text,
                     "authorization" in lowered)
    if True not in present_parts:  # nearly every line
        return text
    for pattern, present in zip(_SECRET_PATTERNS, present_parts):
        if present:
            text = pattern.sub(lambda match: (match.group(1) if match.groups() else "") + "<redacted>", text)
    return text


class JsonLogger(object):
    """One JSON line per event. Inside a running event loop lines are gathered and written together, in order: a
    warning or an error with whatever is pending at the loop's next turn, debug and info lines (a request's line,
    one per request) at most BATCH_SECONDS later, so that a busy proxy writes a few times a second instead of once
    per request (a write to stderr per request was a tenth of a GET's CPU); elsewhere each at once. flush() writes
    what is pending (the proxy does once its loop has ended)."""

    def __init__(self, level="info", stream=None, component="capi-proxy"):
        if level not in LEVELS:
            raise ValueError("log level must be one of %s, got %r" % (", ".join(LEVELS), level))
        self.threshold = LEVELS[level]
        self.stream = stream or sys.stderr
        self.component = component
        self._pending = []  # lines not written yet, in order
        self._pending_loop = None  # the loop that flushes them
        # their flush: at the next turn (a Handle: warnings, errors) or BATCH_SECONDS later (a TimerHandle)
        self._flush_handle = None

    def enabled(self, level):
        return LEVELS[level] >= self.threshold

    def log(self, level, message, **fields):
        if LEVELS[level] < self.threshold:
            return
        self.write(level, message, fields)

    def write(self, level, message, fields):
        """One line of message and fields (a dict, in its order), whatever the level (callers check enabled())."""
        record = {"ts": "%.3f" % time.time(), "level": level, "component": self.component, "msg": message}
        record.update(fields)
        line = scrub(_json_line(record)) + "\n"
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        pending = self._pending
        urgent = LEVELS[level] >= _AT_NEXT_TURN
        if pending:
            if loop is self._pending_loop and len(pending) < _PENDING_LINES_MAX:
                pending.append(line)
                if urgent and isinstance(self._flush_handle, asyncio.TimerHandle):  # due later: bring it forward
                    self._flush_handle.cancel()
                    self._schedule(loop, True)
                return
            self.flush()  # another loop's lines (or too many): out first, in order
        if loop is None:  # no event loop: the line goes out now
            self._write(line)
            return
        pending.append(line)
        self._pending_loop = loop
        self._schedule(loop, urgent)

    def _schedule(self, loop, at_next_turn):
        self._flush_handle = loop.call_soon(self.flush) if at_next_turn else loop.call_later(BATCH_SECONDS, self.flush)

    def flush(self):
        """Write the pending lines now (the event loop does when they are due)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if self._pending:
            text = "".join(self._pending)
            del self._pending[:]
            self._pending_loop = None
            self._write(text)

    def _write(self, text):
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass  # a closed stderr must not take requests down

    def debug(self, message, **fields):
        self.log("debug", message, **fields)

    def info(self, message, **fields):
        self.log("info", message, **fields)

    def warning(self, message, **fields):
        self.log("warning", message, **fields)

    def error(self, message, **fields):
        self.log("error", message, **fields)
