# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner and API work of hypershift.private_capi.serving_certificate (the certificate logic: certificates.py).

provider generate: read the CA Secret and the serving Secret, judge them (certificates.plan), issue what is due and
write the Secrets only when their content differs (create, or a conflict-checked replace; dryRun=All in check mode).
provider openshift: make sure the CA ConfigMap asks OpenShift's service CA for its bundle and wait until it holds it;
the serving Secret is the service CA's, made once the Service carries its annotation (the role's part).
provider auto: openshift when the cluster runs the service CA (choose_provider), generate otherwise.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import time

from ansible.module_utils.basic import missing_required_lib
from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import SERVING_CERTIFICATE_LABEL
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiError, api_path
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import OptionError, PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import API_CALLS, ModuleService
from ansible_collections.hypershift.private_capi.plugins.module_utils.shim import certificates
from ansible_collections.hypershift.private_capi.plugins.module_utils.shim.certificates import (
    TLS_SECRET_TYPE,
    CertificateError,
)

# SERVING_CERTIFICATE_LABEL on the Secrets this module made: it never overwrites a Secret someone else made
MANAGED_VALUE = "generated"
CA_SECRET_TYPE = "Opaque"
INJECT_CABUNDLE_ANNOTATION = "service.beta.openshift.io/inject-cabundle"
SERVICE_CA_KEY = "service-ca.crt"
SERVICE_CA_NAMESPACE = "openshift-service-ca"
SERVICE_CA_API = "/apis/operator.openshift.io/v1"
SERVICE_CA_RESOURCE = "servicecas"


class ServingCertificateError(PrivateCapiError):
    """A Secret or ConfigMap the module cannot use as it is; the message names it and says what to do."""


def choose_provider(requested, serviceca_api, service_ca_namespace):
    """(provider, reason): requested unless it is 'auto'; then 'openshift' when the cluster runs OpenShift's service
    CA (its operator API is served, or its namespace exists) and 'generate' otherwise. None means unknown (403)."""
    if requested != "auto":
        return requested, "asked for (provider=%s)" % requested
    if serviceca_api:
        return "openshift", "the cluster serves %s/%s (OpenShift's service CA operator)" % (
            SERVICE_CA_API[len("/apis/"):], SERVICE_CA_RESOURCE)
    if service_ca_namespace:
        return "openshift", "namespace %s exists (OpenShift's service CA)" % SERVICE_CA_NAMESPACE
    return "generate", "no OpenShift service CA on the cluster (no %s API, no namespace %s)" % (
        SERVICE_CA_RESOURCE, SERVICE_CA_NAMESPACE)


def wanted_dns_names(params):
    return certificates.service_dns_names(params.get("service_name"), params["namespace"], params["cluster_domain"],
                                          params.get("dns_names") or ())


def check_options(params):
    """OptionError for options that cannot work together (before any API call)."""
    problems = []
    if not params.get("service_name") and not params.get("dns_names"):
        problems.append("give service_name (the certificate then names <service>.<namespace>.svc and "
                        "<service>.<namespace>.svc.<cluster_domain>) or dns_names")
    for option in ("validity_days", "ca_validity_days"):
        if params[option] <= params["renew_before_days"]:
            problems.append("%s (%d) must be more than renew_before_days (%d), or every run would renew"
                            % (option, params[option], params["renew_before_days"]))
    if problems:
        raise OptionError("; ".join(problems))


def decoded(secret, what):
    """{key: PEM text} of a Secret's data; a value that is not base64 reads as missing. None for no Secret."""
    if secret is None:
        return None
    data = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            data[key] = certificates.unb64(value, "%s key %s" % (what, key))
        except CertificateError:
            data[key] = ""
    return data


def secret_body(namespace, name, secret_type, data, labels, live):
    """The Secret to write: data (PEM texts) base64-encoded, our labels over the live ones, live annotations kept."""
    metadata = {"name": name, "namespace": namespace,
                "labels": dict(((live or {}).get("metadata") or {}).get("labels") or {}, **labels)}
    live_annotations = ((live or {}).get("metadata") or {}).get("annotations")
    if live_annotations:
        metadata["annotations"] = dict(live_annotations)
    if live is not None:
        metadata["resourceVersion"] = live["metadata"]["resourceVersion"]
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": secret_type,
            "data": {key: certificates.b64(value) for key, value in sorted(data.items())}}


