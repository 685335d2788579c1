"""Resource registry: the built-in resources and the ones CustomResourceDefinitions define.

One ResourceType per group+resource; it lists the versions served (a CRD may serve several, objects
are stored in the storage version and converted on read).
"""
import logging
import re
from dataclasses import dataclass, field

LOG = logging.getLogger("kubeapi.registry")

STANDARD_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
CREATE_ONLY = ["create"]


@dataclass
class VersionInfo:
    name: str
    served: bool = True
    storage: bool = True
    raw_schema: dict = None          # openAPIV3Schema (CRDs)
    schema: object = None            # schema.StructuralSchema (CRDs, when schema.py is available)
    typeinfo: object = None          # typeinfo.TypeInfo (CRDs, when typeinfo.py is available)
    status: bool = False             # status subresource declared
    scale: dict = None               # {specReplicasPath, statusReplicasPath, labelSelectorPath}
    printer_columns: list = None     # additionalPrinterColumns (CRDs)
    deprecated: bool = False
    deprecation_warning: str = None
    raw: dict = None                 # the CRD's spec.versions[] entry


@dataclass
class ResourceType:
    group: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    versions: list                   # [VersionInfo], served ones in priority order first
    short_names: list = field(default_factory=list)
    categories: list = field(default_factory=list)
    verbs: list = field(default_factory=lambda: list(STANDARD_VERBS))
    subresources: set = field(default_factory=set)   # built-ins: {"status", "scale", "token", "finalize"}
    builtin: bool = True
    crd_name: str = ""
    list_kind: str = ""
    storage_group_resource: tuple = None  # share storage with another resource (events.k8s.io events)
    allow_create_on_update: bool = False
    allow_unconditional_update: bool = True
    tracks_generation: bool = False
    name_rule: str = "subdomain"     # subdomain | label | dns1035 | path | crd
    conversion: dict = None          # CRD spec.conversion

    def __post_init__(self):
        if not self.list_kind:
            self.list_kind = self.kind + "List"
        if self.storage_group_resource is None:
            self.storage_group_resource = (self.group, self.plural)

    @property
    def group_resource(self):
        return (self.group, self.plural)

    def version(self, name):
        for info in self.versions:
            if info.name == name and info.served:
                return info
        return None

    @property
    def storage_version(self):
        for info in self.versions:
            if info.storage:
                return info.name
        return self.versions[0].name

    @property
    def served_versions(self):
        return [v for v in self.versions if v.served]

    @property
    def preferred_version(self):
        return self.served_versions[0].name

    def has_status(self, version):
        info = self.version(version) or self.versions[0]
        return "status" in self.subresources if self.builtin else info.status

    def scale_paths(self, version):
        if self.builtin:
            if "scale" in self.subresources:
                return {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.selector"}
            return None
        info = self.version(version) or self.versions[0]
        return info.scale

    def api_version(self, version):
        return "%s/%s" % (self.group, version) if self.group else version


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority_key(name):
    """Kube-aware version order: GA > beta > alpha, higher numbers first, then others alphabetically."""
    match = _VERSION_RE.match(name)
    if not match:
        return (3, 0, 0, name)
    major = int(match.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    minor = int(match.group(3) or 0)
    return (stage, -major, -minor, name)


def _builtin(group, version, kind, plural, short=(), namespaced=True, subresources=(), categories=(),
             verbs=None, **extra):
    return ResourceType(group=group, kind=kind, plural=plural, singular=kind.lower(), namespaced=namespaced,
                        versions=[VersionInfo(version)], short_names=list(short), categories=list(categories),
                        verbs=list(verbs or STANDARD_VERBS), subresources=set(subresources), **extra)


RBAC = "rbac.authorization.k8s.io"
NO_WATCH_VERBS = ["create", "delete", "get", "list", "patch", "update"]


def builtin_types():
    return [
        _builtin("", "v1", "Namespace", "namespaces", ["ns"], False, ["status", "finalize"],
                 verbs=["create", "delete", "get", "list", "patch", "update", "watch"], name_rule="label"),
        _builtin("", "v1", "ConfigMap", "configmaps", ["cm"]),
        _builtin("", "v1", "Secret", "secrets"),
        _builtin("", "v1", "ServiceAccount", "serviceaccounts", ["sa"], subresources=["token"]),
        _builtin("", "v1", "Service", "services", ["svc"], subresources=["status"], categories=["all"],
                 verbs=["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                 name_rule="dns1035", allow_create_on_update=True),
        _builtin("", "v1", "Event", "events", ["ev"], allow_create_on_update=True, name_rule="event"),
        _builtin("", "v1", "Pod", "pods", ["po"], subresources=["status"], categories=["all"]),
        _builtin("apps", "v1", "Deployment", "deployments", ["deploy"], subresources=["status", "scale"],
                 categories=["all"], tracks_generation=True),
        _builtin(RBAC, "v1", "Role", "roles", allow_create_on_update=True, name_rule="path"),
        _builtin(RBAC, "v1", "RoleBinding", "rolebindings", allow_create_on_update=True, name_rule="path"),
        _builtin(RBAC, "v1", "ClusterRole", "clusterroles", namespaced=False, allow_create_on_update=True,
                 name_rule="path"),
        _builtin(RBAC, "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False,
                 allow_create_on_update=True, name_rule="path"),
        _builtin("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
                 ["crd", "crds"], False, ["status"], ["api-extensions"], tracks_generation=True,
                 allow_unconditional_update=False, name_rule="crd"),
        _builtin("coordination.k8s.io", "v1", "Lease", "leases", allow_create_on_update=True),
        _builtin("events.k8s.io", "v1", "Event", "events", ["ev"], allow_create_on_update=True,
                 storage_group_resource=("", "events"), name_rule="event"),
        _builtin("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", namespaced=False,
                 verbs=CREATE_ONLY),
        _builtin("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", namespaced=False, verbs=CREATE_ONLY),
        _builtin("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews",
                 namespaced=False, verbs=CREATE_ONLY),
        _builtin("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews",
                 namespaced=False, verbs=CREATE_ONLY),
        _builtin("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews",
                 namespaced=False, verbs=CREATE_ONLY),
        _builtin("authorization.k8s.io", "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews",
                 namespaced=True, verbs=CREATE_ONLY),
    ]


# the order real clusters list their groups in discovery (CRD groups follow, sorted)
BUILTIN_GROUP_ORDER = ["", "apps", "events.k8s.io", "authentication.k8s.io", "authorization.k8s.io",
                       RBAC, "coordination.k8s.io", "apiextensions.k8s.io"]
VIRTUAL_RESOURCES = {("authentication.k8s.io", "selfsubjectreviews"), ("authentication.k8s.io", "tokenreviews"),
                     ("authorization.k8s.io", "selfsubjectaccessreviews"),
                     ("authorization.k8s.io", "selfsubjectrulesreviews"),
                     ("authorization.k8s.io", "subjectaccessreviews"),
                     ("authorization.k8s.io", "localsubjectaccessreviews")}


class Registry:
    """Lookup of resource types by group/version/resource, by kind, and by the CRD that defines them."""

    def __init__(self, schema_module=None, typeinfo_module=None):
        self._schema_module = schema_module
        self._typeinfo_module = typeinfo_module
        self.types = {}          # (group, plural) -> ResourceType
        self.generation = 0      # bumped on every change (discovery caches key on it)
        for rtype in builtin_types():
            self.types[rtype.group_resource] = rtype

    def lookup(self, group, version, plural):
        rtype = self.types.get((group, plural))
        if rtype is None or rtype.version(version) is None:
            return None
        return rtype

    def by_kind(self, group, kind):
        for rtype in self.types.values():
            if rtype.group == group and rtype.kind == kind:
                return rtype
        return None

    def by_storage(self, group_resource):
        return self.types.get(group_resource)

    def groups(self):
        """{group: [versions in priority order]} for every group served."""
        result = {}
        for rtype in self.types.values():
            versions = result.setdefault(rtype.group, [])
            for info in rtype.served_versions:
                if info.name not in versions:
                    versions.append(info.name)
        for group, versions in result.items():
            versions.sort(key=version_priority_key)
        ordered = {g: result[g] for g in BUILTIN_GROUP_ORDER if g in result}
        for group in sorted(g for g in result if g not in ordered):
            ordered[group] = result[group]
        return ordered

    def resources_in(self, group, version):
        return [rt for rt in self.types.values() if rt.group == group and rt.version(version) is not None]

    # --- CRDs -------------------------------------------------------------------------------------
    def crd_conflicts(self, crd):
        """Names already taken by another resource (NamesAccepted=False reasons), or ""."""
        spec = crd.get("spec", {})
        names = spec.get("names", {})
        group = spec.get("group", "")
        existing = self.types.get((group, names.get("plural")))
        if existing is not None and (existing.builtin or existing.crd_name != crd["metadata"]["name"]):
            return '"%s" is already in use' % names.get("plural")
        for rtype in self.types.values():
            if rtype.group != group or rtype.crd_name == crd["metadata"]["name"]:
                continue
            if names.get("kind") == rtype.kind:
                return '"%s" is already in use' % names.get("kind")
        return ""

    def register_crd(self, crd):
        """Serve (or re-serve) the resources of a CRD; returns the ResourceType."""
        spec = crd.get("spec", {})
        names = spec.get("names", {})
        versions = []
        for entry in spec.get("versions", []):
            raw_schema = (entry.get("schema") or {}).get("openAPIV3Schema")
            subresources = entry.get("subresources") or {}
            info = VersionInfo(name=entry["name"], served=bool(entry.get("served", True)),
                               storage=bool(entry.get("storage", False)), raw_schema=raw_schema,
                               status="status" in subresources, scale=subresources.get("scale"),
                               printer_columns=entry.get("additionalPrinterColumns"),
                               deprecated=bool(entry.get("deprecated")),
                               deprecation_warning=entry.get("deprecationWarning"), raw=entry)
            if raw_schema is not None and self._schema_module is not None:
                try:
                    info.schema = self._schema_module.StructuralSchema(raw_schema)
                except Exception:  # a broken schema engine must not take the CRD down
                    LOG.exception("schema engine failed on %s version %s", crd["metadata"]["name"], info.name)
            if raw_schema is not None and self._typeinfo_module is not None:
                try:
                    info.typeinfo = self._typeinfo_module.TypeInfo.for_crd_schema(raw_schema)
                except Exception:
                    LOG.exception("typeinfo failed on %s version %s", crd["metadata"]["name"], info.name)
            versions.append(info)
        versions.sort(key=lambda v: version_priority_key(v.name))
        rtype = ResourceType(group=spec.get("group", ""), kind=names.get("kind", ""), plural=names.get("plural", ""),
                             singular=names.get("singular") or names.get("kind", "").lower(),
                             namespaced=spec.get("scope", "Namespaced") == "Namespaced", versions=versions,
                             short_names=list(names.get("shortNames") or []),
                             categories=list(names.get("categories") or []), builtin=False,
                             crd_name=crd["metadata"]["name"], list_kind=names.get("listKind") or "",
                             allow_unconditional_update=False, tracks_generation=True,
                             conversion=spec.get("conversion"))
        self.types[rtype.group_resource] = rtype
        self.generation += 1
        return rtype

    def unregister_crd(self, crd_name):
        for key, rtype in list(self.types.items()):
            if rtype.crd_name == crd_name:
                del self.types[key]
                self.generation += 1
                return rtype
        return None

    def crd_types(self):
        return [rt for rt in self.types.values() if not rt.builtin]
