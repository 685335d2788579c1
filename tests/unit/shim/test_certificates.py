"""The serving certificate's pure logic (plugins/module_utils/shim/certificates.py): SANs, the expiry and name
judgements, the idempotence decision and the trust bundle, by tables of real certificates."""
import datetime

import pytest
from cryptography import x509

from ansible_collections.hypershift.private_capi.plugins.module_utils.shim import certificates as certs
from ansible_collections.hypershift.private_capi.plugins.module_utils.shim.certificates import CertificateError

NOW = datetime.datetime(2026, 11, 27, 12, 0, tzinfo=datetime.timezone.utc)
DAY = datetime.timedelta(days=1)
RENEW = datetime.timedelta(days=30)
NAMES = ["capi-conversion-webhook-shim.hypershift.svc", "capi-conversion-webhook-shim.hypershift.svc.cluster.local"]


def pair(certificate, key):
    return certs.certificate_pem(certificate), certs.private_key_pem(key)


@pytest.fixture(scope="module")
def ca():
    return certs.issue_ca(NOW, 3650)


@pytest.fixture(scope="module")
def leaf(ca):
    return certs.issue_leaf(ca[0], ca[1], NAMES, NOW, 365)


def ca_data(ca):
    crt, key = pair(*ca)
    return {"ca.crt": crt, "ca.key": key}


def tls_data(leaf, bundle):
    crt, key = pair(*leaf)
    return {"tls.crt": crt, "tls.key": key, "ca.crt": bundle}


@pytest.mark.parametrize("service, namespace, domain, extra, expected", [
    ("capi-conversion-webhook-shim", "hypershift", "cluster.local", (), NAMES),
    ("shim", "ops", "example.internal.", (), ["shim.ops.svc", "shim.ops.svc.example.internal"]),
    ("shim", "ops", "", (), ["shim.ops.svc"]),
    ("shim", "ops", "cluster.local", ["shim.ops.svc", "shim.example.com"],
     ["shim.ops.svc", "shim.ops.svc.cluster.local", "shim.example.com"]),
    (None, "ops", "cluster.local", ["a.example.com", "a.example.com"], ["a.example.com"]),
])
def test_service_dns_names(service, namespace, domain, extra, expected):
    assert certs.service_dns_names(service, namespace, domain, extra) == expected


def test_a_new_pair_verifies_for_the_service_names_and_never_outlives_its_ca():
    ca_certificate, ca_key = certs.issue_ca(NOW, 100)
    certificate, key = certs.issue_leaf(ca_certificate, ca_key, NAMES, NOW, 365)
    assert certs.is_ca(ca_certificate) and not certs.is_ca(certificate)
    assert certs.signed_by(certificate, ca_certificate) and certs.key_matches(certificate, key)
    assert certs.dns_names_of(certificate) == NAMES
    assert certificate.not_valid_after_utc == ca_certificate.not_valid_after_utc
    usage = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert x509.oid.ExtendedKeyUsageOID.SERVER_AUTH in usage
    assert certs.leaf_problems(certificate, key, ca_certificate, NAMES, NOW, RENEW) == []


def test_a_leaf_needs_names():
    ca_certificate, ca_key = certs.issue_ca(NOW, 100)
    with pytest.raises(CertificateError, match="at least one DNS name"):
        certs.issue_leaf(ca_certificate, ca_key, [], NOW, 365)


@pytest.mark.parametrize("now, expected", [
    (NOW, []),
    (NOW + 300 * DAY, []),
    (NOW + 335 * DAY, ["within the renewal threshold of 30 days"]),
    (NOW + 366 * DAY, ["expired at"]),
    (NOW - 2 * DAY, ["is not valid before"]),
])
def test_expiry_judgement(ca, leaf, now, expected):
    problems = certs.leaf_problems(leaf[0], leaf[1], ca[0], NAMES, now, RENEW)
    assert len(problems) == len(expected)
    for problem, words in zip(problems, expected):
        assert words in problem and "the serving certificate" in problem


def test_other_names_another_ca_or_another_key_each_say_why(ca, leaf):
    other_ca, other_key = certs.issue_ca(NOW, 3650)
    # the order of the names does not matter
    assert certs.leaf_problems(leaf[0], leaf[1], ca[0], list(reversed(NAMES)), NOW, RENEW) == []
    names = certs.leaf_problems(leaf[0], leaf[1], ca[0], NAMES[:1], NOW, RENEW)
    assert names == ["the serving certificate names %s, wanted %s" % (sorted(NAMES), NAMES[:1])]
    assert "not signed by the current CA" in certs.leaf_problems(leaf[0], leaf[1], other_ca, NAMES, NOW, RENEW)[0]
    assert certs.leaf_problems(leaf[0], other_key, ca[0], NAMES, NOW, RENEW) == ["tls.key does not belong to tls.crt"]
    assert certs.ca_problems(ca[0], other_key, NOW, RENEW) == ["the CA key does not belong to the CA certificate"]
    assert "not a CA" in certs.ca_problems(leaf[0], leaf[1], NOW, RENEW)[0]
    assert "within the renewal threshold" in certs.ca_problems(ca[0], ca[1], NOW + 3630 * DAY, RENEW)[0]


