# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.doc_fragments.k8s_auth_options import (
    ModuleDocFragment as AuthOptions,
)

# kubernetes.core's authentication options (k8s_auth_options.py, GPL-3.0-or-later, kept in a file of its own) end
# with their notes list: the sections below continue that list and then add the requirements.
REQUIREMENTS = r"""
requirements:
  - python >= 3.9
  - kubernetes >= 24.2.0
  - PyYAML >= 3.11
"""

CHECKS_NOTES = r"""
  - Options holding a namespace, an object name or an API group are checked before any API call - a namespace must
    be a DNS-1123 label (at most 63 characters of lowercase letters, digits and C(-)), an object name or an API group
    a DNS-1123 subdomain (at most 253 characters, C(.) allowed too). An empty value is refused unless the option
    says what empty means, so an empty namespace never widens a request to every namespace, and a value such as
    C(../../api/v1/secrets) never reaches a URL. The failure names the option, the value, the rule and an example.
  - A kubeconfig that cannot be used fails the module before any API call, naming the file (or K8S_AUTH_KUBECONFIG,
    KUBECONFIG, C(~/.kube/config)) and what is wrong - it does not exist, is a directory, cannot be read, is not
    YAML, is not a kubeconfig mapping, has no current context, or lacks the context (or the context's cluster) asked
    for - and what to do. These are errors in the input, reported without a traceback."""

NAMESPACE_NOTE = r"""
  - The namespace the module works in must exist - one GET of the Namespace comes first, and a namespace that does
    not exist fails the module naming it (a typo would otherwise read as "nothing there", every count 0). A 403 on
    that GET (an identity allowed to work in the namespace but not to get Namespaces) counts as unknown and the run
    goes on as before, so C(get) on C(namespaces) is optional in the RBAC."""


class ModuleDocFragment(object):
    """What every module that talks to the API server documents alike, in one fragment: the authentication options,
    the requirements on the managed node and the checks made before the first API call (its sections add the checks,
    then the namespace check, to the options and requirements)."""

    # hypershift.private_capi.api_module: the authentication options and the requirements
    DOCUMENTATION = AuthOptions.DOCUMENTATION.rstrip() + REQUIREMENTS

    # hypershift.private_capi.api_module.checks: and the checks of names, namespaces and the kubeconfig
    CHECKS = AuthOptions.DOCUMENTATION.rstrip() + CHECKS_NOTES + REQUIREMENTS

    # hypershift.private_capi.api_module.namespace: and, for modules that work in a namespace, its existence
    NAMESPACE = AuthOptions.DOCUMENTATION.rstrip() + CHECKS_NOTES + NAMESPACE_NOTE + REQUIREMENTS

    # hypershift.private_capi.api_module.cryptography: beside one of the above, for modules that make certificates
    CRYPTOGRAPHY = r"""
options: {}
requirements:
  - cryptography >= 42.0
"""
