"""Fault injection rules and the request log behind the admin-only /kubeapi/v1/faults and /requests endpoints.

The rules and the log are testenv/faults.py's (shared with testenv/faultproxy.py, the fault-injecting proxy
in front of a real kube-apiserver); here a bad rule is a 400 Status instead of a ValueError.
"""
from testenv import faults as _shared
from testenv.faults import ACTIONS, DEFAULT_ERROR_MESSAGE, MUTATING_VERBS, RequestLog, resource_key

from tests.kubeapi.errors import bad_request

__all__ = ["ACTIONS", "DEFAULT_ERROR_MESSAGE", "MUTATING_VERBS", "FaultInjector", "RequestLog", "resource_key"]


class FaultInjector(_shared.FaultInjector):
    def add(self, rule):
        """Validate and store a rule (a 400 ApiError naming the field when it is bad); returns it as stored."""
        try:
            return super().add(rule)
        except ValueError as exc:
            raise bad_request("%s and POST it again" % exc) from None
