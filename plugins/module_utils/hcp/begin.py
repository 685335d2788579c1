# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner of hypershift.private_capi.hcp_migrate_begin: the start of one HostedCluster's migration in one module run -
the query, the access review, the wait for a steady cluster, the retry's move to legacy and the lock - each part
decided from the answers so far (fleet/record.py decide_migration)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift
from ansible_collections.hypershift.private_capi.plugins.module_utils.fleet.record import decide_migration
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.steady import SteadyService
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import USER_ERRORS, error_result
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import ModuleService
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe
from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac.service import review_entry_point
from ansible_collections.hypershift.private_capi.plugins.module_utils.state.service import MigrationStateService


class BeginService(ModuleService):
    """hcp_migrate_begin's service (k8s/runner.py): the parts in order, each decided from the answers so far
    (record.decide_migration)."""

    DERIVED = hypershift.HCP_NAMESPACE_DERIVED
    MINIMUMS = {"lease_seconds": 1, "steady_timeout": 0, "steady_poll_seconds": 1}
    NAMESPACES = (("hostedcluster_namespace", None),)

    def __init__(self, client, params, check_mode=False, diff=False):
        super(BeginService, self).__init__(client, params, check_mode=check_mode, diff=diff)
        self.answers = {"found": {}, "access": {}, "steady": {}, "legacy": {}, "lock": {}}
        self.transition_diff = None

    def _state(self, **params):
        base = dict(hostedcluster_name=self.params["hostedcluster_name"], reason=None, rollback=False,
                    hostedcluster_namespace=self.params["hostedcluster_namespace"], holder=self.params["holder"],
                    lease_seconds=self.params["lease_seconds"], takeover=self.params["takeover"], force=False,
                    repair=False, retry_failed=False, direction=None)
        base.update(params)
        return MigrationStateService(self.client, base)

    def _decide(self):
        return decide_migration(dict(self.answers, check_mode=self.check_mode, access_review=self.params["access_review"],
                                     allow_unsteady=self.params["allow_unsteady"]))

    def _transition(self, **params):
        service = self._state(**params)
        answer = service.transition()
        for warning in service.warnings:
            self.warnings.append(warning)
        self.transition_diff = answer.pop("diff", None)
        return answer

    def run(self):
        query = self._state(state="query", direction="migrate", retry_failed=self.params["retry_failed"])
        self.answers["found"] = query.query()
        for warning in query.warnings:
            self.warnings.append(warning)
        outcome = self._decide()
        if outcome["stop"]:
            return self.result()
        if outcome["review"]:
            subject = describe(hypershift.HOSTEDCLUSTER_KIND, self.params["hostedcluster_name"],
                               self.params["hostedcluster_namespace"])
            self.answers["access"] = review_entry_point(
                self.client, "migrate", [self.params["hostedcluster_namespace"]], [self.params["hcp_namespace"]],
                self.params["operator_namespace"], subject)
            outcome = self._decide()
        if outcome["wait_steady"]:
            steady = SteadyService(self.client, dict(
                hcp_namespace=self.params["hcp_namespace"], hostedcluster_name=self.params["hostedcluster_name"],
                hostedcluster_namespace=self.params["hostedcluster_namespace"],
                wait_timeout=0 if self.check_mode else self.params["steady_timeout"],
                poll_seconds=self.params["steady_poll_seconds"])).run()
            self.answers["steady"] = steady
            outcome = self._decide()
        if outcome["mark_legacy"]:
            self.answers["legacy"] = self._transition(state="legacy", force=True,
                                                      reason="retry requested by run %s" % self.params["holder"])
        if outcome["lock"]:
            try:
                self.answers["lock"] = self._transition(state="in-progress")
            except USER_ERRORS as error:  # an answer: the role skips a lock another run holds, stops on the others
                self.answers["lock"] = dict(error_result(error), msg=str(error), changed=False)
        return self.result()

    def result(self):
        changed = any(answer.get("changed") for key, answer in self.answers.items() if key in ("legacy", "lock"))
        result = dict(self.answers, changed=changed, hcp_namespace=self.params["hcp_namespace"])
        if self.diff and self.transition_diff is not None and changed:
            result["diff"] = self.transition_diff
        return result
