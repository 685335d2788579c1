"""Fault rules, the request log and request parsing of testenv/faultproxy.py (a fault-injecting proxy in front
of a real kube-apiserver).

A rule matches requests by verb, API group, resource, subresource, namespace and name (fnmatch globs,
"*" = anything; a non-resource request has its path as resource). Each rule counts the requests it
matches; from the `nth` matching request on it fires `count` times (-1 = every time) with its action:
"error" (answer `code` with a Status), "hang" (wait `seconds`, then serve the request normally) or
"drop" (close the connection without an answer). A bad rule raises ValueError naming the field.

`request_info()` says which verb and resource a request is about, as kube-apiserver's
RequestInfoFactory does. Pure: no I/O, no awaits; locks keep the classes safe across threads.
"""
import fnmatch
import itertools
import threading
import time
from collections import deque
from typing import NamedTuple
from urllib.parse import parse_qsl

ACTIONS = ("error", "hang", "drop")
MUTATING_VERBS = frozenset(("create", "update", "patch", "delete", "deletecollection"))
# Created and answered, never stored: the access and token reviews (the collection's pre-flight sends them).
UNSTORED_RESOURCES = frozenset(("selfsubjectaccessreviews", "selfsubjectrulesreviews", "subjectaccessreviews",
                                "localsubjectaccessreviews", "tokenreviews"))

_MATCH_FIELDS = ("verb", "group", "resource", "subresource", "namespace", "name")
_RULE_FIELDS = frozenset(_MATCH_FIELDS + ("nth", "count", "action", "code", "seconds", "message", "id"))
DEFAULT_ERROR_MESSAGE = "injected fault"
# metav1.StatusReason of an error code, as the apiserver's errors package maps them
REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
           406: "NotAcceptable", 409: "Conflict", 410: "Gone", 413: "RequestEntityTooLarge",
           415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
           503: "ServiceUnavailable", 504: "Timeout"}


def _require(condition, field, expected, found):
    if not condition:
        raise ValueError("fault rule field %r: expected %s, found %r; fix the rule" % (field, expected, found))


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


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
    _require(_is_int(clean["nth"]) and clean["nth"] >= 1, "nth", "an integer >= 1", clean["nth"])
    clean["count"] = rule.get("count", 1)
    _require(_is_int(clean["count"]) and (clean["count"] >= 1 or clean["count"] == -1), "count",
             "an integer >= 1, or -1 for always", clean["count"])
    clean["code"] = rule.get("code", 500)
    _require(_is_int(clean["code"]) and 400 <= clean["code"] <= 599, "code", "an HTTP error status 400..599",
             clean["code"])
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


def is_write(entry):
    """True when a request log entry changes what the API server stores (a review's create does not)."""
    return entry["verb"] in MUTATING_VERBS and entry["resource"] not in UNSTORED_RESOURCES


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

    def record(self, verb, group, resource, subresource, namespace, name, code, user, dry_run=False):
        key = resource_key(group or "", resource or "", subresource or "")
        with self._lock:
            self._total += 1
            if is_write({"verb": verb, "resource": resource or ""}):
                self._mutating += 1
            self._by_verb[verb] = self._by_verb.get(verb, 0) + 1
            per_resource = self._by_resource.setdefault(key, {})
            per_resource[verb] = per_resource.get(verb, 0) + 1
            self._by_code[str(code)] = self._by_code.get(str(code), 0) + 1
            self._entries.append({"seq": next(self._sequence), "time": self._clock(), "verb": verb,
                                  "group": group or "", "resource": resource or "", "subresource": subresource or "",
                                  "namespace": namespace or "", "name": name or "", "code": code, "user": user or "",
                                  "dry_run": bool(dry_run)})

    def counts(self):
        """{"total", "by_verb": {verb: n}, "by_resource": {"group/resource": {verb: n}}, "mutating" (is_write), "by_code"}."""
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


# --- request parsing -----------------------------------------------------------------------------------
_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_SPECIAL_VERBS = ("proxy", "watch")


class RequestInfo(NamedTuple):
    """What a request is about; resource_request False for non-resource paths (/version, /apis/apps/v1 ...)."""
    path: str
    verb: str
    resource_request: bool = False
    api_prefix: str = ""
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    def match_args(self):
        """(verb, group, resource, subresource, namespace, name) for FaultInjector.match and RequestLog.record:
        a non-resource request is keyed by its path."""
        resource = self.resource if self.resource_request else self.path
        return self.verb, self.group, resource, self.subresource, self.namespace, self.name


def _query_bool(values):
    """A query flag as the apiserver decodes it: absent, "0" and "false" are false, anything else true."""
    return bool(values) and values[0] != "0" and values[0].lower() != "false"


def _exact_name(field_selector):
    """The name a fieldSelector requires (metadata.name=x or ==x), else ""."""
    for term in (field_selector or "").split(","):
        key, operator, value = term.partition("==") if "==" in term else term.partition("=")
        if operator and not key.endswith("!") and key.strip() == "metadata.name":
            value = value.strip()
            if value and value not in (".", "..") and "/" not in value and "%" not in value:
                return value
    return ""


def request_info(method, path, query=""):
    """RequestInfoFactory.NewRequestInfo: the verb and resource of `method path?query`.

    query is the raw query string or a {name: value} mapping. Resource verbs: get, list, watch (?watch=true or
    /watch/ paths), create, update, patch, delete, deletecollection, proxy; non-resource ones: the method lowercased.
    """
    if isinstance(query, str):
        pairs = parse_qsl(query.lstrip("?"), keep_blank_values=True)
    else:
        pairs = list(query.items())
    params = {}
    for key, value in pairs:
        params.setdefault(key, []).append(value)
    parts = path.strip("/").split("/") if path.strip("/") else []
    non_resource = RequestInfo(path=path, verb=method.lower())
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return non_resource
    prefix, rest = parts[0], parts[1:]
    group = ""
    if prefix == "apis":
        if len(rest) < 3:
            return non_resource
        group, rest = rest[0], rest[1:]
    version, rest = rest[0], rest[1:]
    verb = ""
    if rest[0] in _SPECIAL_VERBS:
        if len(rest) < 2:
            return non_resource     # the apiserver fails these ("unable to determine kind and namespace")
        verb, rest = rest[0], rest[1:]
    else:
        verb = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete"}.get(method.upper(), "")
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 and verb != "proxy" else ""
    if not name and verb == "get":
        verb = "watch" if _query_bool(params.get("watch")) else "list"
        name = _exact_name((params.get("fieldSelector") or [""])[0])
    if not name and verb == "delete":
        verb = "deletecollection"
    return RequestInfo(path=path, verb=verb, resource_request=True, api_prefix=prefix, group=group,
                       version=version, resource=resource, subresource=subresource, namespace=namespace, name=name)
