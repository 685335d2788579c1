"""The migration_state action plugin's default holder: one id per ansible-playbook run (host, main pid, its start)."""
import os
import re
import subprocess
import sys
import time

from ansible_collections.hypershift.private_capi.plugins.action import migration_state as action

STAMP = re.compile(r"^\d{8}T\d{6}\.\d{2}Z$")


def test_the_holder_names_host_pid_and_start_time_and_is_stable():
    pid = os.getpid()
    holder = action.run_holder(main_pid=pid, hostname="controller-0")
    host, main_pid, started = holder.split(":")
    assert (host, int(main_pid)) == ("controller-0", pid) and STAMP.match(started), holder
    assert action.run_holder(main_pid=pid, hostname="controller-0") == holder  # every task of the run: the same
    # the stamp is when the process started (not now): within the age of this test process
    started_at = time.mktime(time.strptime(started[:15], "%Y%m%dT%H%M%S")) - time.timezone
    assert started_at <= time.time() + 1


def test_another_process_is_another_holder_even_with_the_same_host():
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        assert action.run_holder(main_pid=other.pid, hostname="h") != action.run_holder(main_pid=os.getpid(), hostname="h")
    finally:
        other.kill()
        other.wait()


def test_the_default_is_the_parent_process_and_a_vanished_one_is_marked():
    assert action.run_holder().split(":")[1] == str(os.getppid())
    assert action.process_start(2 ** 22 + 12345) == action.UNKNOWN_START  # beyond pid_max: no such process