def secret_differs(body, live):
    """Whether writing body would change the live Secret (data, type or labels)."""
    if live is None:
        return True
    return (live.get("type") != body["type"] or (live.get("data") or {}) != body["data"]
            or ((live.get("metadata") or {}).get("labels") or {}) != body["metadata"]["labels"])


def refuse_foreign(secret, what, secret_type):
    """ServingCertificateError for a live Secret this module did not make, or of a type it cannot be rewritten to."""
    if secret is None:
        return
    labels = (secret.get("metadata") or {}).get("labels") or {}
    if labels.get(SERVING_CERTIFICATE_LABEL) != MANAGED_VALUE:
        raise ServingCertificateError(
            "%s exists and was not made by this module (label %s=%s missing; OpenShift's service CA makes such a "
            "Secret when a Service carries service.beta.openshift.io/serving-cert-secret-name): it is left alone. Use "
            "provider=openshift if the service CA makes it, or delete it (or choose another name) and re-run"
            % (what, SERVING_CERTIFICATE_LABEL, MANAGED_VALUE))
    if secret.get("type", "Opaque") != secret_type:
        raise ServingCertificateError("%s has type %s, expected %s (the type of a Secret cannot change): delete it "
                                      "and re-run" % (what, secret.get("type", "Opaque"), secret_type))


def _diff_side(ca_pem, tls_pem):
    side = {}
    for key, pem in (("ca", ca_pem), ("certificate", tls_pem)):
        if pem:
            try:
                side[key] = certificates.describe(certificates.load_certificates(pem, key)[0])
            except CertificateError as error:
                side[key] = {"unreadable": str(error)}
    return side


