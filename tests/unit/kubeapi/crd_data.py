"""Real CRDs and example objects from testenv/upstream for the kubeapi unit tests (loaded once)."""
import functools
import glob
import os
import re

import yaml

from testenv.upstream import CAPI_CRDS, CAPI_EXAMPLES_V1BETA2 as EXAMPLES_V1BETA2, HYPERSHIFT_CRDS

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Values clusterctl would substitute in the example templates (defaults `${X:=v}` are used as given).
CLUSTERCTL_VARIABLES = {
    "CLUSTER_NAME": "my-cluster", "NAMESPACE": "default", "KUBERNETES_VERSION": "v1.33.0",
    "CONTROL_PLANE_MACHINE_COUNT": "1", "WORKER_MACHINE_COUNT": "2",
    "DOCKER_POD_CIDRS": '["192.168.0.0/16"]', "DOCKER_SERVICE_CIDRS": '["10.128.0.0/12"]',
    "DOCKER_SERVICE_DOMAIN": "cluster.local",
}
_VARIABLE = re.compile(r"\$\{\s*([A-Z0-9_]+)\s*(?::=([^}]*))?\}")


def load_documents(path, text=None):
    if text is None:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    return [doc for doc in yaml.load_all(text, Loader=_LOADER) if doc]


def crd_files():
    files = sorted(glob.glob(os.path.join(CAPI_CRDS, "*.yaml")))
    files += sorted(glob.glob(os.path.join(HYPERSHIFT_CRDS, "**", "*.yaml"), recursive=True))
    return files


@functools.lru_cache(maxsize=None)
def crds_in(path):
    return tuple(d for d in load_documents(path) if d.get("kind") == "CustomResourceDefinition")


@functools.lru_cache(maxsize=None)
def capi_schemas():
    """{(group, version, kind): openAPIV3Schema} of the CAPI core CRDs."""
    out = {}
    for path in sorted(glob.glob(os.path.join(CAPI_CRDS, "*.yaml"))):
        for crd in crds_in(path):
            for version in crd["spec"]["versions"]:
                key = (crd["spec"]["group"], version["name"], crd["spec"]["names"]["kind"])
                out[key] = version["schema"]["openAPIV3Schema"]
    return out


def capi_schema(kind, version="v1beta2", group="cluster.x-k8s.io"):
    return capi_schemas()[(group, version, kind)]


def hypershift_schema(filename, kind, version):
    for crd in crds_in(os.path.join(HYPERSHIFT_CRDS, filename)):
        if crd["spec"]["names"]["kind"] == kind:
            for entry in crd["spec"]["versions"]:
                if entry["name"] == version:
                    return entry["schema"]["openAPIV3Schema"]
    raise KeyError((filename, kind, version))


def substitute(text):
    return _VARIABLE.sub(lambda m: CLUSTERCTL_VARIABLES.get(m.group(1), m.group(2) or ""), text)


@functools.lru_cache(maxsize=None)
def example_objects():
    """[(file, object)] of every v1beta2 example object whose CRD is a CAPI core CRD."""
    out = []
    schemas = capi_schemas()
    for path in sorted(glob.glob(os.path.join(EXAMPLES_V1BETA2, "*.yaml"))):
        with open(path, encoding="utf-8") as handle:
            text = substitute(handle.read())
        for obj in load_documents(path, text):
            group, _separator, version = obj.get("apiVersion", "").rpartition("/")
            if (group, version, obj.get("kind")) in schemas:
                out.append((os.path.basename(path), obj))
    return tuple(out)


def example(kind, name=None):
    for _file, obj in example_objects():
        if obj["kind"] == kind and (name is None or obj["metadata"]["name"] == name):
            return obj
    raise KeyError((kind, name))
