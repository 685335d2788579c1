"""One HostedCluster under the real Cluster API managers as HyperShift deploys them: the HCP namespace of the
end-to-end test (tests/integration/e2e/test_capi_controllers.py) and of molecule's kind scenario (molecule/kind).

Its CAPI objects are a workload cluster on CAPD's in-memory backend (testenv.capi.workload_cluster), reconciled by the
real core manager and CAPD v1.14.2 in the Deployments cluster-api and capi-provider (testenv.capi.hypershift_managers);
the HCP's other CAPI-dependent Deployments run a placeholder image. capi_state() reads what the managers decided;
replacements() says what a rolling replacement would have changed.

The kind scenario drives it from the command line (every command takes a state directory DIR):

    python -m testenv.capi_hosted manifests DIR      objects.yaml and images.txt (the image archives to side-load)
    python -m testenv.capi_hosted crds DIR --webhook-service NS/NAME --ca-bundle B64
                                                     crds.yaml: HyperShift's CRDs and CAPI's as clusterctl installs
                                                     them, the core ones converting through that Service
    python -m testenv.capi_hosted load DIR --kubeconfig K
                                                     the objects, until the managers lead and every Machine runs;
                                                     reference.json: what they decided on the standard groups
    python -m testenv.capi_hosted check DIR --kubeconfig K --reports R
                                                     after the migration: nothing replaced, the managers in their
                                                     containers through the sidecar, a scale of the MachineDeployment
                                                     on the private group reconciled (reference.json then holds it)
"""
import argparse
import base64
import datetime
import json
import os
import sys
import time

STANDARD_GROUP, PRIVATE_GROUP = "cluster.x-k8s.io", "cluster.hypershift.openshift.io"
HC_NAME = "wl"
CLUSTER = "wl"  # the workload cluster's name (Cluster, MachineDeployment <cluster>-md-0)
# the MachineDeployment's template carries it (the MachineSet controller applies it to the Machines)
TEMPLATE_LABEL = "e2e.hypershift.openshift.io/removable"
RUNNING_TIMEOUT = 150  # the core manager retries an unreachable workload cluster every 30 s
LEASE_RENEW_DEADLINE = 107  # HyperShift's --leader-elect-renew-deadline (testenv.capi.LEADER_ELECTION_ARGS)


def hcp_namespace():
    from testenv.hcp import build, fleet  # pylint: disable=import-outside-toplevel
    return build.hcp_namespace_name(fleet.HC_NAMESPACE, HC_NAME)


def hcp_objects():
    """The HCP namespace: the workload cluster's CAPI objects, the HostedControlPlane (owned by the Cluster, as
    HyperShift's) and the CAPI Deployments; the HostedCluster and the operator."""
    from testenv import capi  # pylint: disable=import-outside-toplevel
    from testenv.hcp import build, fleet  # pylint: disable=import-outside-toplevel
    template = build.build_hcp_namespace("AWS", fleet.HC_NAMESPACE, HC_NAME, machines=1, failed=0, deleting=0,
                                         paused=False, mhc=False)
    namespace, hosted_control_plane = template[0], next(o for o in template if o["kind"] == "HostedControlPlane")
    hosted_control_plane["metadata"]["labels"] = {"cluster.x-k8s.io/cluster-name": CLUSTER}
    hosted_control_plane["metadata"]["ownerReferences"] = [build.owner_ref(build.CORE_API, "Cluster", CLUSTER, True)]
    hcp = hcp_namespace()
    workload = capi.workload_cluster(hcp, CLUSTER, workers=2)
    for obj in workload:
        if obj["kind"] == "Cluster":
            obj["metadata"]["annotations"] = {"hypershift.openshift.io/cluster": "%s/%s" % (fleet.HC_NAMESPACE, HC_NAME)}
        if obj["kind"] == "MachineDeployment":
            obj["spec"]["template"]["metadata"]["labels"][TEMPLATE_LABEL] = "yes"
    return (fleet.base_objects() + [namespace] + workload + [hosted_control_plane] + fleet.hcp_workloads(hcp)
            + fleet.hostedcluster_objects("AWS", fleet.HC_NAMESPACE, HC_NAME))


def as_clusterctl_installs(crds):
    """The CAPI CRDs as `clusterctl init` leaves them: the release's provider label and clusterctl's own. HyperShift's
    operator installs them without labels, and there clusterctl move finds no type to move, directly or through the
    proxy; with them, the migration's twins keep the labels aside and the proxy shows them to clusterctl."""
    for crd in crds:
        provider = "infrastructure-docker" if crd["spec"]["group"].startswith("infrastructure.") else "cluster-api"
        crd["metadata"].setdefault("labels", {}).update({"clusterctl.cluster.x-k8s.io": "",
                                                         "cluster.x-k8s.io/provider": provider})
    return crds


