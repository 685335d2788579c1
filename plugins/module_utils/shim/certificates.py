# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A serving certificate for a Service and the CA that signs it: pure functions over the `cryptography` package.

No I/O and no clock of their own (every judgement takes `now`), so the decisions are tested by tables:
``service_dns_names`` (the SANs kube-apiserver checks), ``ca_problems`` / ``leaf_problems`` (why a live certificate
must be replaced: expiring, other DNS names, another CA, a key that does not match), and ``plan`` (the idempotence
decision: keep the live pair, or issue what is missing). ``issue_ca`` and ``issue_leaf`` make new ones.

The CA is kept apart from the serving certificate (its key never reaches the Pods that serve), so a serving
certificate is renewed under the same CA and the caBundle the API server trusts does not change. Keys are ECDSA P-256.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import datetime
import hashlib

try:
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
except ImportError as exc:  # the module reports it with missing_required_lib
    CRYPTOGRAPHY_IMPORT_ERROR = exc
else:
    CRYPTOGRAPHY_IMPORT_ERROR = None

PEM_CERTIFICATE = "-----BEGIN CERTIFICATE-----"
# a certificate is dated this far back, so that a server whose clock is a little behind accepts it at once
BACKDATE = datetime.timedelta(minutes=5)
TLS_SECRET_TYPE = "kubernetes.io/tls"
CA_COMMON_NAME = "hypershift-private-capi-serving-ca"


class CertificateError(ValueError):
    """PEM that cannot be used; the message says which and why."""


def service_dns_names(service_name, namespace, cluster_domain="cluster.local", extra=()):
    """The DNS names of a Service's serving certificate: `<svc>.<ns>.svc` (the name kube-apiserver verifies when it
    calls a webhook Service) and `<svc>.<ns>.svc.<cluster domain>`, then `extra`; each once, in that order."""
    names = []
    if service_name:
        names.append("%s.%s.svc" % (service_name, namespace))
        if cluster_domain:
            names.append("%s.%s.svc.%s" % (service_name, namespace, cluster_domain.strip(".")))
    for name in extra or ():
        if name not in names:
            names.append(name)
    return names


# --- reading -------------------------------------------------------------------------------------------------


def _text(pem):
    return pem.decode("ascii", "replace") if isinstance(pem, bytes) else (pem or "")


def load_certificates(pem, what):
    """Every certificate of a PEM bundle, in order; CertificateError when there is none or one cannot be read."""
    text = _text(pem)
    if PEM_CERTIFICATE not in text:
        raise CertificateError("%s holds no PEM certificate" % what)
    try:
        return x509.load_pem_x509_certificates(text.encode("ascii"))
    except ValueError as error:
        raise CertificateError("%s is not a readable PEM certificate bundle: %s" % (what, error))


def load_private_key(pem, what):
    """The private key of a PEM text; CertificateError when it cannot be read."""
    try:
        return serialization.load_pem_private_key(_text(pem).encode("ascii"), password=None)
    except (ValueError, TypeError) as error:
        raise CertificateError("%s is not a readable unencrypted PEM private key: %s" % (what, error))


def certificate_pem(certificate):
    return certificate.public_bytes(serialization.Encoding.PEM).decode("ascii")


def private_key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode("ascii")


def bundle_pem(certificates):
    return "".join(certificate_pem(certificate) for certificate in certificates)


def fingerprint(certificate):
    """SHA-256 fingerprint of the certificate (hex, lowercase)."""
    return certificate.fingerprint(hashes.SHA256()).hex()


def pem_sha256(pem):
    """sha256 (hex) of a PEM text as stored; what the shim's Pod template records, so a new certificate rolls them."""
    return hashlib.sha256(_text(pem).encode("ascii")).hexdigest()


def dns_names_of(certificate):
    """The certificate's DNS subject alternative names, in their order."""
    try:
        extension = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return []
    return extension.value.get_values_for_type(x509.DNSName)


