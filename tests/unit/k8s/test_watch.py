"""ChangeBell (plugins/module_utils/k8s/watch.py): a wait that ends when a watched collection changes, with a client
whose watch() plays recorded events and failures (the integration tests watch a real kube-apiserver)."""
import threading
import time

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s import watch
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import ApiError

DEPLOYMENTS = "/apis/apps/v1/namespaces/ns/deployments"
PODS = "/api/v1/namespaces/ns/pods"


def event(kind, version):
    return {"type": kind, "object": {"metadata": {"resourceVersion": version}}}


class Recorded(object):
    """watch(path, ...) plays the next script of that path: a list of events and ApiErrors (raised); once the scripts
    are played, a watch blocks until stopped (as a quiet server's would)."""

    def __init__(self, scripts):
        self.scripts = scripts
        self.opened = []  # (path, resource_version) of each watch
        self.released = threading.Event()

    def watch(self, path, what, resource_version, timeout_seconds, watcher):
        self.opened.append((path, resource_version))
        script = self.scripts.get(path) or []
        if not script:
            self.released.wait(5)
            return
        for item in script.pop(0):
            if isinstance(item, Exception):
                raise item
            yield item


def wait_until(condition, seconds=5):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_a_change_rings_for_its_path_and_a_bookmark_does_not():
    client = Recorded({DEPLOYMENTS: [[event("BOOKMARK", "5")]], PODS: [[event("MODIFIED", "7")]]})
    with watch.ChangeBell(client, [DEPLOYMENTS, PODS]) as bell:
        assert bell.wait(2) == {PODS}
        assert bell.wait(0.2) == set()  # the bookmark only moved the deployments' version on
        assert wait_until(lambda: (DEPLOYMENTS, "5") in client.opened)
        client.released.set()
    assert bell.broken is None


def test_a_watch_that_ends_starts_again_from_the_last_version_it_saw():
    client = Recorded({PODS: [[event("ADDED", "3"), event("DELETED", "9")], [event("MODIFIED", "12")]]})
    with watch.ChangeBell(client, [PODS], resource_version="1") as bell:
        assert wait_until(lambda: len(client.opened) >= 3)
        assert client.opened[:3] == [(PODS, "1"), (PODS, "9"), (PODS, "12")]
        assert bell.wait(0) == {PODS}
        client.released.set()


def test_too_old_starts_again_from_the_newest_and_rings():
    client = Recorded({PODS: [[ApiError(410, "Expired", "too old resource version", "watch")]]})
    with watch.ChangeBell(client, [PODS], resource_version="1") as bell:
        assert bell.wait(2) == {PODS}
        assert wait_until(lambda: len(client.opened) >= 2)
        assert client.opened[:2] == [(PODS, "1"), (PODS, None)]
        assert bell.broken is None
        client.released.set()


def test_a_forbidden_watch_breaks_the_bell_so_that_its_caller_polls():
    client = Recorded({PODS: [[ApiError(403, "Forbidden", 'pods is forbidden: cannot watch', "watch")]]})
    with watch.ChangeBell(client, [PODS]) as bell:
        started = time.monotonic()
        assert bell.wait(5) == set()
        assert time.monotonic() - started < 2, "a broken bell does not make its caller wait"
        assert "403" in bell.broken and PODS in bell.broken
    assert client.opened == [(PODS, None)]


@pytest.mark.parametrize("failures,broken", [(2, False), (3, True)])
def test_a_watch_that_keeps_failing_gives_up_after_three_in_a_row(monkeypatch, failures, broken):
    monkeypatch.setattr(watch, "RETRY_SECONDS", 0.01)
    refused = ApiError(None, "ConnectionError", "connection refused", "watch")
    client = Recorded({PODS: [[refused]] * failures})
    with watch.ChangeBell(client, [PODS]) as bell:
        assert wait_until(lambda: len(client.opened) > failures or bell.broken)
        assert (bell.broken is not None) is broken
        assert bell.wait(0) == {PODS}  # a failure that is not the last rings: read again now
        client.released.set()


def test_a_failure_that_is_not_an_api_error_is_a_failure_too(monkeypatch):
    monkeypatch.setattr(watch, "RETRY_SECONDS", 0.01)
    client = Recorded({PODS: [[OSError("connection reset by peer")], [event("MODIFIED", "4")]]})
    with watch.ChangeBell(client, [PODS]) as bell:
        assert bell.wait(2) == {PODS}
        assert wait_until(lambda: len(client.opened) >= 3)
        assert bell.broken is None, "one failure is retried"
        client.released.set()


def test_stop_ends_a_wait_at_once():
    client = Recorded({})
    bell = watch.ChangeBell(client, [PODS])
    threading.Timer(0.1, bell.stop).start()
    started = time.monotonic()
    assert bell.wait(5) == set()
    assert time.monotonic() - started < 2
    client.released.set()
