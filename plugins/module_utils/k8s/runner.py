# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The head and tail every API module's run shares, as kubernetes.core's runner.py does for its modules.

A module's main() is ``module_main(argspec, NAME_RULES, run)``: it builds the AnsibleK8SModule (the argument spec and
its constraints), checks the names and namespaces before anything else, and calls the service's runner, which hands
``run_module`` a ``work(run)`` function: work builds the client with ``run.connect()``, does the service's work and
returns the result. run_module adds the tail - RV(api_calls) (the requests the run's client sent) and
RV(elapsed_seconds) - and exits; a user error (USER_ERRORS, errors.py) fails the module with the error's own message
and its result() fields beside what the run got done, outside any except block, so the result has no exception key.
Any other exception is a bug and keeps Ansible's traceback.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import minimum_problems
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiClient
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import (
    USER_ERRORS,
    OptionError,
    error_result,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import check_names


class ModuleRun(object):
    """One run of a module: its client (built on demand by connect()), its start time and what it holds to its end."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.started = time.monotonic()
        self.client = None
        self.holdings = []

    def connect(self, connections=None, namespaces=()):
        """The run's ApiClient (built once, authenticated as kubernetes.core does).

        connections: keep that many keep-alive connections (parallel requests); namespaces: (option, namespace)
        pairs that must exist (one GET each), so that a typo does not read as "nothing there".
        """
        if self.client is None:
            self.client = ApiClient.from_module(self.module)
        if connections:
            self.client.size_connection_pool(connections)
        self.client.require_namespaces(namespaces)
        return self.client

    def hold(self, key, holding):
        """Keep `holding` (state/fence.py's lease token) to the run's end: holding.finished() once work returned (a
        user error there fails the run), holding.release() whatever happened, holding.summary() as RV(key)."""
        self.holdings.append((key, holding))

    def release(self):
        """Release what the run holds (each holding gives back what it still has)."""
        for _key, holding in self.holdings:
            holding.release()

    def tail(self, calls=True, elapsed=True):
        """RV(api_calls) (once a client was built) and RV(elapsed_seconds), as the module documents them."""
        result = dict((key, holding.summary()) for key, holding in self.holdings)
        if calls and self.client is not None:
            result["api_calls"] = {"total": self.client.calls, "by_method": dict(self.client.calls_by_method)}
        if elapsed:
            result["elapsed_seconds"] = round(time.monotonic() - self.started, 3)
        return result


def run_module(module, work, partial=None, minimums=None, calls=True, elapsed=True):
    """exit_json(work(run) + tail), or fail_json for a user error.

    minimums: {option: lowest value} checked before work runs (an argument spec cannot say it).
    partial(): what the run got done before the error (counts, plan, changed), returned beside msg; changed is False
    unless partial says otherwise. calls/elapsed: whether the module returns RV(api_calls)/RV(elapsed_seconds).
    """
    run = ModuleRun(module)
    failure = None
    try:
        problems = minimum_problems(module.params, minimums or {})
        if problems:
            raise OptionError("; ".join(problems))
        result = work(run)
        for _key, holding in run.holdings:
            holding.finished()
    except USER_ERRORS as error:
        failure = error
    finally:
        run.release()
    if failure is not None:  # outside the except block: a user error gets no traceback
        failed = dict(partial() if partial else {})
        failed.update(run.tail(calls, elapsed))
        failed.update(error_result(failure))
        failed.setdefault("changed", False)
        module.fail_json(msg=str(failure), **failed)
    result = dict(result)
    result.update(run.tail(calls, elapsed))
    module.exit_json(**result)


def module_main(argspec, name_rules, run, **constraints):
    """A module's main(): AnsibleK8SModule(argspec(), check mode, constraints such as mutually_exclusive), then the
    names and namespaces of name_rules checked (no API call before), then run(module)."""
    module = AnsibleK8SModule(argument_spec=argspec(), supports_check_mode=True, **constraints)
    check_names(module, name_rules)
    run(module)
