# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner of hypershift.private_capi.hcp_migrate_finish: steps 6 and 7 of a migration in one module run.

The controllers run again on the private copies. What is left used to be five module runs: the health checks
(HealthService, capi_health's: they gate the rest), record on the HostedCluster that the deletion of the sources
begins (and, once, the source counts), re-point the dependents and delete the standard objects (MigrateService with
delete_source), remove the replica records and lift the fence (QuiesceService.resume), move the migration state to
migrated (MigrationStateService.move). This file orders those services on one client; each keeps its own rules (the
record's patch is record_patch, below).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    COUNTS_ANNOTATION,
    LEADERLESS_ANNOTATION,
    PHASE_ANNOTATION,
    parse_seconds,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.health import HealthChecksFailed, HealthService
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.quiesce import (
    QuiesceService,
    quiesce_params,
    quiesce_result,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.phased import PhasedRun, recorded_phase
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import PARALLELISM_MINIMUM, minimum_problems
from ansible_collections.hypershift.private_capi.plugins.module_utils.move.service import (
    MigrateService,
    migrate_params,
    migrate_result,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine as states
from ansible_collections.hypershift.private_capi.plugins.module_utils.state.fence import hold_lease
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import GroupMap

# the steps, in order (RV(step): the last one begun, on a failure the one that failed)
HEALTH, RECORD, DELETE, RELEASE, STATE = "health", "record", "delete", "release", "state"
FINISH_PHASE = "finish"
# the migrate role's phases (RV(phase), RV(marks)): the health checks, then the rest of step 7
PHASE_OF_STEP = {HEALTH: "health", RECORD: FINISH_PHASE, DELETE: FINISH_PHASE, RELEASE: FINISH_PHASE, STATE: FINISH_PHASE}


def record_patch(hostedcluster, source_counts, leaderless_seconds=None):
    """Merge patch of the HostedCluster saying the deletion of the sources has begun (a rollback from here on copies
    back), recording the source counts once (a resumed run whose sources are partly gone keeps the first record) and
    the migration's longest time without a leader (LEADERLESS_ANNOTATION, when given and longer than the one recorded:
    a resumed run that skipped the pre-install does not replace its figure with the window's); None
    when all are there already, or when the HostedCluster is migrated (the release, the step after, removed the phase
    record: the run that moved it finished the migration)."""
    if states.state_of(hostedcluster) == states.MIGRATED:
        return None
    annotations = (hostedcluster.get("metadata") or {}).get("annotations") or {}
    wanted = {}
    if recorded_phase(hostedcluster) != FINISH_PHASE:
        wanted[PHASE_ANNOTATION] = FINISH_PHASE
    if COUNTS_ANNOTATION not in annotations:
        wanted[COUNTS_ANNOTATION] = json.dumps(source_counts, sort_keys=True)
    recorded = parse_seconds(annotations.get(LEADERLESS_ANNOTATION))
    if leaderless_seconds is not None and (recorded is None or leaderless_seconds > recorded):
        wanted[LEADERLESS_ANNOTATION] = "%.1f" % leaderless_seconds
    return {"metadata": {"annotations": wanted}} if wanted else None


class FinishService(PhasedRun):
    """One run of hcp_migrate_finish: record, delete, release, state - in that order, with one client."""

    MINIMUMS = PARALLELISM_MINIMUM

    def __init__(self, client, params, **options):
        super(FinishService, self).__init__(client, params, **options)
        # takes this process's lease token (state/fence.py hold_lease) once the read-only health checks passed
        self.hold_lease = lambda: None
        self.step = None
        self.health = None
        self.record = {"changed": False, "annotations": {}}
        self.record_diff = None
        self.delete = self.release = None

    @classmethod
    def option_problems(cls, params):
        return ["health: " + problem for problem in minimum_problems(params["health"] or {}, {"stable_seconds": 0})]

    def hold(self, run):
        """The lease token is taken later, once the read-only health checks passed (run())."""
        params = self.params
        self.hold_lease = lambda: hold_lease(run, params["hostedcluster_namespace"], params["hostedcluster_name"],
                                             params["holder"])

    def _record(self):
        patch = record_patch(self.read_hostedcluster(), self.params["source_counts"], self.params["leaderless_seconds"])
        if patch is None:
            return
        self.annotate_hostedcluster(patch, "record the deletion of the sources")
        what = self.describe_hostedcluster()
        self.record = {"changed": True, "annotations": dict(patch["metadata"]["annotations"])}
        self.record_diff = {"before_header": what, "after_header": what + " (record)", "before": {}, "after": patch}

    def _begin(self, step):
        """The step begins; its phase is marked once (the record, delete, release and state steps are one phase)."""
        self.step = step
        self.begin(PHASE_OF_STEP[step])

    def _check_health(self):
        """The health checks (capi_health's) gate the deletion of the sources: a failure stops the run before any
        write. Not in check mode (no copy exists to check)."""
        checks = self.params["health"]
        if not checks or self.check_mode:
            return
        self._begin(HEALTH)
        self.health = HealthService(self.client, dict(checks, hcp_namespace=self.params["hcp_namespace"])).run()
        if self.health["failures"]:
            raise HealthChecksFailed(self.health)

    def run(self):
        params = self.params
        self._check_health()
        self.hold_lease()
        self._begin(RECORD)
        self._record()
        self._begin(DELETE)
        self.delete = MigrateService(self.client, migrate_params(
            params["hcp_namespace"], delete_source=True, require_paused=False, carry_deletions=params["carry_deletions"],
            dependent_resources=params["dependent_resources"], parallelism=params["parallelism"],
            extra_groups=params["extra_groups"]), GroupMap(params["extra_groups"] or {}), diff=self.diff)
        report = self.delete.run()
        self._begin(RELEASE)
        self.release = QuiesceService(self.client, quiesce_params(
            params["hcp_namespace"], state="resumed", hostedcluster_name=params["hostedcluster_name"],
            hostedcluster_namespace=params["hostedcluster_namespace"], fence=True, deployments=params["deployments"],
            remove_records=True), check_mode=self.check_mode)
        self.release.resume()
        if not self.check_mode:  # in check mode the lock was not written: the state is still the one found
            self._begin(STATE)
            self.move_held_lock(states.MIGRATED)
        self.warnings[:0] = report.warnings
        return self.result()

    @property
    def changed(self):
        return bool(self.record["changed"] or (self.delete and self.delete.report.changed)
                    or (self.release and self.release.changed) or (self.moved and self.moved["changed"]))

    def result(self):
        result = {"changed": self.changed, "step": self.step, "phase": self.phase,
                  "marks": list(self.marks), "record": dict(self.record)}
        if self.health is not None:
            result[HEALTH] = dict(self.health)
        diffs = [self.record_diff] if self.record_diff else []
        if self.delete is not None:
            result[DELETE] = migrate_result(self.delete)
            diffs += result[DELETE].pop("diff", [])
        if self.release is not None:
            result[RELEASE] = quiesce_result(self.release, diff=False)
            if self.diff and self.release.changed:
                diffs.append({"before_header": "release", "after_header": "release",
                              "before": dict(self.release.before), "after": dict(self.release.after)})
        self.moved_result(result, diffs)
        if self.diff and diffs:
            result["diff"] = diffs
        return result
