"""benchmarks/bench_fleet.py task_cpu_table: the per-task CPU that benchmarks/callback_plugins/task_cpu.py wrote, split
into the migrate play's (per HostedCluster) and the rest (once per run)."""
from benchmarks.bench_fleet import task_cpu_table


def _task(play, name, cpu, hosts, where="migrate/tasks/main.yml:1"):
    return {"play": play, "task": name, "where": where, "cpu": cpu, "hosts": hosts}


def test_the_play_with_the_most_hosts_is_per_cluster_and_the_rest_is_once_per_run():
    body = {"total": 40.0, "tasks": [
        _task("Plan", "run id", 1.0, 1),
        _task("Preflight", "access review", 4.0, 1),
        _task("Migrate each", "begin", 20.0, 10),
        _task("Migrate each", "window", 10.0, 10),
        _task("Report", "write", 2.0, 1),
    ]}
    per_cluster, once, rows = task_cpu_table(body, count=10)
    assert per_cluster == 3.0
    assert once == 10.0  # the total less the migrate play's: the fixed part and what falls between tasks
    assert [row[4] for row in rows] == ["begin", "window", "access review", "write", "run id"]
    assert rows[0] == (20.0, True, 10, "migrate/tasks/main.yml:1", "begin")
    assert rows[2][1] is False


def test_top_keeps_the_most_expensive():
    body = {"total": 6.0, "tasks": [_task("Migrate", "t%d" % i, float(i), 2) for i in range(4)]}
    _per_cluster, _once, rows = task_cpu_table(body, count=2, top=2)
    assert [row[4] for row in rows] == ["t3", "t2"]


def test_nothing_measured_is_none():
    assert task_cpu_table({"unavailable": "no cgroup of its own: permission denied"}, count=10) is None
    assert task_cpu_table({}, count=10) is None
