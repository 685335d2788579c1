"""Least privilege, proven on the local control plane with kube-apiserver's audit log: a demo-like fleet (5
HostedClusters, AWS and KubeVirt, one whose private Machines a ValidatingAdmissionPolicy refuses) migrated by
migrate_fleet.yml, verified by verify_fleet.yml, one cluster rolled back by rollback.yml and the fleet read by the
inventory plugin - each as a ServiceAccount bound to exactly the shipped RBAC (meta/rbac, applied with kubectl as the
operator guide says). The authorizer denies none of their requests, and every rule the source does not call
conditional is used by its entry point as written: each of its verbs on each resource it lists (no cross product: a
"*/status" is used by a request on a status, a "*" by one on an object itself). Then, with one rule taken out, the
pre-flight refuses before any change and names it."""
import json
import os

import pytest

from testenv import REPO_ROOT
from testenv.cluster.admission import refuse
from testenv.cluster.testing import get_in_pod, ready_pod
from testenv.faults import is_write
from testenv.hcp import build, fleet
from tests.integration.fleet.support import (
    hostedcluster_states, kubectl, run_playbook, shipped_identity, snapshot, start_fleet, without_rule,
    write_inventory)
from tests.integration.fleet.test_inventory import inventory, write_source

from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac import rules
from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac.render import IDENTITY_NAMESPACE

pytestmark = pytest.mark.slow

NAMES = ["hc-%02d" % index for index in range(1, 6)]
FAULTY, ROLLED_BACK = "hc-03", "hc-01"
OPERATOR_NAMESPACE = "hypershift"
DECISION = "authorization.k8s.io/decision"
SHIPPED_MIGRATE = os.path.join(REPO_ROOT, "meta", "rbac", "migrate.yaml")


def user(entry_point):
    return "system:serviceaccount:%s:%s" % (IDENTITY_NAMESPACE, rules.role_names(entry_point)["account"])


def audit_events(server, offset):
    """kube-apiserver's audit events from byte offset on (after a marker request, so the log has caught up)."""
    server.request_counts()  # reads up to its own marker: every earlier request is in the file
    with open(server.cluster.audit_log, "rb") as handle:
        handle.seek(offset)
        return [json.loads(line) for line in handle.read().splitlines() if line.strip()]


def audit_size(server):
    server.request_counts()
    return os.path.getsize(server.cluster.audit_log)


def scopes_of(namespace):
    """The rule scopes a request in namespace may be granted by (a cluster-wide rule covers every namespace)."""
    if not namespace:
        return (rules.CLUSTER,)
    if namespace == OPERATOR_NAMESPACE:
        return (rules.OPERATOR_NAMESPACE, rules.CLUSTER)
    if namespace == fleet.HC_NAMESPACE:
        return (rules.HOSTEDCLUSTER_NAMESPACES, rules.CLUSTER)
    return (rules.HCP_NAMESPACES, rules.CLUSTER)


def resource_requests(events, username):
    """(verb, group, resource[/subresource], namespace) of each resource request username sent."""
    found = []
    for event in events:
        ref = event.get("objectRef") or {}
        if event["user"]["username"] != username or not ref.get("resource"):
            continue
        resource = ref["resource"] + ("/" + ref["subresource"] if ref.get("subresource") else "")
        found.append((event["verb"], ref.get("apiGroup", ""), resource, ref.get("namespace", "")))
    return found


def written_for(pattern, resource):
    """Whether a request on resource ("plural" or "plural/subresource") is what a rule's resource, as written, is for:
    "*" an object itself, "*/status" a status, "plural/*" a subresource of plural, a name that resource."""
    plural, _slash, subresource = resource.partition("/")
    if pattern == "*":
        return not subresource
    if pattern.startswith("*/"):
        return subresource == pattern[2:]
    if pattern.endswith("/*"):
        return plural == pattern[:-2] and bool(subresource)
    return pattern == resource


