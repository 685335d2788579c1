"""Realistic hosted-control-plane (HCP) namespaces for tests, benchmarks and the demo.

Shapes follow HyperShift `main` with CAPI >= 1.11 (its CRDs in testenv/upstream/hypershift, its install notes):
core CAPI objects in `cluster.x-k8s.io/v1beta2` (v1beta2 references carry `apiGroup`), providers in the
version their CRDs store (AWS v1beta2, Azure v1beta1, KubeVirt v1alpha1, Agent v1beta1). Per HCP namespace:

* Cluster `<infraID>` (finalizer, paused unless asked otherwise, controlPlaneRef -> HostedControlPlane);
* the infrastructure cluster `<hc name>` (controller-owned by the Cluster, `managed-by: external`);
* HostedControlPlane `<hc name>` (hypershift.openshift.io) owned by the Cluster (controller, blockOwnerDeletion,
  as CAPI <= 1.12 sets it), and Secret `<infraID>-kubeconfig` owned by the HostedControlPlane;
* per NodePool: a machine template `<np>-<8 hex>` (owned by the Cluster), a MachineDeployment `<np>`, its
  MachineSet `<np>-<5>` (controller-owned, machine-template-hash labels), Machines `<ms>-<5>` (controller-owned)
  and infrastructure machines of the same names (controller-owned by their Machine), a MachineHealthCheck;
  KubeVirt machines also own their `<name>-userdata` Secret (as CAPK creates it);
* failed Machines (phase Failed, v1beta2 deprecated failureReason/failureMessage, provider failure fields) and
  one Machine already being deleted (deletionTimestamp, finalizer still set) with its infrastructure machine.

Objects reference owners by placeholder uids (``fixture:<Kind>/<name>``); ``load_objects`` creates them owners
first against a real server, replaces placeholders by the uids the server assigns, writes every status through
/status and deletes the objects whose fixture carries a deletionTimestamp. The server's --seed cannot do that (it
assigns uids and drops status), so ``seed_dir`` writes manifests for ``python -m testenv.hcp.build load``.
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from testenv import COLLECTIONS_ROOT, yamlio
from testenv.upstream import HYPERSHIFT_CRDS


PLATFORMS = ("AWS", "Agent", "KubeVirt", "Azure")
CORE = "cluster.x-k8s.io"
CORE_API = CORE + "/v1beta2"
INFRA = "infrastructure.cluster.x-k8s.io"
AGENT = "capi-provider.agent-install.openshift.io"
HYPERSHIFT_API = "hypershift.openshift.io/v1beta1"
PLACEHOLDER = "fixture:"
CONTRACT_LABEL = "cluster.x-k8s.io/v1beta1"  # the label HyperShift's install puts on provider CRDs
STAMP = "2026-08-01T10:00:00Z"
RELEASE = "4.22.3"

# platform -> (group, version, cluster kind, machine kind, template kind, machine finalizer, HCP platform type)
PROVIDERS = {
    "AWS": (INFRA, "v1beta2", "AWSCluster", "AWSMachine", "AWSMachineTemplate",
            "awsmachine.infrastructure.cluster.x-k8s.io", "AWS", "cluster-api-provider-aws"),
    "Azure": (INFRA, "v1beta1", "AzureCluster", "AzureMachine", "AzureMachineTemplate",
              "azuremachine.infrastructure.cluster.x-k8s.io", "Azure", "cluster-api-provider-azure"),
    "KubeVirt": (INFRA, "v1alpha1", "KubevirtCluster", "KubevirtMachine", "KubevirtMachineTemplate",
                 "kubevirtmachine.infrastructure.cluster.x-k8s.io", "KubeVirt", "cluster-api-provider-kubevirt"),
    "Agent": (AGENT, "v1beta1", "AgentCluster", "AgentMachine", "AgentMachineTemplate",
              "agentmachine.agent-install.openshift.io/deprovision", "Agent", "cluster-api-provider-agent"),
}
CORE_PLURALS = ("clusters", "machinedeployments", "machinesets", "machines", "machinehealthchecks")


def _hex(text, length):
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _suffix(text, length=5):
    """A deterministic name suffix from CAPI's alphabet (lower-case letters and digits)."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    digest = hashlib.sha256(text.encode()).digest()
    return "".join(alphabet[byte % len(alphabet)] for byte in digest[:length])


def placeholder(kind, name):
    return PLACEHOLDER + "%s/%s" % (kind, name)


def owner_ref(api_version, kind, name, controller=False):
    ref = {"apiVersion": api_version, "kind": kind, "name": name, "uid": placeholder(kind, name)}
    if controller:
        ref["controller"] = True
        ref["blockOwnerDeletion"] = True
    return ref


