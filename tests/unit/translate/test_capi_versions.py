"""Table tests of the CAPI v1beta1 <-> v1beta2 conversion core on the real upstream examples and CRDs."""
import copy
import glob
import json
import os
import re

import pytest
import yaml

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import CapiTranslationError
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions import (
    CONVERSION_DATA_ANNOTATION,
    CONVERTIBLE_KINDS,
    ConversionError,
    convert_object,
    duration_to_seconds,
    parse_go_duration,
    seconds_to_duration,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions_cluster import CLUSTER_ZERO_PATHS
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions_common import split_paths
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions_kinds import (
    POINTER_ZERO_KEPT,
    V1BETA2_ZERO_PATHS,
)
from testenv.upstream import AWS_CRDS, CAPI_EXAMPLES as EXAMPLES
from tests.unit import schema_check
from tests.unit.translate.zeros import without_added_zeros

# Values for the envsubst placeholders of the upstream e2e templates (${VAR}, ${ VAR }, ${VAR:=default}).
TEMPLATE_VALUES = {
    "CLUSTER_NAME": "e2e-cluster", "NAMESPACE": "default", "KUBERNETES_VERSION": "v1.33.0",
    "CONTROL_PLANE_MACHINE_COUNT": "1", "WORKER_MACHINE_COUNT": "2", "DOCKER_SERVICE_CIDRS": "10.128.0.0/12",
    "DOCKER_POD_CIDRS": "192.168.0.0/16", "DOCKER_SERVICE_DOMAIN": "cluster.local",
}
PROVIDER_KINDS = ("DockerCluster", "DockerMachine", "DockerMachineTemplate", "DockerMachinePool", "DevCluster",
                  "DevMachine", "KubeadmConfig", "KubeadmConfigTemplate", "KubeadmControlPlane")
# Referenced provider kinds: the v1beta1 examples (CAPI v1.10) point at v1beta1 provider APIs.
EXAMPLE_REF_VERSIONS = {
    "%s/%s" % (group, kind): "v1beta1"
    for group, kinds in (("infrastructure.cluster.x-k8s.io", PROVIDER_KINDS[:6]),
                         ("bootstrap.cluster.x-k8s.io", PROVIDER_KINDS[6:8]),
                         ("controlplane.cluster.x-k8s.io", PROVIDER_KINDS[8:]))
    for kind in kinds
}
# Empty Go struct: the v1beta2 schema (minProperties: 1) forbids `metadata: {}`, so it cannot survive
# v1beta1 -> v1beta2; upstream's own round trip writes `{}` back on controlPlane *and* on every
# machineDeployment, so no converter can reproduce this file byte-for-byte.
EMPTY_STRUCT_IN_V1BETA1 = {("templates__cluster-template-development.yaml", "Cluster"): ("spec", "topology", "controlPlane", "metadata")}
# The v1beta1 files are CAPI v1.10.0, the v1beta2 files main: content the releases changed on purpose.
RELEASE_DRIFT = {
    ("cluster-template-kcp-adoption__step1__cluster-with-cp0.yaml", "Cluster"): {"spec.infrastructureRef.kind"},  # Docker* -> Dev*
    ("cluster-template-kcp-adoption__step1__cluster-with-cp0.yaml", "Machine"): {"spec.infrastructureRef.kind"},
    ("examples__machine-pool.yaml", "MachinePool"): {"spec.template.spec.version"},  # v1.33.0-rc.1 -> v1.37.0-rc.1
    ("examples__simple-cluster-without-kcp.yaml", "Machine"): {"spec.version"},
    ("examples__simple-cluster-without-kcp.yaml", "MachineDeployment"): {"spec.template.spec.version"},
    ("examples__simple-cluster.yaml", "MachineDeployment"): {"spec.template.spec.version"},
}


def envsubst(text):
    def value(match):
        return TEMPLATE_VALUES.get(match.group(1), match.group(2) or "")
    return re.sub(r"\$\{\s*([A-Z_]+)\s*(?::=([^}]*))?\}", value, text)


def load_examples(version):
    docs = []
    for path in sorted(glob.glob(os.path.join(EXAMPLES, version, "*.yaml"))):
        with open(path) as handle:
            for doc in yaml.safe_load_all(envsubst(handle.read())):
                if doc and doc["kind"] in CONVERTIBLE_KINDS + ("ClusterClass",):
                    docs.append((os.path.basename(path), doc))
    return docs


def example_params(version):
    return [pytest.param(name, doc, id="%s-%s" % (name, doc["kind"])) for name, doc in load_examples(version)
            if doc["kind"] != "ClusterClass"]


def differing_paths(left, right, path=""):
    if isinstance(left, dict) and isinstance(right, dict):
        found = set()
        for key in set(left) | set(right):
            child = "%s.%s" % (path, key) if path else key
            found |= {child} if key not in left or key not in right else differing_paths(left[key], right[key], child)
        return found
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        return set().union(*[differing_paths(a, b, "%s[%d]" % (path, i)) for i, (a, b) in enumerate(zip(left, right))])
    return set() if left == right else {path}


def test_every_example_kind_is_covered():
    kinds = {doc["kind"] for version in ("v1beta1", "v1beta2") for _name, doc in load_examples(version)}
    assert kinds == {"Cluster", "Machine", "MachineDeployment", "MachinePool", "MachineHealthCheck", "ClusterClass"}
    assert len(example_params("v1beta1")) == len(example_params("v1beta2")) == 12


@pytest.mark.parametrize("name, doc", example_params("v1beta2"))
def test_v1beta2_example_round_trips_and_converts_to_valid_v1beta1(name, doc):
    spoke = convert_object(doc, "v1beta1", ref_versions=EXAMPLE_REF_VERSIONS)
    assert spoke["apiVersion"] == "cluster.x-k8s.io/v1beta1"
    assert schema_check.problems(spoke) == []
    assert without_added_zeros(convert_object(spoke, "v1beta2", ref_versions=EXAMPLE_REF_VERSIONS), doc) == doc


@pytest.mark.parametrize("name, doc", example_params("v1beta1"))
def test_v1beta1_example_round_trips_and_converts_to_valid_v1beta2(name, doc):
    assert schema_check.problems(doc) == []
    hub = convert_object(doc, "v1beta2")
    assert hub["apiVersion"] == "cluster.x-k8s.io/v1beta2"
    assert schema_check.problems(hub) == []
    back = convert_object(hub, "v1beta1", ref_versions=EXAMPLE_REF_VERSIONS)
    expected = copy.deepcopy(doc)
    empty_struct = EMPTY_STRUCT_IN_V1BETA1.get((name, doc["kind"]))
    if empty_struct:
        holder = expected
        for key in empty_struct[:-1]:
            holder = holder[key]
        assert holder.pop(empty_struct[-1]) == {}
    assert without_added_zeros(back, expected) == expected


@pytest.mark.parametrize("name, doc", example_params("v1beta1"))
def test_release_pairs_agree_after_conversion_except_listed_drift(name, doc):
    hub_pair = {(pair_name, pair["kind"], pair["metadata"]["name"]): pair for pair_name, pair in load_examples("v1beta2")}
    hub_example = hub_pair[(name, doc["kind"], doc["metadata"]["name"])]
    drift = RELEASE_DRIFT.get((name, doc["kind"]), set())
    assert differing_paths(without_added_zeros(convert_object(doc, "v1beta2"), hub_example), hub_example) == drift
    spoke_from_hub = convert_object(hub_example, "v1beta1", ref_versions=EXAMPLE_REF_VERSIONS)
    expected_spoke_drift = drift | ({".".join(EMPTY_STRUCT_IN_V1BETA1[(name, doc["kind"])])}
                                    if (name, doc["kind"]) in EMPTY_STRUCT_IN_V1BETA1 else set())
    assert differing_paths(spoke_from_hub, doc) == expected_spoke_drift


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_clusterclass_is_refused_whole(version):
    (name, clusterclass), = [(name, doc) for name, doc in load_examples(version) if doc["kind"] == "ClusterClass"]
    target = "v1beta2" if version == "v1beta1" else "v1beta1"
    with pytest.raises(ConversionError, match="ClusterClass default/quick-start|ClusterClass quick-start.*not supported"):
        convert_object(clusterclass, target, ref_versions=EXAMPLE_REF_VERSIONS)


def test_schema_checker_reports_type_errors_and_pruned_fields():
    (_name, machine), = [item for item in load_examples("v1beta2") if item[1]["kind"] == "Machine"][:1]
    broken = copy.deepcopy(machine)
    broken["spec"]["minReadySeconds"] = "ten"
    broken["spec"]["nodeDrainTimeout"] = "10s"  # a v1beta1 field: v1beta2 would prune it
    found = schema_check.problems(broken)
    assert any("minReadySeconds" in problem for problem in found)
    assert "pruned by the API server: spec.nodeDrainTimeout" in found


@pytest.mark.parametrize("kind", sorted(V1BETA2_ZERO_PATHS) + ["Cluster"])
def test_zero_value_tables_match_the_v1beta2_schema(kind):
    """The omitempty table in the code is exactly the optional v1beta2 fields that reject their zero value (less the
    pointer fields whose zero upstream keeps)."""
    schema = schema_check.version_schema(schema_check.crd_by_kind(kind), "v1beta2")
    derived = []

    def walk(node, path, required):
        if node.get("x-kubernetes-preserve-unknown-fields"):
            return
        zero_invalid = (node.get("minProperties", 0) >= 1 or node.get("minItems", 0) >= 1 or node.get("minLength", 0) >= 1
                        or (node.get("type") == "integer" and node.get("minimum", 0) >= 1))
        if zero_invalid and not required and path and path not in POINTER_ZERO_KEPT:
            derived.append(path)
        for key, child in (node.get("properties") or {}).items():
            if path or key not in ("apiVersion", "kind", "metadata"):
                walk(child, "%s.%s" % (path, key) if path else key, key in (node.get("required") or ()))
        if isinstance(node.get("items"), dict):
            walk(node["items"], path + "[]", True)

    walk(schema, "", True)
    table = CLUSTER_ZERO_PATHS if kind == "Cluster" else V1BETA2_ZERO_PATHS[kind]
    assert table == split_paths(derived)


# ---------------------------------------------------------------------------------------------
# Rules, one by one
# ---------------------------------------------------------------------------------------------

def machine(version="v1beta2", group="cluster.x-k8s.io", **status):
    obj = {
        "apiVersion": "%s/%s" % (group, version), "kind": "Machine",
        "metadata": {"name": "worker-0", "namespace": "clusters-prod-01"},
        "spec": {"clusterName": "prod-01", "bootstrap": {"dataSecretName": "worker-0-user-data"},
                 "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine", "name": "worker-0"}},
    }
    if status:
        obj["status"] = status
    return obj


