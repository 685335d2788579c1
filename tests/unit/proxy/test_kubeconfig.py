"""The proxy's kubeconfig reader: a client certificate given inline leaves no key material on disk."""
import base64
import os
import tempfile

import pytest
import yaml

from capi_proxy.kubeconfig import KubeconfigError, Upstream
from testenv import certs


def _kubeconfig(path, material, **user):
    user = dict({"client-certificate-data": base64.b64encode(material["cert"].encode()).decode(),
                 "client-key-data": base64.b64encode(material["key"].encode()).decode()}, **user)
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "c", "cluster": {
                  "server": "https://127.0.0.1:6443",
                  "certificate-authority-data": base64.b64encode(material["ca_cert"].encode()).decode()}}],
              "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
              "users": [{"name": "u", "user": {key: value for key, value in user.items() if value is not None}}]}
    path.write_text(yaml.safe_dump(config))
    return str(path)


@pytest.fixture
def scratch_root(tmp_path, monkeypatch):
    """tempfile's directory pointed at an empty directory of this test, so whatever is left there is seen."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def test_inline_client_certificate_is_loaded_and_leaves_no_file(tmp_path, scratch_root):
    material = certs.generate(days=1)
    upstream = Upstream(_kubeconfig(tmp_path / "kubeconfig", material))
    assert upstream.has_client_cert
    assert upstream.ssl_own is not upstream.ssl_plain
    assert os.listdir(str(scratch_root)) == []


def test_a_certificate_without_its_key_is_refused_and_leaves_no_file(tmp_path, scratch_root):
    material = certs.generate(days=1)
    with pytest.raises(KubeconfigError, match="needs both client-certificate and client-key"):
        Upstream(_kubeconfig(tmp_path / "kubeconfig", material, **{"client-key-data": None}))
    assert os.listdir(str(scratch_root)) == []


def test_a_token_kubeconfig_needs_no_temporary_directory(tmp_path, monkeypatch):
    """A sidecar's root filesystem is read-only, with no /tmp: only inline certificate material needs a file."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "does-not-exist"))
    material = certs.generate(days=1)
    upstream = Upstream(_kubeconfig(tmp_path / "kubeconfig", material, token="abc",
                                    **{"client-certificate-data": None, "client-key-data": None}))
    assert not upstream.has_client_cert and upstream.ssl_own is upstream.ssl_plain
    assert upstream.own_headers()["Authorization"] == "Bearer abc"
