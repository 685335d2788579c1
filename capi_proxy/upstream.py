"""The proxy's side of the API server: pooled HTTP sessions and the caches it fills with its own credentials.

Client requests go out on the plain session (the kubeconfig's client certificate, if any, is never
attached to them, so a client's token is what the server authenticates). The proxy's own reads
(discovery index, CRD contract labels, readiness) use the kubeconfig's credentials.
"""
import asyncio
import asyncio.sslproto
import json
import time

import aiohttp
import yarl

from capi_proxy.core import CONTRACT_LABELS
from capi_proxy.discovery import AGGREGATED_KIND, ServedIndex

AGGREGATED_ACCEPT = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                     "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
# asyncio (3.11+) gives every TLS connection a zero-filled 256 KiB read buffer: with one upstream connection per
# watch that was 43 of the proxy's 104 MB at 200 watches (measured: 300 KiB per idle TLS connection, 60 KiB with
# 16 KiB). A TLS record carries at most 16 KiB, so a smaller buffer only means more, smaller reads of big bodies.
TLS_READ_BUFFER_BYTES = 16 * 1024
_URLS_REMEMBERED = 1024  # paths name objects (and queries vary): the memo of their URLs is bounded


def limit_tls_read_buffer(size=TLS_READ_BUFFER_BYTES):
    """Cap asyncio's per-connection TLS read buffer (the SSLProtocol.max_size class attribute) for this process."""
    protocol = getattr(asyncio.sslproto, "SSLProtocol", None)
    if protocol is not None and getattr(protocol, "max_size", 0) > size:
        protocol.max_size = size


class UpstreamClient(object):
    def __init__(self, upstream, timeout):
        self.upstream = upstream
        self.timeout = timeout
        self.plain = None
        self.own = None
        self._urls = {}

    async def start(self):
        def session(ssl_context):
            connector = aiohttp.TCPConnector(ssl=ssl_context if self.upstream.is_tls else False, limit=0,
                                             keepalive_timeout=60, enable_cleanup_closed=True)
            # no cookie jar: nothing one client's answer set may go out with another client's request
            return aiohttp.ClientSession(connector=connector, auto_decompress=False, skip_auto_headers=("User-Agent",),
                                         read_bufsize=16 * 1024, cookie_jar=aiohttp.DummyCookieJar())
        self.plain = session(self.upstream.ssl_plain)
        self.own = session(self.upstream.ssl_own) if self.upstream.has_client_cert else self.plain

    async def close(self):
        for session in {id(self.plain): self.plain, id(self.own): self.own}.values():
            if session is not None:
                await session.close()

    def url(self, path_and_query):
        """The URL of path_and_query on the API server (yarl URLs are immutable: each is made once, bounded)."""
        url = self._urls.get(path_and_query)
        if url is None:
            if len(self._urls) >= _URLS_REMEMBERED:
                self._urls.clear()
            url = self._urls[path_and_query] = yarl.URL(self.upstream.server + path_and_query, encoded=True)
        return url

    def session(self, own_credentials):
        return self.own if own_credentials else self.plain

    def own_request_headers(self, accept="application/json", content_type=None):
        """The headers of a request with the proxy's own credentials: uncompressed, as every request the proxy sends
        upstream - its sessions do not decompress (answers are passed through as they come), and kube-apiserver gzips
        answers over 128 KiB (a CRD list) to a client that accepts it."""
        headers = dict(self.upstream.own_headers(), Accept=accept)
        headers["Accept-Encoding"] = "identity"
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    async def own_get_json(self, path, accept="application/json", timeout=None):
        """(status, document or None) of a GET with the proxy's own credentials (own_request_headers)."""
        headers = self.own_request_headers(accept)
        client_timeout = aiohttp.ClientTimeout(total=timeout or self.timeout)
        async with self.own.get(self.url(path), headers=headers, timeout=client_timeout) as response:
            raw = await response.read()
            try:
                return response.status, json.loads(raw)
            except ValueError:
                return response.status, None


class TimedCache(object):
    """One value refreshed after ttl seconds, or on demand at most every min_interval seconds."""

    def __init__(self, loader, ttl, min_interval=1.0):
        self.loader = loader
        self.ttl = ttl
        self.min_interval = min_interval
        self.value = None
        self.loaded_at = None
        self.lock = asyncio.Lock()

    def put(self, value):
        """A value loaded by someone else just now (the proxy's index from an aggregated discovery answer)."""
        self.value = value
        self.loaded_at = time.monotonic()

    async def get(self, refresh=False):
        now = time.monotonic()
        stale = self.loaded_at is None or now - self.loaded_at > self.ttl
        wanted = refresh and (self.loaded_at is None or now - self.loaded_at > self.min_interval)
        if stale or wanted:
            async with self.lock:
                if self.loaded_at is None or time.monotonic() - self.loaded_at > (self.min_interval if refresh else self.ttl):
                    self.value = await self.loader()
                    self.loaded_at = time.monotonic()
        return self.value


