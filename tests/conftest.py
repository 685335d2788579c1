"""Shared pytest set-up: make the collection importable by its FQCN path.

`make venv` links the checkout into .collections/ansible_collections/hypershift/private_capi;
putting .collections on sys.path lets tests import
`ansible_collections.hypershift.private_capi.plugins...` exactly as Ansible does.
"""
import os
import sys

from testenv import COLLECTIONS_ROOT, REPO_ROOT

if not os.path.isdir(os.path.join(COLLECTIONS_ROOT, "ansible_collections", "hypershift", "private_capi")):
    raise RuntimeError("run `make venv` first: the collection link under .collections/ is missing")
for path in (COLLECTIONS_ROOT, REPO_ROOT):
    if path not in sys.path:
        sys.path.insert(0, path)

# The costliest test files, costliest first (from `pytest --durations`): with `--dist loadfile` each file is one unit
# of work handed out in collection order, so starting the long ones first keeps one worker from running a long file
# alone at the end while the other idles. Files not listed keep their order, after these.
HEAVY_FIRST = (  # minutes (setup + calls) in a warm `make test` with --durations=50 (2 workers, 2 cores), 2026-11-29
    "tests/integration/e2e/test_capi_controllers.py",  # ~12, mostly waiting (make test runs it in its own process)
    "tests/integration/fleet/test_zero_stop_crashes.py",          # 12.5 (3 trials; 2 by default since)
    "tests/integration/fleet/test_fleet_20.py",                   # 7
    "tests/integration/move/test_capi_object_migrate_faults.py",  # 5.6
    "tests/integration/fleet/test_rollback_playbook.py",          # 3.8
    "tests/integration/fleet/test_least_privilege.py",            # 3.7
    "tests/integration/fleet/test_steady.py",                     # 3.5
    "tests/integration/fleet/test_step_failures.py",              # 3.2
    "tests/integration/fleet/test_resume.py",                     # 3.2
    "tests/integration/fleet/test_fleet_unreachable.py",          # 3 (make test runs it in the e2e lane)
    "tests/integration/fleet/test_fleet_budget.py",               # 3
    "tests/integration/fleet/test_zero_stop_playbooks.py",        # 2.8
    "tests/integration/fleet/test_fencing.py",                    # 2.3
    "tests/integration/fleet/test_zero_stop.py",                  # 2
    "tests/integration/collection/test_molecule.py",              # 3 (e2e lane)
    "tests/integration/collection/test_ansible_runner.py",        # 2.3 (e2e lane)
    "tests/integration/monitoring/test_exporter_prometheus.py",   # 1.7
    "tests/integration/fleet/test_rescue_refused.py",             # 1.7
    "tests/integration/fleet/test_concurrency.py",                # 1.5
    "tests/integration/fleet/test_clusterctl_untouched.py",       # 1.5
    "tests/integration/fleet/test_killed_run_fenced.py",          # 1.4 (e2e lane)
    "tests/integration/fleet/test_check_mode.py",                 # 1.8 (e2e lane)
    "tests/integration/fleet/test_inventory.py",                  # 1.2
    "tests/integration/fleet/test_dual_operator.py",              # 1
    "tests/integration/proxy/test_role.py",                       # 0.9
)


def pytest_collection_modifyitems(items):
    stale = [path for path in HEAVY_FIRST if not os.path.isfile(os.path.join(REPO_ROOT, path))]
    if stale:
        raise RuntimeError("tests/conftest.py HEAVY_FIRST names files that do not exist: %s" % ", ".join(stale))
    rank = {path: index for index, path in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(os.path.relpath(str(item.fspath), REPO_ROOT), len(HEAVY_FIRST)))
