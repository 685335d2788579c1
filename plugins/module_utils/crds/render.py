# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Render the private twin of a CAPI CustomResourceDefinition (pure Python, no I/O, no Ansible).

A private twin keeps every version, schema, subresource, printer column, scope and validation rule of
its source byte for byte; it changes only what must differ for it to live beside the standard CRD:

* ``spec.group`` and ``metadata.name`` (``<plural>.<private group>``), through translate.groups.GroupMap;
* ``spec.names.shortNames``: each prefixed (``ma`` -> ``hcpma``) and ``spec.names.categories``:
  ``cluster-api`` -> ``hypershift-capi``, any other category prefixed ``hypershift-capi-``, so that
  ``kubectl get ma`` / ``kubectl get cluster-api`` keep meaning the standard objects;
* ``spec.conversion`` (``twin_conversion``): Webhook at the conversion shim when more than one version is
  served and either the group is the CAPI core group (the shim converts it) or the source CRD itself converts
  through a webhook (the shim delegates to that webhook); else None, as the source: a provider whose standard CRD
  serves two versions without a webhook (Agent's v1alpha1/v1beta1) keeps that on its twin. Never the standard
  CAPI webhook service itself (it cannot decode the private groups);
* metadata: labels/annotations that point at CAPI's own tooling are dropped (cert-manager CA
  injection of CAPI's certificate, clusterctl provider labels that would let ``clusterctl delete``
  remove the twin); provenance annotations are added (source group, source CRD, source hash).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import copy
import hashlib
import json
import re

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    CRD_MANAGED_LABEL,
    RENDER_HASH_ANNOTATION,
    SOURCE_CRD_ANNOTATION,
    SOURCE_GROUP_ANNOTATION,
    SOURCE_HASH_ANNOTATION,
    SOURCE_LABELS_ANNOTATION,
    SOURCE_VERSIONS_ANNOTATION,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.crd_names import (  # noqa: F401
    DEFAULT_CATEGORY,
    DEFAULT_SHORT_NAME_PREFIX,
    STANDARD_CATEGORY,
    dropped_labels,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions import converts_group
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    PRIVATE_SUFFIX,
    STANDARD_SUFFIX,
    CapiTranslationError,
    GroupMap,
    TO_PRIVATE,
    translate_crd_name,
)

CRD_API_VERSION = "apiextensions.k8s.io/v1"
CRD_KIND = "CustomResourceDefinition"

DEFAULT_WEBHOOK_SERVICE_NAME = "capi-conversion-webhook-shim"
DEFAULT_WEBHOOK_SERVICE_NAMESPACE = "hypershift"
DEFAULT_WEBHOOK_SERVICE_PATH = "/convert"
DEFAULT_WEBHOOK_SERVICE_PORT = 443
CONVERSION_REVIEW_VERSIONS = ["v1"]

# Provenance written on every rendered CRD (keys under the HyperShift domain, values plain strings).
MANAGED_LABEL_VALUE = "true"
PROVENANCE_ANNOTATIONS = (
    SOURCE_GROUP_ANNOTATION,
    SOURCE_CRD_ANNOTATION,
    SOURCE_VERSIONS_ANNOTATION,
    SOURCE_HASH_ANNOTATION,
    SOURCE_LABELS_ANNOTATION,
    RENDER_HASH_ANNOTATION,
)

# Source metadata that must not follow the twin: it points at CAPI's certificate or CAPI's installer.
_DROPPED_ANNOTATION_PREFIXES = ("cert-manager.io/", "kubectl.kubernetes.io/last-applied-configuration")

_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MAX = 63
_PEM_MARKER = "-----BEGIN"


class CrdRenderError(PrivateCapiError, ValueError):
    """An input CRD or option that cannot be rendered; the message names it and what to do."""