def crds():
    """HyperShift's CRDs and CAPI v1.14.2's (core and CAPD) as clusterctl installs them; the core ones convert through
    testenv.cluster.convert.WEBHOOK_PLACEHOLDER."""
    from testenv import capi  # pylint: disable=import-outside-toplevel
    from testenv.hcp import build  # pylint: disable=import-outside-toplevel
    return build.hypershift_crds() + as_clusterctl_installs(capi.crd_documents())


def capi_state(server, group):
    """What the controllers decide, read directly from the server in one group: Machines (name -> uid, phase),
    MachineSets (name -> machine-template-hash) and the Cluster's and MachineDeployment's conditions."""
    hcp = hcp_namespace()

    def items(plural):
        return server.request("GET", "/apis/%s/v1beta2/namespaces/%s/%s" % (group, hcp, plural)).json()["items"]

    def conditions(obj):
        return sorted((c["type"], c["status"], c.get("reason", "")) for c in obj.get("status", {}).get("conditions", []))

    machines = items("machines")
    return {"machines": {m["metadata"]["name"]: (m["metadata"]["uid"], m.get("status", {}).get("phase"))
                         for m in machines},
            "provider_ids": {m["metadata"]["name"]: m["spec"].get("providerID") for m in machines},
            "machinesets": {ms["metadata"]["name"]: ms["metadata"]["labels"].get("machine-template-hash")
                            for ms in items("machinesets")},
            "conditions": {"%s/%s" % (o["kind"], o["metadata"]["name"]): conditions(o)
                           for o in items("clusters") + items("machinedeployments")}}


def steady(server, group, machines=3):
    """capi_state once `machines` Machines are all Running, else False."""
    state = capi_state(server, group)
    phases = [phase for _uid, phase in state["machines"].values()]
    return len(phases) == machines and set(phases) == {"Running"} and state


def replacements(before, after):
    """What a replacement changes: the set of Machines (by name), the MachineSets and their template hashes."""
    problems = []
    if set(after["machines"]) != set(before["machines"]):
        problems.append("Machines %s -> %s" % (sorted(before["machines"]), sorted(after["machines"])))
    if after["machinesets"] != before["machinesets"]:
        problems.append("MachineSets %s -> %s" % (before["machinesets"], after["machinesets"]))
    changed = {name: (provider_id, after["provider_ids"].get(name)) for name, provider_id in before["provider_ids"].items()
               if name in after["provider_ids"] and after["provider_ids"][name] != provider_id}
    if changed:
        problems.append("providerIDs changed: %s" % changed)
    return problems


