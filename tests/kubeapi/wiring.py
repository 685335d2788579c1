"""Optional wiring of the pure modules (schema, patch, typeinfo, ssa, auth, rbac, selectors, table, faults).

Each is imported when present and importable; otherwise a minimal fallback keeps the server running
(and `missing()` names what is degraded, logged at start).
"""
import copy
import fnmatch
import importlib
import logging

from . import errors

LOG = logging.getLogger("kubeapi.wiring")
_MISSING = {}


def _optional(name):
    try:
        return importlib.import_module("tests.kubeapi." + name)
    except ModuleNotFoundError as exc:
        if exc.name != "tests.kubeapi." + name:
            _MISSING[name] = repr(exc)
        else:
            _MISSING[name] = "not present"
    except Exception as exc:  # a module under construction must not take the server down
        _MISSING[name] = repr(exc)
    return None


schema = _optional("schema")
patch = _optional("patch")
typeinfo = _optional("typeinfo")
ssa = _optional("ssa")
auth = _optional("auth")
rbac = _optional("rbac")
selectors = _optional("selectors")
table = _optional("table")
faults = _optional("faults")


def missing():
    return dict(_MISSING)


# --- fallbacks ---------------------------------------------------------------------------------------
class _FallbackUser:
    def __init__(self, username, groups, uid="", extra=None):
        self.username = username
        self.groups = list(groups)
        self.uid = uid
        self.extra = extra or {}


def make_user(username, groups, uid="", extra=None):
    if auth is not None and hasattr(auth, "UserInfo"):
        try:
            return auth.UserInfo(username=username, uid=uid, groups=list(groups), extra=extra or {})
        except TypeError:
            pass
    return _FallbackUser(username, groups, uid, extra)


def user_to_dict(user):
    return {"username": user.username, "uid": getattr(user, "uid", "") or "", "groups": list(user.groups),
            "extra": dict(getattr(user, "extra", {}) or {})}


class FallbackAuthenticator:
    def __init__(self, static_tokens, signing_key, service_account_lookup):
        self.static_tokens = static_tokens

    def authenticate(self, header):
        if not header or not header.startswith("Bearer "):
            return None
        return self.static_tokens.get(header[len("Bearer "):].strip())

    def issue_service_account_token(self, service_account, audiences, expiration_seconds, bound_object_ref, now):
        raise errors.service_unavailable("service account tokens need tests/kubeapi/auth.py")


class FallbackAuthorizer:
    def __init__(self, list_objects):
        pass

    def authorize(self, user, attrs):
        allowed = "system:masters" in user.groups
        return allowed, "" if allowed else "RBAC engine not available"

    def forbidden_message(self, user, attrs):
        return 'User "%s" cannot %s resource "%s" in API group "%s"' % (
            user.username, attrs.verb, attrs.resource, attrs.api_group)

    def rules_for(self, user, namespace):
        return [], []


class FallbackAttributes:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


def request_attributes(**kwargs):
    if rbac is not None and hasattr(rbac, "RequestAttributes"):
        return rbac.RequestAttributes(**kwargs)
    return FallbackAttributes(**kwargs)


class _EqualitySelector:
    def __init__(self, pairs):
        self.pairs = pairs

    def matches(self, labels):
        return all((labels or {}).get(k) == v for k, v in self.pairs)


def parse_label_selector(text):
    if selectors is not None:
        return selectors.parse_label_selector(text)
    pairs = []
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        key, _separator, value = part.replace("==", "=").partition("=")
        pairs.append((key.strip(), value.strip()))
    return _EqualitySelector(pairs)


class _FieldSelector:
    def __init__(self, pairs):
        self.pairs = pairs

    def matches(self, obj):
        return all(_field_value(obj, k) == v for k, v in self.pairs)


def _field_value(obj, path):
    current = obj
    for part in path.split("."):
        current = current.get(part) if isinstance(current, dict) else None
    return "" if current is None else str(current)


def parse_field_selector(text, allowed_fields):
    if selectors is not None:
        return selectors.parse_field_selector(text, allowed_fields)
    pairs = []
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        key, _separator, value = part.replace("==", "=").partition("=")
        if key not in allowed_fields:
            raise errors.bad_request('field label not supported: %s' % key)
        pairs.append((key, value))
    return _FieldSelector(pairs)


def merge_patch(target, patch_doc):
    if patch is not None:
        return patch.merge_patch(target, patch_doc)
    if not isinstance(patch_doc, dict):
        return copy.deepcopy(patch_doc)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch_doc.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target, operations):
    if patch is not None:
        return patch.json_patch(target, operations)
    import jsonpatch
    try:
        return jsonpatch.apply_patch(target, operations)
    except Exception as exc:
        raise errors.invalid("", "", "", [errors.cause("FieldValueInvalid", "", str(exc))])


class FallbackFaults:
    def add(self, rule):
        raise errors.service_unavailable("fault injection needs tests/kubeapi/faults.py")

    def list(self):
        return []

    def clear(self):
        pass

    def remove(self, rule_id):
        pass

    def match(self, *args, **kwargs):
        return None


class FallbackRequestLog:
    def __init__(self):
        self.total = 0

    def record(self, *args, **kwargs):
        self.total += 1

    def counts(self):
        return {"total": self.total, "by_verb": {}, "by_resource": {}, "mutating": 0}

    def entries(self, since=0):
        return []

    def reset(self):
        self.total = 0


def glob_match(pattern, value):
    return fnmatch.fnmatchcase(value or "", pattern or "*")