class RenderOptions(object):
    """What a render needs besides the source CRDs (immutable once built; validated on construction)."""

    def __init__(
        self,
        group_map=None,
        short_name_prefix=DEFAULT_SHORT_NAME_PREFIX,
        category=DEFAULT_CATEGORY,
        webhook_service_name=DEFAULT_WEBHOOK_SERVICE_NAME,
        webhook_service_namespace=DEFAULT_WEBHOOK_SERVICE_NAMESPACE,
        webhook_service_path=DEFAULT_WEBHOOK_SERVICE_PATH,
        webhook_service_port=DEFAULT_WEBHOOK_SERVICE_PORT,
        webhook_url=None,
        webhook_ca_bundle=None,
    ):
        self.group_map = group_map if group_map is not None else GroupMap()
        if not isinstance(self.group_map, GroupMap):
            raise CrdRenderError("group_map must be a translate.groups.GroupMap, got %s"
                                 % type(self.group_map).__name__)
        if not isinstance(short_name_prefix, str) or re.match(r"^[a-z][-a-z0-9]{0,30}$", short_name_prefix) is None:
            raise CrdRenderError(
                "short_name_prefix must start with a lowercase letter and hold only [-a-z0-9] (at most 31), got %r"
                % (short_name_prefix,)
            )
        _require_dns1035("category", category)
        if category == STANDARD_CATEGORY:
            raise CrdRenderError(
                "category %r is the standard CAPI category; pick another (default %r)" % (category, DEFAULT_CATEGORY)
            )
        self.short_name_prefix = short_name_prefix
        self.category = category
        self.webhook_url = webhook_url or None
        if self.webhook_url is not None:
            _check_webhook_url(self.webhook_url)
        else:
            _require_dns1035("conversion webhook service name", webhook_service_name)
            _require_dns1035("conversion webhook service namespace", webhook_service_namespace)
            if not isinstance(webhook_service_path, str) or not webhook_service_path.startswith("/"):
                raise CrdRenderError(
                    "conversion webhook service path must start with '/', got %r (the shim serves /convert)"
                    % (webhook_service_path,)
                )
            if not isinstance(webhook_service_port, int) or not 1 <= webhook_service_port <= 65535:
                raise CrdRenderError("conversion webhook service port must be 1-65535, got %r" % (webhook_service_port,))
        self.webhook_service_name = webhook_service_name
        self.webhook_service_namespace = webhook_service_namespace
        self.webhook_service_path = webhook_service_path
        self.webhook_service_port = webhook_service_port
        self.webhook_ca_bundle = normalize_ca_bundle(webhook_ca_bundle)

    def conversion_webhook(self):
        """spec.conversion.webhook for a multi-version twin (a fresh dict each call)."""
        if self.webhook_url is not None:
            client_config = {"url": self.webhook_url}
        else:
            client_config = {
                "service": {
                    "name": self.webhook_service_name,
                    "namespace": self.webhook_service_namespace,
                    "path": self.webhook_service_path,
                    "port": self.webhook_service_port,
                }
            }
        if self.webhook_ca_bundle:
            client_config["caBundle"] = self.webhook_ca_bundle
        return {"clientConfig": client_config, "conversionReviewVersions": list(CONVERSION_REVIEW_VERSIONS)}


def _require_dns1035(what, value):
    if not isinstance(value, str) or not value or len(value) > _DNS1035_MAX:
        raise CrdRenderError("%s must be a DNS-1035 label (1-63 characters), got %r" % (what, value))
    if _DNS1035_LABEL.match(value) is None:
        raise CrdRenderError(
            "%s must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter), got %r" % (what, value)
        )


def _check_webhook_url(url):
    if not isinstance(url, str) or not url.startswith("https://"):
        raise CrdRenderError("conversion webhook URL must use https://, got %r (the API server calls it over TLS)" % (url,))
    if "#" in url or "?" in url or "@" in url.split("/", 3)[2]:
        raise CrdRenderError("conversion webhook URL %r must not contain user info, a query or a fragment" % (url,))


def normalize_ca_bundle(ca_bundle):
    """The caBundle as the API wants it (base64 of PEM); accepts PEM text or base64; None/'' -> None."""
    if ca_bundle is None or ca_bundle == "":
        return None
    if not isinstance(ca_bundle, str):
        raise CrdRenderError("conversion webhook caBundle must be a string (PEM or base64), got %s" % type(ca_bundle).__name__)
    text = ca_bundle.strip()
    if text.startswith(_PEM_MARKER):
        return base64.b64encode(text.encode("ascii") + b"\n").decode("ascii")
    try:
        decoded = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise CrdRenderError(
            "conversion webhook caBundle is neither PEM ('-----BEGIN CERTIFICATE-----...') nor valid base64; "
            "pass the shim's CA certificate"
        )
    if _PEM_MARKER.encode("ascii") not in decoded:
        raise CrdRenderError("conversion webhook caBundle decodes from base64 but holds no PEM certificate; pass the shim's CA")
    return "".join(text.split())


