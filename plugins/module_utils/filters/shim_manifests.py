# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The conversion_shim role's objects, and its judgement of what its modules answered (pure: no API call, inputs
never changed).

manifests: from the settings and the answers so far, the names and labels the serving certificate takes, the objects
to apply (ServiceAccount, ClusterRole and its binding, the in-cluster kubeconfig ConfigMap, the Service, the
PodDisruptionBudget), the Deployment, and the objects to remove (the PodDisruptionBudget of a single replica, or with
state=absent everything the role made, once no CRD converts through the Service). outcome: whether the settings,
the service CA's serving Secret, the rollout and the CRDs still converting through the Service let the role go on,
what to say, and the role's result (the fact private_capi_shim_result).

The role calls these through the filters conversion_shim_manifests and conversion_shim_outcome; its YAML only follows
the answers. Settings are the role's private_capi_shim_* variables without that prefix (roles/conversion_shim/vars/
main.yml conversion_shim_settings); answers are the registered results of its modules (conversion_shim_answers). The
fixed names below exist here only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import SERVING_CERT_ANNOTATION, SERVING_CERT_HASH_ANNOTATION
from ansible_collections.hypershift.private_capi.plugins.module_utils import monitoring
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.rbac.rules import (
    EXPORTER_HOSTEDCLUSTER_RULE, SHIM_CRD_RULE, policy_rule)

CONTAINER_NAME = "shim"
APP_NAME = "capi-conversion-shim"
MANAGED_BY = "hypershift.private_capi.conversion_shim"
KUBECONFIG_DIR = "/etc/capi-conversion-shim"
TLS_DIR = "/tls"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# In the Pod template: a new serving certificate rolls the Pods (the shim reads it when it starts)
RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
STATES = ("present", "absent")
SETTINGS = ("state", "namespace", "name", "service_name", "service_port", "path", "image", "image_pull_policy",
            "replicas", "port", "metrics_port", "extra_groups", "log_level", "extra_args", "upstream_server",
            "certificate_secret_name", "resources", "node_selector", "tolerations", "priority_class_name",
            "wait_timeout", "keep_when_in_use", "check_mode", "monitoring", "leaderless_alert_seconds")
# exporter: the fleet exporter's Deployment as read (k8s_lists, shaped as k8s_info); monitoring: its PrometheusRule as read, whose api_found
# says whether the cluster serves monitoring.coreos.com
ANSWERS = ("certificate", "service_ca_secret", "rollout", "users", "exporter", "monitoring")
EXPORTER_CONTAINER = "exporter"
EXPORTER_PORT = 9091


class ShimSettingsError(PrivateCapiError, ValueError):
    """Settings or answers these functions cannot build the shim from; the message names them and what to do."""


