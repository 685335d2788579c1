"""A module of a killed run that tries to write after a resume took over is refused, and nothing is lost (issue 36).

As an AAP job cancel or a lost controller does, run A's ansible-playbook process group is SIGKILLed while its
hcp_migrate_window module waits for an answer (the API server holds its read of the Deployments, a hang fault of the
test's fault proxy). ansible-core's workers call setsid(), so that module keeps running (in the worker forked for its
task: plugins/plugin_utils/in_process.py): it holds its lease token on
the HostedCluster and renews it. The documented resume (the same run id) then migrates the cluster: its first writing
module takes the token from the live one, says so, and waits for its writes in flight. Then the held read is answered
and the killed run's module goes on with what it came to do: scale the CAPI Deployments to 0, which would stop the
controllers of the cluster just migrated. That write is refused: the module fails, saying so in a Warning Event on the
HostedCluster. The cluster ends migrated, its controllers running, every object as before.
"""
import json
import os
import time

import pytest

from testenv.hcp import fleet
from tests.integration.fleet.support import (
    bed_webhook_vars, hcp_ns, hostedcluster, hostedcluster_states, kill_playbook, list_items, migrated_content_problems,
    read_report, run_playbook, snapshot, start_fleet, start_playbook, write_inventory)

NAME = "hc-01"
RUN = "fenced-run"
TOKEN = "hypershift.openshift.io/capi-migration-lease-token"
HOLD_SECONDS = 600  # the killed run's read is held until the test releases it (release_hangs), at most this long
TIMEOUT = 300


def _token(server):
    value = (hostedcluster(server, NAME)["metadata"].get("annotations") or {}).get(TOKEN)
    return json.loads(value) if value else None


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _command_line(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as handle:
        return handle.read().replace(b"\0", b" ").decode()


def _wait(condition, what, timeout=TIMEOUT, process=None, output=None):
    deadline = time.monotonic() + timeout
    while not condition():
        if process is not None and process.poll() is not None:
            raise AssertionError("run A ended (%s) before %s:\n%s" % (process.returncode, what, open(output).read()[-4000:]))
        assert time.monotonic() < deadline, "%s: not within %ss" % (what, timeout)
        time.sleep(0.2)


def _deployments(server):
    return {d["metadata"]["name"]: d for d in list_items(server, "/apis/apps/v1/namespaces/%s/deployments" % hcp_ns(NAME))}


@pytest.fixture(scope="module")
def fenced(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("fenced")
    server, crds = start_fleet(tmp_path, fleet.fleet_spec(1, machines=1), faults=True, pods="kwok-only", private_crds=False)
    before = snapshot(server, crds, hcp_ns(NAME))
    replicas_before = {name: d["spec"]["replicas"] for name, d in _deployments(server).items()}
    inventory = write_inventory(tmp_path, server.kubeconfig, host_vars=bed_webhook_vars(server))
    root = os.path.join(str(tmp_path), "reports")
    # the first LIST of the HCP namespace's Deployments is api_proxy's (prepare); the second, hcp_migrate_window's
    hold = server.add_fault({"verb": "list", "group": "apps", "resource": "deployments", "namespace": hcp_ns(NAME),
                             "nth": 2, "count": 1, "action": "hang", "seconds": HOLD_SECONDS})
    output_a = os.path.join(str(tmp_path), "run-a-killed.log")
    process = start_playbook("migrate_fleet.yml", inventory, output_a, {
        "private_capi_fleet_run_id": RUN, "private_capi_fleet_report_root": root + "-killed"})
    _wait(lambda: [f for f in server.faults.faults() if f["id"] == hold["id"]][0]["fired"] >= 1,
          "run A's window module reading the Deployments", process=process, output=output_a)
    old = _token(server)
    killed = {"code": kill_playbook(process), "module_alive": _alive(old["pid"]),
              "command_line": _command_line(old["pid"]) if _alive(old["pid"]) else ""}
    resumed = run_playbook("migrate_fleet.yml", inventory, {"private_capi_fleet_run_id": RUN,
                                                            "private_capi_fleet_report_root": root})
    after_resume = {"alive": _alive(old["pid"]), "states": hostedcluster_states(server)}
    server.release_hangs()
    _wait(lambda: not _alive(old["pid"]), "the killed run's module to exit", timeout=120)
    yield {"server": server, "crds": crds, "before": before, "old": old, "killed": killed, "resumed": resumed,
           "after_resume": after_resume, "replicas_before": replicas_before, "root": root}
    assert server.stop() == 0


def _out(result):
    return (result.stdout + result.stderr)[-6000:]


def test_killing_the_playbook_leaves_its_module_running_with_a_live_token(fenced):
    assert fenced["killed"]["code"] == -9
    assert fenced["killed"]["module_alive"], "the killed run's module died with the playbook: the test shows nothing"
    # the module runs in a worker of the killed ansible-playbook (forked: the same command line), not the playbook's
    # main process
    assert "migrate_fleet.yml" in fenced["killed"]["command_line"], fenced["killed"]
    assert fenced["old"]["run"] == RUN
    # its read still held when the resume had finished: whatever it writes next comes after the takeover
    assert fenced["after_resume"] == {"alive": True, "states": {NAME: "migrated"}}, fenced["after_resume"]


def test_the_resume_takes_the_token_from_the_live_module_and_says_so(fenced):
    result = fenced["resumed"]
    assert result.returncode == 0, _out(result)
    output = result.stdout + result.stderr
    assert "took the lease token of HostedCluster clusters/%s from the module process %d" % (NAME, fenced["old"]["pid"]) \
        in output.replace("\n", " "), _out(result)
    record = read_report(fenced["root"])["clusters"][0]
    assert record["status"] == "migrated" and record["resumed"], record
    assert "resumed its own lock (run %s); the module process %d" % (RUN, fenced["old"]["pid"]) in record["reason"], record


def test_the_killed_runs_module_is_refused_its_write_and_says_so_on_the_hostedcluster(fenced):
    server = fenced["server"]
    events = [e for e in list_items(server, "/api/v1/namespaces/%s/events" % fleet.HC_NAMESPACE)
              if e["reason"] == "CAPIMigrationWriteFenced" and e["involvedObject"]["name"] == NAME]
    assert len(events) == 1, events
    message = events[0]["message"]
    # why: as its renewal or its write check last read the HostedCluster (the token moved on, or the lock ended)
    assert message.startswith(("the lease token of HostedCluster clusters/%s now belongs to " % NAME,
                               "HostedCluster clusters/%s is no longer locked (state migrated)" % NAME)), message
    assert ": this module process (pid %d on " % fenced["old"]["pid"] in message, message
    assert "refused its next write and stopped; nothing more was changed by it" in message, message


def test_nothing_is_lost_and_the_controllers_run(fenced):
    server = fenced["server"]
    assert hostedcluster_states(server) == {NAME: "migrated"}
    hc = hostedcluster(server, NAME)
    assert TOKEN not in hc["metadata"]["annotations"] and "pausedUntil" not in hc["spec"]
    problems = migrated_content_problems(fenced["before"], snapshot(server, fenced["crds"], hcp_ns(NAME)))
    assert problems == [], "\n".join(problems)
    # without the fence the killed run's module would have scaled them to 0 after the migration
    deployments = _deployments(server)
    assert {name: d["spec"]["replicas"] for name, d in deployments.items()} == fenced["replicas_before"]
    assert all(d["spec"]["replicas"] > 0 for d in deployments.values())
    assert not [name for name, d in deployments.items()
                if "hypershift.openshift.io/capi-migration-replicas" in (d["metadata"].get("annotations") or {})]
