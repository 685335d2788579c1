"""Per-type list and map semantics, as strategic-merge-patch and server-side apply need them.

A TypeInfo is a tree of Nodes describing, per path, whether a value is a struct (declared fields),
a map (granular or atomic), a list (atomic, set, or map keyed by fields), or a scalar, plus the
strategic-merge-patch strategy (patchStrategy / patchMergeKey struct tags of k8s.io/api).

- `TypeInfo.for_crd_schema(openAPIV3Schema)`: built from the structural schema like
  structured-merge-diff does for CRDs (lists are atomic unless x-kubernetes-list-type says set/map;
  objects with `properties` are structs, with `additionalProperties` maps; x-kubernetes-map-type;
  preserve-unknown-fields subtrees are "deduced": maps granular, lists atomic).
- `TypeInfo.for_builtin(group, kind)`: a hand-written table for the built-ins the local server
  serves, taken from the Go types' tags (+listType/+listMapKey/+mapType, patchStrategy/patchMergeKey).
  Parts the table does not describe are deduced (maps granular, lists atomic), which is what
  structured-merge-diff does for untagged lists of built-in types.

Pure data; no I/O.
"""
import json

ANY = "any"        # type deduced from the value: dict -> granular map, list -> atomic list, else scalar
OBJECT = "object"  # struct (declared fields) and/or map (values)
LIST = "list"
SCALAR = "scalar"


class Node:
    """Semantics of the value at one path."""

    __slots__ = ("kind", "fields", "values", "items", "list_type", "list_keys", "key_defaults", "map_type",
                 "patch_strategy", "merge_key", "preserve_unknown")

    def __init__(self, kind, fields=None, values=None, items=None, list_type="atomic", list_keys=(),
                 key_defaults=None, map_type="granular", patch_strategy=(), merge_key=None, preserve_unknown=False):
        self.kind = kind
        self.fields = fields or {}
        self.values = values
        self.items = items
        self.list_type = list_type
        self.list_keys = tuple(list_keys)
        self.key_defaults = key_defaults or {}
        self.map_type = map_type
        self.patch_strategy = tuple(patch_strategy)
        self.merge_key = merge_key
        self.preserve_unknown = preserve_unknown

    def child(self, name):
        """The node of field/map key `name` (deduced when undeclared)."""
        if self.kind == OBJECT:
            found = self.fields.get(name)
            if found is not None:
                return found
            if self.values is not None:
                return self.values
        return ANY_NODE

    def item(self):
        """The node of list items."""
        if self.kind == LIST and self.items is not None:
            return self.items
        return ANY_NODE

    def is_struct_field(self, name):
        return self.kind == OBJECT and name in self.fields

    def resolve(self, value):
        """This node, or the node deduced from `value` when the type is not declared."""
        if self.kind != ANY:
            return self
        if isinstance(value, dict):
            return ANY_MAP
        if isinstance(value, list):
            return ANY_LIST
        return SCALAR_NODE

    def __repr__(self):
        return "Node(%s, list_type=%s, keys=%s, fields=%s)" % (self.kind, self.list_type, self.list_keys,
                                                               sorted(self.fields))


ANY_NODE = Node(ANY)
SCALAR_NODE = Node(SCALAR)
ANY_MAP = Node(OBJECT, values=ANY_NODE)
ANY_LIST = Node(LIST, items=ANY_NODE)


class TypeInfo:
    """Root node plus lookup helpers. Build with for_crd_schema() or for_builtin()."""

    def __init__(self, root, name=""):
        self.root = root
        self.name = name

    def node_at(self, path):
        """Node at a path given as a sequence of field names and list markers (int or None = an item)."""
        node = self.root
        for step in path:
            if isinstance(step, int) or step is None:
                node = node.item()
            else:
                node = node.child(step)
        return node

    _crd_cache = {}

    @classmethod
    def for_crd_schema(cls, openapi_v3_schema):
        """TypeInfo of a CRD version's openAPIV3Schema (cached per schema object)."""
        key = id(openapi_v3_schema)
        cached = cls._crd_cache.get(key)
        if cached is not None and cached[0] is openapi_v3_schema:
            return cached[1]
        root = _crd_node(openapi_v3_schema or {}, is_root=True)
        info = cls(root, "crd")
        if len(cls._crd_cache) > 512:  # bounded: schemas of deleted CRDs must not pile up
            cls._crd_cache.clear()
        cls._crd_cache[key] = (openapi_v3_schema, info)
        return info

    @classmethod
    def for_builtin(cls, group, kind):
        """TypeInfo of a built-in kind; unknown kinds get ObjectMeta plus deduced types."""
        root = _BUILTIN.get((group or "", kind))
        if root is None:
            root = _obj({"metadata": OBJECT_META}, values=ANY_NODE)
        return cls(root, "%s/%s" % (group, kind) if group else kind)

    @staticmethod
    def builtin_kinds():
        return sorted(_BUILTIN)