AWS_REFS = {"infrastructure.cluster.x-k8s.io/AWSMachine": "v1beta2"}


def test_machine_v1beta2_only_fields_travel_in_the_annotation_and_are_consumed():
    hub = machine(phase="Updating", failureDomain="us-east-1a",
                  initialization={"bootstrapDataSecretCreated": False, "infrastructureProvisioned": True},
                  nodeRef={"name": "ip-10-0-0-1"}, conditions=[{"type": "Ready", "status": "True", "reason": "Ready",
                                                                "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z"}])
    hub["spec"]["minReadySeconds"] = 0
    hub["spec"]["deletion"] = {"nodeDrainTimeoutSeconds": 300}
    spoke = convert_object(hub, "v1beta1", ref_versions=AWS_REFS)
    assert spoke["spec"]["infrastructureRef"] == {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachine",
                                                  "name": "worker-0", "namespace": "clusters-prod-01"}
    assert spoke["spec"]["nodeDrainTimeout"] == "5m0s" and "deletion" not in spoke["spec"]
    assert spoke["status"]["phase"] == "Running"  # Updating is not a v1beta1 phase
    assert spoke["status"]["bootstrapReady"] is False and spoke["status"]["infrastructureReady"] is True
    assert spoke["status"]["nodeRef"] == {"apiVersion": "v1", "kind": "Node", "name": "ip-10-0-0-1"}
    assert spoke["status"]["v1beta2"]["conditions"] == hub["status"]["conditions"]
    assert json.loads(spoke["metadata"]["annotations"][CONVERSION_DATA_ANNOTATION]) == {
        "spec": {"minReadySeconds": 0},
        "status": {"phase": "Updating", "failureDomain": "us-east-1a",
                   "initialization": {"bootstrapDataSecretCreated": False, "infrastructureProvisioned": True}},
    }
    assert schema_check.problems(spoke) == []
    assert convert_object(spoke, "v1beta2") == hub


