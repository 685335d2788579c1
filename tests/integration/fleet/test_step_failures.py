"""A failure at each step of the migrate role ends in a clean rollback (issue 7, "Must show").

One fleet, one HostedCluster per step: each gets a fault the API server injects into a call that step makes in that
cluster's HCP namespace (or, for health, a Cluster the health check finds unhealthy), all in ONE run of
migrate_fleet.yml, plus a control cluster that must migrate. The CRD step installs cluster-scoped objects, so its
fault cannot be scoped to one namespace: it gets a second run on another cluster of the same fleet.

A clean rollback: state failed with the step in the reason, scope legacy, the HCP namespace exactly as before
(support.snapshot, private objects included), the Deployments exactly as before (replicas, no sidecar), the proxy's
ConfigMap and RBAC gone, the fence lifted, the host failed with the reason.
"""
import json
import os
import re

import pytest

from testenv.cluster.admission import refuse
from testenv.hcp import build, fleet
from testenv.hcp.state import SOURCE_UID_ANNOTATION, SOURCE_VERSION_ANNOTATION
from tests.integration.fleet.support import (
    bed_webhook_vars, differences, hcp_ns, hostedcluster, hostedcluster_states, list_items, private_keys, read_report, run_playbook,
    snapshot, standard_keys, start_fleet, user_annotations, write_inventory)

PRIVATE = "cluster.hypershift.openshift.io"
PROXY_OBJECT_PREFIXES = ("private-capi-proxy-", "capi-proxy-")
MIGRATION_ANNOTATION_PREFIX = "hypershift.openshift.io/capi-migration-"
# cluster -> (step, fault rule without its namespace); each fault hits a call only that step makes first
STEP_FAULTS = {
    "hc-01": ("pause", {"verb": "[pu]*", "group": "cluster.x-k8s.io", "resource": "clusters", "subresource": "",
                        "code": 500, "message": "etcdserver: request timed out (injected)"}),
    "hc-02": ("scale_down", {"verb": "[pu]*", "group": "apps", "resource": "deployments",
                             "code": 500, "message": "etcdserver: leader changed (injected)"}),
    "hc-04": ("signal", {"verb": "[pu]*", "group": "hypershift.openshift.io", "resource": "hostedcontrolplanes",
                         "code": 500, "message": "hostedcontrolplane write refused (injected)"}),
    "hc-05": ("resume", {"verb": "[pu]*", "group": PRIVATE, "resource": "clusters", "subresource": "",
                         "code": 500, "message": "private cluster unpause refused (injected)"}),
    # deletion of the sources: the first collection goes, every later one is refused (sources partly deleted)
    "hc-07": ("finish", {"verb": "delete*", "group": "*cluster.x-k8s.io", "nth": 2, "count": -1,
                         "code": 403, "message": "deletion denied by policy (injected)"}),
    # step 7 fails before any source is deleted: every deletion of the sources is refused
    "hc-10": ("finish", {"verb": "delete*", "group": "*cluster.x-k8s.io", "count": -1,
                         "code": 403, "message": "every deletion denied by policy (injected)"}),
}
# refused by the real admission chain: a ValidatingAdmissionPolicy denies the private Machines of hc-03
REFUSED = "hc-03"
REFUSAL = "ValidatingAdmissionPolicy refuse-private-machines denies private Machines in clusters-hc-03"
HEALTH = "hc-06"     # its Cluster reports phase Failed: the health check must refuse the copy
CONTROL = "hc-08"    # no fault: migrates in the same run
CRDS = "hc-09"       # second run: the private CRDs cannot be read
FIRST_RUN = sorted(list(STEP_FAULTS) + [REFUSED, HEALTH, CONTROL])


