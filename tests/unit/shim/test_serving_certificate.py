"""hypershift.private_capi.serving_certificate: its documentation, the provider choice and the Secrets it writes
(plugins/module_utils/shim/serving.py) over an in-memory API: created once, then left alone, renewed when asked for
other names, never written over someone else's Secret."""
import copy
import datetime

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import OptionError
from ansible_collections.hypershift.private_capi.plugins.module_utils.shim import certificates as certs
from ansible_collections.hypershift.private_capi.plugins.module_utils.shim import serving
from ansible_collections.hypershift.private_capi.plugins.modules import conversion_webhook_users, serving_certificate
from ansible_collections.hypershift.private_capi.plugins.module_utils import contract
from tests.unit.module_docs import assert_argspec_matches_documentation

NOW = datetime.datetime(2026, 11, 27, 12, 0, tzinfo=datetime.timezone.utc)


class FakeClient(object):
    """Secrets and ConfigMaps by path; every write recorded."""

    def __init__(self):
        self.objects = {}
        self.writes = []
        self.version = 0

    def get_or_none(self, path, what):
        return copy.deepcopy(self.objects.get(path))

    def _store(self, path, body, method):
        self.version += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.objects[path] = stored
        self.writes.append((method, path))
        return copy.deepcopy(stored)

    def create(self, path, body, what):
        return self._store("%s/%s" % (path, body["metadata"]["name"]), body, "POST")

    def replace(self, path, body, what):
        assert body["metadata"]["resourceVersion"] == self.objects[path]["metadata"]["resourceVersion"]
        return self._store(path, body, "PUT")

    def patch(self, path, body, what):
        merged = copy.deepcopy(self.objects[path])
        merged["metadata"].setdefault("annotations", {}).update(body["metadata"]["annotations"])
        return self._store(path, merged, "PATCH")


class FakeModule(object):
    check_mode = False

    def __init__(self):
        self.warnings = []

    def warn(self, text):
        self.warnings.append(text)


def params(**overrides):
    values = dict(provider="generate", namespace="hypershift", secret_name="shim-tls", ca_secret_name="",
                  ca_config_map_name="", service_name="capi-conversion-webhook-shim", cluster_domain="cluster.local",
                  dns_names=[], validity_days=365, ca_validity_days=3650, renew_before_days=30,
                  labels={"app.kubernetes.io/name": "capi-conversion-shim"}, wait_timeout=0)
    values.update(overrides)
    return values


def generate(client, now=NOW, **overrides):
    wanted = params(**overrides)
    service = serving.ServingCertificates(client, wanted, now=now)
    return service.generate(serving.wanted_dns_names(wanted))


TLS = "/api/v1/namespaces/hypershift/secrets/shim-tls"
CA = "/api/v1/namespaces/hypershift/secrets/shim-tls-ca"


def test_argspecs_match_documentation():
    assert_argspec_matches_documentation(serving_certificate)
    assert_argspec_matches_documentation(conversion_webhook_users)


@pytest.mark.parametrize("requested, api, namespace, expected", [
    ("generate", True, True, "generate"),
    ("openshift", False, False, "openshift"),
    ("auto", True, None, "openshift"),
    ("auto", False, True, "openshift"),
    ("auto", False, None, "generate"),
    ("auto", False, False, "generate"),
])
def test_choose_provider(requested, api, namespace, expected):
    provider, reason = serving.choose_provider(requested, api, namespace)
    assert provider == expected and reason


@pytest.mark.parametrize("overrides, words", [
    ({"service_name": None, "dns_names": []}, "give service_name"),
    ({"validity_days": 30}, "validity_days (30) must be more than renew_before_days (30)"),
    ({"ca_validity_days": 10}, "ca_validity_days (10) must be more than renew_before_days (30)"),
])
def test_options_that_cannot_work_are_refused_before_any_call(overrides, words):
    with pytest.raises(OptionError, match=words.replace("(", r"\(").replace(")", r"\)")):
        serving.check_options(params(**overrides))


