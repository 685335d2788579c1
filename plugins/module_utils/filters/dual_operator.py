# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the dual_operator role has to do, judged from what it read (pure: no API call, inputs never changed).

present_plan: from one LIST of the operator namespace's Deployments and one migration_state query of the
HostedClusters, which HostedClusters to mark legacy, the legacy operator Deployment to create or update (derived from
the operator's original spec), the patch that turns the operator into the new one, whether the proxy sidecar is
needed, the role's result and what to say. cleanup_plan: from the same query of the HostedClusters, which of them
still need the legacy operator (by the state machine's judgement), and so whether to delete it.

The role calls these through the filters dual_operator_plan and dual_operator_cleanup; its YAML only follows the
answers. Settings are the role's private_capi_dual_operator_* variables without that prefix (roles/dual_operator/
vars/main.yml dual_operator_settings); the fixed names below exist here only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    DUAL_OPERATOR_HASH_ANNOTATION,
    OPERATOR_ORIGINAL_ANNOTATION,
    OPERATOR_SCOPE_LABEL,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import sidecar
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine

MANAGED_BY = "hypershift.private_capi.dual_operator"
PROXY_CONTAINER = sidecar.CONTAINER_NAME
STATES = ("present", "cleanup")
NEEDS_LEGACY = (machine.LEGACY, machine.IN_PROGRESS, machine.FAILED, machine.INVALID)

SETTINGS = ("state", "namespace", "name", "legacy_name", "container", "new_args", "legacy_args", "leader_election_flag",
            "lease_name", "legacy_lease_name", "mark_legacy", "proxy", "proxy_image", "proxy_port",
            "proxy_metrics_port", "proxy_extra_args", "wait_timeout", "cleanup_fail_when_blocked", "check_mode")
_TRUE = ("y", "yes", "on", "1", "true", "t")


class DualOperatorInputError(PrivateCapiError, ValueError):
    """Input these plans cannot work with (not what the role reads); the message names it."""


def as_bool(value):
    """Like Ansible's bool filter: true for True, 1 and the strings yes, on, 1, true (any case)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value == 1
    return str(value).strip().lower() in _TRUE


def _metadata(obj):
    return obj.get("metadata") or {}


def _pod_spec(deployment):
    return ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}


def _container_named(pod_spec, container_name):
    return next((c for c in pod_spec.get("containers") or [] if c.get("name") == container_name), {})


def _digest(value):
    """sha256 of value as Ansible's to_json(sort_keys=true) | hash('sha256') writes it (the annotations in clusters)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()


def _refs(hostedclusters):
    return ["%s/%s" % (hostedcluster.get("namespace"), hostedcluster.get("name")) for hostedcluster in hostedclusters]


def _int(settings, key, problems):
    try:
        return int(settings[key])
    except (TypeError, ValueError):
        problems.append("private_capi_dual_operator_%s must be an integer, got %r" % (key, settings[key]))
        return 0


def settings_problems(settings):
    """One message (in a list) when the settings cannot work, else []; raises on a settings mapping that lacks keys."""
    missing = [key for key in SETTINGS if key not in settings]
    if missing:
        raise DualOperatorInputError("the settings lack %s (pass the role's dual_operator_settings)" % ", ".join(missing))
    new_args, legacy_args = list(settings["new_args"] or []), list(settings["legacy_args"] or [])
    flag = settings["leader_election_flag"]
    if (settings["state"] in STATES and settings["namespace"] and settings["name"] and settings["legacy_name"]
            and settings["legacy_name"] != settings["name"]
            and (not flag or settings["lease_name"] != settings["legacy_lease_name"])
            and not set(new_args) & set(legacy_args)):
        return []
    return ["dual_operator needs private_capi_dual_operator_state present or cleanup (got '%s'), a namespace (got '%s'), two "
            "different Deployment names (got '%s' and '%s'), two different leases (got '%s' and '%s': the two operators "
            "must never share a leader election) and no argument in both new_args and legacy_args."
            % (settings["state"], settings["namespace"], settings["name"], settings["legacy_name"], settings["lease_name"],
               settings["legacy_lease_name"])]


def _scoped_args(args, settings, extra, lease):
    """args without any leader-election flag or scope argument this role manages, then extra and the lease flag."""
    managed = list(settings["new_args"] or []) + list(settings["legacy_args"] or [])
    flag = settings["leader_election_flag"]
    kept = [arg for arg in args if arg not in managed and not (flag and (arg == flag or arg.startswith(flag + "=")))]
    return kept + list(extra or []) + (["%s=%s" % (flag, lease)] if flag else [])


def _main_container(pod_spec, settings):
    """(the operator's main container name or '', the candidates): the container set, else the one named like the
    Deployment, else the only one (the proxy sidecar never counts)."""
    candidates = [c.get("name") for c in pod_spec.get("containers") or [] if c.get("name") != PROXY_CONTAINER]
    wanted, name = settings["container"], settings["name"]
    if wanted:
        return (wanted if wanted in candidates else ""), candidates
    if name in candidates:
        return name, candidates
    return (candidates[0] if len(candidates) == 1 else ""), candidates


def _renamed(labels, old, new):
    return dict((key, new if value == old else value) for key, value in (labels or {}).items())


def legacy_deployment(record, settings, main):
    """The legacy operator Deployment from the recorded original (labels, spec): every label value naming the operator
    renamed, scope legacy, the main container's args scoped legacy with its own lease, no proxy, a hash of it."""
    name, legacy_name = settings["name"], settings["legacy_name"]
    scope = {OPERATOR_SCOPE_LABEL: "legacy"}
    spec = record.get("spec") or {}
    template = spec.get("template") or {}
    containers = []
    for container in (template.get("spec") or {}).get("containers") or []:
        if container.get("name") == PROXY_CONTAINER:
            continue
        if container.get("name") == main:
            container = dict(container, args=_scoped_args(container.get("args") or [], settings, settings["legacy_args"],
                                                          settings["legacy_lease_name"]))
        containers.append(container)
    pod_metadata = dict(template.get("metadata") or {})
    pod_metadata["labels"] = dict(_renamed(pod_metadata.get("labels"), name, legacy_name), **scope)
    legacy_template = dict(template, metadata=pod_metadata, spec=dict(template.get("spec") or {}, containers=containers))
    selector = dict(spec.get("selector") or {})
    selector["matchLabels"] = dict(_renamed(selector.get("matchLabels"), name, legacy_name), **scope)
    legacy_spec = dict(spec, selector=selector, template=legacy_template)
    labels = _renamed(record.get("labels"), name, legacy_name)
    labels.update(scope)
    labels["app.kubernetes.io/managed-by"] = MANAGED_BY
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": legacy_name, "namespace": settings["namespace"], "labels": labels,
                         "annotations": {DUAL_OPERATOR_HASH_ANNOTATION: _digest({"labels": labels, "spec": legacy_spec})}},
            "spec": legacy_spec}


