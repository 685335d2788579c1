"""Shared helpers of the fleet tests: a real control plane loaded with a fleet, and ansible-playbook runs against it."""
import base64
import json
import os
import signal
import subprocess
import sys

import yaml

from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    AGENT_EXTRA_GROUPS, PRIVATE_SUFFIX, TO_PRIVATE, GroupMap, translate_object)
from testenv.client import wait_for
from testenv.cluster.testing import start_cluster
from testenv import REPO_ROOT, capi, yamlio
from testenv.hcp import build, fleet, state

ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
FAST_VARS = {"private_capi_migrate_pause_settle_seconds": 0, "private_capi_migrate_health_stable_seconds": 0}


# The real core manager's leader election with a short lease (test_leader_handover, test_shared_proxy): what those tests
# check - who may write the Lease, and when; that the manager leads through a proxy - does not depend on the durations
SHORT_LEASE_ARGS = ["--leader-elect=true", "--leader-elect-lease-duration=20s", "--leader-elect-renew-deadline=15s",
                    "--leader-elect-retry-period=4s"]


def manager_pods(server, namespace):
    """The cluster-api Pods of namespace (those being deleted included)."""
    pods = server.request("GET", "/api/v1/namespaces/%s/pods" % namespace).json()["items"]
    return [p for p in pods if p["metadata"]["name"].startswith("cluster-api-")]


def core_manager_leads(server, namespace):
    """The one live cluster-api Pod of namespace, when its manager holds its Lease (else None)."""
    live = [p["metadata"]["name"] for p in manager_pods(server, namespace) if not p["metadata"].get("deletionTimestamp")]
    holder = capi.lease_holder_pod(server, namespace, capi.LEADER_LEASES["cluster-api"])
    return holder if live == [holder] else None


def start_electing_fleet(tmp_path, name, machines=1):
    """start_fleet of the one HostedCluster name whose cluster-api runs the real core manager electing its leader with
    SHORT_LEASE_ARGS (testenv.capi.run_electing_core_manager), returned once it leads: (server, crds)."""
    server, crds = start_fleet(tmp_path, fleet.fleet_spec(1, machines=machines), managers=("cluster-api",),
                               extra_crds=build.all_core_crds())
    try:
        capi.run_electing_core_manager(server, hcp_ns(name), SHORT_LEASE_ARGS)
        wait_for(lambda: core_manager_leads(server, hcp_ns(name)), "the core manager of cluster-api to hold its Lease",
                 timeout=180, interval=1)
    except BaseException:
        server.stop()
        raise
    return server, crds


def start_fleet(tmp_path, spec, faults=False, pods="node", private_crds=True, managers=(), extra_crds=(),
                placeholders=()):
    """A real control plane with the fleet of spec loaded; returns (server, crds). With faults, the server's
    kubeconfig goes through the fault-injecting proxy (server.add_fault). pods: testenv.cluster.testing.start_cluster's
    (the default: a real node, on which every Pod runs, the fixtures' own Deployments with a placeholder image;
    "kwok-only" fakes them all: such a fleet's runs need bed_webhook_vars). private_crds=False starts as a real
    management cluster does, without the private CRDs: the collection's first migration creates them (role
    private_crds); the modules' own tests need them there. managers: the HCP Deployments (cluster-api, capi-provider)
    whose Pods run the real CAPI manager binary (testenv.capi.node_images) instead of the placeholder; placeholders:
    more images the node has as the placeholder (of the containers a test adds);
    extra_crds: more standard CRDs to install beside the seed's (those it has already are left as they are).
    crds: every CRD of the fleet, the private ones included (snapshots read both groups)."""
    seed = os.path.join(str(tmp_path), "seed")
    fleet.seed_fleet_dir(seed, spec)
    with open(os.path.join(seed, "crds.yaml")) as handle:
        crds = yamlio.load_all(handle)
    names = set(crd["metadata"]["name"] for crd in crds)
    crds = crds + [crd for crd in extra_crds if crd["metadata"]["name"] not in names]
    installed = crds if private_crds else [crd for crd in crds if not crd["spec"]["group"].endswith(PRIVATE_SUFFIX)]
    node_images = capi.node_images(fleet.seed_objects(seed), managers=managers,
                                                  placeholders=placeholders) if pods == "node" else ()
    server = start_cluster(os.path.join(str(tmp_path), "cluster"), crds=installed, pods=pods, node_images=node_images)
    try:
        fleet.load_fleet_dir(server.kubeconfig, seed, crds_installed=True)
        fleet.wait_settled(server, "the fleet's Deployments to be available", timeout=120)
        if faults:
            server.enable_faults()
    except BaseException:
        server.stop()
        raise
    return server, crds


def bed_webhook_vars(server):
    """Extra vars for a kwok-only fleet, whose shim and sidecar Pods KWOK fakes: the private CRDs pointed at the test
    bed's own /convert (testenv.cluster.convert, on loopback) instead of the conversion shim the collection deploys,
    and the scale_down strategy (a faked sidecar never acknowledges a zero-stop flip)."""
    with open(server.webhook.ca_file, "rb") as handle:
        ca_bundle = base64.b64encode(handle.read()).decode()
    return {"private_capi_crds_conversion_webhook_url": server.webhook.url,
            "private_capi_crds_conversion_webhook_ca_bundle": ca_bundle, "private_capi_migrate_strategy": "scale_down"}


