"""Fault rules (nth, count, globs, actions, validation) and the request log counts."""
import pytest

from tests.kubeapi.errors import ApiError
from tests.kubeapi.faults import FaultInjector, RequestLog, resource_key

GET_MACHINE = ("get", "cluster.x-k8s.io", "machines", "", "default", "worker-1")


def fire_sequence(injector, requests):
    return [(rule or {}).get("id") for rule in (injector.match(*request) for request in requests)]


def test_add_fills_defaults_and_lists_rules():
    injector = FaultInjector()
    rule = injector.add({"resource": "machines"})
    assert rule == {"verb": "*", "group": "*", "resource": "machines", "subresource": "*", "namespace": "*",
                    "name": "*", "action": "error", "nth": 1, "count": 1, "code": 500, "seconds": 5,
                    "message": "injected fault", "id": "1", "hits": 0, "fired": 0, "remaining": 1}
    assert injector.list() == [rule]
    assert injector.add({"verb": "create"})["id"] == "2"


def test_nth_and_count_are_per_rule_over_matching_requests_only():
    injector = FaultInjector()
    rule_id = injector.add({"verb": "get", "resource": "machines", "nth": 3, "count": 2})["id"]
    other = ("get", "", "pods", "", "default", "p")
    sequence = [GET_MACHINE, other, GET_MACHINE, other, GET_MACHINE, GET_MACHINE, GET_MACHINE]
    assert fire_sequence(injector, sequence) == [None, None, None, None, rule_id, rule_id, None]
    listed = injector.list()[0]
    assert (listed["hits"], listed["fired"], listed["remaining"]) == (5, 2, 0)


def test_count_minus_one_fires_forever():
    injector = FaultInjector()
    rule_id = injector.add({"name": "worker-*", "count": -1, "nth": 2})["id"]
    assert fire_sequence(injector, [GET_MACHINE] * 4) == [None, rule_id, rule_id, rule_id]
    assert injector.list()[0]["remaining"] == -1


@pytest.mark.parametrize("rule, matches", [
    ({"name": "worker-*"}, True),
    ({"name": "worker-?"}, True),
    ({"name": "control-*"}, False),
    ({"name": "Worker-*"}, False),                  # globs are case-sensitive
    ({"namespace": "def*", "verb": "get"}, True),
    ({"verb": "list"}, False),
    ({"group": "cluster.x-k8s.io"}, True),
    ({"group": ""}, False),
    ({"subresource": ""}, True),                    # "" matches only the main resource
    ({"subresource": "status"}, False),
    ({"resource": "machine*"}, True),
])
def test_glob_matching(rule, matches):
    injector = FaultInjector()
    injector.add(rule)
    assert (injector.match(*GET_MACHINE) is not None) is matches


def test_first_firing_rule_wins_but_every_matching_rule_counts():
    injector = FaultInjector()
    first = injector.add({"resource": "machines", "action": "hang", "seconds": 0.5})["id"]
    second = injector.add({"verb": "get", "action": "drop"})["id"]
    fired = injector.match(*GET_MACHINE)
    assert (fired["id"], fired["action"], fired["seconds"]) == (first, "hang", 0.5)
    assert injector.list()[1]["hits"] == 1 and injector.list()[1]["fired"] == 0
    fired = injector.match(*GET_MACHINE)
    assert (fired["id"], fired["action"]) == (second, "drop")
    assert injector.match(*GET_MACHINE) is None


def test_error_action_carries_code_and_message():
    injector = FaultInjector()
    injector.add({"verb": "create", "code": 503, "message": "etcd is sad"})
    fired = injector.match("create", "", "configmaps", "", "default", "c")
    assert (fired["action"], fired["code"], fired["message"]) == ("error", 503, "etcd is sad")


def test_remove_and_clear():
    injector = FaultInjector()
    kept = injector.add({"verb": "get"})["id"]
    removed = injector.add({"verb": "list"})["id"]
    injector.remove(removed)
    assert [rule["id"] for rule in injector.list()] == [kept]
    with pytest.raises(KeyError, match="no fault rule with id '99'; existing ids: 1"):
        injector.remove("99")
    injector.clear()
    assert injector.list() == [] and injector.match(*GET_MACHINE) is None


@pytest.mark.parametrize("rule, field", [
    ({"action": "explode"}, "action"),
    ({"nth": 0}, "nth"),
    ({"nth": True}, "nth"),
    ({"count": 0}, "count"),
    ({"code": 200}, "code"),
    ({"code": "500"}, "code"),
    ({"seconds": -1}, "seconds"),
    ({"name": 5}, "name"),
    ({"message": 1}, "message"),
    ({"colour": "red"}, "colour"),
    ("not a dict", "<rule>"),
])
def test_invalid_rules_are_400_naming_the_field(rule, field):
    with pytest.raises(ApiError) as raised:
        FaultInjector().add(rule)
    assert raised.value.code == 400
    assert raised.value.message.startswith("fault rule field %r: expected " % field)


def test_request_log_counts():
    log = RequestLog(clock=lambda: 123.0)
    log.record("get", "", "pods", "", "default", "p", 200, "alice")
    log.record("update", "apps", "deployments", "scale", "default", "d", 200, "admin")
    log.record("create", "cluster.x-k8s.io", "machines", "", "default", "m", 409, "admin")
    log.record("get", "", "/api/v1", "", "", "", 200, "")
    log.record("list", "", "pods", "", "", "", 403, "bob")
    assert log.counts() == {
        "total": 5,
        "by_verb": {"get": 2, "update": 1, "create": 1, "list": 1},
        "by_resource": {"core/pods": {"get": 1, "list": 1}, "apps/deployments/scale": {"update": 1},
                        "cluster.x-k8s.io/machines": {"create": 1}, "/api/v1": {"get": 1}},
        "mutating": 2,
        "by_code": {"200": 3, "409": 1, "403": 1}}
    entries = log.entries()
    assert [entry["seq"] for entry in entries] == [1, 2, 3, 4, 5]
    assert entries[0] == {"seq": 1, "time": 123.0, "verb": "get", "group": "", "resource": "pods", "subresource": "",
                          "namespace": "default", "name": "p", "code": 200, "user": "alice", "dry_run": False}
    assert [entry["seq"] for entry in log.entries(since=3)] == [4, 5]


def test_request_log_is_bounded_and_reset_keeps_sequence():
    log = RequestLog(max_entries=3)
    for index in range(5):
        log.record("get", "", "pods", "", "ns", "p%d" % index, 200, "u")
    assert [entry["name"] for entry in log.entries()] == ["p2", "p3", "p4"]
    assert log.counts()["total"] == 5                       # counts are not bounded
    log.reset()
    assert log.counts() == {"total": 0, "by_verb": {}, "by_resource": {}, "mutating": 0, "by_code": {}}
    assert log.entries() == []
    log.record("delete", "", "pods", "", "ns", "p", 200, "u")
    assert log.entries()[0]["seq"] == 6 and log.counts()["mutating"] == 1


def test_resource_key():
    assert resource_key("", "pods") == "core/pods"
    assert resource_key("apps", "deployments", "scale") == "apps/deployments/scale"
    assert resource_key("", "/version") == "/version"
