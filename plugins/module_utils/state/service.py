# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner and API work of hypershift.private_capi.migration_state (state machine: machine.py).

Every transition is one PUT of the HostedCluster carrying the resourceVersion it was judged on. A 409
Conflict means someone else wrote in between: the object is read again and the transition judged again
(so of two runs racing for the lock, the loser re-reads, sees the winner's lease, and fails clearly).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import random
import socket
import time
import uuid

from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift
from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import format_event_time, format_mark, utc_now
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import GroupMap
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiError, api_path
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import ModuleService
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine as states

HOSTEDCLUSTER_GROUP = hypershift.HOSTEDCLUSTER_GROUP
HOSTEDCLUSTER_VERSION = hypershift.HOSTEDCLUSTER_VERSION
HOSTEDCLUSTER_API_VERSION = hypershift.HOSTEDCLUSTER_API_VERSION
CONFLICT_RETRIES = 8
EVENT_COMPONENT = "hypershift.private_capi.migration_state"
CORE_CAPI_GROUP = "cluster.x-k8s.io"
# The kinds whose presence tells which group an HCP namespace really uses (None-platform clusters have none).
CAPI_EVIDENCE_PLURALS = ("clusters", "machinedeployments", "machinesets", "machines")


class MigrationStateError(PrivateCapiError):
    """A refused repair or an unusable request; the message names the HostedCluster and what to do."""


class RepairFailed(MigrationStateError):
    """Some invalid HostedClusters could not be repaired; result() is everything the query found and did."""

    def __init__(self, result):
        super().__init__("could not repair: %s" % " | ".join(result["repair_failures"]))
        self.query_result = result

    def result(self):
        return self.query_result


def default_holder():
    """An id unique to this run of the module: host, process id and a random suffix."""
    return "%s:%d:%s" % (socket.gethostname(), os.getpid(), uuid.uuid4().hex[:8])


def hostedcluster_path(namespace=None, name=None):
    return api_path(HOSTEDCLUSTER_GROUP, HOSTEDCLUSTER_VERSION, hypershift.HOSTEDCLUSTER_PLURAL, namespace, name)


def hostedcluster_event(metadata, event_type, reason, message, now, instance):
    """A core/v1 Event about the HostedCluster of `metadata` (a transition, or a module process fenced off its lock)."""
    stamp = format_event_time(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "%s.%x" % (metadata["name"], int(now.timestamp() * 1e9)), "namespace": metadata["namespace"]},
        "involvedObject": {
            "apiVersion": HOSTEDCLUSTER_API_VERSION,
            "kind": hypershift.HOSTEDCLUSTER_KIND,
            "name": metadata["name"],
            "namespace": metadata["namespace"],
            "uid": metadata.get("uid"),
            "resourceVersion": metadata.get("resourceVersion"),
        },
        "reason": reason,
        "message": message[:1024],
        "type": event_type,
        "source": {"component": EVENT_COMPONENT, "host": socket.gethostname()},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "reportingComponent": EVENT_COMPONENT,
        "reportingInstance": instance[:128],
    }


def create_hostedcluster_event(client, metadata, event_type, reason, message, now, instance):
    """Write hostedcluster_event(...) (a dry run in check mode); returns the Event's name. ApiError when refused."""
    event = hostedcluster_event(metadata, event_type, reason, message, now, instance)
    created = client.create(api_path("", "v1", "events", metadata["namespace"]), event, "create Event for %s" % describe(
        hypershift.HOSTEDCLUSTER_KIND, metadata["name"], metadata["namespace"]))
    return (created.get("metadata") or {}).get("name") or event["metadata"]["name"]


def lease_fence(client):
    """The lease fence (state/fence.py LeaseFence) guarding the client's writes, else None: while a module process
    holds its lease token, the fence is the client's before_write hook."""
    hook = getattr(client, "before_write", None)
    return hook if callable(getattr(hook, "require", None)) else None


