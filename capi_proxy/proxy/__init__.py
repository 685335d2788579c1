"""The translating API proxy, `capi-proxy` (the sidecar): program.py its command line and start, relay.py the aiohttp
handler and everything it does over the network, routing.py/translation.py where a request goes and what its body
becomes. Nothing here is imported by the shim or the exporter (capi_proxy/__init__.py)."""
