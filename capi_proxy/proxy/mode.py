"""The proxy's mode: translate (the standard CAPI groups served from the private ones) or pass-through (a relay that
changes nothing), fixed by --mode or followed live from the HCP namespace's mode ConfigMap (--mode-config-map).

The sidecar goes into a CAPI-dependent Deployment ahead of the migration, in pass-through: its Pods roll once, long
before the window, and the controllers never stop. In the window the migration flips every sidecar of the namespace
at once by writing that one ConfigMap (contract.py: PROXY_MODE_CONFIG_MAP, data.mode). A sidecar that sees a new
mode applies it to the next request, ends every open watch with a 410 Expired ERROR event (client-go's reflectors then
re-list, in the new mode) and refuses a watch that resumes from a resourceVersion older than the change (the
resourceVersions of one group mean nothing in the other). Then it acknowledges: data["applied.<its Pod's name>"] = the
mode, a merge patch with its own credentials, which the flip waits for from every Pod before it goes on.

Until the ConfigMap is read, the mode is unknown: /readyz answers 503 and every API request 503 (a sidecar never
guesses). A sidecar that knows its mode keeps it through an API server outage and when the ConfigMap is deleted or
made invalid (logged, naming it); it restarts in the mode the ConfigMap holds, which is the cluster's record.
"""
import asyncio
import json
import random

import aiohttp

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import proxy_applied_key, proxy_mode

RETRY_SECONDS = (0.5, 5.0)  # the pause before reading again after a failure: doubling from the first to the second
WATCH_SECONDS = 290  # one watch request's timeoutSeconds (the API server ends it then; the follower watches again)


def older_than(resource_version, revision):
    """Whether a request's resourceVersion (a string, possibly empty) is older than revision (an int, 0 for none):
    only numeric versions compare (etcd revisions, as kube-apiserver gives them); "0" and "" mean any."""
    if not revision or not resource_version or not resource_version.isdigit():
        return False
    return 0 < int(resource_version) < revision


class ModeFollower(object):
    """The mode of one proxy, read from the ConfigMap namespace/name and followed by a watch (run())."""

    def __init__(self, client, namespace, name, pod_name, logger, on_change):
        self.client = client  # upstream.UpstreamClient: the proxy's own credentials read and acknowledge
        self.namespace = namespace
        self.name = name
        self.pod_name = pod_name
        self.logger = logger
        self.on_change = on_change  # on_change(old mode or None, new mode): called before the acknowledgement
        self.mode = None
        self.revision = 0  # the ConfigMap's resourceVersion when the current mode was applied
        self.problem = "not read yet"

    @property
    def described(self):
        return "ConfigMap %s/%s" % (self.namespace, self.name)

    def _path(self, query):
        return "/api/v1/namespaces/%s/configmaps?fieldSelector=metadata.name%%3D%s&%s" % (self.namespace, self.name, query)

    async def run(self):
        """Read, then watch, forever; a failure is logged and retried after a growing pause (the mode is kept)."""
        pause = RETRY_SECONDS[0]
        while True:
            try:
                resource_version = await self._list()
                pause = RETRY_SECONDS[0]
                await self._watch(resource_version)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # pylint: disable=broad-except  # an outage, a 403: logged, retried
                self.logger.warning("cannot read the proxy mode", config_map=self.described, error=str(exc)[:300],
                                    mode=self.mode, retry_seconds=round(pause, 2))
                await asyncio.sleep(pause * random.uniform(0.8, 1.2))
                pause = min(pause * 2, RETRY_SECONDS[1])

    async def _list(self):
        status, document = await self.client.own_get_json(self._path("limit=1"))
        if status != 200 or not isinstance(document, dict):
            raise RuntimeError("listing it answered HTTP %s" % status)
        items = document.get("items") or []
        await self.apply(items[0] if items else None)
        return (document.get("metadata") or {}).get("resourceVersion", "")

    async def _watch(self, resource_version):
        query = "watch=1&allowWatchBookmarks=true&timeoutSeconds=%d&resourceVersion=%s" % (WATCH_SECONDS, resource_version)
        timeout = aiohttp.ClientTimeout(total=WATCH_SECONDS + 30, sock_connect=self.client.timeout)
        async with self.client.own.get(self.client.url(self._path(query)), headers=self.client.own_request_headers(),
                                       timeout=timeout) as response:
            if response.status != 200:
                raise RuntimeError("watching it answered HTTP %s" % response.status)
            async for line in response.content:
                if not line.strip():
                    continue
                event = json.loads(line)
                kind = event.get("type")
                if kind == "ERROR":
                    return  # 410 and the like: list again
                if kind in ("ADDED", "MODIFIED"):
                    await self.apply(event.get("object"))
                elif kind == "DELETED":
                    await self.apply(None)

    async def apply(self, config_map):
        """Take the mode config_map (a dict, or None: it does not exist) names, then acknowledge it."""
        mode, problem = proxy_mode(config_map)
        if mode is None:
            if problem != self.problem:
                self.logger.warning("the proxy mode ConfigMap names no mode", config_map=self.described,
                                    problem=problem, mode_kept=self.mode)
            self.problem = problem
            return
        self.problem = None
        if mode != self.mode:
            old, self.mode = self.mode, mode
            version = ((config_map.get("metadata") or {}).get("resourceVersion") or "")
            self.revision = int(version) if version.isdigit() else 0
            self.on_change(old, mode)
            self.logger.info("proxy mode applied", config_map=self.described, mode=mode, previous=old,
                             revision=self.revision)
        if self.pod_name and (config_map.get("data") or {}).get(proxy_applied_key(self.pod_name)) != mode:
            await self._acknowledge(mode)

    async def _acknowledge(self, mode):
        body = json.dumps({"data": {proxy_applied_key(self.pod_name): mode}}).encode()
        headers = self.client.own_request_headers(content_type="application/merge-patch+json")
        path = "/api/v1/namespaces/%s/configmaps/%s" % (self.namespace, self.name)
        async with self.client.own.patch(self.client.url(path), data=body, headers=headers,
                                         timeout=aiohttp.ClientTimeout(total=self.client.timeout)) as response:
            await response.read()
            if response.status != 200:  # run() reads again after a pause, and acknowledges then
                raise RuntimeError("acknowledging mode %s answered HTTP %s" % (mode, response.status))