class MigrationStateService(object):
    def __init__(self, client, params):
        self.client = client
        self.params = params
        self.holder = params.get("holder") or default_holder()
        self.lease_seconds = params["lease_seconds"]
        self.warnings = []
        self._group_versions = {}
        # the lease fence of the module process that makes the transition (transition_held_lock): its token must be on the object judged
        self.fence = lease_fence(client)

    # --- reads -------------------------------------------------------------------------------------
    def read(self, namespace, name):
        hostedcluster = self.client.get_or_none(hostedcluster_path(namespace, name),
                                                "get %s" % describe(hypershift.HOSTEDCLUSTER_KIND, name, namespace))
        if hostedcluster is None:
            raise MigrationStateError(
                "%s not found (GET %s); check hostedcluster_name and hostedcluster_namespace"
                % (describe(hypershift.HOSTEDCLUSTER_KIND, name, namespace), hostedcluster_path(namespace, name)))
        return hostedcluster

    def list(self, namespace, query_states):
        selector = states.label_selector_for(query_states)
        items = self.client.list(hostedcluster_path(namespace), "list %s" % describe(hypershift.HOSTEDCLUSTER_KIND, namespace=namespace),
                                 label_selector=selector)
        if query_states:
            items = [item for item in items if states.state_of(item) in query_states]
        return items, selector

    # --- writes ------------------------------------------------------------------------------------
    def write(self, plan):
        """PUT the planned object (resourceVersion-guarded); ApiError 409 when it went stale."""
        metadata = plan.hostedcluster["metadata"]
        return self.client.replace(hostedcluster_path(metadata["namespace"], metadata["name"]), plan.updated_object(),
                                   "update %s" % describe(hypershift.HOSTEDCLUSTER_KIND, metadata["name"], metadata["namespace"]))

    def emit_event(self, written, plan, now):
        """A core/v1 Event on the HostedCluster; a failure here is a warning (the transition is already written)."""
        event_type, reason, message = plan.event
        metadata = written["metadata"]
        try:
            return create_hostedcluster_event(self.client, metadata, event_type, reason, message, now, self.holder)
        except ApiError as exc:
            self.warnings.append("the move was written but its Event was not: %s" % exc)
            return None

    def apply_guarded(self, namespace, name, make_plan):
        """Read, plan, write; on 409 re-read and re-plan (bounded). Returns (plan, written, conflicts)."""
        conflicts = 0
        for _attempt in range(CONFLICT_RETRIES):
            hostedcluster = self.read(namespace, name)
            try:
                plan = make_plan(hostedcluster, utc_now())
            except (MigrationStateError, states.TransitionRefused) as exc:
                if conflicts:
                    message = "%s (judged again after %d conflicting write(s): another writer got in first)" % (exc, conflicts)
                    if isinstance(exc, states.TransitionRefused):
                        raise exc.again(message)
                    raise MigrationStateError(message)
                raise
            if not plan.write:
                return plan, hostedcluster, conflicts
            try:
                written = self.write(plan)
            except ApiError as exc:
                if exc.is_conflict:
                    conflicts += 1
                    # jittered backoff: operators update HostedCluster status often; do not retry in lockstep
                    time.sleep(random.uniform(0, min(0.5, 0.02 * 2 ** conflicts)))
                    continue
                raise
            return plan, written, conflicts
        raise MigrationStateError(
            "%s kept changing while we wrote it (%d conflicts in a row); nothing was written, re-run"
            % (describe(hypershift.HOSTEDCLUSTER_KIND, name, namespace), conflicts)
        )

    # --- operations --------------------------------------------------------------------------------
    def transition(self):
        params = self.params
        namespace, name = params["hostedcluster_namespace"], params["hostedcluster_name"]

        def make_plan(hostedcluster, now):
            plan = states.plan_transition(hostedcluster, params["state"], self.holder, now, lease_seconds=self.lease_seconds,
                                          takeover=params["takeover"], force=params["force"], reason=params.get("reason"),
                                          rollback=params.get("rollback") or False)
            if self.fence is not None and plan.write:
                self.fence.require(hostedcluster)
            return plan

        plan, written, conflicts = self.apply_guarded(namespace, name, make_plan)
        if self.fence is not None and plan.to_state != states.IN_PROGRESS:
            self.fence.retire(done=True)  # the transition dropped the token with the lease: nothing more to check
        now = utc_now()
        event = self.emit_event(written, plan, now) if plan.write and plan.event else None
        before = plan.hostedcluster.get("metadata") or {}
        return {
            "diff": {
                "before_header": describe(hypershift.HOSTEDCLUSTER_KIND, name, namespace),
                "after_header": describe(hypershift.HOSTEDCLUSTER_KIND, name, namespace),
                "before": {"annotations": before.get("annotations") or {}, "labels": before.get("labels") or {}},
                "after": {"annotations": plan.annotations, "labels": plan.labels} if plan.write else
                {"annotations": before.get("annotations") or {}, "labels": before.get("labels") or {}},
            },
            "changed": plan.changed,
            "from_state": plan.from_state,
            "state": plan.to_state,
            "holder": self.holder,
            "renewed": plan.renewed,
            "took_over": plan.took_over,
            "conflicts": conflicts,
            "event": event,
            "message": plan.message,
            "hostedcluster": states.report(written, now, self.lease_seconds),
        }

    def count_capi_objects(self, namespace, group):
        """How many evidence-kind objects of `group` the namespace holds (0 when the group is not served)."""
        if group not in self._group_versions:
            self._group_versions[group] = self.client.preferred_version(group, "discover API group %s" % group)
        version = self._group_versions[group]
        if version is None:
            return 0
        total = 0
        for plural in CAPI_EVIDENCE_PLURALS:
            try:
                total += len(self.client.list(api_path(group, version, plural, namespace),
                                              "list %s.%s in namespace %s" % (plural, group, namespace)))
            except ApiError as exc:
                if not exc.is_not_found:
                    raise
        return total

    def repair(self, hostedcluster):
        metadata = hostedcluster["metadata"]
        namespace, name = metadata["namespace"], metadata["name"]
        hcp_namespace = hypershift.hcp_namespace(namespace, name)
        private_group = GroupMap().to_private(CORE_CAPI_GROUP)
        standard_count = self.count_capi_objects(hcp_namespace, CORE_CAPI_GROUP)
        private_count = self.count_capi_objects(hcp_namespace, private_group)

        def make_plan(current, now):
            if states.state_of(current) != states.INVALID:
                return states.TransitionPlan(current, states.state_of(current), states.state_of(current),
                                             {}, {}, changed=False, write=False, message="no longer invalid")
            try:
                return states.plan_repair(current, standard_count, private_count, self.holder, now, hcp_namespace)
            except states.TransitionRefused as exc:
                raise MigrationStateError(str(exc))

        plan, written, _conflicts = self.apply_guarded(namespace, name, make_plan)
        event = self.emit_event(written, plan, utc_now()) if plan.write and plan.event else None
        return {"name": name, "namespace": namespace, "from_state": plan.from_state, "state": plan.to_state,
                "changed": plan.changed, "event": event, "message": plan.message,
                "standard_objects": standard_count, "private_objects": private_count}

    def query(self):
        params = self.params
        now = utc_now()
        query_states = params.get("query_states") or []
        if params.get("hostedcluster_name"):
            items = [self.read(params["hostedcluster_namespace"], params["hostedcluster_name"])]
            selector = None
        else:
            items, selector = self.list(params.get("hostedcluster_namespace"), query_states)
        reports = [states.report(item, now, self.lease_seconds) for item in items]
        if params.get("direction"):
            for entry in reports:
                entry.update(states.decide(entry, self.holder, direction=params["direction"],
                                           retry_failed=params.get("retry_failed") or False,
                                           takeover=params.get("takeover") or False))
        result = {"changed": False, "holder": self.holder, "label_selector": selector, "hostedclusters": reports,
                  "read_at": format_mark(now),
                  "counts": {}, "invalid": [], "repaired": []}
        for entry in reports:
            result["counts"][entry["state"]] = result["counts"].get(entry["state"], 0) + 1
            if entry["state"] == states.INVALID:
                result["invalid"].append("%s/%s" % (entry["namespace"], entry["name"]))
        if params["repair"]:
            failures = []
            for item in items:
                if states.state_of(item) != states.INVALID:
                    continue
                try:
                    repaired = self.repair(item)
                except MigrationStateError as exc:
                    failures.append(str(exc))
                    continue
                result["repaired"].append(repaired)
                result["changed"] = result["changed"] or repaired["changed"]
            if failures:
                result["repair_failures"] = failures
        elif result["invalid"]:
            self.warnings.append(
                "invalid state (scope legacy together with private-capi-types, or contradictory markers) on %s; "
                "re-run with repair: true to fix it from the HCP namespace's CAPI objects" % ", ".join(result["invalid"])
            )
        return result