class ServingCertificates(object):
    """The module's API work, over one ApiClient."""

    def __init__(self, client, params, now=None):
        self.client = client
        self.params = params
        self.namespace = params["namespace"]
        self.now = now or datetime.datetime.now(datetime.timezone.utc)
        self.labels = dict(params.get("labels") or {})
        # how an error names the way to the collection's own CA: serving_certificate's option, or a caller's own
        self.generate_hint = params.get("generate_hint") or "provider=generate"

    def _path(self, plural, name=None):
        return api_path("", "v1", plural, namespace=self.namespace, name=name)

    def _what(self, kind, name):
        return "%s %s/%s" % (kind, self.namespace, name)

    def get(self, plural, kind, name):
        return self.client.get_or_none(self._path(plural, name), "get %s" % self._what(kind, name))

    def detect(self):
        """(servicecas API served, openshift-service-ca namespace exists or None when forbidden)."""
        group = self.client.get_or_none(SERVICE_CA_API, "get %s (discovery)" % SERVICE_CA_API)
        api = any(resource.get("name") == SERVICE_CA_RESOURCE for resource in (group or {}).get("resources") or ())
        try:
            namespace = self.client.get_or_none(api_path("", "v1", "namespaces", name=SERVICE_CA_NAMESPACE),
                                                "get Namespace %s" % SERVICE_CA_NAMESPACE) is not None
        except ApiError as error:
            if error.status != 403:
                raise
            namespace = None
        return api, namespace

    def write(self, body, live, kind):
        name = body["metadata"]["name"]
        if live is None:
            return self.client.create(self._path("secrets"), body, "create %s" % self._what(kind, name))
        try:
            return self.client.replace(self._path("secrets", name), body, "replace %s" % self._what(kind, name))
        except ApiError as error:
            if error.is_conflict:
                raise ServingCertificateError("%s changed while this module was writing it (409 Conflict); re-run"
                                              % self._what(kind, name))
            raise

    # --- provider generate -----------------------------------------------------------------------------------

    def generate(self, dns_names):
        params = self.params
        secret_name = params["secret_name"]
        ca_name = params["ca_secret_name"] or "%s-ca" % secret_name
        ca_what, tls_what = "Secret %s/%s (the CA)" % (self.namespace, ca_name), \
            "Secret %s/%s (the serving certificate)" % (self.namespace, secret_name)
        live_ca, live_tls = self.get("secrets", "Secret", ca_name), self.get("secrets", "Secret", secret_name)
        refuse_foreign(live_ca, ca_what, CA_SECRET_TYPE)
        refuse_foreign(live_tls, tls_what, TLS_SECRET_TYPE)
        ca_data, tls_data = decoded(live_ca, ca_what), decoded(live_tls, tls_what)
        renew_before = datetime.timedelta(days=params["renew_before_days"])
        decision = certificates.plan(ca_data, tls_data, dns_names, self.now, renew_before, ca_what, tls_what)
        if decision.ca_action == "keep":
            ca_certificate, ca_key = decision.ca_certificate, decision.ca_key
            ca_pem, ca_key_pem = ca_data["ca.crt"], ca_data["ca.key"]
        else:
            ca_certificate, ca_key = certificates.issue_ca(self.now, params["ca_validity_days"])
            ca_pem, ca_key_pem = certificates.certificate_pem(ca_certificate), certificates.private_key_pem(ca_key)
        if decision.leaf_action == "keep":
            tls_crt, tls_key = tls_data["tls.crt"], tls_data["tls.key"]
        else:
            leaf, leaf_key = certificates.issue_leaf(ca_certificate, ca_key, dns_names, self.now,
                                                     params["validity_days"])
            tls_crt, tls_key = certificates.certificate_pem(leaf), certificates.private_key_pem(leaf_key)
        bundle = certificates.trust_bundle(ca_certificate, (tls_data or {}).get("ca.crt", ""), self.now)
        labels = dict(self.labels, **{SERVING_CERTIFICATE_LABEL: MANAGED_VALUE})
        ca_body = secret_body(self.namespace, ca_name, CA_SECRET_TYPE, {"ca.crt": ca_pem, "ca.key": ca_key_pem},
                              labels, live_ca)
        tls_body = secret_body(self.namespace, secret_name, TLS_SECRET_TYPE,
                               {"tls.crt": tls_crt, "tls.key": tls_key, "ca.crt": bundle}, labels, live_tls)
        written = []
        for body, live, kind in ((ca_body, live_ca, "Secret"), (tls_body, live_tls, "Secret")):
            if secret_differs(body, live):
                self.write(body, live, kind)
                written.append(body["metadata"]["name"])
        if live_tls is None:
            action = "created"
        elif decision.changes:
            action = "renewed"
        else:
            action = "updated" if written else "unchanged"
        if written and not decision.reasons:
            decision.reasons.append("the Secrets' labels or CA bundle differed from what is wanted")
        leaf = certificates.load_certificates(tls_crt, "tls.crt")[0]
        result = {"changed": bool(written), "action": action, "reasons": decision.reasons, "ca_bundle": bundle,
                  "secret_name": secret_name, "ca_secret_name": ca_name, "dns_names": dns_names,
                  "not_after": leaf.not_valid_after_utc.isoformat(), "tls_crt_sha256": certificates.pem_sha256(tls_crt),
                  "secret_ready": True}
        if written:
            result["diff"] = {"before_header": "Secrets %s, %s (live)" % (ca_name, secret_name),
                              "after_header": "Secrets %s, %s (wanted)" % (ca_name, secret_name),
                              "before": _diff_side((ca_data or {}).get("ca.crt"), (tls_data or {}).get("tls.crt")),
                              "after": _diff_side(ca_pem, tls_crt)}
        return result

    # --- provider openshift ----------------------------------------------------------------------------------

    def openshift(self, dns_names, module):
        """provider openshift: the service CA's ConfigMap (module: what has check_mode and warn(), the module or the
        module's service)."""
        params = self.params
        name = params["ca_config_map_name"] or "%s-service-ca" % params["secret_name"]
        what = self._what("ConfigMap", name)
        live = self.get("configmaps", "ConfigMap", name)
        annotations = ((live or {}).get("metadata") or {}).get("annotations") or {}
        changed = False
        if live is None:
            body = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": self.namespace, "labels": self.labels,
                                 "annotations": {INJECT_CABUNDLE_ANNOTATION: "true"}}}
            self.client.create(self._path("configmaps"), body, "create %s" % what)
            changed = True
        elif annotations.get(INJECT_CABUNDLE_ANNOTATION) != "true":
            self.client.patch(self._path("configmaps", name), {"metadata": {
                "annotations": {INJECT_CABUNDLE_ANNOTATION: "true"}}}, "annotate %s" % what)
            changed = True
        bundle = ((live or {}).get("data") or {}).get(SERVICE_CA_KEY, "")
        if not bundle and not module.check_mode:
            bundle = self.wait_for_service_ca(name, params["wait_timeout"])
        elif not bundle:
            module.warn("check mode: %s does not hold the service CA yet; the CA bundle is returned empty" % what)
        tls = decoded(self.get("secrets", "Secret", params["secret_name"]), "Secret %s" % params["secret_name"])
        result = {"changed": changed, "action": "created" if live is None else ("updated" if changed else "unchanged"),
                  "reasons": [], "ca_bundle": bundle, "secret_name": params["secret_name"], "ca_config_map_name": name,
                  "dns_names": dns_names, "secret_ready": bool(tls and tls.get("tls.crt"))}
        if result["secret_ready"]:
            result["tls_crt_sha256"] = certificates.pem_sha256(tls["tls.crt"])
            try:
                result["not_after"] = certificates.load_certificates(
                    tls["tls.crt"], "tls.crt")[0].not_valid_after_utc.isoformat()
            except CertificateError:
                pass
        if changed:
            result["diff"] = {"before_header": what, "after_header": what,
                              "before": {"annotations": annotations} if live is not None else {},
                              "after": {"annotations": dict(annotations, **{INJECT_CABUNDLE_ANNOTATION: "true"})}}
        return result

    def wait_for_service_ca(self, name, timeout, sleep=1.0):
        """The service CA bundle once OpenShift's service CA has put it into the ConfigMap; an error naming it on
        timeout."""
        deadline = time.monotonic() + timeout
        while True:
            live = self.get("configmaps", "ConfigMap", name)
            bundle = ((live or {}).get("data") or {}).get(SERVICE_CA_KEY)
            if bundle:
                return bundle
            if time.monotonic() >= deadline:
                raise ServingCertificateError(
                    "ConfigMap %s/%s has no %s after %ss: OpenShift's service CA did not inject its bundle (annotation "
                    "%s=true). Check the service CA (`oc get clusteroperator service-ca`, the Pods in namespace %s), "
                    "or use %s" % (self.namespace, name, SERVICE_CA_KEY, timeout, INJECT_CABUNDLE_ANNOTATION,
                                   SERVICE_CA_NAMESPACE, self.generate_hint))
            time.sleep(sleep)


