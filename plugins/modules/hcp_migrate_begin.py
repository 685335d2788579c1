#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: hcp_migrate_begin
short_description: Read a HostedCluster's migration state, review the rights, wait until steady and take the lock
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - The start of one HostedCluster's migration (step 1) in one module run, each part as its own module does it and
    each decided from the answers before it by the rule the migrate role's record follows (C(fleet/record.py)
    C(decide_migration), also behind the filter C(fleet_outcome)).
  - B(found) - the state, the lease and what a run holding O(holder) should do with the HostedCluster, as
    M(hypershift.private_capi.migration_state) with O(hypershift.private_capi.migration_state#module:state=query) and
    O(hypershift.private_capi.migration_state#module:direction=migrate) reads them. An invalid state stops here.
  - B(access) - with O(access_review) and a HostedCluster to migrate, the identity's rights for it, as
    M(hypershift.private_capi.capi_access_review) with
    O(hypershift.private_capi.capi_access_review#module:entry_point=migrate) reviews them (read-only). A missing
    right refuses the HostedCluster, its state left as it is.
  - B(steady) - nothing in flight in the HostedCluster, waited for up to O(steady_timeout), as
    M(hypershift.private_capi.capi_steady) waits. A cluster that stays busy is deferred (its state kept) unless
    O(allow_unsteady).
  - B(legacy) - a failed HostedCluster to be retried (O(retry_failed)) goes back to legacy first, as
    M(hypershift.private_capi.migration_state) moves it with
    O(hypershift.private_capi.migration_state#module:force=true).
  - B(lock) - legacy -> in-progress (or the lock renewed or resumed) held by O(holder), as
    M(hypershift.private_capi.migration_state) takes it. A lock that cannot be taken is an answer, not a failure -
    C(lock.msg) says why, C(lock.refused) whether another run holds it.
  - Each part's answer is returned as its module returns it (RV(found), RV(access), RV(steady), RV(legacy),
    RV(lock)); a part not run is C({}). It replaces four module processes - each costs a Python start and a client
    import (0.5-0.6 CPU-seconds on two cores) per HostedCluster of a fleet run.
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.write
  - hypershift.private_capi.hostedcluster
options:
  hcp_namespace:
    # a module of this release: no 1.0.0 name to keep
    aliases: []
  holder:
    description:
      - Who takes the lock (the run id); judged as M(hypershift.private_capi.migration_state) judges O(holder).
    type: str
    required: true
  takeover:
    description:
      - Take the lock from another holder whose lease has not expired (to resume a run that died).
    type: bool
    default: false
  retry_failed:
    description:
      - A failed HostedCluster is moved back to legacy and migrated again, instead of skipped.
    type: bool
    default: false
  lease_seconds:
    description:
      - How long the lock's lease lasts without renewal, in seconds.
    type: int
    default: 900
  access_review:
    description:
      - Review the identity's rights for this HostedCluster before the lock.
    type: bool
    default: true
  operator_namespace:
    description:
      - The HyperShift operator's namespace, for the access review.
    type: str
    default: hypershift
  allow_unsteady:
    description:
      - Take the lock although the HostedCluster is not steady (its deletions in flight are carried to the copies).
    type: bool
    default: false
  steady_timeout:
    description:
      - Seconds to wait until nothing is in flight (0 - judge once).
    type: int
    default: 600
  steady_poll_seconds:
    description:
      - Seconds between two judgements while waiting.
    type: int
    default: 5
attributes:
  check_mode:
    details: The reads and the access review run as usual; the steadiness is judged once, not waited for; the moves
      (legacy, the lock) are sent as a server-side dry run (C(dryRun=All)).
  diff_mode:
    details: The HostedCluster's annotations and labels around the last move the run made (the lock; the move to legacy
      when no lock followed it).
notes:
  - The RBAC of M(hypershift.private_capi.migration_state), M(hypershift.private_capi.capi_access_review) and
    M(hypershift.private_capi.capi_steady) together (the C(migrate) entry point's rules).
seealso:
  - module: hypershift.private_capi.migration_state
  - module: hypershift.private_capi.capi_access_review
  - module: hypershift.private_capi.capi_steady
  - module: hypershift.private_capi.hcp_quiesce
"""

EXAMPLES = r"""
- name: Step 1 - state, rights, steadiness, lock
  hypershift.private_capi.hcp_migrate_begin:
    hostedcluster_name: prod-01
    hostedcluster_namespace: clusters
    holder: "{{ run_id }}"
  register: begin

- name: Go on only with the lock
  ansible.builtin.debug:
    msg: "locked: {{ begin.lock.state | default('no lock') }}"
"""

RETURN = r"""
found:
  description: The answer of M(hypershift.private_capi.migration_state) with O(hypershift.private_capi.migration_state#module:state=query)
    and O(hypershift.private_capi.migration_state#module:direction=migrate) (C(hostedclusters), C(read_at) ...).
  returned: success
  type: dict
access:
  description: The answer of M(hypershift.private_capi.capi_access_review) (C(allowed), C(denied), C(message) ...), or
    C({}) when not reviewed.
  returned: success
  type: dict
steady:
  description: The answer of M(hypershift.private_capi.capi_steady) (C(steady), C(reasons), C(waited_seconds) ...),
    or C({}) when not judged.
  returned: success
  type: dict
legacy:
  description: The answer of the move failed -> legacy, or C({}) when not made.
  returned: success
  type: dict
lock:
  description: The answer of the move to in-progress (C(state), C(holder), C(renewed) ...); when it could not be taken,
    C(msg) and, when refused by the state machine, C(refused) (C(status) C(skipped) - another run holds it); C({})
    when not tried.
  returned: success
  type: dict
hcp_namespace:
  description: The HCP namespace the parts worked in (O(hcp_namespace), else derived from the HostedCluster).
  returned: success
  type: str
  sample: clusters-prod-01
"""

import copy

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.begin import BeginService
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import NAMESPACE
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.modules import HOSTEDCLUSTER_NAME_RULES, hostedcluster_options

NAME_RULES = HOSTEDCLUSTER_NAME_RULES + [("operator_namespace", NAMESPACE)]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(hostedcluster_options())
    spec.update(
        holder=dict(type="str", required=True),
        takeover=dict(type="bool", default=False),
        retry_failed=dict(type="bool", default=False),
        lease_seconds=dict(type="int", default=900),
        access_review=dict(type="bool", default=True),
        operator_namespace=dict(type="str", default="hypershift"),
        allow_unsteady=dict(type="bool", default=False),
        steady_timeout=dict(type="int", default=600),
        steady_poll_seconds=dict(type="int", default=5),
    )
    return copy.deepcopy(spec)


def main():
    run_module(argspec, NAME_RULES, BeginService)


if __name__ == "__main__":
    main()
