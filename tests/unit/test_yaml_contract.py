"""The on-cluster contract and the time formats live in Python only: no role task, role vars or defaults file and no
playbook spells an annotation or label key of plugins/module_utils or a strftime format; the modules and the filters
(fleet_record, fleet_mark, fleet_run_id) carry them. Also: the roles that share a setting agree on its default."""
import ast
import os
import re

import pytest
import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE_UTILS = os.path.join(REPO_ROOT, "plugins", "module_utils")
CONTRACT_KEY = re.compile(r"^[a-z0-9.-]+\.(openshift\.io|x-k8s\.io)/[A-Za-z0-9._-]+$")
# a date or time directive (%d is printf's too) or the call that takes a format: now().strftime(...), to_datetime(...)
TIME_DIRECTIVE = re.compile(r"%[YHMSf]|strftime\(|to_datetime\(")


def _assigned_strings(tree):
    """Every string constant on the right of an assignment (module level, class or function), tuples and dicts too."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for part in ast.walk(node.value):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    yield part.value


def contract_strings(root=MODULE_UTILS):
    """The annotation and label keys and the time formats assigned anywhere under plugins/module_utils."""
    keys, formats = set(), set()
    for folder, _dirs, files in os.walk(root):
        for file_name in files:
            if file_name.endswith(".py"):
                with open(os.path.join(folder, file_name)) as handle:
                    tree = ast.parse(handle.read())
                for value in _assigned_strings(tree):
                    if CONTRACT_KEY.match(value):
                        keys.add(value)
                    elif "%Y" in value:
                        formats.add(value)
    return keys, formats


def yaml_files(root=REPO_ROOT):
    """Role tasks, vars and defaults, and the playbooks (their vars files too)."""
    found = []
    roles = os.path.join(root, "roles")
    for role in sorted(os.listdir(roles)):
        for part in ("tasks", "vars", "defaults"):
            folder = os.path.join(roles, role, part)
            if os.path.isdir(folder):
                found += [os.path.join(folder, name) for name in sorted(os.listdir(folder)) if name.endswith(".yml")]
    for folder, _dirs, files in os.walk(os.path.join(root, "playbooks")):
        found += [os.path.join(folder, name) for name in sorted(files) if name.endswith(".yml")]
    return found


def spelled(files, keys, formats):
    """file:line: what it spells, for every line of files that spells a key, a format or a time directive."""
    problems = []
    for path in files:
        with open(path) as handle:
            for number, line in enumerate(handle, 1):
                where = "%s:%d" % (os.path.relpath(path, REPO_ROOT), number)
                problems += ["%s: annotation/label key %s" % (where, key) for key in sorted(keys) if key in line]
                problems += ["%s: time format %s" % (where, form) for form in sorted(formats) if form in line]
                if TIME_DIRECTIVE.search(line) and not any(form in line for form in formats):
                    problems.append("%s: time format directive in %r" % (where, line.strip()))
    return problems


def test_the_contract_is_collected_from_every_module_util():
    keys, formats = contract_strings()
    assert "hypershift.openshift.io/capi-migration-state" in keys and len(keys) > 10, sorted(keys)
    assert "%Y-%m-%dT%H:%M:%S.%f" in formats and "%Y%m%dT%H%M%SZ" in formats, formats


def test_no_role_or_playbook_spells_a_key_or_a_time_format():
    keys, formats = contract_strings()
    problems = spelled(yaml_files(), keys, formats)
    assert not problems, "spelled in YAML (take them from the modules and filters instead):\n" + "\n".join(problems)


def test_the_check_names_file_and_line(tmp_path):
    playbook = tmp_path / "playbooks" / "p.yml"
    playbook.parent.mkdir()
    playbook.write_text("---\n- x: \"{{ now().strftime('%Y%m%dT%H%M%SZ') }}\"\n  y: hypershift.openshift.io/scope\n")
    problems = spelled([str(playbook)], {"hypershift.openshift.io/scope"}, {"%Y%m%dT%H%M%SZ"})
    assert problems == ["%s:2: time format %%Y%%m%%dT%%H%%M%%SZ" % os.path.relpath(str(playbook), REPO_ROOT),
                        "%s:3: annotation/label key hypershift.openshift.io/scope" % os.path.relpath(str(playbook), REPO_ROOT)]


def _defaults(role):
    with open(os.path.join(REPO_ROOT, "roles", role, "defaults", "main.yml")) as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize("role", ["fleet", "rollback"])
def test_roles_sharing_a_migrate_setting_agree_on_its_default(role):
    migrate, shared = _defaults("migrate"), _defaults(role)
    differ = dict((name, value) for name, value in shared.items()
                  if name.startswith("private_capi_migrate_") and migrate.get(name) != value)
    assert not differ, "roles/%s/defaults/main.yml differs from roles/migrate's: %s" % (role, differ)


# The roles read as their procedure: what decides lives in Python (issue 45 set these bounds; raise them only with a
# reason that a filter or module could not carry the new lines)
TASK_FILE_LINES = 120
ALL_TASK_LINES = 1000


def test_role_task_files_stay_short_and_together_within_their_bound():
    sizes = {}
    for role in sorted(os.listdir(os.path.join(REPO_ROOT, "roles"))):
        tasks = os.path.join(REPO_ROOT, "roles", role, "tasks")
        for name in sorted(os.listdir(tasks)) if os.path.isdir(tasks) else ():
            with open(os.path.join(tasks, name)) as handle:
                sizes["%s/%s" % (role, name)] = len(handle.readlines())
    assert len(sizes) > 20, sizes
    assert {name: lines for name, lines in sizes.items() if lines > TASK_FILE_LINES} == {}
    assert sum(sizes.values()) <= ALL_TASK_LINES, sorted(sizes.items(), key=lambda item: -item[1])[:5]
