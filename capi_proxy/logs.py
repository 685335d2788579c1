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
_HEADS_REMEMBERED = 256  # (level, message) pairs: messages are the code's own words, this only bounds the memo
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
    # "token=", "eyJ" and "authorization" are only looked for where a character of theirs that a request's line
    # seldom holds occurs ("=", "J", "z"): a one-character test is memchr's, far cheaper than a word's search (the
    # searches of a request's line: 5,600 -> 3,000 instructions under callgrind).
    present_parts = ("bearer" in lowered or "basic" in lowered, "=" in lowered and "token=" in lowered,
                     "J" in text and "eyJ" in text, "z" in lowered and "authorization" in lowered)
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
        self._heads = {}  # (level, message) -> the line's text between "ts" and the fields, see write

    def enabled(self, level):
        return LEVELS[level] >= self.threshold

    def log(self, level, message, **fields):
        if LEVELS[level] < self.threshold:
            return
        self.write(level, message, fields)

    def write(self, level, message, fields):
        """One line of message and fields (a dict, in its order), whatever the level (callers check enabled())."""
        line = self._fields_line(level, message, fields)
        if line is None:
            record = {"ts": "%.3f" % time.time(), "level": level, "component": self.component, "msg": message}
            record.update(fields)
            line = _json_line(record)
        line = scrub(line) + "\n"
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

    def _fields_line(self, level, message, fields):
        """_json_line of write's record, built from the fields' encoding and the text of level, component and message
        (encoded once per level and message): the record's dict, its update and the encoding of its constant part
        cost more than the rest of the encoding (with scrub's cheaper tests: a request's line 28,400 -> 22,500
        instructions under callgrind). None where only the record gives the line: a message not a str, fields not a
        plain dict, empty, naming a key of the record's own, or not encoded by orjson."""
        # exact types: a str or dict subclass may encode otherwise (orjson refuses some), the record's way takes it
        plain = type(message) is str and type(fields) is dict  # pylint: disable=unidiomatic-typecheck
        if orjson is None or not plain or not fields \
                or "ts" in fields or "level" in fields \
                or "component" in fields or "msg" in fields:  # four lookups: a tenth of isdisjoint's walk of the keys
            return None
        head = self._heads.get((level, message))
        if head is None:
            try:
                head = orjson.dumps({"level": level, "component": self.component, "msg": message},
                                    default=str)[1:-1].decode()
            except TypeError:
                head = ""
            if len(self._heads) < _HEADS_REMEMBERED:
                self._heads[(level, message)] = head
        if not head:
            return None
        try:
            encoded = orjson.dumps(fields, default=str)
        except TypeError:  # the stdlib writes the record (integers beyond 64 bits, lone surrogates)
            return None
        return '{"ts":"%.3f",%s,%s' % (time.time(), head, encoded[1:].decode())

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