def _int(value):
    """Like Ansible's int filter: the integer, or 0 for what is not one."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def settings_problem(settings):
    """What is wrong with the settings (one message naming the variables to fix), or "" when nothing is."""
    missing = [name for name in SETTINGS if name not in settings]
    if missing:
        return ("the conversion_shim settings lack %s (roles/conversion_shim/vars/main.yml conversion_shim_settings "
                "gives them from the private_capi_shim_* variables)" % ", ".join(missing))
    if settings["state"] not in STATES:
        return "conversion_shim needs private_capi_shim_state present or absent (got %r): fix that variable." % (
            settings["state"],)
    not_bool = [name for name in ("keep_when_in_use", "check_mode", "monitoring") if not isinstance(settings[name], bool)]
    if not_bool:
        return ("the conversion_shim settings %s must be true or false (vars/main.yml passes the variables through "
                "the bool filter)" % ", ".join(not_bool))
    port, metrics_port = _int(settings["port"]), _int(settings["metrics_port"])
    if (not settings["namespace"] or _int(settings["replicas"]) < 1 or port <= 0 or port == metrics_port
            or str(settings["image"]).endswith(":latest")):
        return ("conversion_shim needs private_capi_shim_namespace (got '%s'), at least one replica (got %s), a port "
                "(got %s) other than the metrics port (got %s) and a pinned image, not ':latest' (got %s): fix those "
                "variables." % (settings["namespace"], settings["replicas"], settings["port"], settings["metrics_port"],
                                settings["image"]))
    return ""


def _checked(settings):
    problem = settings_problem(settings)
    if problem:
        raise ShimSettingsError(problem)


def _answers(answers):
    answers = answers or {}
    wrong = [name for name in ANSWERS if not isinstance(answers.get(name) or {}, dict)]
    if wrong:
        raise ShimSettingsError("the answers %s must be the registered results of the role's modules (mappings)"
                                % ", ".join(wrong))
    return dict((name, answers.get(name) or {}) for name in ANSWERS)


def names(settings):
    """Names that derive from the settings: the kubeconfig ConfigMap, the CA Secret (provider generate), the service
    CA's ConfigMap (provider openshift) and the ClusterRole and its binding (cluster-scoped, so named for the
    namespace too: a second shim elsewhere gets its own)."""
    name = settings["name"]
    return {"config_map": "%s-kubeconfig" % name, "ca_secret": "%s-ca" % settings["certificate_secret_name"],
            "service_ca_config_map": "%s-service-ca" % name, "cluster_role": "%s-%s" % (name, settings["namespace"]),
            "exporter": "%s-exporter" % name, "exporter_cluster_role": "%s-exporter-%s" % (name, settings["namespace"]),
            "prometheus_rule": monitoring.DEFAULTS["rule_name"]}


def selector_labels(settings):
    return {"app.kubernetes.io/name": APP_NAME, "app.kubernetes.io/instance": settings["name"]}


def labels(settings):
    return dict(selector_labels(settings), **{"app.kubernetes.io/component": "conversion-webhook",
                                              "app.kubernetes.io/part-of": "hypershift-private-capi",
                                              "app.kubernetes.io/managed-by": MANAGED_BY})


def _metadata(settings, name, namespaced=True):
    metadata = {"name": name}
    if namespaced:
        metadata["namespace"] = settings["namespace"]
    metadata["labels"] = labels(settings)
    return metadata


def kubeconfig(settings):
    """The API server, verified with the service-account CA, as the Pod's service account (the token file is
    re-read)."""
    return ("apiVersion: v1\nkind: Config\ncurrent-context: in-cluster\nclusters:\n  - name: in-cluster\n    cluster:\n"
            "      server: %s\n      certificate-authority: %s/ca.crt\nusers:\n  - name: pod-service-account\n"
            "    user:\n      tokenFile: %s/token\ncontexts:\n  - name: in-cluster\n    context:\n      cluster: in-cluster\n"
            "      user: pod-service-account\n" % (settings["upstream_server"], SERVICE_ACCOUNT_DIR, SERVICE_ACCOUNT_DIR))


def access_objects(settings):
    """The shim's identity: it lists CRDs (the providers' CAPI contract labels, which give v1beta1 references their
    apiVersion) as its Pod's service account, through the in-cluster kubeconfig."""
    cluster_role = names(settings)["cluster_role"]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _metadata(settings, settings["name"])},
        {"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole", "metadata": _metadata(settings, cluster_role, False),
         "rules": [policy_rule(SHIM_CRD_RULE)]},
        {"apiVersion": RBAC_API_VERSION, "kind": "ClusterRoleBinding",
         "metadata": _metadata(settings, cluster_role, False),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
         "subjects": [{"kind": "ServiceAccount", "name": settings["name"], "namespace": settings["namespace"]}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _metadata(settings, names(settings)["config_map"]),
         "data": {"upstream.kubeconfig": kubeconfig(settings)}},
    ]


def service(settings, provider):
    """The Service the private CRDs name (its port -> the Pods' https port); annotated for OpenShift's service CA
    when the serving_certificate module chose it."""
    metadata = _metadata(settings, settings["service_name"])
    if provider == "openshift":
        metadata["annotations"] = {SERVING_CERT_ANNOTATION: settings["certificate_secret_name"]}
    ports = [{"name": "https", "protocol": "TCP", "port": _int(settings["service_port"]), "targetPort": "https"}]
    if _int(settings["metrics_port"]) > 0:
        ports.append({"name": "metrics", "protocol": "TCP", "port": _int(settings["metrics_port"]),
                      "targetPort": "metrics"})
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata,
            "spec": {"type": "ClusterIP", "selector": selector_labels(settings), "ports": ports}}


