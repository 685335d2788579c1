# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A wait that ends when something changes: ChangeBell watches collections (one WATCH each, in a thread of its own)
and rings when an object of one of them is added, modified or deleted, so that a module waiting on the API server
reads again when there is something new to read instead of polling.

The bell only says "read again", never what changed: the caller's reads (LISTs) stay the one source of what it
judges, so a missed or duplicated event costs a read, never a wrong answer. A watch that ends (its timeout, a dropped
connection) starts again from the last resourceVersion it saw; one that is refused (410 Gone: too old) starts again
from the server's newest and rings, since something may have been missed. A watch that is forbidden (403: an identity
with list but not watch) or fails three times running stops, and the bell says so (`broken`): the caller then reads
at its own pace, as it did before 2026-12-03.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading

try:
    from kubernetes.watch import Watch
except ImportError:  # a module without the kubernetes client fails at its requirement check before any bell
    Watch = None

# seconds each WATCH asks the server for before it is opened again from its last resourceVersion
WATCH_SECONDS = 60
# failures in a row (not 410) after which a watch gives up and the bell is broken; seconds between two attempts
FAILURES_TO_GIVE_UP = 3
RETRY_SECONDS = 1.0


def event_version(event):
    """The resourceVersion an event carries (its object's; a BOOKMARK's too), or None."""
    obj = event.get("object") if isinstance(event, dict) else None
    return (obj.get("metadata") or {}).get("resourceVersion") if isinstance(obj, dict) else None


class ChangeBell(object):
    """Rings when an object of one of paths (collection paths) changes after resource_version.

    wait(seconds) -> the paths that rang since the last wait (an empty set when none did within seconds). Use it as a
    context manager, or call stop(): the watches end at once.
    """

    def __init__(self, client, paths, resource_version=None):
        self.client = client
        self.broken = None  # why a watch stopped for good (the caller polls then), or None
        self._condition = threading.Condition()
        self._rung = set()
        self._stopped = False
        self._watchers = []
        self._threads = [threading.Thread(target=self._follow, args=(path, resource_version), daemon=True,
                                          name="watch %s" % path) for path in paths]
        for thread in self._threads:
            thread.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def _ring(self, path):
        with self._condition:
            self._rung.add(path)
            self._condition.notify_all()

    def _follow(self, path, version):
        failures = 0
        while not self._stopped:
            watcher = Watch()
            with self._condition:
                if self._stopped:
                    return
                self._watchers.append(watcher)
            try:
                for event in self.client.watch(path, "watch " + path, version, WATCH_SECONDS, watcher):
                    version = event_version(event) or version
                    failures = 0
                    if event.get("type") != "BOOKMARK":
                        self._ring(path)
            except Exception as exc:  # pylint: disable=broad-except  # any failure: the caller reads (or polls) instead
                if self._stopped:
                    return
                status = getattr(exc, "status", None)
                if status == 410:  # too old: from the newest on, and read again now
                    version = None
                    self._ring(path)
                    continue
                failures += 1
                if status == 403 or failures >= FAILURES_TO_GIVE_UP:
                    with self._condition:
                        self.broken = "%s: %s" % (path, exc)
                        self._condition.notify_all()
                    return
                self._ring(path)
                with self._condition:
                    self._condition.wait_for(lambda: self._stopped, RETRY_SECONDS)
            finally:
                with self._condition:
                    if watcher in self._watchers:
                        self._watchers.remove(watcher)

    def wait(self, seconds):
        """The paths that rang since the last wait, waiting up to seconds for one (an empty set: none did, or the bell
        is broken and rings no more)."""
        with self._condition:
            self._condition.wait_for(lambda: self._rung or self.broken or self._stopped, max(0.0, seconds))
            rung, self._rung = self._rung, set()
        return rung

    def stop(self):
        """End every watch now (the kubernetes client's Watch.stop shuts the socket a blocked read waits on)."""
        with self._condition:
            self._stopped = True
            watchers = list(self._watchers)
            self._condition.notify_all()
        for watcher in watchers:
            watcher.stop()
        for thread in self._threads:
            thread.join(2.0)
