# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters capi_owners_outside, capi_leaving, capi_verify_judge, capi_rollback_judge, capi_verify_table (docs: the .yml files beside this file)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import judge
from ansible_collections.hypershift.private_capi.plugins.module_utils.filters.args import checked_arguments
from ansible_collections.hypershift.private_capi.plugins.module_utils.move import graph


def _list_of_mappings(filter_name, argument, value, usage, allow_none=False):
    """Raise naming the filter and the argument unless value is a list of mappings (Kubernetes objects, rows)."""
    if isinstance(value, (list, tuple)):
        bad = [index for index, item in enumerate(value)
               if not isinstance(item, dict) and not (allow_none and item is None)]
        if not bad:
            return
        problem = "item %d is %s %r" % (bad[0], type(value[bad[0]]).__name__, value[bad[0]])
    else:
        problem = "got %s" % type(value).__name__
    raise AnsibleFilterError("%s: %s must be a list of mappings, %s; usage: %s" % (filter_name, argument, problem, usage))


OWNERS_USAGE = "{{ objects | hypershift.private_capi.capi_owners_outside(others) }}"
TABLE_USAGE = "{{ results | hypershift.private_capi.capi_verify_table }}"
LEAVING_USAGE = "{{ objects | hypershift.private_capi.capi_leaving }}"


@checked_arguments("capi_owners_outside", OWNERS_USAGE, AnsibleFilterError)
def capi_owners_outside(objects, others=()):
    """The ownerReferences of objects whose uid is none of objects' or others' uids, once each, sorted."""
    _list_of_mappings("capi_owners_outside", "the input (objects)", objects, OWNERS_USAGE)
    _list_of_mappings("capi_owners_outside", "others", others if others is not None else [], OWNERS_USAGE,
                      allow_none=True)  # others may hold a HostedControlPlane that was not found
    return judge.capi_owners_outside(objects, others)


@checked_arguments("capi_leaving", LEAVING_USAGE, AnsibleFilterError)
def capi_leaving(objects):
    """{uid: reason} of the objects on their way out: being deleted, or taken along by an owner that is."""
    _list_of_mappings("capi_leaving", "the input (objects)", objects, LEAVING_USAGE)
    try:
        return graph.leaving(objects)
    except (graph.OwnershipCycleError, ValueError) as error:
        raise AnsibleFilterError("capi_leaving: %s" % error)


@checked_arguments("capi_verify_judge", "{{ read | hypershift.private_capi.capi_verify_judge }}", AnsibleFilterError)
def capi_verify_judge(inputs):
    """The verify result of one HostedCluster from what was read (pure; see capi_verify_judge.yml)."""
    try:
        return judge.capi_verify_judge(inputs)
    except judge.VerifyInputError as error:
        raise AnsibleFilterError(str(error))


@checked_arguments("capi_rollback_judge", "{{ read | hypershift.private_capi.capi_rollback_judge }}", AnsibleFilterError)
def capi_rollback_judge(inputs):
    """The problems left after a rollback's copy back and scale-up, from what was read (pure; see capi_rollback_judge.yml)."""
    try:
        return judge.rollback_problems(inputs)
    except (judge.VerifyInputError, graph.OwnershipCycleError, ValueError) as error:
        raise AnsibleFilterError("capi_rollback_judge: %s" % error)


@checked_arguments("capi_verify_table", TABLE_USAGE, AnsibleFilterError)
def capi_verify_table(results):
    """Console lines: one row per HostedCluster and a total (see capi_verify_table.yml)."""
    _list_of_mappings("capi_verify_table", "the input (capi_verify results)", results, TABLE_USAGE)
    rows = sorted(results, key=lambda r: (str(r.get("management_cluster")), str(r.get("namespace")), str(r.get("name"))))
    lines = ["%-16s %-28s %-12s %8s %9s  %s" % ("management", "hostedcluster", "state", "private", "standard", "verdict")]
    for row in rows:
        verdict = "OK" if row.get("ok") else "FAIL: " + "; ".join(p.split(": ", 1)[-1] for p in row.get("problems") or [])
        hostedcluster = "%s/%s" % (row.get("namespace"), row.get("name"))
        cells = (row.get("management_cluster"), hostedcluster, row.get("state"), row.get("objects"),
                 row.get("standard_left"), verdict)
        lines.append("%-16s %-28s %-12s %8s %9s  %s" % cells)
    verified = len([row for row in rows if row.get("ok")])
    lines.append("%d of %d HostedClusters verified" % (verified, len(rows)))
    return lines


class FilterModule(object):
    def filters(self):
        return {"capi_owners_outside": capi_owners_outside, "capi_leaving": capi_leaving,
                "capi_verify_judge": capi_verify_judge, "capi_rollback_judge": capi_rollback_judge,
                "capi_verify_table": capi_verify_table}