def pod_disruption_budget(settings):
    """One shim Pod stays through voluntary disruptions (node drains): kube-apiserver converts through it."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _metadata(settings, settings["name"]),
            "spec": {"minAvailable": 1, "selector": {"matchLabels": selector_labels(settings)}}}


def shim_args(settings):
    """`capi-proxy shim` (the image's entrypoint) over TLS, private groups only (the standard CRDs convert at
    HyperShift's own /convert), the extra groups mapped (sorted by group), CRD labels read in-cluster."""
    args = ["shim", "--listen=0.0.0.0:%d" % _int(settings["port"]), "--tls-cert=%s/tls.crt" % TLS_DIR,
            "--tls-key=%s/tls.key" % TLS_DIR, "--kubeconfig=%s/upstream.kubeconfig" % KUBECONFIG_DIR,
            "--log-level=%s" % settings["log_level"]]
    if _int(settings["metrics_port"]) > 0:
        args.append("--metrics-listen=0.0.0.0:%d" % _int(settings["metrics_port"]))
    groups = sorted((settings["extra_groups"] or {}).items(), key=lambda pair: str(pair[0]).lower())
    args.extend("--extra-group=%s=%s" % pair for pair in groups)
    return args + list(settings["extra_args"] or [])


def _probe(path, period):
    return {"httpGet": {"path": path, "port": "https", "scheme": "HTTPS"}, "periodSeconds": period,
            "timeoutSeconds": 2, "failureThreshold": 3}


def _pod_spec(settings, service_account):
    """A Pod spec's start for the shim and the exporter: the service account and the placement settings given."""
    pod = {"serviceAccountName": service_account, "automountServiceAccountToken": True}
    for key, setting in (("priorityClassName", "priority_class_name"), ("nodeSelector", "node_selector"),
                         ("tolerations", "tolerations")):
        if settings[setting]:
            pod[key] = settings[setting]
    return pod


def deployment(settings, cert_sha256):
    """The shim's Deployment; cert_sha256 in the Pod template rolls the Pods when the serving certificate changes."""
    ports = [{"name": "https", "containerPort": _int(settings["port"]), "protocol": "TCP"}]
    if _int(settings["metrics_port"]) > 0:
        ports.append({"name": "metrics", "containerPort": _int(settings["metrics_port"]), "protocol": "TCP"})
    pod = _pod_spec(settings, settings["name"])
    pod.update({
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                "labelSelector": {"matchLabels": selector_labels(settings)}}}]}},
        "containers": [{
            "name": CONTAINER_NAME,
            "image": settings["image"],
            "imagePullPolicy": settings["image_pull_policy"],
            "args": shim_args(settings),
            "ports": ports,
            "livenessProbe": _probe("/healthz", 10),
            "readinessProbe": _probe("/readyz", 5),
            "resources": settings["resources"],
            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
                                "capabilities": {"drop": ["ALL"]}},
            "volumeMounts": [{"name": "tls", "mountPath": TLS_DIR, "readOnly": True},
                             {"name": "kubeconfig", "mountPath": KUBECONFIG_DIR, "readOnly": True},
                             {"name": "tmp", "mountPath": "/tmp"}],
        }],
        "volumes": [{"name": "tls", "secret": {"secretName": settings["certificate_secret_name"]}},
                    {"name": "kubeconfig", "configMap": {"name": names(settings)["config_map"]}},
                    {"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}}],
    })
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _metadata(settings, settings["name"]),
            "spec": {"replicas": _int(settings["replicas"]), "selector": {"matchLabels": selector_labels(settings)},
                     "template": {"metadata": {"labels": labels(settings),
                                               "annotations": {SERVING_CERT_HASH_ANNOTATION: cert_sha256}},
                                  "spec": pod}}}