class ServingCertificateModule(ServingCertificates, ModuleService):
    """serving_certificate's service (k8s/runner.py): RV(api_calls) but no RV(elapsed_seconds), as documented."""

    MINIMUMS = {"validity_days": 1, "ca_validity_days": 1, "renew_before_days": 0, "wait_timeout": 0}
    NAMESPACES = (("namespace", None),)
    TAIL = (API_CALLS,)

    @classmethod
    def from_run(cls, run):
        check_options(run.params)
        if certificates.CRYPTOGRAPHY_IMPORT_ERROR is not None:
            run.module.fail_json(msg=missing_required_lib("cryptography"),
                                 exception=str(certificates.CRYPTOGRAPHY_IMPORT_ERROR))
        service = cls(cls.connect(run), run.params)
        service.check_mode, service.diff, service.warnings = run.check_mode, run.diff, []
        return service

    def warn(self, message):
        """openshift()'s warning, given at the end of the run."""
        self.warnings.append(message)

    def run(self):
        params = self.params
        api, namespace = self.detect() if params["provider"] == "auto" else (None, None)
        provider, reason = choose_provider(params["provider"], api, namespace)
        dns_names = wanted_dns_names(params)
        try:
            result = self.generate(dns_names) if provider == "generate" else self.openshift(dns_names, self)
        except CertificateError as error:
            raise ServingCertificateError(str(error))
        diff = result.pop("diff", None)
        result.update(provider=provider, provider_reason=reason,
                      ca_bundle_base64=certificates.b64(result["ca_bundle"]) if result["ca_bundle"] else "")
        if self.diff and diff:
            result["diff"] = diff
        return result