def lease_holder(server, deployment):
    """The Pod whose manager holds the leader lease of a Deployment's manager, or None: a holder's identity is
    "<pod name>_<uuid>" (controller-runtime), held while renewed within the renew deadline."""
    from testenv import capi  # pylint: disable=import-outside-toplevel
    response = server.request("GET", "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s"
                              % (hcp_namespace(), capi.LEADER_LEASES[deployment]))
    if response.status != 200:
        return None
    spec = response.json()["spec"]
    holder, renewed = spec.get("holderIdentity") or "", spec.get("renewTime")
    if not holder or not renewed:
        return None
    age = time.time() - datetime.datetime.strptime(renewed[:19], "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    return holder.split("_", 1)[0] if age < LEASE_RENEW_DEADLINE else None


# ---- the kind scenario's commands ---------------------------------------------------------------------------------

class CheckFailed(AssertionError):
    """What the scenario found wrong, said as the reader needs it."""


def _dump(path, documents):
    from testenv import yamlio  # pylint: disable=import-outside-toplevel
    with open(path, "w") as handle:
        yamlio.dump_all(documents, handle, sort_keys=False)


def _load(path):
    import yaml  # pylint: disable=import-outside-toplevel
    with open(path) as handle:
        return [document for document in yaml.safe_load_all(handle) if document]


def write_manifests(state_dir):
    """objects.yaml (the HCP namespace with the managers as HyperShift runs them) and images.txt (the archives of
    every image its Pods and the collection's roles run: the managers', the proxy's, a placeholder's)."""
    from testenv import capi  # pylint: disable=import-outside-toplevel
    os.makedirs(state_dir, exist_ok=True)
    objects = capi.hypershift_managers(hcp_objects(), hcp_namespace())
    _dump(os.path.join(state_dir, "objects.yaml"), objects)
    archives = [str(archive) for archive in capi.node_images(objects)]
    with open(os.path.join(state_dir, "images.txt"), "w") as handle:
        handle.write("".join("%s\n" % archive for archive in archives))
    return archives


def write_crds(state_dir, service, ca_bundle):
    """crds.yaml: crds() with the core CRDs' conversion webhook at Service `service` ("namespace/name", port 443,
    path /convert, as `hypershift install` points them at its operator) and `ca_bundle` (base64 PEM)."""
    from testenv.cluster.convert import WEBHOOK_PLACEHOLDER  # pylint: disable=import-outside-toplevel
    namespace, _slash, name = service.partition("/")
    if not namespace or not name:
        raise CheckFailed("--webhook-service %r: give it as NAMESPACE/NAME" % service)
    base64.b64decode(ca_bundle, validate=True)
    documents = crds()
    for crd in documents:
        webhook = (crd["spec"].get("conversion") or {}).get("webhook") or {}
        if (webhook.get("clientConfig") or {}).get("url") == WEBHOOK_PLACEHOLDER:
            webhook["clientConfig"] = {"service": {"namespace": namespace, "name": name, "path": "/convert", "port": 443},
                                       "caBundle": ca_bundle}
    _dump(os.path.join(state_dir, "crds.yaml"), documents)
    return documents


def load(state_dir, kubeconfig):
    """The objects of objects.yaml on the cluster (owners first, statuses written), then until every Deployment is
    available, the managers hold their leases and the workload cluster's 3 Machines run; reference.json."""
    from testenv import capi  # pylint: disable=import-outside-toplevel
    from testenv.client import KubeconfigServer, wait_for  # pylint: disable=import-outside-toplevel
    from testenv.hcp import build, fleet  # pylint: disable=import-outside-toplevel
    server = KubeconfigServer(kubeconfig)
    reference = os.path.join(state_dir, "reference.json")
    if os.path.exists(reference):
        with open(reference) as handle:
            return json.load(handle)
    objects = [obj for obj in _load(os.path.join(state_dir, "objects.yaml")) if obj["kind"] != "Namespace" or
               server.request("GET", "/api/v1/namespaces/" + obj["metadata"]["name"]).status == 404]  # create's
    build.load_objects(server.session, objects, _load(os.path.join(state_dir, "crds.yaml")))
    started = time.monotonic()
    wait_for(lambda: fleet.deployments_settled(server), "every Deployment to be available", timeout=240, interval=1)
    wait_for(lambda: all(lease_holder(server, name) for name in capi.LEADER_LEASES), "the managers to hold their leases",
             timeout=120, interval=1)
    wait_for(lambda: steady(server, STANDARD_GROUP), "the workload cluster's Machines to run", timeout=RUNNING_TIMEOUT,
             interval=1)
    time.sleep(15)  # conditions settle after the last Machine runs
    state = capi_state(server, STANDARD_GROUP)
    with open(reference, "w") as handle:
        json.dump(state, handle, indent=1)
    print("steady on the standard groups %.0f s after the objects were created: %d Machines Running"
          % (time.monotonic() - started, len(state["machines"])))
    return state


def _first_report(reports):
    """The converge's report: the oldest run under `reports` that migrated a cluster."""
    for run in sorted(os.listdir(reports)):
        path = os.path.join(reports, run, "report.json")
        if os.path.exists(path):
            with open(path) as handle:
                report = json.load(handle)
            if report.get("clusters"):
                return report
    raise CheckFailed("no fleet report with a migrated cluster under %s" % reports)


def _managers_through_their_sidecars(server, restarts):
    """Each manager's Deployment runs its manager and the sidecar in containerd's containers, every one Ready and
    never restarted; the Pod holding the manager's lease is one of them. The managers' restarts also go into
    `restarts` ({deployment: count}, for the summary): v1.14.2 exits when its first request fails, and a new Pod's
    sidecar answers 503 until it has read its mode (capi_proxy/proxy/mode.py), so the kubelet must start the manager
    only once the sidecar is ready (its postStart hook, capi_proxy/waitready.py)."""
    from testenv import capi  # pylint: disable=import-outside-toplevel
    pods = server.request("GET", "/api/v1/namespaces/%s/pods" % hcp_namespace()).json()["items"]
    problems = []
    for deployment in capi.HCP_DEPLOYMENTS:
        live = [pod for pod in pods if (pod["metadata"].get("labels") or {}).get("app") == deployment
                and not pod["metadata"].get("deletionTimestamp")]
        if len(live) != 1:
            problems.append("%s: %d live Pods, expected 1" % (deployment, len(live)))
            continue
        statuses = {status["name"]: status for status in live[0]["status"].get("containerStatuses", [])}
        if set(statuses) != {"manager", capi.SIDECAR}:
            problems.append("%s: containers %s, expected manager and %s" % (deployment, sorted(statuses), capi.SIDECAR))
        restarts[deployment] = (statuses.get("manager") or {}).get("restartCount")
        for name, status in sorted(statuses.items()):
            if not status.get("ready") or status.get("restartCount") or \
                    not (status.get("containerID") or "").startswith("containerd://"):
                problems.append("%s/%s: ready %s, restarts %s, id %s" % (
                    deployment, name, status.get("ready"), status.get("restartCount"), status.get("containerID")))
        if lease_holder(server, deployment) != live[0]["metadata"]["name"]:
            problems.append("%s: its lease is held by %s, not by its Pod %s" % (
                deployment, lease_holder(server, deployment), live[0]["metadata"]["name"]))
    return problems


def check(state_dir, kubeconfig, reports):
    """After the migration (module docstring). Returns the scaled state, written to reference.json."""
    from testenv.client import KubeconfigServer, wait_for  # pylint: disable=import-outside-toplevel
    server = KubeconfigServer(kubeconfig)
    reference_path = os.path.join(state_dir, "reference.json")
    with open(reference_path) as handle:
        reference = json.load(handle)
    cluster = _first_report(reports)["clusters"][0]
    if cluster.get("controllers_down_seconds") != 0:
        raise CheckFailed("the migration stopped the CAPI controllers for %s s (zero-stop expected): %s"
                          % (cluster.get("controllers_down_seconds"), json.dumps(cluster)[:2000]))
    if capi_state(server, STANDARD_GROUP)["machines"]:
        raise CheckFailed("standard Machines are left after the migration")
    after = wait_for(lambda: steady(server, PRIVATE_GROUP, machines=len(reference["machines"])),
                     "the migrated workload cluster's Machines to run", timeout=60, interval=1)
    restarts = {}
    problems = replacements(reference, after) + _managers_through_their_sidecars(server, restarts)
    if problems:
        raise CheckFailed("after the migration: " + "; ".join(problems))
    # an operator's scale after the migration: on the private group, where the objects now live; only the managers,
    # through their sidecars (they speak cluster.x-k8s.io), can make and run the new Machine
    replicas = len([name for name in after["machines"] if "-md-0-" in name]) + 1
    response = server.request("PATCH", "/apis/%s/v1beta2/namespaces/%s/machinedeployments/%s-md-0"
                              % (PRIVATE_GROUP, hcp_namespace(), CLUSTER), {"spec": {"replicas": replicas}})
    if response.status != 200:
        raise CheckFailed("scaling MachineDeployment %s-md-0 to %d: %r" % (CLUSTER, replicas, response))
    scaled = wait_for(lambda: steady(server, PRIVATE_GROUP, machines=len(after["machines"]) + 1),
                      "the scaled MachineDeployment's new Machine to run", timeout=RUNNING_TIMEOUT, interval=1)
    if not set(after["machines"]) < set(scaled["machines"]) or scaled["machinesets"] != after["machinesets"]:
        raise CheckFailed("the scale replaced Machines or MachineSets: %s" % replacements(after, scaled))
    with open(reference_path, "w") as handle:
        json.dump(scaled, handle, indent=1)
    print("migrated with the controllers up (controllers_down_seconds 0, reconcile paused %s s); nothing replaced; "
          "the managers lead from their Pods through the sidecar (their restarts: %s); MachineDeployment "
          "%s-md-0 scaled to %d on the private group: %d Machines Running"
          % (cluster.get("reconcile_paused_seconds"), restarts, CLUSTER, replicas, len(scaled["machines"])))
    return scaled


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m testenv.capi_hosted", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("manifests").add_argument("state_dir")
    wire = sub.add_parser("crds")
    wire.add_argument("state_dir")
    wire.add_argument("--webhook-service", required=True)
    wire.add_argument("--ca-bundle", required=True)
    for name in ("load", "check"):
        command = sub.add_parser(name)
        command.add_argument("state_dir")
        command.add_argument("--kubeconfig", required=True)
        if name == "check":
            command.add_argument("--reports", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "manifests":
            print("\n".join(write_manifests(args.state_dir)))
        elif args.command == "crds":
            print("%d CRDs in %s" % (len(write_crds(args.state_dir, args.webhook_service, args.ca_bundle)),
                                     os.path.join(args.state_dir, "crds.yaml")))
        elif args.command == "load":
            load(args.state_dir, args.kubeconfig)
        else:
            check(args.state_dir, args.kubeconfig, args.reports)
    except (AssertionError, ValueError) as error:  # CheckFailed and wait_for's timeouts
        print("error: %s" % error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