def unused_rules(entry_point, requests):
    """Each (rule, resource, verb) of entry_point's non-conditional rules that none of its requests used."""
    unused = []
    for rule in rules.rules_for(entry_point):
        if rule.conditional:
            continue
        for verb in rule.verbs:
            for pattern in rule.resources:
                if not any(seen == verb and written_for(pattern, resource)
                           and any(rule.grants(verb, group, resource, scope) for scope in scopes_of(namespace))
                           for seen, group, resource, namespace in requests):
                    unused.append((rule.scope, rule.groups, pattern, verb))
    return unused


def output(result):
    return result.stdout + result.stderr


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("least-privilege")
    server, crds = start_fleet(tmp_path, fleet.fleet_spec(len(NAMES), machines=1))
    with server.api_client() as api:  # the real admission chain refuses the faulty cluster's private Machines
        refuse(api, "refuse-" + FAULTY, group="cluster.hypershift.openshift.io", resource="machines",
               namespace="clusters-" + FAULTY, message="refused by the test's ValidatingAdmissionPolicy",
               probe=build.private_machine_probe("clusters-" + FAULTY))
    hcp_namespaces = ["clusters-" + name for name in NAMES]
    kubeconfigs = {entry: shipped_identity(server, entry, hcp_namespaces) for entry in rules.JOB_ENTRY_POINTS}
    inventories = {}
    for entry in rules.JOB_ENTRY_POINTS:
        directory = tmp_path / entry
        directory.mkdir()
        inventories[entry] = write_inventory(directory, kubeconfigs[entry])
    yield {"server": server, "crds": crds, "kubeconfigs": kubeconfigs, "inventories": inventories,
           "reports": str(tmp_path / "reports"), "tmp": tmp_path}
    assert server.stop() == 0


def test_the_fleet_runs_as_the_shipped_rbac_with_no_denial_and_uses_every_rule_it_ships(world):
    server = world["server"]
    offset = audit_size(server)
    migrated = run_playbook("migrate_fleet.yml", world["inventories"][rules.MIGRATE], {
        "private_capi_fleet_serial": len(NAMES), "private_capi_fleet_report_root": world["reports"]}, timeout=1200)
    text = output(migrated)
    assert migrated.returncode != 0, text[-4000:]  # the refused cluster fails its host
    assert "refused by the test's ValidatingAdmissionPolicy" in text, text[-4000:]
    expected = {name: "migrated" for name in NAMES}
    expected[FAULTY] = "failed"
    assert hostedcluster_states(server) == expected, text[-4000:]

    verified = run_playbook("verify_fleet.yml", world["inventories"][rules.VERIFY], {
        "private_capi_fleet_names": [name for name in NAMES if name != FAULTY]})
    assert verified.returncode == 0, output(verified)[-4000:]

    # a CAPI client in a migrated cluster's Pod, through its proxy sidecar (which runs as the workload's
    # ServiceAccount with the rules role api_proxy gave it)
    hcp = "clusters-" + NAMES[1]
    code, body = get_in_pod(ready_pod(server, hcp, "app=cluster-api"),
                            "http://127.0.0.1:8080/apis/cluster.x-k8s.io/v1beta1/namespaces/%s/machines" % hcp)
    assert code == 200 and json.loads(body)["items"], body[:2000]

    rolled_back = run_playbook("rollback.yml", world["inventories"][rules.ROLLBACK], {
        "private_capi_rollback_names": [ROLLED_BACK]})
    assert rolled_back.returncode == 0, output(rolled_back)[-4000:]
    assert hostedcluster_states(server)[ROLLED_BACK] == "legacy"

    source = write_source(world["tmp"] / "fleet.hostedclusters.yml", world["kubeconfigs"][rules.INVENTORY])
    listed = inventory(source)
    assert len(listed["capi_hostedclusters"]["hosts"]) == len(NAMES), listed

    events = audit_events(server, offset)
    # no request of anyone (the jobs, the proxy sidecars, the conversion shim) was refused by the authorizer; the
    # ValidatingAdmissionPolicy's refusals are admission's, not authorization's
    denied = [(event["user"]["username"], event["verb"], event["requestURI"]) for event in events
              if (event.get("annotations") or {}).get(DECISION) == "forbid"]
    assert not denied, denied[:20]
    unused = {}
    for entry in rules.JOB_ENTRY_POINTS:
        requests = resource_requests(events, user(entry))
        assert requests, "no request of %s in the audit log" % user(entry)
        unused[entry] = unused_rules(entry, requests)
    assert not any(unused.values()), "shipped, not conditional, never used: %s" % json.dumps(unused)
    # the proxy sidecars and the shim ran as their own identities (the rules roles api_proxy and conversion_shim give)
    others = {event["user"]["username"] for event in events if event["user"]["username"].startswith("system:serviceaccount:")}
    assert any(name.startswith("system:serviceaccount:clusters-") for name in others), sorted(others)
    assert any(name.startswith("system:serviceaccount:%s:" % OPERATOR_NAMESPACE) for name in others), sorted(others)


