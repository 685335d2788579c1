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


# the exporter and a real Prometheus as host processes: testenv/monitoring.py (the demo starts them too)


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
