"""Fault injection rules and the request log behind the admin-only /kubeapi/v1/faults and /requests endpoints.

A rule matches requests by verb, API group, resource, subresource, namespace and name (fnmatch globs,
"*" = anything). Each rule counts the requests it matches; from the `nth` matching request on it fires
`count` times (-1 = every time) with its action: "error" (answer `code` with a Status), "hang" (wait
`seconds`, then serve the request normally) or "drop" (close the connection without an answer).
Pure bookkeeping: no I/O, no awaits; a lock keeps it safe if threads ever share it.
"""
import fnmatch
import itertools
import threading
import time
from collections import deque

from tests.kubeapi.errors import bad_request

ACTIONS = ("error", "hang", "drop")
MUTATING_VERBS = frozenset(("create", "update", "patch", "delete", "deletecollection"))
_MATCH_FIELDS = ("verb", "group", "resource", "subresource", "namespace", "name")
_RULE_FIELDS = frozenset(_MATCH_FIELDS + ("nth", "count", "action", "code", "seconds", "message", "id"))
DEFAULT_ERROR_MESSAGE = "injected fault"


def _require(condition, field, expected, found):
    if not condition:
        raise bad_request("fault rule field %r: expected %s, found %r; fix the rule and POST it again"
                          % (field, expected, found))


def _validated(rule):
    _require(isinstance(rule, dict), "<rule>", "a JSON object", rule)
    unknown = sorted(set(rule) - _RULE_FIELDS)
    _require(not unknown, ",".join(unknown), "only " + ", ".join(sorted(_RULE_FIELDS - {"id"})), unknown)
    clean = {field: rule.get(field, "*") for field in _MATCH_FIELDS}
    for field in _MATCH_FIELDS:
        _require(isinstance(clean[field], str), field, "a string glob", clean[field])
    clean["action"] = rule.get("action", "error")
    _require(clean["action"] in ACTIONS, "action", "one of " + ", ".join(ACTIONS), clean["action"])
    clean["nth"] = rule.get("nth", 1)
    _require(isinstance(clean["nth"], int) and not isinstance(clean["nth"], bool) and clean["nth"] >= 1, "nth",
             "an integer >= 1", clean["nth"])
    clean["count"] = rule.get("count", 1)
    _require(isinstance(clean["count"], int) and not isinstance(clean["count"], bool)
             and (clean["count"] >= 1 or clean["count"] == -1), "count", "an integer >= 1, or -1 for always",
             clean["count"])
    clean["code"] = rule.get("code", 500)
    _require(isinstance(clean["code"], int) and not isinstance(clean["code"], bool) and 400 <= clean["code"] <= 599,
             "code", "an HTTP error status 400..599", clean["code"])
    clean["seconds"] = rule.get("seconds", 5)
    _require(isinstance(clean["seconds"], (int, float)) and not isinstance(clean["seconds"], bool)
             and 0 <= clean["seconds"] <= 3600, "seconds", "a number of seconds 0..3600", clean["seconds"])
    clean["message"] = rule.get("message", DEFAULT_ERROR_MESSAGE)
    _require(isinstance(clean["message"], str), "message", "a string", clean["message"])
    return clean


class FaultInjector:
    def __init__(self):
        self._rules = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def add(self, rule):
        """Validate and store a rule; returns it with defaults filled in, its id, hits 0 and remaining."""
        clean = _validated(rule)
        with self._lock:
            clean["id"] = str(next(self._ids))
            clean["hits"] = 0
            clean["fired"] = 0
            clean["remaining"] = clean["count"]
            self._rules.append(clean)
            return dict(clean)

    def list(self):
        with self._lock:
            return [dict(rule) for rule in self._rules]

    def clear(self):
        with self._lock:
            self._rules.clear()

    def remove(self, rule_id):
        """Remove one rule; KeyError naming the id and the known ids when it does not exist."""
        with self._lock:
            for index, rule in enumerate(self._rules):
                if rule["id"] == str(rule_id):
                    del self._rules[index]
                    return
            raise KeyError("no fault rule with id %r; existing ids: %s"
                           % (rule_id, ", ".join(rule["id"] for rule in self._rules) or "none"))

    def match(self, verb, group, resource, subresource, namespace, name):
        """Count this request against every matching rule; the first rule that fires, else None.

        The returned dict is a copy of the rule (action, code, seconds, message, id ...).
        """
        request = {"verb": verb or "", "group": group or "", "resource": resource or "",
                   "subresource": subresource or "", "namespace": namespace or "", "name": name or ""}
        fired = None
        with self._lock:
            for rule in self._rules:
                if not all(fnmatch.fnmatchcase(request[field], rule[field]) for field in _MATCH_FIELDS):
                    continue
                rule["hits"] += 1
                if fired is None and rule["hits"] >= rule["nth"] and rule["remaining"] != 0:
                    if rule["remaining"] > 0:
                        rule["remaining"] -= 1
                    rule["fired"] += 1
                    fired = dict(rule)
        return fired


def resource_key(group, resource, subresource=""):
    """The by_resource key: "group/resource[/subresource]" with "core" for the core group; a
    non-resource request (resource given as a path such as "/api/v1") keeps its path."""
    if resource.startswith("/"):
        return resource
    key = (group or "core") + "/" + resource
    return key + "/" + subresource if subresource else key


class RequestLog:
    """Counts of served requests (total, per verb, per resource, mutating) and a bounded entry list."""

    def __init__(self, max_entries=10000, clock=time.time):
        self._entries = deque(maxlen=max_entries)
        self._sequence = itertools.count(1)
        self._clock = clock
        self._lock = threading.Lock()
        self._reset_counts()

    def _reset_counts(self):
        self._total, self._mutating = 0, 0
        self._by_verb, self._by_resource, self._by_code = {}, {}, {}

    def record(self, verb, group, resource, subresource, namespace, name, code, user):
        key = resource_key(group or "", resource or "", subresource or "")
        with self._lock:
            self._total += 1
            if verb in MUTATING_VERBS:
                self._mutating += 1
            self._by_verb[verb] = self._by_verb.get(verb, 0) + 1
            per_resource = self._by_resource.setdefault(key, {})
            per_resource[verb] = per_resource.get(verb, 0) + 1
            self._by_code[str(code)] = self._by_code.get(str(code), 0) + 1
            self._entries.append({"seq": next(self._sequence), "time": self._clock(), "verb": verb,
                                  "group": group or "", "resource": resource or "", "subresource": subresource or "",
                                  "namespace": namespace or "", "name": name or "", "code": code, "user": user or ""})

    def counts(self):
        """{"total", "by_verb": {verb: n}, "by_resource": {"group/resource": {verb: n}}, "mutating", "by_code"}."""
        with self._lock:
            return {"total": self._total, "by_verb": dict(self._by_verb),
                    "by_resource": {key: dict(verbs) for key, verbs in self._by_resource.items()},
                    "mutating": self._mutating, "by_code": dict(self._by_code)}

    def entries(self, since=0):
        """Entries with seq > since (oldest first; the oldest are dropped past max_entries)."""
        with self._lock:
            return [dict(entry) for entry in self._entries if entry["seq"] > since]

    def reset(self):
        """Clear counts and entries (sequence numbers keep increasing, so `since` stays meaningful)."""
        with self._lock:
            self._entries.clear()
            self._reset_counts()