def test_without_annotation_false_and_zero_become_unset_as_upstream_does():
    spoke = {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster", "metadata": {"name": "c", "namespace": "ns"},
             "spec": {"paused": False}, "status": {"infrastructureReady": False, "controlPlaneReady": True}}
    hub = convert_object(spoke, "v1beta2")
    assert hub["spec"] == {} or "paused" not in hub["spec"]
    assert hub["status"] == {"initialization": {"controlPlaneInitialized": True}}
    mhc = {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineHealthCheck", "metadata": {"name": "m", "namespace": "ns"},
           "spec": {"clusterName": "c", "selector": {}}, "status": {"expectedMachines": 0, "currentHealthy": 2}}
    assert convert_object(mhc, "v1beta2")["status"] == {"currentHealthy": 2}


# Upstream v1beta1 serializes these status bools without omitempty (api/core/v1beta1 machine_types.go, cluster_types.go): a
# v1beta1 reader always sees them, false when v1beta2 leaves them unset.
ALWAYS_SERIALIZED_BOOLS = {
    "Cluster": (("infrastructureReady", "infrastructureProvisioned"), ("controlPlaneReady", "controlPlaneInitialized")),
    "Machine": (("bootstrapReady", "bootstrapDataSecretCreated"), ("infrastructureReady", "infrastructureProvisioned")),
    "MachinePool": (("bootstrapReady", "bootstrapDataSecretCreated"), ("infrastructureReady", "infrastructureProvisioned")),
}


