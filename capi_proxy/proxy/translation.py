"""Bodies in and out of the proxy: request bodies to the private groups (and the served version), answers and
watch events back to the client's view, discovery documents, adapted PATCHes. Pure: no I/O, no aiohttp.

Every rewrite is the collection's core (translate.groups / translate.versions through bodies, adaptation, crdview);
this module decides which rule a body needs and keeps the limits (nesting depth, the watch-event cache).
"""
import collections
import contextlib
import gc
import time

from capi_proxy import bodies, discovery, nesting

from capi_proxy.proxy import openapi
from capi_proxy.proxy.adaptation import apply_patch, convert_document
from capi_proxy.core import TO_PRIVATE, TO_STANDARD, CapiTranslationError
from capi_proxy.proxy.crdview import crd_view
from capi_proxy.errors import ProxyError
from capi_proxy.proxy.liststream import ListStream

CONVERTED_SUBRESOURCES = (None, "status")
# Every watcher of a resource receives the same event bytes: translate each distinct line once.
_EVENT_CACHE_ENTRIES = 512
_EVENT_CACHE_BYTES = 4 * 1024 * 1024  # lines and translations together: a bound on the cache's memory
_EVENT_CACHE_MAX_LINE = 256 * 1024
# Bodies from this size up are translated with the cycle collector paused (gc_paused); below it the pause costs more
# than it saves (one object, a few hundred allocations).
GC_PAUSE_BYTES = 64 * 1024


