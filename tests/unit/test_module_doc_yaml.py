"""Every module's DOCUMENTATION, EXAMPLES and RETURN are valid YAML (a ': ' in a plain scalar is enough to break one,
and ansible-doc, ansible-test and galaxy-importer then reject the whole module)."""
import importlib
import os

import pytest
import yaml

from testenv import REPO_ROOT

MODULES = sorted(name[:-3] for name in os.listdir(os.path.join(REPO_ROOT, "plugins", "modules"))
                 if name.endswith(".py") and not name.startswith("_"))


@pytest.mark.parametrize("module_name", MODULES)
@pytest.mark.parametrize("block", ["DOCUMENTATION", "EXAMPLES", "RETURN"])
def test_the_module_documentation_blocks_parse(module_name, block):
    module = importlib.import_module("ansible_collections.hypershift.private_capi.plugins.modules." + module_name)
    parsed = yaml.safe_load(getattr(module, block))
    assert parsed, "%s.%s is empty" % (module_name, block)