def _hub_with_status(kind, status):
    return {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": kind, "metadata": {"name": "x", "namespace": "ns"},
            "status": copy.deepcopy(status)}


@pytest.mark.parametrize("kind", sorted(ALWAYS_SERIALIZED_BOOLS))
@pytest.mark.parametrize("initialization", [None, {}, "first-only", "second-only", "both-true", "both-false"])
def test_down_conversion_always_writes_the_non_omitempty_status_bools(kind, initialization):
    pairs = ALWAYS_SERIALIZED_BOOLS[kind]
    status = {"phase": "Provisioning"}
    if initialization == "first-only":
        status["initialization"] = {pairs[0][1]: True}
    elif initialization == "second-only":
        status["initialization"] = {pairs[1][1]: True}
    elif initialization in ("both-true", "both-false"):
        status["initialization"] = {new: initialization == "both-true" for _old, new in pairs}
    elif initialization == {}:
        status["initialization"] = {}
    hub = _hub_with_status(kind, status)
    spoke = convert_object(hub, "v1beta1")
    for old, new in pairs:
        expected = (status.get("initialization") or {}).get(new, False)
        assert spoke["status"][old] is expected, (old, spoke["status"])
    assert schema_check.problems(spoke) == []
    # and back: an unset v1beta2 field stays unset, an explicit false is kept through the annotation
    back = convert_object(spoke, "v1beta2")
    expected = hub if status.get("initialization") != {} else _hub_with_status(kind, {"phase": "Provisioning"})
    if kind == "MachinePool":  # upstream's up-conversion always writes these (the differential test)
        expected["status"].update(replicas=0, deprecated={"v1beta1": {}})
    assert back == expected


@pytest.mark.parametrize("kind", sorted(ALWAYS_SERIALIZED_BOOLS))
def test_false_flags_of_a_v1beta1_object_survive_the_round_trip(kind):
    pairs = ALWAYS_SERIALIZED_BOOLS[kind]
    spoke = {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": kind, "metadata": {"name": "x", "namespace": "ns"},
             "status": dict({old: False for old, _new in pairs}, phase="Pending")}
    back = convert_object(convert_object(spoke, "v1beta2"), "v1beta1")
    assert without_added_zeros(back, spoke) == spoke


@pytest.mark.parametrize("kind", sorted(ALWAYS_SERIALIZED_BOOLS))
def test_an_object_without_status_gets_none(kind):
    """A manifest nobody reconciled yet has no status; converting it down does not invent one."""
    hub = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": kind, "metadata": {"name": "x", "namespace": "ns"}}
    assert "status" not in convert_object(hub, "v1beta1")


@pytest.mark.parametrize("hub_fields, annotation", [
    ({"spec": {"paused": False}}, {"spec": {"paused": False}}),
    ({"spec": {"paused": True}}, None),
    ({"spec": {}, "status": {"initialization": {"infrastructureProvisioned": False}}},
     {"status": {"initialization": {"infrastructureProvisioned": False}}}),
])
def test_cluster_pointer_intent_uses_the_annotation_only_when_needed(hub_fields, annotation):
    hub = {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Cluster",
           "metadata": {"name": "prod-01", "namespace": "clusters-prod-01"}}
    hub.update(copy.deepcopy(hub_fields))
    spoke = convert_object(hub, "v1beta1")
    assert spoke["apiVersion"] == "cluster.hypershift.openshift.io/v1beta1"  # the group is kept
    annotations = spoke["metadata"].get("annotations", {})
    assert (json.loads(annotations[CONVERSION_DATA_ANNOTATION]) if annotation else annotations) == (annotation or {})
    assert convert_object(spoke, "v1beta2") == hub


