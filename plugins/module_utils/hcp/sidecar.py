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

Two topologies (TOPOLOGIES, the role's private_capi_proxy_topology): "sidecar", the enhancement's design, a proxy in
every CAPI-dependent Pod on loopback with the Pod's own identity; and "shared" (2026-12-04), one proxy Deployment per
HCP namespace (SHARED_NAME: its Deployment, Service, PodDisruptionBudget and ServiceAccount) serving TLS on a Service,
each client sending its own service-account token: the workloads get the same KUBECONFIG patch without a sidecar
(the record and the take-out patch are the same). docs/proxy.md argues both.
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
    PROXY_SERVING_SECRET,
    SERVING_CERT_ANNOTATION,
    SERVING_CERT_HASH_ANNOTATION,
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
SIDECAR, SHARED = "sidecar", "shared"
TOPOLOGIES = (SIDECAR, SHARED)
# The shared proxy of an HCP namespace: its Deployment, Service, PodDisruptionBudget and ServiceAccount all have this
# name and rbac_labels; its Pods carry SHARED_POD_LABELS. Its serving certificate is the Secret the role has
# serving_certificate make (private_capi_proxy_serving_secret_name), mounted at SHARED_TLS_DIR.
SHARED_NAME = "capi-proxy"
SHARED_POD_LABELS = {"app.kubernetes.io/name": SHARED_NAME, MANAGED_BY_LABEL: MANAGED_BY}
SHARED_TLS_DIR = "/etc/capi-proxy-tls"
SHARED_TLS_VOLUME = "capi-proxy-serving"
SHARED_PORT_NAME = "proxy"
# HyperShift's NetworkPolicy of an HCP namespace lets a Pod reach the management API server only with this label (a
# sidecar has it from its host Pod)
KAS_ACCESS_LABEL = "hypershift.openshift.io/need-management-kas-access"
# (group, version, plural, kind) of the shared proxy's objects besides its Deployment, read by label to remove them
SHARED_RESOURCES = (("", "v1", "services", "Service"), ("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget"),
                    ("", "v1", "serviceaccounts", "ServiceAccount"))
# The role's settings proxy_reads and proxy_plan take, besides SETTINGS (the role's private_capi_proxy_* variables)
ROLE_SETTINGS = ("state", "steps", "namespace", "deployments", "skip_missing", "rbac", "upstream_server", "mode",
                 "follow_mode")
SETTINGS = ("image", "image_pull_policy", "mount_path", "port", "metrics_port", "log_level", "use_own_credentials",
            "extra_args", "resources", "liveness_probe", "readiness_probe", "config_map_name", "main_containers")
# the shared topology's own settings (role_plan): absent from a sidecar caller's settings, they take these values
SHARED_DEFAULTS = {"topology": SIDECAR, "replicas": 2, "ca_bundle": "", "serving_secret_name": PROXY_SERVING_SECRET,
                   "serving_certificate_provider": "generate"}


def topology(settings):
    """The settings' topology, checked: SIDECAR or SHARED."""
    chosen = settings.get("topology") or SIDECAR
    if chosen not in TOPOLOGIES:
        raise SidecarError("private_capi_proxy_topology must be one of %s, got %r" % (", ".join(TOPOLOGIES), chosen))
    return chosen


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
    shared = topology(settings) == SHARED
    listen = ["--listen=0.0.0.0:%s" % settings["port"], "--tls-cert=%s/tls.crt" % SHARED_TLS_DIR,
              "--tls-key=%s/tls.key" % SHARED_TLS_DIR] if shared else ["--listen=127.0.0.1:%s" % settings["port"]]
    args = (["--kubeconfig=%s/upstream.kubeconfig" % mount_path] + listen
            + ["--metrics-listen=0.0.0.0:%s" % settings["metrics_port"], "--log-level=%s" % settings["log_level"]])
    if follow_mode:
        args.append(mode_config_map_arg(namespace))
    if settings.get("use_own_credentials") and not shared:
        args.append("--use-own-credentials")
    args.extend(settings.get("extra_args") or [])
    container = {
        "name": CONTAINER_NAME,
        "image": settings["image"],
        "imagePullPolicy": settings["image_pull_policy"],
        "args": args,
        "ports": [{"name": METRICS_PORT_NAME, "containerPort": int(settings["metrics_port"]), "protocol": "TCP"}],
        "resources": settings["resources"],
        "volumeMounts": [_mount(settings)],
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
                            "capabilities": {"drop": ["ALL"]}},
        "lifecycle": {"postStart": {"exec": {"command": [
            "capi-proxy", "wait-ready", "--port=%s" % settings["port"], "--timeout=%d" % WAIT_READY_SECONDS]}}},
    }
    # an empty probe is no probe (the API server refuses one without a handler)
    for key, setting in (("livenessProbe", "liveness_probe"), ("readinessProbe", "readiness_probe")):
        if settings[setting]:
            container[key] = settings[setting]
    if follow_mode:
        container["env"] = [{"name": POD_NAME_ENV,
                             "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}]
    if shared:
        # the Service sends traffic to Ready Pods only: no postStart wait; the proxy port named for the Service
        del container["lifecycle"]
        container["ports"].insert(0, {"name": SHARED_PORT_NAME, "containerPort": int(settings["port"]), "protocol": "TCP"})
        container["volumeMounts"].append({"name": SHARED_TLS_VOLUME, "mountPath": SHARED_TLS_DIR, "readOnly": True})
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
    shared = topology(settings) == SHARED
    original = recorded_original(deployment)
    if original is None:
        original = current_original(deployment, settings.get("main_containers") or ())
    saved = original.get("containers") or {}
    pod_metadata = {}
    if shared:
        # no sidecar, so kubectl's default container needs no annotation: one the sidecar topology added goes
        if original.pop(ADDED_DEFAULT_CONTAINER, None):
            pod_metadata = {"metadata": {"annotations": {DEFAULT_CONTAINER_ANNOTATION: None}}}
    elif DEFAULT_CONTAINER_ANNOTATION not in _pod_annotations(deployment) or original.get(ADDED_DEFAULT_CONTAINER):
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
                "containers": ([] if shared else [sidecar_container(settings, metadata.get("namespace"))]) + containers,
                "volumes": volumes})}}


