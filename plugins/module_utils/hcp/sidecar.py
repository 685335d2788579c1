# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The API proxy sidecar in a CAPI-dependent Deployment: the merge patch that puts it in, and the one that takes it out.

Pure functions of the Deployment as read (no API call). The put-in patch first records what it changes in the
Deployment (the main containers' env and volumeMounts, the pod's volumes) in the annotation
PROXY_ORIGINAL_ANNOTATION (contract.py). The take-out patch puts exactly that back and removes the record. Both are JSON
merge patches, and their lists are replaced whole. They are idempotent: a Deployment that has the sidecar gets the same
patch again (its record is kept, not recomputed from the patched spec), and a Deployment without sidecar or record needs
no take-out patch.

The roles (api_proxy, migrate) call these through the filters proxy_sidecar_patches and proxy_sidecar_removals, and the
Python steps that restore Deployments call them directly: the fixed names below exist here only.

The api_proxy role's whole run is decided here too (filters proxy_reads and proxy_plan): what it reads, the kubeconfig
ConfigMap, the RBAC on the private groups derived from the workloads' grants, its labels, and what it writes or deletes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    PROXY_MODE_CONFIG_MAP,
    PROXY_MODE_KEY,
    PROXY_MODES,
    PROXY_NAMESPACE_LABEL,
    PROXY_ORIGINAL_ANNOTATION,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac.rules import (
    SIDECAR_CRD_RULE,
    SIDECAR_MODE_RULE,
    policy_rule,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import DEFAULT_GROUP_MAP

CONTAINER_NAME = "kube-apiserver-proxy"  # the enhancement's support commands use this name
# its metrics port's name (the PodMonitor of plugins/module_utils/monitoring.py scrapes the port by it)
METRICS_PORT_NAME = "proxy-metrics"
VOLUME_NAME = "capi-proxy-kubeconfig"
KUBECONFIG_ENV = "KUBECONFIG"
POD_NAME_ENV = "POD_NAME"  # the sidecar's --pod-name (the key of its mode acknowledgement), from the downward API
DEFAULT_CONFIG_MAP = "capi-proxy-kubeconfig"  # the role's private_capi_proxy_config_map_name default
# The labels the api_proxy role puts on the ConfigMap and the RBAC objects it creates for a namespace (rbac_labels):
# how its removal and the rollback find them.
MANAGED_BY_LABEL, MANAGED_BY = "app.kubernetes.io/managed-by", "hypershift.private_capi.api_proxy"
# (group, version, plural, namespaced) of those RBAC objects
RBAC_RESOURCES = (("rbac.authorization.k8s.io", "v1", "rolebindings", True), ("rbac.authorization.k8s.io", "v1", "roles", True),
                  ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", False),
                  ("rbac.authorization.k8s.io", "v1", "clusterroles", False))
RBAC_KINDS = {"rolebindings": "RoleBinding", "roles": "Role", "clusterrolebindings": "ClusterRoleBinding",
              "clusterroles": "ClusterRole"}
RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
RBAC_NAME_PREFIX = "private-capi-proxy-"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# The sidecar is the pod's first container, with a postStart hook that returns once the proxy answers /readyz (or
# after WAIT_READY_SECONDS): the kubelet starts the next container only then, so a manager's first request never meets
# a proxy that has not read its mode yet (capi_proxy/waitready.py). kubectl's default container stays the first main
# one through this pod annotation, which the put-in patch adds when the pod has none (recorded, taken out again).
WAIT_READY_SECONDS = 60
DEFAULT_CONTAINER_ANNOTATION = "kubectl.kubernetes.io/default-container"
ADDED_DEFAULT_CONTAINER = "default_container_added"  # the record's key: the put-in patch added that annotation
# The proxy reads CRDs (contract labels for version adaptation) with the pod's own identity.
CRD_READER_RULE = policy_rule(SIDECAR_CRD_RULE)
# The proxy follows and acknowledges its mode in the namespace's mode ConfigMap with the pod's own identity.
MODE_FOLLOWER_RULE = policy_rule(SIDECAR_MODE_RULE)
STATES, STEPS = ("present", "absent"), ("all", "prepare")
# The role's settings proxy_reads and proxy_plan take, besides SETTINGS (the role's private_capi_proxy_* variables)
ROLE_SETTINGS = ("state", "steps", "namespace", "deployments", "skip_missing", "rbac", "upstream_server", "mode",
                 "follow_mode")
SETTINGS = ("image", "image_pull_policy", "mount_path", "port", "metrics_port", "log_level", "use_own_credentials",
            "extra_args", "resources", "liveness_probe", "readiness_probe", "config_map_name", "main_containers")


class SidecarError(PrivateCapiError, ValueError):
    """A Deployment or a setting these patches cannot work with; the message names it and what to do."""


def _spec(deployment):
    return (((deployment.get("spec") or {}).get("template") or {}).get("spec")) or {}


def _metadata(deployment):
    return deployment.get("metadata") or {}


def _who(deployment):
    metadata = _metadata(deployment)
    return "Deployment %s/%s" % (metadata.get("namespace"), metadata.get("name"))


def recorded_original(deployment):
    """The record of what the sidecar changed (dict), or None when the Deployment has none."""
    text = (_metadata(deployment).get("annotations") or {}).get(PROXY_ORIGINAL_ANNOTATION)
    if not text:
        return None
    try:
        original = json.loads(text)
    except ValueError as exc:
        raise SidecarError("%s: annotation %s is not JSON (%s); restore it from the Deployment's history or remove it "
                           "and the sidecar by hand" % (_who(deployment), PROXY_ORIGINAL_ANNOTATION, exc))
    if not isinstance(original, dict):
        raise SidecarError("%s: annotation %s is not a JSON object; restore it or remove it and the sidecar by hand"
                           % (_who(deployment), PROXY_ORIGINAL_ANNOTATION))
    return original


def current_original(deployment, main_containers=()):
    """What the sidecar would change, as the Deployment is now: each main container's env and volumeMounts (all
    containers but the sidecar, or those named in main_containers), and the pod's volumes when it has any."""
    spec = _spec(deployment)
    containers = {}
    for container in spec.get("containers") or []:
        if container.get("name") == CONTAINER_NAME or (main_containers and container.get("name") not in main_containers):
            continue
        containers[container["name"]] = dict((key, container[key]) for key in ("env", "volumeMounts") if key in container)
    original = {"containers": containers}
    if "volumes" in spec:
        original["volumes"] = spec["volumes"]
    return original


def _mount(settings):
    return {"name": VOLUME_NAME, "mountPath": settings["mount_path"], "readOnly": True}


def mode_config_map_arg(namespace):
    """The sidecar's argument that makes it follow the mode ConfigMap of namespace."""
    return "--mode-config-map=%s/%s" % (namespace, PROXY_MODE_CONFIG_MAP)


def sidecar_container(settings, namespace):
    """The kube-apiserver-proxy container the settings describe (the role's private_capi_proxy_* variables), in the
    Deployments of namespace: unless settings["follow_mode"] is false (the HyperShift operator's sidecar, which always
    translates), it follows the mode of the namespace's mode ConfigMap, acknowledged under its Pod's name."""
    mount_path = settings["mount_path"]
    follow_mode = settings.get("follow_mode", True)
    args = ["--kubeconfig=%s/upstream.kubeconfig" % mount_path, "--listen=127.0.0.1:%s" % settings["port"],
            "--metrics-listen=0.0.0.0:%s" % settings["metrics_port"], "--log-level=%s" % settings["log_level"]]
    if follow_mode:
        args.append(mode_config_map_arg(namespace))
    if settings.get("use_own_credentials"):
        args.append("--use-own-credentials")
    args.extend(settings.get("extra_args") or [])
    container = {
        "name": CONTAINER_NAME,
        "image": settings["image"],
        "imagePullPolicy": settings["image_pull_policy"],
        "args": args,
        "ports": [{"name": METRICS_PORT_NAME, "containerPort": int(settings["metrics_port"]), "protocol": "TCP"}],
        "resources": settings["resources"],
        "livenessProbe": settings["liveness_probe"],
        "readinessProbe": settings["readiness_probe"],
        "volumeMounts": [_mount(settings)],
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
                            "capabilities": {"drop": ["ALL"]}},
        "lifecycle": {"postStart": {"exec": {"command": [
            "capi-proxy", "wait-ready", "--port=%s" % settings["port"], "--timeout=%d" % WAIT_READY_SECONDS]}}},
    }
    if follow_mode:
        container["env"] = [{"name": POD_NAME_ENV,
                             "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}]
    return container


def _check_settings(settings):
    missing = [name for name in SETTINGS if name not in settings]
    if missing:
        raise SidecarError("the sidecar settings lack %s (the api_proxy role's private_capi_proxy_* variables)"
                           % ", ".join(missing))


def _pod_annotations(deployment):
    return ((((deployment.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("annotations")) or {}


def present_patch(deployment, settings):
    """The merge patch that puts the sidecar in: the record (kept when present), the sidecar as the first container
    (WAIT_READY_SECONDS), the main containers after it pointed at the proxy (KUBECONFIG, the kubeconfig mount), the
    kubeconfig ConfigMap volume, and kubectl's default container (the first main one) unless the pod names one."""
    _check_settings(settings)
    original = recorded_original(deployment)
    if original is None:
        original = current_original(deployment, settings.get("main_containers") or ())
    saved = original.get("containers") or {}
    pod_metadata = {}
    if DEFAULT_CONTAINER_ANNOTATION not in _pod_annotations(deployment) or original.get(ADDED_DEFAULT_CONTAINER):
        first = next((c.get("name") for c in _spec(deployment).get("containers") or [] if c.get("name") != CONTAINER_NAME),
                     None)
        if first:
            original = dict(original, **{ADDED_DEFAULT_CONTAINER: True})
            pod_metadata = {"metadata": {"annotations": {DEFAULT_CONTAINER_ANNOTATION: first}}}
    mount = _mount(settings)
    kubeconfig_env = {"name": KUBECONFIG_ENV, "value": "%s/kubeconfig" % settings["mount_path"]}
    containers = []
    for container in _spec(deployment).get("containers") or []:
        if container.get("name") == CONTAINER_NAME:
            continue
        if container.get("name") in saved:
            kept = saved[container["name"]]
            container = dict(container,
                             env=[env for env in kept.get("env") or [] if env.get("name") != KUBECONFIG_ENV] + [kubeconfig_env],
                             volumeMounts=[m for m in kept.get("volumeMounts") or [] if m.get("name") != VOLUME_NAME] + [mount])
        containers.append(container)
    volumes = [volume for volume in original.get("volumes") or [] if volume.get("name") != VOLUME_NAME]
    volumes.append({"name": VOLUME_NAME, "configMap": {"name": settings["config_map_name"]}})
    metadata = _metadata(deployment)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": metadata.get("name"), "namespace": metadata.get("namespace"),
                         "annotations": {PROXY_ORIGINAL_ANNOTATION: json.dumps(original, sort_keys=True)}},
            "spec": {"template": dict(pod_metadata, spec={
                "containers": [sidecar_container(settings, metadata.get("namespace"))] + containers, "volumes": volumes})}}


def _sidecar_of(deployment):
    """The Deployment's sidecar container, or None."""
    for container in _spec(deployment).get("containers") or []:
        if container.get("name") == CONTAINER_NAME:
            return container
    return None


def has_sidecar(deployment):
    return _sidecar_of(deployment) is not None


def follows_mode(deployment, namespace):
    """Whether the Deployment's sidecar follows the mode ConfigMap of namespace (an older release's sidecar does not:
    its mode is fixed)."""
    container = _sidecar_of(deployment)
    return container is not None and mode_config_map_arg(namespace) in (container.get("args") or [])


def absent_patch(deployment):
    """The merge patch that takes the sidecar out and puts the recorded env, volumeMounts and volumes back (the record
    removed); None when the Deployment has neither sidecar nor record. Without a record (a sidecar put in by hand) only
    the sidecar and its volume go."""
    original = recorded_original(deployment)
    if original is None and not has_sidecar(deployment):
        return None
    saved = (original or {}).get("containers") or {}
    containers = []
    for container in _spec(deployment).get("containers") or []:
        if container.get("name") == CONTAINER_NAME:
            continue
        if container.get("name") in saved:
            base = dict((key, value) for key, value in container.items() if key not in ("env", "volumeMounts"))
            base.update(saved[container["name"]])
            container = base
        containers.append(container)
    if original is not None and "containers" in original:
        volumes = original.get("volumes")
    else:
        volumes = [volume for volume in _spec(deployment).get("volumes") or [] if volume.get("name") != VOLUME_NAME] or None
    metadata = _metadata(deployment)
    template = {"spec": {"containers": containers, "volumes": volumes}}
    if (original or {}).get(ADDED_DEFAULT_CONTAINER):
        template["metadata"] = {"annotations": {DEFAULT_CONTAINER_ANNOTATION: None}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": metadata.get("name"), "namespace": metadata.get("namespace"),
                         "annotations": {PROXY_ORIGINAL_ANNOTATION: None}},
            "spec": {"template": template}}


def _named(deployments, names):
    return [deployment for deployment in deployments or [] if _metadata(deployment).get("name") in names]


def present_patches(deployments, names, settings):
    """present_patch of each Deployment of deployments named in names, in the order read."""
    return [present_patch(deployment, settings) for deployment in _named(deployments, names)]


def absent_patches(deployments, names):
    """absent_patch of each Deployment of deployments named in names that has a sidecar or a record."""
    patches = (absent_patch(deployment) for deployment in _named(deployments, names))
    return [patch for patch in patches if patch is not None]


def rbac_labels(namespace):
    """The labels of the ConfigMap and the RBAC objects the api_proxy role creates for namespace."""
    return {MANAGED_BY_LABEL: MANAGED_BY, PROXY_NAMESPACE_LABEL: namespace}


def rbac_label_selectors(namespace):
    """Those labels as label selectors (ANDed), one per label."""
    return ["%s=%s" % item for item in sorted(rbac_labels(namespace).items())]


def rbac_label_selector(namespace):
    """The label selector of the RBAC objects the api_proxy role created for namespace."""
    return ",".join(rbac_label_selectors(namespace))


def kubeconfig_config_map(namespace, name, port, upstream_server):
    """The ConfigMap of both kubeconfigs: "kubeconfig" for the workload containers (every API request to the sidecar
    on loopback), "upstream.kubeconfig" for the sidecar (the API server, verified with the service-account CA, as the
    pod's service account)."""
    kubeconfig = ("apiVersion: v1\nkind: Config\ncurrent-context: capi-proxy\nclusters:\n  - name: capi-proxy\n"
                  "    cluster:\n      server: http://localhost:%s\ncontexts:\n  - name: capi-proxy\n    context:\n"
                  "      cluster: capi-proxy\n      namespace: %s\n" % (port, namespace))
    upstream = ("apiVersion: v1\nkind: Config\ncurrent-context: in-cluster\nclusters:\n  - name: in-cluster\n"
                "    cluster:\n      server: %s\n      certificate-authority: %s/ca.crt\nusers:\n"
                "  - name: pod-service-account\n    user:\n      tokenFile: %s/token\ncontexts:\n  - name: in-cluster\n"
                "    context:\n      cluster: in-cluster\n      user: pod-service-account\n"
                % (upstream_server, SERVICE_ACCOUNT_DIR, SERVICE_ACCOUNT_DIR))
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": rbac_labels(namespace)},
            "data": {"kubeconfig": kubeconfig, "upstream.kubeconfig": upstream}}


def mode_config_map(namespace, mode):
    """The namespace's proxy mode ConfigMap as the api_proxy role creates it when it is missing (data.mode: mode)."""
    if mode not in PROXY_MODES:
        raise SidecarError("the proxy mode must be one of %s, got %r (private_capi_proxy_mode)"
                           % (", ".join(PROXY_MODES), mode))
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": PROXY_MODE_CONFIG_MAP, "namespace": namespace, "labels": rbac_labels(namespace)},
            "data": {PROXY_MODE_KEY: mode}}


