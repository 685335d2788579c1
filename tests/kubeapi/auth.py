"""Authentication: static bearer tokens and ServiceAccount tokens (TokenRequest), like kube-apiserver.

Differences from a real cluster (also in tests/kubeapi/README.md):
- ServiceAccount JWTs are signed with HMAC-SHA256 (`alg: HS256`) using the server's signing key instead of
  RS256 with a key pair; the claims are the real ones (iss, sub, aud, exp, iat, nbf, jti, kubernetes.io).
- The issuer and the default audience are "https://kubernetes.default.svc.cluster.local" (what kubeadm and
  kind configure: --service-account-issuer, and --api-audiences defaulting to it).
- Legacy Secret-based ServiceAccount tokens are not issued or accepted.
Tokens never appear in messages, exceptions or logs produced here.
"""
import base64
import copy
import hashlib
import hmac
import json
import secrets
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

from tests.kubeapi.errors import FIELD_INVALID, bad_request, cause, invalid

AUTHENTICATED_GROUP = "system:authenticated"
UNAUTHENTICATED_GROUP = "system:unauthenticated"
MASTERS_GROUP = "system:masters"
ANONYMOUS_USERNAME = "system:anonymous"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600          # ValidateTokenRequest: "may not specify a duration less than 10 minutes"
MAX_EXPIRATION_SECONDS = 1 << 32
CLOCK_LEEWAY_SECONDS = 60             # go-jose jwt.DefaultLeeway, used for exp and nbf
# user.Info extra keys a bound ServiceAccount token adds (k8s.io/apiserver/pkg/authentication/serviceaccount)
EXTRA_POD_NAME = "authentication.kubernetes.io/pod-name"
EXTRA_POD_UID = "authentication.kubernetes.io/pod-uid"
EXTRA_NODE_NAME = "authentication.kubernetes.io/node-name"
EXTRA_NODE_UID = "authentication.kubernetes.io/node-uid"
EXTRA_CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
TEST_USERS = ("alice", "bob", "carol")


@dataclass
class UserInfo:
    username: str
    uid: str = ""
    groups: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    def to_dict(self):
        """authentication.k8s.io/v1 UserInfo (SelfSubjectReview status.userInfo): empty fields omitted."""
        info = {"username": self.username}
        if self.uid:
            info["uid"] = self.uid
        if self.groups:
            info["groups"] = list(self.groups)
        if self.extra:
            info["extra"] = {key: list(values) for key, values in self.extra.items()}
        return info


def anonymous_user():
    return UserInfo(ANONYMOUS_USERNAME, groups=[UNAUTHENTICATED_GROUP])


def service_account_username(namespace, name):
    return SERVICE_ACCOUNT_PREFIX + namespace + ":" + name