# written by kube-controller-manager's deployment controller: a rollback that restores a Deployment's pod template
# makes it revision N+1 (the old ReplicaSet is reused and renumbered), as `kubectl rollout undo` does
CONTROLLER_ANNOTATIONS = ("deployment.kubernetes.io/revision",)


def user_annotations(metadata):
    """metadata.annotations without those the controllers own (CONTROLLER_ANNOTATIONS)."""
    return {key: value for key, value in (metadata.get("annotations") or {}).items()
            if key not in CONTROLLER_ANNOTATIONS}


def write_inventory(tmp_path, kubeconfig, name="mc-1", host_vars=None):
    """An inventory of one management cluster; host_vars (bed_webhook_vars for a kwok-only fleet) go on every host
    (group all: the HostedClusters the fleet role adds as hosts get them too), the kubeconfig on the cluster's."""
    path = os.path.join(str(tmp_path), "inventory.yml")
    with open(path, "w") as handle:
        yaml.safe_dump({"all": {"vars": dict(host_vars or {}), "children": {"management_clusters": {"hosts": {
            name: {"private_capi_kubeconfig": kubeconfig}}}}}}, handle)
    return path


def _playbook_command(playbook, inventory, extra_vars, check):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    command = [ANSIBLE_PLAYBOOK, "-i", inventory, os.path.join(REPO_ROOT, "playbooks", playbook),
               "-e", json.dumps(dict(FAST_VARS, **(extra_vars or {})))]
    if check:
        command.append("--check")
    return command, env


def run_playbook(playbook, inventory, extra_vars=None, check=False, timeout=600):
    command, env = _playbook_command(playbook, inventory, extra_vars, check)
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def start_playbook(playbook, inventory, output_path, extra_vars=None, check=False):
    """ansible-playbook in the background, stdout+stderr to output_path, in its own process group so that
    kill_playbook can SIGKILL the whole run (ansible-playbook, its forks and their modules) as a dying host would."""
    command, env = _playbook_command(playbook, inventory, extra_vars, check)
    with open(output_path, "w") as output:
        return subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=output, stderr=subprocess.STDOUT,
                                start_new_session=True)


def kill_playbook(process):
    """SIGKILL a start_playbook run and every process of its group; returns the exit code (-9)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return process.wait(30)


def hcp_ns(name):
    """The HCP namespace of HostedCluster clusters/<name>."""
    return "%s-%s" % (fleet.HC_NAMESPACE, name)


def list_items(server, path):
    response = server.request("GET", path)
    assert response.status == 200, "%s: %r" % (path, response)
    return response.json()["items"]


def hostedclusters(server, namespace=fleet.HC_NAMESPACE):
    """The HostedClusters of the fleet's namespace (one LIST)."""
    return server.request("GET", "/apis/hypershift.openshift.io/v1beta1/namespaces/%s/hostedclusters"
                          % namespace).json()["items"]


def hostedcluster_states(server):
    return {hc["metadata"]["name"]: (hc["metadata"].get("labels") or {}).get(fleet.STATE_LABEL)
            for hc in hostedclusters(server)}


def hostedcluster(server, name, namespace=fleet.HC_NAMESPACE):
    response = server.request("GET", "/apis/hypershift.openshift.io/v1beta1/namespaces/%s/hostedclusters/%s"
                              % (namespace, name))
    assert response.status == 200, "HostedCluster %s/%s: %r" % (namespace, name, response)
    return response.json()


def private_keys(canonical):
    """The keys of a snapshot that are objects of the private CAPI groups (*cluster.hypershift.openshift.io)."""
    return sorted(key for key in canonical if key.split("/")[0].endswith("cluster.hypershift.openshift.io"))


def standard_keys(canonical):
    """The keys of a snapshot that are objects of the standard CAPI groups (*cluster.x-k8s.io)."""
    return sorted(key for key in canonical if key.split("/")[0].endswith("cluster.x-k8s.io"))


def snapshot(server, crds, namespace):
    return state.snapshot(build.RestSession(server.kubeconfig), namespace, crds)


def read_report(report_root):
    runs = sorted(os.listdir(report_root))
    with open(os.path.join(report_root, runs[-1], "report.json")) as handle:
        return json.load(handle)


# The migrate role's phases in order; the CAPI controllers are down from scale_down to resume only
MIGRATION_PHASES = ["crds", "pause", "prepare", "scale_down", "copy", "resume", "signal", "health", "finish"]
WINDOW_PHASES = ("scale_down", "copy", "resume")