def private_rules(rules):
    """The rules on standard CAPI groups, each kept with only its groups' private names (rules on no such group,
    and rules without apiGroups, left out; "*" is not a CAPI group)."""
    translated = []
    for rule in rules or []:
        groups = []
        for group in rule.get("apiGroups") or []:
            private = DEFAULT_GROUP_MAP.to_private(group) if isinstance(group, str) and group != "*" else group
            if private != group and private not in groups:
                groups.append(private)
        if groups:
            translated.append(dict(rule, apiGroups=groups))
    return translated


def _bound_to(binding, account, namespace, namespaced_binding):
    """Whether binding binds ServiceAccount namespace/account (a RoleBinding's subject may leave its namespace out)."""
    for subject in binding.get("subjects") or []:
        if subject.get("kind") != "ServiceAccount" or subject.get("name") != account:
            continue
        if subject.get("namespace") == namespace or (namespaced_binding and "namespace" not in subject):
            return True
    return False


def _rbac_pair(kind, name, namespace, rules, subjects):
    """A Role or ClusterRole with rules and its binding to subjects, both labeled for namespace."""
    def metadata():
        labeled = {"labels": rbac_labels(namespace), "name": name}
        if kind == "Role":
            labeled["namespace"] = namespace
        return labeled
    return [{"apiVersion": RBAC_API_VERSION, "kind": kind, "metadata": metadata(), "rules": rules},
            {"apiVersion": RBAC_API_VERSION, "kind": kind + "Binding", "metadata": metadata(),
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}, "subjects": subjects}]


