"""Every filter's doc (plugins/filter/<name>.yml) documents exactly the arguments of the function that implements it.

The function is the one FilterModule.filters() maps the name to (plugins/filter/*.py). Its first parameter is the
piped value (_input); the others are the documented options, in the order of positional, each required exactly when it
has no default, with the default and a type that fits it.
"""
import importlib
import inspect
import os

import pytest
import yaml

from ansible_collections.hypershift.private_capi.plugins.filter import capi

FILTER_DIR = os.path.dirname(os.path.abspath(capi.__file__))
PACKAGE = "ansible_collections.hypershift.private_capi.plugins.filter"
TYPES = ((bool, "bool"), (int, "int"), (str, "str"), (list, "list"), (tuple, "list"), (dict, "dict"))


def _filters():
    found = {}
    for file_name in sorted(os.listdir(FILTER_DIR)):
        if file_name.endswith(".py") and not file_name.startswith("_"):
            module = importlib.import_module("%s.%s" % (PACKAGE, file_name[:-3]))
            for name, function in module.FilterModule().filters().items():
                assert name not in found, "filter %s is defined twice" % name
                found[name] = function
    return found


FILTERS = _filters()
DOCS = sorted(file_name[:-4] for file_name in os.listdir(FILTER_DIR) if file_name.endswith(".yml"))


def _doc(name):
    with open(os.path.join(FILTER_DIR, name + ".yml")) as handle:
        return yaml.safe_load(handle)


def _normalised(value):
    return list(value) if isinstance(value, tuple) else value


def test_every_filter_has_its_own_doc():
    assert sorted(FILTERS) == DOCS


@pytest.mark.parametrize("name", DOCS)
def test_doc_documents_the_functions_arguments(name):
    doc = _doc(name)
    documentation = doc["DOCUMENTATION"]
    assert documentation["name"] == name
    parameters = list(inspect.signature(FILTERS[name]).parameters.values())
    options = documentation["options"]
    assert "_input" in options and options["_input"].get("required") is True, "%s: _input must be required" % name
    assert sorted(set(options) - {"_input"}) == sorted(parameter.name for parameter in parameters[1:]), (
        "%s: documented options %s, the function takes %s" % (
            name, sorted(set(options) - {"_input"}), [parameter.name for parameter in parameters[1:]]))
    positional = [part.strip() for part in str(documentation.get("positional", "")).split(",") if part.strip()]
    assert positional == ["_input"] + [parameter.name for parameter in parameters[1:]], (
        "%s: positional must be _input and the function's arguments in their order" % name)
    for parameter in parameters[1:]:
        option = options[parameter.name]
        where = "%s: option %s" % (name, parameter.name)
        if parameter.default is inspect.Parameter.empty:
            assert option.get("required") is True, "%s has no default in the function, so it is required" % where
            assert "default" not in option, where
            continue
        assert not option.get("required"), "%s has a default in the function, so it is not required" % where
        if parameter.default is None:
            assert option.get("default") is None, "%s defaults to None, so the doc gives no default" % where
            continue
        assert option.get("default") == _normalised(parameter.default), where
        expected_type = next(doc_type for python_type, doc_type in TYPES if isinstance(parameter.default, python_type))
        assert option.get("type") == expected_type, where


@pytest.mark.parametrize("name", DOCS)
def test_examples_use_the_filter_and_return_is_documented(name):
    doc = _doc(name)
    assert "hypershift.private_capi.%s" % name in doc["EXAMPLES"]
    assert isinstance(yaml.safe_load(doc["EXAMPLES"]), list)
    assert list(doc["RETURN"]) == ["_value"]
    assert doc["RETURN"]["_value"].get("description") and doc["RETURN"]["_value"].get("type")