def is_ca(certificate):
    try:
        return bool(certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def _public_der(public_key):
    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def key_matches(certificate, key):
    """Whether key is the private key of the certificate's public key."""
    return _public_der(certificate.public_key()) == _public_der(key.public_key())


def signed_by(certificate, issuer):
    """Whether issuer's key signed certificate (and issuer's subject is its issuer)."""
    try:
        certificate.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def describe(certificate):
    """What the diff and the results show of a certificate (never key material)."""
    return {"subject": certificate.subject.rfc4514_string(), "dns_names": dns_names_of(certificate),
            "not_before": certificate.not_valid_before_utc.isoformat(),
            "not_after": certificate.not_valid_after_utc.isoformat(), "sha256_fingerprint": fingerprint(certificate)}


# --- judging -------------------------------------------------------------------------------------------------


def _validity_problems(certificate, now, renew_before, what):
    problems = []
    not_after = certificate.not_valid_after_utc
    if certificate.not_valid_before_utc > now + BACKDATE:
        problems.append("%s is not valid before %s" % (what, certificate.not_valid_before_utc.isoformat()))
    if not_after <= now:
        problems.append("%s expired at %s" % (what, not_after.isoformat()))
    elif not_after - now <= renew_before:
        problems.append("%s expires at %s, within the renewal threshold of %d days"
                        % (what, not_after.isoformat(), renew_before.days))
    return problems


def ca_problems(certificate, key, now, renew_before):
    """Why a CA (certificate and key) cannot sign a new serving certificate; [] when it can."""
    problems = []
    if not is_ca(certificate):
        problems.append("the CA certificate %s is not a CA (basicConstraints ca=false)"
                        % certificate.subject.rfc4514_string())
    if not key_matches(certificate, key):
        problems.append("the CA key does not belong to the CA certificate")
    return problems + _validity_problems(certificate, now, renew_before, "the CA certificate")


def leaf_problems(certificate, key, issuer, dns_names, now, renew_before):
    """Why a serving certificate (with its key) must be replaced; [] when it can stay.

    It must belong to its key, be signed by issuer, name exactly dns_names (in any order) and not expire within
    renew_before.
    """
    problems = []
    if not key_matches(certificate, key):
        problems.append("tls.key does not belong to tls.crt")
    if issuer is None or not signed_by(certificate, issuer):
        problems.append("the serving certificate is not signed by the current CA%s"
                        % ("" if issuer is None else " (%s)" % issuer.subject.rfc4514_string()))
    live_names = dns_names_of(certificate)
    if set(live_names) != set(dns_names):
        problems.append("the serving certificate names %s, wanted %s" % (sorted(live_names), sorted(dns_names)))
    return problems + _validity_problems(certificate, now, renew_before, "the serving certificate")


class Plan(object):
    """What to do: ca_action and leaf_action are 'keep', 'create' or 'renew'; reasons say why (one line each)."""

    def __init__(self, ca_action, leaf_action, reasons, ca_certificate=None, ca_key=None):
        self.ca_action = ca_action
        self.leaf_action = leaf_action
        self.reasons = reasons
        self.ca_certificate = ca_certificate  # the CA kept (None when a new one is due)
        self.ca_key = ca_key

    @property
    def changes(self):
        return self.ca_action != "keep" or self.leaf_action != "keep"


def _read_pair(data, cert_key, key_key, what):
    """(first certificate, key, None) of a Secret's decoded data, or (None, None, problem)."""
    if not data or not data.get(cert_key) or not data.get(key_key):
        return None, None, "%s has no %s and %s" % (what, cert_key, key_key)
    try:
        return load_certificates(data[cert_key], "%s %s" % (what, cert_key))[0], \
            load_private_key(data[key_key], "%s %s" % (what, key_key)), None
    except CertificateError as error:
        return None, None, str(error)


def plan(ca_data, tls_data, dns_names, now, renew_before, ca_what="the CA Secret", tls_what="the serving Secret"):
    """The idempotence decision over the two Secrets' decoded data ({key: PEM text}, None when a Secret is absent).

    The CA (ca.crt, ca.key) is kept while it can sign (ca_problems); otherwise a new one is due ('create' when there
    was none) and, with it, a new serving certificate. The serving certificate (tls.crt, tls.key) is kept while
    leaf_problems finds nothing against the CA kept.
    """
    reasons = []
    ca_certificate = ca_key = None
    if ca_data is None:
        ca_action = "create"
        reasons.append("%s does not exist" % ca_what)
    else:
        ca_certificate, ca_key, problem = _read_pair(ca_data, "ca.crt", "ca.key", ca_what)
        found = [problem] if problem else ca_problems(ca_certificate, ca_key, now, renew_before)
        ca_action = "renew" if found else "keep"
        reasons.extend(found)
        if found:
            ca_certificate = ca_key = None
    if tls_data is None:
        leaf_action = "create"
        reasons.append("%s does not exist" % tls_what)
    elif ca_action != "keep":
        leaf_action = "renew"
        reasons.append("a new CA signs a new serving certificate")
    else:
        leaf, leaf_key, problem = _read_pair(tls_data, "tls.crt", "tls.key", tls_what)
        found = [problem] if problem else leaf_problems(leaf, leaf_key, ca_certificate, dns_names, now, renew_before)
        leaf_action = "renew" if found else "keep"
        reasons.extend(found)
    return Plan(ca_action, leaf_action, reasons, ca_certificate, ca_key)


def trust_bundle(ca_certificate, previous_bundle, now):
    """The caBundle to publish: the current CA first, then the CAs of previous_bundle (PEM text, may be empty) that
    are still valid and differ from it, so clients that hold the bundle trust Pods serving under the CA just
    replaced until they are rolled. Unreadable PEM in previous_bundle is dropped."""
    kept = [ca_certificate]
    try:
        previous = load_certificates(previous_bundle, "the previous bundle") if previous_bundle else []
    except CertificateError:
        previous = []
    seen = {fingerprint(ca_certificate)}
    for certificate in previous:
        if is_ca(certificate) and certificate.not_valid_after_utc > now and fingerprint(certificate) not in seen:
            seen.add(fingerprint(certificate))
            kept.append(certificate)
    return bundle_pem(kept)


# --- issuing -------------------------------------------------------------------------------------------------


def new_key():
    return ec.generate_private_key(ec.SECP256R1())


def _usage(ca):
    return x509.KeyUsage(digital_signature=True, key_cert_sign=ca, crl_sign=ca, content_commitment=False,
                         key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
                         decipher_only=False)


def issue_ca(now, days, common_name=CA_COMMON_NAME):
    """(certificate, key) of a new self-signed CA valid for `days` from now (backdated by BACKDATE)."""
    key = new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - BACKDATE).not_valid_after(now + datetime.timedelta(days=days))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                   .add_extension(_usage(True), critical=True)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
                   .sign(key, hashes.SHA256()))
    return certificate, key


def issue_leaf(ca_certificate, ca_key, dns_names, now, days):
    """(certificate, key) of a new serving certificate for dns_names, signed by the CA; it never outlives the CA."""
    if not dns_names:
        raise CertificateError("a serving certificate needs at least one DNS name")
    key = new_key()
    not_after = min(now + datetime.timedelta(days=days), ca_certificate.not_valid_after_utc)
    certificate = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0])]))
                   .issuer_name(ca_certificate.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - BACKDATE).not_valid_after(not_after)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(_usage(False), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                   .add_extension(x509.SubjectAlternativeName([x509.DNSName(name) for name in dns_names]),
                                  critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                                  critical=False)
                   .sign(ca_key, hashes.SHA256()))
    return certificate, key


def b64(text):
    """Base64 of a text, as Secret data and caBundle fields hold it."""
    return base64.b64encode(_text(text).encode("ascii")).decode("ascii")


def unb64(value, what):
    """The text of base64 Secret data; CertificateError naming `what` when it is not base64."""
    try:
        return base64.b64decode(value or "", validate=True).decode("ascii")
    except (ValueError, TypeError, UnicodeDecodeError) as error:
        raise CertificateError("%s is not base64 of PEM text: %s" % (what, error))