def private_rbac(deployments, names, namespace, rolebindings, roles, clusterrolebindings, clusterroles, follow_mode=True):
    """Grants on the private groups mirroring, for the ServiceAccount of each Deployment named in names, its grants on
    the standard CAPI groups: a Role and RoleBinding for what its RoleBindings grant, a ClusterRole and
    ClusterRoleBinding for what its ClusterRoleBindings grant, one ClusterRole and binding letting every such
    ServiceAccount read CRDs and, with follow_mode, one Role and binding letting it follow the mode ConfigMap. The
    bindings and roles are the namespace's and the cluster's, as read."""
    rules = {"Role": dict((_metadata(role).get("name"), role.get("rules")) for role in roles or []),
             "ClusterRole": dict((_metadata(role).get("name"), role.get("rules")) for role in clusterroles or [])}
    accounts = []
    for deployment in _named(deployments, names):
        account = _spec(deployment).get("serviceAccountName") or "default"
        if account not in accounts:
            accounts.append(account)
    objects = []
    for account in accounts:
        subjects = [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]
        local, cluster = [], []
        for binding in rolebindings or []:
            if _bound_to(binding, account, namespace, True):
                ref = binding.get("roleRef") or {}
                local.extend(rules["Role" if ref.get("kind") == "Role" else "ClusterRole"].get(ref.get("name")) or [])
        for binding in clusterrolebindings or []:
            if _bound_to(binding, account, namespace, False):
                cluster.extend(rules["ClusterRole"].get((binding.get("roleRef") or {}).get("name")) or [])
        local, cluster = private_rules(local), private_rules(cluster)
        if local:
            objects.extend(_rbac_pair("Role", RBAC_NAME_PREFIX + account, namespace, local, subjects))
        if cluster:
            objects.extend(_rbac_pair("ClusterRole", "%s%s-%s" % (RBAC_NAME_PREFIX, namespace, account), namespace,
                                      cluster, subjects))
    if accounts:
        every_account = [{"kind": "ServiceAccount", "name": account, "namespace": namespace} for account in accounts]
        objects.extend(_rbac_pair("ClusterRole", "%scrd-reader-%s" % (RBAC_NAME_PREFIX, namespace), namespace,
                                  [json.loads(json.dumps(CRD_READER_RULE))], every_account))
        if follow_mode:
            objects.extend(_rbac_pair("Role", RBAC_NAME_PREFIX + "mode", namespace,
                                      [json.loads(json.dumps(MODE_FOLLOWER_RULE))], every_account))
    return objects


