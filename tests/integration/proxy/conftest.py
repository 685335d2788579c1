"""A real control plane holding only private CAPI CRDs, the conversion shim as their webhook, and proxies in front.

Package scope: the control plane (testenv/cluster), the shim and the proxies start once for every proxy test
module (~15 s). kube-apiserver calls the shim over TLS to convert private objects between versions: the shim's
certificate (testenv/certs.py, IP SAN 127.0.0.1) is signed by a CA of its own, which is every CRD's
caBundle. The fault proxy (testenv/faultproxy.py) stands in front of kube-apiserver from the start: the shim and
the proxies under test talk to kube-apiserver directly (`server.direct_kubeconfig`), a proxy that a test wants
to see hang or dropped answers is pointed at `server.kubeconfig` (the fault proxy's).
"""
import os
import shutil

import pytest

from testenv.cluster.images import placeholder_archive
from testenv.cluster.testing import start_cluster
from testenv import proxy_stack as support

# the images of the Deployments test_role.py patches: the node has them as the placeholder (Kubernetes' pause)
ROLE_IMAGES = ("registry.example/capi:1", "registry.example/capa:1", "registry.example/minter:1")


class Stack(object):
    """server (a real control plane), shim, proxy (--use-own-credentials, like the sidecar) and plain_proxy."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.cert, self.key, self.ca_pem = support.write_tls(workdir)
        shim_port = support.free_port()
        crds = support.render_private_crds("https://127.0.0.1:%d/convert" % shim_port, self.ca_pem)
        self.crd_names = [crd["metadata"]["name"] for crd in crds]
        # The webhook answers from the first moment the CRDs exist. This first shim has no kubeconfig (there is no
        # cluster to read yet); once the cluster is up, the shim of the tests takes its port with --kubeconfig, to
        # read the CRDs' contract labels (v1beta2 -> v1beta1 references). No private object exists in between.
        first_shim = support.start_shim(workdir, self.cert, self.key, self.ca_pem, port=shim_port, name="shim-first",
                                        wait=False)
        self.server = None
        try:
            self.server = start_cluster(os.path.join(workdir, "cluster"), crds=crds,
                                        node_images=[placeholder_archive(list(ROLE_IMAGES))])
            self.server.enable_faults()
            direct = self.server.direct_kubeconfig
            support.wait_healthy(first_shim)
            assert first_shim.stop() == 0, first_shim.log()
            self.shim = support.start_shim(workdir, self.cert, self.key, self.ca_pem, "--kubeconfig", direct,
                                           port=shim_port, wait=False)
            self.proxy = support.start_proxy(workdir, direct, "--use-own-credentials", name="proxy-own", wait=False)
            # at debug: its log also has the lines of the reads that succeeded (info leaves them out)
            self.plain_proxy = support.start_proxy(workdir, direct, "--log-level", "debug", name="proxy-plain",
                                                   wait=False)
            for process in (self.shim, self.proxy, self.plain_proxy):
                support.wait_healthy(process)
            support.wait_served(self.server, crds)
            support.create_namespace(self.server, "hcp")
        except BaseException:
            first_shim.stop()
            for name in ("shim", "proxy", "plain_proxy"):
                if hasattr(self, name):
                    getattr(self, name).stop()
            if self.server is not None:
                self.server.stop()
            raise
        # kubectl never sends a bearer token over plain HTTP, so kubectl talks to the own-credentials proxy,
        # exactly like a CAPI controller beside the sidecar.
        self.kubeconfig = support.proxy_kubeconfig(workdir, self.proxy.url, self.server.admin_token)
        self.kubectl_cache = os.path.join(workdir, "kubectl-cache")

    def kubectl(self, *args, check=True, input_text=None, timeout=60, kubeconfig=None):
        import subprocess  # pylint: disable=import-outside-toplevel
        binary = shutil.which("kubectl")
        if binary is None:
            raise AssertionError("kubectl is not on the PATH: install kubectl 1.32+ to run the proxy's kubectl tests")
        command = [binary, "--kubeconfig", kubeconfig or self.kubeconfig, "--cache-dir", self.kubectl_cache] + list(args)
        result = subprocess.run(command, input=input_text, capture_output=True, text=True, timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise AssertionError("kubectl %s failed (%d):\nstdout: %s\nstderr: %s\nproxy log tail:\n%s"
                                 % (" ".join(args), result.returncode, result.stdout, result.stderr,
                                    self.proxy.log()[-2000:]))
        return result

    def stop(self):
        codes = [process.stop() for process in (self.proxy, self.plain_proxy, self.shim)]
        return codes + [self.server.stop()]


@pytest.fixture(scope="package")
def stack(tmp_path_factory):
    environment = Stack(str(tmp_path_factory.mktemp("proxy-stack")))
    yield environment
    codes = environment.stop()
    assert codes == [0, 0, 0, 0], "a process did not stop cleanly: %s\n%s" % (codes, environment.server.log())