def _workloads(server, namespace):
    """Deployments (metadata the migration may touch + spec), ConfigMaps, Roles, RoleBindings of a namespace."""
    deployments = {d["metadata"]["name"]: {"labels": d["metadata"].get("labels"),
                                           "annotations": user_annotations(d["metadata"]),
                                           "finalizers": d["metadata"].get("finalizers"), "spec": d["spec"]}
                   for d in list_items(server, "/apis/apps/v1/namespaces/%s/deployments" % namespace)}
    names = {kind: sorted(o["metadata"]["name"] for o in list_items(server, path % namespace)) for kind, path in (
        ("configmaps", "/api/v1/namespaces/%s/configmaps"),
        ("roles", "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles"),
        ("rolebindings", "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings"))}
    return {"deployments": deployments, "names": names}


def _cluster_scoped_proxy_rbac(server, namespace):
    found = []
    for kind in ("clusterroles", "clusterrolebindings"):
        found += [o["metadata"]["name"] for o in list_items(server, "/apis/rbac.authorization.k8s.io/v1/" + kind)
                  if o["metadata"]["name"].endswith(namespace) and o["metadata"]["name"].startswith(PROXY_OBJECT_PREFIXES)]
    return found


def _fail_health(server, namespace):
    """Mark the standard Cluster's status phase Failed (the copy carries it; the health check refuses it)."""
    cluster = list_items(server, "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/clusters" % namespace)[0]
    path = "/apis/cluster.x-k8s.io/v1beta2/namespaces/%s/clusters/%s/status" % (namespace, cluster["metadata"]["name"])
    patched = server.request("PATCH", path, body={"status": {"phase": "Failed"}},
                             content_type="application/merge-patch+json")
    assert patched.status == 200, patched