def test_created_once_then_unchanged_with_a_bundle_that_verifies_the_service_name():
    client = FakeClient()
    first = generate(client)
    assert (first["action"], first["changed"]) == ("created", True)
    assert [method for method, _path in client.writes] == ["POST", "POST"]
    tls, ca = client.objects[TLS], client.objects[CA]
    assert tls["type"] == "kubernetes.io/tls" and sorted(tls["data"]) == ["ca.crt", "tls.crt", "tls.key"]
    assert ca["type"] == "Opaque" and sorted(ca["data"]) == ["ca.crt", "ca.key"]
    assert tls["metadata"]["labels"] == {"app.kubernetes.io/name": "capi-conversion-shim",
                                         contract.SERVING_CERTIFICATE_LABEL: "generated"}
    leaf = certs.load_certificates(certs.unb64(tls["data"]["tls.crt"], "tls.crt"), "tls.crt")[0]
    [authority] = certs.load_certificates(first["ca_bundle"], "bundle")
    assert certs.signed_by(leaf, authority)
    assert "capi-conversion-webhook-shim.hypershift.svc" in certs.dns_names_of(leaf)
    assert first["tls_crt_sha256"] == certs.pem_sha256(certs.unb64(tls["data"]["tls.crt"], "tls.crt"))
    assert "ca.key" not in str(first["diff"]) and "PRIVATE KEY" not in str(first["diff"])

    second = generate(client, now=NOW + datetime.timedelta(days=100))
    assert (second["action"], second["changed"], second["reasons"]) == ("unchanged", False, [])
    assert len(client.writes) == 2 and second["ca_bundle"] == first["ca_bundle"]
    assert second["tls_crt_sha256"] == first["tls_crt_sha256"]


def test_other_names_renew_the_serving_certificate_under_the_same_ca():
    client = FakeClient()
    first = generate(client)
    renewed = generate(client, dns_names=["shim.example.com"])
    assert renewed["action"] == "renewed" and renewed["changed"]
    assert any("wanted" in reason for reason in renewed["reasons"])
    assert renewed["ca_bundle"] == first["ca_bundle"] and renewed["tls_crt_sha256"] != first["tls_crt_sha256"]
    assert client.writes[-1] == ("PUT", TLS)  # the CA Secret was not written again


def test_an_expiring_ca_is_replaced_and_the_old_one_stays_in_the_bundle():
    client = FakeClient()
    first = generate(client)
    later = NOW + datetime.timedelta(days=3640)
    renewed = generate(client, now=later)
    authorities = certs.load_certificates(renewed["ca_bundle"], "bundle")
    assert renewed["action"] == "renewed" and len(authorities) == 2
    assert certs.bundle_pem(authorities[1:]) == first["ca_bundle"]


def test_a_secret_made_by_someone_else_is_never_overwritten():
    client = FakeClient()
    client.objects[TLS] = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                           "metadata": {"name": "shim-tls", "namespace": "hypershift", "resourceVersion": "1"},
                           "data": {"tls.crt": "", "tls.key": ""}}
    refused = "Secret hypershift/shim-tls .* was not made by this module"
    with pytest.raises(serving.ServingCertificateError, match=refused):
        generate(client)
    assert client.writes == []


def test_a_serving_secret_of_another_type_is_refused():
    client = FakeClient()
    client.objects[TLS] = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                           "metadata": {"name": "shim-tls", "namespace": "hypershift", "resourceVersion": "1",
                                        "labels": {contract.SERVING_CERTIFICATE_LABEL: "generated"}}}
    with pytest.raises(serving.ServingCertificateError, match="has type Opaque, expected kubernetes.io/tls"):
        generate(client)


def test_openshift_asks_the_service_ca_for_its_bundle_and_returns_it():
    client = FakeClient()
    config_map = "/api/v1/namespaces/hypershift/configmaps/shim-tls-service-ca"
    client.objects[config_map] = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"service-ca.crt": "PEM"},
                                  "metadata": {"name": "shim-tls-service-ca", "resourceVersion": "1"}}
    wanted = params(provider="openshift")
    service = serving.ServingCertificates(client, wanted, now=NOW)
    result = service.openshift(serving.wanted_dns_names(wanted), FakeModule())
    assert result["changed"] and result["action"] == "updated" and result["ca_bundle"] == "PEM"
    annotations = client.objects[config_map]["metadata"]["annotations"]
    assert annotations == {serving.INJECT_CABUNDLE_ANNOTATION: "true"}
    assert result["secret_ready"] is False and "tls_crt_sha256" not in result
    again = service.openshift(serving.wanted_dns_names(wanted), FakeModule())
    assert (again["changed"], again["action"]) == (False, "unchanged")


def test_openshift_times_out_naming_the_config_map_and_what_to_check():
    client = FakeClient()
    service = serving.ServingCertificates(client, params(provider="openshift"), now=NOW)
    with pytest.raises(serving.ServingCertificateError,
                       match="ConfigMap hypershift/shim-tls-service-ca has no service-ca.crt after 0s"):
        service.openshift(["x.hypershift.svc"], FakeModule())
    assert client.writes[0][0] == "POST"


def test_a_caller_names_its_own_option_for_the_collections_ca():
    service = serving.ServingCertificates(FakeClient(), dict(params(provider="openshift"), generate_hint="my_option generate"),
                                          now=NOW)
    with pytest.raises(serving.ServingCertificateError, match="or use my_option generate$"):
        service.openshift(["x.hypershift.svc"], FakeModule())
