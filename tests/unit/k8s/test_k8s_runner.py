"""The shared runner tail (k8s/runner.py), the one error root (k8s/errors.py), the shared options (k8s/args.py) and
the one pagination loop (ApiClient.list_pages, 410 Expired restarting the LIST)."""
import importlib
import json

import pytest

from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s import args as k8s_args
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s import runner
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiClient, ApiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.discovery import ServedResource, capi_resources
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import USER_ERRORS, PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    AGENT_EXTRA_GROUPS,
    CapiTranslationError,
    GroupMap,
)

MODULE_UTILS = "ansible_collections.hypershift.private_capi.plugins.module_utils."
# every error class a runner reports as a user error, where it is defined
ERROR_CLASSES = [
    ("k8s.client", "ApiError"), ("k8s.client", "NamespaceNotFoundError"), ("k8s.discovery", "DiscoveryError"),
    ("crds.render", "CrdRenderError"), ("move.plan", "MigrationPlanError"), ("move.copy", "MigrationError"),
    ("move.graph", "OwnershipCycleError"), ("hcp.quiesce", "QuiesceError"), ("hcp.health", "HealthInputError"),
    ("hcp.health", "HealthChecksFailed"), ("hcp.judge", "VerifyInputError"), ("fleet.report", "FleetReportError"),
]


class Exited(Exception):
    def __init__(self, result, in_except):
        super(Exited, self).__init__(result)
        self.result = result
        self.in_except = in_except


class FakeModule(object):
    def __init__(self, **params):
        self.params = params
        self.check_mode = False
        self._diff = False

    def exit_json(self, **result):
        raise Exited(result, False)

    def warn(self, warning):
        self.warnings = getattr(self, "warnings", []) + [warning]

    def fail_json(self, msg, **result):
        import sys
        raise Exited(dict(result, msg=msg, failed=True), sys.exc_info()[1] is not None)


class CountingClient(object):
    calls = 3
    calls_by_method = {"GET": 3}

    def __init__(self):
        self.namespaces = []

    def size_connection_pool(self, connections):
        self.connections = connections

    def require_namespaces(self, namespaces):
        self.namespaces.extend(namespaces)


@pytest.fixture
def client(monkeypatch):
    made = CountingClient()
    monkeypatch.setattr(runner.ApiClient, "from_module", classmethod(lambda cls, module: made))
    return made


def service_of(work, partial=None, **declared):
    """A ModuleService whose run() is work(the ModuleRun), partial() partial(), declaring declared (MINIMUMS ...)."""
    class Service(runner.ModuleService):
        @classmethod
        def from_run(cls, module_run):
            service = cls(None, module_run.params)
            service.module_run = module_run
            return service

        def run(self):
            return work(self.module_run)

        def partial(self):
            return partial() if partial else {}

    for name, value in declared.items():
        setattr(Service, name, value)
    return Service


def run(module, work, partial=None, **declared):
    with pytest.raises(Exited) as exited:
        runner.execute(module, service_of(work, partial, **declared))
    return exited.value


@pytest.mark.parametrize("where, name", ERROR_CLASSES)
def test_every_runner_error_derives_from_the_one_root(where, name):
    error_class = getattr(importlib.import_module(MODULE_UTILS + where), name)
    assert issubclass(error_class, PrivateCapiError)
    assert issubclass(error_class, USER_ERRORS)


def test_the_error_roots_stay_free_of_kubernetes_core_and_are_user_errors():
    # Galaxy's importer loads the filters (which reach these errors) with ansible-core alone
    assert not issubclass(CapiTranslationError, CoreException) and not issubclass(PrivateCapiError, CoreException)
    assert CapiTranslationError in USER_ERRORS and PrivateCapiError in USER_ERRORS


def test_success_gets_the_tail(client):
    exited = run(FakeModule(namespace="ns"), lambda r: {"changed": False, "found": r.connect(namespaces=[("namespace", "ns")]) is client})
    assert exited.result["found"] is True and exited.result["api_calls"] == {"total": 3, "by_method": {"GET": 3}}
    assert isinstance(exited.result["elapsed_seconds"], float) and "failed" not in exited.result
    assert client.namespaces == [("namespace", "ns")]


