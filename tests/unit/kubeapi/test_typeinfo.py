"""tests/kubeapi/typeinfo.py: built-in table (k8s.io/api tags) and CRD schemas."""
import pytest

from tests.kubeapi.typeinfo import TypeInfo
from tests.unit.kubeapi.crd_data import crd_files, crds_in

POD_SPEC = ("spec", "template", "spec")


@pytest.mark.parametrize("path,list_type,keys,merge_key,strategy", [
    (POD_SPEC + ("containers",), "map", ("name",), "name", ("merge",)),
    (POD_SPEC + ("initContainers",), "map", ("name",), "name", ("merge",)),
    (POD_SPEC + ("ephemeralContainers",), "map", ("name",), "name", ("merge",)),
    (POD_SPEC + ("volumes",), "map", ("name",), "name", ("merge", "retainKeys")),
    (POD_SPEC + ("imagePullSecrets",), "map", ("name",), "name", ("merge",)),
    (POD_SPEC + ("containers", None, "env"), "map", ("name",), "name", ("merge",)),
    (POD_SPEC + ("containers", None, "volumeMounts"), "map", ("mountPath",), "mountPath", ("merge",)),
    (POD_SPEC + ("containers", None, "ports"), "map", ("containerPort", "protocol"), "containerPort", ("merge",)),
    (POD_SPEC + ("containers", None, "args"), "atomic", (), None, ()),
    (POD_SPEC + ("tolerations",), "atomic", (), None, ()),
    (("metadata", "finalizers"), "set", (), None, ("merge",)),
    (("metadata", "ownerReferences"), "map", ("uid",), "uid", ("merge",)),
    (("status", "conditions"), "map", ("type",), "type", ("merge",)),
])
def test_deployment_list_semantics(path, list_type, keys, merge_key, strategy):
    node = TypeInfo.for_builtin("apps", "Deployment").node_at(path)
    assert (node.kind, node.list_type, node.list_keys, node.merge_key, node.patch_strategy) == (
        "list", list_type, keys, merge_key, strategy)


def test_other_builtins():
    service = TypeInfo.for_builtin("", "Service")
    ports = service.node_at(("spec", "ports"))
    assert (ports.list_keys, ports.merge_key, ports.key_defaults) == (("port", "protocol"), "port", {"protocol": "TCP"})
    assert service.node_at(("spec", "selector")).map_type == "atomic"
    assert TypeInfo.for_builtin("", "Pod").node_at(("spec", "nodeSelector")).map_type == "atomic"
    assert TypeInfo.for_builtin("apps", "Deployment").node_at(("spec", "selector")).map_type == "atomic"
    assert TypeInfo.for_builtin("rbac.authorization.k8s.io", "Role").node_at(("rules",)).list_type == "atomic"
    assert TypeInfo.for_builtin("rbac.authorization.k8s.io", "RoleBinding").node_at(("subjects",)).list_type == "atomic"
    assert TypeInfo.for_builtin("", "ConfigMap").node_at(("data", "anything")).kind == "scalar"
    unknown = TypeInfo.for_builtin("example.com", "Widget")
    assert unknown.node_at(("metadata", "finalizers")).list_type == "set"
    assert unknown.node_at(("spec", "items")).kind == "any"


def _walk(schema, path):
    """Yield (path, schema) for every node of a CRD schema (items as None steps)."""
    yield path, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from _walk(sub, path + (name,))
    if isinstance(schema.get("items"), dict):
        yield from _walk(schema["items"], path + (None,))
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _walk(schema["additionalProperties"], path + ("<key>",))


@pytest.mark.parametrize("path", crd_files(), ids=lambda p: p.rsplit("/", 2)[-1])
def test_crd_list_and_map_types_follow_the_schema(path):
    checked = 0
    for crd in crds_in(path):
        for version in crd["spec"]["versions"]:
            source = version["schema"]["openAPIV3Schema"]
            info = TypeInfo.for_crd_schema(source)
            assert TypeInfo.for_crd_schema(source) is info, "cached per schema object"
            for node_path, schema in _walk(source, ()):
                if node_path[:1] == ("metadata",):
                    continue
                node = info.node_at(node_path)
                if schema.get("type") == "array":
                    assert node.list_type == schema.get("x-kubernetes-list-type", "atomic"), node_path
                    assert node.list_keys == tuple(schema.get("x-kubernetes-list-map-keys") or ()), node_path
                    checked += 1
                elif schema.get("type") == "object" and schema.get("x-kubernetes-map-type") == "atomic":
                    assert node.map_type == "atomic", node_path
    if "cluster.x-k8s.io_machine" in path:
        assert checked > 5, "Machine* CRDs declare several list types"


def test_crd_root_metadata_is_object_meta():
    from tests.unit.kubeapi.crd_data import capi_schema
    info = TypeInfo.for_crd_schema(capi_schema("Machine"))
    assert info.node_at(("metadata", "ownerReferences")).list_keys == ("uid",)
    taints = info.node_at(("spec", "taints"))
    assert (taints.list_type, taints.list_keys) == ("map", ("key", "effect"))
