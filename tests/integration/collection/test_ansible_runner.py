"""playbooks/migrate_fleet.yml through ansible-runner, the way AAP/AWX runs a job template: a private data directory
with env/extravars, env/envvars, env/settings and inventory/hosts, the checkout as the project; then the job's
events, its artifacts and the fleet report are checked."""
import json
import os
import sys

import ansible_runner
import pytest
import yaml

from testenv import REPO_ROOT
from testenv.hcp import fleet
from tests.integration.fleet.support import FAST_VARS, hostedcluster_states, read_report, start_fleet

BIN = os.path.dirname(sys.executable)
IDENT = "migrate-fleet-1"
CLUSTERS = ("hc-01", "hc-02")
HOSTS = tuple("mc-1/clusters/" + name for name in CLUSTERS)


def _write_private_data_dir(root, kubeconfig, report_root):
    """The files AAP's job launcher writes: the survey answers as extravars, the inventory, env and settings."""
    for sub in ("env", "inventory"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    extravars = dict(FAST_VARS, private_capi_fleet_serial=2, private_capi_fleet_max_fail_percentage=0,
                     private_capi_fleet_report_root=report_root)
    files = {
        "env/extravars": extravars,
        # the project's ansible.cfg, as AAP finds it at the project root (collections_path = ./.collections)
        # the execution environment's PATH: this interpreter's ansible-playbook first
        "env/envvars": {"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                        "PATH": BIN + os.pathsep + os.environ.get("PATH", "")},
        "env/settings": {"job_timeout": 600, "pexpect_timeout": 5},
        "inventory/hosts": {"all": {"children": {"management_clusters": {"hosts": {
            "mc-1": {"private_capi_kubeconfig": kubeconfig}}}}}},
    }
    for name, content in files.items():
        with open(os.path.join(root, name), "w") as handle:
            yaml.safe_dump(content, handle)


@pytest.fixture(scope="module")
def runner_job(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("runner")
    server, _crds = start_fleet(tmp_path, fleet.fleet_spec(len(CLUSTERS), machines=1))
    private_data_dir = os.path.join(str(tmp_path), "job")
    report_root = os.path.join(str(tmp_path), "reports")
    _write_private_data_dir(private_data_dir, server.kubeconfig, report_root)
    runner = ansible_runner.run(private_data_dir=private_data_dir, project_dir=REPO_ROOT,
                                playbook="playbooks/migrate_fleet.yml", ident=IDENT, quiet=True)
    events = list(runner.events)
    yield {"server": server, "runner": runner, "events": events, "private_data_dir": private_data_dir,
           "report_root": report_root}
    assert server.stop() == 0


def _stdout(job):
    with open(os.path.join(job["private_data_dir"], "artifacts", IDENT, "stdout")) as handle:
        return handle.read()


def test_job_succeeds_and_every_cluster_is_migrated(runner_job):
    runner = runner_job["runner"]
    assert (runner.status, runner.rc) == ("successful", 0), _stdout(runner_job)[-4000:]
    assert hostedcluster_states(runner_job["server"]) == {name: "migrated" for name in CLUSTERS}


def test_stats_event_has_no_failures_and_counts_changes_per_cluster(runner_job):
    stats = [e for e in runner_job["events"] if e["event"] == "playbook_on_stats"]
    assert len(stats) == 1, [e["event"] for e in runner_job["events"]][-10:]
    data = stats[0]["event_data"]
    assert not data["failures"] and not data["dark"], data
    for host in HOSTS:
        assert data["ok"].get(host, 0) > 0, data["ok"]
        # lock, pause, scale, copy, proxy, resume, delete, state: a migration is a run of writes
        assert data["changed"].get(host, 0) >= 5, data["changed"]
    assert data["changed"] == runner_job["runner"].stats["changed"]


def test_each_cluster_has_an_ok_event_for_its_migrated_move(runner_job):
    moves = {}
    for event in runner_job["events"]:
        data = event.get("event_data", {})
        # the move is step 7's last, in hcp_migrate_finish's result (moved: as migration_state returns it)
        moved = data.get("res", {}).get("moved") or {}
        if event["event"] == "runner_on_ok" and data.get("resolved_action") == "hypershift.private_capi.hcp_migrate_finish" \
                and moved.get("changed") and moved.get("state") == "migrated":
            moves.setdefault(data["host"], []).append((data["task"], moved.get("holder")))
    assert sorted(moves) == sorted(HOSTS), "runner_on_ok of the move to migrated, by host: %r" % moves
    # one move per cluster, made by this job's run id (the lock holder)
    assert all(len(entries) == 1 for entries in moves.values()), moves
    run_id = read_report(runner_job["report_root"])["run_id"]
    assert {holder for entries in moves.values() for _task, holder in entries} == {run_id}, moves


def test_events_are_ordered_and_name_the_playbook(runner_job):
    events = runner_job["events"]
    assert events[0]["event"] == "playbook_on_start"
    assert [e["counter"] for e in events] == sorted(e["counter"] for e in events)
    plays = [e["event_data"]["play"] for e in events if e["event"] == "playbook_on_play_start"]
    assert plays[0] == "Plan the fleet run" and "Migrate each selected HostedCluster" in plays, plays
    assert all(e["event_data"].get("playbook") == "playbooks/migrate_fleet.yml"
               for e in events if e["event"] == "playbook_on_play_start")


def test_artifacts_are_those_aap_reads(runner_job):
    artifacts = os.path.join(runner_job["private_data_dir"], "artifacts", IDENT)
    with open(os.path.join(artifacts, "status")) as handle:
        assert handle.read().strip() == "successful"
    with open(os.path.join(artifacts, "rc")) as handle:
        assert handle.read().strip() == "0"
    stdout = _stdout(runner_job)
    assert "PLAY RECAP" in stdout and all(host in stdout for host in HOSTS), stdout[-2000:]
    event_files = sorted(os.listdir(os.path.join(artifacts, "job_events")))
    assert len(event_files) == len(runner_job["events"]) and all(name.endswith(".json") for name in event_files)
    with open(os.path.join(artifacts, "command")) as handle:
        command = json.load(handle)
    assert command["cwd"] == REPO_ROOT and "playbooks/migrate_fleet.yml" in command["command"], command


def test_fleet_report_matches_the_job(runner_job):
    report = read_report(runner_job["report_root"])
    assert report["totals"] == {"migrated": len(CLUSTERS)}, report["totals"]
    by_name = {cluster["name"]: cluster for cluster in report["clusters"]}
    assert sorted(by_name) == sorted(CLUSTERS)
    for name in CLUSTERS:
        assert by_name[name]["phases"][-1]["name"] == "finish", by_name[name]["phases"]
    # the job's output names the run, so an operator can find the report from the AAP job page
    assert report["run_id"] in _stdout(runner_job)
    assert os.path.isfile(os.path.join(runner_job["report_root"], report["run_id"], "report.md"))
