#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: serving_certificate
short_description: A serving certificate for a Service, and the CA bundle that verifies it
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Gives a Service (the conversion webhook shim's, in this collection) a TLS serving certificate and returns the CA
    bundle a client - kube-apiserver calling a webhook - needs to verify it, as PEM (RV(ca_bundle)) and base64
    (RV(ca_bundle_base64), the form of a C(caBundle) field).
  - The certificate names C(<service>.<namespace>.svc) (the name kube-apiserver verifies when it calls a webhook
    Service) and C(<service>.<namespace>.svc.<cluster_domain>), then O(dns_names).
  - With O(provider=generate) the module is its own CA. The CA (certificate and key) lives in the Secret
    O(ca_secret_name) (type C(Opaque), keys C(ca.crt), C(ca.key)), which no Pod needs to mount; the serving
    certificate lives in the Secret O(secret_name) (type C(kubernetes.io/tls), keys C(tls.crt), C(tls.key) and
    C(ca.crt), the bundle). Keys are ECDSA P-256.
  - It is idempotent. A valid pair is kept and nothing is written. The serving certificate is renewed, under the same
    CA (so the bundle does not change), when it expires within O(renew_before_days), names other DNS names than
    wanted, is not signed by the CA, or does not match its key. The CA is renewed when it expires within
    O(renew_before_days) or cannot be read; the bundle then holds the new CA first and the old one until it expires,
    so clients that still hold the old bundle keep trusting Pods that have not rolled yet.
  - A Secret of those names that this module did not make (label C(hypershift.openshift.io/serving-certificate) is not
    C(generated)), or a serving Secret of another type, is never overwritten - the module fails naming it.
  - With O(provider=openshift) OpenShift's service CA makes the serving Secret O(secret_name) once the Service carries
    the annotation C(service.beta.openshift.io/serving-cert-secret-name) (the caller's part), and rotates it. The
    module makes sure the ConfigMap O(ca_config_map_name) carries C(service.beta.openshift.io/inject-cabundle=true),
    waits up to O(wait_timeout) seconds for the service CA to put its bundle there (key C(service-ca.crt)) and returns
    it. RV(secret_ready) says whether the serving Secret exists yet.
  - With O(provider=auto) the module decides - V(openshift) when the cluster runs OpenShift's service CA (the API
    C(operator.openshift.io/v1) serves C(servicecas), or the namespace C(openshift-service-ca) exists), V(generate)
    otherwise - and returns its choice in RV(provider) with the reason in RV(provider_reason), for the caller to
    follow.
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.api_module.cryptography
  - hypershift.private_capi.attributes.write
options:
  provider:
    description:
      - Who issues the serving certificate - V(generate) (this module, with a CA of its own), V(openshift) (OpenShift's
        service CA) or V(auto) (V(openshift) where the cluster runs the service CA, V(generate) elsewhere).
    type: str
    choices: [auto, generate, openshift]
    default: auto
  namespace:
    description:
      - Namespace of the Service, the Secrets and the ConfigMap. It must exist.
    type: str
    required: true
  secret_name:
    description:
      - The serving certificate's Secret (type C(kubernetes.io/tls)), which the Pods behind the Service mount.
    type: str
    required: true
  ca_secret_name:
    description:
      - With O(provider=generate), the Secret that keeps the CA (certificate and key). Empty means
        C(<secret_name>-ca).
    type: str
    default: ""
  ca_config_map_name:
    description:
      - With O(provider=openshift), the ConfigMap the service CA injects its bundle into. Empty means
        C(<secret_name>-service-ca).
    type: str
    default: ""
  service_name:
    description:
      - The Service the certificate is for; it names C(<service_name>.<namespace>.svc) and
        C(<service_name>.<namespace>.svc.<cluster_domain>). O(service_name) or O(dns_names) is required.
    type: str
  cluster_domain:
    description:
      - The cluster's DNS domain, for the second DNS name.
    type: str
    default: cluster.local
  dns_names:
    description:
      - More DNS names for the certificate (after the Service's).
    type: list
    elements: str
    default: []
  validity_days:
    description:
      - Validity of a new serving certificate, in days (it never outlives its CA).
    type: int
    default: 365
  ca_validity_days:
    description:
      - Validity of a new CA, in days.
    type: int
    default: 3650
  renew_before_days:
    description:
      - Renew a certificate (serving or CA) that expires within this many days. Must be less than O(validity_days)
        and O(ca_validity_days).
    type: int
    default: 30
  labels:
    description:
      - Labels for the Secrets (or the ConfigMap) the module writes.
    type: dict
    default: {}
  wait_timeout:
    description:
      - With O(provider=openshift), how many seconds to wait for the service CA to inject its bundle.
    type: int
    default: 120
attributes:
  check_mode:
    details: >-
      Writes are sent with the server-side dry run C(dryRun=All). A certificate that would be issued is made in
      memory and its CA returned, but nothing is stored, so the next run issues another.
  diff_mode:
    details: Subjects, DNS names, validity and SHA-256 fingerprints of the CA and serving certificates - never keys.
notes:
  - The RBAC the module needs in O(namespace) - C(get), C(create) and C(update) on C(secrets) (O(provider=generate)),
    C(get), C(create) and C(patch) on C(configmaps) and C(get) on C(secrets) (O(provider=openshift)); for
    O(provider=auto) also C(get) on the namespace C(openshift-service-ca) (optional - a 403 counts as absent).
  - A Pod reads its certificate when it starts. Roll the Pods when RV(tls_crt_sha256) changes (the role
    C(hypershift.private_capi.conversion_shim) puts it in their template).
seealso:
  - module: hypershift.private_capi.private_crd_render
  - module: hypershift.private_capi.conversion_webhook_users
"""

EXAMPLES = r"""
- name: A serving certificate for the conversion shim's Service (OpenShift's service CA where there is one)
  hypershift.private_capi.serving_certificate:
    namespace: hypershift
    service_name: capi-conversion-webhook-shim
    secret_name: capi-conversion-shim-tls
    labels:
      app.kubernetes.io/name: capi-conversion-shim
  register: shim_certificate

- name: Follow the module's choice - annotate the Service only where OpenShift's service CA issues the certificate
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: v1
      kind: Service
      metadata:
        name: capi-conversion-webhook-shim
        namespace: hypershift
        annotations: >-
          {{ {'service.beta.openshift.io/serving-cert-secret-name': 'capi-conversion-shim-tls'}
             if shim_certificate.provider == 'openshift' else {} }}
      spec:
        selector: {app.kubernetes.io/name: capi-conversion-shim}
        ports: [{name: https, port: 443, targetPort: 9443}]

- name: The private CRDs trust the shim's CA
  hypershift.private_capi.private_crd_render:
    from_cluster: true
    conversion_webhook_ca_bundle: "{{ shim_certificate.ca_bundle }}"

- name: A certificate of our own CA, renewed 60 days before it expires, with one more DNS name
  hypershift.private_capi.serving_certificate:
    provider: generate
    namespace: hypershift
    service_name: capi-conversion-webhook-shim
    dns_names: [shim.example.internal]
    secret_name: capi-conversion-shim-tls
    renew_before_days: 60
"""

RETURN = r"""
api_calls: {returned: success, type: dict, sample: {"total": 4, "by_method": {"GET": 4}}, description: "Requests this run sent to the API server -
  C(total) and C(by_method)."}
provider:
  description: Who issues the certificate - V(generate) or V(openshift) (what V(auto) decided).
  returned: success
  type: str
  sample: generate
provider_reason:
  description: Why that provider.
  returned: success
  type: str
  sample: no OpenShift service CA on the cluster (no servicecas API, no namespace openshift-service-ca)
action:
  description:
    - V(created) (the serving Secret, or with V(openshift) the CA ConfigMap, did not exist), V(renewed) (a
      certificate was issued again, see RV(reasons)), V(updated) (only the Secrets' labels or the bundle changed, or
      the ConfigMap got its annotation), or V(unchanged).
  returned: success
  type: str
  sample: unchanged
reasons:
  description: Why certificates were issued, one line each (empty when nothing was).
  returned: success
  type: list
  elements: str
  sample: ["the serving certificate expires at 2027-01-02T00:00:00+00:00, within the renewal threshold of 30 days"]
ca_bundle:
  description:
    - The CA certificates that verify the serving certificate, PEM. Empty only in check mode with V(openshift) before
      the service CA injected its bundle.
  returned: success
  type: str
ca_bundle_base64:
  description: RV(ca_bundle) base64-encoded, as a C(caBundle) field holds it.
  returned: success
  type: str
dns_names:
  description: The DNS names the certificate is for.
  returned: success
  type: list
  elements: str
  sample: [capi-conversion-webhook-shim.hypershift.svc, capi-conversion-webhook-shim.hypershift.svc.cluster.local]
not_after:
  description: When the serving certificate expires (ISO 8601); with V(openshift) only once its Secret exists.
  returned: when the serving certificate exists
  type: str
  sample: "2027-11-27T05:40:00+00:00"
tls_crt_sha256:
  description: sha256 (hex) of the Secret's C(tls.crt) PEM; it changes whenever the serving certificate does.
  returned: when the serving certificate exists
  type: str
secret_name:
  description: The serving certificate's Secret.
  returned: success
  type: str
  sample: capi-conversion-shim-tls
ca_secret_name:
  description: The CA's Secret (V(generate)).
  returned: when RV(provider=generate)
  type: str
  sample: capi-conversion-shim-tls-ca
ca_config_map_name:
  description: The ConfigMap the service CA injects its bundle into (V(openshift)).
  returned: when RV(provider=openshift)
  type: str
  sample: capi-conversion-shim-tls-service-ca
secret_ready:
  description: Whether the serving Secret exists (always true with V(generate) outside check mode).
  returned: success
  type: bool
diff:
  description: With C(--diff) and a change, the certificates before and after (subjects, DNS names, validity,
    fingerprints).
  returned: when diff mode is on and something changed
  type: dict
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.shim.serving import ServingCertificateModule
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import (
    NAMESPACE,
    OBJECT_NAME,
    SERVICE_NAME,
)

# options holding a namespace or object names (checked before any API call)
NAME_RULES = [
    ("namespace", NAMESPACE),
    ("secret_name", OBJECT_NAME),
    ("ca_secret_name", OBJECT_NAME.or_empty("<secret_name>-ca")),
    ("ca_config_map_name", OBJECT_NAME.or_empty("<secret_name>-service-ca")),
    ("service_name", SERVICE_NAME),
]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(
        provider=dict(type="str", choices=["auto", "generate", "openshift"], default="auto"),
        namespace=dict(type="str", required=True),
        secret_name=dict(type="str", required=True),
        ca_secret_name=dict(type="str", default=""),
        ca_config_map_name=dict(type="str", default=""),
        service_name=dict(type="str"),
        cluster_domain=dict(type="str", default="cluster.local"),
        dns_names=dict(type="list", elements="str", default=[]),
        validity_days=dict(type="int", default=365),
        ca_validity_days=dict(type="int", default=3650),
        renew_before_days=dict(type="int", default=30),
        labels=dict(type="dict", default={}),
        wait_timeout=dict(type="int", default=120),
    )
    return spec


def main():
    run_module(argspec, NAME_RULES, ServingCertificateModule)


if __name__ == "__main__":
    main()