def _sidecar_of(deployment):
    """The Deployment's sidecar container, or None."""
    for container in _spec(deployment).get("containers") or []:
        if container.get("name") == CONTAINER_NAME:
            return container
    return None


def has_sidecar(deployment):
    return _sidecar_of(deployment) is not None


def is_shared_proxy(deployment):
    """Whether the Deployment is an HCP namespace's shared proxy (SHARED_NAME, made by the api_proxy role)."""
    metadata = _metadata(deployment)
    return metadata.get("name") == SHARED_NAME and (metadata.get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY


def shared_proxy_of(deployments):
    """The namespace's shared proxy Deployment among deployments (as read), or None."""
    return next((deployment for deployment in deployments or [] if is_shared_proxy(deployment)), None)


def points_at_shared(deployment):
    """Whether the Deployment was pointed at a shared proxy: the put-in patch's record and kubeconfig volume, and no
    sidecar."""
    volumes = [volume.get("name") for volume in _spec(deployment).get("volumes") or []]
    return recorded_original(deployment) is not None and VOLUME_NAME in volumes and not has_sidecar(deployment)


def proxied(deployment, namespace, deployments):
    """Whether the Deployment's API requests go through a proxy that follows the mode ConfigMap of namespace: its own
    sidecar, or the namespace's shared proxy (found in deployments, as read)."""
    if has_sidecar(deployment):
        return follows_mode(deployment, namespace)
    shared = shared_proxy_of(deployments)
    return points_at_shared(deployment) and shared is not None and follows_mode(shared, namespace)


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


def shared_server(namespace, port):
    """The URL of the shared proxy of namespace: its Service's name, which its serving certificate names."""
    return "https://%s.%s.svc:%s" % (SHARED_NAME, namespace, port)


def kubeconfig_config_map(namespace, name, port, upstream_server, ca_bundle=None, mount_path=None):
    """The ConfigMap of both kubeconfigs: "kubeconfig" for the workload containers (every API request to the sidecar
    on loopback), "upstream.kubeconfig" for the sidecar (the API server, verified with the service-account CA, as the
    pod's service account). With ca_bundle (the shared topology, the ConfigMap mounted at mount_path) the workloads'
    kubeconfig names the shared proxy's Service over HTTPS, verified with ca_bundle (key ca.crt), with the pod's own
    service-account token (client-go reads the file again as the kubelet rotates it)."""
    if ca_bundle:
        kubeconfig = ("apiVersion: v1\nkind: Config\ncurrent-context: capi-proxy\nclusters:\n  - name: capi-proxy\n"
                      "    cluster:\n      server: %s\n      certificate-authority: %s/ca.crt\nusers:\n"
                      "  - name: pod-service-account\n    user:\n      tokenFile: %s/token\ncontexts:\n"
                      "  - name: capi-proxy\n    context:\n      cluster: capi-proxy\n      user: pod-service-account\n"
                      "      namespace: %s\n" % (shared_server(namespace, port), mount_path, SERVICE_ACCOUNT_DIR, namespace))
    else:
        kubeconfig = ("apiVersion: v1\nkind: Config\ncurrent-context: capi-proxy\nclusters:\n  - name: capi-proxy\n"
                      "    cluster:\n      server: http://localhost:%s\ncontexts:\n  - name: capi-proxy\n    context:\n"
                      "      cluster: capi-proxy\n      namespace: %s\n" % (port, namespace))
    upstream = ("apiVersion: v1\nkind: Config\ncurrent-context: in-cluster\nclusters:\n  - name: in-cluster\n"
                "    cluster:\n      server: %s\n      certificate-authority: %s/ca.crt\nusers:\n"
                "  - name: pod-service-account\n    user:\n      tokenFile: %s/token\ncontexts:\n  - name: in-cluster\n"
                "    context:\n      cluster: in-cluster\n      user: pod-service-account\n"
                % (upstream_server, SERVICE_ACCOUNT_DIR, SERVICE_ACCOUNT_DIR))
    data = {"kubeconfig": kubeconfig, "upstream.kubeconfig": upstream}
    if ca_bundle:
        data["ca.crt"] = ca_bundle
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": rbac_labels(namespace)}, "data": data}


def shared_proxy_objects(settings, namespace, beside=None):
    """The shared proxy of namespace: its ServiceAccount, its Deployment (settings["replicas"] Pods, spread over nodes
    where it can, a rolling update that keeps them all until a new one is Ready), its Service and a
    PodDisruptionBudget that keeps one Pod through a drain. Its Pods take the scheduling of the Deployment beside (the
    namespace's CAPI Pods: nodeSelector, tolerations, priority class, node affinity) and HyperShift's label that lets a
    control-plane Pod reach the management API server through the namespace's NetworkPolicy; the serving
    certificate's hash (settings serving_cert_sha256) rolls them when it is renewed (they read it when they start)."""
    labels = rbac_labels(namespace)
    replicas = int(settings["replicas"])
    container = sidecar_container(settings, namespace)
    metadata = {"name": SHARED_NAME, "namespace": namespace, "labels": dict(labels, **SHARED_POD_LABELS)}
    service_metadata = dict(metadata)
    if settings["serving_certificate_provider"] == "openshift":  # the service CA makes the Secret for this Service
        service_metadata["annotations"] = {SERVING_CERT_ANNOTATION: settings["serving_secret_name"]}
    spread = {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": SHARED_POD_LABELS},
                                                 "topologyKey": "kubernetes.io/hostname"}}
    pod_spec = {"serviceAccountName": SHARED_NAME, "containers": [container],
                "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [spread]}},
                "volumes": [{"name": VOLUME_NAME, "configMap": {"name": settings["config_map_name"]}},
                            {"name": SHARED_TLS_VOLUME, "secret": {"secretName": settings["serving_secret_name"]}}]}
    source = _spec(beside) if beside else {}
    for key in ("nodeSelector", "tolerations", "priorityClassName"):
        if source.get(key):
            pod_spec[key] = source[key]
    if (source.get("affinity") or {}).get("nodeAffinity"):
        pod_spec["affinity"]["nodeAffinity"] = source["affinity"]["nodeAffinity"]
    template_metadata = {"labels": dict(SHARED_POD_LABELS, **{KAS_ACCESS_LABEL: "true"})}
    if settings.get("serving_cert_sha256"):
        template_metadata["annotations"] = {SERVING_CERT_HASH_ANNOTATION: settings["serving_cert_sha256"]}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(metadata)},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": dict(metadata),
         "spec": {"replicas": replicas, "selector": {"matchLabels": SHARED_POD_LABELS},
                  "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
                  "template": {"metadata": template_metadata, "spec": pod_spec}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": service_metadata,
         "spec": {"type": "ClusterIP", "selector": SHARED_POD_LABELS,
                  "ports": [{"name": SHARED_PORT_NAME, "port": int(settings["port"]),
                             "targetPort": int(settings["port"]), "protocol": "TCP"}]}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": dict(metadata),
         "spec": {"maxUnavailable": 1, "selector": {"matchLabels": SHARED_POD_LABELS}}},
    ]


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