def test_the_tail_is_left_out_where_a_module_does_not_document_it(client):
    exited = run(FakeModule(), lambda r: {"changed": False, "client": bool(r.connect())}, TAIL=())
    assert set(exited.result) == {"changed", "client"}


def test_a_user_error_fails_with_its_message_partial_result_and_no_traceback(client):
    def work(run_):
        run_.connect()
        raise ApiError(403, "Forbidden", "machines is forbidden", "list Machines in namespace ns")

    exited = run(FakeModule(), work, partial=lambda: {"counts": {"Machine": 1}, "changed": True})
    assert not exited.in_except and "exception" not in exited.result
    assert exited.result["msg"] == "list Machines in namespace ns failed: machines is forbidden (HTTP 403 Forbidden)"
    assert exited.result["status"] == 403 and exited.result["reason"] == "Forbidden"
    assert exited.result["changed"] is True and exited.result["counts"] == {"Machine": 1}
    assert exited.result["api_calls"]["total"] == 3


def test_a_translation_error_is_a_user_error_too(client):
    exited = run(FakeModule(), lambda r: GroupMap({"cluster.x-k8s.io": "x"}))
    assert exited.result["failed"] and exited.result["changed"] is False and not exited.in_except
    assert "api_calls" not in exited.result  # no client was built


def test_a_bug_is_not_swallowed(client):
    with pytest.raises(KeyError):
        runner.execute(FakeModule(), service_of(lambda r: {}["missing"]))


class Holding(object):
    """What a run holds to its end (the lease token of state/fence.py): finished, released, summarised in the tail."""

    def __init__(self, lost=None):
        self.lost = lost
        self.events = []

    def finished(self):
        self.events.append("finished")
        if self.lost:
            raise PrivateCapiError(self.lost)

    def release(self):
        self.events.append("released")

    def summary(self):
        return {"id": "t1"}


def test_a_holding_is_finished_released_and_summarised_in_the_tail(client):
    holding = Holding()
    exited = run(FakeModule(), lambda r: r.hold("lease_token", holding) or {"changed": True,
                                                                          "client": bool(r.connect())})
    assert holding.events == ["finished", "released"]
    assert exited.result["lease_token"] == {"id": "t1"} and list(exited.result)[2:] == [
        "lease_token", "api_calls", "elapsed_seconds"]


def test_a_holding_that_finds_its_token_lost_fails_the_run_and_is_still_released(client):
    holding = Holding(lost="the lease token of HostedCluster ns/hc now belongs to another process")
    exited = run(FakeModule(), lambda r: r.hold("lease_token", holding) or {"changed": True})
    assert exited.result["failed"] and exited.result["msg"].startswith("the lease token") and not exited.in_except
    assert holding.events == ["finished", "released"] and exited.result["lease_token"] == {"id": "t1"}


class RecordingTransport(object):
    def __init__(self):
        self.client = self
        self.sent = []

    def request(self, method, path, body=None, serialize=False, **params):
        self.sent.append(method)
        return Response({})


def test_before_write_runs_before_every_write_and_not_for_its_own_requests():
    transport = RecordingTransport()
    client = ApiClient(transport)
    asked = []

    def before_write(method, path, what):
        asked.append((method, path))
        if method == "DELETE":
            raise PrivateCapiError("refused")

    client.before_write = before_write
    client.get("/api/v1/namespaces/ns", "get")
    client.create("/api/v1/namespaces/ns/events", {}, "create")
    with pytest.raises(PrivateCapiError):
        client.delete("/api/v1/namespaces/ns/events/e", "delete")
    unhooked = client.unhooked()
    unhooked.patch("/api/v1/namespaces/ns", {}, "patch")
    assert asked == [("POST", "/api/v1/namespaces/ns/events"), ("DELETE", "/api/v1/namespaces/ns/events/e")]
    assert transport.sent == ["GET", "POST", "PATCH"] and client.before_write is before_write
    assert client.calls == unhooked.calls == 3 and client.calls_by_method == {"GET": 1, "POST": 1, "PATCH": 1}


