"""testenv/cluster/build.py: the CoreDNS it builds, a cluster's plugins only (pure: no Go build here; the real nodes of
the integration tests and kind's node image run it)."""
import re
from types import SimpleNamespace

from testenv.cluster import build, node


def test_coredns_is_v1_12_4_built_from_the_modules_own_main_in_its_own_cache_directory():
    binary = build.BINARIES["coredns"]
    assert build.binary_version(binary) == ("github.com/coredns/coredns", "v1.12.4")
    assert binary.main == "testenv/cluster/go/coredns"
    # not the cache directory of the build with every plugin (coredns-v1.12.4), which a warm machine still holds
    assert build.cached_path("coredns").parent.name == "coredns-k8s-v1.12.4"


def test_the_node_corefile_uses_only_plugins_the_build_imports():
    source = (build.GO_DIR / "coredns" / "main.go").read_text()
    imported = set(re.findall(r'_ "github.com/coredns/coredns/plugin/(\w+)"', source))
    corefile = node.corefile(SimpleNamespace(ip="10.0.0.1"), "/kubeconfig")
    # the server block's directives: its lines indented once (a plugin's own block is indented twice)
    used = {line.split()[0] for line in corefile.splitlines() if re.match(r"    \w", line)}
    assert used == {"bind", "errors", "kubernetes"}
    assert used <= imported
    # kubeadm's default Corefile, which kind's node runs (the prometheus directive is plugin/metrics)
    assert {"errors", "health", "ready", "kubernetes", "metrics", "forward", "cache", "loop", "reload",
            "loadbalance"} <= imported