def _legacy_drifted(legacy, legacy_object, main):
    """Whether the legacy operator found differs from what the role would apply: another hash, other main container
    args (someone edited them), or a proxy sidecar."""
    found_spec = _pod_spec(legacy)
    wanted_args = _container_named(_pod_spec(legacy_object), main).get("args")
    wanted_hash = legacy_object["metadata"]["annotations"][DUAL_OPERATOR_HASH_ANNOTATION]
    return ((_metadata(legacy).get("annotations") or {}).get(DUAL_OPERATOR_HASH_ANNOTATION, "") != wanted_hash
            or (_container_named(found_spec, main).get("args") or []) != wanted_args
            or any(c.get("name") == PROXY_CONTAINER for c in found_spec.get("containers") or []))


def _operator(source, settings, plan, problems):
    """Fill plan (main_container, installed, operator_patch, proxy_needed) for the operator Deployment; returns the
    recorded original (or None)."""
    ns, name = settings["namespace"], settings["name"]
    pod_spec = _pod_spec(source)
    main, candidates = _main_container(pod_spec, settings)
    if not main:
        plan["errors"].append("Deployment %s/%s: cannot tell the operator container (wanted %s, found %s); set "
                              "private_capi_dual_operator_container"
                              % (ns, name, settings["container"] or ("one named %s or a single container" % name),
                                 ", ".join(candidates)))
        return None
    plan["main_container"] = main
    annotations = _metadata(source).get("annotations") or {}
    main_container = _container_named(pod_spec, main)
    current_args = main_container.get("args") or []
    new_args = list(settings["new_args"] or [])
    plan["installed"] = OPERATOR_ORIGINAL_ANNOTATION in annotations or (bool(new_args) and all(a in current_args for a in new_args))
    record = None
    if OPERATOR_ORIGINAL_ANNOTATION in annotations:
        try:
            record = json.loads(annotations[OPERATOR_ORIGINAL_ANNOTATION])
        except ValueError as exc:
            record = exc
        if not isinstance(record, dict):
            plan["errors"].append("Deployment %s/%s: annotation %s is not a JSON object (%s); restore it from the "
                                  "Deployment's history or remove it and create %s by hand"
                                  % (ns, name, OPERATOR_ORIGINAL_ANNOTATION, record, settings["legacy_name"]))
            return None
    elif not plan["installed"]:
        record = {"labels": _metadata(source).get("labels") or {}, "spec": source.get("spec")}
    # the current args re-scoped (an upgrade's own arg changes are kept), and the proxy settings
    operator_args = _scoped_args(current_args, settings, new_args, settings["lease_name"])
    proxy = {}
    if as_bool(settings["proxy"]):
        proxy = {"image": settings["proxy_image"], "port": _int(settings, "proxy_port", problems),
                 "metrics_port": _int(settings, "proxy_metrics_port", problems), "extra_args": settings["proxy_extra_args"]}
    operator_hash = _digest({"args": operator_args, "proxy": proxy})
    if (operator_args != current_args or annotations.get(DUAL_OPERATOR_HASH_ANNOTATION, "") != operator_hash
            or (record is not None and OPERATOR_ORIGINAL_ANNOTATION not in annotations)):
        patch_annotations = {DUAL_OPERATOR_HASH_ANNOTATION: operator_hash}
        if record is not None:
            patch_annotations[OPERATOR_ORIGINAL_ANNOTATION] = json.dumps(record, sort_keys=True)
        plan["operator_patch"] = {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns, "annotations": patch_annotations},
            "spec": {"template": {"spec": {"containers": [{"name": main, "args": operator_args}]}}}}
    has_sidecar = any(c.get("name") == PROXY_CONTAINER for c in pod_spec.get("containers") or [])
    has_kubeconfig = any(e.get("name") == sidecar.KUBECONFIG_ENV for e in main_container.get("env") or [])
    plan["proxy_needed"] = bool(proxy) and (plan["operator_patch"] is not None or not has_sidecar or not has_kubeconfig)
    return record


