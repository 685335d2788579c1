"""Values that went through Ansible 2.19 templating are str/int subclasses: conversion must accept them."""
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions import convert_object


class TaggedInt(int):
    """Stands for Ansible's tagged int (templating returns int subclasses)."""


class TaggedStr(str):
    """Stands for Ansible's tagged str."""


def test_templated_integers_and_strings_convert_like_plain_ones():
    mhc = {
        "apiVersion": TaggedStr("cluster.x-k8s.io/v1beta2"),
        "kind": TaggedStr("MachineHealthCheck"),
        "metadata": {"name": "mhc-0", "namespace": "clusters-a"},
        "spec": {
            "clusterName": "a",
            "selector": {"matchLabels": {"mhc": "x"}},
            "checks": {"nodeStartupTimeoutSeconds": TaggedInt(30),
                       "unhealthyNodeConditions": [{"type": "Ready", "status": "False", "timeoutSeconds": TaggedInt(300)}]},
        },
    }
    down = convert_object(mhc, "v1beta1")
    assert down["spec"]["nodeStartupTimeout"] == "30s"
    assert down["spec"]["unhealthyConditions"] == [{"type": "Ready", "status": "False", "timeout": "5m0s"}]
    assert convert_object(down, "v1beta2")["spec"]["checks"] == {
        "nodeStartupTimeoutSeconds": 30, "unhealthyNodeConditions": [{"type": "Ready", "status": "False", "timeoutSeconds": 300}]}
