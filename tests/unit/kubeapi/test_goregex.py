"""RE2 Unicode classes in CRD patterns (HyperShift's componentRoutes hostname) work in Python."""
import re

import pytest
import yaml

from testenv.upstream import HOSTEDCLUSTER_CRD
from tests.kubeapi.goregex import to_python_regex
from tests.kubeapi.schema import StructuralSchema


@pytest.mark.parametrize("pattern, value, matches", [
    (r"^[a-z\p{L}]+$", "caf\u00e9", True),
    (r"^[a-z\p{L}]+$", "cafe1", False),
    (r"^\p{L}\pN$", "a1", True),
    (r"^[\p{S}]$", "+", True),
    (r"^[a-z]+$", "abc", True),
])
def test_unicode_classes_inside_and_outside_brackets(pattern, value, matches):
    assert bool(re.search(to_python_regex(pattern), value)) is matches


def test_unknown_class_is_a_clear_error():
    with pytest.raises(ValueError, match=r"\\p\{Greek\}"):
        to_python_regex(r"^\p{Greek}$")


def test_hostedcluster_component_route_hostname_validates_like_the_real_server():
    with open(HOSTEDCLUSTER_CRD) as handle:
        crd = yaml.safe_load(handle)
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta1")
    schema = StructuralSchema(version["schema"]["openAPIV3Schema"])
    hosted_cluster = {
        "apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster",
        "metadata": {"name": "prod-01", "namespace": "clusters"},
        "spec": {"configuration": {"ingress": {"componentRoutes": [
            {"name": "console", "namespace": "openshift-console", "hostname": "console.apps.example.com",
             "servingCertKeyPairSecret": {"name": "cert"}}]}}},
    }
    causes = [c for c in schema.validate(hosted_cluster) if "componentRoutes" in c["field"]]
    assert causes == []
    hosted_cluster["spec"]["configuration"]["ingress"]["componentRoutes"][0]["hostname"] = "not a host!"
    causes = [c for c in schema.validate(hosted_cluster) if "componentRoutes" in c["field"]]
    assert [c["field"] for c in causes] == ["spec.configuration.ingress.componentRoutes[0].hostname"]
