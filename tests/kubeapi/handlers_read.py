"""GET, LIST (selectors, pagination over consistent snapshots) and WATCH, with Table and metadata-only output."""
import asyncio
import base64
import binascii
import datetime
import json
import time

import yaml
from aiohttp import web

from . import errors, wiring
from .store import ADDED, DELETED, MODIFIED, dumps

TABLE = "table"
META = "meta"
JSON = "json"
YAML = "yaml"
CONTINUE_EXPIRED = ("The provided continue parameter is too old to display a consistent list result. You can start "
                    "a new list without the continue parameter, or use the continue token in this response to "
                    "retrieve the remainder of the results. Continuing with the provided token results in an "
                    "inconsistent list - objects that were created, modified, or deleted between the time the first "
                    "chunk was returned and now may show up in the list.")


def output_format(accept):
    """(format, meta.k8s.io version) the client prefers among those we serve."""
    if not accept:
        return JSON, None
    saw_other = False
    for part in accept.split(","):
        pieces = [p.strip() for p in part.split(";")]
        media = pieces[0]
        params = dict(p.split("=", 1) for p in pieces[1:] if "=" in p)
        as_kind = params.get("as")
        if as_kind == "Table" and params.get("g") == "meta.k8s.io" and media == "application/json":
            return TABLE, params.get("v", "v1")
        if as_kind in ("PartialObjectMetadata", "PartialObjectMetadataList") and params.get("g") == "meta.k8s.io" \
                and media == "application/json":
            return META, params.get("v", "v1")
        if as_kind:
            saw_other = True
            continue
        if media in ("application/json", "*/*", "application/*", "*"):
            return JSON, None
        if media in ("application/yaml",):
            return YAML, None
        saw_other = True
    if saw_other:
        raise errors.not_acceptable()
    return JSON, None


