# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which HostedClusters a fleet run acts on: one selection for migrate_fleet.yml and rollback.yml, whether the
HostedClusters come from management-cluster hosts (static inventory) or are hosts themselves (the hostedclusters
inventory plugin).

Pure functions (no API call, no Ansible import). A candidate is one HostedCluster as migration_state's query judged it,
with where it lives: key (management_cluster/namespace/name, the host name it gets), management_cluster, namespace,
name, hcp_namespace, platform, state, labels, kubeconfig, context, crds_installed and inventory_host (a host of the
inventory plugin already).
The filters capi_fleet_candidates, capi_fleet_select and capi_fleet_batches call these; the playbooks' serial, the
plan and the host lists follow their answers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.fleet.report import FAILED_STATUSES, key_of
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate import selectors

# the states a migration run selects unless told otherwise (migrated and invalid need no migration)
MIGRATE_STATES = ("new", "legacy", "in-progress", "failed")
MIGRATE, ROLLBACK, VERIFY, PREINSTALL = "migrate", "rollback", "verify", "preinstall"
# the states a pre-install (preinstall_proxy.yml) selects unless told otherwise: those a migration would take that no
# migration holds (hcp_quiesce's hold refuses the others)
PREINSTALL_STATES = ("new", "legacy", "failed")
PREINSTALL_STEPS = "hold the operator off, API proxy in (pass-through)"
ALL_STATES = ("new", "legacy", "in-progress", "migrated", "failed", "invalid")
STEPS = "lock, pause, scale 0, crds, copy, proxy, resume, health, delete sources"
ALLOW_EMPTY_HINT = ("If a run with nothing to do is expected (a fleet already done, a job run on every inventory), set "
                    "private_capi_fleet_allow_empty=true.")


class SelectionError(PrivateCapiError, ValueError):
    """A selection that cannot be made (a bad pattern, a name matching no HostedCluster or several); nothing changed."""


def candidates(query, management_cluster, kubeconfig=None, context=None, crds_installed=False):
    """The candidates of one management cluster from migration_state's query result."""
    rows = []
    for entry in (query or {}).get("hostedclusters") or []:
        rows.append({
            "key": key_of(management_cluster, entry["namespace"], entry["name"]),
            "management_cluster": management_cluster, "namespace": entry["namespace"], "name": entry["name"],
            "hcp_namespace": entry.get("hcp_namespace") or "", "platform": entry.get("platform") or "None",
            "state": entry.get("state") or "unknown", "labels": dict(entry.get("labels") or {}),
            "kubeconfig": kubeconfig, "context": context, "crds_installed": bool(crds_installed), "inventory_host": False,
        })
    return rows


def host_candidates(hosts):
    """The candidates that are inventory hosts already (the hostedclusters inventory plugin's variables)."""
    rows = []
    for host in hosts:
        rows.append({
            "key": host["inventory_hostname"], "management_cluster": host["private_capi_management_cluster"],
            "namespace": host["private_capi_hc_namespace"], "name": host["private_capi_hc_name"],
            "hcp_namespace": host.get("private_capi_hcp_namespace") or "",
            "platform": host.get("private_capi_platform") or "None", "state": host.get("private_capi_state") or "unknown",
            "labels": dict(host.get("private_capi_hc_labels") or {}), "kubeconfig": host.get("private_capi_kubeconfig"),
            "context": host.get("private_capi_context"), "crds_installed": False, "inventory_host": True,
        })
    return rows


def label_selector_matches(selector, labels):
    """Whether labels satisfy a Kubernetes label selector (=, ==, !=, in, notin, key, !key), as the API server judges."""
    parsed = selectors.requirements(selector or "")
    if parsed is None:
        raise SelectionError("label selector %r: cannot read it (use key=value, key!=value, key in (a,b), "
                             "key notin (a,b), key or !key, separated by commas)" % selector)
    return selectors.matches(labels, parsed)


def _names_given(names):
    return [str(name).strip() for name in names or [] if str(name).strip()]