@contextlib.contextmanager
def gc_paused():
    """The cycle collector paused while a parsed JSON tree lives: trees are acyclic, reference counting frees
    them, and a 500-item list would otherwise set off several full-heap collections (7 ms of 11)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Translator(object):
    """The body rules of one proxy: its group map, --show-private, the CRDs' contract labels (a TimedCache whose
    last value conversion reads) and the metrics it counts translations in."""

    def __init__(self, group_map, show_private, crds, metrics):
        self.group_map = group_map
        self.show_private = show_private
        self.crds = crds
        self.metrics = metrics
        self.to_private_markers = bodies.markers(group_map, TO_PRIVATE)
        self.to_standard_markers = bodies.markers(group_map, TO_STANDARD)
        self._event_cache = collections.OrderedDict()
        self._event_cache_bytes = 0

    def request_body(self, route, body, content_type):
        if not bodies.is_translatable_type(content_type):
            return body  # protobuf/CBOR bodies cannot be translated; the server judges them
        convert = route.adapted and route.target.subresource in CONVERTED_SUBRESOURCES
        if not convert and not bodies.contains_any(body, self.to_private_markers):
            return body
        started = time.perf_counter()
        try:
            with gc_paused():
                translated = nesting.run(self._request_bytes, body, route, content_type, convert)
        except nesting.DocumentTooDeep as exc:
            self.metrics.translation_errors.inc("request")
            raise ProxyError(400, "the request body is refused: %s" % exc)
        except ProxyError:
            self.metrics.translation_errors.inc("request")
            raise
        self.metrics.translation_seconds.observe(time.perf_counter() - started, "request")
        return translated

    def _request_bytes(self, body, route, content_type, convert):
        document = bodies.decode(body, content_type, "the request body")
        document = bodies.translate_document(document, content_type, TO_PRIVATE, self.group_map)
        if convert:
            document = convert_document(document, route.served_version, self.crds_now(), code=400)
        return bodies.encode(document)

    def response_body(self, route, content_type, raw):
        if raw and route.mode == "openapi":  # whatever its type: kube-apiserver serves the v3 index as text/plain
            return self.depth_safe_response(openapi.translate_response, raw, route.target.path, self.group_map,
                                            self.show_private)
        if not raw or "json" not in content_type:
            return raw
        if not route.adapted and route.mode != "crd" and not bodies.contains_any(raw, self.to_standard_markers):
            return raw
        started = time.perf_counter()
        try:
            if len(raw) < GC_PAUSE_BYTES:  # a small tree: too few objects to set off a collection worth avoiding
                try:  # nesting.run's first attempt, without its two calls
                    translated = self.response_bytes(raw, route)
                except RecursionError:  # nesting.run's case: on a deep thread if it must
                    translated = self.depth_safe_response(self.response_bytes, raw, route)
            else:
                with gc_paused():
                    translated = self.depth_safe_response(self.response_bytes, raw, route)
        except ProxyError:
            self.metrics.translation_errors.inc("response")
            raise
        self.metrics.translation_seconds.observe(time.perf_counter() - started, "response")
        return translated

    def list_stream(self, route):
        """A ListStream for a LIST of a standard CAPI resource served as it is (no version adaptation), else None."""
        if route.mode != "capi" or route.adapted or route.target.verb != "list":
            return None
        return ListStream(self.group_map, self.to_standard_markers)

    def streamed_body(self, stream, content_type):
        """The LIST translated while it arrived (stream fed with the whole body), or None: response_body then."""
        if "json" not in content_type:
            stream.off()
            return None
        with gc_paused():
            translated = stream.finish()
        if translated is not None:
            self.metrics.translation_seconds.observe(stream.seconds, "response")
        return translated

    def feed(self, stream, chunk):
        """stream.feed with the cycle collector paused (the batch's parsed items die inside)."""
        with gc_paused():
            stream.feed(chunk)

    @staticmethod
    def depth_safe_response(work, raw, *args):
        """work(raw, *args) through nesting.run; too deep -> 502 (the API server never sends such a document)."""
        try:
            return nesting.run(work, raw, *args)
        except nesting.DocumentTooDeep as exc:
            raise ProxyError(502, "cannot translate the API server's response: %s" % exc)

    def response_bytes(self, raw, route):
        """The translated body; the parsed tree dies when this returns (inside gc_paused)."""
        if route.mode != "crd" and not route.adapted:  # the core alone: orjson's reading checked afterwards
            translated = bodies.translated_response(raw, TO_STANDARD, self.group_map)
            if translated is not None:
                return translated
        try:
            document = bodies.loads(raw)
        except ValueError as exc:
            raise ProxyError(502, "the API server's response is not valid JSON (%s)" % str(exc)[:200])
        try:
            if route.mode == "crd":
                document = crd_view(document, self.group_map, self.show_private, route.local_selector)
            else:  # the parsed tree is the proxy's own: translated where it lies, no copy
                document = bodies.translate_response(document, TO_STANDARD, self.group_map, in_place=True)
            if route.adapted:
                document = convert_document(document, route.client_version, self.crds_now())
        except CapiTranslationError as exc:
            raise ProxyError(502, "cannot translate the API server's response: %s" % exc)
        return bodies.dumps(document)

    def patched_bytes(self, raw, route, patch_document, content_type):
        """(the object to PUT in the served version, the patch's own resourceVersion) from the current object
        (patch_document is only read: the merge and JSON patches work on copies)."""
        current = bodies.translate_response(bodies.loads(raw), TO_STANDARD, self.group_map, in_place=True)
        current = convert_document(current, route.client_version, self.crds_now())
        patched = apply_patch(current, patch_document, bodies.media_type(content_type))
        served = convert_document(patched, route.served_version, self.crds_now(), code=422)
        served = bodies.translate_document(served, "application/json", TO_PRIVATE, self.group_map)
        metadata = served.setdefault("metadata", {})
        explicit_version = ((patch_document.get("metadata") or {}).get("resourceVersion")
                            if isinstance(patch_document, dict) else None)
        metadata["resourceVersion"] = explicit_version or (current.get("metadata") or {}).get("resourceVersion")
        return bodies.encode(served), explicit_version

    def discovery_bytes(self, raw, route, index, upstream_path, fresh_index=None):
        """The discovery answer in the client's view. An aggregated /apis answer is the newest index there is: it is
        built from the answer itself and handed to fresh_index (so a CRD shows as soon as the server serves it)."""
        group_map = self.group_map
        try:
            document = bodies.loads(raw)
        except ValueError as exc:
            raise ProxyError(502, "the API server's discovery document is not valid JSON (%s)" % str(exc)[:200])
        if not isinstance(document, dict):
            raise ProxyError(502, "the API server's discovery document is a JSON %s, not an object"
                             % type(document).__name__)
        try:
            if route.mode == "discovery-root":
                if document.get("kind") == discovery.AGGREGATED_KIND:
                    if fresh_index is not None and upstream_path.rstrip("/") == "/apis":
                        index = discovery.ServedIndex(document, group_map)
                        fresh_index(index)
                    document = discovery.aggregated_to_standard(document, index, group_map, self.show_private)
                else:
                    document = discovery.group_list_to_standard(document, index, group_map, self.show_private)
            elif route.mode == "discovery-group":
                document = discovery.api_group_to_standard(document, index, group_map)
            else:
                upstream_document = document if upstream_path == route.upstream_path else None
                document = discovery.resource_list_to_standard(upstream_document, route.private_group,
                                                               route.target.version, index, group_map)
        except CapiTranslationError as exc:
            self.metrics.translation_errors.inc("response")
            raise ProxyError(502, "cannot translate the discovery document: %s" % exc)
        return bodies.dumps(document)

    def event(self, route, line):
        if not route.translated or (not route.adapted and route.mode != "crd"
                                    and not bodies.contains_any(line, self.to_standard_markers)):
            return line + b"\n"
        key = (route.mode, route.client_version, route.served_version, line)
        cached = self._event_cache.get(key)
        if cached is not None:
            self._event_cache.move_to_end(key)
            return cached
        started = time.perf_counter()
        with gc_paused():
            try:
                translated = nesting.run(self._event_bytes, line, route)
            except nesting.DocumentTooDeep as exc:
                self.metrics.translation_errors.inc("watch")
                raise ProxyError(500, "cannot translate a watch event: %s" % exc)
        self.metrics.translation_seconds.observe(time.perf_counter() - started, "watch")
        if len(line) <= _EVENT_CACHE_MAX_LINE:
            self._event_cache[key] = translated
            self._event_cache_bytes += len(line) + len(translated)
            while len(self._event_cache) > _EVENT_CACHE_ENTRIES or self._event_cache_bytes > _EVENT_CACHE_BYTES:
                old_key, old_translated = self._event_cache.popitem(last=False)
                self._event_cache_bytes -= len(old_key[-1]) + len(old_translated)
        return translated

    def _event_bytes(self, line, route):
        if route.mode != "crd" and not route.adapted:  # the core alone, as response_bytes: orjson's reading checked after
            translated = bodies.translated_response(line, TO_STANDARD, self.group_map)
            if translated is not None:
                return translated + b"\n"
        try:
            event = bodies.loads(line)
            if route.mode == "crd":
                event = crd_view(event, self.group_map, self.show_private)
                if event is None:
                    return b""  # an event of a shadowed standard CRD: the client never sees those
            else:
                event = bodies.translate_response(event, TO_STANDARD, self.group_map, in_place=True)
            if route.adapted:
                event = convert_document(event, route.client_version, self.crds_now())
        except ValueError as exc:  # CapiTranslationError included
            self.metrics.translation_errors.inc("watch")
            raise ProxyError(500, "cannot translate a watch event: %s" % str(exc)[:300])
        return bodies.dumps(event) + b"\n"

    def crds_now(self):
        return self.crds.value or []
