"""Object storage: one global resourceVersion counter, a bounded event history, watchers, persistence.

Stored objects are plain dicts that are never mutated once stored (writers store new dicts), so the
read path can share them and cache their JSON encoding.
"""
import asyncio
import base64
import collections
import json
import logging
import os
import tempfile

from . import errors

LOG = logging.getLogger("kubeapi.store")

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


class Event:
    __slots__ = ("rv", "group_resource", "namespace", "name", "type", "obj", "prev")

    def __init__(self, rv, group_resource, namespace, name, event_type, obj, prev):
        self.rv = rv
        self.group_resource = group_resource
        self.namespace = namespace
        self.name = name
        self.type = event_type
        self.obj = obj
        self.prev = prev


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class Store:
    def __init__(self, history_size=10000):
        self.rv = 0
        self.buckets = {}                # (group, resource) -> {(namespace, name): obj}
        self.history = collections.deque(maxlen=history_size)
        self.watchers = set()            # asyncio.Queue-like objects with put_nowait(Event)
        self._json = {}                  # (group_resource, namespace, name) -> encoded bytes
        self._sorted_keys = {}           # group_resource -> sorted key list (invalidated on create/delete)
        self.on_change = None            # callback() after each commit (persistence debounce)
        self.extra_state = {}            # persisted alongside objects (CA, keys, tokens)
        self.group_revisions = collections.Counter()   # API group -> writes so far (cache keys, e.g. RBAC)

    # --- reads ------------------------------------------------------------------------------------
    def get(self, group_resource, namespace, name):
        return self.buckets.get(group_resource, {}).get((namespace or "", name))

    def get_json(self, group_resource, namespace, name):
        key = (group_resource, namespace or "", name)
        data = self._json.get(key)
        if data is None:
            obj = self.get(group_resource, namespace, name)
            if obj is None:
                return None
            data = self._json[key] = dumps(obj)
        return data

    def json_of(self, group_resource, obj):
        """Cached encoding of a stored object (falls back to encoding when obj is not the stored one)."""
        meta = obj["metadata"]
        key = (group_resource, meta.get("namespace", ""), meta["name"])
        stored = self.get(group_resource, key[1], key[2])
        if stored is not obj:
            return dumps(obj)
        data = self._json.get(key)
        if data is None:
            data = self._json[key] = dumps(obj)
        return data

    def keys(self, group_resource):
        keys = self._sorted_keys.get(group_resource)
        if keys is None:
            keys = self._sorted_keys[group_resource] = sorted(self.buckets.get(group_resource, {}))
        return keys

    def list(self, group_resource, namespace=None):
        """Current objects, ordered by (namespace, name) like etcd keys."""
        bucket = self.buckets.get(group_resource, {})
        keys = self.keys(group_resource)
        if namespace:
            return [bucket[k] for k in keys if k[0] == namespace]
        return [bucket[k] for k in keys]

    def count(self, group_resource):
        return len(self.buckets.get(group_resource, {}))

    def snapshot(self, group_resource, namespace, at_rv):
        """Objects of a resource as they were at resourceVersion at_rv (consistent continue lists)."""
        if at_rv >= self.rv:
            return self.list(group_resource, namespace)
        oldest = self.history[0].rv if self.history else self.rv + 1
        if at_rv < oldest - 1:
            raise errors.expired("too old resource version: %d (%d)" % (at_rv, oldest - 1))
        state = dict(self.buckets.get(group_resource, {}))
        for event in reversed(self.history):
            if event.rv <= at_rv:
                break
            if event.group_resource != group_resource:
                continue
            key = (event.namespace, event.name)
            if event.type == ADDED:
                state.pop(key, None)
            else:
                state[key] = event.prev
        return [state[k] for k in sorted(state) if not namespace or k[0] == namespace]

    def oldest_rv(self):
        return self.history[0].rv if self.history else self.rv + 1

    def events_after(self, rv):
        """History events with resourceVersion > rv, or ApiError 410 Expired when rv is too old."""
        oldest = self.oldest_rv()
        if rv < oldest - 1 and rv < self.rv:
            raise errors.expired("too old resource version: %d (%d)" % (rv, oldest - 1))
        return [e for e in self.history if e.rv > rv]

    # --- writes -----------------------------------------------------------------------------------
    def next_rv(self):
        self.rv += 1
        return self.rv

    def _commit(self, group_resource, namespace, name, event_type, obj, prev):
        bucket = self.buckets.setdefault(group_resource, {})
        key = (namespace or "", name)
        if event_type == DELETED:
            bucket.pop(key, None)
        else:
            bucket[key] = obj
        if event_type != MODIFIED:
            self._sorted_keys.pop(group_resource, None)
        self._json.pop((group_resource, key[0], name), None)
        self.group_revisions[group_resource[0]] += 1
        event = Event(int(obj["metadata"]["resourceVersion"]), group_resource, key[0], name, event_type, obj, prev)
        self.history.append(event)
        for watcher in list(self.watchers):
            watcher.put_nowait(event)
        if self.on_change is not None:
            self.on_change()
        return obj

    def create(self, group_resource, obj):
        """Store a new object (its metadata complete except resourceVersion, set here)."""
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.next_rv())
        return self._commit(group_resource, meta.get("namespace", ""), meta["name"], ADDED, obj, None)

    def update(self, group_resource, obj):
        meta = obj["metadata"]
        prev = self.get(group_resource, meta.get("namespace", ""), meta["name"])
        meta["resourceVersion"] = str(self.next_rv())
        return self._commit(group_resource, meta.get("namespace", ""), meta["name"], MODIFIED, obj, prev)

    def delete(self, group_resource, namespace, name):
        """Remove an object; returns its last state with the deletion's resourceVersion."""
        prev = self.get(group_resource, namespace, name)
        if prev is None:
            return None
        final = dict(prev)
        final["metadata"] = dict(prev["metadata"])
        final["metadata"]["resourceVersion"] = str(self.next_rv())
        return self._commit(group_resource, namespace, name, DELETED, final, prev)

    def drop_resource(self, group_resource):
        """Remove every object of a resource (CRD deletion) with DELETED events."""
        for obj in list(self.list(group_resource)):
            self.delete(group_resource, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        self.buckets.pop(group_resource, None)
        self._sorted_keys.pop(group_resource, None)

    # --- persistence ------------------------------------------------------------------------------
    def to_state(self):
        objects = []
        for (group, resource), bucket in self.buckets.items():
            for obj in bucket.values():
                objects.append({"group": group, "resource": resource, "object": obj})
        return {"version": 1, "resourceVersion": self.rv, "objects": objects, "extra": self.extra_state}

    def load_state(self, state):
        self.rv = int(state.get("resourceVersion", 0))
        for entry in state.get("objects", []):
            obj = entry["object"]
            meta = obj["metadata"]
            gr = (entry["group"], entry["resource"])
            self.buckets.setdefault(gr, {})[(meta.get("namespace", ""), meta["name"])] = obj
        self.extra_state = state.get("extra", {})
        self._sorted_keys.clear()
        self._json.clear()


class Persister:
    """Debounced, atomic (temp file + rename) writes of the store's state."""

    def __init__(self, store, path, delay=0.2):
        self.store = store
        self.path = path
        self.delay = delay
        self._handle = None
        self.dirty = False

    def load(self):
        if not self.path or not os.path.exists(self.path):
            return False
        with open(self.path, "r", encoding="utf-8") as handle:
            state = json.load(handle)
        self.store.load_state(state)
        return True

    def mark_dirty(self):
        self.dirty = True
        if self._handle is None and self.path:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._handle = loop.call_later(self.delay, self.flush)

    def flush(self):
        self._handle = None
        if not self.path or not self.dirty:
            return
        self.dirty = False
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".kubeapi-state-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(dumps(self.store.to_state()))
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


def b64(data):
    return base64.b64encode(data).decode("ascii")
