"""capi_proxy: the translating Kubernetes API proxy and the conversion webhook shim.

Clients keep speaking cluster.x-k8s.io while the API server holds the private
cluster.hypershift.openshift.io types. All translation and conversion logic lives in the
collection's module_utils (translate.groups, translate.versions); this package only moves bytes.
`python -m capi_proxy --help` (installed: `capi-proxy --help`) and docs/proxy.md describe the command line.

Three programs, one subpackage each (since 2026-12-02): proxy/ (the sidecar: `capi-proxy`), shim/ (the conversion
webhook: `capi-proxy shim`) and exporter/ (the fleet exporter: `capi-proxy exporter`); what two of them share sits
here (core, bodies, nesting, upstream, discovery, serving, metrics, logs, kubeconfig, cli, errors). __main__ imports
a program's subpackage only when it runs that program.
"""
# The installable package's version (pyproject.toml reads it from here): the collection's, like the image tag (make
# image reads galaxy.yml); tests/unit/proxy/test_packaging.py fails when it differs from galaxy.yml's.
__version__ = "1.0.0"

try:  # the translation core lives in the collection: fail at once, saying how to make it importable
    import ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups  # noqa: F401 pylint: disable=unused-import
except ImportError as exc:
    raise ImportError(
        "capi_proxy needs the hypershift.private_capi collection's translation core: install the proxy as a package "
        "(pip install <collection root or extracted collection tarball>, which brings it along, as the Containerfile "
        "does) or, in a checkout, run `make venv`, which links the collection into .collections and puts that on the "
        "venv's path"
    ) from exc
