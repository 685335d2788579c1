"""A LIST answer translated while it streams in from the API server. Pure: bytes in, bytes out, no I/O.

kube-apiserver (1.33 and later: StreamingCollectionEncodingToJSON) writes a List of custom resources item by item,
`{"apiVersion":"<group>/<version>","items":[{...},{...}],"kind":"<Kind>List","metadata":{...}}` (keys sorted, no
spaces), over the whole time it takes to encode them (500 Machines: about 8 ms of a 15 ms LIST). Translating each
batch of complete items as it arrives hides the proxy's parse, walk and encode behind the server's own encoding;
only the last item and the List's own fields wait for the end of the body.

The result is byte for byte what translating the whole body gives (Translator.response_bytes: bodies.loads, the
core's in-place walk, bodies.dumps), or nothing: whatever the stream does not recognise (another layout, a number or
string orjson cannot read exactly, an item the core refuses, a List kind with a shape of its own) turns it off, and
the whole body then takes the usual path, which answers it (errors included).
"""
import re
import time

from capi_proxy import bodies
from capi_proxy.core import TO_STANDARD, CapiTranslationError, list_items_alone, translate_items_in_place

# The List's head up to its items: apiVersion first, as encoding/json sorts a map's keys (kind and metadata follow).
_HEAD = re.compile(rb'\{"apiVersion":("(?:[^"\\\x00-\x1f]|\\.)*"),"items":\[')
_HEAD_START = b'{"apiVersion":"'
_HEAD_MAX_BYTES = 1024
# Two items meet at "},{"; so do two objects of an array inside an item (ownerReferences), where the batch up to
# it does not parse: the stream tries the next boundary back, a few times, then waits for more bytes.
_SEPARATOR = b"},{"
_TRIES = 8
# Bytes waiting for a boundary (one huge item, or a layout the stream misreads) before it gives up: that body
# takes the usual path.
MAX_PENDING_BYTES = 4 * 1024 * 1024
# What the stream gives up on: anything the whole-body path then answers with its own words.
_GIVE_UP = (ValueError, TypeError, RecursionError)  # bodies.NotExact and CapiTranslationError are ValueErrors

HEAD, ITEMS, OFF = "head", "items", "off"


class ListStream(object):
    """The items of one LIST answer, translated to the standard groups batch by batch (feed), then the whole
    translated List (finish) or None."""

    __slots__ = ("group_map", "markers", "state", "pending", "parts", "api_version", "seconds")

    def __init__(self, group_map, markers):
        self.group_map = group_map
        self.markers = markers  # bodies.markers(group_map, TO_STANDARD): the whole-body path translates only these
        self.state = HEAD
        self.pending = b""  # bytes not yet translated
        self.parts = []  # translated batches: items without their brackets
        self.api_version = None
        self.seconds = 0.0  # time spent translating (the translation_duration_seconds metric)

    @property
    def active(self):
        return self.state != OFF

    def feed(self, chunk):
        """The next bytes of the body: every complete item so far translated (or the stream turned off)."""
        if self.state == OFF:
            return
        started = time.perf_counter()
        self.pending += chunk
        try:
            if self.state == HEAD:
                self._head()
            if self.state == ITEMS:
                self._items()
        except _GIVE_UP:
            self.off()
        self.seconds += time.perf_counter() - started

    def finish(self):
        """The whole translated List once the body has ended, or None (the stream is off, or the body's end is not
        a List's): then the whole body takes the usual path."""
        if self.state != ITEMS:
            self.off()
            return None
        started = time.perf_counter()
        try:
            return self._finish()
        except _GIVE_UP:
            return None
        finally:
            self.seconds += time.perf_counter() - started
            self.off()

    def off(self):
        self.state = OFF
        self.pending = b""
        self.parts = []

    def _head(self):
        match = _HEAD.match(self.pending)
        if match is None:
            seen = self.pending[:len(_HEAD_START)]
            if not _HEAD_START.startswith(seen) or len(self.pending) >= _HEAD_MAX_BYTES:
                self.off()  # not a List as kube-apiserver streams one (a Table, a Status, pretty-printed JSON)
            return
        api_version = match.group(1)
        if not bodies.contains_any(api_version, self.markers):
            self.off()  # nothing the usual path would translate: it passes such a body through as it is
            return
        self.api_version = bodies.loads_exact(api_version)
        self.pending = self.pending[match.end():]
        self.state = ITEMS

    def _items(self):
        pending = self.pending
        cut = pending.rfind(_SEPARATOR)
        for _try in range(_TRIES):
            if cut < 0:
                break
            try:
                items = bodies.loads_exact(b"[" + pending[:cut + 1] + b"]")
            except bodies.InexactNumber:
                raise
            except bodies.NotExact:  # not a boundary between items (or not JSON orjson reads: given up below)
                cut = pending.rfind(_SEPARATOR, 0, cut)
                continue
            self._translate(items)
            self.pending = pending[cut + 2:]
            return
        if len(pending) > MAX_PENDING_BYTES:
            self.off()

    def _translate(self, items):
        translate_items_in_place(items, TO_STANDARD, self.group_map)
        self.parts.append(bodies.dumps_exact(items)[1:-1])

    def _finish(self):
        pending = self.pending
        end = pending.rfind(b"]")
        tail = None
        for _try in range(_TRIES):
            if end < 0:
                return None
            tail = _tail(pending[end + 1:])
            if tail is not None:
                break
            end = pending.rfind(b"]", 0, end)
        if tail is None:
            return None
        if end > 0:
            self._translate(bodies.loads_exact(b"[" + pending[:end] + b"]"))
        document = {"apiVersion": self.api_version, "items": []}
        document.update(tail)
        if not list_items_alone(document.get("kind")):
            return None
        try:
            document = bodies.translate_response(document, TO_STANDARD, self.group_map, in_place=True)
        except CapiTranslationError:
            return None
        encoded = bodies.dumps_exact(document)
        head = b'{"apiVersion":' + bodies.dumps_exact(document["apiVersion"]) + b',"items":['
        if not encoded.startswith(head + b"]"):
            return None
        return b"".join((head, b",".join(part for part in self.parts if part), encoded[len(head):]))


def _tail(text):
    """The List's fields after its items (`,"kind":...,"metadata":{...}}`), or None if text is not that end."""
    if text[:1] == b",":
        try:
            fields = bodies.loads_exact(b"{" + text[1:])
        except bodies.NotExact:
            return None
    elif text.strip() == b"}":
        fields = {}
    else:
        return None
    if not isinstance(fields, dict) or "apiVersion" in fields or "items" in fields:
        return None  # a repeated key: the whole-body reading (the last one wins) would differ
    return fields