def _check_list(value, what):
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, dict) for item in value):
        raise DualOperatorInputError("%s must be a list of mappings, got %s" % (what, type(value).__name__))


def present_plan(deployments, hostedclusters, settings):
    """What state=present has to do (a dict; see plugins/filter/dual_operator_plan.yml for its keys)."""
    _check_list(deployments, "the Deployments (the input)")
    _check_list(hostedclusters, "the HostedClusters (migration_state query hostedclusters)")
    problems = settings_problems(settings)
    wait_timeout = _int(settings, "wait_timeout", problems)
    plan = {"errors": problems, "main_container": "", "installed": False, "mark": [], "left_new": [], "need_legacy": [],
            "operator_patch": None, "proxy_needed": False, "legacy_exists": False, "legacy_apply": False,
            "legacy_object": None, "wait": wait_timeout > 0, "wait_timeout": wait_timeout}
    if problems:
        return _with_outcome(plan, settings)
    ns, name, legacy_name = settings["namespace"], settings["name"], settings["legacy_name"]
    source = next((d for d in reversed(deployments) if _metadata(d).get("name") == name), None)
    legacy = next((d for d in reversed(deployments) if _metadata(d).get("name") == legacy_name), None)
    plan["legacy_exists"] = legacy is not None
    port_problems = []
    record = None
    if source is None:
        plan["errors"].append("Deployment %s/%s not found (expected the HyperShift operator that `hypershift install` "
                              "creates); install HyperShift first or set private_capi_dual_operator_namespace/_name" % (ns, name))
    else:
        record = _operator(source, settings, plan, port_problems)
    # the unmarked HostedClusters existed before the new operator, unless it is installed already (then they are its own)
    marking = as_bool(settings["mark_legacy"]) and not plan["installed"]
    new = [hc for hc in hostedclusters if hc.get("state") == machine.NEW]
    mark = new if marking else []
    need_legacy = [hc for hc in hostedclusters if hc.get("state") in NEEDS_LEGACY] + mark
    plan.update(mark=_refs(mark), left_new=[] if marking else _refs(new), need_legacy=_refs(need_legacy))
    if plan["main_container"] and (need_legacy or legacy is not None):
        if record is not None:
            plan["legacy_object"] = legacy_deployment(record, settings, plan["main_container"])
            plan["legacy_apply"] = legacy is None or _legacy_drifted(legacy, plan["legacy_object"], plan["main_container"])
        elif legacy is None and not plan["errors"]:
            plan["errors"].append(
                "Deployment %s/%s already runs with %s but has no annotation %s and %s/%s does not exist, so the legacy "
                "operator cannot be derived; %d HostedCluster(s) need it (%s): re-run `hypershift install "
                "--private-capi-types` or create %s by hand"
                % (ns, name, " ".join(settings["new_args"] or []), OPERATOR_ORIGINAL_ANNOTATION, ns, legacy_name, len(need_legacy),
                   ", ".join(hc.get("name") for hc in need_legacy), legacy_name))
    plan["errors"].extend(port_problems)
    return _with_outcome(plan, settings)