def monitoring_settings(settings):
    """What plugins/module_utils/monitoring.py renders the alerts and the scrape with, for this shim (the optional
    setting leaderless_alert_seconds: the role's private_capi_monitoring_leaderless_alert_seconds)."""
    watched = {"namespace": settings["namespace"], "shim_name": settings["name"],
               "exporter_name": names(settings)["exporter"], "rule_name": names(settings)["prometheus_rule"]}
    threshold = settings.get("leaderless_alert_seconds")
    if threshold not in (None, ""):
        try:
            seconds = float(threshold)
        except (TypeError, ValueError):
            seconds = -1.0
        if not 0 <= seconds < float("inf"):
            raise ShimSettingsError("private_capi_monitoring_leaderless_alert_seconds must be a number of seconds, 0 "
                                    "or more (got %r): fix that variable." % (threshold,))
        watched["leaderless_alert_seconds"] = seconds
    return watched


def _exporter_metadata(settings, name, namespaced=True):
    metadata = {"name": name}
    if namespaced:
        metadata["namespace"] = settings["namespace"]
    metadata["labels"] = monitoring.labels(monitoring_settings(settings))
    return metadata


def exporter_objects(settings):
    """The fleet exporter (private_capi_monitoring): its ServiceAccount, the ClusterRole that lists and watches
    HostedClusters and its binding, the Service of its /metrics, and its Deployment: one replica (two would double
    every series), apart from the shim's Pods so that it never touches the conversion webhook's readiness."""
    derived = names(settings)
    exporter, cluster_role = derived["exporter"], derived["exporter_cluster_role"]
    watched = monitoring_settings(settings)
    selector = monitoring.selector_labels(watched)
    http_probe = {"httpGet": {"path": "/healthz", "port": "metrics", "scheme": "HTTP"}, "periodSeconds": 10,
                  "timeoutSeconds": 2, "failureThreshold": 3}
    pod = _pod_spec(settings, exporter)
    pod.update({
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": EXPORTER_CONTAINER,
            "image": settings["image"],
            "imagePullPolicy": settings["image_pull_policy"],
            # in-cluster credentials: the client re-reads the service account's token as the kubelet rotates it
            "args": ["exporter", "--listen=0.0.0.0:%d" % EXPORTER_PORT, "--log-level=%s" % settings["log_level"]],
            "ports": [{"name": "metrics", "containerPort": EXPORTER_PORT, "protocol": "TCP"}],
            "livenessProbe": http_probe,
            "readinessProbe": dict(http_probe, httpGet=dict(http_probe["httpGet"], path="/readyz"), periodSeconds=5),
            "resources": settings["resources"],
            "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
                                "capabilities": {"drop": ["ALL"]}},
            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
        }],
        "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}}],
    })
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _exporter_metadata(settings, exporter)},
        {"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole",
         "metadata": _exporter_metadata(settings, cluster_role, False),
         "rules": [policy_rule(EXPORTER_HOSTEDCLUSTER_RULE)]},
        {"apiVersion": RBAC_API_VERSION, "kind": "ClusterRoleBinding",
         "metadata": _exporter_metadata(settings, cluster_role, False),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
         "subjects": [{"kind": "ServiceAccount", "name": exporter, "namespace": settings["namespace"]}]},
        {"apiVersion": "v1", "kind": "Service", "metadata": _exporter_metadata(settings, exporter),
         "spec": {"type": "ClusterIP", "selector": selector,
                  "ports": [{"name": "metrics", "protocol": "TCP", "port": EXPORTER_PORT, "targetPort": "metrics"}]}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _exporter_metadata(settings, exporter),
         "spec": {"replicas": 1, "selector": {"matchLabels": selector},
                  "template": {"metadata": {"labels": monitoring.labels(watched)}, "spec": pod}}},
    ]


def monitoring_objects(settings):
    """The PrometheusRule of the fleet's alerts, the ServiceMonitor of the exporter and the PodMonitor of the proxy
    sidecars (monitoring.coreos.com)."""
    watched = monitoring_settings(settings)
    return [monitoring.prometheus_rule(watched), monitoring.service_monitor(watched), monitoring.pod_monitor(watched)]


def _serves_monitoring(answers):
    return bool(answers["monitoring"].get("api_found"))


def _reference(obj):
    metadata = {"name": obj["metadata"]["name"]}
    if "namespace" in obj["metadata"]:
        metadata["namespace"] = obj["metadata"]["namespace"]
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": metadata}