@pytest.mark.parametrize("params, message", [
    ({"parallelism": 0}, "parallelism must be 1 or more, got 0"),
    ({"parallelism": -2}, "parallelism must be 1 or more, got -2"),
])
def test_minimums_fail_before_any_work(client, params, message):
    worked = []
    exited = run(FakeModule(**params), worked.append, MINIMUMS=k8s_args.PARALLELISM_MINIMUM)
    assert exited.result["msg"] == message and worked == [] and "api_calls" not in exited.result


def test_minimum_problems_names_every_option_below_its_minimum():
    problems = k8s_args.minimum_problems({"a": -1, "b": 0, "c": None}, {"a": 0, "b": 0, "c": 1})
    assert problems == ["a must be 0 or more, got -1"]


def test_extra_groups_default_is_the_cores_agent_pair_and_a_copy():
    option = k8s_args.extra_groups_option(AGENT_EXTRA_GROUPS)
    assert option == {"type": "dict", "default": AGENT_EXTRA_GROUPS}
    option["default"]["x"] = "y"
    assert "x" not in AGENT_EXTRA_GROUPS
    assert k8s_args.extra_groups_option() == {"type": "dict", "default": {}}
    assert k8s_args.parallelism_option(4) == {"type": "int", "default": 4}


def test_auth_argspec_is_a_fresh_copy():
    spec = k8s_args.auth_argspec()
    spec["kubeconfig"]["type"] = "changed"
    assert k8s_args.auth_argspec()["kubeconfig"]["type"] != "changed"


# --- pagination -------------------------------------------------------------------------------------------------------
class Response(object):
    def __init__(self, body):
        self.data = json.dumps(body)


class PagedTransport(object):
    """Serves pages of `items` (`limit` a page) and answers 410 to the continue tokens in expire."""

    def __init__(self, items, expire=()):
        self.items = items
        self.expire = list(expire)
        self.queries = []
        self.client = self

    def request(self, method, path, body=None, serialize=False, **params):
        from kubernetes.client.exceptions import ApiException

        self.queries.append(dict(params))
        token = params.get("_continue")
        if token and token in self.expire:
            self.expire.remove(token)
            error = ApiException(status=410, reason="Gone")
            error.body = json.dumps({"reason": "Expired", "message": "The provided continue parameter is too old"})
            raise error
        start = int(token or 0)
        limit = params.get("limit") or len(self.items)
        end = start + limit
        metadata = {"continue": str(end)} if end < len(self.items) else {}
        return Response({"apiVersion": "v1", "kind": "PodList", "metadata": metadata, "items": [
            {"metadata": {"name": name}} for name in self.items[start:end]]})


def test_one_loop_pages_fills_kind_and_stops_at_limit():
    transport = PagedTransport(["a", "b", "c", "d", "e"])
    client = ApiClient(transport)
    items, metadata = client.list_all("/api/v1/pods", "list pods", page_size=2)
    assert [item["metadata"]["name"] for item in items] == ["a", "b", "c", "d", "e"] and metadata == {}
    assert all(item["kind"] == "Pod" and item["apiVersion"] == "v1" for item in items)
    assert [query.get("_continue") for query in transport.queries] == [None, "2", "4"]
    assert [item["metadata"]["name"] for item in client.list("/api/v1/pods", "list pods", limit=2)] == ["a", "b"]
    assert [item["metadata"]["name"] for item in client.list("/api/v1/pods", "list pods")] == list("abcde")


def test_an_expired_continue_token_restarts_the_list_from_its_first_page():
    transport = PagedTransport(["a", "b", "c", "d", "e"], expire=["4"])
    items, _metadata = ApiClient(transport).list_all("/api/v1/pods", "list pods", page_size=2)
    assert [item["metadata"]["name"] for item in items] == list("abcde")
    assert [query.get("_continue") for query in transport.queries] == [None, "2", "4", None, "2", "4"]


def test_a_token_that_keeps_expiring_fails_after_the_restarts():
    transport = PagedTransport(["a", "b", "c"], expire=["2", "2", "2"])
    with pytest.raises(ApiError) as raised:
        ApiClient(transport).list_all("/api/v1/pods", "list pods", page_size=2)
    assert raised.value.status == 410 and "too old" in str(raised.value)
    assert len(transport.queries) == 6


