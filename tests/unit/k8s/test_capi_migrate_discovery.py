"""capi_migrate_discovery (served resources from discovery documents, the moved kinds of move/kinds.py) and the retry/parallel helpers it relies on."""
import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    AGENT_EXTRA_GROUPS,
    TO_PRIVATE,
    TO_STANDARD,
    GroupMap,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.discovery import DiscoveryError, _from_aggregated
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.kinds import dependent_resources, moved_kinds
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiError, call_with_retries, parallel_map


def resource(plural, kind, status=True, namespaced=True, verbs=("get", "list", "create", "update", "patch", "delete")):
    entry = {"resource": plural, "responseKind": {"kind": kind}, "scope": "Namespaced" if namespaced else "Cluster",
             "verbs": list(verbs)}
    if status:
        entry["subresources"] = [{"subresource": "status"}]
    return entry


def group(name, *versions):
    return {"metadata": {"name": name}, "versions": [{"version": version, "resources": resources}
                                                     for version, resources in versions]}


INFRA = [("v1beta2", [resource("awsmachines", "AWSMachine")]),
         ("v1alpha1", [resource("kubevirtmachines", "KubevirtMachine"), resource("awsmachines", "AWSMachine")])]
DOCUMENT = {"kind": "APIGroupDiscoveryList", "items": [
    group("", ("v1", [resource("secrets", "Secret", status=False), resource("events", "Event", status=False),
                      resource("namespaces", "Namespace", namespaced=False)])),
    group("cluster.x-k8s.io", ("v1beta2", [resource("machines", "Machine")]), ("v1beta1", [resource("machines", "Machine")])),
    group("cluster.hypershift.openshift.io", ("v1beta2", [resource("machines", "Machine")])),
    group("infrastructure.cluster.x-k8s.io", *INFRA),
    group("infrastructure.cluster.hypershift.openshift.io", *INFRA),
    group("capi-provider.agent-install.openshift.io", ("v1beta1", [resource("agentmachines", "AgentMachine")])),
    group("hypershift.openshift.io", ("v1beta1", [resource("hostedcontrolplanes", "HostedControlPlane")])),
]}


def test_each_kind_moves_in_its_most_preferred_served_version():
    served = _from_aggregated(DOCUMENT)
    moved, unserved = moved_kinds(served, GroupMap(), TO_PRIVATE)
    assert sorted((kind.kind, kind.version, kind.target_group) for kind in moved) == [
        ("AWSMachine", "v1beta2", "infrastructure.cluster.hypershift.openshift.io"),
        ("KubevirtMachine", "v1alpha1", "infrastructure.cluster.hypershift.openshift.io"),
        ("Machine", "v1beta2", "cluster.hypershift.openshift.io")]
    assert unserved == []
    back, _unserved = moved_kinds(served, GroupMap(), TO_STANDARD)
    assert {kind.source_group for kind in back} == {"cluster.hypershift.openshift.io", "infrastructure.cluster.hypershift.openshift.io"}


def test_agent_moves_only_with_extra_groups_and_needs_its_private_twin():
    served = _from_aggregated(DOCUMENT)
    moved, unserved = moved_kinds(served, GroupMap(AGENT_EXTRA_GROUPS), TO_PRIVATE)
    assert "AgentMachine" not in {kind.kind for kind in moved}
    [(missing, why)] = unserved
    assert missing.kind == "AgentMachine" and "capi-provider.agent-install.hypershift.openshift.io" in why
    assert "private_crd_render" in why


def test_kinds_narrow_and_unknown_names_fail_listing_what_is_served():
    served = _from_aggregated(DOCUMENT)
    moved, _unserved = moved_kinds(served, GroupMap(), TO_PRIVATE, kinds=["machines.cluster.x-k8s.io", "AWSMachine"])
    assert sorted(kind.kind for kind in moved) == ["AWSMachine", "Machine"]
    with pytest.raises(DiscoveryError, match=r"kinds: nodes not served .*served: .*AWSMachine \(infrastructure"):
        moved_kinds(served, GroupMap(), TO_PRIVATE, kinds=["nodes"])


def test_dependent_scan_covers_everything_not_moved_but_events():
    served = _from_aggregated(DOCUMENT)
    moved, _unserved = moved_kinds(served, GroupMap(), TO_PRIVATE)
    scanned = sorted((resource.group, resource.plural) for resource in dependent_resources(served, moved))
    assert scanned == [("", "secrets"), ("capi-provider.agent-install.openshift.io", "agentmachines"),
                       ("hypershift.openshift.io", "hostedcontrolplanes")]
    assert [r.plural for r in dependent_resources(served, moved, ["hostedcontrolplanes"])] == ["hostedcontrolplanes"]


def test_call_with_retries_retries_transient_errors_only():
    attempts = []

    def flaky():
        attempts.append(1)
        if len(attempts) < 3:
            raise ApiError(503 if len(attempts) == 1 else None, "ServiceUnavailable", "busy", "get x")
        return "ok"

    assert call_with_retries(flaky, sleep=lambda _s: None) == "ok" and len(attempts) == 3

    def forbidden():
        attempts.append(1)
        raise ApiError(403, "Forbidden", "no", "create x")

    attempts.clear()
    with pytest.raises(ApiError, match="create x failed: no"):
        call_with_retries(forbidden, sleep=lambda _s: None)
    assert len(attempts) == 1


def test_parallel_map_keeps_order_and_raises_the_first_error():
    assert parallel_map(lambda n: n * n, range(20), 4) == [n * n for n in range(20)]

    def boom(n):
        if n == 3:
            raise ValueError("item 3")
        return n

    with pytest.raises(ValueError, match="item 3"):
        parallel_map(boom, range(10), 4)
