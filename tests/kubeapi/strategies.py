"""Per-kind behaviour of the built-in resources: defaults on create, validation, generation tracking.

Deliberately a subset of the real strategies: the defaults and checks clients of this collection see.
"""
import base64
import binascii
import ipaddress
import itertools

from . import errors
from .validation import config_key, dns1123_label, dns1123_subdomain

_cluster_ips = itertools.count(10)
_node_ports = itertools.cycle(range(30000, 32768))


def _container_defaults(container):
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    image = container.get("image", "")
    tag = image.rsplit("/", 1)[-1]
    if "imagePullPolicy" not in container:
        container["imagePullPolicy"] = "Always" if (":" not in tag or tag.endswith(":latest")) and "@" not in tag \
            else "IfNotPresent"
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        port.setdefault("protocol", "TCP")


def pod_spec_defaults(spec):
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if isinstance(container, dict):
            _container_defaults(container)


def _validate_pod_spec(spec, path):
    causes = []
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not containers:
        causes.append(errors.field_required(path + ".containers", ""))
        return causes
    seen = set()
    for index, container in enumerate(containers):
        cpath = "%s.containers[%d]" % (path, index)
        name = container.get("name", "")
        if not name:
            causes.append(errors.field_required(cpath + ".name", ""))
        else:
            causes.extend(errors.field_invalid(cpath + ".name", name, m) for m in dns1123_label(name))
            if name in seen:
                causes.append(errors.field_duplicate(cpath + ".name", name))
            seen.add(name)
        if not container.get("image"):
            causes.append(errors.field_required(cpath + ".image", ""))
    return causes


def _selector_matches(selector, labels):
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def prepare_create(rtype, obj):
    """Defaults and status reset on create (mutates obj, a private copy)."""
    kind, group = rtype.kind, rtype.group
    name = obj["metadata"].get("name", "")
    if group == "" and kind == "Namespace":
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj["status"] = {"phase": "Active"}
    elif group == "" and kind == "Secret":
        obj.setdefault("type", "Opaque")
        string_data = obj.pop("stringData", None) or {}
        if string_data:
            data = obj.setdefault("data", {}) or {}
            for key, value in string_data.items():
                data[key] = base64.b64encode(str(value).encode()).decode()
            obj["data"] = data
    elif group == "" and kind == "Service":
        spec = obj.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        if spec["type"] != "ExternalName" and not spec.get("clusterIP"):
            number = next(_cluster_ips)
            spec["clusterIP"] = str(ipaddress.IPv4Address("10.96.0.0") + number)
        if spec.get("clusterIP"):
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        for port in spec.get("ports") or []:
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
            if spec["type"] in ("NodePort", "LoadBalancer") and not port.get("nodePort"):
                port["nodePort"] = next(_node_ports)   # the service-node-port-range allocator
        if spec["type"] in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
        if spec["type"] == "LoadBalancer":
            spec.setdefault("allocateLoadBalancerNodePorts", True)
        obj["status"] = {"loadBalancer": {}}
    elif group == "" and kind == "Pod":
        pod_spec_defaults(obj.setdefault("spec", {}))
        obj["spec"].setdefault("serviceAccountName", "default")
        obj["spec"].setdefault("serviceAccount", obj["spec"]["serviceAccountName"])
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    elif group == "apps" and kind == "Deployment":
        spec = obj.setdefault("spec", {})
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        strategy = spec.setdefault("strategy", {"type": "RollingUpdate"})
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            strategy["type"] = "RollingUpdate"
            rolling = strategy.setdefault("rollingUpdate", {})
            rolling.setdefault("maxUnavailable", "25%")
            rolling.setdefault("maxSurge", "25%")
        template = spec.setdefault("template", {})
        template.setdefault("metadata", {}).setdefault("creationTimestamp", None)
        pod_spec_defaults(template.setdefault("spec", {}))
        obj["status"] = {}
    elif group == "apiextensions.k8s.io":
        spec = obj.setdefault("spec", {})
        spec.setdefault("conversion", {"strategy": "None"})
        names = spec.setdefault("names", {})
        if names.get("kind"):
            names.setdefault("singular", names["kind"].lower())
            names.setdefault("listKind", names["kind"] + "List")
        obj["status"] = {}
    return obj


def prepare_update(rtype, obj, old):
    if rtype.group == "" and rtype.kind == "Namespace":
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        obj["spec"] = old.get("spec", {})   # spec.finalizers only changes through /finalize
    elif rtype.group == "" and rtype.kind == "Secret":
        string_data = obj.pop("stringData", None) or {}
        if string_data:
            data = obj.setdefault("data", {}) or {}
            for key, value in string_data.items():
                data[key] = base64.b64encode(str(value).encode()).decode()
            obj["data"] = data
    elif rtype.group == "apps" and rtype.kind == "Deployment":
        template = obj.setdefault("spec", {}).setdefault("template", {})
        template.setdefault("metadata", {}).setdefault("creationTimestamp", None)
        pod_spec_defaults(template.setdefault("spec", {}))
    return obj


