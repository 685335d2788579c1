"""Authentication: static tokens, anonymous, ServiceAccount token issue/validate (expiry, audience, deletion)."""
import base64
import json

import pytest

from tests.kubeapi.auth import (ANONYMOUS_USERNAME, DEFAULT_ISSUER, EXTRA_CREDENTIAL_ID, EXTRA_POD_NAME,
                                EXTRA_POD_UID, Authenticator, UserInfo, decode_claims_unverified, default_tokens,
                                parse_service_account_username, token_for)
from tests.kubeapi.errors import ApiError

NOW = 1_700_000_000
SIGNING_KEY = b"k" * 32
SERVICE_ACCOUNT = {"apiVersion": "v1", "kind": "ServiceAccount",
                   "metadata": {"name": "builder", "namespace": "ci", "uid": "sa-uid-1"}}
POD = {"metadata": {"name": "runner", "namespace": "ci", "uid": "pod-uid-1"}}


class Cluster:
    """Objects the authenticator looks up, changeable by each test."""

    def __init__(self):
        self.service_accounts = {("ci", "builder"): SERVICE_ACCOUNT}
        self.objects = {("Pod", "ci", "runner"): POD}

    def service_account(self, namespace, name):
        return self.service_accounts.get((namespace, name))

    def object(self, kind, namespace, name):
        return self.objects.get((kind, namespace, name))


@pytest.fixture
def cluster():
    return Cluster()


@pytest.fixture
def tokens():
    counter = iter(range(100))
    return default_tokens(token_factory=lambda: "token-%d" % next(counter))


@pytest.fixture
def authenticator(cluster, tokens):
    return Authenticator(tokens[0], SIGNING_KEY, cluster.service_account, object_lookup=cluster.object)


def test_default_tokens_have_an_admin_and_named_users(tokens):
    table, admin_token = tokens
    assert table[admin_token].groups == ["system:masters"]
    assert sorted(user.username for user in table.values()) == ["alice", "bob", "carol", "kubernetes-admin"]
    assert all(user.groups == [] for token, user in table.items() if token != admin_token)
    with pytest.raises(KeyError, match="no static token for user 'dave'; known users: alice, bob"):
        token_for(table, "dave")


def test_random_tokens_differ_between_calls():
    assert default_tokens()[1] != default_tokens()[1]


@pytest.mark.parametrize("header_template, username, groups", [
    ("Bearer {admin}", "kubernetes-admin", ["system:masters", "system:authenticated"]),
    ("bearer {alice}", "alice", ["system:authenticated"]),          # scheme is case-insensitive
    ("  Bearer {alice}  ", "alice", ["system:authenticated"]),
])
def test_static_tokens_add_system_authenticated(authenticator, tokens, header_template, username, groups):
    table, admin = tokens
    header = header_template.format(admin=admin, alice=token_for(table, "alice"))
    user = authenticator.authenticate(header)
    assert (user.username, user.groups) == (username, groups)
    assert table[admin].groups == ["system:masters"]     # the table is not mutated


@pytest.mark.parametrize("header", [None, "", "   ", "Basic dXNlcjpwYXNz", "Bearer", "Bearer  spaced"])
def test_no_bearer_credentials_is_anonymous_only_when_allowed(authenticator, header):
    assert authenticator.authenticate(header) is None
    user = authenticator.authenticate(header, allow_anonymous=True)
    assert (user.username, user.groups) == (ANONYMOUS_USERNAME, ["system:unauthenticated"])


@pytest.mark.parametrize("header", ["Bearer wrong", "Bearer a.b.c", "Bearer e30.e30.sig"])
def test_invalid_tokens_are_rejected_even_with_anonymous_allowed(authenticator, header):
    assert authenticator.authenticate(header, allow_anonymous=True) is None


def issue(authenticator, **kwargs):
    arguments = {"audiences": None, "expiration_seconds": 3600, "bound_object_ref": None, "now": NOW}
    arguments.update(kwargs)
    return authenticator.issue_service_account_token(SERVICE_ACCOUNT, **arguments)


def test_token_round_trip_has_the_real_claims(authenticator):
    token, expiration = issue(authenticator)
    assert expiration == "2023-11-14T23:13:20Z"
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header["alg"] == "HS256" and header["kid"]
    claims = decode_claims_unverified(token)
    assert claims["iss"] == DEFAULT_ISSUER and claims["aud"] == [DEFAULT_ISSUER]
    assert claims["sub"] == "system:serviceaccount:ci:builder"
    assert (claims["iat"], claims["nbf"], claims["exp"]) == (NOW, NOW, NOW + 3600)
    assert claims["kubernetes.io"] == {"namespace": "ci", "serviceaccount": {"name": "builder", "uid": "sa-uid-1"}}
    user = authenticator.authenticate("Bearer " + token, now=NOW + 10)
    assert user.username == "system:serviceaccount:ci:builder" and user.uid == "sa-uid-1"
    assert user.groups == ["system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"]
    assert user.extra == {EXTRA_CREDENTIAL_ID: ["JTI=" + claims["jti"]]}
    assert parse_service_account_username(user.username) == ("ci", "builder")


@pytest.mark.parametrize("offset, valid", [(3600, True), (3600 + 60, True), (3600 + 61, False), (-60, True),
                                           (-61, False)])
