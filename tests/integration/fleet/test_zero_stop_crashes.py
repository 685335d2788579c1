"""Crash safety of the zero-stop procedure (issue 46): migrate_fleet.yml SIGKILLed at seeded random points of its new
phases (the sidecars' pre-install and rollout, the window's check, pause, copy, flip and unpause), then run again with
the same run id: every cluster converges to migrated with nothing lost; rollback.yml killed the same way and run again
converges back to legacy with nothing lost. Between trials the sidecars are taken out again (api_proxy, state absent)
on every other trial, so that the pre-install runs, and is killed, again.

Each trial's kill point is uniform over the span of the new phases as a calibration run of the same kind measured
them: the first run (which also puts the CRDs and the shim in, before its fence) with the sidecars out (the even
trials: the pre-install runs), and a warm run with them in (the odd ones), the span taken from the phases' own marks
against the run's first fence (the HyperShift operator fenced, right before the sidecar phase), which the trial
watches for: the time before it varies most with the machine's load (a make test run calibrated 54.6-79.1 s from the launch, then ended before 76.4 s).
A trial's kill point is drawn within the first MIGRATE_SHARE of that span (CI's run of 372c17f on 2026-12-02 calibrated
2.9-55.7 s after the fence, then its one trial's run ended before 49.8 s). The way back is killed from its launch,
within the first ROLLBACK_SHARE of the way back after the first run (with two trials or more, of the shorter of the
two ways back before the trials).
A kill that came after the run's end (its log holds the recap) tests nothing: that kill is tried again, earlier
(ATTEMPTS, EARLIER), and the test fails unless at least half the trials' kills of each playbook landed inside its run.
PRIVATE_CAPI_CRASH_TRIALS trials (default 1 in `make test`: the pre-install and the rollback each killed once, with no
calibration of the odd kind; the closing figures are for 20) from PRIVATE_CAPI_CRASH_SEED (default 46).
"""
import json
import os
import random
import subprocess
import time
from datetime import datetime, timezone

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import MARK_TIME_FORMAT
from testenv import REPO_ROOT
from testenv.hcp import fleet
from tests.integration.fleet.support import (
    hcp_ns, hostedcluster_states, hostedclusters, kill_playbook, migrated_content_problems, read_report, run_playbook,
    snapshot, start_fleet, start_playbook, write_inventory)
from tests.integration.fleet.test_rollback_playbook import without_provenance

pytestmark = pytest.mark.slow

NAMES = ("hc-01", "hc-02")
TRIALS = int(os.environ.get("PRIVATE_CAPI_CRASH_TRIALS", "1"))
SEED = int(os.environ.get("PRIVATE_CAPI_CRASH_SEED", "46"))
MIGRATE_PHASES = ("sidecar", "check", "pause", "copy", "flip", "resume")  # the migration's new phases, to its unpause
QUIET_SECONDS = 5  # a module process of a killed run may outlive it (as on a real controller): let it end
# The way back is killed within this share of its calibrated duration (from its launch): the whole of it let 3 of 20
# kills of bc270fa's trials (2026-11-29) come after a quicker run's end
ROLLBACK_SHARE = 0.8
# The same for the migration's span after its fence: a trial's run is often quicker than its calibration (see above)
MIGRATE_SHARE = 0.7
# A kill that came after its run's end is tried again (the run made legacy again, or migrated again for the way back),
# at most ATTEMPTS times in all, each within the first EARLIER of the span before the kill that missed: the make test
# of d3cd90d (2026-12-03) calibrated 0.6-25.7 s after the fence, then its one trial's run ended before 22.9 s
ATTEMPTS = 2
EARLIER = 0.6


def mark_epoch(mark):
    """A phase mark's time (UTC, as the modules write them) as Unix time."""
    return datetime.strptime(mark, MARK_TIME_FORMAT).replace(tzinfo=timezone.utc).timestamp()


def calibrate(world, run_id):
    """(first start, first start + MIGRATE_SHARE of the span to the last end) of the new phases in a whole
    migrate_fleet.yml run, seconds after its first fence (the HyperShift operator fenced, just before the sidecar
    phase): the time before it (reading, pre-flight, the steady wait, the lock) varies most with the machine's load,
    so a trial's kill counts from the fence it sees."""
    migrated = run_playbook("migrate_fleet.yml", world["inventory"], extra(world, run_id, run_id))
    assert migrated.returncode == 0, (migrated.stdout + migrated.stderr)[-5000:]
    report = read_report(os.path.join(world["tmp"], run_id))
    phases = [phase for cluster in report["clusters"] for phase in cluster["phases"]]
    fenced = min(mark_epoch(phase["start"]) for phase in phases if phase["name"] == "fence")
    spans = [(mark_epoch(phase["start"]) - fenced, mark_epoch(phase["end"]) - fenced)
             for phase in phases if phase["name"] in MIGRATE_PHASES]
    first, last = min(start for start, _end in spans), max(end for _start, end in spans)
    return first, first + MIGRATE_SHARE * (last - first)