def condition(kind_of_condition, status="True", reason=None, message="", v1beta1=False):
    entry = {"type": kind_of_condition, "status": status, "lastTransitionTime": STAMP,
             "reason": reason or ("Ready" if status == "True" else "NotReady")}
    if message or not v1beta1:  # metav1.Condition (v1beta2) requires message; CAPI v1beta1 conditions omit it
        entry["message"] = message
    if v1beta1 and status != "True":
        entry["severity"] = "Error"
    if v1beta1 and status == "True":
        entry.pop("reason")
    return entry


def managed_etcd():
    """spec.etcd as `hypershift create cluster` writes it (the CRD's CEL rule wants `managed` with Managed)."""
    return {"managementType": "Managed", "managed": {"storage": {
        "type": "PersistentVolume", "persistentVolume": {"size": "8Gi"}}}}


def published_services(platform_type):
    """spec.services as `hypershift create cluster` writes them: the four services the CRD requires, Routes where
    the platform demands them (Azure) and the API server behind a LoadBalancer."""
    route = {"type": "Route"}
    return [{"service": "APIServer", "servicePublishingStrategy": {"type": "LoadBalancer"}}] + [
        {"service": service, "servicePublishingStrategy": route} for service in ("OAuthServer", "Konnectivity", "Ignition")]


def private_machine_probe(namespace):
    """A private Machine valid for its CRD: the probe that tells when an admission policy refusing such Machines in
    `namespace` is in force (testenv.cluster.admission.refuse creates it as a dry run)."""
    return {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Machine",
            "metadata": {"name": "admission-probe", "namespace": namespace},
            "spec": {"clusterName": "probe", "bootstrap": {"dataSecretName": "probe"},
                     "infrastructureRef": {"apiGroup": "infrastructure.cluster.hypershift.openshift.io",
                                           "kind": "AWSMachine", "name": "probe"}}}


def hcp_namespace_name(hc_namespace, hc_name):
    """HyperShift's rule: <hc namespace>-<hc name with dots replaced>."""
    return "%s-%s" % (hc_namespace, hc_name.replace(".", "-"))


