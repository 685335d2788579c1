"""Shared command-line helpers of the proxy and the shim: addresses, numbers, group pairs, the serving TLS context
(no aiohttp: the proxy sets up its trust store before aiohttp is imported)."""
import argparse
import ssl


def address(value):
    """'127.0.0.1:8080', '[::1]:8080' or ':8080' (loopback) -> (host, port)."""
    host, colon, port = value.rpartition(":")
    if not colon or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError("expected HOST:PORT such as 127.0.0.1:8080, got %r" % value)
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def positive(kind):
    def parse(value):
        number = kind(value)
        if number <= 0:
            raise argparse.ArgumentTypeError("expected a positive number, got %r" % value)
        return number
    return parse


def extra_group(value):
    standard, equals, private = value.partition("=")
    if not equals:
        raise argparse.ArgumentTypeError("expected STANDARD_GROUP=PRIVATE_GROUP, got %r" % value)
    return standard, private


def server_tls(cert, key):
    """The serving TLS context of cert and key (TLS 1.2 or later; no client certificate asked for, no CA store
    loaded)."""
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.minimum_version = ssl.TLSVersion.TLSv1_2
    tls.load_cert_chain(cert, key)
    return tls