def canonical_hash(value):
    """sha256 of canonical JSON (sorted keys, no spaces): stable across processes and key order."""
    encoded = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    return "sha256:" + hashlib.sha256(encoded).hexdigest()


def source_spec_hash(source_crd):
    """Hash of what defines a source CRD's API (its spec minus conversion, which each install rewrites)."""
    spec = dict(source_crd.get("spec") or {})
    spec.pop("conversion", None)
    return canonical_hash(spec)


def served_versions(crd):
    return [version["name"] for version in crd["spec"].get("versions") or () if version.get("served")]


def twin_conversion(source_crd, options):
    """spec.conversion of a source CRD's private twin (see the module docstring for the rule)."""
    source_spec = source_crd["spec"]
    through_webhook = (source_spec.get("conversion") or {}).get("strategy") == "Webhook"
    if len(served_versions(source_crd)) > 1 and (converts_group(source_spec["group"], options.group_map) or through_webhook):
        return {"strategy": "Webhook", "webhook": options.conversion_webhook()}
    return {"strategy": "None"}


def describe_source(origin, index):
    """'<origin> document <index>' for error messages (origin: a file path or 'definitions')."""
    return "%s document %d" % (origin, index)


def check_source_crd(document, where):
    """Fail (CrdRenderError naming `where`) unless document is a v1 CRD this renderer can read."""
    if not isinstance(document, dict):
        raise CrdRenderError("%s: expected a CustomResourceDefinition mapping, found %s" % (where, type(document).__name__))
    kind = document.get("kind")
    if kind != CRD_KIND:
        raise CrdRenderError("%s: expected kind CustomResourceDefinition, found kind %r; pass only CRDs" % (where, kind))
    if document.get("apiVersion") != CRD_API_VERSION:
        raise CrdRenderError(
            "%s: expected apiVersion %s, found %r (apiextensions.k8s.io/v1beta1 CRDs are gone since Kubernetes 1.22)"
            % (where, CRD_API_VERSION, document.get("apiVersion"))
        )
    metadata = document.get("metadata")
    spec = document.get("spec")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        raise CrdRenderError("%s: metadata.name is missing; a CRD is named <plural>.<group>" % where)
    name = metadata["name"]
    if not isinstance(spec, dict) or not isinstance(spec.get("group"), str) or not spec.get("group"):
        raise CrdRenderError("%s (CRD %s): spec.group is missing or not a string" % (where, name))
    names = spec.get("names")
    if not isinstance(names, dict) or not isinstance(names.get("plural"), str):
        raise CrdRenderError("%s (CRD %s): spec.names.plural is missing" % (where, name))
    if name != "%s.%s" % (names["plural"], spec["group"]):
        raise CrdRenderError(
            "%s: metadata.name %r does not equal spec.names.plural + '.' + spec.group (%r); the API server rejects it"
            % (where, name, "%s.%s" % (names["plural"], spec["group"]))
        )
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions or not all(isinstance(v, dict) and v.get("name") for v in versions):
        raise CrdRenderError("%s (CRD %s): spec.versions must be a non-empty list of named versions" % (where, name))
    if not any(version.get("served") for version in versions):
        raise CrdRenderError("%s (CRD %s): no version is served; nothing to render" % (where, name))


def _looks_like_capi(group):
    """A group that names the CAPI suffix somewhere but is not a whole-label suffix match (e.g. a typo)."""
    return STANDARD_SUFFIX in group or PRIVATE_SUFFIX in group


def skip_reason(source_crd, group_map):
    """Why a (checked) source CRD is not rendered, or None when it is a standard CAPI CRD to render."""
    group = source_crd["spec"]["group"]
    if group_map.is_standard(group):
        return None
    if group_map.is_private(group):
        return "group %s is already private (this is a rendered twin)" % group
    if group_map.is_excluded(group):
        return "group %s is no HyperShift CAPI type (excluded from translation: EXCLUDED_STANDARD_GROUPS)" % group
    if _looks_like_capi(group):
        raise CrdRenderError(
            "CRD %s: group %r mentions %s but is not a mappable CAPI group (only %s and <x>.%s map); "
            "fix the group or add the pair to extra_groups"
            % (source_crd["metadata"]["name"], group, STANDARD_SUFFIX, STANDARD_SUFFIX, STANDARD_SUFFIX)
        )
    return "group %s is not a standard CAPI group (add it to extra_groups to render it)" % group


