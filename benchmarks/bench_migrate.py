"""capi_object_migrate on a real control plane: against a naive kubernetes.core loop, API calls, 220 objects, growth.

All on one control plane (testenv/cluster: etcd, kube-apiserver v1.34, kube-controller-manager with the garbage
collector, kube-scheduler, KWOK) with every CRD HyperShift installs for AWS, Agent, KubeVirt and Azure plus their
private twins installed before the controllers start (core CAPI converting through the collection's shim at
/convert), namespaces built by testenv/hcp/build.py; API calls are counted from kube-apiserver's audit log:
(a) 200 CAPI objects migrated (copy + status + delete) by one module task vs benchmarks/naive_migrate.yml (one
    kubernetes.core task per object and step), both through ansible-playbook: wall time and ratio (target 20x);
(b) API calls per migrated object, counted by the server's request log (target <= 3.5);
(c) 100 Machines (~220 objects) (target < 10 s);
(d) 50, 200, 800 objects: time and calls per object (must not grow).
The naive loop costs about 5 s per object (five module runs), so by default it runs on 40 objects (both sides
measured on that fixture) and its 200-object time is extrapolated linearly (its cost per object is constant: each
task item is one module run); BENCH_MIGRATE_NAIVE_OBJECTS=200 measures it on 200 objects (~18 minutes).

Beside each figure, "was on tests/kubeapi" is the same figure at 8afd1a1 against tests/kubeapi (same busy 2-core
machine): was on tests/kubeapi: (a) 162.6x faster at 200 objects (module 6.4 s, naive extrapolated at 5.22 s/object),
(b) 3.98 / 3.25 / 3.06 calls/object at 50 / 200 / 800 objects, (c) 2.87 s in the module, 3.45 s with process start,
(d) 11.68 / 11.85 / 13.20 ms/object, per-object cost 800 vs 50 objects 1.13x.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from testenv.cluster.testing import start_cluster
from testenv import REPO_ROOT
from testenv.hcp import build
from testenv.module_runner import run_module

NAIVE_PLAYBOOK = os.path.join(REPO_ROOT, "benchmarks", "naive_migrate.yml")
# The figures as this benchmark printed them at 8afd1a1 against tests/kubeapi (python -m benchmarks migrate)
KUBEAPI_8AFD1A1 = {"a": 162.6, "c": (2.87, 3.45), "d": 1.13,
                   ("b", 50): (3.98, 3.98), ("b", 200): (3.25, 3.25), ("b", 800): (3.06, 3.06),
                   ("d", 50): (0.58, 11.68), ("d", 200): (2.37, 11.85), ("d", 800): (10.56, 13.20)}
MODULE_PLAY = """- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - hypershift.private_capi.capi_object_migrate:
        kubeconfig: "{{ kubeconfig }}"
        hcp_namespace: "{{ namespace }}"
        delete_source: true
"""


def machines_for(objects):
    """Machines in one pool so that the namespace holds `objects` CAPI objects (2 per Machine + 6)."""
    return max(1, (objects - 6) // 2)


def load(session, crds, label, machines, node_pools=1):
    objects = build.build_hcp_namespace("AWS", label, "bench", machines=machines, node_pools=node_pools, deleting=0)
    build.load_objects(session, objects, crds, parallelism=16)
    capi = [obj for obj in objects if "cluster.x-k8s.io/" in obj["apiVersion"]]
    return objects[0]["metadata"]["name"], objects, len(capi)


def namespace_requests(server, since, namespace):
    entries = server.request_counts(since)["entries"]
    return len([entry for entry in entries if entry["namespace"] == namespace]), len(
        [entry for entry in entries if not entry["namespace"]])


def playbook(path, extra_vars_file):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"))
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", path,
               "-e", "@" + extra_vars_file]
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (path, completed.stdout[-3000:]))
    return elapsed


def naive_objects(objects):
    """The naive playbook's loop items, owners first (the fixture lists owners before dependents)."""
    items = []
    plurals = {("Cluster",): "clusters"}
    for obj in objects:
        if "cluster.x-k8s.io/" not in obj["apiVersion"]:
            continue
        group, _slash, version = obj["apiVersion"].rpartition("/")
        plural = plurals.get((obj["kind"],)) or obj["kind"].lower() + "s"
        items.append({"api_version": obj["apiVersion"], "kind": obj["kind"], "plural": plural, "name": obj["metadata"]["name"],
                      "target_api_version": "%s/%s" % (group.replace("cluster.x-k8s.io", "cluster.hypershift.openshift.io"), version)})
    return items


def was(key, text="%s"):
    value = KUBEAPI_8AFD1A1.get(key)
    return "was on tests/kubeapi: %s" % ("-" if value is None else text % value)


