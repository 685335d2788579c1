# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner of hypershift.private_capi.hcp_quiesce: fence, pause, scale the CAPI consumers of one HCP namespace.

Pure parts (no I/O, inputs never mutated): the merge patches (fence_patch, hold_patch, unfence_patch, pause_patch,
stop_patch, start_patch, unrecord_patch), the pod ownership test (owned_pods) and the availability test
(unavailable). QuiesceService does the requests in the documented order:
quiesced: fence -> pause -> check the pause holds -> record and scale to 0 -> wait for the pods to go;
resumed: scale back to the record -> wait available -> unpause -> remove the records -> lift the fence.
Errors are not retried: a step that fails stops the run and the caller rolls back.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import time
from datetime import datetime, timedelta, timezone

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    ANNOTATION_TIME_FORMAT,
    EVENT_TIME_FORMAT,
    PAUSED_ANNOTATION,
    PAUSED_UNTIL_ANNOTATION,
    PHASE_ANNOTATION,
    REPLICAS_ANNOTATION,
    STOPPED_AT_ANNOTATION,
    format_time,
    utc_now,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift
from ansible_collections.hypershift.private_capi.plugins.module_utils.merge_patch import merge_patch
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import ModuleService
# ApiError: re-exported, callers and tests catch it from here
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import (  # noqa: F401 pylint: disable=unused-import
    ApiError,
    api_path,
    parallel_map,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine as states
from ansible_collections.hypershift.private_capi.plugins.module_utils.state.fence import HoldsLease
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe

NO_PAUSED_UNTIL = "none"
HYPERSHIFT_GROUP = hypershift.HOSTEDCLUSTER_GROUP
HYPERSHIFT_VERSION = hypershift.HOSTEDCLUSTER_VERSION
# kind -> plural of the objects a pause touches: the Cluster by spec.paused, the others by annotation
PAUSE_OBSERVED_SECONDS = 30  # zero stop: how long a pause may take to be reported by the running controllers
PAUSE_STILL_SECONDS = 2.0  # zero stop: how long the paused objects must stay unchanged once they report the pause
PAUSE_KINDS = (("Cluster", "clusters"), ("MachineDeployment", "machinedeployments"), ("MachineSet", "machinesets"))
POLL_FIRST_DELAY = 0.1
POLL_MAX_DELAY = 1.0


def deployments_options():
    """{option: spec} of the CAPI-dependent Deployments a module stops and starts and of its two waits (doc fragment
    hypershift.private_capi.options.deployments)."""
    return dict(deployments=dict(type="list", elements="str", default=[]),
                scale_down_timeout=dict(type="int", default=300), available_timeout=dict(type="int", default=600))


class QuiesceError(PrivateCapiError):
    """A step could not be done or did not complete; the message names the object and what to do."""


def _annotations(obj):
    return (obj.get("metadata") or {}).get("annotations") or {}


def fence_patch(hostedcluster):
    """Merge patch fencing the HyperShift operator (spec.pausedUntil "true", the original kept once), or None."""
    annotations = _annotations(hostedcluster)
    paused_until = (hostedcluster.get("spec") or {}).get("pausedUntil")
    if paused_until == "true" and PAUSED_UNTIL_ANNOTATION in annotations:
        return None
    patch = {"spec": {"pausedUntil": "true"}}
    if PAUSED_UNTIL_ANNOTATION not in annotations:
        patch["metadata"] = {"annotations": {PAUSED_UNTIL_ANNOTATION: paused_until if paused_until else NO_PAUSED_UNTIL}}
    return patch


# the states a pre-install's hold may fence: no migration holds the HostedCluster and it is not migrated
HOLD_STATES = (states.NEW, states.LEGACY, states.FAILED)
# spec.pausedUntil as a time (RFC 3339, what HyperShift's reconciliation-paused check parses besides "true")
PAUSED_UNTIL_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$")
PAUSED_UNTIL_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def paused_until_time(text):
    """The aware datetime of a spec.pausedUntil that is an RFC 3339 time, or None ("true", unset, anything else)."""
    match = PAUSED_UNTIL_TIME.match(text or "") if isinstance(text, str) else None
    if not match:
        return None
    moment = datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S")
    offset = match.group(3)
    if offset == "Z":
        return moment.replace(tzinfo=timezone.utc)
    sign = -1 if offset[0] == "-" else 1
    return moment.replace(tzinfo=timezone(sign * timedelta(hours=int(offset[1:3]), minutes=int(offset[4:6]))))


def hold_patch(hostedcluster, now, hold_seconds):
    """Merge patch holding the HyperShift operator off a HostedCluster for hold_seconds from now (a pre-install's
    fence): spec.pausedUntil the time it ends, the original kept once as fence_patch keeps it, so that the
    migration's fence takes the hold over and lifting it restores the original. None when a pause already holds long
    enough: "true" (a migration's fence, or the user's own) or a time at least half a hold away (a second run within
    half a hold changes nothing). The patch carries the resourceVersion read, so a lock taken since is a conflict.

    Raises QuiesceError when the HostedCluster is in a state a hold may not fence (HOLD_STATES): a migration holds it,
    it is migrated, or its state is invalid."""
    metadata = hostedcluster.get("metadata") or {}
    state = states.state_of(hostedcluster)
    if state not in HOLD_STATES:
        raise QuiesceError(
            "%s is %s: a pre-install holds the HyperShift operator off a HostedCluster only when no migration holds it "
            "and it is not migrated (%s); nothing was changed. Leave it out of the pre-install (private_capi_fleet_states, "
            "private_capi_fleet_names) or let its migration finish" % (
                describe(hypershift.HOSTEDCLUSTER_KIND, metadata.get("name"), metadata.get("namespace")), state,
                ", ".join(HOLD_STATES)))
    paused_until = (hostedcluster.get("spec") or {}).get("pausedUntil")
    if paused_until == "true":
        return None
    until = now + timedelta(seconds=hold_seconds)
    current = paused_until_time(paused_until)
    if current is not None and current >= now + timedelta(seconds=hold_seconds / 2.0):
        return None
    patch = {"spec": {"pausedUntil": until.astimezone(timezone.utc).strftime(PAUSED_UNTIL_FORMAT)},
             "metadata": {"resourceVersion": metadata.get("resourceVersion")}}
    if PAUSED_UNTIL_ANNOTATION not in _annotations(hostedcluster):
        patch["metadata"]["annotations"] = {PAUSED_UNTIL_ANNOTATION: paused_until if paused_until else NO_PAUSED_UNTIL}
    return patch


def unfence_patch(hostedcluster):
    """Merge patch restoring the recorded spec.pausedUntil and dropping the migration's fence and phase records."""
    annotations = _annotations(hostedcluster)
    if PAUSED_UNTIL_ANNOTATION not in annotations and PHASE_ANNOTATION not in annotations:
        return None
    patch = {"metadata": {"annotations": {PAUSED_UNTIL_ANNOTATION: None, PHASE_ANNOTATION: None}}}
    if PAUSED_UNTIL_ANNOTATION in annotations:
        recorded = annotations[PAUSED_UNTIL_ANNOTATION]
        patch["spec"] = {"pausedUntil": None if recorded in (None, NO_PAUSED_UNTIL) else recorded}
    return patch


def pause_patch(obj, paused):
    """Merge patch pausing (or unpausing) one Cluster (spec.paused) or other CAPI object (annotation), or None.

    Unpausing sets a Cluster's spec.paused to false and removes the annotation from the others where present.
    """
    if obj.get("kind") == "Cluster":
        current = (obj.get("spec") or {}).get("paused")
        if current is paused:
            return None
        return {"spec": {"paused": paused}}
    present = PAUSED_ANNOTATION in _annotations(obj)
    if paused and _annotations(obj).get(PAUSED_ANNOTATION) != "true":
        return {"metadata": {"annotations": {PAUSED_ANNOTATION: "true"}}}
    if not paused and present:
        return {"metadata": {"annotations": {PAUSED_ANNOTATION: None}}}
    return None


def stop_patch(deployment, now):
    """Merge patch recording the replicas and the time now (format_time; once, so a resumed run keeps the original and
    still measures the whole window without controllers) and scaling to 0, or None."""
    annotations = _annotations(deployment)
    replicas = (deployment.get("spec") or {}).get("replicas", 1)
    if REPLICAS_ANNOTATION in annotations and replicas == 0:
        return None
    patch = {"spec": {"replicas": 0}}
    if REPLICAS_ANNOTATION not in annotations:
        patch["metadata"] = {"annotations": {REPLICAS_ANNOTATION: str(1 if replicas is None else replicas),
                                             STOPPED_AT_ANNOTATION: now}}
    return patch


def stopped_at(deployments):
    """The earliest time a migration scaled one of deployments to 0 (STOPPED_AT_ANNOTATION), or None."""
    times = []
    for deployment in deployments:
        value = _annotations(deployment).get(STOPPED_AT_ANNOTATION)
        try:
            times.append((datetime.strptime(value, ANNOTATION_TIME_FORMAT), value))
        except (TypeError, ValueError):
            continue  # none (recorded by a release without it), or not ours to judge: the window is then not known
    return min(times)[1] if times else None


def seconds_between(start, end):
    return round((datetime.strptime(end, ANNOTATION_TIME_FORMAT) - datetime.strptime(start, ANNOTATION_TIME_FORMAT))
                 .total_seconds(), 3)


def recorded_replicas(deployment):
    """The replicas recorded on a Deployment, or None; a record that is not a number is an error naming it."""
    value = _annotations(deployment).get(REPLICAS_ANNOTATION)
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        metadata = deployment.get("metadata") or {}
        raise QuiesceError("%s has annotation %s=%r, expected a number of replicas; set it to the replicas the "
                           "Deployment had before the migration, then re-run"
                           % (describe("Deployment", metadata.get("name"), metadata.get("namespace")),
                              REPLICAS_ANNOTATION, value))


def start_patch(deployment):
    """Merge patch scaling a recorded Deployment back to its record, or None (not recorded, or already there)."""
    recorded = recorded_replicas(deployment)
    if recorded is None or (deployment.get("spec") or {}).get("replicas") == recorded:
        return None
    return {"spec": {"replicas": recorded}}


def merge_patch_changes(obj, patch):
    """Whether applying the JSON merge patch to obj would change it."""
    return merge_patch(obj, patch) != obj


def deployment_unchanged(deployment, answer):
    """Whether answer (the server's answer to a patch of deployment, or to its dry run) holds the same spec, labels
    and annotations: a patch of a list (the containers) lacks the fields the API server defaults, so the answer, not
    the patch, says whether it changed the Deployment."""
    return answer.get("spec") == deployment.get("spec") and all(
        (answer.get("metadata") or {}).get(key) == (deployment.get("metadata") or {}).get(key)
        for key in ("labels", "annotations"))


def merge_patches(first, second):
    """One merge patch doing first then second (second wins where both set a key)."""
    if not isinstance(first, dict) or not isinstance(second, dict):
        return second
    merged = dict(first)
    for key, value in second.items():
        merged[key] = merge_patches(merged[key], value) if key in merged else value
    return merged


def deployment_patches_by_name(patches, names):
    """{name: merge patch without apiVersion, kind, metadata.name/namespace} of deployment_patches; an error names a
    patch without a name or for a Deployment not handled."""
    by_name = {}
    for index, patch in enumerate(patches):
        metadata = dict(patch.get("metadata") or {})
        name = metadata.pop("name", None)
        metadata.pop("namespace", None)
        if not name or name not in names:
            raise QuiesceError("deployment_patches[%d] names Deployment %r, expected one of deployments %s; pass the "
                               "patches of the Deployments scaled back" % (index, name, sorted(names)))
        body = dict((key, value) for key, value in patch.items() if key not in ("apiVersion", "kind", "metadata"))
        if metadata:
            body["metadata"] = metadata
        by_name[name] = body
    return by_name


def unrecord_patch(deployment):
    """Merge patch removing the replica record and its time, or None."""
    annotations = _annotations(deployment)
    if REPLICAS_ANNOTATION not in annotations and STOPPED_AT_ANNOTATION not in annotations:
        return None
    return {"metadata": {"annotations": {REPLICAS_ANNOTATION: None, STOPPED_AT_ANNOTATION: None}}}


def owner_pattern(names):
    """Pods of a Deployment belong to its ReplicaSet <deployment>-<hash> (or, on simple servers, the Deployment)."""
    return re.compile("^(%s)(-[a-z0-9]{6,10})?$" % "|".join(re.escape(name) for name in sorted(names)))


def owned_by(pod, pattern):
    """Whether an owner of the pod matches owner_pattern's pattern."""
    return any(pattern.match(ref.get("name") or "") for ref in (pod.get("metadata") or {}).get("ownerReferences") or ())


def owned_pods(pods, names):
    """Names of the pods owned by the named Deployments (directly or through their ReplicaSets), sorted."""
    if not names:
        return []
    pattern = owner_pattern(names)
    return sorted((pod.get("metadata") or {}).get("name") for pod in pods if owned_by(pod, pattern))


def ready_since(pod):
    """When the pod last became Ready (its Ready condition's lastTransitionTime, to the second), or None."""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            try:
                return datetime.strptime(condition.get("lastTransitionTime") or "", EVENT_TIME_FORMAT)
            except ValueError:
                return None
    return None


def available_since(pods, expected):
    """When every Deployment of expected ({name: replicas}) last had that many Ready pods, by the pods' own Ready
    times (ANNOTATION_TIME_FORMAT, to the second): per Deployment the replicas-th earliest, the latest of those. None when one has
    fewer Ready pods, or none is expected to run any."""
    latest = None
    for name, replicas in sorted(expected.items()):
        if replicas <= 0:
            continue
        pattern = owner_pattern([name])
        times = sorted(ready for ready in (ready_since(pod) for pod in pods if owned_by(pod, pattern))
                       if ready is not None)
        if len(times) < replicas:
            return None
        latest = max(latest or times[replicas - 1], times[replicas - 1])
    return latest.strftime(ANNOTATION_TIME_FORMAT) if latest else None


def unavailable(deployments, expected):
    """'name (available/expected)' of each Deployment in expected ({name: replicas}) not yet that available."""
    by_name = dict(((d.get("metadata") or {}).get("name"), d) for d in deployments)
    waiting = []
    for name in sorted(expected):
        status = (by_name.get(name) or {}).get("status") or {}
        available = status.get("availableReplicas") or 0
        if available != expected[name]:
            waiting.append("%s (%d/%d available)" % (name, available, expected[name]))
    return waiting


def _conditions_of(obj):
    """An object's conditions: status.conditions (v1beta2) and status.v1beta2.conditions (v1beta1)."""
    status = obj.get("status") or {}
    return list(status.get("conditions") or []) + list((status.get("v1beta2") or {}).get("conditions") or [])


def pause_unobserved(objects):
    """Kind/name of each object (as read: [(kind, object)]) whose controller has not reported the pause yet: its Paused
    condition (CAPI v1.11 and later report one on every object they reconcile: status.conditions in v1beta2,
    status.v1beta2.conditions in v1beta1) is there and not True. An object without one (an older controller, or one
    never reconciled) is not waited for."""
    waiting = []
    for kind, obj in objects:
        paused = [c.get("status") for c in _conditions_of(obj) if c.get("type") == "Paused"]
        if paused and "True" not in paused:
            waiting.append("%s/%s" % (kind, (obj.get("metadata") or {}).get("name")))
    return sorted(waiting)


def storage_version(client, group):
    """The storage version of CRD clusters.<group> (the version a pause reads and patches), or None without the CRD."""
    crd_name = "clusters." + group
    crd = client.get_or_none(api_path("apiextensions.k8s.io", "v1", "customresourcedefinitions", name=crd_name),
                             "get " + describe("CustomResourceDefinition", crd_name))
    if crd is None:
        return None
    versions = [v.get("name") for v in (crd.get("spec") or {}).get("versions") or () if v.get("storage")]
    if not versions:
        raise QuiesceError("CustomResourceDefinition %s has no storage version; expected one version with "
                           "storage: true; repair the CRD" % crd_name)
    return versions[0]


def read_storage_versions(client, groups):
    """{group: storage_version} of each non-empty group, read at once: for QuiesceService(versions=)."""
    groups = sorted(set(group for group in groups if group))
    return dict(zip(groups, parallel_map(lambda group: storage_version(client, group), groups, len(groups))))


def quiesce_params(hcp_namespace, **overrides):
    """hcp_quiesce's parameters (its argument spec's defaults, no wait) with overrides: how the modules that run the
    service among other steps (hcp_migrate_window, hcp_migrate_finish) call it."""
    params = dict(hcp_namespace=hcp_namespace, state="quiesced", hostedcluster_name="", hostedcluster_namespace="clusters",
                  fence=False, fence_hold_seconds=0, pause_group="", settle_seconds=0, deployments=[], wait_timeout=0, remove_records=False,
                  deployment_patches=[], observe_pause_seconds=0)
    params.update(overrides)
    return params


class QuiesceService(object):
    """One run of hcp_quiesce: the requests, in order, for the module's parameters."""

    def __init__(self, client, params, check_mode=False, sleep=time.sleep, clock=time.monotonic, versions=None):
        self.client = client
        # {group: storage version (None: no CRD)} read ahead by the caller (read_storage_versions), so that a pause
        # or an unpause costs no CRD read; a group not in it is read when needed
        self.versions = dict(versions or {})
        self.params = params
        self.hcp_namespace = params["hcp_namespace"]
        self.check_mode = check_mode
        self.sleep = sleep
        self.clock = clock
        self.changed = False
        self.actions = []
        self.before = {}
        self.after = {}
        self.result = {"core_version": None, "deployments": [], "replicas": {}, "waited_seconds": 0.0,
                       "stopped_at": None, "available_at": None, "controllers_down_seconds": None}
        self.now = utc_now

    # --- requests ---------------------------------------------------------------------------------
    def _patch(self, path, patch, kind, name, namespace, action):
        if not self.check_mode:  # check mode sends no write at all, not even a dry run: the plan is the result
            self.client.patch(path, patch, "patch %s (%s)" % (describe(kind, name, namespace), action))
        self.changed = True
        key = "%s/%s" % (kind, name)
        self.actions.append({"action": action, "kind": kind, "name": name})
        self.after.setdefault(key, {}).update(patch)

    def _hostedcluster_path(self):
        return api_path(HYPERSHIFT_GROUP, HYPERSHIFT_VERSION, "hostedclusters",
                        self.params["hostedcluster_namespace"], self.params["hostedcluster_name"])

    def _read_hostedcluster(self):
        name = self.params["hostedcluster_name"]
        if not name:
            raise QuiesceError("fence needs hostedcluster_name (the HostedCluster whose operator is fenced); set it")
        return self.client.get(self._hostedcluster_path(), "get " + describe(
            hypershift.HOSTEDCLUSTER_KIND, name, self.params["hostedcluster_namespace"]))

    def _storage_version(self, group):
        if group not in self.versions:
            self.versions[group] = storage_version(self.client, group)
        return self.versions[group]

    def _list_kinds(self, group, version, kinds):
        """[(kind, plural, object)] of kinds [(kind, plural)] in the namespace, the lists sent at once."""
        def read(pair):
            kind, plural = pair
            path = api_path(group, version, plural, self.hcp_namespace)
            objects = self.client.list(path, "list %s" % describe("%s.%s" % (plural, group), namespace=self.hcp_namespace))
            return [(kind, plural, obj) for obj in objects]
        return [item for items in parallel_map(read, kinds, len(kinds)) for item in items]

    def _pause_targets(self, group, version):
        targets = self._list_kinds(group, version, PAUSE_KINDS)
        for kind, _plural, obj in targets:
            obj.setdefault("kind", kind)
        return targets

    def _set_paused(self, group, paused):
        version = self._storage_version(group)
        self.result["core_version"] = version
        if version is None:
            if paused:
                raise QuiesceError("CustomResourceDefinition clusters.%s is not installed, expected the CAPI CRDs of "
                                   "group %s; install them (or fix pause_group)" % (group, group))
            return
        changes = []
        for kind, plural, obj in self._pause_targets(group, version):
            patch = pause_patch(obj, paused)
            if patch is None:
                continue
            name = obj["metadata"]["name"]
            key = "%s/%s" % (kind, name)
            self.before.setdefault(key, {"spec": {"paused": (obj.get("spec") or {}).get("paused")}} if kind == "Cluster" else {
                "metadata": {"annotations": {PAUSED_ANNOTATION: _annotations(obj).get(PAUSED_ANNOTATION)}}})
            changes.append((api_path(group, version, plural, self.hcp_namespace, name), patch, kind, name,
                            self.hcp_namespace, "pause" if paused else "unpause"))
        # sent at once: the pause (or unpause) holds once all of them are in, whatever their order
        parallel_map(lambda change: self._patch(*change), changes, len(changes))

    def _await_pause_observed(self, group):
        """With the controllers running (zero stop; observe_pause_seconds > 0): wait until every paused object and
        Machine reports the pause (pause_unobserved) and none of them has changed for PAUSE_STILL_SECONDS (a
        controller may write its Paused condition again, as CAPI's does when it sees the object's own paused
        annotation after the Cluster's pause), so that no controller writes one of them after this run copied it; at
        most observe_pause_seconds, then go on (a controller without a leader writes nothing meanwhile, and the copy's
        verification catches a write after it)."""
        limit = self.params.get("observe_pause_seconds") or 0
        version = self.result["core_version"]
        if self.check_mode or limit <= 0 or version is None:
            return
        started = self.clock()
        versions, still_since = None, None
        while True:
            objects = [(kind, obj) for kind, _plural, obj in self._list_kinds(
                group, version, PAUSE_KINDS + (("Machine", "machines"),))]
            waiting = pause_unobserved(objects)
            now = self.clock()
            seen = sorted(((obj.get("metadata") or {}).get("uid"), (obj.get("metadata") or {}).get("resourceVersion"))
                          for _kind, obj in objects)
            if seen != versions:
                versions, still_since = seen, now
            self.result["pause_unobserved"] = waiting
            # no Paused condition anywhere: no controller that reports one has these objects, none to wait for
            reported = any(condition.get("type") == "Paused" for _kind, obj in objects
                           for condition in _conditions_of(obj))
            if not reported or (not waiting and now - still_since >= PAUSE_STILL_SECONDS) or now - started > limit:
                self.result["pause_observed_seconds"] = round(now - started, 3)
                return
            self.sleep(0.2)

    def _check_pause_holds(self, group):
        self._await_pause_observed(group)
        settle = self.params["settle_seconds"]
        if self.check_mode or settle <= 0 or self.result["core_version"] is None:
            return
        self.sleep(settle)
        path = api_path(group, self.result["core_version"], "clusters", self.hcp_namespace)
        clusters = self.client.list(path, "list %s" % describe("clusters." + group, namespace=self.hcp_namespace))
        unpaused = sorted(c["metadata"]["name"] for c in clusters if (c.get("spec") or {}).get("paused") is not True)
        if unpaused:
            raise QuiesceError(
                "Cluster(s) %s in %s were un-paused within %ss (expected spec.paused=true): an operator still "
                "reconciles this HostedCluster; fence it (fence, the operator's scope) and re-run"
                % (unpaused, self.hcp_namespace, settle))

    def read_deployments(self):
        names = self.params["deployments"]
        if not names:
            return []
        path = api_path("apps", "v1", "deployments", self.hcp_namespace)
        found = self.client.list(path, "list " + describe("Deployments", namespace=self.hcp_namespace))
        selected = [d for d in found if d["metadata"]["name"] in names]
        self.result["deployments"] = sorted(d["metadata"]["name"] for d in selected)
        return selected

    def _scale(self, deployments, make_patch, action):
        for deployment in deployments:
            patch = make_patch(deployment)
            if patch is None:
                continue
            name = deployment["metadata"]["name"]
            annotations = _annotations(deployment)
            self.before.setdefault("Deployment/%s" % name, {
                "spec": {"replicas": (deployment.get("spec") or {}).get("replicas")},
                "metadata": {"annotations": dict((key, annotations.get(key))
                                                 for key in (REPLICAS_ANNOTATION, STOPPED_AT_ANNOTATION))}})
            self._patch(api_path("apps", "v1", "deployments", self.hcp_namespace, name), patch, "Deployment", name,
                        self.hcp_namespace, action)

    def _wait(self, what, pending):
        """Poll pending() (a list of what is not done yet) until it is empty or wait_timeout passes."""
        timeout = self.params["wait_timeout"]
        if self.check_mode or timeout <= 0:
            return
        started = self.clock()
        delay = POLL_FIRST_DELAY
        while True:
            waiting = pending()
            if not waiting:
                self.result["waited_seconds"] = round(self.result["waited_seconds"] + self.clock() - started, 3)
                return
            if self.clock() - started >= timeout:
                raise QuiesceError("timed out after %ss waiting for %s in namespace %s: still %s; check their "
                                   "controllers and events, then re-run (or raise wait_timeout)"
                                   % (timeout, what, self.hcp_namespace, ", ".join(waiting[:10])))
            self.sleep(delay)
            delay = min(POLL_MAX_DELAY, delay * 2)

    def patch_in_place(self, deployment, change):
        """Whether the Deployment holds the merge patch change already. A patch of a list (the containers) replaces it
        whole without the fields the API server defaults, so where the patch differs from the object a server-side dry
        run judges: in place when it would change neither the spec nor the labels and annotations. In check mode (no
        request that writes, not even a dry run) the patch is judged as it is."""
        if not merge_patch_changes(deployment, change):
            return True
        if self.check_mode:
            return False
        name = deployment["metadata"]["name"]
        answer = self.client.patch(api_path("apps", "v1", "deployments", self.hcp_namespace, name), change,
                                   "patch %s (dry run: is the patch in place?)" % describe("Deployment", name, self.hcp_namespace),
                                   dry_run=True)
        return deployment_unchanged(deployment, answer)

    def available_since(self):
        """available_since for the Deployments this run resumed (their recorded replicas), from the namespace's pods."""
        return available_since(self._pods(), self.result["replicas"])

    def _pods(self):
        path = api_path("", "v1", "pods", self.hcp_namespace)
        return self.client.list(path, "list " + describe("Pods", namespace=self.hcp_namespace))

    def _pods_of(self, names):
        return owned_pods(self._pods(), names)

    def _unavailable(self, expected):
        path = api_path("apps", "v1", "deployments", self.hcp_namespace)
        return unavailable(self.client.list(path, "list " + describe("Deployments", namespace=self.hcp_namespace)), expected)

    def _fence(self, up):
        hostedcluster = self._read_hostedcluster()
        hold = self.params.get("fence_hold_seconds") or 0
        if up and hold:
            patch = hold_patch(hostedcluster, self.now(), hold)
        else:
            patch = fence_patch(hostedcluster) if up else unfence_patch(hostedcluster)
        annotations = _annotations(hostedcluster)
        self.result["hostedcluster_annotations"] = dict(annotations)
        recorded = annotations.get(PAUSED_UNTIL_ANNOTATION)
        if up and recorded is None and patch is not None:
            recorded = patch["metadata"]["annotations"][PAUSED_UNTIL_ANNOTATION]
        self.result["paused_until_recorded"] = recorded
        self.result["paused_until"] = ((patch or {}).get("spec") or {}).get(
            "pausedUntil", (hostedcluster.get("spec") or {}).get("pausedUntil"))
        if patch is None:
            return
        name = self.params["hostedcluster_name"]
        self.before.setdefault("%s/%s" % (hypershift.HOSTEDCLUSTER_KIND, name), {
            "spec": {"pausedUntil": (hostedcluster.get("spec") or {}).get("pausedUntil")},
            "metadata": {"annotations": dict((key, annotations.get(key))
                                             for key in (PAUSED_UNTIL_ANNOTATION, PHASE_ANNOTATION))}})
        self._patch(self._hostedcluster_path(), patch, hypershift.HOSTEDCLUSTER_KIND, name, self.params["hostedcluster_namespace"],
                    "fence" if up else "lift fence")

    # --- the two directions -----------------------------------------------------------------------
    def quiesce(self):
        group = self.params["pause_group"]
        if self.params["fence"]:
            self._fence(True)
        elif self.params["hostedcluster_name"]:
            self.result["hostedcluster_annotations"] = dict(_annotations(self._read_hostedcluster()))
        if group:
            self._set_paused(group, True)
            self._check_pause_holds(group)
        deployments = self.read_deployments()
        now = format_time(self.now())
        self._scale(deployments, lambda deployment: stop_patch(deployment, now), "record replicas and scale to 0")
        # an earlier run's record is older than now; a Deployment recorded only by this run was stopped now
        newly = [d for d in deployments if REPLICAS_ANNOTATION not in _annotations(d)]
        self.result["stopped_at"] = stopped_at(deployments) or (now if newly else None)
        names = [d["metadata"]["name"] for d in deployments]
        self._wait("the pods of Deployments %s to go" % ", ".join(names), lambda: self._pods_of(names))
        for deployment in deployments:
            recorded = recorded_replicas(deployment)
            self.result["replicas"][deployment["metadata"]["name"]] = (
                recorded if recorded is not None else (deployment.get("spec") or {}).get("replicas", 1))

    def resume(self):
        deployments = self.read_deployments()
        expected = {}
        for deployment in deployments:
            recorded = recorded_replicas(deployment)
            if recorded is not None:
                expected[deployment["metadata"]["name"]] = recorded
        self.result["replicas"] = dict(expected)
        self.result["stopped_at"] = stopped_at(deployments)
        changes = deployment_patches_by_name(self.params["deployment_patches"],
                                             [d["metadata"]["name"] for d in deployments])

        def back(deployment):
            patch = start_patch(deployment)
            change = changes.get(deployment["metadata"]["name"])
            if change and (patch is not None or not self.patch_in_place(deployment, change)):
                patch = merge_patches(change, patch or {})
            return patch
        self._scale(deployments, back, "scale back to the recorded replicas" + (" with its patch" if changes else ""))
        self._wait("Deployments %s to be available" % ", ".join(sorted(expected)), lambda: self._unavailable(expected))
        if expected and not self.check_mode and self.params["wait_timeout"] > 0:
            # the controllers run again: the window that began with the first scale to 0 ends here
            self.result["available_at"] = format_time(self.now())
            if self.result["stopped_at"]:
                self.result["controllers_down_seconds"] = seconds_between(self.result["stopped_at"],
                                                                          self.result["available_at"])
        if self.params["pause_group"]:
            self._set_paused(self.params["pause_group"], False)
        if self.params["remove_records"]:
            self._scale(deployments, unrecord_patch, "remove the replica record")
        if self.params["fence"]:
            self._fence(False)

    def run(self):
        if self.params["state"] == "quiesced":
            self.quiesce()
        else:
            self.resume()
        return self.result


class QuiesceModule(HoldsLease, QuiesceService, ModuleService):
    """hcp_quiesce's service (k8s/runner.py): one QuiesceService run, its result quiesce_result."""

    DERIVED = hypershift.HCP_NAMESPACE_DERIVED
    MINIMUMS = {"settle_seconds": 0, "wait_timeout": 0, "fence_hold_seconds": 0}
    # a typo must not read as "nothing to stop"; the HostedCluster's namespace only matters when one is named
    NAMESPACES = (("hcp_namespace", None), ("hostedcluster_namespace", "hostedcluster_name"))

    @classmethod
    def option_problems(cls, params):
        problems = HoldsLease.option_problems(params)
        if params["fence_hold_seconds"] and not (params["fence"] and params["state"] == "quiesced"):
            problems.append("fence_hold_seconds needs fence=true and state=quiesced (a hold is put up, never lifted, "
                            "by a pre-install: the migration's fence takes it over and lifts it)")
        return problems

    @classmethod
    def from_run(cls, run):
        service = cls(cls.connect(run), run.params, check_mode=run.check_mode)
        service.diff = run.diff
        return service

    def run(self):
        QuiesceService.run(self)
        return quiesce_result(self, self.diff)

    def partial(self):
        return quiesce_result(self, self.diff)


def quiesce_result(service, diff):
    """hcp_quiesce's result for a service run (hcp_migrate_window returns it for its stop and start steps)."""
    result = {}
    if service is not None:
        result.update(service.result)
        result["changed"] = service.changed
        result["actions"] = list(service.actions)
        if diff and service.changed:
            result["diff"] = {"before": dict(service.before), "after": dict(service.after)}
    return result


def quiesce_steps(result, steps, namespace, diff):
    """Put each (key, service) of steps that ran into result (quiesce_result, no diff inside); return their diffs
    (one per changed step with diff) - how the modules that run several quiesce steps report them."""
    diffs = []
    for key, service in steps:
        if service is None:
            continue
        result[key] = quiesce_result(service, diff=False)
        if diff and service.changed:
            diffs.append({"before_header": "%s: %s" % (key, namespace), "after_header": key,
                          "before": dict(service.before), "after": dict(service.after)})
    return diffs