def parse_names(value):
    """The names of -e private_capi_rollback_names: a list, or its string form '[hc-01, "ns/hc-02"]' (unique, in order)."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = [part.strip().strip("'\"") for part in value.strip().lstrip("[").rstrip("]").split(",")]
    names = []
    for name in _names_given(value):
        if name not in names:
            names.append(name)
    return names


def _match_one(rows, entry):
    parts = entry.split("/")
    return [row for row in rows if row["name"] == parts[-1]
            and (len(parts) < 2 or row["namespace"] == parts[-2])
            and (len(parts) < 3 or row["management_cluster"] == "/".join(parts[:-2]))]


def match_names(rows, names, management_clusters=(), why_none=""):
    """Rollback: each name (name, namespace/name or management_cluster/namespace/name) matches exactly one candidate.

    Returns the matched candidates in the order named; raises SelectionError naming every name that matches none or
    several (and what was found, or why_none when there is no candidate: empty_reason's answer), so nothing is
    changed."""
    selected, problems = [], []
    for entry in names:
        found = _match_one(rows, entry)
        if len(found) != 1:
            problems.append("'%s' matches %d HostedClusters%s" % (
                entry, len(found), " (%s): name one as namespace/name or management_cluster/namespace/name"
                % ", ".join(row["key"] for row in found) if found else ""))
        elif found[0] not in selected:
            selected.append(found[0])
    if problems and why_none and not rows:
        raise SelectionError("private_capi_rollback_names: %s; found no HostedCluster: %s. Nothing was changed. %s"
                             % ("; ".join(problems), why_none, ALLOW_EMPTY_HINT))
    if problems:
        raise SelectionError("private_capi_rollback_names: %s; found %d HostedClusters in management clusters %s. "
                             "Nothing was changed." % ("; ".join(problems), len(rows),
                                                       ", ".join(management_clusters) or "(none: is the inventory right?)"))
    return selected


def _matcher(name_regex):
    try:
        return re.compile(name_regex or ".*")
    except re.error as error:
        raise SelectionError("private_capi_fleet_name_regex %r is not a regular expression (%s); fix the pattern"
                             % (name_regex, error))


def _states(criteria):
    """The states a migration or verification selects: criteria states, else the purpose's default."""
    default = {VERIFY: ALL_STATES, PREINSTALL: PREINSTALL_STATES}.get(criteria.get("purpose"), MIGRATE_STATES)
    return criteria.get("states") or default


def _tests(criteria):
    """The tests of a migration's or verification's selection, by option: a candidate is selected when it passes every
    one (state, name pattern from the start, names, namespace, labels; an option not given lets every one through).
    The selection and the reason it selected nothing (_filters) both judge with these."""
    states, given = _states(criteria), parse_names(criteria.get("names"))
    pattern, namespace, selector = _matcher(criteria.get("name_regex")), criteria.get("namespace"), criteria.get("label_selector")
    return {
        "states": lambda row: row["state"] in states,
        "name_regex": lambda row: bool(pattern.match(row["name"])),
        "names": lambda row: not given or row["name"] in given,
        "namespace": lambda row: not namespace or row["namespace"] == namespace,
        "label_selector": lambda row: bool(label_selector_matches(selector, row.get("labels") or {})),
    }


def batches(canary=0, serial=1):
    """The migrate play's serial: a canary batch first when one is asked for, then batches of serial."""
    canary = int(canary) if canary not in (None, "") else 0
    serial = int(serial) if serial not in (None, "") else 1
    if canary < 0 or serial < 1:
        raise SelectionError("private_capi_fleet_canary must be 0 or more and private_capi_fleet_serial 1 or more "
                             "(got %d and %d)" % (canary, serial))
    return [canary, serial] if canary > 0 else serial


def budget(results, max_fail_percentage=100):
    """Whether the fleet run stops after a batch: when more than max_fail_percentage of the batch failed.

    results: the records of the batch's HostedClusters (the migrate role's private_capi_migrate_result). This is the
    play keyword max_fail_percentage's rule without Ansible's other one (a batch whose hosts all failed ends the play,
    whatever the percentage): the migrate play records a failed cluster instead of failing its host.
    """
    batch = [result for result in results or () if isinstance(result, dict)]
    percentage = float(max_fail_percentage if max_fail_percentage not in (None, "") else 100)
    failed = [key_of(r.get("management_cluster"), r.get("namespace"), r.get("name")) for r in batch
              if r.get("status") in FAILED_STATUSES]
    stop = bool(batch) and 100.0 * len(failed) / len(batch) > percentage
    reason = ""
    if stop:
        reason = ("the failure budget stopped the run: %d of the %d HostedClusters of the last batch failed (%s), more "
                  "than private_capi_fleet_max_fail_percentage=%g%%" % (len(failed), len(batch), ", ".join(failed), percentage))
    return {"stop": stop, "failed": failed, "batch": len(batch), "reason": reason}


def _listed(values):
    return ", ".join(str(value) for value in values)


def _counted(rows, key):
    counts = {}
    for row in rows:
        counts[row[key]] = counts.get(row[key], 0) + 1
    return ", ".join("%s %d" % (value, counts[value]) for value in sorted(counts))


def _passing(rows, criteria):
    """The rows a migration or verification selects: those passing every one of its tests."""
    tests = _tests(criteria).values()
    return [row for row in rows if all(test(row) for test in tests)]


def _filters(rows, criteria):
    """Each filter of a migration's or verification's selection with how many of rows it alone lets through."""
    tests, total = _tests(criteria), len(rows)

    def passing(option):
        return len([row for row in rows if tests[option](row)])

    origin = "private_capi_fleet_states" if criteria.get("states") else \
        "%s's default" % _run_kind(criteria, "verify_fleet.yml", "a pre-install", "a migration")
    lines = ["states %s (%s): %d of %d are in them (found %s)" % (
        _listed(_states(criteria)), origin, passing("states"), total, _counted(rows, "state"))]
    if criteria.get("name_regex"):
        lines.append("private_capi_fleet_name_regex %r (matched from the start): %d of %d match" % (
            criteria["name_regex"], passing("name_regex"), total))
    given = parse_names(criteria.get("names"))
    if given:
        lines.append("private_capi_fleet_names [%s]: %d of %d are named" % (_listed(given), passing("names"), total))
    if criteria.get("namespace"):
        lines.append("private_capi_fleet_namespace %r: %d of %d are in it (found %s)" % (
            criteria["namespace"], passing("namespace"), total, _counted(rows, "namespace")))
    if criteria.get("label_selector"):
        lines.append("private_capi_fleet_label_selector %r: %d of %d match" % (
            criteria["label_selector"], passing("label_selector"), total))
    return lines


def empty_reason(rows, criteria):
    """Why a run selects no HostedCluster of rows (call it when it selects none); "" when that is not judged here.

    Three cases, each said with what to check: the inventory has no management cluster and no HostedCluster host
    (criteria management_clusters and hostedcluster_hosts empty); the management clusters hold no HostedCluster (or
    some could not be read: those not in management_clusters_read, when given); HostedClusters were found but none
    passed the selection (each filter named with how many it alone lets through, the purpose's default states
    included; for a rollback, the names). When the inventory plugin's HostedCluster hosts (hostedcluster_hosts) are
    not among rows, they are selected in a play of their own (migrate_fleet.yml): "" then, the judgement is theirs."""
    management_clusters = list(criteria.get("management_clusters") or ())
    plugin_hosts = list(criteria.get("hostedcluster_hosts") or ())
    if plugin_hosts and not any(row.get("inventory_host") for row in rows):
        return ""
    if not rows:
        if not management_clusters:
            return ("the inventory has no management cluster: group management_clusters is empty and there is no "
                    "HostedCluster host (group capi_hostedclusters of the hypershift.private_capi.hostedclusters "
                    "inventory plugin). Give an inventory with -i: your HyperShift management clusters in group "
                    "management_clusters (each with private_capi_kubeconfig and private_capi_context), or a "
                    "*.hostedclusters.yml source of the inventory plugin (docs/inventory.md)")
        read = criteria.get("management_clusters_read")
        read = management_clusters if read is None else [name for name in management_clusters if name in read]
        unread = [name for name in management_clusters if name not in read]
        namespace = " in namespace %s" % criteria["namespace"] if criteria.get("namespace") else ""
        hint = ("check that their private_capi_kubeconfig and private_capi_context point at HyperShift management "
                "clusters%s" % (" and that private_capi_fleet_namespace is right" if namespace else ""))
        if not unread:
            return "no HostedCluster%s on the management clusters of the inventory (%s): %s" % (
                namespace, _listed(read), hint)
        return "no HostedCluster%s on the management clusters of the inventory: %s%s (%s failed above); %s" % (
            namespace, "%s %s none; " % (_listed(read), "has" if len(read) == 1 else "have") if read else "",
            "%s %s not read" % (_listed(unread), "was" if len(unread) == 1 else "were"),
            "its tasks" if len(unread) == 1 else "their tasks", hint)
    where = _listed(sorted(set(row["management_cluster"] for row in rows)))
    if criteria.get("purpose", MIGRATE) == ROLLBACK:
        return ("none of private_capi_rollback_names [%s] is one of the %d HostedClusters found on %s"
                % (_listed(parse_names(criteria.get("names"))), len(rows), where))
    return ("%d HostedClusters found on %s, none passes the selection of this %s - %s (a HostedCluster must pass "
            "every one)" % (len(rows), where, _run_kind(criteria, "verification", "pre-install", "migration"),
                            "; ".join(_filters(rows, criteria))))


def _run_kind(criteria, verify, preinstall, migrate):
    """Which of the three words fits the run's purpose (verify, preinstall, else a migration)."""
    return {VERIFY: verify, PREINSTALL: preinstall}.get(criteria.get("purpose"), migrate)


def _allowed_empty(criteria):
    """criteria allow_empty (private_capi_fleet_allow_empty): true, or its string forms of -e key=value."""
    return str(criteria.get("allow_empty", False)).strip().lower() in ("true", "yes", "on", "1")


def refusal(reason, criteria):
    """The message a run that selected nothing fails with, or "" when it goes on (no reason, or allow_empty)."""
    if not reason or _allowed_empty(criteria):
        return ""
    return "0 HostedClusters selected: %s. %s" % (reason, ALLOW_EMPTY_HINT)


def select(rows, criteria):
    """The selection of one run: selected candidates (by key), the rest, and the plan to print.

    criteria: purpose (migrate, preinstall, rollback or verify: every state by default), check_mode, run_id, and for a migration states, name_regex, names,
    namespace, label_selector, canary, serial, max_fail_percentage; for a rollback names (exactly one candidate each), serial and
    management_clusters (for the error). When nothing is selected, empty_reason says why (empty_reason(), from
    management_clusters, management_clusters_read and hostedcluster_hosts too) and refusal is the message to fail
    with, "" with allow_empty; a rollback whose names all match nothing is then empty rather than refused."""
    rows = sorted(rows, key=lambda row: row["key"])
    _matcher(criteria.get("name_regex"))  # a bad pattern is refused even when there is nothing to match
    check = "DRY RUN (check mode): nothing is changed" if criteria.get("check_mode") else None
    if criteria.get("purpose", MIGRATE) == ROLLBACK:
        names = parse_names(criteria.get("names"))
        if not names:
            raise SelectionError(
                "rollback.yml rolls back only the HostedClusters you name, and none was named (private_capi_rollback_names "
                "is %s). Name them, for example -e private_capi_rollback_names=[hc-01] or "
                "-e '{\"private_capi_rollback_names\": [\"clusters/hc-01\"]}' (name, namespace/name or "
                "management_cluster/namespace/name); there is no \"all\". Try --check first."
                % ("not set" if criteria.get("names") is None else "empty"))
        picked = []
        if not _allowed_empty(criteria) or any(_match_one(rows, name) for name in names):
            picked = match_names(rows, names, criteria.get("management_clusters") or (),
                                 "" if rows else empty_reason(rows, criteria))
        lines = [check or "Rollback to standard CAPI types"]
        for row in picked:
            verdict = {"migrated": "migrated -> legacy (roll back)", "legacy": "legacy already (nothing to do)"}
            lines.append("%s: %s" % (row["key"], verdict.get(row["state"], row["state"])))
        lines.append("batches of %s, run %s" % (criteria.get("serial") or 1, criteria.get("run_id")))
    elif criteria.get("purpose") == VERIFY:  # read-only: every HostedCluster the other criteria leave
        picked = _passing(rows, criteria)
        lines = ["Verification (read-only): %d of %d HostedClusters" % (len(picked), len(rows))]
    else:
        picked = _passing(rows, criteria)
        lines = ["%s - run %s" % (check or _run_kind(criteria, "", "API proxy pre-install", "Fleet migration"),
                                  criteria.get("run_id")),
                 "%d of %d HostedClusters selected, batches %s, failure budget %s%%"
                 % (len(picked), len(rows), batches(criteria.get("canary"), criteria.get("serial")),
                    criteria.get("max_fail_percentage", 100))]
        arrow = "proxy in ahead: %s" % PREINSTALL_STEPS if criteria.get("purpose") == PREINSTALL else "migrated: %s" % STEPS
        lines += ["%3d. %s [%s] %s -> %s" % (index, row["key"], row["platform"], row["state"], arrow)
                  for index, row in enumerate(picked, 1)]
    keys = [row["key"] for row in picked]
    rest = [row for row in rows if row["key"] not in keys]
    reason = "" if picked else empty_reason(rows, criteria)
    if reason:
        lines.append("Nothing to do: %s" % reason)
    if criteria.get("purpose", MIGRATE) in (MIGRATE, PREINSTALL):
        lines += ["  -  %s [%s] %s: not selected" % (row["key"], row["platform"], row["state"]) for row in rest]
    # the inventory plugin's HostedClusters have no management-cluster host: the first selected one of each
    # management cluster puts the private CRDs on it before the migrations (plugin_crds), for all of them
    install_on = {}
    if criteria.get("plugin_crds"):
        for row in picked:
            if row.get("inventory_host"):
                install_on.setdefault(row["management_cluster"], row["key"])
        picked = [dict(row, crds_installed=True) if row["management_cluster"] in install_on else row for row in picked]
    return {"selected": picked, "keys": keys, "not_selected": rest, "plan": lines,
            "install_crds_on": sorted(install_on.values()), "empty_reason": reason,
            "refusal": refusal(reason, criteria)}
