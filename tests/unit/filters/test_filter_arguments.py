"""Every filter of plugins/filter/ called with missing, extra, unknown or wrongly typed arguments fails with an
AnsibleFilterError naming the filter (and, for the argument list, its usage) - never Python's own TypeError,
AttributeError or KeyError."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hypershift.private_capi.plugins.filter import (
    capi,
    capi_diff,
    conversion_shim,
    dual_operator,
    fleet_report,
    fleet_select,
    fleet_verify,
    private_crds,
    proxy_sidecar,
)
from tests.unit.filters.test_dual_operator import SETTINGS

FILTERS = {}
for plugin in (capi, capi_diff, conversion_shim, dual_operator, fleet_report, fleet_select, fleet_verify, private_crds, proxy_sidecar):
    FILTERS.update(plugin.FilterModule().filters())

CLUSTER = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "c", "namespace": "n"}}
REPORT = fleet_report.fleet_report([], "run-1")

# (filter, args, kwargs, words the message must hold)
BAD_CALLS = [
    # missing arguments: 9f's convert_capi without a version, and every other filter's required argument
    ("convert_capi", (CLUSTER,), {}, ["convert_capi: missing a required argument: 'version'",
                                      "usage: {{ obj | hypershift.private_capi.convert_capi('v1beta2') }}"]),
    ("capi_diff", (CLUSTER,), {}, ["capi_diff: missing a required argument: 'after'",
                                   "usage: {{ before | hypershift.private_capi.capi_diff(after) }}"]),
    ("fleet_report", ([],), {}, ["fleet_report: missing a required argument: 'run_id'",
                                 "usage: {{ records | hypershift.private_capi.fleet_report('run-1') }}"]),
    ("capi_verify_judge", (), {}, ["capi_verify_judge: missing a required argument: 'inputs'", "usage: "]),
    ("to_private_capi", (), {}, ["to_private_capi: missing a required argument: 'value'", "usage: "]),
    ("capi_owners_outside", (), {}, ["capi_owners_outside: missing a required argument: 'objects'", "usage: "]),
    # too many or unknown arguments
    ("convert_capi", (CLUSTER, "v1beta2", None, None, "extra"), {},
     ["convert_capi: too many positional arguments", "version, ref_versions=None, crds=None"]),
    ("to_standard_capi", (CLUSTER,), {"extra_group": {}}, ["to_standard_capi: got an unexpected keyword argument "
                                                           "'extra_group'", "extra_groups=None"]),
    ("fleet_report_markdown", (REPORT, "x"), {}, ["fleet_report_markdown: too many positional arguments"]),
    ("fleet_report_summary", (REPORT,), {"path": "x"}, ["fleet_report_summary: got an unexpected keyword argument"]),
    ("capi_verify_table", ([], 1), {}, ["capi_verify_table: too many positional arguments"]),
    ("capi_diff", (CLUSTER, CLUSTER, 5, 6), {}, ["capi_diff: too many positional arguments"]),
    # wrongly typed arguments
    ("convert_capi", (CLUSTER, 2), {}, ["convert_capi: target version must be one of v1beta1, v1beta2, got 2", "usage"]),
    ("to_private_capi", (CLUSTER, ["a"]), {}, ["to_private_capi: invalid extra_groups"]),
    ("capi_diff", (CLUSTER, CLUSTER, "5"), {}, ["capi_diff: limit must be a positive integer"]),
    ("fleet_report", ([], 5), {}, ["fleet_report: run_id must be the run id (a string), got int 5"]),
    ("fleet_report", ([1], "run-1"), {}, ["fleet_report: record 0 must be a migrate record (a mapping), got int 1"]),
    ("fleet_report", ([], "run-1", "yes"), {}, ["fleet_report: check_mode must be true or false, got str 'yes'"]),
    ("fleet_report_markdown", ([],), {}, ["fleet_report_markdown: the input must be the report fleet_report returns"]),
    ("fleet_report_markdown", ({"run_id": "x"},), {}, ["fleet_report_markdown: the input is not a report of fleet_report",
                                                       "usage: {{ records | hypershift.private_capi.fleet_report("]),
    ("fleet_report_summary", ("text",), {}, ["fleet_report_summary: the input must be the report fleet_report returns"]),
    ("fleet_report_summary", (REPORT, 5), {}, ["fleet_report_summary: report_path must be a path (a string), got int 5"]),
    ("fleet_report_root", (5,), {}, ["fleet_report_root: the input must be a directory (a string, or none for the default)"]),
    ("fleet_report_root", ("reports", "yes"), {}, ["fleet_report_root: check_mode must be true or false, got str 'yes'"]),
    ("fleet_report_root", ("reports", True, 1), {}, ["fleet_report_root: in_check_mode must be true or false, got int 1"]),
    ("fleet_unknown_reason", (None, "task", "error"), {}, ["fleet_unknown_reason: the input must be the run id"]),
    ("fleet_unknown_reason", ("run-1", "task", "error"), {"status": None},
     ["fleet_unknown_reason: status must be a string, got NoneType"]),
    ("fleet_unknown_reason", ("run-1", "task", "error"), {"locked": "yes"},
     ["fleet_unknown_reason: locked must be true or false, got str 'yes'"]),
    ("capi_owners_outside", ("text",), {}, ["capi_owners_outside: the input (objects) must be a list of mappings, got str"]),
    ("capi_owners_outside", ([1],), {}, ["capi_owners_outside: the input (objects) must be a list of mappings, item 0 is"]),
    ("capi_owners_outside", ([], 5), {}, ["capi_owners_outside: others must be a list of mappings, got int"]),
    ("capi_leaving", ("text",), {}, ["capi_leaving: the input (objects) must be a list of mappings, got str"]),
    ("capi_leaving", ([{"kind": "Machine", "metadata": {"name": "m-0"}}],), {},
     ["capi_leaving: Machine m-0 has no metadata.uid; pass objects as read from the API server"]),
    ("capi_verify_judge", ([],), {}, ["capi_verify_judge: expected a dict of what was read, got list"]),
    ("capi_rollback_judge", ([],), {}, ["capi_rollback_judge: expected a dict of what was read, got list"]),
    ("capi_rollback_judge", (), {}, ["capi_rollback_judge: missing a required argument: 'inputs'", "usage: "]),
    ("proxy_sidecar_patches", ([], ["a"]), {}, ["proxy_sidecar_patches: missing a required argument: 'settings'",
                                                "usage: {{ deployments | hypershift.private_capi.proxy_sidecar_patches("]),
    ("proxy_sidecar_patches", ([], "cluster-api", {}), {}, ["proxy_sidecar_patches: names must be a list of Deployment names"]),
    ("proxy_sidecar_patches", ([], [], []), {}, ["proxy_sidecar_patches: settings must be a mapping, got list"]),
    ("proxy_sidecar_patches", ([{"metadata": {"name": "a"}}], ["a"], {}), {},
     ["proxy_sidecar_patches: the sidecar settings lack image, image_pull_policy"]),
    ("proxy_sidecar_removals", ("text", []), {}, ["proxy_sidecar_removals: the input must be a list of Deployments"]),
    ("proxy_sidecar_removals", ([{"metadata": {"name": "a", "namespace": "n", "annotations": {
        "hypershift.openshift.io/capi-proxy-original": "{"}}}], ["a"]), {},
     ["proxy_sidecar_removals: Deployment n/a: annotation hypershift.openshift.io/capi-proxy-original is not JSON"]),
    ("capi_fleet_candidates", ({"hostedclusters": []},), {}, ["capi_fleet_candidates: a mapping input must be a migration_state"]),
    ("capi_fleet_candidates", ("text",), {}, ["capi_fleet_candidates: the input must be a migration_state query result or"]),
    ("capi_fleet_candidates", ([{"inventory_hostname": "h"}],), {}, ["capi_fleet_candidates: 'private_capi_management_cluster' is missing"]),
    ("capi_fleet_candidates", ({"hostedclusters": [{"name": "a"}]}, "mc"), {}, ["capi_fleet_candidates: 'namespace' is missing"]),
    ("capi_fleet_select", ([],), {}, ["capi_fleet_select: missing a required argument: 'criteria'", "usage: "]),
    ("capi_fleet_select", ({}, {}), {}, ["capi_fleet_select: the input must be a list of candidates and criteria a mapping"]),
    ("capi_fleet_select", ([], {"purpose": "rollback", "names": ["hc-1"]}), {}, ["capi_fleet_select: private_capi_rollback_names: 'hc-1' matches 0"]),
    ("capi_fleet_select", ([], {"name_regex": "("}), {}, ["capi_fleet_select: private_capi_fleet_name_regex '(' is not a regular"]),
    ("capi_fleet_batches", ("x",), {}, ["capi_fleet_batches: invalid literal", "usage: "]),
    ("capi_fleet_batches", (0, 0), {}, ["capi_fleet_batches: private_capi_fleet_canary must be 0 or more"]),
    ("capi_fleet_budget", ({},), {}, ["capi_fleet_budget: the input must be the list of the batch's records", "usage: "]),
    ("capi_fleet_budget", ([], "x"), {}, ["capi_fleet_budget: max_fail_percentage 'x' is not a number"]),
    ("proxy_reads", (), {}, ["proxy_reads: missing a required argument: 'settings'",
                             "usage: {{ settings | hypershift.private_capi.proxy_reads }}"]),
    ("proxy_reads", ("text",), {}, ["proxy_reads: settings must be a mapping of the api_proxy role's settings, got str"]),
    ("proxy_plan", ([],), {}, ["proxy_plan: missing a required argument: 'settings'",
                               "usage: {{ read.results | hypershift.private_capi.proxy_plan("]),
    ("proxy_plan", ("text", {}), {}, ["proxy_plan: the input must be the k8s_lists results of the proxy_reads read"]),
    ("proxy_plan", ([], {}), {}, ["proxy_plan: the role settings lack state"]),
    ("private_crds_plan", (), {}, ["private_crds_plan: missing a required argument: 'settings'", "usage: "]),
    ("private_crds_plan", ([],), {}, ["private_crds_plan: settings and shim must be mappings, got list"]),
    ("private_crd_twin_problems", ("text",), {}, ["private_crd_twin_problems: the input must be the installed CRDs"]),
    ("private_crd_twin_problems", ([], ["a"]), {}, ["private_crd_twin_problems: invalid extra_groups"]),
    ("conversion_shim_manifests", (), {}, ["conversion_shim_manifests: missing a required argument: 'settings'",
                                           "usage: {{ settings | hypershift.private_capi.conversion_shim_manifests("]),
    ("conversion_shim_manifests", ({}, {}, 1), {}, ["conversion_shim_manifests: too many positional arguments"]),
    ("conversion_shim_manifests", ([],), {}, ["conversion_shim_manifests: the input must be the settings mapping"]),
    ("conversion_shim_manifests", ({}, "x"), {}, ["conversion_shim_manifests: answers must be a mapping"]),
    ("conversion_shim_manifests", ({},), {}, ["conversion_shim_manifests: the conversion_shim settings lack state"]),
    ("conversion_shim_outcome", ({},), {"answer": {}}, ["conversion_shim_outcome: got an unexpected keyword argument"]),
    ("conversion_shim_outcome", ("x",), {}, ["conversion_shim_outcome: the input must be the settings mapping"]),
    ("conversion_shim_outcome", (None, [1]), {}, ["conversion_shim_outcome: the input must be the settings mapping"]),
    ("dual_operator_plan", ([], []), {}, ["dual_operator_plan: missing a required argument: 'settings'",
                                          "usage: {{ deployments | hypershift.private_capi.dual_operator_plan("]),
    ("dual_operator_plan", ([], [], SETTINGS, 1), {}, ["dual_operator_plan: too many positional arguments"]),
    ("dual_operator_plan", ([], [], []), {}, ["dual_operator_plan: settings must be a mapping"]),
    ("dual_operator_plan", ("text", [], SETTINGS), {}, ["dual_operator_plan: the Deployments (the input) must be a list of mappings"]),
    ("dual_operator_plan", ([], [1], SETTINGS), {}, ["dual_operator_plan: the HostedClusters (migration_state query"]),
    ("dual_operator_plan", ([], [], {"name": "x"}), {}, ["dual_operator_plan: the settings lack state, namespace"]),
    ("dual_operator_cleanup", ([],), {}, ["dual_operator_cleanup: missing a required argument: 'settings'", "usage: "]),
    ("dual_operator_cleanup", ({}, SETTINGS), {}, ["dual_operator_cleanup: the HostedClusters (the input) must be a list"]),
    ("dual_operator_cleanup", ([], "x"), {}, ["dual_operator_cleanup: settings must be a mapping", "got str"]),
    ("capi_verify_table", ("text",), {}, ["capi_verify_table: the input (capi_verify results) must be a list of mappings"]),
    ("capi_verify_table", ([1],), {}, ["capi_verify_table: the input (capi_verify results) must be a list of mappings, "
                                       "item 0 is int 1"]),
]


def test_every_filter_is_covered():
    assert {name for name, _args, _kwargs, _words in BAD_CALLS} == set(FILTERS)


@pytest.mark.parametrize("name, args, kwargs, words", BAD_CALLS,
                         ids=["%s-%d" % (call[0], index) for index, call in enumerate(BAD_CALLS)])
def test_bad_calls_raise_a_filter_error_naming_the_filter(name, args, kwargs, words):
    with pytest.raises(AnsibleFilterError) as raised:
        FILTERS[name](*args, **kwargs)
    for word in words:
        assert word in str(raised.value), str(raised.value)


def test_good_calls_still_work():
    assert FILTERS["convert_capi"](CLUSTER, "v1beta1")["apiVersion"] == "cluster.x-k8s.io/v1beta1"
    assert FILTERS["capi_owners_outside"]([CLUSTER], [None]) == []  # a HostedControlPlane not found is None
    assert FILTERS["fleet_report_summary"](REPORT, report_path="r")[-1] == "report: r (.json, .md)"
    assert FILTERS["to_private_capi"](value="cluster.x-k8s.io/v1beta2") == "cluster.hypershift.openshift.io/v1beta2"