# --- discovery --------------------------------------------------------------------------------------------------------
def _resource(group, version, plural, namespaced=True, verbs=("list", "get", "create")):
    return ServedResource(group, version, plural, plural.title(), namespaced, verbs, False)


def test_capi_resources_is_the_one_discovery_of_capi_kinds():
    served = {
        "": [("v1", [_resource("", "v1", "pods")])],
        "cluster.x-k8s.io": [("v1beta2", [_resource("cluster.x-k8s.io", "v1beta2", "machines")]),
                             ("v1beta1", [_resource("cluster.x-k8s.io", "v1beta1", "machines"),
                                          _resource("cluster.x-k8s.io", "v1beta1", "clusterclasses", verbs=("get",))])],
        "cluster.hypershift.openshift.io": [("v1beta2", [_resource("cluster.hypershift.openshift.io", "v1beta2", "machines"),
                                                         _resource("cluster.hypershift.openshift.io", "v1beta2",
                                                                   "scopes", namespaced=False)])],
        "apps": [("v1", [_resource("apps", "v1", "deployments")])],
    }
    group_map = GroupMap({})
    standard = capi_resources(served, group_map.is_standard)
    assert [(r.group, r.version, r.plural) for r in standard] == [("cluster.x-k8s.io", "v1beta2", "machines")]
    private = capi_resources(served, group_map.is_private)
    assert [(r.group, r.plural) for r in private] == [("cluster.hypershift.openshift.io", "machines")]
    both = capi_resources(served, lambda group: group_map.is_standard(group) or group_map.is_private(group))
    assert [r.group for r in both] == ["cluster.hypershift.openshift.io", "cluster.x-k8s.io"]


class Derived(runner.ModuleService):
    """A service that derives hcp_namespace and checks the namespaces it names, the HostedCluster's only with holder."""

    DERIVED = {"hcp_namespace": (("hostedcluster_namespace", "hostedcluster_name"), lambda ns, name: ns + "-" + name)}
    NAMESPACES = (("hcp_namespace", None), ("hostedcluster_namespace", "holder"))
    PARALLELISM_OPTION, CONNECTIONS = "parallelism", 2

    def run(self):
        self.warnings = ["read %s" % self.params["hcp_namespace"]]
        return {"changed": False}


@pytest.mark.parametrize("params, namespaces", [
    ({"hcp_namespace": "", "holder": ""},
     [("hcp_namespace, derived from hostedcluster_namespace and hostedcluster_name", "clusters-hc")]),
    ({"hcp_namespace": "given", "holder": "run-1"}, [("hcp_namespace", "given"), ("hostedcluster_namespace", "clusters")]),
])
def test_the_runner_derives_connects_and_checks_what_the_service_declares(client, params, namespaces):
    module = FakeModule(hostedcluster_namespace="clusters", hostedcluster_name="hc", parallelism=3, **params)
    with pytest.raises(Exited) as exited:
        runner.execute(module, Derived)
    assert client.namespaces == namespaces and client.connections == 5
    assert module.warnings == ["read %s" % namespaces[0][1]] and not exited.value.result.get("failed")


def test_an_option_that_cannot_be_derived_fails_before_any_request(client):
    module = FakeModule(hostedcluster_namespace="clusters", hostedcluster_name="", hcp_namespace="", holder="",
                        parallelism=1)
    with pytest.raises(Exited) as exited:
        runner.execute(module, Derived)
    assert exited.value.result["msg"] == ("hcp_namespace is empty and so is hostedcluster_name: give hcp_namespace, "
                                          "or hostedcluster_namespace and hostedcluster_name to derive it from")
    assert client.namespaces == [] and "api_calls" not in exited.value.result


def test_a_failed_run_still_gives_its_warnings_and_partial_result(client):
    class Failing(Derived):
        def run(self):
            self.warnings = ["half done"]
            raise PrivateCapiError("stopped")

        def partial(self):
            return {"done": 1}

    module = FakeModule(hostedcluster_namespace="clusters", hostedcluster_name="hc", hcp_namespace="x", holder="",
                        parallelism=1)
    with pytest.raises(Exited) as exited:
        runner.execute(module, Failing)
    assert module.warnings == ["half done"] and exited.value.result["done"] == 1 and exited.value.result["failed"]