def test_expiry_and_not_before_with_the_real_one_minute_leeway(authenticator, offset, valid):
    token, _unused = issue(authenticator)
    user, reason = authenticator.authenticate_with_reason("Bearer " + token, now=NOW + offset)
    assert (user is not None) is valid
    if not valid:
        assert reason in ("service account token has expired", "service account token is not valid yet")
        assert token not in reason


def test_audience_must_intersect_the_api_audiences(authenticator):
    token, _unused = issue(authenticator, audiences=["vault"])
    user, reason = authenticator.authenticate_with_reason("Bearer " + token, now=NOW)
    assert user is None
    assert reason == ('token audiences ["vault"] is invalid for the target audiences '
                      '["https://kubernetes.default.svc.cluster.local"]')
    token, _unused = issue(authenticator, audiences=["vault", DEFAULT_ISSUER])
    assert authenticator.authenticate("Bearer " + token, now=NOW) is not None


def test_deleted_or_recreated_service_account_invalidates_its_tokens(authenticator, cluster):
    token, _unused = issue(authenticator)
    cluster.service_accounts[("ci", "builder")] = {"metadata": {"name": "builder", "namespace": "ci",
                                                                "uid": "sa-uid-2"}}
    assert authenticator.authenticate_with_reason("Bearer " + token, now=NOW)[1] == \
        "service account UID (sa-uid-2) does not match claim (sa-uid-1)"
    del cluster.service_accounts[("ci", "builder")]
    assert authenticator.authenticate_with_reason("Bearer " + token, now=NOW)[1] == \
        'serviceaccounts "builder" not found'


def test_deletion_in_progress_is_tolerated_for_the_leeway(authenticator, cluster):
    token, _unused = issue(authenticator)
    terminating = {"metadata": dict(SERVICE_ACCOUNT["metadata"], deletionTimestamp="2023-11-14T22:13:20Z")}
    cluster.service_accounts[("ci", "builder")] = terminating
    assert authenticator.authenticate("Bearer " + token, now=NOW + 30) is not None
    assert authenticator.authenticate_with_reason("Bearer " + token, now=NOW + 61)[1] == \
        "service account ci/builder has been deleted"


def test_tampered_or_foreign_tokens_are_rejected(authenticator, cluster, tokens):
    token, _unused = issue(authenticator)
    header, payload, signature = token.split(".")
    claims = decode_claims_unverified(token)
    claims["sub"] = "system:serviceaccount:ci:admin"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    assert authenticator.authenticate_with_reason("Bearer %s.%s.%s" % (header, forged, signature), now=NOW)[1] == \
        "invalid bearer token: signature does not verify"
    other = Authenticator(tokens[0], b"another-key", cluster.service_account)
    assert other.authenticate("Bearer " + token, now=NOW) is None
    foreign = Authenticator(tokens[0], SIGNING_KEY, cluster.service_account, issuer="https://elsewhere")
    assert "issuer" in foreign.authenticate_with_reason("Bearer " + token, now=NOW)[1]


def test_pod_bound_token_adds_pod_extra_and_dies_with_the_pod(authenticator, cluster):
    token, _unused = issue(authenticator, bound_object_ref={"kind": "Pod", "apiVersion": "v1", "name": "runner",
                                                            "uid": "pod-uid-1"})
    assert decode_claims_unverified(token)["kubernetes.io"]["pod"] == {"name": "runner", "uid": "pod-uid-1"}
    user = authenticator.authenticate("Bearer " + token, now=NOW)
    assert user.extra[EXTRA_POD_NAME] == ["runner"] and user.extra[EXTRA_POD_UID] == ["pod-uid-1"]
    del cluster.objects[("Pod", "ci", "runner")]
    assert authenticator.authenticate_with_reason("Bearer " + token, now=NOW)[1] == \
        "service account token has been invalidated"


@pytest.mark.parametrize("seconds, message", [
    (599, 'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: '
          "may not specify a duration less than 10 minutes"),
    (2 ** 32 + 1, 'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: '
                  "4294967297: may not specify a duration larger than 2^32 seconds"),
])
def test_token_request_expiration_bounds(authenticator, seconds, message):
    with pytest.raises(ApiError) as raised:
        issue(authenticator, expiration_seconds=seconds)
    assert raised.value.code == 422 and raised.value.message == message
    assert raised.value.details["causes"][0]["field"] == "spec.expirationSeconds"


def test_token_request_minimum_and_default_expiration(authenticator):
    assert issue(authenticator, expiration_seconds=600)[1] == "2023-11-14T22:23:20Z"
    assert issue(authenticator, expiration_seconds=None)[1] == "2023-11-14T23:13:20Z"


def test_binding_to_an_unsupported_kind_is_a_bad_request(authenticator):
    with pytest.raises(ApiError) as raised:
        issue(authenticator, bound_object_ref={"kind": "Deployment", "apiVersion": "apps/v1", "name": "d"})
    assert raised.value.code == 400
    assert raised.value.message == "cannot bind token to object of type apps/v1, Kind=Deployment"


def test_user_info_to_dict_omits_empty_fields():
    assert UserInfo("alice").to_dict() == {"username": "alice"}
    assert UserInfo("a", "u", ["g"], {"k": ("v",)}).to_dict() == {"username": "a", "uid": "u", "groups": ["g"],
                                                                  "extra": {"k": ["v"]}}


def test_authenticator_requires_a_signing_key(cluster):
    with pytest.raises(ValueError, match="non-empty signing_key"):
        Authenticator({}, b"", cluster.service_account)