def test_machinehealthcheck_layout_and_zero_counters():
    hub = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineHealthCheck",
           "metadata": {"name": "mhc", "namespace": "clusters-prod-01"},
           "spec": {"clusterName": "prod-01", "selector": {"matchLabels": {"a": "b"}},
                    "checks": {"nodeStartupTimeoutSeconds": 1200,
                               "unhealthyNodeConditions": [{"type": "Ready", "status": "Unknown", "timeoutSeconds": 300}]},
                    "remediation": {"triggerIf": {"unhealthyLessThanOrEqualTo": "40%"},
                                    "templateRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
                                                    "kind": "AWSRemediationTemplate", "name": "r"}}},
           "status": {"expectedMachines": 0, "currentHealthy": 0, "remediationsAllowed": 1}}
    spoke = convert_object(hub, "v1beta1")
    assert spoke["spec"] == {
        "clusterName": "prod-01", "selector": {"matchLabels": {"a": "b"}}, "nodeStartupTimeout": "20m0s",
        "unhealthyConditions": [{"type": "Ready", "status": "Unknown", "timeout": "5m0s"}], "maxUnhealthy": "40%",
        "remediationTemplate": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSRemediationTemplate",
                                "name": "r", "namespace": "clusters-prod-01"},
    }
    assert json.loads(spoke["metadata"]["annotations"][CONVERSION_DATA_ANNOTATION]) == {
        "status": {"expectedMachines": 0, "currentHealthy": 0, "remediationsAllowed": 1}}
    assert convert_object(spoke, "v1beta2") == hub


def test_machinedeployment_rollout_strategy_and_dropped_fields():
    spoke = {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment", "metadata": {"name": "md", "namespace": "ns"},
             "spec": {"clusterName": "c", "selector": {}, "minReadySeconds": 5, "progressDeadlineSeconds": 600,
                      "revisionHistoryLimit": 1, "rolloutAfter": "2025-01-01T00:00:00Z",
                      "strategy": {"type": "RollingUpdate", "remediation": {"maxInFlight": 1},
                                   "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "10%", "deletePolicy": "Oldest"}},
                      "machineNamingStrategy": {"template": "{{ .machineSet.name }}-{{ .random }}"},
                      "template": {"spec": {"clusterName": "c", "bootstrap": {},
                                            "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
                                                                  "kind": "AWSMachineTemplate", "name": "t",
                                                                  "namespace": "ns", "uid": "u-1"}}}},
             "status": {"replicas": 3, "readyReplicas": 2, "v1beta2": {"readyReplicas": 1, "upToDateReplicas": 3}}}
    hub = convert_object(spoke, "v1beta2")
    assert hub["spec"] == {
        "clusterName": "c", "selector": {}, "rollout": {"after": "2025-01-01T00:00:00Z", "strategy": {
            "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "10%"}}},
        "deletion": {"order": "Oldest"}, "remediation": {"maxInFlight": 1},
        "machineNaming": {"template": "{{ .machineSet.name }}-{{ .random }}"},
        "template": {"spec": {"clusterName": "c", "bootstrap": {}, "minReadySeconds": 5, "infrastructureRef": {
            "apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachineTemplate", "name": "t"}}},
    }
    assert hub["status"] == {"replicas": 3, "readyReplicas": 1, "upToDateReplicas": 3, "deprecated": {"v1beta1": {
        "readyReplicas": 2, "updatedReplicas": 0, "availableReplicas": 0, "unavailableReplicas": 0}}}
    back = convert_object(hub, "v1beta1", ref_versions={"infrastructure.cluster.x-k8s.io/AWSMachineTemplate": "v1beta2"})
    del spoke["spec"]["progressDeadlineSeconds"], spoke["spec"]["revisionHistoryLimit"]  # dropped upstream
    del spoke["spec"]["template"]["spec"]["infrastructureRef"]["uid"]
    assert without_added_zeros(back, spoke) == spoke


def test_machineset_min_ready_seconds_zero_is_unset_and_no_annotation_is_written():
    spoke = {"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineSet", "metadata": {"name": "ms", "namespace": "ns"},
             "spec": {"clusterName": "c", "selector": {}, "minReadySeconds": 0, "deletePolicy": "Newest",
                      "template": {"spec": {"clusterName": "c", "bootstrap": {}, "infrastructureRef": {
                          "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachine", "name": "a"}}}}}
    hub = convert_object(spoke, "v1beta2")
    assert "minReadySeconds" not in hub["spec"]["template"]["spec"] and hub["spec"]["deletion"] == {"order": "Newest"}
    hub["spec"]["template"]["spec"]["minReadySeconds"] = 0
    assert "annotations" not in convert_object(hub, "v1beta1", ref_versions=AWS_REFS)["metadata"]


def test_cluster_failure_domains_and_topology_health_check():
    hub = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "c", "namespace": "ns"},
           "spec": {"topology": {"classRef": {"name": "quick-start", "namespace": "classes"}, "version": "v1.33.0",
                                 "controlPlane": {"deletion": {"nodeDeletionTimeoutSeconds": 10},
                                                  "healthCheck": {"enabled": True, "checks": {"nodeStartupTimeoutSeconds": 60}}},
                                 "workers": {"machineDeployments": [{
                                     "class": "default-worker", "name": "md-0", "deletion": {"order": "Random"},
                                     "rollout": {"strategy": {"type": "OnDelete"}},
                                     "healthCheck": {"remediation": {"maxInFlight": "50%"}}}]}}},
           "status": {"failureDomains": [{"name": "a", "controlPlane": True}, {"name": "b", "attributes": {"z": "1"}}]}}
    spoke = convert_object(hub, "v1beta1")
    assert spoke["spec"]["topology"] == {
        "class": "quick-start", "classNamespace": "classes", "version": "v1.33.0",
        "controlPlane": {"nodeDeletionTimeout": "10s", "machineHealthCheck": {"enable": True, "nodeStartupTimeout": "1m0s"}},
        "workers": {"machineDeployments": [{"class": "default-worker", "name": "md-0", "strategy": {
            "type": "OnDelete", "rollingUpdate": {"deletePolicy": "Random"}, "remediation": {"maxInFlight": "50%"}}}]},
    }
    assert spoke["status"]["failureDomains"] == {"a": {"controlPlane": True}, "b": {"attributes": {"z": "1"}}}
    assert schema_check.problems(spoke) == []
    hub["status"]["failureDomains"][1]["controlPlane"] = False  # v1beta1 bool -> *bool: upstream always sets it
    assert convert_object(spoke, "v1beta2") == hub


