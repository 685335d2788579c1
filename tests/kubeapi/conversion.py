"""Custom resource version conversion: strategy None (apiVersion rewrite) and Webhook (ConversionReview v1)."""
import base64
import json
import logging
import ssl
import uuid

import aiohttp

from . import errors

LOG = logging.getLogger("kubeapi.conversion")


def _gvk_text(api_version, kind):
    group, _separator, version = api_version.rpartition("/")
    return "%s/%s, Kind=%s" % (group, version, kind) if group else "/%s, Kind=%s" % (version, kind)


class Converter:
    def __init__(self, timeout=10.0):
        self.timeout = timeout
        self._session = None
        self._logged_service = set()
        self.webhook_calls = 0

    async def close(self):
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _strategy(self, rtype):
        conversion = rtype.conversion or {}
        if conversion.get("strategy") != "Webhook":
            return None
        client_config = (conversion.get("webhook") or {}).get("clientConfig") or conversion.get(
            "webhookClientConfig") or {}
        if client_config.get("url"):
            return client_config
        if client_config.get("service") and rtype.crd_name not in self._logged_service:
            self._logged_service.add(rtype.crd_name)
            LOG.warning("CRD %s: conversion webhook service %s/%s is not reachable from this server; "
                        "converting with strategy None", rtype.crd_name,
                        client_config["service"].get("namespace"), client_config["service"].get("name"))
        return None

    async def convert(self, rtype, objects, to_version):
        """Objects (dicts, not mutated) converted to group/to_version; the same dicts when already there."""
        desired = rtype.api_version(to_version)
        pending = [i for i, obj in enumerate(objects) if obj.get("apiVersion") != desired]
        if not pending:
            return list(objects)
        client_config = self._strategy(rtype)
        result = list(objects)
        if client_config is None:
            for index in pending:
                copy = dict(objects[index])
                copy["apiVersion"] = desired
                result[index] = copy
            return result
        converted = await self._webhook(rtype, client_config, [objects[i] for i in pending], desired)
        for index, obj in zip(pending, converted):
            result[index] = obj
        return result

    async def _webhook(self, rtype, client_config, objects, desired):
        first = objects[0]
        gvk = _gvk_text(first.get("apiVersion", ""), first.get("kind", rtype.kind))
        request_uid = str(uuid.uuid4())
        review = {"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1",
                  "request": {"uid": request_uid, "desiredAPIVersion": desired, "objects": objects}}
        ssl_context = ssl.create_default_context()
        if client_config.get("caBundle"):
            ssl_context = ssl.create_default_context(cadata=base64.b64decode(client_config["caBundle"]).decode())
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout))
        self.webhook_calls += 1
        try:
            async with self._session.post(client_config["url"], data=json.dumps(review),
                                          headers={"Content-Type": "application/json",
                                                   "Accept": "application/json"},
                                          ssl=ssl_context if client_config["url"].startswith("https") else None
                                          ) as response:
                text = await response.text()
                if response.status != 200:
                    raise ValueError("the server responded with status %d: %s" % (response.status, text[:200]))
                answer = json.loads(text)
        except errors.ApiError:
            raise
        except Exception as exc:  # connection refused, TLS, timeout, bad JSON: the real error shape
            raise errors.internal("conversion webhook for %s failed: %s" % (gvk, _describe(exc, client_config)))
        response_body = answer.get("response") or {}
        if response_body.get("uid") != request_uid:
            raise errors.internal('conversion webhook for %s failed: expected response.uid="%s", got "%s"'
                                  % (gvk, request_uid, response_body.get("uid")))
        result = response_body.get("result") or {}
        if result.get("status") != "Success":
            raise errors.internal("conversion webhook for %s failed: %s" % (gvk, result.get("message", "")))
        converted = response_body.get("convertedObjects") or []
        if len(converted) != len(objects):
            raise errors.internal("conversion webhook for %s failed: returned %d objects, expected %d"
                                  % (gvk, len(converted), len(objects)))
        for original, obj in zip(objects, converted):
            if obj.get("apiVersion") != desired:
                raise errors.internal("conversion webhook for %s failed: invalid apiVersion %r, expected %r"
                                      % (gvk, obj.get("apiVersion"), desired))
            meta, original_meta = obj.get("metadata") or {}, original.get("metadata") or {}
            for key in ("name", "namespace", "uid"):
                if meta.get(key) != original_meta.get(key):
                    raise errors.internal("conversion webhook for %s failed: must not change metadata.%s"
                                          % (gvk, key))
        return converted


def _describe(exc, client_config):
    url = client_config.get("url")
    if isinstance(exc, aiohttp.ClientConnectorError):
        return 'Post "%s": dial tcp: connect: connection refused' % url
    if isinstance(exc, (TimeoutError,)) or exc.__class__.__name__ in ("ServerTimeoutError", "TimeoutError"):
        return 'Post "%s": context deadline exceeded' % url
    return 'Post "%s": %s' % (url, exc)