@pytest.fixture(scope="module")
def failed_fleet(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("step-failures")
    server, crds = start_fleet(tmp_path, fleet.fleet_spec(10, machines=1), faults=True, pods="kwok-only")
    _fail_health(server, hcp_ns(HEALTH))
    names = FIRST_RUN + [CRDS]
    before = {name: snapshot(server, crds, hcp_ns(name)) for name in names}
    workloads = {name: _workloads(server, hcp_ns(name)) for name in names}
    for name, (_step, rule) in STEP_FAULTS.items():
        server.add_fault(dict(rule, namespace=hcp_ns(name)))
    with server.api_client() as api:
        refusal = refuse(api, "refuse-private-machines", group=PRIVATE, resource="machines", namespace=hcp_ns(REFUSED),
                         message=REFUSAL, probe=build.private_machine_probe(hcp_ns(REFUSED)))
    inventory = write_inventory(tmp_path, server.kubeconfig, host_vars=bed_webhook_vars(server))
    roots = {run: os.path.join(str(tmp_path), "reports-" + run) for run in ("steps", "crds")}
    first = run_playbook("migrate_fleet.yml", inventory, {
        "private_capi_fleet_serial": len(FIRST_RUN), "private_capi_fleet_names": FIRST_RUN,
        "private_capi_fleet_report_root": roots["steps"]})
    server.clear_faults()
    refusal.remove()
    entries = server.request_counts()["entries"]
    # the private CRDs cannot be read: the per-cluster CRD step (the fleet-wide install is switched off) fails
    server.add_fault({"verb": "get", "group": "apiextensions.k8s.io", "resource": "customresourcedefinitions",
                      "name": "*." + PRIVATE, "count": -1, "code": 500, "message": "etcdserver: too many requests (injected)"})
    second = run_playbook("migrate_fleet.yml", inventory, {
        "private_capi_fleet_names": [CRDS], "private_capi_fleet_install_crds": False,
        "private_capi_fleet_report_root": roots["crds"]})
    server.clear_faults()
    yield {"server": server, "crds": crds, "before": before, "workloads": workloads,
           "runs": {"steps": first, "crds": second}, "roots": roots, "entries": entries}
    assert server.stop() == 0


def _output(result):
    return result.stdout + result.stderr


def _recap(result, name):
    match = re.search(r"^mc-1/clusters/%s\s*:\s*(.*)$" % re.escape(name), result.stdout, re.MULTILINE)
    assert match, "no PLAY RECAP line for %s:\n%s" % (name, _output(result)[-3000:])
    return dict((key, int(value)) for key, value in re.findall(r"(\w+)=(\d+)", match.group(1)))


def _without_provenance(canonical):
    """The snapshot with the copy's provenance annotations dropped (objects copied back carry them)."""
    stripped = json.loads(json.dumps(canonical))
    for obj in stripped.values():
        annotations = obj["metadata"].get("annotations") or {}
        for key in (SOURCE_UID_ANNOTATION, SOURCE_VERSION_ANNOTATION):
            annotations.pop(key, None)
        if "annotations" in obj["metadata"] and not annotations:
            del obj["metadata"]["annotations"]
    return stripped


def assert_clean_rollback(failed_fleet, name, step, run, message, copied_back=False):
    server, result = failed_fleet["server"], failed_fleet["runs"][run]
    output = _output(result)
    namespace = hcp_ns(name)
    assert hostedcluster_states(server)[name] == "failed", output[-4000:]
    hc = hostedcluster(server, name)
    annotations = hc["metadata"]["annotations"]
    reason = annotations.get("hypershift.openshift.io/migration-failed", "")
    assert reason.startswith(step + ":"), "reason %r does not name the step %s" % (reason, step)
    assert message in reason, reason
    assert annotations.get("hypershift.openshift.io/scope") == "legacy"
    assert "hypershift.openshift.io/migration-in-progress" not in annotations
    assert "hypershift.openshift.io/private-capi-types" not in annotations
    # the fence is lifted and no migration bookkeeping (counts, phase, paused-until) is left behind
    assert "pausedUntil" not in hc["spec"], hc["spec"].get("pausedUntil")
    assert not [key for key in annotations if key.startswith(MIGRATION_ANNOTATION_PREFIX)
                and not key.endswith(("-history", "-lease-holder", "-lease-acquire-time", "-lease-renew-time",
                                      "-lease-duration-seconds"))], annotations
    # the HCP namespace is exactly as before: standard objects unpaused, no private object, HCP without the signal
    after = snapshot(server, failed_fleet["crds"], namespace)
    assert not private_keys(after), private_keys(after)
    if copied_back:
        # the standard objects were re-created from their private copies: new uids, provenance annotations
        after = _without_provenance(after)
    changed = differences(failed_fleet["before"][name], after)
    assert not changed, "%s after the rollback:\n%s" % (namespace, "\n".join(changed))
    # Deployments exactly as before (recorded replicas, no sidecar, no record), proxy ConfigMap and RBAC gone
    workloads = _workloads(server, namespace)
    changed = differences(failed_fleet["workloads"][name], workloads)
    assert not changed, "%s Deployments/ConfigMaps/RBAC after the rollback:\n%s" % (namespace, "\n".join(changed))
    for deployment in fleet.CAPI_DEPLOYMENTS:
        spec = workloads["deployments"][deployment]["spec"]
        assert spec["replicas"] == 1 and [c["name"] for c in spec["template"]["spec"]["containers"]] == ["manager"]
    assert not _cluster_scoped_proxy_rbac(server, namespace)
    # the host failed with the reason, and the report says so
    assert _recap(result, name)["failed"] == 1, output[-3000:]
    assert re.search(r"fatal: \[mc-1/clusters/%s\]: FAILED!" % re.escape(name), output)
    record = {c["name"]: c for c in read_report(failed_fleet["roots"][run])["clusters"]}[name]
    assert record["status"] == "failed" and record["reason"].startswith(step + ":"), record
    assert record["phases"][-1]["name"] == "rollback", record["phases"]
    # the rollback stops the controllers (if the step had not) and starts them again: its window is recorded
    window = record["controllers_down"]
    assert record["controllers_down_seconds"] > 0 and window["stopped_at"] < window["available_at"], record
    assert 0 <= record["controllers_own_seconds"] <= record["controllers_down_seconds"], record


def test_failure_in_pause_rolls_back_cleanly(failed_fleet):
    assert_clean_rollback(failed_fleet, "hc-01", "pause", "steps", "etcdserver: request timed out (injected)")


def test_failure_in_scale_down_rolls_back_cleanly(failed_fleet):
    assert_clean_rollback(failed_fleet, "hc-02", "scale_down", "steps", "etcdserver: leader changed (injected)")


def test_failure_in_crds_rolls_back_cleanly(failed_fleet):
    assert_clean_rollback(failed_fleet, CRDS, "crds", "crds", "too many requests (injected)")


def test_failure_in_copy_rolls_back_cleanly(failed_fleet):
    assert_clean_rollback(failed_fleet, REFUSED, "copy", "steps", REFUSAL)


def test_failure_in_signal_rolls_back_cleanly(failed_fleet):
    assert_clean_rollback(failed_fleet, "hc-04", "signal", "steps", "hostedcontrolplane write refused (injected)")


def test_failure_in_resume_rolls_back_cleanly(failed_fleet):
    assert_clean_rollback(failed_fleet, "hc-05", "resume", "steps", "private cluster unpause refused (injected)")


def test_failure_in_health_rolls_back_cleanly(failed_fleet):
    assert_clean_rollback(failed_fleet, HEALTH, "health", "steps", "phase is Failed")


def test_failure_in_finish_copies_the_sources_back(failed_fleet):
    """Step 7 had begun deleting the standard objects: the rollback copies the private ones back (new uids, same
    content, owners re-pointed), so the namespace reads exactly as before and no private object is left."""
    deletes = [(e["group"], e["resource"], e["code"]) for e in failed_fleet["entries"]
               if e["namespace"] == hcp_ns("hc-07") and e["verb"].startswith("delete") and e["group"].endswith("cluster.x-k8s.io")]
    assert [code for _group, _resource, code in deletes][:2] == [200, 403], "sources not partly deleted: %r" % deletes
    assert_clean_rollback(failed_fleet, "hc-07", "finish", "steps", "deletion denied by policy (injected)",
                          copied_back=True)


def test_failure_in_finish_before_any_deletion_rewrites_no_standard_object(failed_fleet):
    """Step 7 began (its phase recorded) but no source was deleted: the rescue copies nothing back - the originals
    are left as they are (no create; the pause the migration put on them is lifted, and the one object the delete
    phase had marked - finalizers taken, then its deletion refused - gets them back: one update, nothing else)."""
    namespace = hcp_ns("hc-10")
    deletes = [(e["resource"], e["name"], e["code"]) for e in failed_fleet["entries"] if e["namespace"] == namespace
               and e["verb"].startswith("delete") and e["group"].endswith("cluster.x-k8s.io")]
    assert deletes and {code for _resource, _name, code in deletes} == {403}, deletes
    standard_writes = [(e["verb"], e["resource"], e["name"]) for e in failed_fleet["entries"]
                       if e["namespace"] == namespace and e["verb"] in ("create", "update")
                       and e["group"].endswith("cluster.x-k8s.io")]
    assert [verb for verb, _resource, _name in standard_writes] == ["update"], standard_writes
    assert standard_writes[0][1] == deletes[0][0], (standard_writes, deletes)  # the kind whose deletion was refused
    assert_clean_rollback(failed_fleet, "hc-10", "finish", "steps", "every deletion denied by policy (injected)")


def test_the_control_cluster_migrates_in_the_same_run(failed_fleet):
    server = failed_fleet["server"]
    output = _output(failed_fleet["runs"]["steps"])
    assert hostedcluster_states(server)[CONTROL] == "migrated", output[-4000:]
    after = snapshot(server, failed_fleet["crds"], hcp_ns(CONTROL))
    assert not standard_keys(after)
    assert sorted(key.split("/", 1)[1] for key in private_keys(after)) == \
        sorted(key.split("/", 1)[1] for key in standard_keys(failed_fleet["before"][CONTROL]))
    assert _recap(failed_fleet["runs"]["steps"], CONTROL)["failed"] == 0