def list_item_key(node, item):
    """Identity of a list item for merging: ('k', key-json) for list-maps, ('v', value-json) for sets.

    Missing key fields fall back to the declared default (e.g. ports[].protocol "TCP"), as
    structured-merge-diff does; an item missing a key field without default gets None (not addressable).
    """
    if node.list_type == "map" and node.list_keys:
        if not isinstance(item, dict):
            return None
        key = {}
        for field in node.list_keys:
            if field in item:
                key[field] = item[field]
            elif field in node.key_defaults:
                key[field] = node.key_defaults[field]
            else:
                return None
        return ("k", json.dumps(key, sort_keys=True, separators=(",", ":")))
    return ("v", json.dumps(item, sort_keys=True, separators=(",", ":")))


# ---------------------------------------------------------------------------------------------
# CRD schemas

def _crd_node(schema, is_root=False, embedded=False):
    if not isinstance(schema, dict):
        return ANY_NODE
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    embedded = embedded or bool(schema.get("x-kubernetes-embedded-resource"))
    stype = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        return SCALAR_NODE
    if stype == "array":
        items = _crd_node(schema.get("items") or {})
        list_type = schema.get("x-kubernetes-list-type") or "atomic"
        keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
        key_defaults = {}
        item_props = (schema.get("items") or {}).get("properties") or {}
        for field in keys:
            if "default" in (item_props.get(field) or {}):
                key_defaults[field] = item_props[field]["default"]
        return Node(LIST, items=items, list_type=list_type, list_keys=keys, key_defaults=key_defaults)
    props = schema.get("properties")
    addl = schema.get("additionalProperties")
    if stype == "object" or props is not None or addl is not None or is_root or embedded:
        fields = {name: _crd_node(sub) for name, sub in (props or {}).items()}
        if is_root or embedded:
            fields["metadata"] = OBJECT_META
        values = None
        if isinstance(addl, dict):
            values = _crd_node(addl)
        elif addl is True or preserve or (props is None and not fields):
            values = ANY_NODE
        map_type = schema.get("x-kubernetes-map-type") or "granular"
        return Node(OBJECT, fields=fields, values=values, map_type=map_type, preserve_unknown=preserve)
    if preserve:
        return ANY_NODE
    return SCALAR_NODE if stype else ANY_NODE


# ---------------------------------------------------------------------------------------------
# Built-in table (k8s.io/api tags)

def _obj(fields=None, values=None, map_type="granular", strategy=()):
    return Node(OBJECT, fields=fields, values=values if values is not None else ANY_NODE, map_type=map_type,
                patch_strategy=strategy)


def _struct(fields=None, strategy=()):
    """A Go struct: declared fields; unknown ones deduced."""
    return _obj(fields, strategy=strategy)


def _map(values=SCALAR_NODE, map_type="granular"):
    return Node(OBJECT, values=values, map_type=map_type)


def _atomic(items=ANY_NODE):
    return Node(LIST, items=items, list_type="atomic")


def _list_map(items, keys, merge_key=None, strategy=("merge",), key_defaults=None):
    """+listType=map with patchStrategy (merge by default) and patchMergeKey (first key by default)."""
    return Node(LIST, items=items, list_type="map", list_keys=keys, key_defaults=key_defaults,
                patch_strategy=strategy, merge_key=merge_key or keys[0])


def _set(strategy=("merge",)):
    return Node(LIST, items=SCALAR_NODE, list_type="set", patch_strategy=strategy)


OWNER_REFERENCE = _struct({"apiVersion": SCALAR_NODE, "kind": SCALAR_NODE, "name": SCALAR_NODE,
                           "uid": SCALAR_NODE, "controller": SCALAR_NODE, "blockOwnerDeletion": SCALAR_NODE})
OBJECT_META = _struct({
    "labels": _map(), "annotations": _map(),
    "finalizers": _set(),                                        # patchStrategy=merge, +listType=set
    "ownerReferences": _list_map(OWNER_REFERENCE, ("uid",)),     # patchMergeKey=uid, +listMapKey=uid
    "managedFields": _atomic(),
})
CONDITIONS = _list_map(_struct(), ("type",))                     # patchMergeKey=type, +listMapKey=type
LABEL_SELECTOR = Node(OBJECT, fields={"matchLabels": _map(), "matchExpressions": _atomic()}, values=ANY_NODE,
                      map_type="atomic")  # +structType=atomic

