"""Deeply nested documents: answered correctly up to the API server's own limit, refused past it, never a crash.

The Kubernetes API server accepts JSON nested 10,000 levels deep. Parsing, translating and encoding such a
document recurses once or twice per level, past Python's default limit of 1,000 frames, and C extensions
recurse on the C stack, where running out is a segmentation fault, not an exception. So every body is first
handled on the calling thread under the default limit (no document a real controller writes comes near it);
one that runs out of depth is handled again from its raw bytes on a thread of its own with a large stack and
a recursion limit sized for it, after its exact depth has been checked against MAX_DEPTH.
"""
import itertools
import re
import sys
import threading

MAX_OBJECT_DEPTH = 10000  # k8s.io/apimachinery's JSON nesting limit for one object
MAX_DEPTH = MAX_OBJECT_DEPTH + 4  # plus a List, WatchEvent or ConversionReview around it
DEEP_STACK_BYTES = 256 * 1024 * 1024  # address space only: pages are touched as deep as a document goes
DEEP_RECURSION_LIMIT = 20 * MAX_DEPTH  # ~6 frames per level at most; far below what the stack above holds
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")
_BRACKET_STEP = [1 if code in b"[{" else -1 for code in range(256)]
_DEEP_LOCK = threading.Lock()


class DocumentTooDeep(ValueError):
    """A document nested deeper than the proxy (and the API server) handles."""

    def __init__(self, limit, advice=None):
        super().__init__("it is nested too deeply (%s)" % advice if advice else
                         "it is nested more than %d levels deep; the API server refuses objects nested deeper than "
                         "%d levels" % (limit, MAX_OBJECT_DEPTH))
        self.limit = limit


def json_depth(raw, limit=MAX_DEPTH):
    """The nesting depth of the JSON text raw (bytes), at most limit + 1 (more than limit).

    Exact for valid JSON: brackets inside strings do not count. C-speed iteration over the brackets alone.
    """
    if raw.count(b"[") + raw.count(b"{") == 0:
        return 0
    brackets = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    return min(limit + 1, max(itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets))))


JSON = "json"  # raw is JSON text (or YAML, which bodies.decode keeps off the deep thread): depth checked first
TREE = "tree"  # raw is a parsed document from a checked body: straight to the deep thread


def run(work, raw, *args, limit=MAX_DEPTH, kind=JSON):
    """work(raw, *args) on this thread; if it runs out of depth, again on a deep thread (DocumentTooDeep past limit).

    work must build everything from raw (it may run twice) and return plain values (bytes, tuples).
    """
    try:
        return work(raw, *args)
    except RecursionError:
        pass
    if kind == JSON and json_depth(raw, limit) > limit:
        raise DocumentTooDeep(limit)
    return on_deep_thread(work, raw, *args, limit=limit)


def on_deep_thread(work, *args, limit=MAX_DEPTH):
    """work(*args) on a fresh thread with a large stack and a raised recursion limit; its result or exception.

    The caller waits, so nothing else runs Python meanwhile on its thread (the event loop): the process-wide
    recursion limit is raised only for that time, and only one deep document is handled at once.
    """
    outcome = {}

    def target():
        try:
            outcome["value"] = work(*args)
        except RecursionError:
            outcome["error"] = DocumentTooDeep(limit)
        except BaseException as exc:  # pylint: disable=broad-except  # re-raised on the caller's thread
            outcome["error"] = exc

    with _DEEP_LOCK:
        thread = threading.Thread(target=target, name="capi-proxy-deep-document", daemon=True)
        previous_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous_limit, DEEP_RECURSION_LIMIT))
        previous_stack = threading.stack_size(DEEP_STACK_BYTES)  # read when the thread starts
        try:
            thread.start()
        finally:
            threading.stack_size(previous_stack)
        try:
            thread.join()
        finally:
            sys.setrecursionlimit(previous_limit)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
