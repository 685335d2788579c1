"""The CAPI conversion webhook of a HyperShift management cluster, for the real control plane of the tests and demo.

HyperShift's operator installs the core CAPI CRDs with `spec.conversion.strategy: Webhook` pointing at its own
`/convert` (openshift/hypershift cmd/install/assets/crds). Here the collection's shim (`python -m capi_proxy shim --standard-groups`)
serves that endpoint, for the standard CRDs and for the private twins alike, with a serving certificate signed by the
cluster CA.

A CRD opts in by carrying `spec.conversion.strategy: Webhook` and the placeholder URL `WEBHOOK_PLACEHOLDER`:
`wire(crds, webhook)` fills in the real URL and caBundle.
"""
import base64
import copy
import os
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from .cluster import die_with_parent, free_port, terminate

REPO_ROOT = Path(__file__).resolve().parents[2]
WEBHOOK_PLACEHOLDER = "https://testenv.invalid/convert"
START_TIMEOUT = 30.0
AGENT_GROUPS = "capi-provider.agent-install.openshift.io=capi-provider.agent-install.hypershift.openshift.io"


class ConvertWebhook:
    """`python -m capi_proxy shim --standard-groups` on 127.0.0.1, TLS from the cluster CA."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.port = free_port()
        self.url = "https://127.0.0.1:%d/convert" % self.port
        self.ca_file = cluster.pki.path("ca.crt")
        self.log_path = cluster.state_dir / "logs" / "convert-webhook.log"
        self.process = None

    def start(self):
        name = str(self.cluster.state_dir / "convert-webhook")
        self.cluster.pki.make_cert(name, "/CN=testenv-convert-webhook", server_sans=["IP:127.0.0.1"])
        command = [sys.executable, "-m", "capi_proxy", "shim", "--standard-groups", "--listen",
                   "127.0.0.1:%d" % self.port, "--tls-cert", name + ".crt", "--tls-key", name + ".key",
                   "--extra-group", AGENT_GROUPS, "--log-level", "warning",
                   # the providers' contract labels give v1beta1 references their apiVersion
                   "--kubeconfig", str(self.cluster.kubeconfig)]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, cwd=str(REPO_ROOT), stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
                                            preexec_fn=die_with_parent)
        context = ssl.create_default_context(cafile=str(self.ca_file))
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.process.poll() is not None:
                raise RuntimeError("the conversion webhook exited (%s); log %s:\n%s" % (
                    self.process.returncode, self.log_path, self.log_path.read_text(errors="replace")[-2000:]))
            try:
                with urllib.request.urlopen(self.url.replace("/convert", "/healthz"), timeout=2, context=context):
                    return self
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("the conversion webhook was not healthy after %ss" % START_TIMEOUT) from None
                time.sleep(0.05)

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def stop(self):
        code = terminate(self.process)
        return 0 if code is None else code


def wire(crds, webhook):
    """The CRDs with every placeholder conversion webhook pointed at `webhook` (url and caBundle)."""
    ca_bundle = base64.b64encode(Path(webhook.ca_file).read_bytes()).decode()
    wired = []
    for crd in crds:
        conversion = crd["spec"].get("conversion") or {}
        config = ((conversion.get("webhook") or {}).get("clientConfig") or {})
        if conversion.get("strategy") == "Webhook" and config.get("url") == WEBHOOK_PLACEHOLDER:
            crd = copy.deepcopy(crd)
            crd["spec"]["conversion"]["webhook"]["clientConfig"] = {"url": webhook.url, "caBundle": ca_bundle}
        wired.append(crd)
    return wired


def needs_webhook(crds):
    return any(((crd["spec"].get("conversion") or {}).get("webhook") or {}).get("clientConfig", {}).get("url")
               == WEBHOOK_PLACEHOLDER for crd in crds)