def monitoring_made(settings, answers):
    """What private_capi_monitoring made, in the order it is removed (the Deployment first, the RBAC last): the
    exporter's objects when its Deployment was read, the monitoring objects where their API is served."""
    made = []
    if answers["exporter"].get("resources"):
        made = [_reference(obj) for obj in reversed(exporter_objects(settings))]
    if _serves_monitoring(answers):
        made = [_reference(obj) for obj in monitoring_objects(settings)] + made
    return made


def made_objects(settings):
    """What the role makes, in the order state=absent deletes it: the Deployment first (it stops serving), the RBAC
    last."""
    derived = names(settings)
    in_namespace = [("apps/v1", "Deployment", settings["name"]), ("policy/v1", "PodDisruptionBudget", settings["name"]),
                    ("v1", "Service", settings["service_name"]), ("v1", "ConfigMap", derived["config_map"]),
                    ("v1", "ConfigMap", derived["service_ca_config_map"]),
                    ("v1", "Secret", settings["certificate_secret_name"]), ("v1", "Secret", derived["ca_secret"]),
                    ("v1", "ServiceAccount", settings["name"])]
    objects = [{"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": settings["namespace"]}}
               for api_version, kind, name in in_namespace]
    return objects + [{"apiVersion": RBAC_API_VERSION, "kind": kind, "metadata": {"name": derived["cluster_role"]}}
                      for kind in ("ClusterRoleBinding", "ClusterRole")]


def cert_sha256(answers):
    """The serving_certificate module's hash of tls.crt, else the same hash of the service CA's Secret as read, else
    "" (check mode, or nothing issued yet)."""
    certificate = answers["certificate"]
    if "tls_crt_sha256" in certificate:
        return certificate["tls_crt_sha256"]
    resources = answers["service_ca_secret"].get("resources") or []
    if resources:
        return hashlib.sha256(base64.b64decode((resources[0].get("data") or {}).get("tls.crt") or "")).hexdigest()
    return ""


def _users(answers):
    """The names of the CRDs converting through the Service, or None when the module has not answered."""
    users = answers["users"]
    if "in_use" not in users:
        return None
    return [crd.get("name") for crd in users.get("crds") or []] if users["in_use"] else []