@pytest.mark.parametrize("text, seconds", [
    ("10s", 10), ("5m0s", 300), ("1h", 3600), ("1.9s", 1), ("-1.9s", -1), ("1500ms", 1), ("0", 0),
    ("2562047h47m16.854775807s", 2147483647), ("1h2m3.5s", 3723),
])
def test_durations_truncate_and_cap_like_convert_to_seconds(text, seconds):
    assert duration_to_seconds(text) == seconds


@pytest.mark.parametrize("seconds, text", [(0, "0s"), (10, "10s"), (90, "1m30s"), (3600, "1h0m0s"), (-5, "-5s")])
def test_seconds_print_like_go_duration_string(seconds, text):
    assert seconds_to_duration(seconds) == text
    assert parse_go_duration(text) == seconds * 10 ** 9


@pytest.mark.parametrize("bad", ["", "10", "1d", "s", "1.2.3s", "9999999999h"])
def test_invalid_durations_raise_named_errors(bad):
    spoke = machine("v1beta1")
    spoke["spec"]["infrastructureRef"] = {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachine", "name": "a"}
    spoke["spec"]["nodeDrainTimeout"] = bad
    with pytest.raises(ConversionError, match="Machine clusters-prod-01/worker-0: cannot convert spec.nodeDrainTimeout"):
        convert_object(spoke, "v1beta2")


def aws_machine_crd(labels):
    with open(os.path.join(AWS_CRDS, "infrastructure.cluster.x-k8s.io_awsmachines.yaml")) as handle:
        crd = yaml.safe_load(handle)
    crd["metadata"]["labels"] = labels  # what `hypershift install` adds (openshift/hypershift cmd/install/assets/crds)
    return crd


@pytest.mark.parametrize("labels, version", [
    ({"cluster.x-k8s.io/v1beta1": "v1beta2"}, "v1beta2"),
    ({"cluster.x-k8s.io/v1beta1": "v1alpha4_v1beta1_v1beta2"}, "v1beta2"),
    ({"cluster.x-k8s.io/v1beta1": "v1beta2_v1", "cluster.x-k8s.io/v1beta2": "v1beta1"}, "v1beta1"),  # v1beta2 label first
])
def test_ref_version_comes_from_the_crd_contract_label(labels, version):
    spoke = convert_object(machine(), "v1beta1", crds=[aws_machine_crd(labels)])
    assert spoke["spec"]["infrastructureRef"]["apiVersion"] == "infrastructure.cluster.x-k8s.io/" + version


def test_ref_versions_accept_either_group_spelling():
    private = machine(group="cluster.hypershift.openshift.io")
    private["spec"]["infrastructureRef"]["apiGroup"] = "infrastructure.cluster.hypershift.openshift.io"
    spoke = convert_object(private, "v1beta1", ref_versions=AWS_REFS)
    assert spoke["spec"]["infrastructureRef"]["apiVersion"] == "infrastructure.cluster.hypershift.openshift.io/v1beta2"
    standard = convert_object(machine(), "v1beta1",
                              ref_versions={"infrastructure.cluster.hypershift.openshift.io/AWSMachine": "v1beta1"})
    assert standard["spec"]["infrastructureRef"]["apiVersion"] == "infrastructure.cluster.x-k8s.io/v1beta1"


def test_missing_ref_version_is_an_error_that_says_what_to_pass():
    with pytest.raises(ConversionError) as raised:
        convert_object(machine(), "v1beta1", crds=[aws_machine_crd({"cluster.x-k8s.io/v1beta1": "v1beta2"})][:0])
    message = str(raised.value)
    for part in ("Machine clusters-prod-01/worker-0", "spec.infrastructureRef", "infrastructure.cluster.x-k8s.io",
                 "AWSMachine", "ref_versions", "crds"):
        assert part in message
    with pytest.raises(ConversionError, match="has no contract label"):
        convert_object(machine(), "v1beta1", crds=[aws_machine_crd({})])


@pytest.mark.parametrize("obj, target, message", [
    (dict(machine(), apiVersion="cluster.x-k8s.io/v1alpha4"), "v1beta1", "source version 'v1alpha4' is not supported"),
    (dict(machine(), kind="Widget"), "v1beta1", "kind 'Widget' has no v1beta1 <-> v1beta2 rules"),
    (dict(machine(), apiVersion="infrastructure.cluster.x-k8s.io/v1beta2"), "v1beta1", "not the CAPI core group"),
    (dict(machine(), apiVersion="v1"), "v1beta1", "expected '<group>/<version>'"),
    (machine(), "v1", "target_version must be one of"),
])
def test_unsupported_input_raises_conversion_error_naming_the_object(obj, target, message):
    with pytest.raises(ConversionError, match=re.escape(message)):
        convert_object(obj, target, ref_versions=AWS_REFS)
    assert issubclass(ConversionError, CapiTranslationError)


def test_corrupt_annotation_is_reported():
    spoke = convert_object(dict(machine(), status={"phase": "Updating"}), "v1beta1", ref_versions=AWS_REFS)
    spoke["metadata"]["annotations"][CONVERSION_DATA_ANNOTATION] = "{not json"
    with pytest.raises(ConversionError, match="not valid JSON"):
        convert_object(spoke, "v1beta2")


def test_lists_convert_every_item_and_keep_item_shape():
    machine_list = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineList", "metadata": {"resourceVersion": "7"},
                    "items": [machine(), {key: value for key, value in machine().items() if key not in ("apiVersion", "kind")}]}
    spoke = convert_object(machine_list, "v1beta1", ref_versions=AWS_REFS)
    assert spoke["apiVersion"] == "cluster.x-k8s.io/v1beta1" and spoke["metadata"] == {"resourceVersion": "7"}
    assert spoke["items"][0]["apiVersion"] == "cluster.x-k8s.io/v1beta1" and "apiVersion" not in spoke["items"][1]
    assert spoke["items"][1]["spec"]["infrastructureRef"]["apiVersion"] == "infrastructure.cluster.x-k8s.io/v1beta2"
    assert convert_object(spoke, "v1beta2") == machine_list
    with pytest.raises(ConversionError, match=r"MachineList <no name> items\[0\]"):
        convert_object(dict(machine_list, items=[dict(machine(), kind="Widget")]), "v1beta1", ref_versions=AWS_REFS)


