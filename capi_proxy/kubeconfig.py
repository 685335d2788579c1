"""The upstream API server from a kubeconfig: URL, TLS verified with its CA, the proxy's own credentials.

Supported: certificate-authority(-data), token, tokenFile (re-read: service-account tokens rotate),
client-certificate(-data)/client-key(-data). Refused with a clear error: insecure-skip-tls-verify,
exec and auth-provider plugins, basic auth (the proxy never weakens TLS or guesses credentials).
"""
import base64
import contextlib
import os
import ssl
import tempfile
import time

import yaml

TOKEN_FILE_RECHECK_SECONDS = 60.0


class KubeconfigError(ValueError):
    """A kubeconfig the proxy cannot use; the message names the file and the field."""


def _named(entries, name, what, path):
    for entry in entries or ():
        if entry.get("name") == name:
            return entry.get(what) or {}
    raise KubeconfigError("%s: %s %r (named by the current context) is not defined; fix the kubeconfig" % (path, what, name))


def _relative(path, value):
    return value if os.path.isabs(value) else os.path.join(os.path.dirname(os.path.abspath(path)), value)


def trust_only_the_named_ca(upstream, environ=None):
    """With a kubeconfig that names the API server's CA, point OpenSSL's default trust store at nothing.

    The proxy's own TLS contexts trust exactly that CA (cadata/cafile never load the defaults); the
    process's default contexts (aiohttp builds two when it is imported) would otherwise each load the
    system bundle: about 1.5 MB of RSS for certificates the proxy never uses. Call it before aiohttp is
    imported. Returns True when it changed the environment; a kubeconfig without a CA keeps the system store.
    """
    environ = os.environ if environ is None else environ
    if not (upstream.is_tls and upstream.names_ca):
        return False
    environ["SSL_CERT_FILE"] = os.devnull
    environ["SSL_CERT_DIR"] = os.devnull
    return True


class Upstream(object):
    """server URL, ssl contexts (without and with the proxy's client certificate) and the proxy's token."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path) as handle:
                config = yaml.safe_load(handle) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise KubeconfigError("cannot read kubeconfig %s: %s" % (path, exc))
        context_name = config.get("current-context")
        contexts = config.get("contexts") or []
        if not context_name:
            if len(contexts) != 1:
                raise KubeconfigError("%s has no current-context and %d contexts; set current-context" % (path, len(contexts)))
            context_name = contexts[0].get("name")
        context = _named(contexts, context_name, "context", path)
        cluster = _named(config.get("clusters"), context.get("cluster"), "cluster", path)
        user = _named(config.get("users"), context.get("user"), "user", path) if context.get("user") else {}
        self.server = (cluster.get("server") or "").rstrip("/")
        if not self.server.startswith(("https://", "http://")):
            raise KubeconfigError("%s: cluster server %r must be an http(s) URL" % (path, self.server))
        if cluster.get("insecure-skip-tls-verify"):
            raise KubeconfigError("%s: insecure-skip-tls-verify is set; the proxy always verifies the API server, "
                                  "give certificate-authority-data instead" % path)
        for unsupported in ("exec", "auth-provider", "username", "password"):
            if user.get(unsupported):
                raise KubeconfigError("%s: user field %r is not supported by the proxy; use a token, tokenFile or a "
                                      "client certificate" % (path, unsupported))
        self._token = user.get("token")
        self._token_file = _relative(path, user["tokenFile"]) if user.get("tokenFile") else None
        self._token_checked = 0.0
        self._token_mtime = None
        self.is_tls = self.server.startswith("https://")
        self.names_ca = bool(cluster.get("certificate-authority-data") or cluster.get("certificate-authority"))
        self.ssl_plain = self._ssl_context(cluster, None) if self.is_tls else None
        # OpenSSL loads a certificate and key only from files: -data fields are written into a private directory
        # (0700, files 0600) that is removed as soon as the context holds them - no key is left on disk. Without them
        # no directory is made (a sidecar's root filesystem is read-only, with no /tmp to write).
        inline = user.get("client-certificate-data") or user.get("client-key-data")
        with (tempfile.TemporaryDirectory(prefix="capi-proxy-") if inline else contextlib.nullcontext()) as scratch:
            client_cert = self._client_cert(user, scratch)
            self.has_client_cert = client_cert is not None
            self.ssl_own = self._ssl_context(cluster, client_cert) if (self.is_tls and client_cert) else self.ssl_plain
        if self._token_file:
            self.token()  # fail at start when the file is unreadable

    def _ssl_context(self, cluster, client_cert):
        if cluster.get("certificate-authority-data"):
            context = ssl.create_default_context(
                cadata=base64.b64decode(cluster["certificate-authority-data"]).decode("ascii", "replace"))
        elif cluster.get("certificate-authority"):
            context = ssl.create_default_context(cafile=_relative(self.path, cluster["certificate-authority"]))
        else:
            context = ssl.create_default_context()
        if client_cert is not None:
            context.load_cert_chain(*client_cert)
        return context

    def _client_cert(self, user, scratch):
        def material(field):
            if user.get(field + "-data"):
                name = os.path.join(scratch, field + ".pem")
                with os.fdopen(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
                    handle.write(base64.b64decode(user[field + "-data"]))
                return name
            if user.get(field):
                return _relative(self.path, user[field])
            return None
        cert, key = material("client-certificate"), material("client-key")
        if cert is None and key is None:
            return None
        if cert is None or key is None:
            raise KubeconfigError("%s: a client certificate needs both client-certificate and client-key" % self.path)
        return cert, key

    def token(self):
        """The proxy's own bearer token (None if the kubeconfig has none); tokenFile re-read when it changes."""
        if self._token_file is None:
            return self._token
        now = time.monotonic()
        if self._token is None or now - self._token_checked > TOKEN_FILE_RECHECK_SECONDS:
            self._token_checked = now
            try:
                mtime = os.stat(self._token_file).st_mtime
                if mtime != self._token_mtime:
                    with open(self._token_file) as handle:
                        self._token = handle.read().strip()
                    self._token_mtime = mtime
            except OSError as exc:
                if self._token is None:
                    raise KubeconfigError("%s: tokenFile %s cannot be read: %s" % (self.path, self._token_file, exc))
        return self._token

    def own_headers(self):
        token = self.token()
        return {"Authorization": "Bearer " + token} if token else {}
