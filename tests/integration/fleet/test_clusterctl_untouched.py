"""clusterctl's inventory survives a migration and a rollback exactly as it was (issue 48, groups).

clusterctl.cluster.x-k8s.io matches the *.cluster.x-k8s.io pattern, but it is the platform's tooling, no HyperShift
CAPI type (the core's EXCLUDED_STANDARD_GROUPS). On a management cluster that starts as a real one does (no private
CRDs: the role private_crds renders them from the installed standard ones), clusterctl's real Provider CRD (cluster-api
v1.14.2) and Provider objects - one where clusterctl keeps them (capi-system), one inside the HCP namespace, which the
migration scans - are there. migrate_fleet.yml migrates the HostedCluster and rollback.yml rolls it back; after each
step the CRD and both Providers are the very same objects (uid, resourceVersion, every field), and a watch on the CRDs
kept from before the migration to the end never sees a clusterctl.cluster.hypershift.openshift.io CRD.
"""
import http.client
import json
import os
import threading

import pytest

from testenv import upstream, yamlio
from testenv.client import wait_for
from testenv.hcp import fleet
from tests.integration.fleet.support import (
    bed_webhook_vars, hcp_ns, hostedcluster_states, run_playbook, start_fleet, write_inventory)

NAME = "hc-01"
CLUSTERCTL = "clusterctl.cluster.x-k8s.io"
CLUSTERCTL_TWIN_GROUP = "clusterctl.cluster.hypershift.openshift.io"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CLUSTERCTL_CRD_NAME = "providers." + CLUSTERCTL
PROVIDER_NAMESPACE = "capi-system"


def providers_path(namespace, name=None):
    return "/apis/%s/v1alpha3/namespaces/%s/providers%s" % (CLUSTERCTL, namespace, "/" + name if name else "")


def provider(namespace, name, provider_name, provider_type):
    """A Provider as `clusterctl init` writes it (cmd/clusterctl/client/repository/components.go: labels and fields)."""
    return {"apiVersion": CLUSTERCTL + "/v1alpha3", "kind": "Provider",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"clusterctl.cluster.x-k8s.io": "", "cluster.x-k8s.io/provider": name}},
            "providerName": provider_name, "type": provider_type, "version": "v1.14.2"}


def created(server, path, body):
    response = server.request("POST", path, body)
    assert response.status == 201, "POST %s: %r" % (path, response)
    return response.json()


def read(server, path):
    response = server.request("GET", path)
    assert response.status == 200, "GET %s: %r" % (path, response)
    return response.json()


