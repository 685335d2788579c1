"""Regenerate protobuf_types.json: the k8s.io/api message layouts the server decodes protobuf bodies with.

The field numbers come from the protobuf file descriptors compiled into a kubectl binary (gogo-generated
`generated.pb.go` files register each `generated.proto` as a gzipped FileDescriptorProto), so they are
exactly the ones kubectl encodes with. Run from the repo root:

    .venv/bin/python -m tests.kubeapi.protobuf_gen [--kubectl PATH] [--output tests/kubeapi/protobuf_types.json]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import zlib

from .protobuf import fields

GZIP_HEADER = re.compile(b"\x1f\x8b\x08\x00\x00\x00\x00\x00")
API = "k8s.io.api."
# the kinds the server serves and clients may send as protobuf: {apiVersion/Kind: message}
ROOT_KINDS = {
    "v1": ("Namespace", "ConfigMap", "Secret", "ServiceAccount", "Service", "Event", "Pod"),
    "apps/v1": ("Deployment",),
    "autoscaling/v1": ("Scale",),
    "coordination.k8s.io/v1": ("Lease",),
    "events.k8s.io/v1": ("Event",),
    "rbac.authorization.k8s.io/v1": ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"),
    "authentication.k8s.io/v1": ("TokenRequest", "TokenReview", "SelfSubjectReview"),
    "authorization.k8s.io/v1": ("SelfSubjectAccessReview", "SelfSubjectRulesReview", "SubjectAccessReview",
                                "LocalSubjectAccessReview"),
    "meta.k8s.io/v1": ("DeleteOptions",),
}
# Go structs embedded with `json:",inline"`: their fields appear in the parent's JSON object
INLINE_FIELDS = {("k8s.io.api.core.v1.Volume", "volumeSource"), ("k8s.io.api.core.v1.Probe", "handler"),
                 ("k8s.io.api.core.v1.EphemeralContainer", "ephemeralContainerCommon")}
INLINE_TYPES = {"k8s.io.api.core.v1.LocalObjectReference"}
GROUP_PACKAGES = {"": "core", "apps": "apps", "autoscaling": "autoscaling", "coordination.k8s.io": "coordination",
                  "events.k8s.io": "events", "rbac.authorization.k8s.io": "rbac",
                  "authentication.k8s.io": "authentication", "authorization.k8s.io": "authorization"}


def package_of(api_version):
    group, _separator, version = api_version.rpartition("/")
    if group == "meta.k8s.io":
        return "k8s.io.apimachinery.pkg.apis.meta." + version
    return API + GROUP_PACKAGES[group] + "." + version


def _walk(message, prefix, out):
    """DescriptorProto -> out[full name] = [[number, name, type, repeated, type_name]] (nested types too)."""
    items = fields(message)
    name = prefix + dict(items)[1].decode()
    described = []
    for number, value in items:
        if number == 2:
            field = dict(fields(value))
            field_name, type_name = field[1].decode(), field.get(6, b"").decode().lstrip(".")
            inline = (name, field_name) in INLINE_FIELDS or (
                type_name in INLINE_TYPES and field_name == "localObjectReference")
            described.append([field[3], field_name, field.get(5), 1 if field.get(4) == 3 else 0, type_name,
                              1 if inline else 0])
        elif number == 3:
            _walk(value, name + ".", out)
    out[name] = described


def descriptors(binary):
    """{full message name: [[number, json name, type, repeated, type name, inline]]} of every k8s.io file
    descriptor embedded in a Go binary."""
    with open(binary, "rb") as handle:
        data = handle.read()
    messages = {}
    for match in GZIP_HEADER.finditer(data):
        try:
            raw = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[match.start():match.start() + 4000000])
            items = fields(raw)
        except (zlib.error, ValueError, IndexError):
            continue
        header = dict(items)
        if not isinstance(header.get(1), bytes) or not header[1].startswith(b"k8s.io/"):
            continue
        package = header.get(2, b"").decode()
        for number, value in items:
            if number == 4:
                _walk(value, package + ".", messages)
    return messages


def closure(messages):
    """The root kinds and every message they reach."""
    kinds, seen = {}, set()
    todo = []
    for api_version, names in ROOT_KINDS.items():
        for kind in names:
            full = package_of(api_version) + "." + kind
            kinds["%s/%s" % (api_version, kind)] = full
            todo.append(full)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(field[4] for field in messages[name] if field[4])
    return kinds, {name: messages[name] for name in sorted(seen)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubectl", default=shutil.which("kubectl"))
    parser.add_argument("--output", default=os.path.join(os.path.dirname(__file__), "protobuf_types.json"))
    args = parser.parse_args(argv)
    kinds, messages = closure(descriptors(os.path.realpath(args.kubectl)))
    version = subprocess.run([args.kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True,
                             check=False).stdout
    version = json.loads(version).get("clientVersion", {}).get("gitVersion", "?") if version.strip() else "?"
    lines = ['{"source": %s,' % json.dumps("file descriptors compiled into kubectl " + version),
             ' "kinds": %s,' % json.dumps(kinds, sort_keys=True), ' "messages": {']
    lines.append(",\n".join("  %s: %s" % (json.dumps(name), json.dumps(value, separators=(",", ":")))
                            for name, value in messages.items()))
    lines.append("}}")
    with open(args.output, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    print("%d kinds, %d messages -> %s" % (len(kinds), len(messages), args.output))


if __name__ == "__main__":
    main()
