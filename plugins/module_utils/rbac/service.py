# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The pre-flight access review against the API server (module capi_access_review): discovery, one
SelfSubjectRulesReview per namespace, a SelfSubjectAccessReview for each access that review does not cover.

Neither review is stored by the API server: the run changes nothing, and runs the same in check mode.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiError, api_path
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.discovery import read_served_resources
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import ModuleService
from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac.review import (
    access_review_body, covered, missing_rules, needed, refusal, rules_review_body)
from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac.rules import (
    HCP_NAMESPACES, HOSTEDCLUSTER_NAMESPACES, OPERATOR_NAMESPACE)

SELF_RULES_REVIEW = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
SELF_ACCESS_REVIEW = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


class AccessReviewService(object):
    """Runs the review against the API server through an ApiClient."""

    def __init__(self, client):
        self.client = client
        self.requests = 0

    def _rules(self, namespace):
        answer = self.client.create(SELF_RULES_REVIEW, rules_review_body(namespace),
                                    "SelfSubjectRulesReview of namespace %s" % namespace)
        self.requests += 1
        # an incomplete review only shows fewer rules: whatever it does not cover is asked by SelfSubjectAccessReview
        return (answer.get("status") or {}).get("resourceRules") or []

    def _allowed(self, access):
        answer = self.client.create(SELF_ACCESS_REVIEW, access_review_body(access),
                                    "SelfSubjectAccessReview of %s" % access.describe())
        self.requests += 1
        return bool((answer.get("status") or {}).get("allowed"))

    def denied(self, accesses):
        """The accesses the identity does not hold."""
        by_namespace = {}
        for access in accesses:
            by_namespace.setdefault(access.namespace, []).append(access)
        denied = []
        for namespace in sorted(by_namespace):
            wanted = by_namespace[namespace]
            if namespace:
                rules = self._rules(namespace)
                wanted = [access for access in wanted if not covered(access, rules)]
            denied.extend(access for access in wanted if not self._allowed(access))
        return denied

    def hostedcluster_namespaces(self):
        """The namespaces of every HostedCluster (one LIST); none when the identity may not list them (the review
        of the cluster-wide rules names that right)."""
        try:
            listed = self.client.list(api_path(hypershift.HOSTEDCLUSTER_GROUP, hypershift.HOSTEDCLUSTER_VERSION,
                                               "hostedclusters"), "list HostedClusters of all namespaces")
        except ApiError as exc:
            if exc.status != 403:
                raise
            return []
        return sorted(set(item["metadata"]["namespace"] for item in listed))


def review_entry_point(client, entry_point, hostedcluster_namespaces, hcp_namespaces, operator_namespace, subject,
                       discover_hostedcluster_namespaces=False):
    """capi_access_review's answer (without its tail): every right entry_point uses in those namespaces reviewed, the
    denied ones and the rules that would grant them. Reviews are questions, never stored: they are sent for real in
    check mode too (a dry run would answer nothing)."""
    client = client.for_questions()
    service = AccessReviewService(client)
    found = service.hostedcluster_namespaces() if discover_hostedcluster_namespaces else []
    namespaces = {HOSTEDCLUSTER_NAMESPACES: sorted(set(hostedcluster_namespaces) | set(found)),
                  HCP_NAMESPACES: sorted(set(hcp_namespaces)),
                  OPERATOR_NAMESPACE: [operator_namespace] if operator_namespace else []}
    served = read_served_resources(client, 4)
    accesses = needed(entry_point, namespaces, served)
    denied = service.denied(accesses)
    result = {"changed": False, "allowed": not denied, "namespaces": namespaces, "checked": len(accesses),
              "reviews": service.requests,
              "denied": [dict(verb=access.verb, api_group=access.group, resource=access.resource,
                              namespace=access.namespace, scope=access.scope) for access in denied],
              "missing_rules": missing_rules(denied)}
    if denied:
        result["message"] = refusal(subject, denied, entry_point)
    return result


class AccessReviewModule(ModuleService):
    """capi_access_review's service (k8s/runner.py). Read-only (access reviews are not stored); a denial is a result
    (allowed: false) unless fail_on_denied."""

    def run(self):
        params = self.params
        result = review_entry_point(self.client, params["entry_point"], params["hostedcluster_namespaces"],
                                    params["hcp_namespaces"], params["operator_namespace"], params["subject"],
                                    params["discover_hostedcluster_namespaces"])
        if not result["allowed"] and params["fail_on_denied"]:
            raise AccessDenied(result["message"], result)
        return result


class AccessDenied(PrivateCapiError):
    """The identity lacks rights the entry point uses; result() carries what is missing."""

    def __init__(self, message, details):
        super(AccessDenied, self).__init__(message)
        self.details = details

    def result(self):
        return dict((key, value) for key, value in self.details.items() if key != "message")
