"""testenv.cluster.testing.etcd_seed on the real etcd and kube-apiserver: a control plane started from the seed serves
every CRD of the set, Established and in discovery, with the conversion webhooks pointed at its own /convert (not
the placeholder the seed stored); the seed is made once per CRD set and never changed by the clusters that copy it."""
import base64
import os

from testenv.cluster.convert import WEBHOOK_PLACEHOLDER, needs_webhook
from testenv.cluster.testing import etcd_seed, start_cluster


def tree_state(root):
    """{relative path: (size, mtime_ns)} of every file under root."""
    state = {}
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            info = os.stat(path)
            state[os.path.relpath(path, root)] = (info.st_size, info.st_mtime_ns)
    return state


def test_a_cluster_from_the_seed_serves_every_crd_wired_to_its_own_webhook(tmp_path, hcp_crds):
    seed = etcd_seed(hcp_crds)
    before = tree_state(seed)
    assert etcd_seed(hcp_crds) == seed and tree_state(seed) == before  # made once, found again
    server = start_cluster(tmp_path, crds=hcp_crds, components=(), pods="kwok-only")
    try:
        served = {crd["metadata"]["name"]: crd for crd in server.request(
            "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions").json()["items"]}
        assert sorted(served) == sorted(crd["metadata"]["name"] for crd in hcp_crds)
        assert all(any(condition["type"] == "Established" and condition["status"] == "True"
                       for condition in crd["status"]["conditions"]) for crd in served.values())
        wired = [crd["metadata"]["name"] for crd in hcp_crds if needs_webhook([crd])]
        assert len(wired) >= 1
        ca_bundle = base64.b64encode(open(server.ca_file, "rb").read()).decode()
        for name in wired:
            config = served[name]["spec"]["conversion"]["webhook"]["clientConfig"]
            assert config == {"url": server.webhook.url, "caBundle": ca_bundle}, name
            assert config["url"] != WEBHOOK_PLACEHOLDER
        groups = {group["name"] for group in server.request("GET", "/apis").json()["groups"]}
        assert {crd["spec"]["group"] for crd in hcp_crds} <= groups
    finally:
        assert server.stop() == 0
    assert tree_state(seed) == before  # the cluster ran on a copy