def window_problems(cluster):
    """What is wrong with a migrated cluster's record of its window without CAPI controllers: it must be there, and
    hold no phase that could run before the pause or after the controllers are back (by the marks' times)."""
    window = cluster.get("controllers_down") or {}
    if cluster.get("controllers_down_seconds") is None or not window.get("stopped_at"):
        return ["%s: no window recorded: %r" % (cluster["name"], window)]
    problems = []
    start, end = window["stopped_at"][:26], window["available_at"][:26]  # marks: the same format without the Z
    phases = cluster["phases"]
    if cluster.get("resumed"):  # stopped by the run it resumes: this run's steps before its own scale_down are inside
        names = [phase["name"] for phase in phases]
        phases = phases[names.index("scale_down"):] if "scale_down" in names else []
    for phase in phases:
        inside = phase["start"] < end and phase["end"] > start
        if inside and phase["name"] not in WINDOW_PHASES:
            problems.append("%s: phase %s (%s to %s) runs while the controllers are down (%s to %s)"
                            % (cluster["name"], phase["name"], phase["start"], phase["end"], start, end))
    if not 0 <= cluster["controllers_own_seconds"] <= cluster["controllers_down_seconds"]:
        problems.append("%s: own part %r of %r" % (cluster["name"], cluster["controllers_own_seconds"],
                                                   cluster["controllers_down_seconds"]))
    return problems


def _without_provenance(obj):
    copy = json.loads(json.dumps(obj))
    annotations = copy["metadata"].get("annotations") or {}
    for key in (state.SOURCE_UID_ANNOTATION, state.SOURCE_VERSION_ANNOTATION):
        annotations.pop(key, None)
    if not annotations:
        copy["metadata"].pop("annotations", None)
    return copy


def migrated_content_problems(before, after):
    """What a migration lost or changed: each standard CAPI object of the `before` snapshot must be in `after` as its
    private twin with the same content (groups translated, provenance annotations ignored), and no standard CAPI
    object may be left. [] when nothing was lost."""
    group_map = GroupMap(AGENT_EXTRA_GROUPS)
    problems = ["standard object left: " + key for key in standard_keys(after)]
    for key in standard_keys(before):
        expected = _without_provenance(translate_object(before[key], TO_PRIVATE, group_map))
        private_key = "%s/%s/%s" % (expected["apiVersion"].rpartition("/")[0], expected["kind"],
                                    expected["metadata"]["name"])
        if private_key not in after:
            problems.append("lost: %s (no %s)" % (key, private_key))
            continue
        got = _without_provenance(after[private_key])
        if got != expected:
            problems.append("%s differs from its source %s:\n  expected %s\n  found    %s" % (
                private_key, key, json.dumps(expected, sort_keys=True), json.dumps(got, sort_keys=True)))
    return problems


def differences(expected, found, path=""):
    """Where two JSON-like values differ, one line per differing leaf ("path: expected X, found Y"); [] if equal."""
    if isinstance(expected, dict) and isinstance(found, dict):
        lines = []
        for key in sorted(set(expected) | set(found), key=str):
            where = "%s/%s" % (path, key)
            if key not in found:
                lines.append("%s: expected %s, missing" % (where, json.dumps(expected[key], sort_keys=True)[:300]))
            elif key not in expected:
                lines.append("%s: unexpected %s" % (where, json.dumps(found[key], sort_keys=True)[:300]))
            else:
                lines += differences(expected[key], found[key], where)
        return lines
    if expected != found:
        return ["%s: expected %s, found %s" % (path or "/", json.dumps(expected, sort_keys=True)[:300],
                                               json.dumps(found, sort_keys=True)[:300])]
    return []


def kubectl(server, *args, stdin=None):
    """kubectl as the admin of the test bed; its stdout."""
    result = subprocess.run(["kubectl", "--kubeconfig", server.kubeconfig] + list(args), input=stdin,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def shipped_identity(server, entry_point, hcp_namespaces):
    """The shipped meta/rbac/<entry_point>.yaml applied with kubectl as a user would, its HCP role bound in each of
    hcp_namespaces (the guide's per-namespace RoleBinding); a kubeconfig with a token of its ServiceAccount."""
    from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac import render
    from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac.rules import role_names
    kubectl(server, "apply", "-f", os.path.join(REPO_ROOT, "meta", "rbac", "%s.yaml" % entry_point))
    bindings = [render.hcp_role_binding(entry_point, namespace) for namespace in hcp_namespaces]
    kubectl(server, "apply", "-f", "-", stdin=yaml.safe_dump_all(bindings))
    token = kubectl(server, "-n", render.IDENTITY_NAMESPACE, "create", "token", role_names(entry_point)["account"],
                    "--duration", "2h").strip()
    return server.token_kubeconfig(entry_point, token)


def without_rule(entry_point, role_kind, role_name, keep):
    """The shipped manifests of entry_point with the rules of one role filtered by keep(rule)."""
    with open(os.path.join(REPO_ROOT, "meta", "rbac", "%s.yaml" % entry_point)) as handle:
        listed = yaml.safe_load(handle)
    for item in listed["items"]:
        if item["kind"] == role_kind and item["metadata"]["name"] == role_name:
            before = len(item["rules"])
            item["rules"] = [rule for rule in item["rules"] if keep(rule)]
            assert len(item["rules"]) == before - 1, item["rules"]
    return yaml.safe_dump(listed)
