"""A request that gets no HTTP answer fails with a message naming the server, what happened and what to check: real
urllib3 and kubernetes-client requests to loopback (a closed port, a TLS server whose CA the client does not trust),
and the exceptions urllib3 raises for what loopback cannot show (DNS, timeouts, a dropped connection). Then the rest
of explain_failure, the one explanation of a failure (the inventory's API errors)."""
import socket
import ssl
import threading

import pytest
import urllib3
from kubernetes import client as k8s_client
from urllib3.exceptions import MaxRetryError, NameResolutionError, ProtocolError, ReadTimeoutError

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiError, explain_failure
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.transport import server_of, transport_problem
from testenv import certs


def _closed_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """A TLS listener on loopback with a certificate of its own CA; it completes handshakes and closes."""
    pems = certs.generate()
    folder = tmp_path_factory.mktemp("tls")
    (folder / "cert.pem").write_text(pems["cert"])
    (folder / "key.pem").write_text(pems["key"])
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(folder / "cert.pem"), str(folder / "key.pem"))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (ssl.SSLError, OSError):
                pass
            finally:
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    other_ca = folder / "other-ca.pem"
    other_ca.write_text(certs.generate()["ca_cert"])
    yield {"url": "https://127.0.0.1:%d" % listener.getsockname()[1], "other_ca": str(other_ca)}
    stop.set()
    thread.join(2)
    listener.close()


def _no_answer(url, ca=None):
    """What the official client raises for GET /version at url, and transport_problem's message for it."""
    configuration = k8s_client.Configuration()
    configuration.host = url
    configuration.ssl_ca_cert = ca
    configuration.retries = 0
    with pytest.raises(urllib3.exceptions.HTTPError) as failed:
        k8s_client.VersionApi(k8s_client.ApiClient(configuration)).get_code()
    return transport_problem(failed.value, url)


def test_a_closed_port_is_named_as_refused_with_the_server():
    url = "https://127.0.0.1:%d" % _closed_port()
    message = _no_answer(url)
    assert "the API server %s refused the connection: nothing listens on that host and port" % url in message
    assert "check the server URL of the kubeconfig context" in message
    error = ApiError(None, "ConnectionError", message, "GET /version")
    assert str(error).endswith("(no HTTP answer)") and "HTTP None" not in str(error)


def test_an_untrusted_certificate_is_named_as_tls_verification(tls_server):
    message = _no_answer(tls_server["url"], tls_server["other_ca"])
    assert "the API server %s: TLS verification of its certificate failed" % tls_server["url"] in message
    assert "certificate-authority-data" in message


def test_server_comes_from_the_pool_the_error_names():
    with pytest.raises(MaxRetryError) as failed:
        urllib3.PoolManager().request("GET", "http://127.0.0.1:%d/version" % _closed_port(), retries=0)
    assert server_of(failed.value).startswith("http://127.0.0.1:")
    assert server_of(ValueError("x"), "https://fallback:6443") == "https://fallback:6443"


@pytest.mark.parametrize("error, words", [
    (MaxRetryError(None, "/version", NameResolutionError("api.example.invalid", None, socket.gaierror(
        -2, "Name or service not known"))), ["https://api:6443: its host name does not resolve (DNS", "resolv.conf"]),
    (MaxRetryError(None, "/version", ReadTimeoutError(None, "/version", "Read timed out. (read timeout=30)")),
     ["https://api:6443 did not answer in time", "the run resumes where it stopped"]),
    (MaxRetryError(None, "/version", ProtocolError("Connection aborted.", ConnectionResetError(104, "reset"))),
     ["https://api:6443 dropped the connection", "load balancer"]),
    (urllib3.exceptions.HTTPError("something else"), ["no answer from the API server https://api:6443 (something else)"]),
])
def test_each_kind_of_no_answer_says_what_to_check(error, words):
    message = transport_problem(error, "https://api:6443")
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("status, expected", [
    (None, "the API server https://api:6443 is unreachable (nothing listens); check that it is up and reachable from "
           "here and that the kubeconfig's server address is right"),
    (401, "the API server https://api:6443 rejected the credentials (401: Unauthorized); renew the token or "
          "certificate in the kubeconfig"),
    (403, "LIST HostedClusters is forbidden (403: Forbidden); grant this identity list on it, or remove the entry"),
    (500, "LIST HostedClusters failed on https://api:6443: HTTP 500 Reason: Internal"),
])
def test_explain_failure_is_the_one_explanation_of_an_api_error(status, expected):
    message = {None: "nothing listens", 401: "Unauthorized", 403: "Forbidden", 500: "Internal"}[status]
    error = ApiError(status, "Reason", message, "LIST HostedClusters")
    assert explain_failure(error, "https://api:6443", "remove the entry") == expected


def test_explain_failure_of_a_request_with_no_answer_is_the_transport_problem():
    error = urllib3.exceptions.HTTPError("something else")
    assert explain_failure(error, "https://api:6443") == transport_problem(error, "https://api:6443")
