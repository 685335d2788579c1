# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner of hypershift.private_capi.hcp_migrate_window: a migration's window in one module run, by one of two
strategies (STRATEGIES; O(strategy)).

zero_stop (the controllers never stop): the CAPI-dependent Deployments already run the API proxy sidecar in
pass-through (put in ahead: the migrate role's phase sidecar). The run checks the sidecars (refused before any change when
one is missing, does not follow the mode ConfigMap, or is still rolling out), pauses CAPI reconciliation
(source_pause_group; or the caller paused it), copies the CAPI objects to the private groups, flips every sidecar of
the namespace to translate (flip.py: one write of the mode ConfigMap, then every running sidecar's acknowledgement),
lifts the pause of the copies, and signals. The pause lasts for the copy and the flip alone. A run that finds the
namespace flipped already (an earlier run was killed after the flip) takes the copy as done - it was verified before
the flip, and the copies stayed paused until the unpause - and goes on from the flip's wait.

scale_down (the controllers stop for the window; kept for a sidecar that cannot be put in ahead):

A migration's window is three steps that each used to be a module run of its own: stop the CAPI-dependent
Deployments (QuiesceService.quiesce), copy the CAPI objects to the private groups (MigrateService), start them again
with the API proxy sidecar in the same write (QuiesceService.resume) - then, with the controllers back, the
control-plane-operator signal on the HostedControlPlane. One module run pays the module start-up (Python, the
kubernetes package, the kubeconfig) once instead of three or four times, and the steps follow each other without
Ansible's task overhead in between, so the controllers are down for the work alone.

The steps are the services the modules hcp_quiesce and capi_object_migrate run (one client, its requests counted
once); this file only orders them, marks when each began (the role's phase marks, RV(marks): phased.py) and judges
whether an earlier run already closed the window (back_at_record with every patch in place, and a dry-run copy that finds
nothing left to do): then the Deployments are not stopped again and the dry run is the copy step's result.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift
from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    PRIVATE_TYPES_ANNOTATION,
    PROXY_PASSTHROUGH,
    PROXY_TRANSLATE,
    format_mark,
    proxy_mode,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.flip import FlipService
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.strategy import ZERO_STOP
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.quiesce import (
    PAUSE_OBSERVED_SECONDS,
    QuiesceService,
    deployment_patches_by_name,
    quiesce_params,
    quiesce_steps,
    read_storage_versions,
    recorded_replicas,
    seconds_between,
    start_patch,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.phased import PhasedRun, annotations_patch
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import api_path, parallel_map
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.discovery import read_served_resources
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.service import (
    MigrateService,
    migrate_params,
    migrate_result,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.state.fence import HoldsLease
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import GroupMap
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe

HOSTEDCONTROLPLANE_PLURAL = "hostedcontrolplanes"
# the phase names of RV(marks), as the migrate role's marks name them (report phases)
STOP, COPY, START, SIGNAL = "scale_down", "copy", "resume", "signal"
CHECK, FLIP = "check", "flip"  # zero_stop's own phases: the sidecars checked, then (after the copy) flipped
PAUSE = "pause"  # zero_stop pauses the sources in this module run, so that the pause lasts for the work alone

# the control-plane-operator's signal on the HostedControlPlane (O(signal_annotations) when none are given)
DEFAULT_SIGNAL = {PRIVATE_TYPES_ANNOTATION: "true"}


def back_at_record(deployments):
    """Whether every Deployment (those of O(deployments) present) carries the replica record and is back at it (no
    start_patch left to send). Not when none is present (nothing says a window was opened)."""
    return bool(deployments) and all(
        recorded_replicas(deployment) is not None and start_patch(deployment) is None for deployment in deployments)


def hostedcontrolplane_path(namespace, name):
    return api_path(hypershift.HOSTEDCLUSTER_GROUP, hypershift.HOSTEDCLUSTER_VERSION, HOSTEDCONTROLPLANE_PLURAL,
                    namespace, name)


class WindowService(HoldsLease, PhasedRun):
    """One run of hcp_migrate_window: stop, copy, start, signal - in that order, with one client."""

    # the HostedCluster's namespace is checked where the run holds its lock
    NAMESPACES = (("hcp_namespace", None), ("hostedcluster_namespace", "holder"))

    def __init__(self, client, params, **options):
        super(WindowService, self).__init__(client, params, **options)
        self.hcp_namespace = params["hcp_namespace"]
        self.stopped = False  # whether this run stopped the Deployments (not when an earlier run closed the window)
        self.stop = self.copy = self.start = None
        self.signal = {"changed": False, "annotations": {}}
        self.signal_diff = None
        self.flip = None  # zero_stop: the FlipService
        self.unpaused_at = None  # zero_stop: when the copies' pause was lifted (MARK_TIME_FORMAT)
        # zero_stop: read ahead of the pause (_read_ahead): the served resources, the paused groups' storage versions
        self.served = self.versions = None

    def _quiesce(self, **overrides):
        params = quiesce_params(self.hcp_namespace, **dict({"deployments": self.params["deployments"]}, **overrides))
        return QuiesceService(self.client, params, check_mode=self.check_mode, versions=self.versions)

    def _migrate(self, verify):
        params = migrate_params(self.hcp_namespace, require_paused=self.params["require_paused"],
                                carry_deletions=self.params["carry_deletions"], verify=verify,
                                parallelism=self.params["parallelism"], extra_groups=self.params["extra_groups"])
        return MigrateService(self.client, params, GroupMap(self.params["extra_groups"] or {}), diff=self.diff,
                              served=self.served)

    def _read_ahead(self):
        """zero_stop: what the pause and the copy would read first and no pause changes - the storage versions of the
        paused groups, the served resources - read before the pause, so that the pause lasts for the work alone."""
        groups = (self.params["source_pause_group"], self.params["pause_group"])
        self.versions, self.served = parallel_map(lambda read: read(), (
            lambda: read_storage_versions(self.client, groups),
            lambda: read_served_resources(self.client, self.params["parallelism"])), 2)

    def _closed_by_an_earlier_run(self):
        """The dry-run copy (its service) when an earlier run closed the window: every Deployment back at its record
        with its patch in place, and a copy with nothing left to do (work left needs the controllers stopped again);
        else None."""
        probe = self._quiesce()
        deployments = probe.read_deployments()
        if not back_at_record(deployments):
            return None
        patches = deployment_patches_by_name(self.params["deployment_patches"], [d["metadata"]["name"] for d in deployments])
        if not all(probe.patch_in_place(d, patches[d["metadata"]["name"]]) for d in deployments
                   if d["metadata"]["name"] in patches):
            return None
        planned = self._dry_run_copy()
        return None if planned.report.changed else planned

    def run(self):
        self.watch_leaders()
        report = self._run_zero_stop() if self.params["strategy"] == ZERO_STOP else self._run_scale_down()
        self.observe_leaders()
        self.warnings = report.warnings
        return self.result()

    def _run_scale_down(self):
        self.begin(STOP)
        # the copies of a closed window are not verified again: the controllers have run on them since (unpaused, their
        # status moved on); the run that closed the window verified them before it started the controllers
        self.copy = self._closed_by_an_earlier_run()
        if self.copy is None:
            self.stop = self._quiesce(wait_timeout=self.params["scale_down_timeout"])
            self.stop.quiesce()
            self.stopped = True
            self.observe_leaders()  # the managers' Pods are gone: their Leases handed over before they start again
        self.begin(COPY)
        if self.stopped:
            self.copy = self._migrate(verify=self.params["verify"])
            self.copy.run()
        self.begin(START)
        self.start = self._quiesce(state="resumed", wait_timeout=self.params["available_timeout"],
                                   pause_group=self.params["pause_group"],
                                   deployment_patches=self.params["deployment_patches"])
        self.start.resume()
        if not self.stopped:
            self._window_of_an_earlier_run()
        self._signal_step()
        return self.copy.report

    def _run_zero_stop(self):
        self.begin(CHECK)
        self.flip = FlipService(self.client, self.hcp_namespace, self.params["deployments"], check_mode=self.check_mode)
        config_map = self.flip.check((PROXY_PASSTHROUGH, PROXY_TRANSLATE), self.params["available_timeout"])
        flipped_before = proxy_mode(config_map)[0] == PROXY_TRANSLATE
        self._read_ahead()
        if self.params["source_pause_group"]:
            self.begin(PAUSE)
            self.stop = self._quiesce(pause_group=self.params["source_pause_group"], deployments=[],
                                      settle_seconds=self.params["settle_seconds"],
                                      observe_pause_seconds=PAUSE_OBSERVED_SECONDS)
            self.stop.quiesce()
        self.begin(COPY)
        if flipped_before:
            self.copy = self._dry_run_copy()
        else:
            self.copy = self._migrate(verify=self.params["verify"])
            self.copy.run()
        self.begin(FLIP)
        self.flip.flip(PROXY_TRANSLATE, self.params["flip_timeout"])
        self.begin(START)
        self.start = self._quiesce(state="resumed", pause_group=self.params["pause_group"], deployments=[])
        self.start.resume()
        self.unpaused_at = format_mark(self.now())
        self._signal_step()
        return self.copy.report

    def _dry_run_copy(self):
        """The copy as a dry run (its report: kinds and counts), for a run that finds the copy done."""
        dry_run = self.client.dry_run
        self.client.dry_run = True
        try:
            planned = self._migrate(verify=False)
            planned.run()
        finally:
            self.client.dry_run = dry_run
        return planned

    def _signal_step(self):
        if self.params["signal_annotations"] is None:
            self.params["signal_annotations"] = dict(DEFAULT_SIGNAL)
        if self.params["hostedcluster_name"] and self.params["signal_annotations"]:
            self.begin(SIGNAL)
            self._signal()

    def _window_of_an_earlier_run(self):
        """The window an earlier run opened and closed, as Kubernetes tells it: from the first scale to 0 (the record on
        the Deployments) to the moment their pods were Ready again (the pods' own Ready times, to the second). All of
        it counts as waiting: none of it was this run's work. None when the pods do not tell (check mode, no wait)."""
        result = self.start.result
        result.update(available_at=None, controllers_down_seconds=None)
        if self.check_mode or self.params["available_timeout"] <= 0 or not result["stopped_at"]:
            return
        available = self.start.available_since()
        if available is None:
            return
        # the Ready times are whole seconds: a pod Ready within the second of the stop was Ready after it
        seconds = seconds_between(result["stopped_at"], available)
        if seconds <= -1.0:
            return  # Ready before the stop: these pods do not tell when the window closed
        if seconds < 0:
            available, seconds = result["stopped_at"], 0.0
        result.update(available_at=available, controllers_down_seconds=seconds, waited_seconds=seconds)

    def _signal(self):
        name = self.params["hostedcluster_name"]
        namespace = self.hcp_namespace
        path = hostedcontrolplane_path(namespace, name)
        what = describe("HostedControlPlane", name, namespace)
        hostedcontrolplane = self.client.get(path, "get " + what)
        patch = annotations_patch(hostedcontrolplane, self.params["signal_annotations"])
        self.signal["annotations"] = dict(self.params["signal_annotations"])
        if patch is None:
            return
        self.annotate(path, hostedcontrolplane, patch, what, "signal")
        held = (hostedcontrolplane.get("metadata") or {}).get("annotations") or {}
        self.signal["changed"] = True
        self.signal_diff = {"before_header": what, "after_header": what,
                            "before": {"metadata": {"annotations": dict((key, held.get(key)) for key in patch["metadata"]["annotations"])}},
                            "after": patch}

    @property
    def changed(self):
        return bool((self.stop and self.stop.changed) or (self.copy and self.copy.report.changed)
                    or (self.start and self.start.changed) or self.signal["changed"]
                    or (self.flip and self.flip.result["changed"]))

    def result(self):
        """The module's result: each step's own result under its phase name, the window at the top."""
        result = {"changed": self.changed, "phase": self.phase, "marks": list(self.marks), "stopped": self.stopped,
                  "strategy": self.params["strategy"]}
        if self.flip is not None:
            result[FLIP] = dict(self.flip.result)
            result["unpaused_at"] = self.unpaused_at
        diffs = quiesce_steps(result, ((STOP, self.stop), (START, self.start)), self.hcp_namespace, self.diff)
        if self.copy is not None:
            # not "copy": in Jinja2 that is the dict's own method (window.copy), not this key
            result["copied"] = migrate_result(self.copy)
            diffs[1:1] = result["copied"].pop("diff", [])
        result[SIGNAL] = dict(self.signal)
        if self.signal_diff:
            diffs.append(self.signal_diff)
        window = result.get(START) or {}
        for key in ("stopped_at", "available_at", "controllers_down_seconds"):
            result[key] = window.get(key)
        if self.params["strategy"] == ZERO_STOP:  # no Deployment is stopped: by construction, not measured
            result.update(stopped_at=None, available_at=None, controllers_down_seconds=0.0)
        result["waited_seconds"] = round(sum((result.get(key) or {}).get("waited_seconds") or 0.0 for key in (STOP, START)), 3)
        if diffs:
            result["diff"] = diffs
        return self.leaders_result(result)
