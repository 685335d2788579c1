# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a request that got no HTTP answer means, for the user: which server, what happened, what to check.

urllib3 (under the kubernetes client) raises MaxRetryError around the cause once its retries are spent; the cause
says whether the host name did not resolve, nothing listened, TLS verification failed, the connection timed out or
was dropped. Pure: it reads the exception only. Called through client.explain_failure, the one explanation of a
failure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    from urllib3.exceptions import (ConnectTimeoutError, NewConnectionError, ProtocolError, ReadTimeoutError,
                                    SSLError)
except ImportError:  # urllib3 comes with kubernetes; without it no request is sent anyway
    ConnectTimeoutError = NewConnectionError = ProtocolError = ReadTimeoutError = SSLError = type(
        "Unavailable", (Exception,), {})

CHECK_SERVER = "check the server URL of the kubeconfig context (or the host option)"
DNS_WORDS = ("Name or service not known", "nodename nor servname", "Temporary failure in name resolution",
             "No address associated with hostname", "getaddrinfo failed", "Failed to resolve")


def server_of(exc, default=""):
    """scheme://host:port of the connection pool the exception came from (MaxRetryError and its kin), else default."""
    pool = getattr(exc, "pool", None)
    host = getattr(pool, "host", None)
    if not host:
        return default
    return "%s://%s:%s" % (getattr(pool, "scheme", None) or "https", host, getattr(pool, "port", None) or 443)


def _causes(exc):
    seen = []
    while exc is not None and exc not in seen and len(seen) < 10:
        seen.append(exc)
        exc = getattr(exc, "reason", None) if isinstance(getattr(exc, "reason", None), BaseException) else (
            exc.__cause__ or exc.__context__)
    return seen


def transport_problem(exc, server=""):
    """The message for a request that got no HTTP answer from `server` (found in exc when it names its pool)."""
    where = "the API server %s" % (server_of(exc) or server or "(no server URL known)")
    causes = _causes(exc)
    cause = causes[-1]
    text = " ".join(str(item) for item in causes)
    detail = str(cause) if str(cause) else type(cause).__name__
    if any(word in text for word in DNS_WORDS) or type(cause).__name__ == "NameResolutionError":
        return ("%s: its host name does not resolve (DNS: %s); %s and the controller's DNS (resolv.conf, a VPN)"
                % (where, detail, CHECK_SERVER))
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return ("%s: TLS verification of its certificate failed (%s); check that the kubeconfig's cluster entry holds "
                "the CA that signed it (certificate-authority or certificate-authority-data) and that the server "
                "URL's host is a name the certificate carries" % (where, detail))
    if any(isinstance(item, SSLError) for item in causes) or "SSL" in type(cause).__name__:
        return ("%s: the TLS handshake failed (%s); check that the server URL is the API server's HTTPS endpoint and "
                "the client certificate and key of the kubeconfig's user entry" % (where, detail))
    if "Connection refused" in text or any(isinstance(item, ConnectionRefusedError) for item in causes):
        return ("%s refused the connection: nothing listens on that host and port; %s and that kube-apiserver is up "
                "there" % (where, CHECK_SERVER))
    if any(isinstance(item, ConnectTimeoutError) and not isinstance(item, NewConnectionError) for item in causes):
        return ("%s did not accept a connection in time (%s); %s and the network path to it (firewall, proxy, VPN)"
                % (where, detail, CHECK_SERVER))
    if any(isinstance(item, NewConnectionError) for item in causes):
        return "%s could not be reached (%s); %s and the network path to it" % (where, detail, CHECK_SERVER)
    if any(isinstance(item, ReadTimeoutError) for item in causes):
        return ("%s did not answer in time (%s); it may be overloaded or the request too large: check its health, "
                "then run again (the run resumes where it stopped)" % (where, detail))
    if any(isinstance(item, ProtocolError) for item in causes):
        return ("%s dropped the connection (%s); check what sits in between (load balancer, proxy) and the server's "
                "logs, then run again (the run resumes where it stopped)" % (where, detail))
    return "no answer from %s (%s); %s and that the server is up" % (where, detail, CHECK_SERVER)