def private_rbac(deployments, names, namespace, rolebindings, roles, clusterrolebindings, clusterroles, follow_mode=True,
                 proxy_account=None):
    """Grants on the private groups mirroring, for the ServiceAccount of each Deployment named in names, its grants on
    the standard CAPI groups: a Role and RoleBinding for what its RoleBindings grant, a ClusterRole and
    ClusterRoleBinding for what its ClusterRoleBindings grant, one ClusterRole and binding letting every such
    ServiceAccount read CRDs and, with follow_mode, one Role and binding letting it follow the mode ConfigMap. The
    bindings and roles are the namespace's and the cluster's, as read. With proxy_account (the shared proxy's own
    ServiceAccount) that account reads CRDs too and it alone follows the mode: the workloads' tokens only pass through
    it."""
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
        followers = every_account
        if proxy_account:
            followers = [{"kind": "ServiceAccount", "name": proxy_account, "namespace": namespace}]
            every_account = every_account + [follower for follower in followers if follower not in every_account]
        objects.extend(_rbac_pair("ClusterRole", "%scrd-reader-%s" % (RBAC_NAME_PREFIX, namespace), namespace,
                                  [json.loads(json.dumps(CRD_READER_RULE))], every_account))
        if follow_mode:
            objects.extend(_rbac_pair("Role", RBAC_NAME_PREFIX + "mode", namespace,
                                      [json.loads(json.dumps(MODE_FOLLOWER_RULE))], followers))
    return objects


