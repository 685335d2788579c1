# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the modules share at their edge, written once: the options that name a HostedCluster and its HCP namespace
(one name per thing in every module, documented by the doc fragment hypershift.private_capi.hostedcluster), the old
names kept as deprecated aliases, and the HCP namespace derived from the HostedCluster by the one rule
(hypershift.hcp_namespace).

A module's argspec() takes ``hostedcluster_options(renamed_from={"hcp_namespace": "namespace"})``; its main() is
k8s/runner.py's run_module, which fills an empty O(hcp_namespace) where the service derives it
(hypershift.HCP_NAMESPACE_DERIVED). The services read the options by these names; ansible-core puts a value given
under an old name (an alias) there and warns. action_only() is main() of the modules that are action plugins.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import NAMESPACE, OBJECT_NAME

COLLECTION_NAME = "hypershift.private_capi"
# galaxy.yml's 1.0.0 is released (changelogs/changelog.yaml): the old names ship deprecated in the next minor
# release, 1.1.0, and go in the next major one - a removal is a breaking change, and ansible-test's validate-modules
# refuses a minor release there (removal-version-must-be-major)
OLD_NAMES_REMOVED_IN = "2.0.0"

HOSTEDCLUSTER_NAME = dict(type="str", required=True)
HOSTEDCLUSTER_NAMESPACE = dict(type="str", default="clusters")
# empty: derived from the HostedCluster (hypershift.HCP_NAMESPACE_DERIVED, filled by k8s/runner.py)
HCP_NAMESPACE = dict(type="str", default="")
# the modules that work in an HCP namespace without a HostedCluster option
HCP_NAMESPACE_REQUIRED = dict(type="str", required=True)
# O(hcp_namespace)'s name rule (k8s/names.py) where it may be empty
HCP_NAMESPACE_RULE = NAMESPACE.or_empty("derived from hostedcluster_namespace and hostedcluster_name")
# the name rules (run_module's NAME_RULES) of hostedcluster_options() where the HostedCluster is required
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


def action_only(argspec, module_name):
    """main() of a module that is an action plugin (it runs on the controller): its argument spec, for ansible-doc and
    validation, and a failure saying so when it is run as a module on a host."""
    AnsibleModule(argument_spec=argspec(), supports_check_mode=True).fail_json(
        msg="%s.%s runs as an action plugin on the controller; call it as a task (it cannot run as a module on a host)"
            % (COLLECTION_NAME, module_name))
