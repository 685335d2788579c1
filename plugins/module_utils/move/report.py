# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What one capi_object_migrate run did: counts per kind, the ordered plan, the uid map, conflicts, diffs.

Plain data (no I/O). The engines work in parallel, so they hand in the entries of one level at a time in a
deterministic order; the counters are guarded by a lock anyway.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading

COUNTERS = ("found", "created", "updated", "skipped", "conflicts", "deleted", "leaving")


class MigrationReport(object):
    def __init__(self):
        self._lock = threading.Lock()
        self.counts = {}
        self.plan = []
        self.uid_map = {}
        self.skipped = []
        self.conflicts = []
        self.dependents = []
        self.warnings = []
        self.diffs = []
        self.changed = False

    def _kind_counts(self, kind):
        return self.counts.setdefault(kind, dict.fromkeys(COUNTERS, 0))

    def count(self, kind, counter, amount=1):
        with self._lock:
            self._kind_counts(kind)[counter] += amount

    def step(self, action, obj_kind, name, **details):
        """One planned or done action; writes (everything but skip/conflict/carry/carried) mark the run changed."""
        entry = {"action": action, "kind": obj_kind, "name": name}
        entry.update(details)
        with self._lock:
            self.plan.append(entry)
            if action not in ("skip", "conflict", "carry", "carried"):
                self.changed = True

    def extend(self, entries):
        for entry in entries:
            self.step(**entry)

    def skip(self, obj_kind, name, reason):
        with self._lock:
            self.skipped.append({"kind": obj_kind, "name": name, "reason": reason})
            self._kind_counts(obj_kind)["skipped"] += 1

    def conflict(self, obj_kind, name, reason, differences, overwritten):
        with self._lock:
            self.conflicts.append({"kind": obj_kind, "name": name, "reason": reason, "differences": differences,
                                   "overwritten": overwritten})
            self._kind_counts(obj_kind)["conflicts"] += 1

    def warn(self, message):
        with self._lock:
            self.warnings.append(message)

    def map_uid(self, source_uid, target_uid):
        with self._lock:
            self.uid_map[source_uid] = target_uid

    def diff(self, header, before, after):
        with self._lock:
            self.diffs.append({"before_header": header, "after_header": header, "before": before, "after": after})

    def result(self):
        return {
            "changed": self.changed,
            # remaining: what the target holds once the deletions in flight have finished
            "counts": {kind: dict(values, remaining=values["found"] - values["leaving"])
                       for kind, values in sorted(self.counts.items())},
            "plan": list(self.plan),
            "uid_map": dict(self.uid_map),
            "skipped": list(self.skipped),
            "conflicts": list(self.conflicts),
            "dependents": list(self.dependents),
        }
