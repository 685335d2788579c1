# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """The checks every API module of the collection makes before its first API call."""

    # hypershift.private_capi.checks: names, namespaces and the kubeconfig
    DOCUMENTATION = r"""
options: {}
notes:
  - Options holding a namespace, an object name or an API group are checked before any API call - a namespace must
    be a DNS-1123 label (at most 63 characters of lowercase letters, digits and C(-)), an object name or an API group
    a DNS-1123 subdomain (at most 253 characters, C(.) allowed too). An empty value is refused unless the option
    says what empty means, so an empty namespace never widens a request to every namespace, and a value such as
    C(../../api/v1/secrets) never reaches a URL. The failure names the option, the value, the rule and an example.
  - A kubeconfig that cannot be used fails the module before any API call, naming the file (or K8S_AUTH_KUBECONFIG,
    KUBECONFIG, C(~/.kube/config)) and what is wrong - it does not exist, is a directory, cannot be read, is not
    YAML, is not a kubeconfig mapping, has no current context, or lacks the context (or the context's cluster) asked
    for - and what to do. These are errors in the input, reported without a traceback.
"""

    # hypershift.private_capi.checks.namespace: for modules that work in a namespace
    NAMESPACE = r"""
options: {}
notes:
  - The namespace the module works in must exist - one GET of the Namespace comes first, and a namespace that does
    not exist fails the module naming it (a typo would otherwise read as "nothing there", every count 0). A 403 on
    that GET (an identity allowed to work in the namespace but not to get Namespaces) counts as unknown and the run
    goes on as before, so C(get) on C(namespaces) is optional in the RBAC.
"""