def build_hcp_namespace(platform, hc_namespace, hc_name, machines=3, node_pools=1, failed=1, deleting=1,
                        paused=True, mhc=True, written_at="v1beta2"):
    """Every object of one HCP namespace (Namespace first), as a list of new dicts.

    machines: Machines per NodePool (>= 1); failed: how many of the first pool's Machines failed;
    deleting: extra Machines (with infrastructure machines) already being deleted; paused: Cluster.spec.paused.
    """
    if platform not in PROVIDERS:
        raise ValueError("platform must be one of %s, got %r" % (", ".join(PLATFORMS), platform))
    group, version, cluster_kind, machine_kind, template_kind, machine_finalizer, hcp_platform, _dir = PROVIDERS[platform]
    infra_api = "%s/%s" % (group, version)
    namespace = hcp_namespace_name(hc_namespace, hc_name)
    infra_id = "%s-%s" % (hc_name[:21], _suffix(hc_name))  # random in HyperShift; stable here
    cluster_labels = {"cluster.x-k8s.io/cluster-name": infra_id}
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": namespace, "labels": {"hypershift.openshift.io/hosted-control-plane": "true"}}}]

    def meta(name, labels=None, annotations=None, owners=None, finalizers=None):
        metadata = {"name": name, "namespace": namespace}
        if labels:
            metadata["labels"] = dict(labels)
        if annotations:
            metadata["annotations"] = dict(annotations)
        if owners:
            metadata["ownerReferences"] = list(owners)
        if finalizers:
            metadata["finalizers"] = list(finalizers)
        return metadata

    cluster_owner = owner_ref(CORE_API, "Cluster", infra_id)
    cluster_controller = owner_ref(CORE_API, "Cluster", infra_id, controller=True)
    objects.append({
        "apiVersion": CORE_API, "kind": "Cluster",
        "metadata": meta(infra_id, annotations={"hypershift.openshift.io/cluster": "%s/%s" % (hc_namespace, hc_name)},
                         finalizers=["cluster.cluster.x-k8s.io"]),
        "spec": {"paused": paused,
                 "controlPlaneRef": {"apiGroup": "hypershift.openshift.io", "kind": "HostedControlPlane", "name": hc_name},
                 "infrastructureRef": {"apiGroup": group, "kind": cluster_kind, "name": hc_name},
                 "controlPlaneEndpoint": {"host": "api.%s.example.com" % hc_name, "port": 443}},
        "status": {"phase": "Provisioned", "observedGeneration": 1,
                   "initialization": {"infrastructureProvisioned": True, "controlPlaneInitialized": True},
                   "conditions": [condition("Available"), condition("InfrastructureReady"),
                                  condition("ControlPlaneInitialized")],
                   "deprecated": {"v1beta1": {"conditions": [condition("Ready", v1beta1=True)]}}},
    })
    objects.append({
        "apiVersion": HYPERSHIFT_API, "kind": "HostedControlPlane",
        "metadata": meta(hc_name, labels=cluster_labels,
                         annotations={"hypershift.openshift.io/cluster": "%s/%s" % (hc_namespace, hc_name)},
                         owners=[cluster_controller], finalizers=["hypershift.openshift.io/finalizer"]),
        "spec": {"releaseImage": "quay.io/openshift-release-dev/ocp-release:%s-x86_64" % RELEASE,
                 "infraID": infra_id, "issuerURL": "https://oidc.example.com/%s" % infra_id,
                 "pullSecret": {"name": "pull-secret"}, "sshKey": {"name": "ssh-key"},
                 "dns": {"baseDomain": "example.com"}, "etcd": managed_etcd(),
                 "platform": {"type": hcp_platform}, "services": published_services(hcp_platform)},
        "status": {"ready": True, "initialized": True, "version": RELEASE,
                   "controlPlaneEndpoint": {"host": "api.%s.example.com" % hc_name, "port": 443}},
    })
    objects.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                    "metadata": meta("%s-kubeconfig" % infra_id,
                                     labels=dict(cluster_labels, **{"hypershift.openshift.io/kubeconfig": "capi"}),
                                     owners=[owner_ref(HYPERSHIFT_API, "HostedControlPlane", hc_name, controller=True)]),
                    "data": {"value": "a3ViZWNvbmZpZw=="}})
    objects.append({"apiVersion": infra_api, "kind": cluster_kind,
                    "metadata": meta(hc_name, labels=cluster_labels, annotations={"cluster.x-k8s.io/managed-by": "external"},
                                     owners=[cluster_controller]),
                    "spec": _infra_cluster_spec(platform, hc_name, namespace),
                    "status": _infra_cluster_status(platform, hc_namespace, hc_name)})
    for pool_index in range(node_pools):
        pool = "%s-pool-%d" % (hc_name[:20], pool_index + 1)
        resources_name = "%s-%s-%s" % (infra_id, hc_name, pool)
        if len(resources_name) > 43:
            resources_name = resources_name[:34] + "-" + _hex(resources_name, 8)
        node_pool = "%s/%s" % (hc_namespace, pool)
        template_name = "%s-%s" % (pool, _hex(pool + platform, 8))
        user_data = "user-data-%s-%s" % (pool, _hex(pool, 8))
        objects.append({"apiVersion": infra_api, "kind": template_kind,
                        "metadata": meta(template_name, annotations={"hypershift.openshift.io/nodePool": node_pool},
                                         owners=[cluster_owner]),
                        "spec": {"template": {"spec": _machine_spec(platform, None, namespace)}}})
        objects.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                        "metadata": meta(user_data, annotations={"hypershift.openshift.io/nodePool": node_pool}),
                        "data": {"value": "aWduaXRpb24=", "disableTemplating": "dHJ1ZQ=="}})
        template_hash = str(int(_hex(template_name, 7), 16))
        selector = {"cluster.x-k8s.io/cluster-name": infra_id, resources_name: resources_name}
        template_labels = dict(selector)
        template_spec = {"clusterName": infra_id, "bootstrap": {"dataSecretName": user_data},
                         "infrastructureRef": {"apiGroup": group, "kind": template_kind, "name": template_name}}
        template_annotations = {"hypershift.openshift.io/nodePool": node_pool,
                                "hypershift.openshift.io/release-version": RELEASE}
        count = machines + (deleting if pool_index == 0 else 0)
        objects.append({
            "apiVersion": CORE_API, "kind": "MachineDeployment",
            "metadata": meta(pool, labels=cluster_labels, owners=[cluster_owner],
                             annotations={"hypershift.openshift.io/nodePool": node_pool,
                                          "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "0",
                                          "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "0",
                                          "machinedeployment.clusters.x-k8s.io/revision": "1"},
                             finalizers=["cluster.x-k8s.io/machinedeployment"]),
            "spec": {"clusterName": infra_id, "replicas": machines, "selector": {"matchLabels": dict(selector)},
                     "template": {"metadata": {"labels": template_labels, "annotations": template_annotations},
                                  "spec": template_spec},
                     "rollout": {"strategy": {"type": "RollingUpdate",
                                              "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}},
            "status": {"replicas": count, "readyReplicas": machines - (failed if pool_index == 0 else 0),
                       "availableReplicas": machines - (failed if pool_index == 0 else 0), "upToDateReplicas": machines,
                       "observedGeneration": 1, "phase": "Running",
                       "selector": ",".join("%s=%s" % pair for pair in sorted(selector.items())),
                       "conditions": [condition("Available")]},
        })
        machine_set = "%s-%s" % (pool, _suffix(pool + "ms"))
        set_labels = dict(selector, **{"cluster.x-k8s.io/deployment-name": pool, "machine-template-hash": template_hash})
        objects.append({
            "apiVersion": CORE_API, "kind": "MachineSet",
            "metadata": meta(machine_set, labels=set_labels,
                             annotations={"machinedeployment.clusters.x-k8s.io/revision": "1",
                                          "machinedeployment.clusters.x-k8s.io/desired-replicas": str(machines),
                                          "machinedeployment.clusters.x-k8s.io/max-replicas": str(machines + 1)},
                             owners=[owner_ref(CORE_API, "MachineDeployment", pool, controller=True)],
                             finalizers=["cluster.x-k8s.io/machineset"]),
            "spec": {"clusterName": infra_id, "replicas": machines,
                     "selector": {"matchLabels": dict(selector, **{"machine-template-hash": template_hash})},
                     "template": {"metadata": {"labels": dict(set_labels), "annotations": template_annotations},
                                  "spec": template_spec}},
            "status": {"replicas": count, "readyReplicas": machines, "availableReplicas": machines,
                       "upToDateReplicas": machines, "observedGeneration": 1,
                       "selector": ",".join("%s=%s" % pair for pair in sorted(set_labels.items()))},
        })
        for index in range(count):
            name = "%s-%s" % (machine_set, _suffix("%s-%d" % (machine_set, index)))
            is_failed = pool_index == 0 and index < failed
            is_deleting = index >= machines
            objects.extend(_machine_pair(platform, namespace, name, machine_set, set_labels, template_annotations,
                                         template_name, template_kind, group, infra_api, machine_kind, machine_finalizer,
                                         infra_id, user_data, is_failed, is_deleting, index))
        if mhc:
            objects.append({
                "apiVersion": CORE_API, "kind": "MachineHealthCheck",
                "metadata": meta(pool, annotations={"hypershift.openshift.io/nodePool": node_pool}, owners=[cluster_owner],
                                 labels=cluster_labels),
                "spec": {"clusterName": infra_id, "selector": {"matchLabels": {resources_name: resources_name}},
                         "checks": {"nodeStartupTimeoutSeconds": 1200, "unhealthyNodeConditions": [
                             {"type": "Ready", "status": "False", "timeoutSeconds": 480},
                             {"type": "Ready", "status": "Unknown", "timeoutSeconds": 480}]},
                         "remediation": {"triggerIf": {"unhealthyLessThanOrEqualTo": 2}}},
                "status": {"expectedMachines": machines, "currentHealthy": machines - (failed if pool_index == 0 else 0),
                           "remediationsAllowed": 1, "observedGeneration": 1,
                           "targets": ["%s-%s" % (machine_set, _suffix("%s-%d" % (machine_set, i))) for i in range(machines)],
                           "conditions": [condition("RemediationAllowed")]},
            })
    return objects if written_at == "v1beta2" else written_by_an_older_release(objects, written_at)


def written_by_an_older_release(objects, version):
    """The core CAPI objects in `version` (v1beta1: HyperShift releases before CAPI 1.11 wrote them so): the server
    stores v1beta2 and converts through the /convert webhook on the way in. The v1beta1 shapes come from the
    collection's own convert_object (the same conversion the webhook applies): what this exercises is the real
    apiserver's conversion path and that objects written at either version migrate alike, not the conversion rules."""
    from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions import convert_object

    crds = standard_crds()
    return [convert_object(obj, version, crds=crds) if obj["apiVersion"].startswith(CORE + "/") else obj
            for obj in objects]


def _machine_pair(platform, namespace, name, machine_set, set_labels, template_annotations, template_name, template_kind,
                  group, infra_api, machine_kind, machine_finalizer, infra_id, user_data, is_failed, is_deleting, index):
    labels = dict(set_labels, **{"cluster.x-k8s.io/set-name": machine_set})
    provider_id = _provider_id(platform, name)
    machine_status = {"phase": "Running", "observedGeneration": 1, "nodeRef": {"name": "node-%s" % name.split("-")[-1]},
                      "addresses": [{"type": "InternalIP", "address": "10.0.%d.%d" % (index // 250, index % 250 + 2)}],
                      "initialization": {"bootstrapDataSecretCreated": True, "infrastructureProvisioned": True},
                      "conditions": [condition("Ready"), condition("NodeHealthy")], "lastUpdated": STAMP}
    if is_failed:
        machine_status = {"phase": "Failed", "observedGeneration": 1,
                          "initialization": {"bootstrapDataSecretCreated": True, "infrastructureProvisioned": False},
                          "conditions": [condition("Ready", "False", "InfrastructureFailed", "instance launch failed"),
                                         condition("InfrastructureReady", "False", "ProvisioningFailed", "quota exceeded")],
                          "deprecated": {"v1beta1": {
                              "failureReason": "CreateError",
                              "failureMessage": "Failure detected from referenced resource %s with name \"%s\": quota "
                                                "exceeded for instance type" % (machine_kind, name),
                              "conditions": [condition("Ready", "False", "InfrastructureFailed", "quota", v1beta1=True)]}}}
    machine = {"apiVersion": CORE_API, "kind": "Machine",
               "metadata": {"name": name, "namespace": namespace, "labels": labels,
                            "annotations": dict(template_annotations),
                            "ownerReferences": [owner_ref(CORE_API, "MachineSet", machine_set, controller=True)],
                            "finalizers": ["machine.cluster.x-k8s.io"]},
               "spec": {"clusterName": infra_id, "bootstrap": {"dataSecretName": user_data},
                        "infrastructureRef": {"apiGroup": group, "kind": machine_kind, "name": name}},
               "status": machine_status}
    if not is_failed:
        machine["spec"]["providerID"] = provider_id
    infra_status = {"ready": not is_failed, "addresses": [{"type": "InternalIP", "address": "10.0.0.%d" % (index % 250 + 2)}],
                    "conditions": [condition("Ready", v1beta1=True)]}
    if is_failed:
        infra_status = {"ready": False, "failureReason": "CreateError", "failureMessage": "quota exceeded for instance type",
                        "conditions": [condition("Ready", "False", "InstanceProvisionFailed", "quota exceeded", v1beta1=True)]}
    infra_status.update(_machine_status_extra(platform, name, is_failed))
    infra = {"apiVersion": infra_api, "kind": machine_kind,
             "metadata": {"name": name, "namespace": namespace, "labels": dict(labels),
                          "annotations": {"cluster.x-k8s.io/cloned-from-name": template_name,
                                          "cluster.x-k8s.io/cloned-from-groupkind": "%s.%s" % (template_kind, group)},
                          "ownerReferences": [owner_ref(CORE_API, "Machine", name, controller=True)],
                          "finalizers": [machine_finalizer]},
             "spec": _machine_spec(platform, None if is_failed else provider_id, namespace),
             "status": infra_status}
    pair = [machine, infra]
    if platform == "KubeVirt":
        pair.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                     "metadata": {"name": "%s-userdata" % name, "namespace": namespace,
                                  "labels": {"cluster.x-k8s.io/cluster-name": infra_id},
                                  "ownerReferences": [owner_ref(infra_api, machine_kind, name, controller=True)]},
                     "data": {"userdata": "aWduaXRpb24="}})
    if is_deleting:
        for obj in (machine, infra):
            obj["metadata"]["deletionTimestamp"] = STAMP  # load_objects deletes it after creating it
        machine["status"]["phase"] = "Deleting"
    return pair


def _provider_id(platform, name):
    return {"AWS": "aws:///us-east-1a/i-%s" % _hex(name, 17), "Azure": "azure:///subscriptions/sub/resourceGroups/rg/providers/"
            "Microsoft.Compute/virtualMachines/%s" % name, "KubeVirt": "kubevirt://%s" % name,
            "Agent": "agent://%s" % _hex(name, 32)}[platform]


def _infra_cluster_spec(platform, hc_name, namespace):
    endpoint = {"host": "api.%s.example.com" % hc_name, "port": 443}
    if platform == "AWS":
        return {"region": "us-east-1", "network": {"vpc": {"id": "vpc-%s" % _hex(hc_name, 17)}},
                "additionalTags": {"kubernetes.io/cluster/%s" % hc_name: "owned"}, "controlPlaneEndpoint": endpoint}
    if platform == "Azure":
        return {"location": "eastus", "resourceGroup": "%s-rg" % hc_name, "subscriptionID": "sub-%s" % _hex(hc_name, 8),
                "controlPlaneEndpoint": endpoint}
    if platform == "KubeVirt":
        return {"controlPlaneEndpoint": endpoint}
    return {"controlPlaneEndpoint": endpoint, "ignitionEndpoint": {"url": "https://ignition.%s.example.com/ignition" % hc_name}}


def _infra_cluster_status(platform, hc_namespace, hc_name):
    status = {"ready": True}
    if platform == "Agent":
        status["clusterDeploymentReference"] = {"namespace": hc_namespace, "name": hc_name}
    return status


def _machine_spec(platform, provider_id, namespace):
    if platform == "AWS":
        spec = {"instanceType": "m6i.xlarge", "ami": {"id": "ami-0123456789abcdef0"},
                "iamInstanceProfile": "worker-profile", "subnet": {"id": "subnet-0123456789"},
                "rootVolume": {"size": 120, "type": "gp3"}, "uncompressedUserData": True}
    elif platform == "Azure":
        spec = {"vmSize": "Standard_D4s_v3", "osDisk": {"osType": "Linux", "diskSizeGB": 120},
                "subnetName": "workers"}
    elif platform == "KubeVirt":
        spec = {"infraClusterSecretRef": {"apiVersion": "v1", "kind": "Secret", "name": "kubevirt-infra-credentials",
                                          "namespace": namespace},
                "virtualMachineTemplate": {"metadata": {"namespace": namespace},
                                           "spec": {"runStrategy": "Always", "template": {"spec": {"domain": {
                                               "cpu": {"cores": 2}, "memory": {"guest": "8Gi"}, "devices": {}}}}}}}
    else:
        spec = {"agentLabelSelector": {"matchLabels": {"agent-install.openshift.io/bmh": "worker"}}}
    if provider_id:
        spec["providerID"] = provider_id
        if platform == "AWS":
            spec["instanceID"] = provider_id.rsplit("/", 1)[-1]
    return spec


def _machine_status_extra(platform, name, is_failed):
    if platform == "AWS":
        return {"instanceState": "terminated" if is_failed else "running"}
    if platform == "Azure":
        return {"vmState": "Failed" if is_failed else "Succeeded"}
    if platform == "KubeVirt":
        return {"loadBalancerConfigured": True, "nodeupdated": not is_failed}
    return {} if is_failed else {"agentRef": {"namespace": "agents", "name": "agent-%s" % _hex(name, 8)}}


# --- CRDs ---------------------------------------------------------------------------------------------


def _load(path):
    with open(path) as handle:
        return yamlio.load(handle)


HYPERSHIFT_CRD_FILES = ("hostedcontrolplanes-Hypershift-Default.crd.yaml", "hostedclusters-Hypershift-Default.crd.yaml",
                        "nodepools-Default.crd.yaml")


def hypershift_crds():
    """HyperShift's own CRDs for HCPs (HostedControlPlane, HostedCluster, NodePool), as the operator installs them."""
    return [as_the_operator_installs(_load(os.path.join(HYPERSHIFT_CRDS, name))) for name in HYPERSHIFT_CRD_FILES]


def standard_crds(platforms=PLATFORMS):
    """HyperShift's CRDs for HCPs (HostedControlPlane, HostedCluster, NodePool), core CAPI and the providers."""
    paths = [os.path.join(HYPERSHIFT_CRDS, "cluster-api", "%s_%s.yaml" % (CORE, plural)) for plural in CORE_PLURALS]
    for platform in platforms:
        directory = os.path.join(HYPERSHIFT_CRDS, PROVIDERS[platform][7])
        paths += sorted(os.path.join(directory, name) for name in os.listdir(directory) if name.endswith(".yaml"))
    return hypershift_crds() + [as_the_operator_installs(_load(path)) for path in paths]


def all_core_crds():
    """Every core CAPI CRD `hypershift install` installs (testenv/upstream/hypershift/crds/cluster-api: MachinePool,
    ClusterClass, MachineDrainRule, ClusterResourceSet, IPAM ... beside CORE_PLURALS' five), as it installs them: what a
    real core manager needs to start (testenv.capi.electing_core_manager)."""
    directory = os.path.join(HYPERSHIFT_CRDS, "cluster-api")
    return [as_the_operator_installs(_load(os.path.join(directory, name))) for name in sorted(os.listdir(directory))
            if name.endswith(".yaml")]


def as_the_operator_installs(crd):
    """A CRD as `hypershift install` leaves it (openshift/hypershift cmd/install/assets/crds): the core CAPI CRDs with more than one version convert
    through the operator's /convert webhook (testenv.cluster.convert serves it), storage v1beta2; provider CRDs and the
    HostedControlPlane (CAPI's control-plane provider) carry the contract label `cluster.x-k8s.io/v1beta1`."""
    from testenv.cluster.convert import WEBHOOK_PLACEHOLDER

    spec = crd["spec"]
    versions = [version["name"] for version in spec["versions"]]
    if spec["group"] == CORE and len(versions) > 1:
        for version in spec["versions"]:
            version["storage"] = version["name"] == "v1beta2"
        spec["conversion"] = {"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": WEBHOOK_PLACEHOLDER}, "conversionReviewVersions": ["v1", "v1beta1"]}}
    elif spec["group"] != CORE and spec["names"]["kind"] not in ("HostedCluster", "NodePool"):
        storage = [version["name"] for version in spec["versions"] if version.get("storage")][0]
        crd["metadata"].setdefault("labels", {})[CONTRACT_LABEL] = storage
    return crd


def private_crds(standard):
    """The private twins of the CAPI CRDs among `standard`, rendered by the collection's crd_render (Agent included)."""
    if COLLECTIONS_ROOT not in sys.path:  # run as a script: make the collection importable like tests/conftest.py does
        sys.path.insert(0, COLLECTIONS_ROOT)
    from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import AGENT_EXTRA_GROUPS, GroupMap
    from ansible_collections.hypershift.private_capi.plugins.module_utils.crds.render import RenderOptions, render_all

    from testenv.cluster.convert import WEBHOOK_PLACEHOLDER

    options = RenderOptions(group_map=GroupMap(AGENT_EXTRA_GROUPS), webhook_url=WEBHOOK_PLACEHOLDER)
    return render_all([("fixture", index, crd) for index, crd in enumerate(standard)], options).rendered


def crd_documents(platforms=PLATFORMS):
    standard = standard_crds(platforms)
    return standard + private_crds(standard)


# --- loading into a server ---------------------------------------------------------------------------


class RestSession(object):
    """Raw JSON requests through the official client's ApiClient (any kubeconfig: token or client certificate);
    thread-safe, with a connection pool as large as the loaders' parallelism."""

    def __init__(self, kubeconfig, connections=16):
        from kubernetes import client, config

        configuration = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        configuration.connection_pool_maxsize = connections
        configuration.retries = False
        self.api = client.ApiClient(configuration)
        self.url = configuration.host

    def request(self, method, path, body=None, expect=(200, 201, 202)):
        from kubernetes.client.rest import ApiException

        content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
        request = self.api.param_serialize(method, path, body=body, auth_settings=["BearerToken"], header_params={
            "Content-Type": content_type, "Accept": "application/json"})
        deadline = time.monotonic() + 60
        while True:  # 429 (a new CRD's watch cache still initialising): retry, as client-go does
            try:
                response = self.api.call_api(*request)
                response.read()
                status, raw = response.status, response.data
            except ApiException as error:
                status, raw = error.status, error.body
            if status != 429 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        try:
            data = json.loads(raw) if raw else {}
        except ValueError:  # a group the server does not serve answers 404 with plain text
            data = {"message": raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)}
        if expect and status not in expect:
            raise RuntimeError("%s %s -> %d: %s" % (method, path, status, data.get("message", data)))
        return status, data


def resource_table(crds):
    """(group, kind) -> (plural, namespaced, status subresource per version) from CRDs, plus the built-ins used here."""
    table = {("", "Namespace"): ("namespaces", False, set()), ("", "Secret"): ("secrets", True, set()),
             ("", "ConfigMap"): ("configmaps", True, set()), ("", "ServiceAccount"): ("serviceaccounts", True, set()),
             ("apps", "Deployment"): ("deployments", True, set()),
             ("rbac.authorization.k8s.io", "Role"): ("roles", True, set()),
             ("rbac.authorization.k8s.io", "RoleBinding"): ("rolebindings", True, set()),
             ("rbac.authorization.k8s.io", "ClusterRole"): ("clusterroles", False, set()),
             ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("clusterrolebindings", False, set())}
    for crd in crds:
        spec = crd["spec"]
        with_status = {v["name"] for v in spec["versions"] if "status" in (v.get("subresources") or {})}
        table[(spec["group"], spec["names"]["kind"])] = (spec["names"]["plural"], spec["scope"] == "Namespaced", with_status)
    return table


def object_path(table, obj, with_name=False, subresource=None):
    group, _slash, version = obj["apiVersion"].rpartition("/")
    plural, namespaced, _status = table[(group, obj["kind"])]
    base = "/api/%s" % version if not group else "/apis/%s/%s" % (group, version)
    if namespaced:
        base += "/namespaces/%s" % obj["metadata"]["namespace"]
    base += "/" + plural
    if with_name:
        base += "/" + obj["metadata"]["name"]
    if subresource:
        base += "/" + subresource
    return base


def _levels(objects):
    by_placeholder = {placeholder(obj["kind"], obj["metadata"]["name"]): obj for obj in objects}
    level = {}

    def depth(obj):
        key = placeholder(obj["kind"], obj["metadata"]["name"])
        if key not in level:
            owners = [by_placeholder[ref["uid"]] for ref in obj["metadata"].get("ownerReferences") or ()
                      if ref["uid"] in by_placeholder]
            level[key] = 0 if not owners else 1 + max(depth(owner) for owner in owners)
        return level[key]

    grouped = {}
    for obj in objects:
        grouped.setdefault(depth(obj), []).append(obj)
    return [grouped[number] for number in sorted(grouped)]


def load_objects(session, objects, crds, parallelism=8):
    """Create objects owners first with real owner uids, write their status, delete the 'being deleted' ones.

    Returns {placeholder uid: server uid}. `objects` is not modified.
    """
    table = resource_table(crds)
    uids = {}
    lock = threading.Lock()
    namespaces = [obj for obj in objects if obj["kind"] == "Namespace"]
    others = [obj for obj in objects if obj["kind"] != "Namespace"]
    for namespace in namespaces:
        session.request("POST", "/api/v1/namespaces", namespace)

    def create(obj):
        body = json.loads(json.dumps(obj))
        metadata = body["metadata"]
        deleting = metadata.pop("deletionTimestamp", None)
        for ref in metadata.get("ownerReferences") or ():
            ref["uid"] = uids.get(ref["uid"], ref["uid"])
        status = body.get("status")
        group = obj["apiVersion"].rpartition("/")[0]
        version = obj["apiVersion"].rpartition("/")[2]
        with_status = version in table[(group, obj["kind"])][2]
        if with_status:
            body.pop("status", None)
        _code, created = session.request("POST", object_path(table, obj), body)
        if with_status and status:
            created["status"] = status
            _code, created = session.request("PUT", object_path(table, obj, True, "status"), created)
        if deleting:
            session.request("DELETE", object_path(table, obj, True), {"kind": "DeleteOptions", "apiVersion": "v1"})
        with lock:
            uids[placeholder(obj["kind"], obj["metadata"]["name"])] = created["metadata"]["uid"]

    with ThreadPoolExecutor(max_workers=parallelism) as pool:
        for members in _levels(others):
            list(pool.map(create, members))
    return uids


def install_crds(session, crds):
    """Create or replace the CRDs and wait until they are Established (testenv.cluster.testing.install_crds)."""
    from testenv.cluster.testing import install_crds as install

    install(session.api, crds)


# --- seed directories ---------------------------------------------------------------------------------


def seed_dir(path, fleet_spec):
    """Write `crds.yaml` and one `hcp-<namespace>.yaml` per entry of fleet_spec; returns the files written.

    fleet_spec: [{"platform", "hc_namespace", "hc_name", plus any build_hcp_namespace keyword}]. The HCP files keep
    placeholder owner uids and status: load them with `python -m testenv.hcp.build load` (or load_objects).
    """
    os.makedirs(path, exist_ok=True)
    platforms = sorted({entry["platform"] for entry in fleet_spec}, key=PLATFORMS.index)
    written = [os.path.join(path, "crds.yaml")]
    with open(written[0], "w") as handle:
        yamlio.dump_all(crd_documents(platforms), handle, sort_keys=False)
    for entry in fleet_spec:
        options = dict(entry)
        objects = build_hcp_namespace(options.pop("platform"), options.pop("hc_namespace"), options.pop("hc_name"), **options)
        name = os.path.join(path, "hcp-%s.yaml" % objects[0]["metadata"]["name"])
        with open(name, "w") as handle:
            yamlio.dump_all(objects, handle, sort_keys=False)
        written.append(name)
    return written


def load_dir(kubeconfig, path, parallelism=8):
    """Install crds.yaml and load every hcp-*.yaml of a seed_dir directory into the server of kubeconfig."""
    session = RestSession(kubeconfig, connections=parallelism)
    with open(os.path.join(path, "crds.yaml")) as handle:
        crds = yamlio.load_all(handle)
    install_crds(session, crds)
    loaded = 0
    for name in sorted(os.listdir(path)):
        if name.startswith("hcp-") and name.endswith(".yaml"):
            with open(os.path.join(path, name)) as handle:
                objects = yamlio.load_all(handle)
            load_objects(session, objects, crds, parallelism)
            loaded += len(objects)
    return loaded


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    seed = commands.add_parser("seed", help="write a seed directory")
    seed.add_argument("directory")
    seed.add_argument("--spec", required=True, help='JSON list, e.g. [{"platform": "AWS", "hc_namespace": "clusters", '
                                                    '"hc_name": "prod-01", "machines": 3}]')
    load = commands.add_parser("load", help="load a seed directory into a server")
    load.add_argument("directory")
    load.add_argument("--kubeconfig", required=True)
    args = parser.parse_args(argv)
    if args.command == "seed":
        for name in seed_dir(args.directory, json.loads(args.spec)):
            print(name)
    else:
        print("loaded %d objects" % load_dir(args.kubeconfig, args.directory))
    return 0


if __name__ == "__main__":
    sys.exit(main())
