# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Options several API modules share, documented once (their specs: module_utils/k8s/args.py)."""

    DOCUMENTATION = r"""
options: {}
"""

    # hypershift.private_capi.options.extra_groups: args.extra_groups_option() (default nothing extra)
    EXTRA_GROUPS = r"""
options:
  extra_groups:
    description:
      - "Extra standard -> private group pairs for providers outside the C(*.cluster.x-k8s.io) pattern, for example
        C({capi-provider.agent-install.openshift.io: capi-provider.agent-install.hypershift.openshift.io}) for the
        Agent provider (see the examples). Their resources are then handled like those of the CAPI groups."
      - A private group may not fall inside C(*.cluster.hypershift.openshift.io) (it would collide with the pattern).
    type: dict
    default: {}
"""

    # hypershift.private_capi.options.parallelism: args.parallelism_option() (default 8)
    PARALLELISM = r"""
options:
  parallelism:
    description:
      - At most this many requests in flight (and keep-alive connections) at a time; 1 or more.
    type: int
    default: 8
"""

    # hypershift.private_capi.options.deployments: hcp/quiesce.py deployments_options() - the CAPI-dependent Deployments
    # that hcp_migrate_window and hcp_migrate_rollback stop and start, and how long each waits
    DEPLOYMENTS = r"""
options:
  deployments:
    description:
      - Names of the CAPI-dependent Deployments of the namespace; those that exist are stopped and started, the
        others ignored.
    type: list
    elements: str
    default: []
  scale_down_timeout:
    description:
      - Seconds to wait for the pods of the Deployments to go; 0 does not wait.
    type: int
    default: 300
  available_timeout:
    description:
      - Seconds to wait for the Deployments to be available again; 0 does not wait (and no window is measured).
    type: int
    default: 600
"""

    # hypershift.private_capi.options.holder: the optional lease holder of hcp_quiesce and hcp_migrate_window
    HOLDER = r"""
options:
  holder:
    description:
      - The run id that holds the HostedCluster's migration lock (the migrate role passes its run id). When set, this
        module process takes a lease token of its own on the HostedCluster before its first write (annotation
        C(hypershift.openshift.io/capi-migration-lease-token)), renews it every few seconds and checks it before its
        writes. Once another process has taken the token (the next module of a resumed run, while this one was left
        running by a killed playbook) or another run the lock, this process's next write is refused and the module
        fails, writing nothing more.
      - A token another process renewed less than 30 seconds ago is taken from it with a warning, and its writes in
        flight are waited for (3 seconds) before the first write (RV(lease_token)).
      - Empty writes without a token (the module used on its own). Nothing is taken in check mode.
    type: str
    default: ""
"""