CONTAINER = _struct({
    "command": _atomic(), "args": _atomic(), "envFrom": _atomic(),
    "ports": _list_map(_struct(), ("containerPort", "protocol"), merge_key="containerPort",
                       key_defaults={"protocol": "TCP"}),
    "env": _list_map(_struct(), ("name",)),
    "volumeMounts": _list_map(_struct(), ("mountPath",)),
    "volumeDevices": _list_map(_struct(), ("devicePath",)),
    "resizePolicy": _atomic(),
    "resources": _struct({"limits": _map(), "requests": _map(), "claims": _list_map(_struct(), ("name",),
                                                                                    strategy=())}),
})
VOLUME = _struct(strategy=("retainKeys",))
POD_SPEC = _struct({
    "containers": _list_map(CONTAINER, ("name",)),
    "initContainers": _list_map(CONTAINER, ("name",)),
    "ephemeralContainers": _list_map(CONTAINER, ("name",)),
    "volumes": _list_map(VOLUME, ("name",), strategy=("merge", "retainKeys")),
    "imagePullSecrets": _list_map(_struct(), ("name",)),
    "hostAliases": _list_map(_struct({"hostnames": _atomic()}), ("ip",)),
    "tolerations": _atomic(),
    "topologySpreadConstraints": _list_map(_struct(), ("topologyKey", "whenUnsatisfiable"),
                                           merge_key="topologyKey"),
    "schedulingGates": _list_map(_struct(), ("name",)),
    "resourceClaims": _list_map(_struct(), ("name",), strategy=("merge", "retainKeys")),
    "readinessGates": _atomic(),
    "nodeSelector": _map(map_type="atomic"),                     # +mapType=atomic
    "dnsConfig": _struct({"nameservers": _atomic(), "searches": _atomic(), "options": _atomic()}),
})
POD_STATUS = _struct({
    "conditions": CONDITIONS,
    "podIPs": _list_map(_struct(), ("ip",)),
    "hostIPs": _list_map(_struct(), ("ip",)),
    "containerStatuses": _atomic(), "initContainerStatuses": _atomic(), "ephemeralContainerStatuses": _atomic(),
})
POD_TEMPLATE = _struct({"metadata": OBJECT_META, "spec": POD_SPEC})


def _kind(spec=None, status=None, **top):
    fields = {"metadata": OBJECT_META}
    if spec is not None:
        fields["spec"] = spec
    if status is not None:
        fields["status"] = status
    fields.update(top)
    return _struct(fields)


POLICY_RULES = _atomic(_struct({"apiGroups": _atomic(), "resources": _atomic(), "verbs": _atomic(),
                                "resourceNames": _atomic(), "nonResourceURLs": _atomic()}))

_BUILTIN = {
    ("", "Pod"): _kind(POD_SPEC, POD_STATUS),
    ("", "Namespace"): _kind(_struct({"finalizers": _atomic()}), _struct({"conditions": CONDITIONS})),
    ("", "ConfigMap"): _kind(data=_map(), binaryData=_map()),
    ("", "Secret"): _kind(data=_map(), stringData=_map()),
    ("", "ServiceAccount"): _kind(secrets=_list_map(_struct(), ("name",)), imagePullSecrets=_atomic()),
    ("", "Service"): _kind(
        _struct({"ports": _list_map(_struct(), ("port", "protocol"), merge_key="port",
                                    key_defaults={"protocol": "TCP"}),
                 "selector": _map(map_type="atomic"), "externalIPs": _atomic(), "clusterIPs": _atomic(),
                 "ipFamilies": _atomic(), "loadBalancerSourceRanges": _atomic()}),
        _struct({"conditions": CONDITIONS, "loadBalancer": _struct({"ingress": _atomic()})})),
    ("", "Event"): _kind(),
    ("apps", "Deployment"): _kind(
        _struct({"selector": LABEL_SELECTOR, "template": POD_TEMPLATE,
                 "strategy": _struct(strategy=("retainKeys",))}),
        _struct({"conditions": CONDITIONS})),
    ("rbac.authorization.k8s.io", "Role"): _kind(rules=POLICY_RULES),
    ("rbac.authorization.k8s.io", "ClusterRole"): _kind(
        rules=POLICY_RULES, aggregationRule=_struct({"clusterRoleSelectors": _atomic()})),
    ("rbac.authorization.k8s.io", "RoleBinding"): _kind(subjects=_atomic(), roleRef=_struct()),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): _kind(subjects=_atomic(), roleRef=_struct()),
    ("coordination.k8s.io", "Lease"): _kind(_struct()),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _kind(
        _struct({"versions": _atomic(), "names": _struct({"shortNames": _atomic(), "categories": _atomic()})}),
        _struct({"conditions": CONDITIONS, "storedVersions": _atomic(),
                 "acceptedNames": _struct({"shortNames": _atomic(), "categories": _atomic()})})),
}

# What the Go zero value of a built-in already holds (non-pointer structs as {}, non-omitempty slices as
# null): an Update that creates the object does not own those paths as a whole (no "." in FieldsV1).
BUILTIN_ZERO_VALUES = {
    ("", "Pod"): {"spec": {"containers": None}, "status": {}},
    ("", "Namespace"): {"spec": {}, "status": {}},
    ("", "Service"): {"spec": {}, "status": {}},
    ("apps", "Deployment"): {"spec": {"selector": None, "strategy": {}, "template": {
        "metadata": {}, "spec": {"containers": None}}}, "status": {}},
    ("coordination.k8s.io", "Lease"): {"spec": {}},
    ("apiextensions.k8s.io", "CustomResourceDefinition"): {
        "spec": {"group": "", "names": {"plural": "", "kind": ""}, "scope": "", "versions": None},
        "status": {"conditions": None, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": None}},
}