def _check_role_settings(settings, planning=False):
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
    shared = topology(settings) == SHARED
    if shared and settings["state"] == "present":
        if planning and not settings.get("ca_bundle"):
            raise SidecarError("private_capi_proxy_topology shared needs the shared proxy's CA bundle (ca_bundle: "
                               "api_proxy_apply makes the serving certificate and passes it): the workloads verify the "
                               "proxy's Service with it")
        if not settings.get("follow_mode", True):
            raise SidecarError("private_capi_proxy_topology shared needs private_capi_proxy_follow_mode true: the shared "
                               "proxy is flipped through the mode ConfigMap like the sidecars")
        try:
            replicas = int(settings.get("replicas", SHARED_DEFAULTS["replicas"]))
        except (TypeError, ValueError):
            replicas = 0
        if replicas < 1:
            raise SidecarError("private_capi_proxy_replicas must be a number of at least 1 (2 keeps a proxy through a "
                               "node's loss), got %r" % settings.get("replicas"))
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


def _reference(obj):
    """obj reduced to what a delete needs: apiVersion, kind, name and namespace."""
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
            "metadata": dict((key, value) for key, value in _metadata(obj).items() if key in ("name", "namespace"))}


def role_plan(results, settings):
    """What the api_proxy role does with what role_reads read (results, as k8s_lists returns them): a dict of
    error (why to stop, or ""), apply (objects to create or update), patches (the Deployments' merge patches),
    patch (whether this run sends them) and delete (objects to delete)."""
    _check_role_settings(settings, planning=True)
    found = [result.get("resources") or [] for result in results]
    if len(found) != len(role_reads(settings)):
        raise SidecarError("expected %d lists as proxy_reads asks for (the Deployments, then the ConfigMaps and the "
                           "RBAC), got %d; pass the k8s_lists results of that read" % (len(role_reads(settings)), len(found)))
    namespace, names, deployments = settings["namespace"], settings["deployments"], found[0]
    settings = dict(SHARED_DEFAULTS, **settings)
    shared = topology(settings) == SHARED
    config_map = kubeconfig_config_map(namespace, settings["config_map_name"], settings["port"],
                                       settings["upstream_server"], settings["ca_bundle"] if shared else None,
                                       settings.get("mount_path"))
    if settings["state"] == "absent":
        # the workloads restored first (patches), then what the role made; the shared proxy they used in
        # delete_shared (deleted only once their rollout was awaited, and only when no other Deployment uses it)
        delete = [_reference(obj) for objects in found[1:] for obj in objects]
        config_map_names = [settings["config_map_name"]] + ([PROXY_MODE_CONFIG_MAP] if settings["follow_mode"] else [])
        delete.extend({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}
                      for name in config_map_names)
        return {"error": "", "apply": [], "patches": absent_patches(deployments, names), "patch": True, "delete": delete,
                "delete_shared": _unused_shared_proxy(deployments, names, settings, namespace, True)}
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
    rbac = private_rbac(deployments, names, namespace, *found[1:], follow_mode=settings["follow_mode"],
                        proxy_account=SHARED_NAME if shared else None) if settings["rbac"] else []
    proxy = shared_proxy_objects(settings, namespace, _scheduling_source(deployments, names)) if shared else []
    # sidecar: a shared proxy the role made before (another topology then) goes once no Deployment uses it
    unused = [] if shared else _unused_shared_proxy(deployments, names, settings, namespace,
                                                    settings["steps"] == "all")
    return {"error": error, "apply": apply + rbac + proxy, "patches": present_patches(deployments, names, settings),
            "patch": settings["steps"] == "all", "delete": [], "delete_shared": unused}


def _unused_shared_proxy(deployments, names, settings, namespace, patching):
    """References of the namespace's shared proxy objects to delete once this run's patches have rolled out: none
    when there is no shared proxy, when this run sends no patch (patching false), or when a Deployment this run does
    not patch still points at it."""
    if shared_proxy_of(deployments) is None or not patching:
        return []
    if any(points_at_shared(d) and _metadata(d).get("name") not in names for d in deployments):
        return []
    return [_reference(obj) for obj in shared_proxy_objects(dict(settings, topology=SHARED), namespace)]


def _scheduling_source(deployments, names):
    """The first named Deployment found: the shared proxy runs where the namespace's CAPI Pods run."""
    return next((d for name in names for d in deployments or [] if _metadata(d).get("name") == name), None)
