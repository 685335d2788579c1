"""protobuf.py: decoding the protobuf bodies kubectl sends, and the built-in field/type checks driven by the
same k8s.io/api message layouts (protobuf_types.json)."""
import base64

import pytest

from tests.kubeapi import protobuf
from tests.kubeapi.errors import ApiError


def varint(value):
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number, value):
    """One protobuf field: ints as varints, bytes/str as length-delimited."""
    if isinstance(value, bool) or isinstance(value, int):
        return varint(number << 3) + varint(int(value))
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def envelope(api_version, kind, body):
    type_meta = field(1, api_version) + field(2, kind)
    return protobuf.MAGIC + field(1, type_meta) + field(2, body)


def entry(key, value):
    return field(1, key) + field(2, value)


def test_deployment_as_kubectl_create_deployment_encodes_it():
    labels = field(11, entry("app", "web"))
    metadata = field(1, "web") + field(2, "") + labels + field(8, b"")  # Go always writes non-pointer fields
    container = (field(1, "nginx") + field(2, "nginx:1.27") + field(3, "sleep") + field(3, "10")
                 + field(6, field(3, 8080) + field(4, "TCP")) + field(8, b"") + field(16, False))
    volume = field(1, "data") + field(2, field(2, b""))            # VolumeSource inline: emptyDir {}
    pod_spec = field(1, volume) + field(2, container) + field(11, False)
    template = field(1, field(11, entry("app", "web"))) + field(2, pod_spec)
    strategy = field(2, field(1, field(1, 1) + field(3, "25%")) + field(2, field(1, 0) + field(2, 2)))
    spec = field(1, 0) + field(2, field(1, entry("app", "web"))) + field(3, template) + field(4, strategy)
    decoded = protobuf.decode(envelope("apps/v1", "Deployment", field(1, metadata) + field(2, spec) + field(3, b"")))
    assert decoded["apiVersion"] == "apps/v1" and decoded["kind"] == "Deployment"
    assert decoded["metadata"] == {"name": "web", "labels": {"app": "web"}, "creationTimestamp": None}
    assert decoded["spec"]["replicas"] == 0, "pointer fields keep their zero value"
    assert decoded["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    assert decoded["spec"]["strategy"] == {"rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 2}}
    assert decoded["spec"]["template"]["spec"] == {
        "volumes": [{"name": "data", "emptyDir": {}}],
        "containers": [{"name": "nginx", "image": "nginx:1.27", "command": ["sleep", "10"],
                        "ports": [{"containerPort": 8080, "protocol": "TCP"}], "resources": {}}]}


def test_secret_bytes_maps_negative_ints_and_times():
    data = field(2, entry("password", b"\x00\xffs3cr3t"))
    decoded = protobuf.decode(envelope("v1", "Secret", field(1, field(1, "creds")) + data + field(3, "Opaque")))
    assert decoded["data"] == {"password": base64.b64encode(b"\x00\xffs3cr3t").decode()}
    assert decoded["type"] == "Opaque"
    options = protobuf.decode(envelope("meta.k8s.io/v1", "DeleteOptions", field(1, -1) + field(4, "Orphan")))
    assert options["gracePeriodSeconds"] == -1 and options["propagationPolicy"] == "Orphan"
    event = protobuf.decode(envelope("v1", "Event", field(1, field(1, "e")) + field(6, field(1, 1767225600))))
    assert event["firstTimestamp"] == "2026-01-01T00:00:00Z"


def test_unknown_kinds_and_garbage_are_refused():
    with pytest.raises(ApiError) as unknown:
        protobuf.decode(envelope("batch/v1", "Job", b""))
    assert unknown.value.code == 415
    with pytest.raises(ApiError) as garbage:
        protobuf.decode(protobuf.MAGIC + b"\x0a\xff")
    assert garbage.value.code == 400 and "unable to decode protobuf body" in garbage.value.message
    with pytest.raises(ApiError) as no_magic:
        protobuf.decode(b"{}")
    assert no_magic.value.code == 400 and "expected prefix [107 56 115 0]" in no_magic.value.message


DEPLOYMENT = protobuf.message_for("apps/v1", "Deployment")


def test_unknown_fields_follow_the_go_types_including_inline_structs():
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "colour": "red"},
            "spec": {"replicas": 1, "bogus": 1, "template": {"spec": {
                "containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "1"}}, "extra": 1}],
                "volumes": [{"name": "v", "emptyDir": {}, "configMap": {"name": "cm", "wrong": 1}}]}}}}
    assert protobuf.unknown_json_fields(body, DEPLOYMENT) == [
        "metadata.colour", "spec.bogus", "spec.template.spec.containers[0].extra",
        "spec.template.spec.volumes[0].configMap.wrong"]
    pruned = protobuf.prune_unknown(body, DEPLOYMENT)
    assert protobuf.unknown_json_fields(pruned, DEPLOYMENT) == [] and "colour" in body["metadata"], \
        "pruning returns a copy"
    assert pruned["spec"]["template"]["spec"]["volumes"] == [{"name": "v", "emptyDir": {}, "configMap": {"name": "cm"}}]
    clean = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}
    assert protobuf.prune_unknown(clean, DEPLOYMENT) is clean


@pytest.mark.parametrize("spec, message", [
    ({"replicas": "two"}, "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ({"replicas": 1.5}, "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ({"replicas": 2 ** 31}, "json: cannot unmarshal number 2147483648 into Go struct field DeploymentSpec.spec.replicas "
                            "of type int32"),
    ({"paused": "yes"}, "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool"),
    ({"template": {"spec": {"containers": {}}}},
     "json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container"),
    ({"template": {"spec": {"containers": [{"name": 3}]}}},
     "json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.name of type string"),
    ({"selector": {"matchLabels": {"a": True}}},
     "json: cannot unmarshal bool into Go struct field LabelSelector.spec.selector.matchLabels of type string"),
    ({"strategy": {"rollingUpdate": {"maxSurge": []}}}, "json: cannot unmarshal array into Go value of type int32"),
    ({"replicas": 3, "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}}, None),
])
def test_type_errors_are_the_go_decoders(spec, message):
    assert protobuf.type_error({"metadata": {"name": "x"}, "spec": spec}, DEPLOYMENT) == message


def test_json_field_names_lift_inline_fields():
    assert {"emptyDir", "configMap", "name"} <= protobuf.json_field_names("k8s.io.api.core.v1.Volume")
    assert protobuf.is_map_entry("k8s.io.api.core.v1.ConfigMap.DataEntry")
    assert not protobuf.is_map_entry("k8s.io.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry")