def manifests(settings, answers=None):
    """names, labels, apply (state=present), deployment (state=present, else None) and remove."""
    _checked(settings)
    answers = _answers(answers)
    if settings["state"] == "absent":
        remove = made_objects(settings) + monitoring_made(settings, answers) if _users(answers) == [] else []
        return dict(names=names(settings), labels=labels(settings), apply=[], deployment=None, remove=remove)
    single = _int(settings["replicas"]) == 1
    apply = access_objects(settings) + [service(settings, answers["certificate"].get("provider"))]
    if not single:
        apply.append(pod_disruption_budget(settings))
    # no PodDisruptionBudget for a single replica: minAvailable 1 would block every node drain
    remove = [{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": settings["name"], "namespace": settings["namespace"]}}] if single else []
    if settings["monitoring"]:
        apply.extend(exporter_objects(settings))
        if _serves_monitoring(answers):
            apply.extend(monitoring_objects(settings))
    else:  # turned off: what it made goes
        remove.extend(monitoring_made(settings, answers) if answers["exporter"].get("resources") else [])
    return dict(names=names(settings), labels=labels(settings), apply=apply,
                deployment=deployment(settings, cert_sha256(answers)), remove=remove)


def serving_secret_problem(settings, answers):
    """With OpenShift's service CA (not in check mode): what to check when its serving Secret was not found."""
    if answers["certificate"].get("provider") != "openshift" or settings["check_mode"]:
        return ""
    read = answers["service_ca_secret"]
    if read.get("resources"):
        return ""
    namespace, service_name = settings["namespace"], settings["service_name"]
    return ("Secret %s/%s does not exist %s s after Service %s/%s asked OpenShift's service CA for it (annotation %s). "
            "Check the service CA (`oc get clusteroperator service-ca`, `oc -n %s describe service %s`), or set "
            "private_capi_shim_certificate=generate. (%s)"
            % (namespace, settings["certificate_secret_name"], settings["wait_timeout"], namespace, service_name,
               SERVING_CERT_ANNOTATION, namespace, service_name, read.get("msg", "no error")))


def rollout_problem(settings, answers):
    """Not in check mode: what to check when the Deployment read after the wait is not updated and available in every
    replica (the private CRDs must not name a webhook that does not answer)."""
    if settings["check_mode"]:
        return ""
    read = answers["rollout"]
    live = (read.get("resources") or [{"metadata": {"generation": -1}}])[0]
    status = live.get("status") or {}
    replicas = _int(settings["replicas"])
    if (status.get("observedGeneration", 0) == (live.get("metadata") or {}).get("generation")
            and status.get("updatedReplicas", 0) == replicas and status.get("availableReplicas", 0) == replicas):
        return ""
    namespace, name = settings["namespace"], settings["name"]
    conditions = "; ".join("%s: %s" % (condition.get("type"), condition.get("message"))
                           for condition in status.get("conditions") or [])
    return ("Deployment %s/%s is not Available after %s s (%s of %s replicas available, %s updated; conditions %s). "
            "Check `kubectl -n %s get pods -l app.kubernetes.io/instance=%s` and `kubectl -n %s describe deployment "
            "%s`: the image %s must be pullable, the Secret %s must exist, and the probes on port %s must answer (the "
            "Pods' logs say why not). The private CRDs were not changed. (%s)"
            % (namespace, name, settings["wait_timeout"], status.get("availableReplicas", 0), settings["replicas"],
               status.get("updatedReplicas", 0), conditions, namespace, name, namespace, name, settings["image"],
               settings["certificate_secret_name"], settings["port"], read.get("msg", "no error")))


def _stays(settings, users):
    """(refused, message): whether state=absent must fail because CRDs convert through the Service, and why the
    shim stays ("" when it goes)."""
    if not users:
        return False, ""
    namespace, service_name, listed = settings["namespace"], settings["service_name"], ", ".join(users)
    if not settings["keep_when_in_use"]:
        return True, (
            "The conversion shim stays: CRDs %s convert through Service %s/%s, and without it every read of their "
            "objects at another version fails. Remove those CRDs first (the private twins with "
            "hypershift.private_capi.private_crd_render from_cluster=true state=absent wait=true, which refuses while "
            "a private object remains), or point their conversion elsewhere, then re-run. Nothing was removed."
            % (listed, namespace, service_name))
    return False, ("The conversion shim in %s stays: %d CRDs convert through Service %s (%s). It goes once they do "
                   "(docs/rollback.md)." % (namespace, len(users), service_name, listed))


def result(settings, answers):
    """The fact private_capi_shim_result: where the shim answers and which CA verifies it (state=present), or
    whether it is gone or stays, and for which CRDs (state=absent)."""
    common = {"namespace": settings["namespace"], "service_name": settings["service_name"],
              "service_port": _int(settings["service_port"]), "service_path": settings["path"],
              "deployment": settings["name"]}
    if settings["state"] == "absent":
        users = _users(answers) or []
        return dict(common, state="kept" if users else "absent", in_use_by=users)
    certificate = answers["certificate"]
    return dict(common, state="present", provider=certificate.get("provider"),
                provider_reason=certificate.get("provider_reason"), ca_bundle=certificate.get("ca_bundle"),
                ca_bundle_base64=certificate.get("ca_bundle_base64"), in_use_by=[])


def outcome(settings, answers=None):
    """settings_problem, serving_secret_problem, rollout_problem, refused and stays (state=absent) and result; each
    problem is "" when there is none. With a settings problem, nothing else is judged."""
    problem = settings_problem(settings)
    if problem:
        return dict(settings_problem=problem, serving_secret_problem="", rollout_problem="", refused=False, stays="",
                    result={})
    answers = _answers(answers)
    refused, stays = _stays(settings, _users(answers) if settings["state"] == "absent" else None)
    present = settings["state"] == "present"
    return dict(settings_problem="",
                serving_secret_problem=serving_secret_problem(settings, answers) if present else "",
                rollout_problem=rollout_problem(settings, answers) if present else "",
                refused=refused, stays=stays, result=result(settings, answers))