def parse_service_account_username(username):
    """(namespace, name) for "system:serviceaccount:<ns>:<name>", else None."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_PREFIX):].split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1]


def with_authenticated_group(user):
    """AuthenticatedGroupAdder: every authenticated user except anonymous gets system:authenticated."""
    user = copy.deepcopy(user)
    if user.username != ANONYMOUS_USERNAME and AUTHENTICATED_GROUP not in user.groups:
        user.groups.append(AUTHENTICATED_GROUP)
    return user


def default_tokens(users=TEST_USERS, token_factory=None):
    """A fresh static token table: an admin in system:masters plus named users with no groups.

    Returns (tokens, admin_token); tokens maps token -> UserInfo (system:authenticated is added at
    authentication time, as the real server does). Use `token_for(tokens, "alice")` to find one.
    """
    token_factory = token_factory or (lambda: secrets.token_urlsafe(32))
    admin_token = token_factory()
    tokens = {admin_token: UserInfo("kubernetes-admin", uid="", groups=[MASTERS_GROUP])}
    for username in users:
        tokens[token_factory()] = UserInfo(username)
    return tokens, admin_token


def token_for(tokens, username):
    """The static token of `username` in a default_tokens() table (KeyError naming the user if absent)."""
    for token, user in tokens.items():
        if user.username == username:
            return token
    raise KeyError("no static token for user %r; known users: %s"
                   % (username, ", ".join(sorted(user.username for user in tokens.values()))))


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _epoch(now):
    if now is None:
        return time.time()
    if isinstance(now, datetime):
        return (now if now.tzinfo else now.replace(tzinfo=timezone.utc)).timestamp()
    return float(now)


def rfc3339(epoch_seconds):
    return datetime.fromtimestamp(int(epoch_seconds), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class TokenInvalid(Exception):
    """Why a bearer token was rejected (safe to log: never contains the token)."""


class Authenticator:
    """Bearer-token authentication: the static token table, then ServiceAccount JWTs.

    service_account_lookup(namespace, name) -> ServiceAccount dict | None.
    object_lookup(kind, namespace, name) -> dict | None (optional) re-checks the Pod/Secret/Node a bound
    token names, like the real validator; without it bound objects are not re-checked.
    """

    def __init__(self, static_tokens, signing_key, service_account_lookup, issuer=DEFAULT_ISSUER,
                 api_audiences=None, object_lookup=None):
        if not signing_key:
            raise ValueError("Authenticator needs a non-empty signing_key (bytes) to sign ServiceAccount tokens")
        self.static_tokens = dict(static_tokens)
        self.signing_key = signing_key if isinstance(signing_key, bytes) else str(signing_key).encode()
        self.service_account_lookup = service_account_lookup
        self.object_lookup = object_lookup
        self.issuer = issuer
        self.api_audiences = list(api_audiences or [issuer])
        self.key_id = hashlib.sha256(self.signing_key).hexdigest()[:43]

    # -- authentication ------------------------------------------------------------------------------

    def authenticate(self, authorization_header, allow_anonymous=False, now=None):
        """The user for an Authorization header, or None.

        None means: no usable bearer credentials (unless allow_anonymous, then the anonymous user is
        returned for that case) or an invalid/expired token (always None: the caller answers 401).
        """
        user, _reason = self.authenticate_with_reason(authorization_header, allow_anonymous, now)
        return user

    def authenticate_with_reason(self, authorization_header, allow_anonymous=False, now=None):
        """(user or None, reason) where reason says why a token was rejected (for server logs)."""
        token = self._bearer_token(authorization_header)
        if token is None:
            if allow_anonymous:
                return anonymous_user(), ""
            return None, "no bearer token"
        for known_token, user in self.static_tokens.items():
            if hmac.compare_digest(known_token.encode(), token.encode()):
                return with_authenticated_group(user), ""
        try:
            return self._service_account_user(token, _epoch(now)), ""
        except TokenInvalid as error:
            return None, str(error)

    @staticmethod
    def _bearer_token(header):
        """The token of "Bearer <token>" (scheme case-insensitive), None when there are no credentials."""
        header = (header or "").strip()
        parts = header.split(" ", 2)
        if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
            return None
        return parts[1]

    def _decode(self, token):
        parts = token.split(".")
        if len(parts) != 3:
            raise TokenInvalid("invalid bearer token")
        try:
            header = json.loads(_b64url_decode(parts[0]))
            claims = json.loads(_b64url_decode(parts[1]))
            signature = _b64url_decode(parts[2])
        except ValueError:
            raise TokenInvalid("invalid bearer token: malformed JWT")
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise TokenInvalid("invalid bearer token: malformed JWT")
        if claims.get("iss") != self.issuer:
            raise TokenInvalid("invalid bearer token: issuer is not this server's service account issuer")
        if header.get("alg") != "HS256":
            raise TokenInvalid("invalid bearer token: unexpected signing algorithm")
        expected = hmac.new(self.signing_key, (parts[0] + "." + parts[1]).encode("ascii"), hashlib.sha256).digest()
        if not hmac.compare_digest(expected, signature):
            raise TokenInvalid("invalid bearer token: signature does not verify")
        return claims

    def _service_account_user(self, token, now):
        claims = self._decode(token)
        audiences = claims.get("aud")
        audiences = [audiences] if isinstance(audiences, str) else list(audiences or [])
        if not set(audiences) & set(self.api_audiences):
            raise TokenInvalid("token audiences %s is invalid for the target audiences %s"
                               % (json.dumps(audiences), json.dumps(self.api_audiences)))
        if not isinstance(claims.get("exp"), (int, float)) or now > claims["exp"] + CLOCK_LEEWAY_SECONDS:
            raise TokenInvalid("service account token has expired")
        if isinstance(claims.get("nbf"), (int, float)) and now + CLOCK_LEEWAY_SECONDS < claims["nbf"]:
            raise TokenInvalid("service account token is not valid yet")
        private = claims.get("kubernetes.io") or {}
        namespace = private.get("namespace", "")
        account = private.get("serviceaccount") or {}
        if claims.get("sub") != service_account_username(namespace, account.get("name", "")):
            raise TokenInvalid("service account token claims could not be validated: subject mismatch")
        live = self.service_account_lookup(namespace, account.get("name", ""))
        if live is None:
            raise TokenInvalid('serviceaccounts "%s" not found' % account.get("name", ""))
        live_meta = live.get("metadata") or {}
        if _deleted_before(live_meta, now):
            raise TokenInvalid("service account %s/%s has been deleted" % (namespace, account.get("name")))
        if live_meta.get("uid", "") != account.get("uid", ""):
            raise TokenInvalid("service account UID (%s) does not match claim (%s)"
                               % (live_meta.get("uid", ""), account.get("uid", "")))
        extra = {}
        for kind, claim in (("Secret", "secret"), ("Pod", "pod"), ("Node", "node")):
            reference = private.get(claim)
            if not reference:
                continue
            self._check_bound_object(kind, "" if kind == "Node" else namespace, reference, now)
            if kind == "Pod":
                extra[EXTRA_POD_NAME], extra[EXTRA_POD_UID] = [reference.get("name", "")], [reference.get("uid", "")]
            if kind == "Node":
                extra[EXTRA_NODE_NAME], extra[EXTRA_NODE_UID] = [reference.get("name", "")], [reference.get("uid", "")]
        if claims.get("jti"):
            extra[EXTRA_CREDENTIAL_ID] = ["JTI=" + claims["jti"]]
        user = UserInfo(service_account_username(namespace, account["name"]), uid=account.get("uid", ""),
                        groups=[SERVICE_ACCOUNTS_GROUP, SERVICE_ACCOUNTS_GROUP + ":" + namespace], extra=extra)
        return with_authenticated_group(user)

    def _check_bound_object(self, kind, namespace, reference, now):
        if self.object_lookup is None:
            return
        live = self.object_lookup(kind, namespace, reference.get("name", ""))
        live_meta = (live or {}).get("metadata") or {}
        if live is None or _deleted_before(live_meta, now):
            raise TokenInvalid("service account token has been invalidated")
        if live_meta.get("uid", "") != reference.get("uid", ""):
            raise TokenInvalid("%s UID (%s) does not match service account %s ref claim (%s)"
                               % (kind.lower(), live_meta.get("uid", ""), kind.lower(), reference.get("uid", "")))

    # -- TokenRequest ---------------------------------------------------------------------------------

    def issue_service_account_token(self, service_account, audiences=None,
                                    expiration_seconds=DEFAULT_EXPIRATION_SECONDS, bound_object_ref=None,
                                    now=None, request_name=""):
        """(token, status.expirationTimestamp) for a TokenRequest on `service_account`.

        Validates spec.expirationSeconds like ValidateTokenRequest (ApiError 422 "TokenRequest ... is
        invalid") and the bound object kind (400). bound_object_ref {kind, apiVersion, name, uid} must
        already be resolved by the caller (it checks the object exists and its uid).
        """
        if expiration_seconds is None:
            expiration_seconds = DEFAULT_EXPIRATION_SECONDS
        causes = []
        if expiration_seconds < MIN_EXPIRATION_SECONDS:
            causes.append(cause(FIELD_INVALID, "spec.expirationSeconds", "Invalid value: %d: may not specify a "
                                "duration less than 10 minutes" % expiration_seconds))
        if expiration_seconds > MAX_EXPIRATION_SECONDS:
            causes.append(cause(FIELD_INVALID, "spec.expirationSeconds", "Invalid value: %d: may not specify a "
                                "duration larger than 2^32 seconds" % expiration_seconds))
        if causes:
            raise invalid("authentication.k8s.io", "TokenRequest", request_name, causes)
        metadata = service_account.get("metadata") or {}
        namespace, name = metadata.get("namespace", ""), metadata.get("name", "")
        issued_at = int(_epoch(now))
        expires = issued_at + int(expiration_seconds)
        private = {"namespace": namespace, "serviceaccount": {"name": name, "uid": metadata.get("uid", "")}}
        if bound_object_ref:
            kind = bound_object_ref.get("kind", "")
            api_version = bound_object_ref.get("apiVersion", "v1")
            group, _separator, version = api_version.rpartition("/")
            if group or kind not in ("Pod", "Secret", "Node"):
                raise bad_request("cannot bind token to object of type %s/%s, Kind=%s" % (group, version, kind))
            private[kind.lower()] = {"name": bound_object_ref.get("name", ""), "uid": bound_object_ref.get("uid", "")}
        claims = {
            "aud": list(audiences) if audiences else list(self.api_audiences),
            "exp": expires,
            "iat": issued_at,
            "iss": self.issuer,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": private,
            "nbf": issued_at,
            "sub": service_account_username(namespace, name),
        }
        header = {"alg": "HS256", "kid": self.key_id}
        signing_input = (_b64url(json.dumps(header, separators=(",", ":")).encode()) + "."
                         + _b64url(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode()))
        signature = hmac.new(self.signing_key, signing_input.encode("ascii"), hashlib.sha256).digest()
        return signing_input + "." + _b64url(signature), rfc3339(expires)


def _deleted_before(metadata, now):
    """Deleted more than the clock leeway ago (the real validator tolerates a just-deleted object)."""
    stamp = metadata.get("deletionTimestamp")
    if not stamp:
        return False
    try:
        deleted = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return True
    return deleted < now - CLOCK_LEEWAY_SECONDS


def decode_claims_unverified(token):
    """The claims of a JWT without verifying it (tests and debugging)."""
    return json.loads(_b64url_decode(token.split(".")[1]))
