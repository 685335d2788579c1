# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The API proxy sidecar in a CAPI-dependent Deployment: the merge patch that puts it in, and the one that takes it out.

Pure functions of the Deployment as read (no API call). The put-in patch first records what it changes in the
Deployment (the main containers' env and volumeMounts, the pod's volumes) in the annotation ORIGINAL_ANNOTATION. The
take-out patch puts exactly that back and removes the record. Both are JSON merge patches, and their lists are replaced whole.
They are idempotent: a Deployment that has the sidecar gets the same patch again (its record is kept, not recomputed
from the patched spec), and a Deployment without sidecar or record needs no take-out patch.

The roles (api_proxy, migrate) call these through the filters proxy_sidecar_patches and proxy_sidecar_removals, and the
Python steps that restore Deployments call them directly: the names below exist here only.
"""

import json

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError

CONTAINER_NAME = "kube-apiserver-proxy"  # the enhancement's support commands use this name
VOLUME_NAME = "capi-proxy-kubeconfig"
ORIGINAL_ANNOTATION = "hypershift.openshift.io/capi-proxy-original"
KUBECONFIG_ENV = "KUBECONFIG"
DEFAULT_CONFIG_MAP = "capi-proxy-kubeconfig"  # the role's private_capi_proxy_config_map_name default
# The labels the api_proxy role puts on the RBAC objects it creates for a namespace (roles/api_proxy/vars/main.yml
# api_proxy_labels; tests/unit/fleet/test_sidecar.py checks the two agree): how its removal finds them.
MANAGED_BY_LABEL, MANAGED_BY = "app.kubernetes.io/managed-by", "hypershift.private_capi.api_proxy"
NAMESPACE_LABEL = "hypershift.openshift.io/capi-proxy-namespace"
# (group, version, plural, namespaced) of those RBAC objects
RBAC_RESOURCES = (("rbac.authorization.k8s.io", "v1", "rolebindings", True), ("rbac.authorization.k8s.io", "v1", "roles", True),
                  ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", False),
                  ("rbac.authorization.k8s.io", "v1", "clusterroles", False))
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
    text = (_metadata(deployment).get("annotations") or {}).get(ORIGINAL_ANNOTATION)
    if not text:
        return None
    try:
        original = json.loads(text)
    except ValueError as exc:
        raise SidecarError("%s: annotation %s is not JSON (%s); restore it from the Deployment's history or remove it "
                           "and the sidecar by hand" % (_who(deployment), ORIGINAL_ANNOTATION, exc))
    if not isinstance(original, dict):
        raise SidecarError("%s: annotation %s is not a JSON object; restore it or remove it and the sidecar by hand"
                           % (_who(deployment), ORIGINAL_ANNOTATION))
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


def sidecar_container(settings):
    """The kube-apiserver-proxy container the settings describe (the role's private_capi_proxy_* variables)."""
    mount_path = settings["mount_path"]
    args = ["--kubeconfig=%s/upstream.kubeconfig" % mount_path, "--listen=127.0.0.1:%s" % settings["port"],
            "--metrics-listen=0.0.0.0:%s" % settings["metrics_port"], "--log-level=%s" % settings["log_level"]]
    if settings.get("use_own_credentials"):
        args.append("--use-own-credentials")
    args.extend(settings.get("extra_args") or [])
    return {
        "name": CONTAINER_NAME,
        "image": settings["image"],
        "imagePullPolicy": settings["image_pull_policy"],
        "args": args,
        "ports": [{"name": "proxy-metrics", "containerPort": int(settings["metrics_port"]), "protocol": "TCP"}],
        "resources": settings["resources"],
        "livenessProbe": settings["liveness_probe"],
        "readinessProbe": settings["readiness_probe"],
        "volumeMounts": [_mount(settings)],
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
                            "capabilities": {"drop": ["ALL"]}},
    }


def _check_settings(settings):
    missing = [name for name in SETTINGS if name not in settings]
    if missing:
        raise SidecarError("the sidecar settings lack %s (the api_proxy role's private_capi_proxy_* variables)"
                           % ", ".join(missing))


def present_patch(deployment, settings):
    """The merge patch that puts the sidecar in: the record (kept when present), the main containers pointed at the
    proxy (KUBECONFIG, the kubeconfig mount), the sidecar, and the kubeconfig ConfigMap volume."""
    _check_settings(settings)
    original = recorded_original(deployment)
    if original is None:
        original = current_original(deployment, settings.get("main_containers") or ())
    saved = original.get("containers") or {}
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
                         "annotations": {ORIGINAL_ANNOTATION: json.dumps(original, sort_keys=True)}},
            "spec": {"template": {"spec": {"containers": containers + [sidecar_container(settings)], "volumes": volumes}}}}


def has_sidecar(deployment):
    return any(container.get("name") == CONTAINER_NAME for container in _spec(deployment).get("containers") or [])


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
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": metadata.get("name"), "namespace": metadata.get("namespace"),
                         "annotations": {ORIGINAL_ANNOTATION: None}},
            "spec": {"template": {"spec": {"containers": containers, "volumes": volumes}}}}


def _named(deployments, names):
    return [deployment for deployment in deployments or [] if _metadata(deployment).get("name") in names]


def present_patches(deployments, names, settings):
    """present_patch of each Deployment of deployments named in names, in the order read."""
    return [present_patch(deployment, settings) for deployment in _named(deployments, names)]


def absent_patches(deployments, names):
    """absent_patch of each Deployment of deployments named in names that has a sidecar or a record."""
    patches = (absent_patch(deployment) for deployment in _named(deployments, names))
    return [patch for patch in patches if patch is not None]


def rbac_label_selector(namespace):
    """The label selector of the RBAC objects the api_proxy role created for namespace."""
    return "%s=%s,%s=%s" % (MANAGED_BY_LABEL, MANAGED_BY, NAMESPACE_LABEL, namespace)