def private_short_names(short_names, options):
    result = []
    for short_name in short_names or ():
        private = options.short_name_prefix + short_name
        _require_dns1035("private short name for %r" % short_name, private)
        result.append(private)
    return result


def private_categories(categories, options):
    result = []
    for category in categories or ():
        private = options.category if category == STANDARD_CATEGORY else "%s-%s" % (options.category, category)
        _require_dns1035("private category for %r" % category, private)
        if private not in result:
            result.append(private)
    return result


def _kept_labels(labels):
    aside = dropped_labels(labels)
    return {key: value for key, value in (labels or {}).items() if key not in aside and key != CRD_MANAGED_LABEL}


def _kept_annotations(annotations):
    return {
        key: value
        for key, value in (annotations or {}).items()
        if not any(key.startswith(prefix) for prefix in _DROPPED_ANNOTATION_PREFIXES) and key not in PROVENANCE_ANNOTATIONS
    }


def render_private_crd(source_crd, options):
    """The private twin of one checked, standard-group source CRD (a new dict; the input is not touched)."""
    group_map = options.group_map
    source_spec = source_crd["spec"]
    source_name = source_crd["metadata"]["name"]
    private_group = group_map.to_private(source_spec["group"])
    spec = copy.deepcopy(source_spec)
    spec["group"] = private_group
    names = spec["names"]
    if "shortNames" in names:
        names["shortNames"] = private_short_names(names["shortNames"], options)
    if "categories" in names:
        names["categories"] = private_categories(names["categories"], options)
    spec["conversion"] = twin_conversion(source_crd, options)
    source_metadata = source_crd.get("metadata") or {}
    labels = _kept_labels(source_metadata.get("labels"))
    labels[CRD_MANAGED_LABEL] = MANAGED_LABEL_VALUE
    annotations = _kept_annotations(source_metadata.get("annotations"))
    annotations[SOURCE_GROUP_ANNOTATION] = source_spec["group"]
    annotations[SOURCE_CRD_ANNOTATION] = source_name
    annotations[SOURCE_VERSIONS_ANNOTATION] = ",".join(served_versions(source_crd))
    kept_aside = dropped_labels(source_metadata.get("labels"))
    if kept_aside:  # the proxy shows them again (clusterctl through it); the server's twin does not carry them
        annotations[SOURCE_LABELS_ANNOTATION] = json.dumps(kept_aside, sort_keys=True, separators=(",", ":"))
    annotations[SOURCE_HASH_ANNOTATION] = source_spec_hash(source_crd)
    annotations[RENDER_HASH_ANNOTATION] = canonical_hash({"spec": spec, "labels": labels, "annotations": annotations})
    return {
        "apiVersion": CRD_API_VERSION,
        "kind": CRD_KIND,
        "metadata": {
            "name": translate_crd_name(source_name, TO_PRIVATE, group_map),
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    }


class RenderResult(object):
    """rendered: twins in input order; skipped: [{name, group, origin, reason}]; sources: name -> source CRD."""

    def __init__(self):
        self.rendered = []
        self.skipped = []
        self.source_by_private_name = {}

    @property
    def rendered_names(self):
        return [crd["metadata"]["name"] for crd in self.rendered]

    @property
    def skipped_names(self):
        return [entry["name"] for entry in self.skipped]


def render_all(documents, options):
    """Check every (origin, index, document) first, then render; any input error raises before output.

    documents: iterable of (origin, index, document); origin names the file ('definitions' or
    'cluster' for other inputs) and index is the 0-based document position in it.
    """
    checked = []
    seen_sources = {}
    for origin, index, document in documents:
        where = describe_source(origin, index)
        check_source_crd(document, where)
        name = document["metadata"]["name"]
        if name in seen_sources:
            raise CrdRenderError(
                "%s: CRD %s is given twice (first at %s); pass each CRD once" % (where, name, seen_sources[name])
            )
        seen_sources[name] = where
        try:
            reason = skip_reason(document, options.group_map)
        except CrdRenderError as exc:
            raise CrdRenderError("%s: %s" % (where, exc))
        checked.append((where, document, reason))
    result = RenderResult()
    private_names = {}
    for where, document, reason in checked:
        name = document["metadata"]["name"]
        if reason is not None:
            result.skipped.append({"name": name, "group": document["spec"]["group"], "origin": where, "reason": reason})
            continue
        try:
            rendered = render_private_crd(document, options)
        except (CrdRenderError, CapiTranslationError) as exc:
            raise CrdRenderError("%s (CRD %s): %s" % (where, name, exc))
        private_name = rendered["metadata"]["name"]
        if private_name in private_names or private_name in seen_sources:
            raise CrdRenderError(
                "%s: CRD %s renders to %s, which %s already names; pass each CRD once"
                % (where, name, private_name, private_names.get(private_name) or seen_sources.get(private_name))
            )
        private_names[private_name] = where
        result.rendered.append(rendered)
        result.source_by_private_name[private_name] = document
    _check_short_names_disjoint(checked, result.rendered)
    return result


def _check_short_names_disjoint(checked, rendered):
    """Rendered short names/categories must not reuse one a source CRD in the same input already has."""
    taken = {}
    for where, document, _reason in checked:
        names = document["spec"].get("names") or {}
        for short_name in names.get("shortNames") or ():
            taken.setdefault(short_name, document["metadata"]["name"])
    for crd in rendered:
        for short_name in crd["spec"]["names"].get("shortNames") or ():
            if short_name in taken:
                raise CrdRenderError(
                    "CRD %s: private short name %r collides with the short name of %s; choose another short_name_prefix"
                    % (crd["metadata"]["name"], short_name, taken[short_name])
                )


def strip_server_fields(crd):
    """A CRD read from a cluster reduced to what a source needs (no status, uid, managedFields...)."""
    metadata = crd.get("metadata") or {}
    return {
        "apiVersion": CRD_API_VERSION,
        "kind": CRD_KIND,
        "metadata": {
            "name": metadata.get("name"),
            "labels": dict(metadata.get("labels") or {}),
            "annotations": dict(metadata.get("annotations") or {}),
        },
        "spec": copy.deepcopy(crd.get("spec") or {}),
    }


def is_subset(desired, live):
    """True when every value desired sets is present and equal in live (server defaults may add more)."""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(key in live and is_subset(value, live[key]) for key, value in desired.items())
    if isinstance(desired, list):
        return isinstance(live, list) and len(desired) == len(live) and all(is_subset(a, b) for a, b in zip(desired, live))
    if isinstance(desired, bool) or isinstance(live, bool):
        return type(desired) is type(live) and desired == live
    return desired == live


def live_matches(desired, live):
    """A live twin needs no write: same render hash, and the desired spec/labels/annotations all hold."""
    live_metadata = live.get("metadata") or {}
    live_annotations = live_metadata.get("annotations") or {}
    desired_metadata = desired["metadata"]
    if live_annotations.get(RENDER_HASH_ANNOTATION) != desired_metadata["annotations"][RENDER_HASH_ANNOTATION]:
        return False
    return (
        is_subset(desired["spec"], live.get("spec") or {})
        and is_subset(desired_metadata["labels"], live_metadata.get("labels") or {})
        and is_subset(desired_metadata["annotations"], live_annotations)
    )


def change_kind(desired, live):
    """How a write changes a live twin: 'upgrade' (source CRD changed), 'update' (options) or 'repair' (drift)."""
    live_annotations = (live.get("metadata") or {}).get("annotations") or {}
    desired_annotations = desired["metadata"]["annotations"]
    if live_annotations.get(SOURCE_HASH_ANNOTATION) != desired_annotations[SOURCE_HASH_ANNOTATION]:
        return "upgrade"
    if live_annotations.get(RENDER_HASH_ANNOTATION) != desired_annotations[RENDER_HASH_ANNOTATION]:
        return "update"
    return "repair"


def merged_for_replace(desired, live):
    """The body of a PUT: desired spec, live metadata with our labels/annotations set and others kept."""
    live_metadata = live.get("metadata") or {}
    labels = dict(live_metadata.get("labels") or {})
    labels.update(desired["metadata"]["labels"])
    annotations = dict(live_metadata.get("annotations") or {})
    for key in PROVENANCE_ANNOTATIONS:
        annotations.pop(key, None)
    annotations.update(desired["metadata"]["annotations"])
    metadata = {"name": desired["metadata"]["name"], "labels": labels, "annotations": annotations}
    if live_metadata.get("resourceVersion"):
        metadata["resourceVersion"] = live_metadata["resourceVersion"]
    return {"apiVersion": CRD_API_VERSION, "kind": CRD_KIND, "metadata": metadata, "spec": copy.deepcopy(desired["spec"])}