def _with_outcome(plan, settings):
    """Add result (private_capi_dual_operator_result) and summary (what the operator namespace holds now)."""
    if plan["legacy_apply"]:
        legacy_operator = "updated" if plan["legacy_exists"] else "created"
    else:
        legacy_operator = "unchanged" if plan["legacy_exists"] else "absent"
    new_operator = "changed" if plan["operator_patch"] is not None or plan["proxy_needed"] else "unchanged"
    plan["result"] = {"marked_legacy": plan["mark"], "legacy_needed_by": plan["need_legacy"],
                      "left_to_new_operator": plan["left_new"], "legacy_operator": legacy_operator,
                      "new_operator": new_operator}
    plan["summary"] = "%s/%s: new operator (%s); %s: %s; %d HostedCluster(s) marked legacy%s; %d reconciled by the legacy operator%s%s" % (
        settings["namespace"], settings["name"], new_operator, settings["legacy_name"],
        "not needed, not created" if legacy_operator == "absent" else legacy_operator, len(plan["mark"]),
        (": " + ", ".join(plan["mark"])) if plan["mark"] else "", len(plan["need_legacy"]),
        ("; left to the new operator (created after it was installed): " + ", ".join(plan["left_new"])) if plan["left_new"] else "",
        " (check mode: nothing was written)" if as_bool(settings["check_mode"]) else "")
    return plan


def hostedcluster_blocker(entry):
    """'namespace/name (state)' when the legacy operator still reconciles the HostedCluster, else None. entry is the
    HostedCluster as migration_state's query judged it (the state machine's state; the mirror label when it says
    more)."""
    for state in (entry.get("state"), entry.get("label")):
        if state in NEEDS_LEGACY:
            return "%s/%s (%s)" % (entry.get("namespace"), entry.get("name"), state)
    return None


def cleanup_plan(hostedclusters, settings):
    """What state=cleanup has to do (a dict; see plugins/filter/dual_operator_cleanup.yml for its keys)."""
    _check_list(hostedclusters, "the HostedClusters (the input)")
    errors = settings_problems(settings)
    wait_timeout = _int(settings, "wait_timeout", errors)
    blockers = [] if errors else [b for b in (hostedcluster_blocker(hc) for hc in hostedclusters) if b]
    ns, legacy_name = settings["namespace"], settings["legacy_name"]
    fail = as_bool(settings["cleanup_fail_when_blocked"])
    message = ""
    if blockers and fail:
        errors.append("Cannot remove %s/%s: expected no HostedCluster legacy, in-progress or failed, found %s; migrate them "
                      "(or remediate the failed ones) and run the cleanup again." % (ns, legacy_name, ", ".join(blockers)))
    elif blockers:
        message = ("Not removing %s/%s: %d HostedCluster(s) still need the legacy operator (%s); migrate them (or "
                   "remediate the failed ones) and run the cleanup again." % (ns, legacy_name, len(blockers), ", ".join(blockers)))
    message = " | ".join(errors) or message
    delete = []
    if not blockers and not errors:
        delete = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": legacy_name, "namespace": ns}},
                  {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                   "metadata": {"name": settings["legacy_lease_name"], "namespace": ns}}]
    return {"errors": errors, "blockers": blockers, "message": message, "delete": delete,
            "wait": wait_timeout > 0, "wait_timeout": wait_timeout,
            "result": {"legacy_needed_by": blockers, "legacy_operator": "kept" if blockers else "removed"}}
