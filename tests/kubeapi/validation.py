"""ObjectMeta validation with kube-apiserver's messages (k8s.io/apimachinery/pkg/util/validation)."""
import re

from . import errors
# one implementation of label key / value syntax (IsQualifiedName, IsValidLabelValue): selectors.py's
from .selectors import label_key_errors as qualified_name, label_value_errors as label_value, max_len_error, regex_error

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"

_LABEL_RE = re.compile("^" + DNS1123_LABEL_FMT + "$")
_SUBDOMAIN_RE = re.compile("^" + DNS1123_SUBDOMAIN_FMT + "$")
_DNS1035_RE = re.compile("^" + DNS1035_LABEL_FMT + "$")
_CONFIG_KEY_RE = re.compile("^" + CONFIG_KEY_FMT + "$")
TOTAL_ANNOTATION_SIZE = 256 * 1024


def dns1123_label(value):
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _LABEL_RE.match(value):
        if _SUBDOMAIN_RE.match(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                                    "or '-', and must start and end with an alphanumeric character",
                                    DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1123_subdomain(value):
    errs = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _SUBDOMAIN_RE.match(value):
        errs.append(regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                                "'-' or '.', and must start and end with an alphanumeric character",
                                DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def dns1035_label(value):
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS1035_RE.match(value):
        errs.append(regex_error("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                                "with an alphabetic character, and end with an alphanumeric character",
                                DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def path_segment(value):
    if value in (".", ".."):
        return ["may not be '%s'" % value]
    return ["may not contain '%s'" % bad for bad in ("/", "%") if bad in value]


NAME_RULES = {"subdomain": dns1123_subdomain, "label": dns1123_label, "dns1035": dns1035_label,
              "path": path_segment, "crd": dns1123_subdomain, "event": dns1123_subdomain}


def config_key(value):
    errs = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _CONFIG_KEY_RE.match(value):
        errs.append(regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                                CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    return errs


def validate_name(rule, name, field="metadata.name"):
    return [errors.field_invalid(field, name, msg) for msg in NAME_RULES.get(rule, dns1123_subdomain)(name)]


def validate_object_meta(meta, name_rule, namespaced, check_name=True):
    """Causes for an object's metadata (name, namespace, labels, annotations, finalizers, ownerReferences)."""
    causes = []
    if not isinstance(meta, dict):
        return [errors.field_invalid("metadata", meta, "must be an object")]
    name = meta.get("name") or ""
    if check_name:
        if not name:
            causes.append(errors.field_required("metadata.name", "name or generateName is required"))
        else:
            causes.extend(validate_name(name_rule, name))
    if namespaced and not meta.get("namespace"):
        causes.append(errors.field_required("metadata.namespace", ""))
    if not namespaced and meta.get("namespace"):
        causes.append(errors.field_forbidden("metadata.namespace", "not allowed on this type"))
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        causes.append(errors.field_invalid("metadata.labels", labels, "must be a map of strings"))
        labels = {}
    for key, value in labels.items():
        causes.extend(errors.field_invalid("metadata.labels", key, m) for m in qualified_name(key))
        if not isinstance(value, str):
            causes.append(errors.field_invalid("metadata.labels", value, "must be a string"))
        else:
            causes.extend(errors.field_invalid("metadata.labels", value, m) for m in label_value(value))
    annotations = meta.get("annotations") or {}
    total = 0
    for key, value in annotations.items():
        causes.extend(errors.field_invalid("metadata.annotations", key, m) for m in qualified_name(key.lower()))
        total += len(key) + len(value if isinstance(value, str) else str(value))
    if total > TOTAL_ANNOTATION_SIZE:
        causes.append(errors.cause(errors.FIELD_TOO_LONG, "metadata.annotations",
                                   "Too long: must have at most %d bytes" % TOTAL_ANNOTATION_SIZE))
    for index, finalizer in enumerate(meta.get("finalizers") or []):
        for msg in qualified_name(finalizer):
            causes.append(errors.field_invalid("metadata.finalizers[%d]" % index, finalizer, msg))
    controllers = 0
    for index, ref in enumerate(meta.get("ownerReferences") or []):
        path = "metadata.ownerReferences[%d]" % index
        for key in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(key):
                detail = {"apiVersion": "version must not be empty", "kind": "must not be empty",
                          "name": "must not be empty", "uid": "must not be empty"}[key]
                causes.append(errors.field_invalid(path + "." + key, ref.get(key, ""), detail))
        if ref.get("controller"):
            controllers += 1
    if controllers > 1:
        causes.append(errors.field_invalid("metadata.ownerReferences", meta.get("ownerReferences"),
                                           "Only one reference can have Controller set to true"))
    return causes
