# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The verify judgement of one HostedCluster, pure (no I/O, no Ansible, inputs never mutated).

capi_owners_outside() picks the ownerReferences that point outside the objects read; capi_verify_judge() turns what
was read (state, counts, the count record, owner look-ups, HostedControlPlane, Deployments, ConfigMap) into
{ok, problems, ...}. Used by the module hypershift.private_capi.capi_verify (which reads) and by the filters of the
same names (plugins/filter/fleet_verify.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import sidecar
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe
from ansible_collections.hypershift.private_capi.plugins.module_utils.move import graph


class VerifyInputError(PrivateCapiError, ValueError):
    """What was passed to the judgement is not what it reads; the message says what was expected."""


SIDECAR = sidecar.CONTAINER_NAME


def _uids(objects):
    return set((obj.get("metadata") or {}).get("uid") for obj in objects if obj)


def capi_owners_outside(objects, others=()):
    """The ownerReferences of objects whose uid is none of objects' or others' uids, once each, sorted."""
    known = _uids(list(objects) + list(others or []))
    outside = {}
    for obj in objects:
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("uid") not in known:
                key = (ref.get("apiVersion"), ref.get("kind"), ref.get("name"), ref.get("uid"))
                outside[key] = {"apiVersion": key[0], "kind": key[1], "name": key[2], "uid": key[3]}
    return [outside[key] for key in sorted(outside, key=lambda k: tuple(str(part) for part in k))]


def _record(raw, where):
    if raw is None:
        return None, ["%s has no count record (annotation hypershift.openshift.io/capi-migration-counts, written by the "
                      "migrate role at the copy): migrate it with this collection's migrate role" % where]
    try:
        record = json.loads(raw)
    except ValueError as error:
        return None, ["%s: count record %r is not JSON (%s); restore it from the run's report" % (where, raw, error)]
    if not isinstance(record, dict):
        return None, ["%s: count record %r is not a {kind: count} object" % (where, raw)]
    return record, []


def _count_problems(record, private_counts, where):
    problems = []
    for kind in sorted(set(record) | set(private_counts)):
        expected, found = int(record.get(kind, 0)), int(private_counts.get(kind, 0))
        if expected != found:
            problems.append("%s: %d private %s objects, the record before migration says %d; compare the HCP namespace "
                            "with the run's report" % (where, found, kind, expected))
    return problems


def _ref_key(ref):
    return "%s/%s/%s" % (ref.get("apiVersion"), ref.get("kind"), ref.get("name"))


def _owner_problems(outside, lookup_results, where):
    """lookup_results: the k8s_info loop results ({item: ref, resources: [...]}) for the refs in outside."""
    lookups = {}
    for result in lookup_results:
        found = result.get("resources") or []
        lookups[_ref_key(result.get("item") or {})] = (found[0].get("metadata") or {}).get("uid") if found else None
    problems = []
    for ref in outside:
        found = lookups.get(_ref_key(ref))
        if found is None:
            problems.append("%s: ownerReference %s %s (uid %s) points at nothing" % (where, ref["kind"], ref["name"], ref["uid"]))
        elif found != ref["uid"]:
            problems.append("%s: ownerReference %s %s has uid %s, the object has uid %s (not re-pointed)"
                            % (where, ref["kind"], ref["name"], ref["uid"], found))
    return problems


def _sidecar_problems(deployments, names, config_map_present, where):
    problems = []
    present = dict(((d.get("metadata") or {}).get("name"), d) for d in deployments)
    for name in names:
        if name not in present:
            continue
        containers = [c.get("name") for c in present[name]["spec"]["template"]["spec"].get("containers") or []]
        if sidecar.points_at_shared(present[name]):
            if sidecar.shared_proxy_of(deployments) is None:
                problems.append("%s: Deployment %s points at the shared API proxy, but Deployment %s is missing; re-run "
                                "the api_proxy role" % (where, name, sidecar.SHARED_NAME))
        elif SIDECAR not in containers:
            problems.append("%s: Deployment %s has containers %s, expected the sidecar %s (or a pointer at the shared "
                            "API proxy); re-run the api_proxy role" % (where, name, containers, SIDECAR))
    if not config_map_present:
        problems.append("%s: ConfigMap capi-proxy-kubeconfig (the sidecar's kubeconfig) is missing; re-run the api_proxy "
                        "role" % where)
    return problems


def capi_verify_judge(inputs):
    """The verify result of one HostedCluster from what the verify role read (pure; see capi_verify_judge.yml)."""
    if not isinstance(inputs, dict):
        raise VerifyInputError("capi_verify_judge: expected a dict of what was read, got %s" % type(inputs).__name__)
    where = describe(hypershift.HOSTEDCLUSTER_KIND, inputs.get("name"), inputs.get("namespace"))
    standard = dict((k, v) for k, v in (inputs.get("standard_counts") or {}).items() if int(v))
    private = dict((k, int(v)) for k, v in (inputs.get("private_counts") or {}).items() if int(v))
    problems = []
    if inputs.get("state") != "migrated":
        problems.append("%s: migration state %s, expected migrated" % (where, inputs.get("state")))
    if standard:
        problems.append("%s: objects left in the standard CAPI groups %s, expected none; re-run migrate_fleet.yml"
                        % (where, ", ".join("%s=%s" % item for item in sorted(standard.items()))))
    record, record_problems = _record(inputs.get("record"), where)
    problems += record_problems
    if record is not None:
        problems += _count_problems(record, private, where)
    problems += _owner_problems(inputs.get("outside_owners") or [], inputs.get("owner_lookups") or [], where)
    if not inputs.get("hostedcontrolplane"):
        problems.append("%s: HostedControlPlane %s/%s not found" % (where, inputs.get("hcp_namespace"), inputs.get("name")))
    problems += _sidecar_problems(inputs.get("deployments") or [], inputs.get("deployment_names") or [],
                                  inputs.get("config_map_present"), where)
    if inputs.get("conversion_problem"):
        problems.append("%s: %s" % (where, inputs["conversion_problem"]))
    return {"management_cluster": inputs.get("management_cluster"), "namespace": inputs.get("namespace"),
            "name": inputs.get("name"), "state": inputs.get("state"), "objects": sum(private.values()),
            "standard_left": sum(int(v) for v in standard.values()), "ok": not problems, "problems": problems}


def _standard_by_kind(standard):
    """{kind: [objects]} from the rollback's reads: a {kind: objects} mapping, or k8s_info loop results
    ([{item: {kind}, resources: [...]}])."""
    if isinstance(standard, dict):
        return dict((kind, list(objects or [])) for kind, objects in standard.items())
    by_kind = {}
    for result in standard or []:
        if not isinstance(result, dict) or not isinstance(result.get("item"), dict):
            raise VerifyInputError("capi_rollback_judge: standard must be {kind: objects} or the k8s_info loop results "
                                   "(each with item.kind and resources), got %r" % (result,))
        by_kind.setdefault(result["item"].get("kind"), []).extend(result.get("resources") or [])
    return by_kind


def rollback_problems(inputs):
    """What is wrong after a rollback's copy back and scale-up, from what was read (pure): [] when all is well.

    inputs: counts (capi_object_migrate's RV(counts) of the copy back: {kind: {found, remaining, ...}}), standard (the
    standard objects of the kinds copied, see _standard_by_kind), deployments (the HCP namespace's Deployments) and
    deployment_names (the CAPI-dependent ones); passthrough_sidecars (true on the zero-stop way back, where the sidecars
    stay in, flipped back to pass-through). Checked: one standard object per private one that stays, for every kind
    the copy found (objects on their way out - a deletion carried back or begun since - are not counted on either
    side); no standard Cluster paused; no proxy sidecar left (unless passthrough_sidecars); every CAPI-dependent
    Deployment available at its replicas.
    """
    if not isinstance(inputs, dict):
        raise VerifyInputError("capi_rollback_judge: expected a dict of what was read, got %s" % type(inputs).__name__)
    counts = dict((kind, count) for kind, count in (inputs.get("counts") or {}).items() if (count or {}).get("found"))
    by_kind = _standard_by_kind(inputs.get("standard"))
    everything = [obj for objects in by_kind.values() for obj in objects]
    leaving = graph.leaving(everything)
    want = set("%s=%s" % (kind, int(count.get("remaining", 0))) for kind, count in counts.items())
    got = set("%s=%d" % (kind, len([obj for obj in by_kind.get(kind, []) if _uid(obj) not in leaving]))
              for kind in by_kind if kind in counts)
    problems = []
    if want != got:
        problems.append("counts per kind differ: private %s but standard %s"
                        % (", ".join(sorted(want - got)) or "none", ", ".join(sorted(got - want)) or "none"))
    for cluster in by_kind.get("Cluster", []):
        if (cluster.get("spec") or {}).get("paused"):
            problems.append("still paused: Cluster %s" % cluster["metadata"]["name"])
    names = inputs.get("deployment_names") or []
    capi = [d for d in inputs.get("deployments") or [] if (d.get("metadata") or {}).get("name") in names]
    for deployment in capi:
        if inputs.get("passthrough_sidecars"):
            continue
        if sidecar.has_sidecar(deployment):
            problems.append("proxy sidecar still in Deployment %s" % deployment["metadata"]["name"])
        elif sidecar.points_at_shared(deployment):
            problems.append("Deployment %s still points at the shared API proxy" % deployment["metadata"]["name"])
    available = [int((d.get("status") or {}).get("availableReplicas") or 0) for d in capi]
    replicas = [int((d.get("spec") or {}).get("replicas") or 0) for d in capi]
    if available != replicas:
        problems.append("Deployments not available (name=available/replicas): " + ", ".join(
            "%s=%d/%d" % (d["metadata"]["name"], have, want_replicas)
            for d, have, want_replicas in zip(capi, available, replicas)))
    return problems


def _uid(obj):
    return (obj.get("metadata") or {}).get("uid")