def test_plan_creates_everything_on_an_empty_namespace():
    decision = certs.plan(None, None, NAMES, NOW, RENEW)
    assert (decision.ca_action, decision.leaf_action, decision.changes) == ("create", "create", True)
    assert decision.reasons == ["the CA Secret does not exist", "the serving Secret does not exist"]


def test_plan_keeps_a_valid_pair(ca, leaf):
    bundle = certs.certificate_pem(ca[0])
    decision = certs.plan(ca_data(ca), tls_data(leaf, bundle), NAMES, NOW, RENEW)
    assert (decision.ca_action, decision.leaf_action, decision.changes, decision.reasons) == ("keep", "keep", False, [])
    assert certs.fingerprint(decision.ca_certificate) == certs.fingerprint(ca[0])


@pytest.mark.parametrize("case, ca_action, leaf_action, reason", [
    ("serving Secret missing", "keep", "create", "the serving Secret does not exist"),
    ("names changed", "keep", "renew", "names"),
    ("serving certificate expiring", "keep", "renew", "within the renewal threshold"),
    ("tls.crt unreadable", "keep", "renew", "is not a readable PEM"),
    ("tls.key missing", "keep", "renew", "has no tls.crt and tls.key"),
    ("CA missing", "create", "renew", "the CA Secret does not exist"),
    ("CA expiring", "renew", "renew", "the CA certificate expires"),
    ("CA key unreadable", "renew", "renew", "not a readable unencrypted PEM private key"),
])
def test_plan_decides_what_to_issue_and_says_why(ca, leaf, case, ca_action, leaf_action, reason):
    bundle = certs.certificate_pem(ca[0])
    ca_in, tls_in, names, now = ca_data(ca), tls_data(leaf, bundle), NAMES, NOW
    if case == "serving Secret missing":
        tls_in = None
    elif case == "names changed":
        names = NAMES + ["shim.example.com"]
    elif case == "serving certificate expiring":
        now = NOW + 340 * DAY
    elif case == "tls.crt unreadable":
        tls_in["tls.crt"] = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"
    elif case == "tls.key missing":
        tls_in["tls.key"] = ""
    elif case == "CA missing":
        ca_in = None
    elif case == "CA expiring":
        now = NOW + 3640 * DAY
    elif case == "CA key unreadable":
        ca_in["ca.key"] = "garbage"
    decision = certs.plan(ca_in, tls_in, names, now, RENEW)
    assert (decision.ca_action, decision.leaf_action) == (ca_action, leaf_action)
    assert any(reason in line for line in decision.reasons), decision.reasons
    assert decision.changes


def test_trust_bundle_keeps_the_previous_ca_until_it_expires(ca):
    new_ca, _key = certs.issue_ca(NOW, 3650, common_name="next")
    previous = certs.certificate_pem(ca[0])
    bundle = certs.trust_bundle(new_ca, previous, NOW)
    assert [c.subject for c in certs.load_certificates(bundle, "bundle")] == [new_ca.subject, ca[0].subject]
    assert certs.trust_bundle(new_ca, bundle, NOW) == bundle  # stable: the next run writes nothing
    assert certs.trust_bundle(new_ca, bundle, NOW + 3651 * DAY) == certs.certificate_pem(new_ca)  # old one expired
    assert certs.trust_bundle(new_ca, "not pem", NOW) == certs.certificate_pem(new_ca)
    assert certs.trust_bundle(ca[0], previous, NOW) == previous  # the same CA once


def test_pem_readers_name_what_they_read():
    with pytest.raises(CertificateError, match="Secret x tls.crt holds no PEM certificate"):
        certs.load_certificates("", "Secret x tls.crt")
    with pytest.raises(CertificateError, match="the key"):
        certs.load_private_key("nope", "the key")
    with pytest.raises(CertificateError, match="Secret y key tls.crt is not base64"):
        certs.unb64("%%%", "Secret y key tls.crt")
    assert certs.unb64(certs.b64("-----BEGIN X-----\n"), "x") == "-----BEGIN X-----\n"


def test_describe_shows_no_key_material(leaf):
    described = certs.describe(leaf[0])
    assert set(described) == {"subject", "dns_names", "not_before", "not_after", "sha256_fingerprint"}
    assert described["dns_names"] == NAMES and len(described["sha256_fingerprint"]) == 64
