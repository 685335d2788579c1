"""Kubernetes Status bodies for the errors the proxy itself answers (clients parse these, not text)."""
import json

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    501: "NotImplemented",
    502: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_dict(code, message, reason=None, details=None):
    """A v1 Status with status Failure, the HTTP code and a message that says what to do."""
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason or _REASONS.get(code, "InternalError"),
        "code": code,
    }
    if details:
        status["details"] = details
    return status


def status_bytes(code, message, reason=None, details=None):
    return json.dumps(status_dict(code, message, reason, details)).encode()


class ProxyError(Exception):
    """An error the proxy answers itself with a Status of this code."""

    def __init__(self, code, message, reason=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason
