"""A HyperShift management cluster's fleet for the fleet migration's tests, demo and benchmark.

Adds to build.py's HCP namespaces what the fleet migration also touches (as `hypershift install` and its operator leave them):
the HostedCluster and its NodePool in the HostedCluster namespace (state `legacy`: `scope: legacy` and the mirror
label, as dual_operator leaves them; an entry's `state` may say `new` or `migrated` instead), the CAPI-dependent
Deployments of each HCP namespace (cluster-api, capi-provider, control-plane-operator, cluster-autoscaler,
machine-approver, hosted-cluster-config-operator) with their ServiceAccounts and the CAPI Role of
cluster-api/capi-provider, and the operator namespace `hypershift` with Deployment `operator`.

    python -m testenv.hcp.fleet seed DIR --count 6 [--machines 2] [--platforms AWS,KubeVirt]
    python -m testenv.hcp.fleet load DIR --kubeconfig PATH
"""
import argparse
import json
import os
import sys

from testenv import yamlio
from testenv.client import wait_for
from testenv.hcp import build

HC_NAMESPACE = "clusters"
OPERATOR_NAMESPACE = "hypershift"
CAPI_DEPLOYMENTS = ("cluster-api", "capi-provider", "control-plane-operator", "cluster-autoscaler",
                    "machine-approver", "hosted-cluster-config-operator")
STATE_LABEL = "hypershift.openshift.io/capi-migration-state"
SCOPE_ANNOTATION = "hypershift.openshift.io/scope"
STATE_ANNOTATIONS = {"new": {}, "legacy": {SCOPE_ANNOTATION: "legacy"},
                     "migrated": {"hypershift.openshift.io/private-capi-types": "true"}}
PLATFORM_FIELDS = {"AWS": "aws", "Azure": "azure", "KubeVirt": "kubevirt", "Agent": "agent"}


def component_image(name):
    """The image of the HCP Deployment `name` in the fixtures (an OpenShift payload image's place)."""
    return "quay.io/openshift/%s:4.22" % name


def deployment(namespace, name, replicas=1, labels=None, finalizers=None):
    pod_labels = {"app": name, "name": name}
    metadata = {"name": name, "namespace": namespace, "labels": dict(labels or {}, app=name)}
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata,
            "spec": {"replicas": replicas, "selector": {"matchLabels": pod_labels},
                     "template": {"metadata": {"labels": pod_labels},
                                  "spec": {"serviceAccountName": name, "containers": [
                                      {"name": "manager", "image": component_image(name),
                                       "args": ["--namespace=%s" % namespace]}]}}}}


def hostedcluster_objects(platform, hc_namespace, hc_name, labels=None, state="legacy"):
    """The HostedCluster and its NodePool, as HyperShift's CRDs accept them; state legacy, new (no marker: from before
    dual_operator ran) or migrated (private-capi-types, as the new operator or a migration leaves it)."""
    platform_type = build.PROVIDERS[platform][6]
    pool = "%s-pool-1" % hc_name[:20]
    hc_labels = dict(labels or {}, **({} if state == "new" else {STATE_LABEL: state}))
    hostedcluster = {
        "apiVersion": build.HYPERSHIFT_API, "kind": "HostedCluster",
        "metadata": {"name": hc_name, "namespace": hc_namespace, "labels": hc_labels,
                     "annotations": dict(STATE_ANNOTATIONS[state]),
                     "finalizers": ["hypershift.openshift.io/finalizer"]},
        "spec": {"release": {"image": "quay.io/openshift-release-dev/ocp-release:%s-x86_64" % build.RELEASE},
                 "pullSecret": {"name": "pull-secret"}, "sshKey": {"name": "ssh-key"},
                 "infraID": "%s-%s" % (hc_name[:21], build._suffix(hc_name)),
                 "etcd": build.managed_etcd(), "networking": {"networkType": "OVNKubernetes"},
                 "platform": {"type": platform_type}, "services": build.published_services(platform_type)},
        # as HyperShift's operator reports a HostedCluster that runs and is not rolling anything out
        "status": {"conditions": [build.condition("Available", reason="AsExpected", message="The control plane is available"),
                                  build.condition("Progressing", "False", reason="AsExpected",
                                                  message="HostedCluster is at expected version"),
                                  build.condition("Degraded", "False", reason="AsExpected", message="")]},
    }
    node_pool = {
        "apiVersion": build.HYPERSHIFT_API, "kind": "NodePool",
        "metadata": {"name": pool, "namespace": hc_namespace},
        "spec": {"clusterName": hc_name, "replicas": 0, "management": {"upgradeType": "Replace"},
                 "platform": {"type": platform_type}, "release": {"image": hostedcluster["spec"]["release"]["image"]}},
        "status": {"replicas": 0, "conditions": [
            build.condition("UpdatingVersion", "False", reason="AsExpected", message=""),
            build.condition("UpdatingConfig", "False", reason="AsExpected", message=""),
            build.condition("Ready", reason="AsExpected", message="")]},
    }
    return [hostedcluster, node_pool]


def hcp_workloads(hcp_namespace):
    """The CAPI-dependent Deployments, their ServiceAccounts and the CAPI Role/RoleBinding of the CAPI managers."""
    objects = []
    for name in CAPI_DEPLOYMENTS:
        objects.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": hcp_namespace}})
        finalizers = ["hypershift.openshift.io/component-finalizer"] if name in ("cluster-api", "capi-provider") else None
        objects.append(deployment(hcp_namespace, name, finalizers=finalizers))
    objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                    "metadata": {"name": "cluster-api", "namespace": hcp_namespace},
                    "rules": [{"apiGroups": ["cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io"],
                               "resources": ["*"], "verbs": ["*"]}]})
    objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "cluster-api", "namespace": hcp_namespace},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cluster-api"},
                    "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": hcp_namespace}
                                 for name in ("cluster-api", "capi-provider")]})
    return objects


def operator_deployment():
    """Deployment `operator` as `hypershift install` makes it (openshift/hypershift cmd/install): container `operator`, its args and env."""
    operator = deployment(OPERATOR_NAMESPACE, "operator", replicas=1,
                          labels={"hypershift.openshift.io/operator-component": "operator"})
    pod = operator["spec"]["template"]
    pod["metadata"]["labels"]["hypershift.openshift.io/operator-component"] = "operator"
    pod["spec"]["containers"] = [{
        "name": "operator", "image": "quay.io/hypershift/hypershift-operator:4.22", "command": ["/usr/bin/hypershift-operator"],
        "args": ["run", "--namespace=$(MY_NAMESPACE)", "--pod-name=$(MY_NAME)", "--metrics-addr=:9000"],
        "env": [{"name": "MY_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "MY_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "ports": [{"name": "metrics", "containerPort": 9000}]}]
    return operator


def base_objects():
    """The HostedCluster namespace and the operator namespace with Deployment `operator` and its ServiceAccount."""
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HC_NAMESPACE}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATOR_NAMESPACE}},
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "operator", "namespace": OPERATOR_NAMESPACE}},
            operator_deployment()]


def fleet_spec(count, platforms=("AWS", "KubeVirt"), machines=2, prefix="hc"):
    """count HostedClusters named <prefix>-NN, platforms round-robin, 1 NodePool x machines, no failed Machines; every
    third one's core CAPI objects written at v1beta1, as HyperShift releases before CAPI 1.11 left them."""
    return [{"platform": platforms[index % len(platforms)], "hc_namespace": HC_NAMESPACE,
             "hc_name": "%s-%02d" % (prefix, index + 1), "machines": machines, "failed": 0, "deleting": 0,
             "paused": False, "mhc": False, "written_at": "v1beta1" if index % 3 == 1 else "v1beta2"}
            for index in range(count)]


def on_fake_nodes(objects):
    """objects with every Deployment's Pods bound to KWOK's first Node (testenv.cluster start_cluster bulk_nodes) by
    nodeName: no scheduler, no taint consulted. Not by a nodeSelector or a toleration: the API proxy's shared Pods take
    those of the Deployment beside them (hcp/sidecar.py shared_proxy_objects, as HyperShift's dedicated control-plane
    nodes need), and they must run on the real nodes."""
    from testenv.cluster.cluster import fake_node_name  # pylint: disable=import-outside-toplevel
    for obj in objects:
        if obj["kind"] == "Deployment":
            obj["spec"]["template"]["spec"]["nodeName"] = fake_node_name(0)
    return objects


def seed_fleet_dir(path, spec, bulk_on_fake_nodes=False):
    """crds.yaml, base-fleet.yaml and one hcp-<ns>.yaml per entry (HCP objects + HostedCluster + workloads); with
    bulk_on_fake_nodes, the HCP namespaces' Deployments run their Pods on KWOK's Node (on_fake_nodes), the operator's
    on the real nodes (the migration puts a proxy sidecar in it)."""
    place = on_fake_nodes if bulk_on_fake_nodes else list
    os.makedirs(path, exist_ok=True)
    platforms = sorted({entry["platform"] for entry in spec}, key=build.PLATFORMS.index)
    written = [os.path.join(path, "crds.yaml"), os.path.join(path, "base-fleet.yaml")]
    with open(written[0], "w") as handle:
        yamlio.dump_all(build.crd_documents(platforms), handle, sort_keys=False)
    with open(written[1], "w") as handle:
        yamlio.dump_all(base_objects(), handle, sort_keys=False)  # the operator: it gets a proxy sidecar of its own
    for entry in spec:
        options = dict(entry)
        platform, hc_namespace, hc_name = options.pop("platform"), options.pop("hc_namespace"), options.pop("hc_name")
        labels, hc_state = options.pop("labels", None), options.pop("state", "legacy")
        objects = build.build_hcp_namespace(platform, hc_namespace, hc_name, **options)
        objects += place(hcp_workloads(objects[0]["metadata"]["name"]))
        objects += hostedcluster_objects(platform, hc_namespace, hc_name, labels, hc_state)
        name = os.path.join(path, "hcp-%s.yaml" % objects[0]["metadata"]["name"])
        with open(name, "w") as handle:
            yamlio.dump_all(objects, handle, sort_keys=False)
        written.append(name)
    return written


def seed_objects(path):
    """Every object of a seed_fleet_dir directory but its CRDs (what a real node needs images for)."""
    objects = []
    for name in sorted(os.listdir(path)):
        if name.startswith(("base-", "hcp-")):
            with open(os.path.join(path, name)) as handle:
                objects.extend(yamlio.load_all(handle))
    return objects


def load_fleet_dir(kubeconfig, path, parallelism=8, crds_installed=False):
    """Load a seed_fleet_dir directory: CRDs (unless start_cluster installed them already, conversion webhooks wired),
    the base namespaces, then every HCP file; returns objects loaded."""
    session = build.RestSession(kubeconfig, connections=parallelism)
    with open(os.path.join(path, "crds.yaml")) as handle:
        crds = yamlio.load_all(handle)
    if not crds_installed:
        build.install_crds(session, crds)
    loaded = 0
    names = sorted(os.listdir(path))
    for name in [n for n in names if n.startswith("base-")] + [n for n in names if n.startswith("hcp-")]:
        with open(os.path.join(path, name)) as handle:
            objects = yamlio.load_all(handle)
        build.load_objects(session, objects, crds, parallelism)
        loaded += len(objects)
    return loaded


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    seed = commands.add_parser("seed", help="write a fleet seed directory")
    seed.add_argument("directory")
    seed.add_argument("--count", type=int, default=6)
    seed.add_argument("--machines", type=int, default=2)
    seed.add_argument("--platforms", default="AWS,KubeVirt")
    seed.add_argument("--spec", help="JSON list of entries instead of --count (see fleet_spec)")
    load = commands.add_parser("load", help="load a fleet seed directory into a server")
    load.add_argument("directory")
    load.add_argument("--kubeconfig", required=True)
    args = parser.parse_args(argv)
    if args.command == "seed":
        spec = json.loads(args.spec) if args.spec else fleet_spec(args.count, tuple(args.platforms.split(",")), args.machines)
        for name in seed_fleet_dir(args.directory, spec):
            print(name)
    else:
        print("loaded %d objects" % load_fleet_dir(args.kubeconfig, args.directory))
    return 0


if __name__ == "__main__":
    sys.exit(main())


def deployments_settled(server):
    """Every Deployment observed by the deployment controller (revision annotated) and Available with its Pods
    (KWOK makes them Ready): the state a management cluster is in before anybody migrates."""
    listed = server.request("GET", "/apis/apps/v1/deployments").json()["items"]
    return all(d.get("status", {}).get("observedGeneration") == d["metadata"]["generation"]
               and d.get("status", {}).get("availableReplicas", 0) == d["spec"].get("replicas", 1)
               and d.get("status", {}).get("updatedReplicas", 0) == d["spec"].get("replicas", 1)
               for d in listed)


def wait_settled(server, what, timeout):
    """Wait until deployments_settled(server), failing after timeout seconds. Every 0.5 s: each look is a LIST of
    every Deployment, and a fleet on a real node takes 10-20 s to settle."""
    wait_for(lambda: deployments_settled(server), what, timeout=timeout, interval=0.5)
