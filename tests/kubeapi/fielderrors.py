"""field.Error rendering and string formats, as kube-apiserver words CRD validation causes.

- go_value()/go_float(): how field.Error.ErrorBody prints bad values (%q for strings, %v for numbers,
  %#v for maps and slices: `map[string]interface {}{"key":"k"}`).
- err_*(): Status causes {"reason", "message", "field"} with the kubectl-1.33-era wording
  ("Too long: may not be more than 63 bytes", "Too many: 33: must have at most 32 items").
- format_ok(): the string formats CRD schemas validate (apiextensions' supported formats; others
  are accepted, as the server strips unsupported formats).
"""
import base64
import ipaddress
import json
import math
import re
from datetime import date, datetime
from urllib.parse import urlsplit


def go_float(value):
    """fmt %v of a float64: shortest digits, exponent form when exp < -4 or exp >= 6 (strconv 'g', -1)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"
    mantissa, _separator, exp = repr(abs(value)).partition("e")
    int_part, _separator, frac = mantissa.partition(".")
    digits = int_part + frac
    point = len(int_part) + (int(exp) if exp else 0)  # decimal point position within `digits`
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    exponent = point - 1
    sign = "-" if value < 0 else ""
    if exponent < -4 or exponent >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return "%s%se%s%02d" % (sign, mant, "-" if exponent < 0 else "+", abs(exponent))
    if point <= 0:
        return sign + "0." + "0" * (-point) + digits
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return sign + digits[:point] + "." + digits[point:]


def go_quote(text):
    return json.dumps(text, ensure_ascii=False)


def go_value(value, nested=False):
    """%v/%q rendering of a decoded JSON value as field.Error prints it."""
    if value is None:
        return "interface {}(nil)" if nested else "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_value(v, True) for v in value) + "}"
    return "map[string]interface {}{" + ", ".join(
        "%s:%s" % (go_quote(k), go_value(value[k], True)) for k in sorted(value)) + "}"


def _cause(reason, field, message):
    out = {"reason": reason, "message": message, "field": field}
    if not field:
        del out["field"]  # metav1.StatusCause.Field is omitempty
    return out


def err_required(field):
    return _cause("FieldValueRequired", field, "Required value")


def err_invalid(field, value, detail):
    return _cause("FieldValueInvalid", field, "Invalid value: %s: %s" % (go_value(value), detail))


def err_type(field, value, detail):
    return _cause("FieldValueTypeInvalid", field, "Invalid value: %s: %s" % (go_value(value), detail))


def err_not_supported(field, value, supported):
    text = "Unsupported value: %s" % go_value(value)
    if supported:
        text += ": supported values: " + ", ".join(go_quote(v) for v in supported)
    return _cause("FieldValueNotSupported", field, text)


def err_too_long(field, max_length):
    return _cause("FieldValueTooLong", field, "Too long: may not be more than %d byte%s"
                  % (max_length, "" if max_length == 1 else "s"))


def err_too_many(field, actual, maximum):
    return _cause("FieldValueTooMany", field, "Too many: %d: must have at most %d item%s"
                  % (actual, maximum, "" if maximum == 1 else "s"))


def err_duplicate(field, value):
    return _cause("FieldValueDuplicate", field, "Duplicate value: %s" % go_value(value))


_DURATION_UNITS = r"(ns|us|µs|ms|s|m|h|d|w)"
_GO_DURATION = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))*$|^0$")
_OPENAPI_DURATION = re.compile(r"^(\d+\s*" + _DURATION_UNITS + r"[a-z]*\s*)+$")
_HOSTNAME = re.compile(r"^[^\W_]([-\w]{0,61}[^\W_])?(\.[^\W_]([-\w]{0,61}[^\W_])?)*\.?$")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5,19}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{4}\.){2,9}[0-9A-Fa-f]{4}$")
_UUID = {
    "uuid": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
    "uuid3": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"),
    "uuid4": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"),
    "uuid5": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"),
}
FORMAT_NAMES = {"datetime": "date-time"}


def format_ok(fmt, value):  # noqa: C901 - one branch per format, as strfmt's registry
    try:
        if fmt == "datetime":
            if not _DATE_TIME.match(value):
                return False
            datetime.strptime(value[:10], "%Y-%m-%d")
            return True
        if fmt == "date":
            date.fromisoformat(value)
            return len(value) == 10
        if fmt == "duration":
            return bool(_GO_DURATION.match(value) or _OPENAPI_DURATION.match(value))
        if fmt == "byte":
            base64.b64decode(value, validate=True)
            return True
        if fmt == "uri":  # Go url.ParseRequestURI: absolute URI or absolute path
            parts = urlsplit(value)
            return bool(parts.scheme or value.startswith("/")) and " " not in value
        if fmt == "hostname":
            return len(value) <= 255 and bool(_HOSTNAME.match(value))
        if fmt == "ipv4":
            ipaddress.IPv4Address(value)
            return True
        if fmt == "ipv6":
            ipaddress.IPv6Address(value)
            return True
        if fmt == "cidr":
            ipaddress.ip_network(value, strict=False)
            return "/" in value
        if fmt == "mac":
            return bool(_MAC.match(value))
        if fmt in _UUID:
            return bool(_UUID[fmt].match(value))
        if fmt == "email":
            return bool(_EMAIL.match(value))
        if fmt == "bsonobjectid":
            return bool(re.match(r"^[0-9a-fA-F]{24}$", value))
    except (ValueError, TypeError):
        return False
    return True  # password, isbn*, creditcard, ssn, colors: accepted (not used by our CRDs)