def _check_role_settings(settings):
    missing = [name for name in ROLE_SETTINGS + ("config_map_name", "port") if name not in settings]
    if missing:
        raise SidecarError("the role settings lack %s (the api_proxy role's private_capi_proxy_* variables)"
                           % ", ".join(missing))
    if settings["state"] not in STATES or settings["steps"] not in STEPS:
        raise SidecarError("state must be one of %s and steps one of %s, got %r and %r"
                           % (", ".join(STATES), ", ".join(STEPS), settings["state"], settings["steps"]))
    if not settings["namespace"]:
        raise SidecarError("private_capi_proxy_namespace is empty: give the HCP namespace whose Deployments get the "
                           "sidecar")
    if settings["state"] == "present":
        port, metrics_port = _port(settings, "port"), _port(settings, "metrics_port")
        if metrics_port <= 0 or metrics_port == port:
            raise SidecarError("private_capi_proxy_metrics_port is %d: give a port above 0 other than the proxy port "
                               "(private_capi_proxy_port, %d); the probes reach /healthz and /readyz there because "
                               "the proxy itself listens on loopback only" % (metrics_port, port))


def _port(settings, name):
    try:
        return int(settings.get(name))
    except (TypeError, ValueError):
        raise SidecarError("private_capi_proxy_%s must be a port number, got %r" % (name, settings.get(name)))


