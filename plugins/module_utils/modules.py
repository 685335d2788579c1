# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the modules share at their edge, written once: the options that name a HostedCluster and its HCP namespace
(one name per thing in every module, documented by the doc fragment hypershift.private_capi.hostedcluster), the old
names kept as deprecated aliases, and the HCP namespace derived from the HostedCluster by the one rule
(hypershift.hcp_namespace).

A module's argspec() takes ``hostedcluster_options(renamed_from={"hcp_namespace": "namespace"})`` and its main() is
``hostedcluster_main(argspec, NAME_RULES, run_module)``, which runs the service through hostedcluster_run: that fills
an empty O(hcp_namespace). The services read the options by these names; ansible-core puts a value given under an old
name (an alias) there and warns.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import NAMESPACE, OBJECT_NAME
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import module_main

COLLECTION_NAME = "hypershift.private_capi"
# galaxy.yml's 1.0.0 is released (changelogs/changelog.yaml): the old names ship deprecated in the next minor
# release, 1.1.0, and go in the next major one - a removal is a breaking change, and ansible-test's validate-modules
# refuses a minor release there (removal-version-must-be-major)
OLD_NAMES_REMOVED_IN = "2.0.0"

HOSTEDCLUSTER_NAME = dict(type="str", required=True)
HOSTEDCLUSTER_NAMESPACE = dict(type="str", default="clusters")
# empty: derived from the HostedCluster (fill_hcp_namespace)
HCP_NAMESPACE = dict(type="str", default="")
# the modules that work in an HCP namespace without a HostedCluster option
HCP_NAMESPACE_REQUIRED = dict(type="str", required=True)
# O(hcp_namespace)'s name rule (k8s/names.py) where it may be empty
HCP_NAMESPACE_RULE = NAMESPACE.or_empty("derived from hostedcluster_namespace and hostedcluster_name")
# the name rules (module_main's NAME_RULES) of hostedcluster_options() where the HostedCluster is required
HOSTEDCLUSTER_NAME_RULES = [("hcp_namespace", HCP_NAMESPACE_RULE), ("hostedcluster_name", OBJECT_NAME),
                            ("hostedcluster_namespace", NAMESPACE)]


def option(spec, renamed_from=None, **changes):
    """spec with changes (a change to None drops the key: default=None, no default), and the module's old name for
    the option (renamed_from) as a deprecated alias: it still works, and warns that it goes in OLD_NAMES_REMOVED_IN."""
    spec = dict((key, value) for key, value in dict(spec, **changes).items() if value is not None)
    if renamed_from:
        spec["aliases"] = [renamed_from]
        spec["deprecated_aliases"] = [dict(name=renamed_from, version=OLD_NAMES_REMOVED_IN,
                                           collection_name=COLLECTION_NAME)]
    return spec


def hostedcluster_options(renamed_from=None, hcp_namespace=True, **changes):
    """{option: spec} of the options that name a HostedCluster - hostedcluster_name, hostedcluster_namespace and, with
    hcp_namespace, its HCP namespace - for argspec()'s spec.update.

    renamed_from: {option: the module's 1.0.0 name for it}; changes: {option: {key: value}}, this module's own (an
    optional hostedcluster_name: hostedcluster_name=dict(required=False, default=""))."""
    renamed_from = renamed_from or {}
    bases = dict(hostedcluster_name=HOSTEDCLUSTER_NAME, hostedcluster_namespace=HOSTEDCLUSTER_NAMESPACE)
    if hcp_namespace:
        bases["hcp_namespace"] = HCP_NAMESPACE
    return dict((name, option(base, renamed_from.get(name), **changes.get(name, {}))) for name, base in bases.items())


def fill_hcp_namespace(module):
    """An empty O(hcp_namespace) becomes the HostedCluster's (hypershift.hcp_namespace); without a HostedCluster
    either, the module fails naming both options."""
    params = module.params
    if params["hcp_namespace"]:
        return
    if not params.get("hostedcluster_name"):
        module.fail_json(msg="hcp_namespace is empty and so is hostedcluster_name: give the HCP namespace "
                             "(hcp_namespace) or the HostedCluster it belongs to (hostedcluster_name and "
                             "hostedcluster_namespace)", changed=False)
    params["hcp_namespace"] = hypershift.hcp_namespace(params["hostedcluster_namespace"], params["hostedcluster_name"])


def hostedcluster_run(run_module, derive_hcp_namespace=True):
    """module_main's run for a module with the HostedCluster options: an empty O(hcp_namespace) filled in
    (fill_hcp_namespace, where the module has one), then run_module(module)."""
    def run(module):
        if derive_hcp_namespace and "hcp_namespace" in module.params:
            fill_hcp_namespace(module)
        run_module(module)
    return run


def hostedcluster_main(argspec, name_rules, run_module, derive_hcp_namespace=True, **constraints):
    """main() of a module with the HostedCluster options: module_main (k8s/runner.py) with the service run through
    hostedcluster_run."""
    module_main(argspec, name_rules, hostedcluster_run(run_module, derive_hcp_namespace), **constraints)