def test_input_is_never_mutated_output_is_deterministic_and_same_version_is_a_copy():
    docs = [doc for _name, doc in load_examples("v1beta2") if doc["kind"] != "ClusterClass"]
    snapshot = copy.deepcopy(docs)
    first = [convert_object(doc, "v1beta1", ref_versions=EXAMPLE_REF_VERSIONS) for doc in docs]
    second = [convert_object(doc, "v1beta1", ref_versions=EXAMPLE_REF_VERSIONS) for doc in docs]
    assert docs == snapshot
    assert json.dumps(first) == json.dumps(second)
    for doc in docs:
        same = convert_object(doc, "v1beta2")
        assert same == doc and same is not doc and same["metadata"] is not doc["metadata"]


# ---------------------------------------------------------------------------------------------
# Found by the differential test against upstream (tests/integration/conversion): each case as upstream converts it
# ---------------------------------------------------------------------------------------------

def _spoke(kind, **fields):
    return dict({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": kind, "metadata": {"name": "x", "namespace": "ns"}},
                **fields)


def _with_data(obj, data):
    obj["metadata"]["annotations"] = {CONVERSION_DATA_ANNOTATION: json.dumps(data)}
    return obj


@pytest.mark.parametrize("spoke, expected", [
    # (a) the annotation's intent applies to an object without spec or status too
    (_with_data(_spoke("Machine"), {"status": {"initialization": {"bootstrapDataSecretCreated": False}}}),
     {"status": {"initialization": {"bootstrapDataSecretCreated": False}}}),
    (_with_data(_spoke("Cluster"), {"spec": {"paused": False}}), {"spec": {"paused": False}}),
    # (b) a failure domain's controlPlane is a *bool upstream always sets
    (_spoke("Cluster", status={"failureDomains": {"a": {}, "b": {"controlPlane": True}}}),
     {"status": {"failureDomains": [{"name": "a", "controlPlane": False}, {"name": "b", "controlPlane": True}]}}),
    # (c) the counters upstream always writes, also for an object without status
    (_spoke("MachineSet"), {"status": {"replicas": 0, "deprecated": {"v1beta1": {
        "readyReplicas": 0, "availableReplicas": 0, "fullyLabeledReplicas": 0}}}}),
    (_spoke("MachineDeployment", status={"replicas": 2, "readyReplicas": 1}), {"status": {"replicas": 2, "deprecated": {
        "v1beta1": {"readyReplicas": 1, "updatedReplicas": 0, "availableReplicas": 0, "unavailableReplicas": 0}}}}),
    (_spoke("MachinePool"), {"status": {"replicas": 0, "deprecated": {"v1beta1": {}}}}),
    # a *string keeps its "" (schema or not)
    (_spoke("Machine", status={"failureMessage": ""}), {"status": {"deprecated": {"v1beta1": {"failureMessage": ""}}}}),
], ids=["machine-status-intent", "cluster-spec-intent", "failure-domain-control-plane", "machineset-counters",
        "machinedeployment-counters", "machinepool-deprecated", "failure-message-pointer"])
def test_up_conversion_writes_what_upstream_writes(spoke, expected):
    hub = convert_object(spoke, "v1beta2")
    assert {key: hub[key] for key in expected if key in hub} == expected
    assert CONVERSION_DATA_ANNOTATION not in hub["metadata"].get("annotations", {})


@pytest.mark.parametrize("network, expected", [
    ({"services": {}, "pods": {"cidrBlocks": ["10.128.0.0/14"]}}, {"pods": {"cidrBlocks": ["10.128.0.0/14"]}}),
    ({"services": {"cidrBlocks": None}}, None),
    ({"services": {"cidrBlocks": []}, "serviceDomain": ""}, {"services": {"cidrBlocks": []}}),
])
def test_down_conversion_leaves_zero_structs_unset_as_upstream_does(network, expected):
    """(d) a v1beta2 struct that is zero becomes an unset v1beta1 pointer (upstream's reflect.DeepEqual with zero);
    a JSON list, even empty, is not zero there."""
    hub = {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "x", "namespace": "ns"},
           "spec": {"clusterNetwork": network, "topology": {"workers": {}}}}
    spec = convert_object(hub, "v1beta1")["spec"]
    assert "topology" not in spec
    if expected is None:
        assert "clusterNetwork" not in spec
    else:
        assert {k: v for k, v in spec["clusterNetwork"].items() if v != ""} == expected
