"""Shared by the monitoring tests: the real promtool and prometheus (built from the Go module pinned in
testenv/cluster/go/prometheus into the per-version cache, testenv.cluster.build), and the rule file."""
import os
import subprocess

import pytest
import yaml

from ansible_collections.hypershift.private_capi.plugins.module_utils import monitoring
from testenv.cluster.build import BuildError, ensure_binaries


def binaries():
    """{prometheus, promtool: path}, built on first use (a few minutes on 2 cores)."""
    try:
        return ensure_binaries(["prometheus", "promtool"])
    except BuildError as exc:  # no Go: say so, do not skip silently
        pytest.fail("prometheus and promtool cannot be built (make the monitoring binaries with "
                    "`python -m testenv.cluster build prometheus promtool`): %s" % exc)


def write_rule_file(directory, settings=None):
    path = os.path.join(str(directory), "rules.yml")
    with open(path, "w") as handle:
        yaml.safe_dump(monitoring.rule_file(settings), handle, sort_keys=False)
    return path


def promtool(*args, stdin=None):
    return subprocess.run([binaries()["promtool"], *args], input=stdin, capture_output=True, text=True, check=False,
                          timeout=120)


# -- the exporter and a real Prometheus as host processes, on loopback only -----------------------------------------

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


def start_exporter(kubeconfig, directory):
    """`capi-proxy exporter` as the proxy's image runs it here (the installed package of `make proxy-venv`, else the
    checkout's), listing and watching the server of kubeconfig; returns (process, its /metrics URL)."""
    from testenv.cluster.pods import proxy_entrypoint  # pylint: disable=import-outside-toplevel
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
    process = Process([binaries()["prometheus"], "--config.file=" + path,
                       "--storage.tsdb.path=" + os.path.join(str(directory), "tsdb"),
                       "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
                      os.path.join(str(directory), "prometheus.log"))
    return process, "http://127.0.0.1:%d" % port


def query(base_url, promql):
    """The instant vector of promql as [(labels, float value)], or None when Prometheus does not answer yet."""
    import json  # pylint: disable=import-outside-toplevel
    import urllib.error  # pylint: disable=import-outside-toplevel
    import urllib.parse  # pylint: disable=import-outside-toplevel
    import urllib.request  # pylint: disable=import-outside-toplevel
    url = "%s/api/v1/query?%s" % (base_url, urllib.parse.urlencode({"query": promql}))
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.load(response)
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return [(sample["metric"], float(sample["value"][1])) for sample in body["data"]["result"]]


def scalar(base_url, promql):
    """The single value of promql (a sum), None while Prometheus does not answer or has nothing."""
    vector = query(base_url, promql)
    return vector[0][1] if vector else None
