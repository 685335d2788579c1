"""The proxy's image as a user builds it (`make image`: the Containerfile on the built collection tarball alone) runs
its entry command, and the proxy in it serves a real control plane.

No registry is reachable here, so the Containerfile's UBI base is replaced by a Debian one made from Debian packages
(hack/local-base-image.sh, through hack/image-prereqs.sh, which also installs podman, buildah, runc and debootstrap
where they are missing). The Containerfile itself, its entry point, user and venv are the shipped ones.

How this machine's container runtime is driven (not the image's concern): the build's RUN steps in a chroot
(BUILDAH_ISOLATION=chroot) and the container with runc, because crun refuses its hybrid cgroups; file and process
limits at 1024, because the VM grants no CAP_SYS_RESOURCE to raise them; host networking, so the proxy reaches the
test's kube-apiserver on loopback and the test reaches the proxy there (no other address).
"""
import json
import os
import shutil
import subprocess
import time
import urllib.request

import pytest
import yaml

from testenv import REPO_ROOT
from testenv.cluster.cluster import free_port
from testenv.cluster.testing import start_cluster
from testenv.hcp import build

pytestmark = pytest.mark.slow

BASE_IMAGE = "localhost/capi-proxy-base:bookworm"
IMAGE = "localhost/capi-proxy:e2e"
RUN = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]


def _run(command, timeout=900, check=True, env=None):
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, check=False,
                            env=dict(os.environ, **(env or {})))
    if check and result.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (" ".join(command), result.returncode, result.stdout[-3000:],
                                                          result.stderr[-3000:]))
    return result


@pytest.fixture(scope="module")
def image():
    _run(["bash", os.path.join(REPO_ROOT, "hack", "image-prereqs.sh"), BASE_IMAGE], timeout=1800)
    _run(["make", "--no-print-directory", "image", "IMAGE=" + IMAGE, "BASE_IMAGE=" + BASE_IMAGE,
          "CONTAINER_ENGINE=podman"], timeout=1800, env={"BUILDAH_ISOLATION": "chroot"})
    runtime = ["--runtime", shutil.which("runc")] if shutil.which("runc") else []
    yield ["podman", "run", "--rm"] + runtime + RUN
    _run(["podman", "rmi", "--force", IMAGE], check=False)


def test_the_image_runs_its_entry_command_as_shipped(image):
    with open(os.path.join(REPO_ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        version = str(yaml.safe_load(handle)["version"])
    config = json.loads(_run(["podman", "image", "inspect", IMAGE]).stdout)[0]["Config"]
    assert config["Entrypoint"] == ["capi-proxy"] and config["User"] == "1001", config
    assert config["Labels"]["org.opencontainers.image.version"] == version
    assert "translating" in _run(image + [IMAGE, "--help"]).stdout.lower()
    assert "--tls-cert" in _run(image + [IMAGE, "shim", "--help"]).stdout
    probe = ("import importlib.metadata as m, importlib.util as u, os; "
             "print(m.version('hypershift-capi-proxy'), os.getuid(), u.find_spec('ansible') is None, "
             "u.find_spec('pip') is None)")
    assert _run(image + ["--entrypoint", "python3", IMAGE, "-c", probe]).stdout.split() == [
        version, "1001", "True", "True"]


def test_the_proxy_in_the_image_serves_a_real_control_plane(image, tmp_path):
    server = start_cluster(str(tmp_path / "cluster"), crds=build.crd_documents(("AWS",)), pods="kwok-only")
    name = "capi-proxy-e2e-%d" % os.getpid()
    try:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "clusters-img"}}
        assert server.request("POST", "/api/v1/namespaces", namespace).status == 201
        private = {"apiVersion": "cluster.hypershift.openshift.io/v1beta2", "kind": "Cluster",
                   "metadata": {"name": "img", "namespace": "clusters-img"}, "spec": {"paused": True}}
        assert server.request("POST", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/clusters-img/clusters",
                              private).status == 201
        kubeconfig = tmp_path / "mounted" / "upstream.kubeconfig"
        kubeconfig.parent.mkdir()
        shutil.copy(server.direct_kubeconfig, kubeconfig)
        os.chmod(kubeconfig.parent, 0o755)
        os.chmod(kubeconfig, 0o644)  # the image runs as 1001
        port, metrics = free_port(), free_port()
        _run(image[:2] + ["-d", "--name", name, "--network", "host"] + image[3:] + [
            "-v", "%s:/etc/capi-proxy:ro" % kubeconfig.parent, IMAGE,
            "--kubeconfig", "/etc/capi-proxy/upstream.kubeconfig", "--listen", "127.0.0.1:%d" % port,
            "--metrics-listen", "127.0.0.1:%d" % metrics, "--use-own-credentials"])
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % metrics, timeout=2) as response:
                    assert response.status == 200
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("the proxy in the image was not ready in 60 s:\n"
                                         + _run(["podman", "logs", name], check=False).stderr[-3000:])
                time.sleep(0.5)
        url = "http://127.0.0.1:%d/apis/cluster.x-k8s.io/v1beta1/namespaces/clusters-img/clusters/img" % port
        with urllib.request.urlopen(url, timeout=10) as response:
            cluster = json.loads(response.read())
        # a v1beta1 client of the standard group reads the private v1beta2 object (translated, converted)
        assert cluster["apiVersion"] == "cluster.x-k8s.io/v1beta1" and cluster["spec"]["paused"] is True
    finally:
        _run(["podman", "rm", "--force", "--time", "5", name], check=False)
        server.stop()
