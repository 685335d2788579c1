"""The conversion_shim role's declared variables and the values it shares with private_crds and private_crd_render:
one place for the shim's Service, so the private CRDs cannot name another one."""
import os

import pytest
import yaml

from ansible_collections.hypershift.private_capi.plugins.modules import private_crd_render
from testenv import REPO_ROOT


def _yaml(*parts):
    with open(os.path.join(REPO_ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def _specs(role):
    return _yaml("roles", role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


@pytest.mark.parametrize("role", ["conversion_shim", "private_crds"])
def test_every_variable_is_declared_with_type_description_and_its_default(role):
    defaults = _yaml("roles", role, "defaults", "main.yml")
    specs = _specs(role)
    assert set(defaults) == set(specs)
    for name, spec in specs.items():
        assert spec.get("type") and spec.get("description"), name
        assert spec.get("default") == defaults[name], name


def test_the_image_is_pinned_to_the_collection_version_as_the_proxy_sidecar_is():
    version = _yaml("galaxy.yml")["version"]
    image = _yaml("roles", "conversion_shim", "defaults", "main.yml")["private_capi_shim_image"]
    assert image == "quay.io/hypershift/capi-proxy:%s" % version
    assert image == _yaml("roles", "api_proxy", "defaults", "main.yml")["private_capi_proxy_image"]


def test_the_shim_service_is_what_private_crds_and_the_render_module_name_by_default():
    shim = _yaml("roles", "conversion_shim", "defaults", "main.yml")
    crds = _yaml("roles", "private_crds", "defaults", "main.yml")
    module = private_crd_render.argspec()
    assert crds["private_capi_crds_conversion_shim"] is True
    # empty in private_crds: the deployed shim's values, or (shim off) the module's defaults, which are the shim's
    assert crds["private_capi_crds_conversion_webhook_service_name"] == ""
    assert crds["private_capi_crds_conversion_webhook_service_namespace"] == ""
    assert module["conversion_webhook_service_name"]["default"] == shim["private_capi_shim_service_name"]
    assert module["conversion_webhook_service_namespace"]["default"] == shim["private_capi_shim_namespace"]
    assert module["conversion_webhook_service_port"]["default"] == shim["private_capi_shim_service_port"] \
        == crds["private_capi_crds_conversion_webhook_service_port"]
    assert module["conversion_webhook_service_path"]["default"] == "/convert" \
        == crds["private_capi_crds_conversion_webhook_service_path"]
    assert _yaml("roles", "conversion_shim", "vars", "main.yml")["conversion_shim_path"] == "/convert"
    assert shim["private_capi_shim_extra_groups"] == crds["private_capi_crds_extra_groups"]


def test_the_shim_serves_convert_and_both_probes_on_its_one_https_listener():
    from capi_proxy.logs import JsonLogger  # pylint: disable=import-outside-toplevel
    from capi_proxy.shim import Shim, shim_parser  # pylint: disable=import-outside-toplevel
    args = shim_parser().parse_args(["--listen=0.0.0.0:9443", "--tls-cert=/tls/tls.crt", "--tls-key=/tls/tls.key"])
    application = Shim(args, JsonLogger("error")).application()
    routes = {(route.method, route.resource.canonical) for route in application.router.routes()}
    assert {("POST", "/convert"), ("GET", "/healthz"), ("GET", "/readyz")} <= routes