def transition_held_lock(client, namespace, name, state, holder, rollback=False, reason=None):
    """The transition a module that holds the lock makes at its end (hcp_migrate_finish, hcp_migrate_rollback), as
    migration_state makes it: (its result, its warnings)."""
    service = MigrationStateService(client, dict(
        hostedcluster_namespace=namespace, hostedcluster_name=name, state=state, holder=holder,
        lease_seconds=states.DEFAULT_LEASE_SECONDS, takeover=False, force=False, reason=reason, rollback=rollback))
    return service.transition(), service.warnings


def query_one(client, namespace, name):
    """migration_state's query answer (state: query) for one HostedCluster: what a module that held the lock returns
    as the state after its transition (RV(after) of hcp_migrate_finish), so that the record needs no module of its own
    to read it."""
    service = MigrationStateService(client, dict(hostedcluster_namespace=namespace, hostedcluster_name=name,
                                                 lease_seconds=states.DEFAULT_LEASE_SECONDS, repair=False))
    return service.query()


class MigrationStateModule(MigrationStateService, ModuleService):
    """migration_state's service (k8s/runner.py): the query or the transition, its warnings and diff; a refused
    transition or a failed repair fails the module with its message (no traceback)."""

    MINIMUMS = {"lease_seconds": 1}
    # a typo in hostedcluster_namespace must not read as "no HostedClusters here"
    NAMESPACES = (("hostedcluster_namespace", None),)
    TAIL = ()

    @classmethod
    def option_problems(cls, params):
        """The first option that does not fit the state (an argument spec cannot say it)."""
        query = params["state"] == "query"
        problems = [
            (not query and params["repair"],
             "repair: true works with state: query only (it fixes invalid HostedClusters it finds)"),
            (not query and params.get("query_states"), "query_states works with state: query only"),
            (not query and params.get("direction"),
             "direction works with state: query only (it asks what a run should do with each HostedCluster found); "
             "moves take rollback: true instead"),
            (not query and params.get("retry_failed"),
             "retry_failed works with state: query and direction: migrate only; a failed HostedCluster is moved on "
             "with state: legacy, force: true"),
            (query and params.get("rollback"),
             "rollback: true works with state: in-progress or legacy (the rollback moves), not query"),
            (query and params.get("retry_failed") and params.get("direction") != states.MIGRATE,
             "retry_failed works with direction: migrate only (got direction: %s)"
             % (params.get("direction") or "none")),
        ]
        return [message for wrong, message in problems if wrong][:1]

    @classmethod
    def from_run(cls, run):
        service = cls(cls.connect(run), run.params)
        service.diff = run.diff
        return service

    def run(self):
        result = self.query() if self.params["state"] == "query" else self.transition()
        diff = result.pop("diff", None)
        if self.diff and diff is not None:
            result["diff"] = diff
        if result.get("repair_failures"):
            raise RepairFailed(result)
        return result