def main():
    workdir = tempfile.mkdtemp(prefix="bench-migrate-")
    crds = build.crd_documents()
    server = start_cluster(os.path.join(workdir, "cluster"), crds=crds, pods="kwok-only")
    try:
        session = build.RestSession(server.kubeconfig, connections=32)
        version = server.request("GET", "/version").json().get("gitVersion")
        print("server: kube-apiserver %s (testenv/cluster, with controllers and KWOK) with %d CRDs (HyperShift's "
              "AWS/Agent/KubeVirt/Azure + private twins)" % (version, len(crds)))

        # (a) module vs naive loop through ansible-playbook: both measured on the naive size, the module also on 200
        module_play = os.path.join(workdir, "module.yml")
        with open(module_play, "w") as handle:
            handle.write(MODULE_PLAY)

        def module_playbook(label, size):
            namespace, _objects, count = load(session, crds, label, machines_for(size))
            variables = os.path.join(workdir, label + ".json")
            with open(variables, "w") as handle:
                json.dump({"kubeconfig": server.kubeconfig, "namespace": namespace}, handle)
            return count, playbook(module_play, variables)

        naive_size = int(os.environ.get("BENCH_MIGRATE_NAIVE_OBJECTS", "40"))
        small_count, module_small = module_playbook("amodsmall", naive_size)
        big_count, module_big = module_playbook("amodbig", 200)
        namespace, objects, naive_count = load(session, crds, "anaive", machines_for(naive_size))
        with open(os.path.join(workdir, "naive.json"), "w") as handle:
            json.dump({"kubeconfig": server.kubeconfig, "server": server.url, "token": server.admin_token,
                       "ca_file": server.ca_file, "hcp_namespace": namespace, "objects": naive_objects(objects)}, handle)
        naive_seconds = playbook(NAIVE_PLAYBOOK, os.path.join(workdir, "naive.json"))
        assert naive_count == small_count
        naive_big = naive_seconds / naive_count * big_count
        print("(a) ansible-playbook wall time, same fixture shape:")
        print("    %4d objects: module %.1f s, naive kubernetes.core loop %.1f s (measured) -> %.1fx faster"
              % (small_count, module_small, naive_seconds, naive_seconds / module_small))
        print("    %4d objects: module %.1f s (measured), naive %.0f s (%s) -> %.1fx faster (target 20x); %s"
              % (big_count, module_big, naive_big, "measured" if naive_count == big_count else "extrapolated at %.2f s/object"
                 % (naive_seconds / naive_count), naive_big / module_big, was("a", "%.1fx faster")))

        # (b) + (d): growth, API calls per object (request log of the server)
        rows = []
        for size in (50, 200, 800):
            namespace, _objects, count = load(session, crds, "g%d" % size, machines_for(size))
            since = server.request_counts()["entries"][-1]["seq"]
            result = run_module("capi_object_migrate", {"kubeconfig": server.kubeconfig, "namespace": namespace,
                                                        "delete_source": True}, timeout=600)
            if result.failed:
                raise RuntimeError("module failed on %d objects: %s" % (count, result.get("msg")))
            in_namespace, cluster_wide = namespace_requests(server, since, namespace)
            calls = result["api_calls"]["total"]
            rows.append((count, result["elapsed_seconds"], calls, in_namespace + cluster_wide))
        print("(b) API calls per migrated object (copy, status, dependents, finalizers, delete; module's count / server log):")
        for count, seconds, calls, logged in rows:
            print("    %4d objects: %.2f calls/object (server log %.2f); %s" % (
                count, calls / count, logged / count, was(("b", count), "%.2f calls/object (server log %.2f)")))
        print("(d) growth (module run time, excluding interpreter start):")
        for count, seconds, calls, logged in rows:
            print("    %4d objects: %.2f s, %.2f ms/object; %s"
                  % (count, seconds, 1000 * seconds / count, was(("d", count), "%.2f s, %.2f ms/object")))
        per_object = [seconds / count for count, seconds, _c, _l in rows]
        print("    per-object cost 800 vs 50 objects: %.2fx (flat = 1.0; must not grow); %s"
              % (per_object[2] / per_object[0], was("d", "%.2fx")))

        # (c) 100 Machines, about 220 objects, including the module's process start (none being deleted: delete_source
        # refuses while a deletion is in flight)
        namespace, _objects, count = load(session, crds, "c100", 50, node_pools=2)
        started = time.perf_counter()
        result = run_module("capi_object_migrate", {"kubeconfig": server.kubeconfig, "namespace": namespace,
                                                    "delete_source": True, "verify": True})
        wall = time.perf_counter() - started
        if result.failed:
            raise RuntimeError("module failed: %s" % result.get("msg"))
        calls_per_object = result["api_calls"]["total"] / count
        print("(c) 100 Machines, %d objects (copy + verify + delete): %.2f s in the module, %.2f s with process start "
              "(target < 10 s), %.2f calls/object; %s" % (count, result["elapsed_seconds"], wall, calls_per_object,
                                                          was("c", "%.2f s in the module, %.2f s with process start")))
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
