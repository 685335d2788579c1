# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner of hypershift.private_capi.hcp_migrate_rollback: the way back to the standard CAPI types in one module run.

Two paths share the steps:

- rollback (playbooks/rollback.yml, the migrate role's revert entry point): a migrated HostedCluster whose rollback lock
  this run holds. Fence the operator, pause the private objects and stop the controllers; copy the private objects back
  (verified field by field); record the phase revert-resume, start the controllers again without the proxy sidecar
  (its removal in the same write as the scale-up) and unpause the standard objects; judge the result
  (judge.rollback_problems); record revert-finish, delete the private objects (dependents re-pointed first); lift the
  fence; in-progress -> legacy.
- rescue (the migrate role, after a failed migration): stop the controllers, then either copy the private objects
  back (the sources were partly deleted: phase finish recorded) or discard the partial private copies (the sources
  are intact); start the controllers without the sidecar, unpause the standard objects, lift the fence;
  in-progress -> failed with the reason.

Zero stop (O(strategy=zero_stop)): where every CAPI-dependent Deployment runs a sidecar that follows the namespace's
mode ConfigMap (put in ahead: the zero_stop strategy of hcp_migrate_window), both paths leave the Deployments alone - the controllers never
stop. The private objects are paused instead of the controllers stopped, and instead of the sidecar's removal every
sidecar is flipped back to pass-through (flip.py), after the copy back and before the private objects go; the sidecars
stay in, relaying (a later migration flips them again). A sidecar put in by an older release, which does not follow
the mode ConfigMap, takes the path above.

The steps are the services the other modules run (QuiesceService, MigrateService, MigrationStateService) on one
client. What is done is read from the cluster, so a run killed at any request is re-run to the same end: the phase
annotation on the HostedCluster says where a rollback goes on (revert-resume: the copies were verified and the standard
controllers may have run; revert-finish: the deletion of the private objects began), and every step is idempotent.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    COUNTS_ANNOTATION,
    LEADERLESS_ANNOTATION,
    PHASE_ANNOTATION,
    PRIVATE_TYPES_ANNOTATION,
    PROXY_MODE_CONFIG_MAP,
    PROXY_PASSTHROUGH,
    PROXY_TRANSLATE,
    ROLLBACK_FAILED_ANNOTATION,
    format_time,
    proxy_mode,
    utc_now,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import judge, sidecar
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.finish import FINISH_PHASE
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.flip import FlipService, zero_stop_way_back
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.quiesce import (
    PAUSE_OBSERVED_SECONDS,
    QuiesceService,
    quiesce_params,
    quiesce_steps,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.phased import (
    PhasedRun,
    annotations_patch,
    recorded_phase,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.strategy import ZERO_STOP
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.window import hostedcontrolplane_path
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiError, api_path
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import USER_ERRORS, PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.service import (
    MigrateService,
    migrate_params,
    migrate_result,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine as states
from ansible_collections.hypershift.private_capi.plugins.module_utils.state.fence import HoldsLease, LeaseLost
from ansible_collections.hypershift.private_capi.plugins.module_utils.state.service import create_hostedcluster_event
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    STANDARD_SUFFIX,
    TO_STANDARD,
    GroupMap,
)

ROLLBACK, RESCUE = "rollback", "rescue"
# the phases (RV(phase), RV(marks)), as the migrate role's records name them
PAUSE, COPY, PROXY, START, VERIFY, FINISH, STATE = "pause", "copy", "proxy", "resume", "verify", "finish", "state"
STOP = "scale_down"
# where a rollback goes on (the HostedCluster's phase annotation, written by this service)
RESUME_PHASE, DELETE_PHASE = "revert-resume", "revert-finish"
ROLLBACK_FAILED_REASON = "CAPIMigrationRollbackFailed"  # the Warning Event of note_failure


class RollbackFailed(PrivateCapiError):
    """The rollback's judgement found problems: nothing private was deleted; the message lists them."""


def resume_point(hostedcluster):
    """Where a rollback of this HostedCluster goes on: '' (from the start), RESUME_PHASE or DELETE_PHASE."""
    phase = recorded_phase(hostedcluster)
    return phase if phase in (RESUME_PHASE, DELETE_PHASE) else ""


def sources_partly_deleted(hostedcluster):
    """Whether the failed migration had begun deleting the standard objects (hcp_migrate_finish recorded its phase):
    then the private objects are copied back; otherwise they are discarded."""
    return recorded_phase(hostedcluster) == FINISH_PHASE


def plan_lines(result, hostedcluster, holder):
    """What a check-mode rollback found it would do, step by step (the rollback playbook prints it)."""
    copied = result.get("copied") or {}
    kinds = ", ".join("%s x%d" % (kind, count["found"]) for kind, count in sorted((copied.get("counts") or {}).items())
                      if count.get("found"))
    creates = len([item for item in copied.get("plan") or [] if item.get("action") == "create"])
    proxied = ", ".join((result.get("proxy") or {}).get("deployments") or []) or "none"
    resumed = " (resumed from %s)" % result["resumed_from"] if result.get("resumed_from") else ""
    return ["DRY RUN (check mode) - %s would be rolled back by run %s%s:" % (hostedcluster, holder, resumed),
            "1. lock: in-progress (rollback lease)",
            "2-3. fence the HostedCluster, pause the private Cluster, scale the CAPI controllers to 0 (replicas recorded)",
            "4. copy back to the standard groups: %s (%d creates)" % (kinds or "nothing", creates),
            "5. remove the proxy sidecar from: %s; its kubeconfig, RBAC and the control-plane-operator signal" % proxied,
            "6-7. scale back to the recorded replicas, unpause the standard Cluster; verify counts, pause, sidecars",
            "8-9. delete the private objects (dependents re-pointed first, Orphan); in-progress -> legacy"]


class RollbackService(HoldsLease, PhasedRun):
    """One run of hcp_migrate_rollback (see the module docstring for the steps of each path)."""

    # a failure before the first step (the connection, the namespaces, the lease token) is the "start" phase's
    NOT_STARTED = {"phase": "start", "marks": []}
    MINIMUMS = dict(PhasedRun.MINIMUMS, settle_seconds=0)

    @classmethod
    def option_problems(cls, params):
        if params["path"] == RESCUE and not (params["reason"] or "").strip():
            return ["path: rescue needs reason (why the migration failed: it is written to the HostedCluster with the "
                    "move to failed)"]
        return []

    def __init__(self, client, params, **options):
        super(RollbackService, self).__init__(client, params, **options)
        self.hcp_namespace = params["hcp_namespace"]
        self.resumed_from = ""
        self.stop = self.start = self.release = None
        self.copy = self.delete = None
        self.proxy = {"changed": False, "deployments": [], "deleted": []}
        self.records = {"changed": False, "annotations": {}}
        self.problems = []
        self.flip = None  # zero stop: the flip back to pass-through (FlipService)
        self.flipped = False  # zero stop: the sidecars translated when the run began

    # --- helpers ----------------------------------------------------------------------------------
    @property
    def zero_stop(self):
        return self.flip is not None

    def _quiesce(self, **overrides):
        # zero stop: no Deployment is stopped, started or patched; a pause waits until the running controllers report it
        defaults = {"deployments": [], "observe_pause_seconds": PAUSE_OBSERVED_SECONDS} if self.zero_stop else {
            "deployments": self.params["deployments"]}
        return QuiesceService(self.client, quiesce_params(self.hcp_namespace, **dict(defaults, **overrides)),
                              check_mode=self.check_mode)

    def _migrate(self, **overrides):
        params = migrate_params(self.hcp_namespace, direction=TO_STANDARD, parallelism=self.params["parallelism"],
                                extra_groups=self.params["extra_groups"], **overrides)
        service = MigrateService(self.client, params, GroupMap(self.params["extra_groups"] or {}), diff=self.diff)
        service.run()
        self.warnings += service.report.warnings
        return service

    def _deployments(self):
        return self.client.list(api_path("apps", "v1", "deployments", self.hcp_namespace),
                                "list " + describe("Deployments", namespace=self.hcp_namespace))

    def _annotate_hostedcluster(self, annotations, why):
        """Merge the annotations (None removes one) into the HostedCluster when they are not there yet."""
        patch = annotations_patch(self.hostedcluster, annotations)
        if patch is None:
            return
        self.annotate_hostedcluster(patch, why)
        self.records["changed"] = True
        self.records["annotations"].update(patch["metadata"]["annotations"])

    # --- the proxy out --------------------------------------------------------------------------------
    def _proxy_out(self):
        """The sidecar removal patches (sent with the scale-up), and the sidecar's kubeconfig and mode ConfigMaps, RBAC,
        shared proxy (its Deployment, Service, PodDisruptionBudget, ServiceAccount) and signal deleted now."""
        deployments = self._deployments()
        patches = sidecar.absent_patches(deployments, self.params["deployments"])
        self.proxy["deployments"] = [patch["metadata"]["name"] for patch in patches]
        selector = sidecar.rbac_label_selector(self.hcp_namespace)
        doomed = [(api_path("", "v1", "configmaps", self.hcp_namespace, name), describe("ConfigMap", name, self.hcp_namespace))
                  for name in (self.params["proxy_config_map"], PROXY_MODE_CONFIG_MAP)]
        if sidecar.shared_proxy_of(deployments) is not None:
            # the shared proxy: the Deployments are stopped on this path, the patches restore them as they scale up
            doomed.extend((api_path(group, version, plural, self.hcp_namespace, sidecar.SHARED_NAME),
                           describe(kind, sidecar.SHARED_NAME, self.hcp_namespace))
                          for group, version, plural, kind in (("apps", "v1", "deployments", "Deployment"),)
                          + sidecar.SHARED_RESOURCES)
        for group, version, plural, namespaced in sidecar.RBAC_RESOURCES:
            namespace = self.hcp_namespace if namespaced else None
            for item in self.client.list(api_path(group, version, plural, namespace), "list %s labelled %s"
                                         % (plural, selector), label_selector=selector):
                name = item["metadata"]["name"]
                doomed.append((api_path(group, version, plural, namespace, name), "%s %s" % (plural, name)))
        for path, what in doomed:
            try:
                self.client.delete(path, "delete " + what)
            except ApiError as exc:
                if not exc.is_not_found:
                    raise
                continue
            self.proxy["deleted"].append(what)
        self.proxy["changed"] = bool(self.proxy["deleted"] or patches)
        self._remove_signal()
        return patches

    def _flip_back(self):
        """Zero stop: the private objects paused (the controllers read them until the flip), every sidecar flipped
        back to pass-through (acknowledged), the signal removed; the sidecars, their ConfigMaps and RBAC stay."""
        if self.flipped:  # the controllers read the private objects
            self._quiesce(pause_group=GroupMap(self.params["extra_groups"] or {}).to_private(STANDARD_SUFFIX)).quiesce()
        self.flip.flip(PROXY_PASSTHROUGH, self.params["flip_timeout"])
        self.proxy["changed"] = bool(self.proxy["changed"] or self.flip.result["changed"])
        self.proxy["mode"] = PROXY_PASSTHROUGH
        self._remove_signal()
        return []

    def _remove_signal(self):
        name = self.params["hostedcluster_name"]
        path = hostedcontrolplane_path(self.hcp_namespace, name)
        what = describe("HostedControlPlane", name, self.hcp_namespace)
        try:
            hostedcontrolplane = self.client.get(path, "get " + what)
        except ApiError as exc:
            if exc.is_not_found:
                return
            raise
        patch = annotations_patch(hostedcontrolplane, {PRIVATE_TYPES_ANNOTATION: None})
        if patch is None:
            return
        self.annotate(path, hostedcontrolplane, patch, what, "signal off")
        self.proxy["changed"] = True
        self.proxy["signal_removed"] = True

    def _start(self, removals, **overrides):
        self.begin(START)
        self.start = self._quiesce(state="resumed", wait_timeout=self.params["available_timeout"],
                                   pause_group=STANDARD_SUFFIX, deployment_patches=removals, **overrides)
        self.start.resume()

    # --- the two paths --------------------------------------------------------------------------------
    def run(self):
        try:
            return self._run()
        except USER_ERRORS as error:
            self.note_failure(error)
            raise

    def _run(self):
        hostedcluster = self.read_hostedcluster()
        if self.params["strategy"] == ZERO_STOP:
            flip = FlipService(self.client, self.hcp_namespace, self.params["deployments"], check_mode=self.check_mode)
            config_map = flip.read_config_map()
            if zero_stop_way_back(flip.read_deployments(), self.params["deployments"], self.hcp_namespace, config_map):
                self.flip = flip
                # only this run flips it back: the mode read now is the one its flip back starts from
                self.flipped = proxy_mode(config_map)[0] == PROXY_TRANSLATE
            else:
                self.warnings.append("the sidecars of namespace %s do not all follow its mode ConfigMap (an older "
                                     "release put them in, or one is missing): the way back stops the controllers to "
                                     "take them out (strategy scale_down)" % self.hcp_namespace)
        self.watch_leaders()
        if self.params["path"] == RESCUE:
            self._rescue(hostedcluster)
        else:
            self._rollback(hostedcluster)
        self.observe_leaders()
        return self.result()

    def note_failure(self, error):
        """The run failed: the lock stays held by its run. Say so on the HostedCluster - the annotation
        ROLLBACK_FAILED_ANNOTATION (it goes with the lock) and a Warning Event - with the error (a refused request names
        its verb, resource and namespace: the right to grant) and what to do. Best effort; not in check mode, and not
        when this process lost its lease token (the lock is another process's now)."""
        if self.check_mode or isinstance(error, LeaseLost):
            return
        holder, now = self.params["holder"], utc_now()
        note = ("%s: the %s by run %s failed at %s: %s. The lock stays with run %s and nothing else touches the "
                "HostedCluster: fix the cause (for a refused request, grant that right: docs/operator-guide.md#rbac), "
                "then re-run with that run id" % (
                    format_time(now), "rescue" if self.params["path"] == RESCUE else "rollback", holder,
                    self.phase or "start", str(error)[:600], holder))
        try:
            if self.hostedcluster is None:
                self.read_hostedcluster()
            self._annotate_hostedcluster({ROLLBACK_FAILED_ANNOTATION: note}, "note the failed rollback")
            create_hostedcluster_event(self.client, self.hostedcluster["metadata"], "Warning", ROLLBACK_FAILED_REASON,
                                       note, now, holder)
        except USER_ERRORS as exc:
            self.warnings.append("the failure could not be noted on %s: %s" % (self.describe_hostedcluster(), exc))

    def _rescue(self, hostedcluster):
        if self.zero_stop:
            return self._rescue_zero_stop(hostedcluster)
        self.begin(STOP)
        # the controllers' pods gone before their objects are touched (a failure at the health step left them
        # running; after a failed window they are gone already and nothing is waited for)
        self.stop = self._quiesce(wait_timeout=self.params["scale_down_timeout"])
        self.stop.quiesce()
        self.observe_leaders()  # the managers' Pods are gone: their Leases handed over before they start again
        self.begin(PROXY)
        removals = self._proxy_out()
        if COUNTS_ANNOTATION in ((hostedcluster.get("metadata") or {}).get("annotations") or {}):
            self._annotate_hostedcluster({COUNTS_ANNOTATION: None}, "remove the count record")
        self.begin(COPY)
        if sources_partly_deleted(hostedcluster):
            # only what step 7 deleted is copied back: a standard object still there is the original, left as it is
            # (no write, no right beyond the forward path's); a private object being deleted goes on being deleted in
            # the standard group, for its controllers
            self.copy = self._migrate(keep_existing=True, delete_source=True, require_paused=False, carry_deletions=True)
        else:
            self.copy = self._migrate(discard=True, require_paused=False)
        self._start(removals, remove_records=True, hostedcluster_name=self.params["hostedcluster_name"],
                    hostedcluster_namespace=self.params["hostedcluster_namespace"], fence=True)
        self._transition(states.FAILED, rollback=False, reason=self.params["reason"])

    def _rescue_zero_stop(self, hostedcluster):
        """The rescue with the controllers running: what is missing of the standard objects copied back (only when the
        failed migration had begun deleting them), every sidecar flipped back to pass-through, then the private copies
        discarded, the standard objects unpaused and the fence lifted."""
        if COUNTS_ANNOTATION in ((hostedcluster.get("metadata") or {}).get("annotations") or {}):
            self._annotate_hostedcluster({COUNTS_ANNOTATION: None}, "remove the count record")
        partly_deleted = sources_partly_deleted(hostedcluster)
        if partly_deleted:
            self.begin(COPY)
            self.copy = self._migrate(keep_existing=True, require_paused=False, carry_deletions=True)
        self.begin(PROXY)
        self._flip_back()
        self.begin(FINISH)
        if partly_deleted:
            self.delete = self._migrate(delete_source=True, require_paused=False, carry_deletions=True)
        else:
            self.copy = self._migrate(discard=True, require_paused=False)
        self._start([], remove_records=True, hostedcluster_name=self.params["hostedcluster_name"],
                    hostedcluster_namespace=self.params["hostedcluster_namespace"], fence=True)
        self._transition(states.FAILED, rollback=False, reason=self.params["reason"])

    def _rollback(self, hostedcluster):
        self.resumed_from = resume_point(hostedcluster)
        if self.resumed_from == "":
            self.begin(PAUSE)
            # zero stop: the private objects paused, the controllers left running (_quiesce stops no Deployment)
            self.stop = self._quiesce(fence=self.params["fence"], hostedcluster_name=self.params["hostedcluster_name"],
                                      hostedcluster_namespace=self.params["hostedcluster_namespace"],
                                      pause_group=GroupMap(self.params["extra_groups"] or {}).to_private(STANDARD_SUFFIX),
                                      settle_seconds=self.params["settle_seconds"],
                                      wait_timeout=self.params["scale_down_timeout"])
            self.stop.quiesce()
            if not self.zero_stop:  # the managers' Pods are gone, their Leases handed over (zero stop stops none)
                self.observe_leaders()
        if self.resumed_from != DELETE_PHASE:
            self.begin(COPY)
            # verified field by field before the standard controllers ever run; resumed after the scale-up, the copy
            # only completes: those controllers may have moved the standard objects on since
            # check mode paused nothing and wrote no copy: neither the pause nor the copies can be checked
            self.copy = self._migrate(verify=self.resumed_from == "" and not self.check_mode,
                                      require_paused=not self.check_mode, carry_deletions=True)
            self.begin(PROXY)
            removals = self._flip_back() if self.zero_stop else self._proxy_out()
            self._annotate_hostedcluster({PHASE_ANNOTATION: RESUME_PHASE}, "the copies are verified")
            self._start(removals)
            self.begin(VERIFY)
            self._verify()
        self.begin(FINISH)
        self._annotate_hostedcluster({PHASE_ANNOTATION: DELETE_PHASE}, "the deletion of the private objects begins")
        self.delete = self._migrate(delete_source=True, require_paused=False, carry_deletions=True)
        # the migration rolled back is no longer the HostedCluster's: its record and its leaderless figure go
        self._annotate_hostedcluster({COUNTS_ANNOTATION: None, LEADERLESS_ANNOTATION: None}, "remove the count record")
        self.release = self._quiesce(state="resumed", wait_timeout=self.params["available_timeout"], remove_records=True,
                                     hostedcluster_name=self.params["hostedcluster_name"],
                                     hostedcluster_namespace=self.params["hostedcluster_namespace"], fence=True)
        self.release.resume()
        self._transition(states.LEGACY, rollback=True)

    def _verify(self):
        """One standard object per private one, no standard Cluster paused, no sidecar, the Deployments available."""
        counts = self.copy.report.result().get("counts") or {}
        kinds = [kind for kind in self.copy.kinds if (counts.get(kind.kind) or {}).get("found")]
        standard = {}
        for kind in kinds:
            path = api_path(kind.target_group, kind.version, kind.plural, self.hcp_namespace)
            standard.setdefault(kind.kind, []).extend(self.client.list(path, "list %s (%s)" % (kind.plural, kind.target_group)))
        self.problems = judge.rollback_problems({"counts": counts, "standard": standard, "deployments": self._deployments(),
                                                 "deployment_names": self.params["deployments"],
                                                 "passthrough_sidecars": self.zero_stop})
        if self.problems and not self.check_mode:
            raise RollbackFailed("verify: " + "; ".join(self.problems))

    def _transition(self, state, rollback, reason=None):
        if self.check_mode:  # in check mode no lock was written: the state stays the one found
            return
        self.begin(STATE)
        self.move_held_lock(state, rollback=rollback, reason=reason)

    # --- the result -----------------------------------------------------------------------------------
    @property
    def changed(self):
        return bool(any(service is not None and service.changed for service in (self.stop, self.start, self.release))
                    or any(service is not None and service.report.changed for service in (self.copy, self.delete))
                    or self.proxy["changed"] or self.records["changed"] or (self.moved and self.moved["changed"]))

    def result(self):
        result = {"changed": self.changed, "path": self.params["path"], "phase": self.phase, "marks": list(self.marks),
                  "strategy": "zero_stop" if self.zero_stop else "scale_down",
                  "resumed_from": self.resumed_from, "proxy": dict(self.proxy), "records": dict(self.records),
                  "problems": list(self.problems)}
        diffs = quiesce_steps(result, ((STOP, self.stop), (START, self.start), ("release", self.release)),
                              self.hcp_namespace, self.diff)
        for key, service in (("copied", self.copy), ("deleted", self.delete)):
            if service is not None:
                result[key] = migrate_result(service)
                diffs += result[key].pop("diff", [])
        self.moved_result(result, diffs)
        window = result.get(START) or result.get("release") or {}
        for key in ("stopped_at", "available_at", "controllers_down_seconds"):
            result[key] = window.get(key)
        if self.zero_stop:  # no Deployment is stopped: by construction, not measured
            result.update(stopped_at=None, available_at=None, controllers_down_seconds=0.0)
            result["flip"] = dict(self.flip.result)
        result["waited_seconds"] = round(sum((result.get(key) or {}).get("waited_seconds") or 0.0
                                             for key in (STOP, START, "release")), 3)
        if self.diff and diffs:
            result["diff"] = diffs
        if self.check_mode and self.params["path"] == ROLLBACK:
            result["plan"] = plan_lines(result, "%s/%s" % (self.params["hostedcluster_namespace"],
                                                           self.params["hostedcluster_name"]), self.params["holder"])
        return self.leaders_result(result)
