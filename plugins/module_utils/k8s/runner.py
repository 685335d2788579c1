# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The one runner of every API module, as kubernetes.core's runner.py is for its modules (2026-12-02, issue 58).

A module's main() is one statement, ``run_module(argspec, NAME_RULES, TheService)``. run_module owns the whole run:

1. the AnsibleK8SModule: the argument spec, check mode, the constraints (mutually_exclusive ...);
2. the names and namespaces of NAME_RULES (k8s/names.py), checked before anything else;
3. the options a service derives (DERIVED: an empty O(hcp_namespace) becomes its HostedCluster's), the minimums
   (MINIMUMS) and the service's option_problems() - all before any API call;
4. the connection: the keep-alive pool (PARALLELISM_OPTION, CONNECTIONS) and the namespaces that must exist
   (NAMESPACES), so that a typo does not read as "nothing there" (ModuleService.from_run);
5. what the run holds to its end (service.hold(run): the HostedCluster's lease token, state/fence.py);
6. service.run(), the module's result, and the service's warnings (a failed run's too);
7. the tail (TAIL: RV(api_calls), RV(elapsed_seconds)) and, on a user error (USER_ERRORS, errors.py), fail_json with
   the error's message, its result() fields and service.partial() - what the run got done (NOT_STARTED before the
   service existed) - outside any except block, so the result has no exception key. Any other exception is a bug and
   keeps Ansible's traceback.

A service is a ModuleService: it declares what it needs as class attributes and offers run() and partial().

Where the module runs: its action plugin (plugins/plugin_utils/in_process.py, 2026-12-03) runs main() in the
controller's worker process when the task's connection is local, with hosted() naming the AnsibleModule stand-in that
reads the task's arguments and hands the result back; otherwise (another connection, async) main() runs as a module
process with AnsibleModule. Either way the run is the one below.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
from contextlib import contextmanager

from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import minimum_problems
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiClient
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import (
    USER_ERRORS,
    OptionError,
    error_result,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import check_names

API_CALLS = "api_calls"
ELAPSED_SECONDS = "elapsed_seconds"


class ModuleRun(object):
    """One run of a module: its client (built on demand by connect()), its start time and what it holds to its end."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.check_mode = module.check_mode
        self.diff = module._diff
        self.started = time.monotonic()
        self.client = None
        self.holdings = []
        self.derived = {}  # {option: the options it was derived from} (derive)

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

    def option_label(self, option):
        """How a message names an option: 'hcp_namespace, derived from hostedcluster_namespace and hostedcluster_name'
        where the run derived it."""
        sources = self.derived.get(option)
        return "%s, derived from %s" % (option, " and ".join(sources)) if sources else option

    def hold(self, key, holding):
        """Keep `holding` (state/fence.py's lease token) to the run's end: holding.finished() once the service's run
        returned (a user error there fails the run), holding.release() whatever happened, holding.summary() as
        RV(key)."""
        self.holdings.append((key, holding))

    def release(self):
        """Release what the run holds (each holding gives back what it still has)."""
        for _key, holding in self.holdings:
            holding.release()

    def tail(self, keys):
        """What the run holds (summaries), RV(api_calls) (once a client was built) and RV(elapsed_seconds), of keys."""
        result = dict((key, holding.summary()) for key, holding in self.holdings)
        if API_CALLS in keys and self.client is not None:
            result[API_CALLS] = {"total": self.client.calls, "by_method": dict(self.client.calls_by_method)}
        if ELAPSED_SECONDS in keys:
            result[ELAPSED_SECONDS] = round(time.monotonic() - self.started, 3)
        return result


class ModuleService(object):
    """The service contract: what a module's service declares to the runner, and what it offers it."""

    # {option: lowest value}, checked before any API call (an argument spec cannot say it)
    MINIMUMS = {}
    # {option: (the options it is derived from, rule(*their values))}: an empty option is filled before anything else
    DERIVED = {}
    # (option, condition): the namespace each option names must exist - checked unless its value is empty, or the
    # condition (another option) is given and empty
    NAMESPACES = ()
    # the keep-alive connections: CONNECTIONS, plus the value of PARALLELISM_OPTION where there is one
    PARALLELISM_OPTION = None
    CONNECTIONS = 0
    # what the module returns of the run's tail (its RETURN documents them)
    TAIL = (API_CALLS, ELAPSED_SECONDS)
    # the partial result of a run that failed before its service existed
    NOT_STARTED = {}
    # what the module warns about once the run is done (a service built by __init__ has its own list)
    warnings = ()

    def __init__(self, client, params, check_mode=False, diff=False):
        self.client = client
        self.params = params
        self.check_mode = check_mode
        self.diff = diff
        self.warnings = []

    @classmethod
    def option_problems(cls, params):
        """What is wrong with the options together (an argument spec cannot say it), before any API call."""
        return []

    @classmethod
    def connect(cls, run):
        """The run's client: the keep-alive connections (CONNECTIONS, plus the value of PARALLELISM_OPTION) and the
        namespaces of NAMESPACES checked - unless a value is empty or its condition option is."""
        params = run.params
        connections = (params[cls.PARALLELISM_OPTION] if cls.PARALLELISM_OPTION else 0) + cls.CONNECTIONS
        return run.connect(connections or None, [(run.option_label(option), params[option])
                                                 for option, condition in cls.NAMESPACES
                                                 if condition is None or params.get(condition)])

    @classmethod
    def from_run(cls, run):
        """The service of one module run (one whose constructor differs, or that connects later, overrides this)."""
        return cls(cls.connect(run), run.params, check_mode=run.check_mode, diff=run.diff)

    def hold(self, run):
        """Take what the run holds to its end (run.hold), before run(): nothing, unless the service holds a lease."""

    def run(self):
        """The module's result."""
        raise NotImplementedError

    def partial(self):
        """What the run got done, returned beside the message of a user error (changed is False unless it says)."""
        return {}


def derive(run, derived):
    """Fill each empty option of derived ({option: (sources, rule)}) from its sources, noted in run.derived; an option
    empty with one of its sources empty too is an OptionError naming them."""
    params = run.params
    for option, (sources, rule) in derived.items():
        if option not in params or params[option]:
            continue
        empty = [source for source in sources if not params.get(source)]
        if empty:
            raise OptionError("%s is empty and so is %s: give %s, or %s to derive it from"
                              % (option, " and ".join(empty), option, " and ".join(sources)))
        params[option] = rule(*(params[source] for source in sources))
        run.derived[option] = sources


def _start(run, service):
    """The checks before any API call, then the service built (ModuleService.from_run)."""
    derive(run, service.DERIVED)
    problems = minimum_problems(run.params, service.MINIMUMS) + list(service.option_problems(run.params))
    if problems:
        raise OptionError("; ".join(problems))
    return service.from_run(run)


_HOST = {}  # {"module_class": the AnsibleModule stand-in of the run in the controller's worker} (hosted)


@contextmanager
def hosted(module_class):
    """Within the block, run_module builds its module with module_class (AnsibleK8SModule's module_class: the
    in-process action's stand-in for AnsibleModule) instead of AnsibleModule."""
    _HOST["module_class"] = module_class
    try:
        yield
    finally:
        _HOST.pop("module_class", None)


def run_module(argspec, name_rules, service, **constraints):
    """A module's whole run (see the module docstring): exit_json(service.run() + tail), or fail_json for a user
    error. constraints: AnsibleK8SModule's (mutually_exclusive, required_if ...)."""
    constraints.update(_HOST)
    module = AnsibleK8SModule(argument_spec=argspec(), supports_check_mode=True, **constraints)
    check_names(module, name_rules)
    execute(module, service)


def execute(module, service):
    """run_module's run of the service class on the module built (steps 3 to 7 of the module docstring)."""
    run = ModuleRun(module)
    built = failure = None
    try:
        built = _start(run, service)
        built.hold(run)
        result = built.run()
        for _key, holding in run.holdings:
            holding.finished()
    except USER_ERRORS as error:
        failure = error
    finally:
        run.release()
    for warning in built.warnings if built is not None else ():  # a failed run's too
        module.warn(warning)
    if failure is not None:  # outside the except block: a user error gets no traceback
        failed = dict(built.partial() if built is not None else service.NOT_STARTED)
        failed.update(run.tail(service.TAIL))
        failed.update(error_result(failure))
        failed.setdefault("changed", False)
        module.fail_json(msg=str(failure), **failed)
    result = dict(result)
    result.update(run.tail(service.TAIL))
    module.exit_json(**result)