def validate(rtype, obj, old):
    """Causes (field errors) for a built-in object."""
    kind, group = rtype.kind, rtype.group
    causes = []
    if group == "" and kind in ("ConfigMap", "Secret"):
        for field in ("data", "binaryData"):
            values = obj.get(field) or {}
            if not isinstance(values, dict):
                causes.append(errors.field_invalid(field, values, "must be a map"))
                continue
            for key, value in values.items():
                causes.extend(errors.field_invalid("%s[%s]" % (field, key), key, m) for m in config_key(key))
                if kind == "Secret" or field == "binaryData":
                    try:
                        base64.b64decode(value or "", validate=True)
                    except (binascii.Error, TypeError, ValueError):
                        raise errors.bad_request("illegal base64 data at input byte 0")
        if old is not None and old.get("immutable") and (obj.get("data") != old.get("data")
                                                         or obj.get("binaryData") != old.get("binaryData")):
            causes.append(errors.field_forbidden("data", "field is immutable when `immutable` is set"))
    elif group == "" and kind == "Pod":
        causes.extend(_validate_pod_spec(obj.get("spec") or {}, "spec"))
    elif group == "apps" and kind == "Deployment":
        spec = obj.get("spec") or {}
        selector = spec.get("selector")
        template = spec.get("template") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        if not selector:
            causes.append(errors.field_required("spec.selector", ""))
        else:
            if not (selector.get("matchLabels") or selector.get("matchExpressions")):
                causes.append(errors.field_invalid("spec.selector", selector, "empty selector is invalid for "
                                                   "deployment"))
            elif not _selector_matches(selector, labels):
                causes.append(errors.field_invalid("spec.template.metadata.labels", labels,
                                                   "`selector` does not match template `labels`"))
            if old is not None and (old.get("spec") or {}).get("selector") != selector:
                causes.append(errors.field_invalid("spec.selector", selector, "field is immutable"))
        replicas = spec.get("replicas", 1)
        if isinstance(replicas, int) and replicas < 0:
            causes.append(errors.field_invalid("spec.replicas", replicas,
                                               "must be greater than or equal to 0"))
        causes.extend(_validate_pod_spec(template.get("spec") or {}, "spec.template.spec"))
    elif group == "apiextensions.k8s.io":
        causes.extend(validate_crd(obj, old))
    elif group == "rbac.authorization.k8s.io" and kind in ("RoleBinding", "ClusterRoleBinding"):
        role_ref = obj.get("roleRef") or {}
        if not role_ref.get("name"):
            causes.append(errors.field_required("roleRef.name", ""))
        if old is not None and (old.get("roleRef") or {}) != role_ref:
            causes.append(errors.field_invalid("roleRef", role_ref, "cannot change roleRef"))
    return causes


def validate_crd(obj, old):
    causes = []
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    name = obj["metadata"].get("name", "")
    if name != "%s.%s" % (names.get("plural", ""), group):
        causes.append(errors.field_invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        causes.append(errors.field_required("spec.group", ""))
    elif "." not in group:
        causes.append(errors.field_invalid("spec.group", group, "should be a domain with at least one dot"))
    else:
        causes.extend(errors.field_invalid("spec.group", group, m) for m in dns1123_subdomain(group))
    for field in ("plural", "kind", "listKind", "singular"):
        if field in ("plural", "kind") and not names.get(field):
            causes.append(errors.field_required("spec.names." + field, ""))
    if names.get("plural"):
        causes.extend(errors.field_invalid("spec.names.plural", names["plural"], m)
                      for m in dns1123_label(names["plural"]))
    scope = spec.get("scope")
    if scope not in ("Namespaced", "Cluster"):
        causes.append(errors.field_not_supported("spec.scope", scope, ["Cluster", "Namespaced"]))
    versions = spec.get("versions") or []
    if not versions:
        causes.append(errors.field_invalid("spec.versions", versions, "must have exactly one version marked as "
                                           "storage version"))
    storage = [v for v in versions if v.get("storage")]
    if versions and len(storage) != 1:
        causes.append(errors.field_invalid("spec.versions", [v.get("name") for v in versions],
                                           "must have exactly one version marked as storage version"))
    seen = set()
    for index, version in enumerate(versions):
        if version.get("name") in seen:
            causes.append(errors.field_invalid("spec.versions[%d].name" % index, version.get("name"),
                                               "must be unique"))
        seen.add(version.get("name"))
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema is None:
            causes.append(errors.field_required("spec.versions[%d].schema.openAPIV3Schema" % index,
                                                "schemas are required"))
    if old is not None:
        old_spec = old.get("spec") or {}
        if old_spec.get("group") != group:
            causes.append(errors.field_invalid("spec.group", group, "field is immutable"))
        if old_spec.get("scope") != scope:
            causes.append(errors.field_invalid("spec.scope", scope, "field is immutable"))
    return causes


def spec_of(rtype, obj):
    """The part of an object whose change bumps metadata.generation."""
    rest = {k: v for k, v in obj.items() if k not in ("metadata", "apiVersion", "kind")}
    if rtype.builtin or rtype.has_status(obj.get("apiVersion", "").rsplit("/", 1)[-1]):
        rest.pop("status", None)
    return rest
