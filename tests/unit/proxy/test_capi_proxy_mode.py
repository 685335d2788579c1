"""The proxy's mode, the pure parts: the ConfigMap's answer (contract.proxy_mode), its reference, the acknowledgement
key, which watches a change expires, and the relay's route (nothing translated)."""
import pytest

from capi_proxy.proxy import routing
from capi_proxy.proxy.mode import older_than
from capi_proxy.proxy.program import config_map_reference
from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    PROXY_PASSTHROUGH,
    PROXY_TRANSLATE,
    proxy_applied_key,
    proxy_mode,
)


@pytest.mark.parametrize("config_map, mode", [
    ({"data": {"mode": "translate"}}, PROXY_TRANSLATE),
    ({"data": {"mode": "passthrough", "applied.pod-a": "translate"}}, PROXY_PASSTHROUGH),
])
def test_a_config_map_names_its_mode(config_map, mode):
    assert proxy_mode(config_map) == (mode, None)


@pytest.mark.parametrize("config_map, problem", [
    (None, "the ConfigMap does not exist"),
    ({}, "its data.mode is None, not one of passthrough, translate"),
    ({"data": None}, "its data.mode is None, not one of passthrough, translate"),
    ({"data": {"mode": "Translate"}}, "its data.mode is 'Translate', not one of passthrough, translate"),
    ({"data": {"mode": ""}}, "its data.mode is '', not one of passthrough, translate"),
])
def test_a_config_map_without_a_valid_mode_names_none_and_says_why(config_map, problem):
    assert proxy_mode(config_map) == (None, problem)


def test_the_acknowledgement_key_is_a_valid_config_map_key_per_pod():
    assert proxy_applied_key("cluster-api-7c9d8f6b5-x2x7k") == "applied.cluster-api-7c9d8f6b5-x2x7k"


@pytest.mark.parametrize("value, expected", [("hcp-a/capi-proxy-mode", ("hcp-a", "capi-proxy-mode"))])
def test_the_config_map_reference(value, expected):
    assert config_map_reference(value) == expected


@pytest.mark.parametrize("value", ["", "capi-proxy-mode", "/name", "ns/", "ns/a/b"])
def test_a_malformed_config_map_reference_is_refused_naming_the_form(value):
    with pytest.raises(ValueError, match="expected NAMESPACE/NAME of the mode ConfigMap"):
        config_map_reference(value)


@pytest.mark.parametrize("resource_version, revision, older", [
    ("100", 200, True), ("199", 200, True), ("200", 200, False), ("201", 200, False),
    ("", 200, False), ("0", 200, False), ("abc", 200, False), ("100", 0, False),
])
def test_only_a_numeric_version_before_the_change_is_older(resource_version, revision, older):
    assert older_than(resource_version, revision) is older


def test_the_relay_route_translates_nothing():
    route = routing.relay("GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines", {"watch": "1"})
    assert route.mode == "relay" and not route.translated
    assert route.upstream_path == "/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines"
    assert route.target.watch and route.target.group == "cluster.x-k8s.io"


def test_the_relay_checks_the_path_as_every_route_does():
    with pytest.raises(Exception, match="path"):
        routing.relay("GET", "/apis/../api/v1/secrets", {})
