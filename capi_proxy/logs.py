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
_PENDING_LINES_MAX = 256  # a loop turn that logs more writes them as they come, 256 at a time
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
    """One JSON line per event. Inside a running event loop the lines of one loop turn go out together at the start of
    the next (one write, after the answers of this turn were handed to their sockets: a request's line costs its
    client no wait), in order; elsewhere each at once. flush() writes what is pending."""

    def __init__(self, level="info", stream=None, component="capi-proxy"):
        if level not in LEVELS:
            raise ValueError("log level must be one of %s, got %r" % (", ".join(LEVELS), level))
        self.threshold = LEVELS[level]
        self.stream = stream or sys.stderr
        self.component = component
        self._pending = []  # lines of this loop turn, in order
        self._pending_loop = None  # the loop that flushes them

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
        if pending:
            if loop is self._pending_loop and len(pending) < _PENDING_LINES_MAX:
                pending.append(line)
                return
            self.flush()  # another loop's lines (or too many): out first, in order
        if loop is None:  # no event loop: the line goes out now
            self._write(line)
            return
        pending.append(line)
        self._pending_loop = loop
        loop.call_soon(self.flush)

    def flush(self):
        """Write the pending lines now (the event loop does at its next turn)."""
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