class CrdWatch(threading.Thread):
    """Every CRD name the server reports from start() to stop(), by a watch resumed from the last resourceVersion
    seen (each request ends after timeoutSeconds; a 410 re-lists), plus the names of each list."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server = server
        self.stopping = threading.Event()
        self.names = set()
        self.events = 0
        self.error = None
        self.resource_version = self._relist()

    def _relist(self):
        listed = read(self.server, CRD_PATH)
        self.names.update(item["metadata"]["name"] for item in listed["items"])
        return listed["metadata"]["resourceVersion"]

    def _watch_once(self):
        connection = http.client.HTTPSConnection(self.server.host, self.server.port, context=self.server.ssl_context,
                                                 timeout=30)
        try:
            connection.request("GET", "%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion=%s"
                               % (CRD_PATH, self.resource_version),
                               headers={"Authorization": "Bearer " + self.server.admin_token, "Accept": "application/json"})
            response = connection.getresponse()
            assert response.status == 200, "watch %s: %d %r" % (CRD_PATH, response.status, response.read()[:300])
            for line in response:
                if not line.strip():
                    continue
                event = json.loads(line)
                if event["type"] == "ERROR":  # 410 Gone: the resourceVersion is too old, start again from a list
                    self.resource_version = self._relist()
                    return
                metadata = event["object"]["metadata"]
                self.resource_version = metadata["resourceVersion"]
                if event["type"] != "BOOKMARK":
                    self.events += 1
                    self.names.add(metadata["name"])
        finally:
            connection.close()

    def run(self):
        try:
            while not self.stopping.is_set():
                self._watch_once()
        except BaseException as error:  # reported by stop(): a dead watch must fail the test, not pass it
            self.error = error

    def stop(self):
        self.stopping.set()
        self.join(30)
        assert not self.is_alive() and self.error is None, "the CRD watch failed: %r" % (self.error,)
        self._relist()
        return self.names


def read_or_none(server, path):
    response = server.request("GET", path)
    assert response.status in (200, 404), "GET %s: %r" % (path, response)
    return response.json() if response.status == 200 else None


def clusterctl_state(server):
    """The clusterctl CRD and both Providers as the server has them, whole (None: gone), and every CRD name of the
    twin group."""
    crd_names = [item["metadata"]["name"] for item in read(server, CRD_PATH)["items"]]
    return {"crd": read_or_none(server, CRD_PATH + "/" + CLUSTERCTL_CRD_NAME),
            "providers": {namespace: read_or_none(server, providers_path(namespace, "cluster-api"))
                          for namespace in (PROVIDER_NAMESPACE, hcp_ns(NAME))},
            "twins": [name for name in crd_names if name.endswith(CLUSTERCTL_TWIN_GROUP)]}


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("clusterctl")
    server, _crds = start_fleet(tmp_path, fleet.fleet_spec(1, machines=1), pods="kwok-only", private_crds=False)
    try:
        with open(upstream.CLUSTERCTL_CRD) as handle:
            (crd,) = yamlio.load_all(handle)
        created(server, CRD_PATH, crd)
        wait_for(lambda: any(c["type"] == "Established" and c["status"] == "True" for c in (
            read(server, CRD_PATH + "/" + CLUSTERCTL_CRD_NAME).get("status") or {}).get("conditions") or ()),
            "CRD %s to be Established" % CLUSTERCTL_CRD_NAME)
        created(server, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": PROVIDER_NAMESPACE}})
        for namespace in (PROVIDER_NAMESPACE, hcp_ns(NAME)):
            created(server, providers_path(namespace), provider(namespace, "cluster-api", "cluster-api", "CoreProvider"))
        watch = CrdWatch(server)
        watch.start()
        inventory = write_inventory(tmp_path, server.kubeconfig, host_vars=bed_webhook_vars(server))
        states = {"installed": clusterctl_state(server)}
        runs = {}
        runs["migrated"] = run_playbook("migrate_fleet.yml", inventory, {
            "private_capi_fleet_report_root": os.path.join(str(tmp_path), "migrate")})
        states["migrated"] = clusterctl_state(server)
        states["migrated"]["hostedcluster"] = hostedcluster_states(server)[NAME]
        runs["rolled-back"] = run_playbook("rollback.yml", inventory, {
            "private_capi_rollback_names": [NAME], "private_capi_fleet_report_root": os.path.join(str(tmp_path), "rollback")})
        states["rolled-back"] = clusterctl_state(server)
        states["rolled-back"]["hostedcluster"] = hostedcluster_states(server)[NAME]
        seen = watch.stop()
        yield {"server": server, "states": states, "runs": runs, "seen": seen, "events": watch.events}
    finally:
        assert server.stop() == 0


def test_the_migration_and_the_rollback_succeed(steps):
    for step, result in steps["runs"].items():
        assert result.returncode == 0, "%s:\n%s" % (step, (result.stdout + result.stderr)[-4000:])
    assert steps["states"]["migrated"]["hostedcluster"] == "migrated"
    assert steps["states"]["rolled-back"]["hostedcluster"] == "legacy"


@pytest.mark.parametrize("step", ["migrated", "rolled-back"])
def test_the_clusterctl_crd_and_providers_are_left_exactly_as_they_were(steps, step):
    installed, after = steps["states"]["installed"], steps["states"][step]
    for name, before_object, after_object in [("crd", installed["crd"], after["crd"])] + [
            ("Provider " + namespace, installed["providers"][namespace], after["providers"][namespace])
            for namespace in installed["providers"]]:
        assert after_object is not None, "%s is gone after the step %s" % (name, step)
        assert (after_object["metadata"]["uid"], after_object["metadata"]["resourceVersion"]) == (
            before_object["metadata"]["uid"], before_object["metadata"]["resourceVersion"]), name
        assert after_object == before_object, name


@pytest.mark.parametrize("step", ["installed", "migrated", "rolled-back"])
def test_no_clusterctl_twin_crd_after_any_step(steps, step):
    assert steps["states"][step]["twins"] == []


def test_no_clusterctl_twin_crd_at_any_point_of_the_runs(steps):
    """The watch saw the migration make the CAPI twins (so it was watching), never a twin of clusterctl's group."""
    seen = steps["seen"]
    assert "machines.cluster.hypershift.openshift.io" in seen and steps["events"] > 0, sorted(seen)
    assert CLUSTERCTL_CRD_NAME in seen
    assert [name for name in seen if name.endswith(CLUSTERCTL_TWIN_GROUP)] == []