def fenced(world, process, timeout=600.0):
    """The time a HostedCluster of the fleet was first seen fenced (spec.pausedUntil) by the running migration."""
    deadline = time.time() + timeout
    while True:
        if any((hc.get("spec") or {}).get("pausedUntil") for hc in hostedclusters(world["server"])):
            return time.time()
        assert process.poll() is None, "the migration ended (exit %s) before it fenced a HostedCluster" % process.poll()
        assert time.time() < deadline, "no HostedCluster fenced within %.0f s of the migration's start" % timeout
        time.sleep(0.1)


def ended_before(log):
    """Whether the killed playbook had ended already (its log holds the recap)."""
    with open(log) as handle:
        return "PLAY RECAP" in handle.read()


def roll_back(world):
    started = time.time()
    rolled = run_playbook("rollback.yml", world["inventory"], {"private_capi_rollback_names": list(NAMES)})
    assert rolled.returncode == 0, (rolled.stdout + rolled.stderr)[-5000:]
    assert not content_problems(world, migrated=False), content_problems(world, migrated=False)[:5]
    return time.time() - started


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("zero-stop-crashes")
    server, crds = start_fleet(tmp_path, fleet.fleet_spec(2, machines=2))
    yield {"server": server, "crds": crds, "tmp": str(tmp_path), "inventory": write_inventory(tmp_path, server.kubeconfig),
           "before": {name: snapshot(server, crds, hcp_ns(name)) for name in NAMES}}
    assert server.stop() == 0


def extra(world, run_id, reports):
    return {"private_capi_fleet_run_id": run_id, "private_capi_fleet_serial": 2,
            "private_capi_fleet_report_root": os.path.join(world["tmp"], reports)}


def content_problems(world, migrated):
    """Nothing lost: migrated, every standard object's private twin as it was; back, the standard objects as before."""
    problems = []
    for name in NAMES:
        after = snapshot(world["server"], world["crds"], hcp_ns(name))
        if migrated:
            problems += ["%s: %s" % (name, p) for p in migrated_content_problems(world["before"][name], after)]
        elif without_provenance(after) != without_provenance(world["before"][name]):
            problems.append("%s: not as before the migration" % name)
    return problems