def encode_continue(rv, key):
    token = {"v": "meta.k8s.io/v1", "rv": rv, "start": "%s/%s\u0000" % key if key[0] else "%s\u0000" % key[1]}
    return base64.urlsafe_b64encode(json.dumps(token, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_continue(token, namespaced):
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        rv = int(raw["rv"])
        start = raw["start"].rstrip("\u0000")
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise errors.bad_request("continue key is not valid: incorrect encoded start resourceVersion (version "
                                 "meta.k8s.io/v1)")
    if rv <= 0:
        raise errors.bad_request("continue key is not valid: incorrect encoded start resourceVersion (version "
                                 "meta.k8s.io/v1)")
    if "/" in start:
        namespace, name = start.split("/", 1)
    else:
        namespace, name = "", start
    return rv, (namespace, name)


def _object_key(obj):
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


class ReadHandlers:
    def __init__(self, server):
        self.server = server
        self.store = server.store
        self.api = server.api
        self._closing = asyncio.Event()
        self._watches = set()

    async def close_watches(self):
        self._closing.set()
        for task in list(self._watches):
            task.cancel()

    # --- selection --------------------------------------------------------------------------------
    def selectors(self, query, rtype):
        label = wiring.parse_label_selector(query.get("labelSelector", "")) if query.get("labelSelector") else None
        field = None
        if query.get("fieldSelector"):
            if wiring.selectors is not None and hasattr(wiring.selectors, "field_selector_spec"):
                info = rtype.version(rtype.preferred_version)
                selectable = [f.get("jsonPath", "") for f in ((info.raw or {}).get("selectableFields") or [])] \
                    if info is not None and info.raw else []
                allowed = wiring.selectors.field_selector_spec(rtype.group, rtype.storage_group_resource[1],
                                                               rtype.namespaced, not rtype.builtin, selectable)
            else:
                allowed = ["metadata.name", "metadata.namespace"]
            field = wiring.parse_field_selector(query["fieldSelector"], allowed)
        return label, field

    def matcher(self, query, rtype, name=None):
        label, field = self.selectors(query, rtype)
        if label is None and field is None and name is None:
            return None

        def matches(obj):
            if name is not None and obj["metadata"]["name"] != name:
                return False
            if label is not None and not label.matches(obj["metadata"].get("labels") or {}):
                return False
            return field is None or field.matches(obj)
        return matches

    def select(self, request, rtype, namespace):
        matches = self.matcher(request.query, rtype)
        objects = self.store.list(rtype.storage_group_resource, namespace or None)
        return [o for o in objects if matches is None or matches(o)]

    # --- entry ------------------------------------------------------------------------------------
    async def handle(self, request, info, rtype, user):
        fmt, meta_version = output_format(request.headers.get("Accept", ""))
        namespace = info.namespace if rtype.namespaced else ""
        if info.verb == "watch":
            return await self.watch(request, info, rtype, namespace, fmt)
        if info.verb == "get":
            return await self.get(request, info, rtype, namespace, fmt)
        return await self.list(request, info, rtype, namespace, fmt)

    def render(self, body, fmt):
        if fmt == YAML:
            return web.Response(body=yaml.safe_dump(body if not isinstance(body, bytes) else json.loads(body),
                                                    default_flow_style=False).encode(),
                                content_type="application/yaml")
        return self.server.json_response(body)

    async def get(self, request, info, rtype, namespace, fmt):
        key = rtype.storage_group_resource
        stored = self.store.get(key, namespace, info.name)
        if stored is None:
            raise errors.not_found(rtype.group, rtype.plural, info.name)
        if fmt == TABLE:
            return self.server.json_response(await self.table(request, rtype, info.version, [stored], None))
        if fmt == META:
            return self.server.json_response(partial_metadata(stored))
        obj = await self.api.to_version(rtype, stored, info.version)
        if obj is stored:
            return self.render(self.store.json_of(key, stored), fmt)
        return self.render(obj, fmt)

    async def list(self, request, info, rtype, namespace, fmt):
        query = request.query
        key = rtype.storage_group_resource
        matches = self.matcher(query, rtype)
        limit = 0
        if query.get("limit"):
            try:
                limit = max(0, int(query["limit"]))
            except ValueError:
                raise errors.bad_request('strconv.ParseInt: parsing "%s": invalid syntax' % query["limit"])
        token = query.get("continue", "")
        start = None
        if token:
            list_rv, start = decode_continue(token, rtype.namespaced)
            try:
                objects = self.store.snapshot(key, namespace or None, list_rv)
            except errors.ApiError:
                raise errors.expired(CONTINUE_EXPIRED)
        else:
            list_rv = self.store.rv
            requested = query.get("resourceVersion", "")
            if requested and requested != "0" and query.get("resourceVersionMatch") == "Exact":
                try:
                    list_rv = int(requested)
                except ValueError:
                    raise errors.bad_request("resourceVersion: Invalid value: \"%s\": must be a positive integer"
                                             % requested)
                objects = self.store.snapshot(key, namespace or None, list_rv)
            else:
                objects = self.store.list(key, namespace or None)
        if start is not None:
            objects = [o for o in objects if _object_key(o) > start]
        if matches is not None:
            objects = [o for o in objects if matches(o)]
        list_meta = {"resourceVersion": str(list_rv)}
        if limit and len(objects) > limit:
            remaining = len(objects) - limit
            objects = objects[:limit]
            list_meta["continue"] = encode_continue(list_rv, _object_key(objects[-1]))
            if matches is None:
                list_meta["remainingItemCount"] = remaining
        if fmt == TABLE:
            return self.server.json_response(await self.table(request, rtype, info.version, objects, list_meta))
        if fmt == META:
            return self.server.json_response({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                                              "metadata": list_meta,
                                              "items": [partial_metadata(o) for o in objects]})
        head = {"kind": rtype.list_kind, "apiVersion": rtype.api_version(info.version), "metadata": list_meta}
        converted = await self.api.many_to_version(rtype, objects, info.version)
        parts = []
        for original, obj in zip(objects, converted):
            parts.append(self.store.json_of(key, original) if obj is original else dumps(obj))
        body = dumps(head)[:-1] + b',"items":[' + b",".join(parts) + b"]}"
        return self.render(body, fmt)

    async def table(self, request, rtype, version, objects, list_meta):
        if wiring.table is None:
            raise errors.not_acceptable()
        if rtype.builtin:
            columns = wiring.table.columns_for_builtin(rtype.group, rtype.plural)
        else:
            info = rtype.version(version)
            columns = wiring.table.columns_for_crd_version(info.raw or {})
        converted = await self.api.many_to_version(rtype, objects, version)
        include = request.query.get("includeObject", "Metadata")
        return wiring.table.build_table(converted, columns, include, list_meta,
                                        datetime.datetime.now(datetime.timezone.utc))

    # --- watch ------------------------------------------------------------------------------------
    async def watch(self, request, info, rtype, namespace, fmt):
        query = request.query
        key = rtype.storage_group_resource
        name = info.name or None
        matches = self.matcher(query, rtype, name)
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        send_initial = query.get("sendInitialEvents") in ("true", "1")
        try:
            timeout = float(query.get("timeoutSeconds") or 1800)
        except ValueError:
            raise errors.bad_request('strconv.ParseInt: parsing "%s": invalid syntax' % query.get("timeoutSeconds"))
        requested = query.get("resourceVersion", "")
        if send_initial and query.get("resourceVersionMatch") != "NotOlderThan":
            raise errors.invalid("meta.k8s.io", "ListOptions", "", [errors.field_forbidden(
                "resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")])
        queue = asyncio.Queue()
        self.store.watchers.add(queue)
        response = web.StreamResponse(status=200)
        response.content_type = "application/json"
        response.enable_chunked_encoding()
        task = asyncio.current_task()
        self._watches.add(task)
        try:
            initial = []
            expired = None
            if requested in ("", "0") or send_initial:
                start_rv = self.store.rv
                if not requested or requested == "0" or send_initial:
                    initial = [o for o in self.store.list(key, namespace or None) if matches is None or matches(o)]
            else:
                try:
                    start_rv = int(requested)
                except ValueError:
                    raise errors.bad_request('resourceVersion: Invalid value: "%s": must be a positive integer'
                                             % requested)
                try:
                    backlog = self.store.events_after(start_rv)
                except errors.ApiError as err:
                    expired = err
                    backlog = []
                for event in backlog:
                    queue.put_nowait(event)
            await response.prepare(request)
            if expired is not None:
                await response.write(dumps({"type": "ERROR", "object": expired.status_body()}) + b"\n")
                return response
            for obj in initial:
                await self._send(response, rtype, info.version, "ADDED", obj, key, fmt, request)
            if send_initial and bookmarks:
                await self._bookmark(response, rtype, info.version, start_rv, initial_end=True)
            deadline = time.monotonic() + timeout
            interval = self.server.options.bookmark_interval
            last_rv = start_rv
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closing.is_set():
                    break
                try:
                    event = await asyncio.wait_for(queue.get(), min(remaining, interval) if bookmarks else remaining)
                except asyncio.TimeoutError:
                    if bookmarks and deadline - time.monotonic() > 0:
                        await self._bookmark(response, rtype, info.version, max(last_rv, self.store.rv))
                    continue
                if event.rv <= start_rv or event.group_resource != key:
                    continue
                if namespace and event.namespace != namespace:
                    continue
                last_rv = event.rv
                event_type, obj = transform(event, matches)
                if event_type is None:
                    continue
                await self._send(response, rtype, info.version, event_type, obj, key, fmt, request)
            return response
        except (ConnectionResetError, asyncio.CancelledError):
            return response
        finally:
            self.store.watchers.discard(queue)
            self._watches.discard(task)

    async def _send(self, response, rtype, version, event_type, obj, key, fmt, request):
        if fmt == TABLE and wiring.table is not None:
            body = await self.table(request, rtype, version, [obj], {"resourceVersion":
                                                                     obj["metadata"]["resourceVersion"]})
            payload = dumps({"type": event_type, "object": body})
        elif fmt == META:
            payload = dumps({"type": event_type, "object": partial_metadata(obj)})
        else:
            converted = await self.api.to_version(rtype, obj, version)
            encoded = self.store.json_of(key, obj) if converted is obj else dumps(converted)
            payload = b'{"type":"' + event_type.encode() + b'","object":' + encoded + b"}"
        await response.write(payload + b"\n")

    async def _bookmark(self, response, rtype, version, rv, initial_end=False):
        meta = {"resourceVersion": str(rv), "creationTimestamp": None}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        await response.write(dumps({"type": "BOOKMARK", "object": {
            "kind": rtype.kind, "apiVersion": rtype.api_version(version), "metadata": meta}}) + b"\n")


def transform(event, matches):
    """The event a filtered watcher sees (selector transitions become ADDED/DELETED like the watch cache)."""
    if matches is None:
        return event.type, event.obj
    if event.type == ADDED:
        return (ADDED, event.obj) if matches(event.obj) else (None, None)
    if event.type == DELETED:
        return (DELETED, event.obj) if matches(event.prev or event.obj) else (None, None)
    new_match = matches(event.obj)
    old_match = event.prev is not None and matches(event.prev)
    if new_match and old_match:
        return MODIFIED, event.obj
    if new_match:
        return ADDED, event.obj
    if old_match:
        return DELETED, event.obj
    return None, None


def partial_metadata(obj):
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}
