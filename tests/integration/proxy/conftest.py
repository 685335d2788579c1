"""One API server holding only private CAPI CRDs, the conversion shim as their webhook, and proxies in front.

Package scope: the server, the shim and the proxies start once for every proxy test module (~4 s).
"""
import os
import shutil

import pytest

from tests.integration.proxy import support
from tests.kubeapi.testing import start_server


class Stack(object):
    """server (tests/kubeapi), shim, proxy (--use-own-credentials, like the sidecar) and plain_proxy."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.cert, self.key, self.ca_pem = support.write_tls(workdir)
        shim_port = support.free_port()
        crds = support.render_private_crds("https://127.0.0.1:%d/convert" % shim_port, self.ca_pem)
        self.crd_names = [crd["metadata"]["name"] for crd in crds]
        seed = support.write_seed(os.path.join(workdir, "seed"), crds + [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hcp"}}])
        self.server = start_server(workdir, seeds=[seed])
        self.shim = support.start_shim(workdir, self.cert, self.key, self.ca_pem, "--kubeconfig",
                                       self.server.kubeconfig, port=shim_port, wait=False)
        self.proxy = support.start_proxy(workdir, self.server.kubeconfig, "--use-own-credentials", name="proxy-own",
                                         wait=False)
        self.plain_proxy = support.start_proxy(workdir, self.server.kubeconfig, name="proxy-plain", wait=False)
        for process in (self.shim, self.proxy, self.plain_proxy):
            support.wait_healthy(process)
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
    assert codes == [0, 0, 0, 0], "a process did not stop cleanly: %s" % codes
