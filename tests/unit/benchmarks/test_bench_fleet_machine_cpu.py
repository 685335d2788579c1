"""bench_fleet's account of the whole machine's CPU over a playbook (pure: /proc files written here)."""
from benchmarks import bench_fleet


def test_busy_core_seconds_leave_out_idle_and_iowait(tmp_path):
    stat = tmp_path / "stat"
    ticks = bench_fleet.CLOCK_TICKS
    # user nice system idle iowait irq softirq steal
    stat.write_text("cpu  %d 0 %d %d %d 0 %d 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n" % (
        30 * ticks, 10 * ticks, 500 * ticks, 7 * ticks, 2 * ticks))
    assert bench_fleet.machine_busy(str(stat)) == 42.0


def write_process(root, pid, name, utime, stime, start=1000):
    directory = root / str(pid)
    directory.mkdir(parents=True, exist_ok=True)
    ticks = bench_fleet.CLOCK_TICKS
    # field 14 utime, 15 stime, 22 starttime (1-based, after "pid (comm)"); a name may hold spaces and parentheses
    rest = ["S", "1", "1", "1", "0", "-1", "0", "0", "0", "0", "0", str(utime * ticks), str(stime * ticks), "0", "0",
            "20", "0", "1", "0", str(start), "0", "0"]
    (directory / "stat").write_text("%d (%s) %s\n" % (pid, name, " ".join(rest)))


def test_cpu_by_name_counts_differences_new_processes_whole_and_groups_by_name(tmp_path):
    before_root, after_root = tmp_path / "before", tmp_path / "after"
    write_process(before_root, 10, "kube-apiserver", 100, 20)
    write_process(before_root, 11, "etcd", 50, 5)
    write_process(before_root, 12, "python3", 9, 1)      # ends before the second sample: not seen
    write_process(before_root, 13, "old (name)", 3, 0)   # its pid reused by another process: counted whole
    # a kernel worker named after the work queue it runs: the same thread (pid, start time), its difference counted
    write_process(before_root, 14, "kworker/1:1H-kblockd", 900, 0, start=5)
    write_process(after_root, 10, "kube-apiserver", 160, 30)
    write_process(after_root, 11, "etcd", 58, 7)
    write_process(after_root, 13, "capi proxy", 4, 0, start=2000)
    write_process(after_root, 20, "capi proxy", 6, 1)    # started between the samples
    write_process(after_root, 14, "kworker/1:1H-events_highpri", 902, 0, start=5)
    before = bench_fleet.process_cpu(str(before_root))
    assert before[13] == ("old (name)", 3.0, 1000)
    spent = bench_fleet.cpu_by_name(before, bench_fleet.process_cpu(str(after_root)))
    assert spent == [("kube-apiserver", 70.0), ("capi proxy", 11.0), ("etcd", 10.0),
                     ("kworker/1:1H-events_highpri", 2.0)]
    assert bench_fleet.cpu_by_name(before, bench_fleet.process_cpu(str(after_root)), top=1) == [("kube-apiserver", 70.0)]


def test_machine_figures_average_over_the_playbook():
    figures = bench_fleet.machine_figures(100.0, 820.0, {}, {}, 400.0, 212.0)
    assert figures["busy_cores"] == 1.8 and figures["busy_seconds"] == 720.0 and figures["ansible_seconds"] == 212.0
    assert figures["top"] == []