def writes_by(events, username):
    return [(event["verb"], (event.get("objectRef") or {}).get("resource"), event["requestURI"]) for event in events
            if event["user"]["username"] == username
            and is_write({"verb": event["verb"], "resource": (event.get("objectRef") or {}).get("resource", "")})]


def migrate_again(world):
    return run_playbook("migrate_fleet.yml", world["inventories"][rules.MIGRATE], {
        "private_capi_fleet_names": [ROLLED_BACK], "private_capi_fleet_report_root": world["reports"]})


def test_with_one_rule_removed_the_preflight_refuses_before_any_change_and_names_it(world):
    server = world["server"]
    names = rules.role_names(rules.MIGRATE)
    hcp = "clusters-" + ROLLED_BACK
    before = snapshot(server, world["crds"], hcp)
    try:
        # the operator namespace's Deployments: refused once for the management cluster, before the dual operator
        offset = audit_size(server)
        kubectl(server, "apply", "-f", "-", stdin=without_rule(
            rules.MIGRATE, "Role", names[rules.OPERATOR_NAMESPACE],
            lambda rule: not (rule["resources"] == ["deployments"] and "list" in rule["verbs"])))
        refused = migrate_again(world)
        text = output(refused)
        assert refused.returncode != 0, text[-4000:]
        assert "management cluster mc-1: the identity lacks" in text, text[-4000:]
        assert "namespace hypershift: apiGroups" in text and "resources [deployments] verbs [get, list, create, patch]" in text
        assert not writes_by(audit_events(server, offset), user(rules.MIGRATE))

        # one HCP-namespace rule: that HostedCluster is refused, named, and left as it was
        kubectl(server, "apply", "-f", SHIPPED_MIGRATE)
        offset = audit_size(server)
        kubectl(server, "apply", "-f", "-", stdin=without_rule(
            rules.MIGRATE, "ClusterRole", names[rules.HCP_NAMESPACES],
            lambda rule: not (rule["resources"] == ["deployments"] and rule["verbs"] == ["patch"])))
        refused = migrate_again(world)
        text = output(refused)
        assert refused.returncode != 0, text[-4000:]
        assert ("HostedCluster clusters/%s: the identity lacks 1 right(s) migrate uses; nothing was changed" % ROLLED_BACK
                in text), text[-4000:]
        assert "namespace %s: apiGroups" % hcp in text and "resources [deployments] verbs [patch]" in text, text[-4000:]
        assert "Scale the CAPI-dependent Deployments to 0 and back" in text
        assert hostedcluster_states(server)[ROLLED_BACK] == "legacy"
        hcp_writes = [write for write in writes_by(audit_events(server, offset), user(rules.MIGRATE))
                      if "/namespaces/%s/" % hcp in write[2] or "/hostedclusters/%s" % ROLLED_BACK in write[2]]
        assert not hcp_writes, hcp_writes
        assert snapshot(server, world["crds"], hcp) == before
    finally:
        kubectl(server, "apply", "-f", SHIPPED_MIGRATE)
    # granted again, the same run migrates it
    granted = migrate_again(world)
    assert granted.returncode == 0, output(granted)[-4000:]
    assert hostedcluster_states(server)[ROLLED_BACK] == "migrated"
