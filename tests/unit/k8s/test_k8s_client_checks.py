"""The client layer's checks before and at the first API call: kubeconfig_problem (every way a kubeconfig can be unusable,
every place it can come from) and require_namespace (404 fails naming it, 403 is unknown, other errors propagate)."""
import pytest
import yaml

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s import client as k8s_client

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s import kubeconfig
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import (
    ApiClient,
    ApiError,
    NamespaceNotFoundError,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.kubeconfig import kubeconfig_problem

GOOD = {"apiVersion": "v1", "kind": "Config", "current-context": "admin",
        "clusters": [{"name": "mgmt", "cluster": {"server": "https://127.0.0.1:1"}}],
        "contexts": [{"name": "admin", "context": {"cluster": "mgmt", "user": "admin"}},
                     {"name": "orphan", "context": {"cluster": "gone", "user": "admin"}}],
        "users": [{"name": "admin", "user": {"token": "t"}}]}
NO_ENV = {}  # no K8S_AUTH_*, KUBECONFIG or in-cluster variables


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    return str(path)


@pytest.mark.parametrize("name, content, context, expected", [
    ("good", GOOD, None, None),
    ("good-context", GOOD, "admin", None),
    ("hostname", "myhost\n", None, "is not a kubeconfig: it holds text ('myhost')"),
    ("list", "- a\n- b\n", None, "is not a kubeconfig: it holds a list"),
    ("number", "42\n", None, "is not a kubeconfig: it holds the value 42, not a mapping"),
    ("broken", "clusters: [\n", None, "is not YAML (line 2: "),
    ("empty", "", None, "is empty; write a kubeconfig into it"),
    ("bad-section", {"contexts": "admin"}, None, "is not a kubeconfig: contexts must be a list of entries with a name"),
    ("no-current", dict(GOOD, **{"current-context": ""}), None,
     "has no current-context and no context was given; set the module option context (contexts in the file: admin, "
     "orphan)"),
    ("unknown-current", dict(GOOD, **{"current-context": "nope"}), None,
     "its current-context is 'nope', which the kubeconfig does not define (contexts in the file: admin, orphan)"),
    ("unknown-context", GOOD, "nope", "the context option asks for 'nope', which the kubeconfig does not define"),
    ("unknown-cluster", GOOD, "orphan", "context 'orphan' names cluster 'gone', which the kubeconfig does not define"),
])
def test_kubeconfig_file_problems_name_the_file_and_what_to_do(tmp_path, name, content, context, expected):
    path = write(tmp_path, name, content)
    problem = kubeconfig_problem({"kubeconfig": path, "context": context}, NO_ENV)
    if expected is None:
        assert problem is None
    else:
        assert problem.startswith("kubeconfig %s (option kubeconfig)" % path), problem
        assert expected in problem, problem


def test_missing_file_and_directory(tmp_path):
    missing = str(tmp_path / "nope")
    assert kubeconfig_problem({"kubeconfig": missing}, NO_ENV) == (
        "kubeconfig %s (option kubeconfig) does not exist; give the path of an existing kubeconfig file (option "
        "kubeconfig or K8S_AUTH_KUBECONFIG)" % missing)
    problem = kubeconfig_problem({"kubeconfig": str(tmp_path)}, NO_ENV)
    assert problem.startswith("kubeconfig %s (option kubeconfig) is a directory, not a kubeconfig file" % tmp_path)


def test_unreadable_file(tmp_path, monkeypatch):
    path = write(tmp_path, "secret", GOOD)

    def refuse(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(kubeconfig, "open", refuse, raising=False)  # as root, chmod 000 would not stop the read
    problem = kubeconfig_problem({"kubeconfig": path}, NO_ENV)
    assert problem == ("kubeconfig %s (option kubeconfig) cannot be read (Permission denied); check its permissions for "
                       "the user running the module" % path)


def test_inline_mapping_and_wrong_type():
    assert kubeconfig_problem({"kubeconfig": GOOD}, NO_ENV) is None
    problem = kubeconfig_problem({"kubeconfig": dict(GOOD, **{"current-context": "nope"})}, NO_ENV)
    assert problem.startswith("the kubeconfig mapping given inline (option kubeconfig): its current-context is 'nope'")
    assert kubeconfig_problem({"kubeconfig": ["a"]}, NO_ENV) == \
        "option kubeconfig must be a file path or a kubeconfig mapping, got a list"


def test_where_the_kubeconfig_comes_from(tmp_path, monkeypatch):
    missing = str(tmp_path / "nope")
    assert "(K8S_AUTH_KUBECONFIG)" in kubeconfig_problem({}, {"K8S_AUTH_KUBECONFIG": missing})
    assert "(KUBECONFIG, no kubeconfig option given)" in kubeconfig_problem({}, {"KUBECONFIG": missing})
    monkeypatch.setenv("HOME", str(tmp_path))
    assert kubeconfig_problem({}, NO_ENV) == (
        "kubeconfig ~/.kube/config (the default location, no kubeconfig option given) does not exist; give the path of "
        "an existing kubeconfig file (option kubeconfig or K8S_AUTH_KUBECONFIG)")
    # a KUBECONFIG list: missing entries are skipped (as kubernetes does), the others merged
    good = write(tmp_path, "good", GOOD)
    assert kubeconfig_problem({}, {"KUBECONFIG": "%s:%s" % (missing, good)}) is None
    # host credentials or the in-cluster configuration: no kubeconfig is read, so none is checked
    assert kubeconfig_problem({"host": "https://h", "api_key": "t", "kubeconfig": missing}, NO_ENV) is None
    assert kubeconfig_problem({}, {"K8S_AUTH_HOST": "https://h", "K8S_AUTH_API_KEY": "t", "KUBECONFIG": missing}) is None


class FakeK8sClient(object):
    """kubernetes.core's client as ApiClient sees it: .client.request(method, path, ...)."""

    def __init__(self, status):
        self.status = status
        self.paths = []
        self.client = self

    def request(self, method, path, **_kwargs):
        self.paths.append((method, path))
        if self.status == 200:
            return type("Response", (), {"data": b'{"kind": "Namespace"}', "status": 200})()
        raise k8s_client.ApiException(status=self.status, reason="Status %d" % self.status)


@pytest.mark.parametrize("status, expected", [(200, True), (403, None)])
def test_require_namespace_exists_or_unknown(status, expected):
    fake = FakeK8sClient(status)
    assert ApiClient(fake).require_namespace("clusters-prod-01", "hcp_namespace") is expected
    assert fake.paths == [("GET", "/api/v1/namespaces/clusters-prod-01")]


def test_require_namespace_fails_naming_the_namespace_and_option():
    with pytest.raises(NamespaceNotFoundError) as raised:
        ApiClient(FakeK8sClient(404)).require_namespace("no-such-ns", "lists[0].namespace")
    assert str(raised.value) == (
        "namespace 'no-such-ns' (option lists[0].namespace) does not exist (GET /api/v1/namespaces/no-such-ns: 404 "
        "NotFound); check the spelling, or create the namespace first - nothing was read or written in it")
    assert isinstance(raised.value, ApiError) and raised.value.result()["status"] == 404


def test_require_namespace_other_errors_propagate_and_each_namespace_is_read_once():
    with pytest.raises(ApiError) as raised:
        ApiClient(FakeK8sClient(401)).require_namespace("clusters", "hostedcluster_namespace")
    assert raised.value.status == 401 and not isinstance(raised.value, NamespaceNotFoundError)
    fake = FakeK8sClient(200)
    ApiClient(fake).require_namespaces([("a", "x"), ("b", "x"), ("c", ""), ("d", None), ("e", "y")])
    assert fake.paths == [("GET", "/api/v1/namespaces/x"), ("GET", "/api/v1/namespaces/y")]


@pytest.mark.parametrize("dry_run", [True, False])
def test_delete_options_carry_check_modes_dry_run_in_the_body(dry_run):
    """kube-apiserver decodes a DELETE's body over its query: `?dryRun=All` beside a body is ignored and the object
    really goes, so check mode's dryRun must be in the DeleteOptions."""
    options = k8s_client.ApiClient(None, dry_run=dry_run)._delete_options(  # pylint: disable=protected-access
        "Orphan", {"uid": "u", "resourceVersion": "7"})
    expected = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Orphan",
                "preconditions": {"uid": "u", "resourceVersion": "7"}}
    if dry_run:
        expected["dryRun"] = ["All"]
    assert options == expected