def sidecars_out(world):
    """The sidecars taken out of every HCP namespace (the api_proxy role, state absent)."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    for name in NAMES:
        variables = {"kubeconfig": world["server"].kubeconfig, "namespace": hcp_ns(name), "state": "absent",
                     "deployments": list(fleet.CAPI_DEPLOYMENTS)}
        result = subprocess.run([os.path.join(REPO_ROOT, ".venv", "bin", "ansible-playbook"), "-i", "localhost,",
                                 os.path.join(REPO_ROOT, "tests", "integration", "fleet", "playbooks", "proxy_ahead.yml"),
                                 "-e", json.dumps(variables)], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                                timeout=400, check=False)
        assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]


def killed_then_rerun(world, playbook, variables, at_seconds, log, anchor=None):
    """playbook SIGKILLed (its whole process group) at_seconds after its start (or after anchor(world, process), the
    time it returns), then run again with the same variables (the same run id); returns the HostedClusters' states the
    kill left."""
    process = start_playbook(playbook, world["inventory"], log, variables)
    start = time.time() if anchor is None else anchor(world, process)
    time.sleep(max(0.0, start + at_seconds - time.time()))
    code = kill_playbook(process)
    time.sleep(QUIET_SECONDS)
    killed_states = hostedcluster_states(world["server"])
    # a kill after the run's last write leaves nothing to do: the same run again selects nothing, and says so
    again = run_playbook(playbook, world["inventory"], dict(variables, private_capi_fleet_allow_empty=True))
    output = (again.stdout + again.stderr)[-5000:]
    assert again.returncode == 0, "after a kill at %.1f s (exit %s): %s" % (at_seconds, code, output)
    return killed_states


def killed_until_landed(rng, window, killed_at, undo):
    """killed_at(at, attempt) kills a run at a point drawn from window and checks what the run again left, returning
    (the states the kill left, the killed run's log). A kill that came after its run's end tested nothing: undo(attempt)
    makes the fleet as it was before that run, and the next attempt draws within the first EARLIER of the span before
    that kill, at most ATTEMPTS in all. Returns (kill s, states left, killed mid-run, attempts)."""
    for attempt in range(ATTEMPTS):
        at = rng.uniform(*window)
        killed, log = killed_at(at, attempt)
        landed = not ended_before(log)
        if landed or attempt == ATTEMPTS - 1:
            return round(at, 1), killed, landed, attempt + 1
        undo(attempt)
        window = (window[0], window[0] + EARLIER * (at - window[0]))
    raise AssertionError("ATTEMPTS must be 1 or more")


def test_killed_at_random_points_of_the_new_phases_every_cluster_converges(world):
    server = world["server"]
    # the first whole run puts the CRDs and the shim in (no trial's run does that) and is the calibration of the
    # sidecars out (a fresh fleet has none: the pre-install runs), as a warm run was until 2026-12-03: the CRDs and the
    # shim come before its first fence. That day, alone on an idle machine, the file calibrated twice both ways: 0.2-9.6
    # and 0.4-16.3 s after the fence on the first run, 0.4-10.5 and 0.4-9.5 s on a warm one right after it. A wider
    # window's kill that misses its run is tried again, earlier (killed_until_landed): one more migration and way back
    # in the worst case, against the warm run, way back and sidecar removal this saves on every run of the file
    windows = {True: calibrate(world, "crash-cal-out")}
    # the way back from its launch: its writes begin about 2 s in and its last seconds write the report. With two
    # trials or more, the shorter of two ways back: make test of 609c154 (2026-12-03, a loaded machine) timed one at
    # 40 s, then a trial's ended before 14 s (a miss is tried again earlier: killed_until_landed)
    backs = [roll_back(world)]
    if TRIALS > 1:  # the odd trials' kind
        windows[False] = calibrate(world, "crash-cal-in")  # sidecars in (the way back leaves them in, passthrough)
        backs.append(roll_back(world))
    rollback_window = (2.0, ROLLBACK_SHARE * min(backs))
    assert hostedcluster_states(server) == {name: "legacy" for name in NAMES}
    print("kill windows: migrate (after its first fence), sidecars out %.1f-%.1f s, in %s; rollback %.1f-%.1f s"
          % (windows[True] + ("%.1f-%.1f s" % windows[False] if False in windows else "-",) + rollback_window))
    rng = random.Random(SEED)
    trials = []
    for trial in range(TRIALS):
        def migrate_killed(at, attempt, trial=trial):
            if trial % 2 == 0:
                sidecars_out(world)  # the next migration puts them in ahead again (its pre-install killed too)
            log = os.path.join(world["tmp"], "migrate-%d-%d.log" % (trial, attempt))
            killed = killed_then_rerun(world, "migrate_fleet.yml", extra(
                world, "crash-%d-%d-%d" % (SEED, trial, attempt), "r-%d-%d" % (trial, attempt)), at, log, fenced)
            assert hostedcluster_states(server) == {name: "migrated" for name in NAMES}, (trial, at)
            for name in NAMES:
                mode = server.request("GET", "/api/v1/namespaces/%s/configmaps/capi-proxy-mode" % hcp_ns(name)).json()
                assert mode["data"]["mode"] == "translate", (trial, name, mode)
            problems = content_problems(world, migrated=True)
            assert not problems, (trial, at, problems[:5])
            return killed, log

        def rollback_killed(at, attempt, trial=trial):
            log = os.path.join(world["tmp"], "rollback-%d-%d.log" % (trial, attempt))
            killed = killed_then_rerun(world, "rollback.yml", {
                "private_capi_rollback_names": list(NAMES),
                "private_capi_rollback_run_id": "crash-%d-%d-back-%d" % (SEED, trial, attempt)}, at, log)
            assert hostedcluster_states(server) == {name: "legacy" for name in NAMES}, (trial, at)
            problems = content_problems(world, migrated=False)
            assert not problems, (trial, at, problems[:5])
            return killed, log

        def migrate_again(attempt, trial=trial):
            migrated = run_playbook("migrate_fleet.yml", world["inventory"], extra(
                world, "crash-%d-%d-again-%d" % (SEED, trial, attempt), "again-%d-%d" % (trial, attempt)))
            assert migrated.returncode == 0, (migrated.stdout + migrated.stderr)[-5000:]

        trials.append((trial,) + killed_until_landed(rng, windows[trial % 2 == 0], migrate_killed,
                                                     lambda _attempt: roll_back(world))
                      + killed_until_landed(rng, rollback_window, rollback_killed, migrate_again))
    print("trials (seed %d; trial, kill s, states left, killed mid-run, attempts; the same for the way back): %s"
          % (SEED, trials))
    # a kill after the run's end tests nothing: most must land inside the run (the windows are the calibration's, a
    # trial's run may be quicker or slower than it was)
    migrate_landed = sum(1 for entry in trials if entry[3])
    rollback_landed = sum(1 for entry in trials if entry[7])
    assert migrate_landed >= max(1, TRIALS // 2) and rollback_landed >= max(1, TRIALS // 2), trials