async def load_index(client, group_map):
    """ServedIndex from aggregated discovery; legacy per-group documents when the server has no aggregation."""
    status, document = await client.own_get_json("/apis", AGGREGATED_ACCEPT)
    if status == 200 and isinstance(document, dict) and document.get("kind") == AGGREGATED_KIND:
        return ServedIndex(document, group_map)
    if status != 200 or not isinstance(document, dict):
        raise RuntimeError("discovery GET /apis with the proxy's credentials answered %s" % status)
    items = []
    for group_entry in document.get("groups") or ():
        name = group_entry.get("name") or ""
        if not group_map.is_private(name):
            continue
        versions = []
        for version_entry in group_entry.get("versions") or ():
            version = version_entry.get("version")
            status, resource_list = await client.own_get_json("/apis/%s/%s" % (name, version))
            if status == 200 and isinstance(resource_list, dict):
                versions.append({"version": version, "resources": _aggregated_from_legacy(resource_list, name, version)})
        items.append({"metadata": {"name": name}, "versions": versions})
    return ServedIndex({"items": items}, group_map)


def _aggregated_from_legacy(resource_list, group, version):
    by_name = {}
    for resource in resource_list.get("resources") or ():
        name = resource.get("name") or ""
        if "/" not in name:
            by_name[name] = {"resource": name, "responseKind": {"group": group, "version": version, "kind": resource.get("kind")},
                             "scope": "Namespaced" if resource.get("namespaced") else "Cluster",
                             "singularResource": resource.get("singularName", ""), "verbs": resource.get("verbs") or [],
                             "shortNames": resource.get("shortNames") or [], "categories": resource.get("categories") or []}
    for resource in resource_list.get("resources") or ():
        parent, slash, sub = (resource.get("name") or "").partition("/")
        if slash and parent in by_name:
            by_name[parent].setdefault("subresources", []).append(
                {"subresource": sub, "responseKind": {"group": resource.get("group", group),
                                                      "version": resource.get("version", version),
                                                      "kind": resource.get("kind")},
                 "verbs": resource.get("verbs") or []})
    return list(by_name.values())


async def load_contract_crds(client, group_map, index_cache=None):
    """Slim CRDs of the mapped groups (name, group, kind, labels; a webhook's clientConfig): what convert_object
    reads for refs, and where the shim delegates a provider's conversions.

    With an index cache only metadata is fetched (kinds come from discovery): full CRDs carry every
    schema and would cost the proxy megabytes for a few labels.
    """
    accept = METADATA_LIST_ACCEPT if index_cache is not None else "application/json"
    status, document = await client.own_get_json(CRD_PATH, accept)
    if status != 200 or not isinstance(document, dict):
        raise RuntimeError("GET %s with the proxy's credentials answered %s; grant it get/list on "
                           "customresourcedefinitions (roles/api_proxy does)" % (CRD_PATH, status))
    index = await index_cache.get() if index_cache is not None else None
    slim = []
    for item in document.get("items") or ():
        metadata = item.get("metadata") or {}
        plural, _dot, group = (metadata.get("name") or "").partition(".")
        labels = metadata.get("labels") or {}
        # CAPI's groups, and any provider outside them that declares a contract: HyperShift's HostedControlPlane
        # (hypershift.openshift.io, the Cluster's controlPlaneRef) carries cluster.x-k8s.io/v1beta1 for this
        if not group_map.is_mapped(group) and not any(label in labels for label in CONTRACT_LABELS):
            continue
        kind = ((item.get("spec") or {}).get("names") or {}).get("kind")
        if kind is None and index is not None:
            for version in index.versions.get(group) or ():
                entry = index.entry(group, version, plural)
                if entry is not None:
                    kind = (entry.get("responseKind") or {}).get("kind")
                    break
        if kind:
            spec = {"group": group, "names": {"kind": kind, "plural": plural}}
            conversion = (item.get("spec") or {}).get("conversion") or {}
            if conversion.get("strategy") == "Webhook":  # how a provider converts (the shim delegates to it)
                spec["conversion"] = {"strategy": "Webhook", "webhook": {"clientConfig": dict(
                    (conversion.get("webhook") or {}).get("clientConfig") or {})}}
            slim.append({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                         "metadata": {"name": metadata.get("name"), "labels": dict(metadata.get("labels") or {})},
                         "spec": spec})
    return slim
