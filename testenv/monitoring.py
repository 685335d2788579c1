"""The fleet exporter (`capi-proxy exporter`) and a real Prometheus as host processes on loopback, for the monitoring
tests and the demo: Prometheus built from the Go module pinned in testenv/cluster/go/prometheus (testenv.cluster.build,
the per-version cache), scraping the exporter every second with the collection's rules."""
import os
import sys
from pathlib import Path
import subprocess

import yaml

from testenv import REPO_ROOT
from testenv.cluster.build import ensure_binaries


def loopback_port():
    """A free loopback port for a server of the test (never 20000: another user's port on shared machines)."""
    from testenv.cluster.cluster import free_port  # pylint: disable=import-outside-toplevel
    while True:
        port = free_port()
        if port != 20000:
            return port


class Process(object):
    """A host process of the test, its output in a log file; stop() ends it (SIGTERM, then SIGKILL)."""

    def __init__(self, command, log_path, env=None):
        from testenv.cluster.cluster import die_with_parent  # pylint: disable=import-outside-toplevel
        self.log_path = log_path
        self.log = open(log_path, "wb")
        self.popen = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                      preexec_fn=die_with_parent)

    def output(self):
        with open(self.log_path, errors="replace") as handle:
            return handle.read()

    def stop(self):
        from testenv.cluster.cluster import terminate  # pylint: disable=import-outside-toplevel
        code = terminate(self.popen)
        self.log.close()
        return code


REPO = Path(REPO_ROOT)
PROXY_VENV = REPO / ".build" / "proxy-venv"  # `make proxy-venv`: the package of the built collection tarball
# the Makefile's PROXY_SOURCES
PROXY_SOURCES = ("capi_proxy", "plugins/module_utils/translate", "plugins/module_utils/merge_patch.py",
                 "plugins/module_utils/messages.py", "plugins/module_utils/errors.py",
                 "plugins/module_utils/contract.py", "plugins/module_utils/hypershift.py",
                 "plugins/module_utils/state/machine.py", "pyproject.toml", "galaxy.yml", "requirements.txt")


def proxy_entrypoint():
    """`capi-proxy` of the package installed from the built collection tarball (`make proxy-venv`, what `make test`
    and `make demo` run), unless the checkout's proxy sources are newer than that install; then the checkout's
    `python -m capi_proxy`."""
    stamp = PROXY_VENV / ".installed"
    if stamp.exists():
        installed = stamp.stat().st_mtime
        newest = max(path.stat().st_mtime for source in PROXY_SOURCES for path in
                     ([REPO / source] if (REPO / source).is_file() else (REPO / source).rglob("*.py")))
        if newest <= installed:
            return {"entrypoint": [str(PROXY_VENV / "bin" / "capi-proxy")], "env": {}}
    return {"entrypoint": [sys.executable, "-m", "capi_proxy"], "env": {"PYTHONPATH": REPO_ROOT}}


def start_exporter(kubeconfig, directory):
    """`capi-proxy exporter` as the proxy's image runs it here (the installed package of `make proxy-venv`, else the
    checkout's), listing and watching the server of kubeconfig; returns (process, its /metrics URL)."""
    entry = proxy_entrypoint()
    port = loopback_port()
    env = dict(os.environ, **entry["env"])
    process = Process(entry["entrypoint"] + ["exporter", "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:%d" % port,
                                             "--watch-seconds", "30"],
                      os.path.join(str(directory), "exporter.log"), env=env)
    return process, "http://127.0.0.1:%d/metrics" % port


def start_prometheus(directory, metrics_url, rule_file=None):
    """The real Prometheus scraping metrics_url every second (a static target, honor_labels as the ServiceMonitor
    sets it); returns (process, its base URL)."""
    port = loopback_port()
    target = metrics_url.split("//", 1)[1].split("/", 1)[0]
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "scrape_configs": [{"job_name": "fleet-exporter", "honor_labels": True,
                                  "static_configs": [{"targets": [target]}]}]}
    if rule_file:
        config["rule_files"] = [rule_file]
    path = os.path.join(str(directory), "prometheus.yml")
    with open(path, "w") as handle:
        yaml.safe_dump(config, handle)
    process = Process([ensure_binaries(["prometheus"])["prometheus"], "--config.file=" + path,
                       "--storage.tsdb.path=" + os.path.join(str(directory), "tsdb"),
                       "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
                      os.path.join(str(directory), "prometheus.log"))
    return process, "http://127.0.0.1:%d" % port
