"""A permission taken away mid-run: the rescue is refused, and the HostedCluster says so (issue 35).

The migrate ServiceAccount holds exactly the shipped RBAC (meta/rbac/migrate.yaml); the pre-flight passes and the run
takes the lock. Then, mid-run, the administrator takes back one rule that only the rescue uses: create/update on the
standard CAPI groups (the copy back). Step 7 fails after the deletion of the sources began: the real admission chain
refuses the deletion of the standard Cluster, which goes last. The rescue's copy back is refused by the authorizer.
The HostedCluster stays in-progress, locked by the run (handing half-moved objects to the legacy operator would be
worse), and says why: the annotation hypershift.openshift.io/capi-migration-rollback-failed and a Warning Event name
the refused request and what to do; the report row is rollback-failed. Granted again (and the policy gone), the same
run id resumes. Its window finds the private copies run by the controllers since (unpaused: they differ from the
paused sources), so it fails and the rescue, allowed now, completes: the HostedCluster ends failed, rolled back, the
note gone. A retry of the failed cluster then migrates it with every object there.
"""
import os
import time

import pytest

from testenv import REPO_ROOT
from testenv.cluster.admission import Refusal, refuse
from testenv.hcp import fleet
from tests.integration.fleet.support import (
    bed_webhook_vars, hcp_ns, hostedcluster, hostedcluster_states, kubectl, list_items, migrated_content_problems,
    read_report, run_playbook, shipped_identity, snapshot, start_fleet, start_playbook, without_rule, write_inventory)

from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac import rules

NAME = "hc-01"
RUN = "rescue-refused"
NOTE = "hypershift.openshift.io/capi-migration-rollback-failed"
POLICY = "keep-the-standard-cluster"
SHIPPED_MIGRATE = os.path.join(REPO_ROOT, "meta", "rbac", "migrate.yaml")


def _copy_back_rule(rule):
    return rule["verbs"] == ["create", "update"] and "cluster.x-k8s.io" in rule["apiGroups"]


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("rescue-refused")
    server, crds = start_fleet(tmp_path, fleet.fleet_spec(1, machines=1), pods="kwok-only", private_crds=False)
    hcp = hcp_ns(NAME)
    before = snapshot(server, crds, hcp)
    inventory = write_inventory(tmp_path, shipped_identity(server, rules.MIGRATE, [hcp]),
                                host_vars=bed_webhook_vars(server))
    with server.api_client() as api:
        refuse(api, POLICY, group="cluster.x-k8s.io", resource="clusters", operations=("DELETE",), namespace=hcp,
               message="the test's policy keeps the standard Cluster")
    output = os.path.join(str(tmp_path), "run.log")
    process = start_playbook("migrate_fleet.yml", inventory, output, {
        "private_capi_fleet_run_id": RUN, "private_capi_fleet_report_root": str(tmp_path / "reports")})
    deadline = time.monotonic() + 300
    while hostedcluster_states(server)[NAME] != "in-progress":  # the pre-flight passed, the lock is taken
        assert process.poll() is None and time.monotonic() < deadline, open(output).read()[-4000:]
        time.sleep(0.1)
    kubectl(server, "apply", "-f", "-", stdin=without_rule(
        rules.MIGRATE, "ClusterRole", rules.role_names(rules.MIGRATE)[rules.HCP_NAMESPACES],
        lambda rule: not _copy_back_rule(rule)))
    process.wait(600)
    with open(output) as handle:
        first = {"code": process.returncode, "output": handle.read(), "states": hostedcluster_states(server),
                 "hostedcluster": hostedcluster(server, NAME), "report": read_report(str(tmp_path / "reports"))}
    first["events"] = [e for e in list_items(server, "/api/v1/namespaces/%s/events" % fleet.HC_NAMESPACE)
                       if e["reason"] == "CAPIMigrationRollbackFailed" and e["involvedObject"]["name"] == NAME]

    kubectl(server, "apply", "-f", SHIPPED_MIGRATE)
    with server.api_client() as api:
        Refusal(api, POLICY).remove()
    resumed = run_playbook("migrate_fleet.yml", inventory, {
        "private_capi_fleet_run_id": RUN, "private_capi_fleet_report_root": str(tmp_path / "resumed")})
    resumed_state = {"states": hostedcluster_states(server), "hostedcluster": hostedcluster(server, NAME),
                     "report": read_report(str(tmp_path / "resumed"))}
    retried = run_playbook("migrate_fleet.yml", inventory, {
        "private_capi_migrate_retry_failed": True, "private_capi_fleet_report_root": str(tmp_path / "retried")})
    yield {"server": server, "crds": crds, "before": before, "first": first, "resumed": resumed,
           "resumed_state": resumed_state, "retried": retried}
    assert server.stop() == 0


def test_the_refused_rescue_keeps_the_lock_and_says_why_on_the_hostedcluster(refused):
    first = refused["first"]
    assert first["code"] != 0, first["output"][-4000:]
    assert first["states"] == {NAME: "in-progress"}
    annotations = first["hostedcluster"]["metadata"]["annotations"]
    assert annotations["hypershift.openshift.io/capi-migration-lease-holder"] == RUN
    note = annotations.get(NOTE, "")
    assert "the rescue by run %s failed at copy" % RUN in note, annotations
    # the authorizer's refusal names the verb, the resource and the namespace: the right to grant (the first write of
    # the copy back: the standard Cluster step 7 had marked for deletion gets its finalizers back, an update)
    assert "is forbidden: User \"system:serviceaccount:" in note and "cannot update resource \"clusters\" in API " \
        "group \"cluster.x-k8s.io\" in the namespace \"%s\"" % hcp_ns(NAME) in note, note
    assert "grant that right" in note and "re-run with that run id" in note, note
    assert len(first["events"]) == 1 and first["events"][0]["type"] == "Warning", first["events"]
    assert first["events"][0]["message"] == note
    row = first["report"]["clusters"][0]
    assert row["status"] == "rollback-failed" and "ROLLBACK FAILED at copy" in row["reason"], row


def test_granted_again_the_same_run_resumes_and_ends_in_a_known_state_without_the_note(refused):
    resumed = refused["resumed_state"]
    assert resumed["states"] == {NAME: "failed"}, (refused["resumed"].stdout + refused["resumed"].stderr)[-4000:]
    annotations = resumed["hostedcluster"]["metadata"]["annotations"]
    assert NOTE not in annotations and "hypershift.openshift.io/capi-migration-lease-holder" not in annotations
    row = resumed["report"]["clusters"][0]
    assert row["status"] == "failed" and row["resumed"], row


def test_a_retry_then_migrates_and_nothing_is_lost(refused):
    server, retried = refused["server"], refused["retried"]
    assert retried.returncode == 0, (retried.stdout + retried.stderr)[-4000:]
    assert hostedcluster_states(server) == {NAME: "migrated"}
    problems = migrated_content_problems(refused["before"], snapshot(server, refused["crds"], hcp_ns(NAME)))
    assert problems == [], "\n".join(problems)