def role_reads(settings):
    """What the api_proxy role reads, as hypershift.private_capi.k8s_lists entries: the namespace's Deployments
    first; then, with state present, the ConfigMaps the role created for the namespace (by label: is the mode
    ConfigMap there?) and, with rbac, every binding and role the private-group grants derive from, or with state
    absent the RBAC objects the role created for the namespace (by label)."""
    _check_role_settings(settings)
    namespace = settings["namespace"]
    reads = [{"api_version": "apps/v1", "kind": "Deployment", "namespace": namespace}]
    if settings["state"] == "present" and settings["follow_mode"]:
        reads.append({"api_version": "v1", "kind": "ConfigMap", "namespace": namespace,
                      "label_selectors": rbac_label_selectors(namespace)})
    if settings["state"] == "present" and not settings["rbac"]:
        return reads
    selectors = rbac_label_selectors(namespace) if settings["state"] == "absent" else []
    for group, version, plural, namespaced in RBAC_RESOURCES:
        reads.append({"api_version": "%s/%s" % (group, version), "kind": RBAC_KINDS[plural],
                      "namespace": namespace if namespaced else "", "label_selectors": selectors})
    return reads


def role_plan(results, settings):
    """What the api_proxy role does with what role_reads read (results, as k8s_lists returns them): a dict of
    error (why to stop, or ""), apply (objects to create or update), patches (the Deployments' merge patches),
    patch (whether this run sends them) and delete (objects to delete)."""
    _check_role_settings(settings)
    found = [result.get("resources") or [] for result in results]
    if len(found) != len(role_reads(settings)):
        raise SidecarError("expected %d lists as proxy_reads asks for (the Deployments, then the ConfigMaps and the "
                           "RBAC), got %d; pass the k8s_lists results of that read" % (len(role_reads(settings)), len(found)))
    namespace, names, deployments = settings["namespace"], settings["deployments"], found[0]
    config_map = kubeconfig_config_map(namespace, settings["config_map_name"], settings["port"],
                                       settings["upstream_server"])
    if settings["state"] == "absent":
        delete = [{"apiVersion": RBAC_API_VERSION, "kind": obj.get("kind"),
                   "metadata": dict((key, value) for key, value in _metadata(obj).items() if key in ("name", "namespace"))}
                  for objects in found[1:] for obj in objects]
        config_map_names = [settings["config_map_name"]] + ([PROXY_MODE_CONFIG_MAP] if settings["follow_mode"] else [])
        delete.extend({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}
                      for name in config_map_names)
        return {"error": "", "apply": [], "patches": absent_patches(deployments, names), "patch": True, "delete": delete}
    apply = [config_map]
    if settings["follow_mode"]:
        config_maps, found = found[1], [found[0]] + found[2:]
        # the mode ConfigMap is created when missing, never overwritten: the migration flips it (a re-run must not undo
        # that)
        if PROXY_MODE_CONFIG_MAP not in [_metadata(item).get("name") for item in config_maps]:
            apply.append(mode_config_map(namespace, settings["mode"]))
    present_names = [_metadata(deployment).get("name") for deployment in deployments]
    missing = [name for index, name in enumerate(names) if name not in present_names and name not in names[:index]]
    error = ""
    if missing and not settings["skip_missing"]:
        error = ("Deployments %s were not found in namespace %s; fix private_capi_proxy_deployments (expected the "
                 "CAPI-dependent Deployments of this namespace)." % (", ".join(missing), namespace))
    rbac = private_rbac(deployments, names, namespace, *found[1:], follow_mode=settings["follow_mode"]) if settings["rbac"] else []
    return {"error": error, "apply": apply + rbac, "patches": present_patches(deployments, names, settings),
            "patch": settings["steps"] == "all", "delete": []}
