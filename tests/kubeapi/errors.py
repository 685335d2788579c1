"""Client-visible API errors rendered as real metav1.Status bodies.

Messages, reasons and codes follow k8s.io/apimachinery/pkg/api/errors (NewNotFound, NewConflict,
NewInvalid, ...) so clients that parse them (kubectl, the kubernetes Python client, Ansible) behave
as against a real kube-apiserver.
"""
import json

# Field error types (k8s.io/apimachinery/pkg/util/validation/field.ErrorType) used as Status causes.
FIELD_REQUIRED = "FieldValueRequired"
FIELD_INVALID = "FieldValueInvalid"
FIELD_NOT_SUPPORTED = "FieldValueNotSupported"
FIELD_DUPLICATE = "FieldValueDuplicate"
FIELD_FORBIDDEN = "FieldValueForbidden"
FIELD_TOO_LONG = "FieldValueTooLong"
FIELD_TOO_MANY = "FieldValueTooMany"
FIELD_TYPE_INVALID = "FieldValueTypeInvalid"
FIELD_NOT_FOUND = "FieldValueNotFound"

MAX_BODY_BYTES = 3 * 1024 * 1024


def qualified_resource(group, resource):
    """`deployments.apps`, or `pods` for the core group (schema.GroupResource.String())."""
    return "%s.%s" % (resource, group) if group else resource


def qualified_kind(group, kind):
    """`Deployment.apps`, or `Pod` for the core group (schema.GroupKind.String())."""
    return "%s.%s" % (kind, group) if group else kind


def format_value(value):
    """Render a value the way field.Error does (%q for strings, JSON-ish for the rest)."""
    if isinstance(value, str):
        return json.dumps(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def cause(reason, field, message):
    """One Status cause: {"reason", "message", "field"} (message is field.Error.ErrorBody())."""
    return {"reason": reason, "message": message, "field": field}


def field_required(field, detail=""):
    return cause(FIELD_REQUIRED, field, "Required value" + (": " + detail if detail else ""))


def field_invalid(field, value, detail=""):
    return cause(FIELD_INVALID, field, "Invalid value: %s" % format_value(value) + (": " + detail if detail else ""))


def field_forbidden(field, detail):
    return cause(FIELD_FORBIDDEN, field, "Forbidden: " + detail)


def field_not_supported(field, value, supported):
    text = "Unsupported value: %s" % format_value(value)
    if supported:
        text += ": supported values: " + ", ".join(json.dumps(s) for s in supported)
    return cause(FIELD_NOT_SUPPORTED, field, text)


def field_duplicate(field, value):
    return cause(FIELD_DUPLICATE, field, "Duplicate value: %s" % format_value(value))


def field_too_long(field, value, max_length):
    return cause(FIELD_TOO_LONG, field, "Too long: may not be more than %d bytes" % max_length)


def field_type_invalid(field, value, detail):
    return cause(FIELD_TYPE_INVALID, field, "Invalid value: %s: %s" % (format_value(value), detail))


def cause_text(c):
    """field.Error.Error(): "<field>: <body>" (body only when the field is empty)."""
    return "%s: %s" % (c["field"], c["message"]) if c.get("field") else c["message"]


class ApiError(Exception):
    """An error answered to the client as a metav1.Status with `code`."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details  # dict or None
        self.headers = headers or {}

    def status_body(self):
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code   # the real field order: ..., reason, details, code
        if not self.reason:
            del body["reason"]
        return body

    def __repr__(self):
        return "ApiError(%d, %s, %r)" % (self.code, self.reason, self.message)


def _details(group="", kind="", name="", causes=None, **extra):
    details = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if kind:
        details["kind"] = kind
    if causes:
        details["causes"] = causes
    details.update(extra)
    return details or None


def not_found(group, resource, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (qualified_resource(group, resource), name),
                    _details(group, resource, name))


def already_exists(group, resource, name):
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (qualified_resource(group, resource), name),
                    _details(group, resource, name))


STALE_OBJECT_TEXT = "the object has been modified; please apply your changes to the latest version and try again"


def conflict(group, resource, name, reason_text=STALE_OBJECT_TEXT, causes=None):
    return ApiError(409, "Conflict",
                    'Operation cannot be fulfilled on %s "%s": %s' % (qualified_resource(group, resource), name, reason_text),
                    _details(group, resource, name, causes))


def invalid(group, kind, name, causes):
    texts = [cause_text(c) for c in causes]
    aggregate = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (qualified_kind(group, kind), name, aggregate),
                    _details(group, kind, name, list(causes)))


def bad_request(message, causes=None):
    return ApiError(400, "BadRequest", message, _details(causes=causes) if causes else None)


def forbidden(message, group="", resource="", name=""):
    """NewForbidden: `<resource> "<name>" is forbidden: <message>` (without name: `<resource> is forbidden:`)."""
    if resource:
        qualified = qualified_resource(group, resource)
        prefix = '%s "%s" is forbidden: ' % (qualified, name) if name else "%s is forbidden: " % qualified
    else:
        prefix = "forbidden: "
    return ApiError(403, "Forbidden", prefix + message, _details(group, resource, name))


def unauthorized(message="Unauthorized"):
    return ApiError(401, "Unauthorized", message)


def method_not_allowed(group="", resource="", action=""):
    if resource:
        message = '%s is not supported on resources of kind "%s"' % (action, qualified_resource(group, resource))
    else:
        message = "the server does not allow this method on the requested resource"
    return ApiError(405, "MethodNotAllowed", message, _details(group, resource))


ACCEPTED_BODY_TYPES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")


def unsupported_media_type(content_type, accepted=ACCEPTED_BODY_TYPES):
    # the real message does not echo the offending type; content_type is kept for logs
    return ApiError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: "
                    + ", ".join(accepted))


def not_acceptable(accepted=("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")):
    return ApiError(406, "NotAcceptable", "only the following media types are accepted: " + ", ".join(accepted))


def request_entity_too_large(limit=MAX_BODY_BYTES):
    return ApiError(413, "RequestEntityTooLarge", "Request entity too large: limit is %d" % limit)


def gone(message):
    return ApiError(410, "Gone", message)


def expired(message):
    """NewResourceExpired: 410 with reason Expired (too old resourceVersion, stale continue token)."""
    return ApiError(410, "Expired", message)


def timeout(message, retry_after_seconds=0):
    return ApiError(504, "Timeout", "Timeout: " + message,
                    {"retryAfterSeconds": retry_after_seconds} if retry_after_seconds else None)


def internal(message):
    return ApiError(500, "InternalError", "Internal error occurred: " + message,
                    {"causes": [{"message": message}]})


def service_unavailable(message):
    return ApiError(503, "ServiceUnavailable", message)


def too_many_requests(message="Too many requests, please try again later.", retry_after_seconds=1):
    return ApiError(429, "TooManyRequests", message, {"retryAfterSeconds": retry_after_seconds})


def route_not_found():
    """The body kube-apiserver answers for paths and resources it does not serve."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def status_for_code(code, message):
    """A Status for an arbitrary injected code (fault rules): reason as the real server maps codes."""
    reasons = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
               409: "Conflict", 410: "Gone", 413: "RequestEntityTooLarge", 415: "UnsupportedMediaType",
               422: "Invalid", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
               504: "Timeout"}
    return ApiError(code, reasons.get(code, "Unknown" if code >= 400 else ""), message)


def success_status(details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        body["details"] = details
    return body
