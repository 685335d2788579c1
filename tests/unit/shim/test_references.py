"""Which CRDs still convert through a Service (plugins/module_utils/shim/references.py)."""
import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.shim.references import (
    conversion_service,
    crds_naming_service,
)


def crd(name, conversion, deleting=False):
    metadata = {"name": name}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-27T00:00:00Z"
    return {"metadata": metadata, "spec": {"group": name.split(".", 1)[1], "conversion": conversion}}


def webhook(namespace="hypershift", name="capi-conversion-webhook-shim", port=None, path="/convert"):
    service = {"namespace": namespace, "name": name, "path": path}
    if port is not None:
        service["port"] = port
    return {"strategy": "Webhook", "webhook": {"clientConfig": {"service": service, "caBundle": "eA=="},
                                               "conversionReviewVersions": ["v1"]}}


CRDS = [
    crd("machines.cluster.hypershift.openshift.io", webhook()),
    crd("clusters.cluster.hypershift.openshift.io", webhook(port=8443, path="/other"), deleting=True),
    crd("machines.cluster.x-k8s.io", webhook(namespace="hypershift", name="operator")),
    crd("awsmachines.infrastructure.cluster.hypershift.openshift.io", webhook(namespace="elsewhere")),
    crd("widgets.example.com", {"strategy": "None"}),
    crd("gadgets.example.com", {"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://x/convert"}}}),
    {"metadata": {"name": "bare.example.com"}, "spec": {"group": "example.com"}},
]


@pytest.mark.parametrize("index, expected", [
    (0, {"namespace": "hypershift", "name": "capi-conversion-webhook-shim", "port": 443, "path": "/convert"}),
    (1, {"namespace": "hypershift", "name": "capi-conversion-webhook-shim", "port": 8443, "path": "/other"}),
    (4, None), (5, None), (6, None),
])
def test_conversion_service(index, expected):
    assert conversion_service(CRDS[index]) == expected


def test_only_the_crds_naming_that_service_count_sorted_with_their_deletion_state():
    assert crds_naming_service(CRDS, "hypershift", "capi-conversion-webhook-shim") == [
        {"name": "clusters.cluster.hypershift.openshift.io", "group": "cluster.hypershift.openshift.io",
         "port": 8443, "path": "/other", "deleting": True},
        {"name": "machines.cluster.hypershift.openshift.io", "group": "cluster.hypershift.openshift.io",
         "port": 443, "path": "/convert", "deleting": False},
    ]


@pytest.mark.parametrize("namespace, name", [("hypershift", "other"), ("other", "capi-conversion-webhook-shim")])
def test_no_crd_names_another_service(namespace, name):
    assert crds_naming_service(CRDS[:2], namespace, name) == []
