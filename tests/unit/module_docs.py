"""A module's argument spec and its DOCUMENTATION options must agree (names, types, defaults, choices, aliases),
the options of the collection's own doc fragments merged in as ansible-core merges them (the module's keys win)."""
import importlib

import yaml

COLLECTION = "hypershift.private_capi."
FRAGMENTS = "ansible_collections.hypershift.private_capi.plugins.doc_fragments."


def fragment_doc(slug):
    """The YAML of one fragment of this collection ('hypershift.private_capi.options.holder')."""
    name, _, variable = slug[len(COLLECTION):].partition(".")
    fragment = importlib.import_module(FRAGMENTS + name).ModuleDocFragment
    return yaml.safe_load(getattr(fragment, (variable or "documentation").upper()))


def documented_options(module):
    """The module's options as ansible-doc shows them: its fragments' options, each updated with the module's own."""
    doc = yaml.safe_load(module.DOCUMENTATION)
    options = {}
    for slug in doc.get("extends_documentation_fragment", []):
        if slug.startswith(COLLECTION):
            options.update(fragment_doc(slug).get("options") or {})
    for name, own in doc["options"].items():
        options[name] = dict(options.get(name, {}), **own)
    return options


def assert_argspec_matches_documentation(module):
    documented = documented_options(module)
    spec = module.argspec()
    assert set(spec) == set(documented), "undocumented: %s, not in the spec: %s" % (
        sorted(set(spec) - set(documented)), sorted(set(documented) - set(spec)))
    for name, option in spec.items():
        assert option.get("type", "str") == documented[name].get("type", "str"), name
        assert option.get("default") == documented[name].get("default"), name
        assert option.get("choices") == documented[name].get("choices"), name
        assert bool(option.get("required")) == bool(documented[name].get("required")), name
        assert sorted(option.get("aliases", [])) == sorted(documented[name].get("aliases", [])), name
    assert "kubeconfig" in spec and "api_key" in spec, "kubernetes.core's auth options are missing from the spec"
