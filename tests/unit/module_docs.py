"""A module's argument spec and its DOCUMENTATION options must agree (names, types, defaults, choices)."""
import yaml


def assert_argspec_matches_documentation(module):
    documented = yaml.safe_load(module.DOCUMENTATION)["options"]
    spec = module.argspec()
    own = {name: option for name, option in spec.items() if name in documented}
    assert set(own) == set(documented)
    for name, option in own.items():
        assert option.get("type", "str") == documented[name].get("type", "str"), name
        assert option.get("default") == documented[name].get("default"), name
        assert option.get("choices") == documented[name].get("choices"), name
    assert "kubeconfig" in spec and "api_key" in spec, "kubernetes.core's auth options are missing from the spec"
