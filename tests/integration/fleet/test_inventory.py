"""The hostedclusters inventory plugin on the local API server: ansible-inventory's hosts, groups and hostvars, the
requests it sends (one paged HostedCluster LIST per management cluster, one consistent snapshot), the cache, clear
errors, and migrate_fleet.yml driven by it (--limit one host migrates exactly that HostedCluster)."""
import json
import os
import subprocess
import sys

import pytest
import yaml

from testenv.client import wait_for
from testenv.cluster.cluster import free_port
from testenv.cluster.testing import start_cluster
from testenv import REPO_ROOT
from testenv.hcp import fleet
from tests.integration.fleet.support import ANSIBLE_PLAYBOOK, FAST_VARS, hostedcluster_states, read_report, start_fleet

ANSIBLE_INVENTORY = os.path.join(os.path.dirname(sys.executable), "ansible-inventory")
HC_API = "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters"
HC_RESOURCE = "hypershift.openshift.io/hostedclusters"
FAILED_REASON = "copy: admission webhook denied (earlier run)"
# hc-01 and hc-05 stay legacy; the others are moved to the other states by annotations, as the state machine writes them
STATE_PATCHES = {
    "hc-02": {"annotations": {"hypershift.openshift.io/migration-failed": FAILED_REASON},
              "labels": {fleet.STATE_LABEL: "failed", "tier": "gold"}},
    "hc-03": {"annotations": {fleet.SCOPE_ANNOTATION: None, "hypershift.openshift.io/private-capi-types": "true"},
              "labels": {fleet.STATE_LABEL: "migrated"}},
    "hc-04": {"annotations": {fleet.SCOPE_ANNOTATION: None}, "labels": {fleet.STATE_LABEL: None}},
    "hc-05": {"labels": {"tier": "gold"}},
}


def patch_hostedcluster(server, name, metadata):
    response = server.request("PATCH", "%s/%s" % (HC_API, name), body={"metadata": metadata},
                              content_type="application/merge-patch+json")
    assert response.status == 200, response


@pytest.fixture(scope="module")
def fleet_server(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("inventory")
    server, _crds = start_fleet(tmp_path, fleet.fleet_spec(5, machines=1), faults=True)
    for name, metadata in STATE_PATCHES.items():
        patch_hostedcluster(server, name, metadata)
    yield server, tmp_path
    assert server.stop() == 0


def write_source(path, kubeconfig, more_sources=(), **options):
    config = {"plugin": "hypershift.private_capi.hostedclusters",
              "management_clusters": [{"name": "mc-1", "kubeconfig": kubeconfig}] + list(more_sources)}
    config["management_clusters"][0].update(options.pop("source", {}))
    config.update(options)
    with open(path, "w") as handle:
        yaml.safe_dump(config, handle)
    return str(path)


def inventory(source, *arguments, unparsed_failed=False, check=True):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    if unparsed_failed:
        env["ANSIBLE_INVENTORY_UNPARSED_FAILED"] = "true"
    result = subprocess.run([ANSIBLE_INVENTORY, "-i", source, "--list"] + list(arguments), cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    if check:
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Failed to parse" not in result.stderr, result.stderr[-3000:]
        return plain(json.loads(result.stdout))
    return result


def plain(value):
    """ansible-inventory's JSON with ansible-core 2.19's {"__ansible_unsafe": v} markers (API values) unwrapped."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def hosts_of(listed, group):
    return sorted(listed.get(group, {}).get("hosts", []))


def run_playbook(playbook, source, extra_vars, limit=None):
    """ansible-playbook as support.run_playbook runs it, with --limit when given."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    command = [ANSIBLE_PLAYBOOK, "-i", source, os.path.join(REPO_ROOT, "playbooks", playbook),
               "-e", json.dumps(dict(FAST_VARS, **extra_vars))] + (["--limit", limit] if limit else [])
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)


def list_requests(server, resource=HC_RESOURCE):
    return [entry for entry in server.request_counts()["entries"]
            if entry["verb"] == "list" and "%s/%s" % (entry["group"], entry["resource"]) == resource]


def test_list_shows_one_host_per_hostedcluster_with_groups_hostvars_and_counts(fleet_server, tmp_path):
    server, _fleet_tmp = fleet_server
    source = write_source(tmp_path / "fleet.hostedclusters.yml", server.kubeconfig, page_size=2,
                          keyed_groups=[{"key": "private_capi_hc_labels['tier'] | default('none')", "prefix": "tier"}],
                          groups={"has_machines": "private_capi_capi_objects.standard.Machine | default(0) > 0"},
                          compose={"hcp": "private_capi_hcp_namespace"})
    server.reset_requests()
    listed = inventory(source)
    names = ["mc-1/clusters/hc-%02d" % index for index in range(1, 6)]
    assert hosts_of(listed, "capi_hostedclusters") == names
    assert hosts_of(listed, "capi_legacy") == [names[0], names[4]]
    assert hosts_of(listed, "capi_failed") == [names[1]]
    assert hosts_of(listed, "capi_migrated") == [names[2]]
    assert hosts_of(listed, "capi_new") == [names[3]]
    assert "capi_in_progress" not in listed and "capi_invalid" not in listed
    assert hosts_of(listed, "platform_aws") == [names[0], names[2], names[4]]
    assert hosts_of(listed, "platform_kubevirt") == [names[1], names[3]]
    assert hosts_of(listed, "mc_mc_1") == names
    assert hosts_of(listed, "tier_gold") == [names[1], names[4]]
    assert hosts_of(listed, "tier_none") == [names[0], names[2], names[3]]
    assert hosts_of(listed, "has_machines") == names
    hostvars = listed["_meta"]["hostvars"]
    failed = hostvars[names[1]]
    assert {key: failed[key] for key in (
        "private_capi_management_cluster", "private_capi_hc_name", "private_capi_hc_namespace",
        "private_capi_hcp_namespace", "private_capi_platform", "private_capi_state", "private_capi_failed_reason",
        "private_capi_kubeconfig", "ansible_connection", "hcp")} == {
        "private_capi_management_cluster": "mc-1", "private_capi_hc_name": "hc-02",
        "private_capi_hc_namespace": "clusters", "private_capi_hcp_namespace": "clusters-hc-02",
        "private_capi_platform": "KubeVirt", "private_capi_state": "failed", "private_capi_failed_reason": FAILED_REASON,
        "private_capi_kubeconfig": server.kubeconfig, "ansible_connection": "local", "hcp": "clusters-hc-02"}
    assert "private_capi_context" not in failed
    # 1 NodePool x 1 Machine: Cluster, infrastructure cluster, MachineDeployment, MachineSet, Machine, template, infra machine
    assert hostvars[names[0]]["private_capi_capi_objects"] == {"private": {}, "standard": {
        "AWSCluster": 1, "AWSMachine": 1, "AWSMachineTemplate": 1, "Cluster": 1, "Machine": 1, "MachineDeployment": 1,
        "MachineSet": 1}}
    assert hostvars[names[1]]["private_capi_standard_objects"] == 7
    assert hostvars[names[1]]["private_capi_private_objects"] == 0
    # the cost: one HostedCluster LIST in ceil(5/2) pages; counting = 2 discovery GETs + cluster-wide LISTs per kind
    counts = server.request_counts()
    assert len(list_requests(server)) == 3
    assert set(counts["by_verb"]) == {"get", "list"} and counts["by_verb"]["get"] == 2
    capi_lists = [entry for entry in counts["entries"] if entry["verb"] == "list" and entry["resource"] != "hostedclusters"]
    assert capi_lists and all(entry["namespace"] == "" and "cluster." in entry["group"] for entry in capi_lists)
    assert {entry["group"] for entry in capi_lists} >= {"cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io"}


def test_pages_of_the_hostedcluster_list_are_one_consistent_snapshot(fleet_server, tmp_path):
    server, _fleet_tmp = fleet_server
    source = write_source(tmp_path / "pages.hostedclusters.yml", server.kubeconfig, page_size=2, object_counts=False)
    server.reset_requests()
    # the second page waits 3 s; meanwhile a HostedCluster is added and one on the last page changes state
    server.add_fault({"verb": "list", "group": "hypershift.openshift.io", "resource": "hostedclusters", "nth": 2,
                      "action": "hang", "seconds": 3})
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"))
    process = subprocess.Popen([ANSIBLE_INVENTORY, "-i", source, "--list"], cwd=REPO_ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    added = fleet.hostedcluster_objects("AWS", fleet.HC_NAMESPACE, "hc-99")[0]
    added["metadata"].pop("finalizers")
    try:
        wait_for(lambda: list_requests(server), "the first page of the HostedCluster LIST", timeout=60)
        assert server.request("POST", HC_API, body=added).status == 201
        patch_hostedcluster(server, "hc-05", {"annotations": {"hypershift.openshift.io/migration-in-progress": "true"}})
        stdout, stderr = process.communicate(timeout=120)
    finally:
        server.clear_faults()
        if process.poll() is None:
            process.kill()
        server.request("DELETE", "%s/hc-99" % HC_API)
        patch_hostedcluster(server, "hc-05", {"annotations": {"hypershift.openshift.io/migration-in-progress": None}})
    assert process.returncode == 0, stderr[-3000:]
    listed = plain(json.loads(stdout))
    assert len(list_requests(server)) == 3
    assert hosts_of(listed, "capi_hostedclusters") == ["mc-1/clusters/hc-%02d" % index for index in range(1, 6)]
    assert listed["_meta"]["hostvars"]["mc-1/clusters/hc-05"]["private_capi_state"] == "legacy"
    assert "private_capi_capi_objects" not in listed["_meta"]["hostvars"]["mc-1/clusters/hc-05"]


def test_an_expired_continue_token_restarts_the_list(fleet_server, tmp_path):
    server, _fleet_tmp = fleet_server
    source = write_source(tmp_path / "expired.hostedclusters.yml", server.kubeconfig, page_size=2, object_counts=False)
    server.reset_requests()
    server.add_fault({"verb": "list", "group": "hypershift.openshift.io", "resource": "hostedclusters", "nth": 2,
                      "code": 410, "message": "The provided continue parameter is too old (injected)"})
    try:
        listed = inventory(source)
    finally:
        server.clear_faults()
    assert [entry["code"] for entry in list_requests(server)] == [200, 410, 200, 200, 200]
    assert hosts_of(listed, "capi_hostedclusters") == ["mc-1/clusters/hc-%02d" % index for index in range(1, 6)]


def test_the_cache_answers_without_a_request_until_flushed_or_the_file_changes(fleet_server, tmp_path):
    server, _fleet_tmp = fleet_server
    cache = {"cache": True, "cache_plugin": "ansible.builtin.jsonfile", "cache_connection": str(tmp_path / "cache"),
             "object_counts": False}
    # a second management cluster entry (the same server, one namespace): one HostedCluster LIST per entry
    second = [{"name": "mc-2", "kubeconfig": server.kubeconfig, "namespace": "clusters"}]
    source = write_source(tmp_path / "cached.hostedclusters.yml", server.kubeconfig, second, **cache)
    server.reset_requests()
    first = inventory(source)
    assert hosts_of(first, "mc_mc_2") == ["mc-2/clusters/hc-%02d" % index for index in range(1, 6)]
    assert len(hosts_of(first, "capi_hostedclusters")) == 10
    assert [entry["namespace"] for entry in list_requests(server)] == ["", "clusters"]
    server.reset_requests()
    assert inventory(source) == first
    assert server.request_counts()["total"] == 0
    assert inventory(source, "--flush-cache") == first
    assert len(list_requests(server)) == 2
    server.reset_requests()
    write_source(source, server.kubeconfig, second, page_size=4, **cache)  # another file: the cached entry is not used
    assert inventory(source) == first
    assert len(list_requests(server)) == 4  # 5 HostedClusters in pages of 4, per entry


def test_a_wrong_context_an_unreachable_server_and_a_missing_crd_are_clear_errors(fleet_server, tmp_path):
    server, _fleet_tmp = fleet_server
    wrong = write_source(tmp_path / "wrong.hostedclusters.yml", server.kubeconfig, source={"context": "nope"})
    result = inventory(wrong, unparsed_failed=True, check=False)
    assert result.returncode != 0
    assert ("hostedclusters inventory %s, management cluster 'mc-1' (kubeconfig %s, context nope): kubeconfig %s "
            % (wrong, server.kubeconfig, server.kubeconfig)) in result.stderr
    with open(server.kubeconfig) as handle:
        config = yaml.safe_load(handle)
    contexts = ", ".join(context["name"] for context in config["contexts"])
    assert "asks for 'nope', which the kubeconfig does not define (contexts in the file: %s)" % contexts \
        in result.stderr
    assert "fix the kubeconfig or context of this entry" in result.stderr

    closed = "https://127.0.0.1:%d" % free_port()
    config["clusters"][0]["cluster"]["server"] = closed
    with open(tmp_path / "down.kubeconfig", "w") as handle:
        yaml.safe_dump(config, handle)
    down = write_source(tmp_path / "down.hostedclusters.yml", "down.kubeconfig", request_timeout=5)
    result = inventory(down, unparsed_failed=True, check=False)
    assert result.returncode != 0
    assert "management cluster 'mc-1' (kubeconfig %s): the API server %s is unreachable (" \
        % (tmp_path / "down.kubeconfig", closed) in result.stderr
    assert "check that it is up and reachable from here" in result.stderr

    bare = start_cluster(tmp_path / "bare", components=(), pods="kwok-only")
    try:
        absent = write_source(tmp_path / "absent.hostedclusters.yml", bare.kubeconfig)
        result = inventory(absent, unparsed_failed=True, check=False)
    finally:
        assert bare.stop() == 0
    assert result.returncode != 0
    assert "the API server %s does not serve hostedclusters.hypershift.openshift.io/v1beta1 (404" % bare.url \
        in result.stderr
    assert "the HostedCluster CRD is absent, so this is not a HyperShift management cluster" in result.stderr


def test_migrate_fleet_with_the_plugin_honours_the_selection_variables(fleet_server, tmp_path):
    server, _fleet_tmp = fleet_server
    source = write_source(tmp_path / "select.hostedclusters.yml", server.kubeconfig, object_counts=False)
    before = hostedcluster_states(server)
    server.reset_requests()
    # label tier=gold: hc-02 (failed) and hc-05 (legacy), not hc-01 (legacy); the name pattern leaves hc-05 out;
    # the states leave hc-03 (migrated) and hc-04 (new) out
    result = run_playbook("migrate_fleet.yml", source, {
        "private_capi_fleet_label_selector": "tier=gold", "private_capi_fleet_name_regex": "^hc-0[1-4]$",
        "private_capi_fleet_states": ["legacy", "failed"], "private_capi_fleet_install_crds": False,
        # selection only: dual_operator would mark hc-04 (new) legacy and install operator-legacy (its own tests)
        "private_capi_fleet_dual_operator": False,
        "private_capi_fleet_report_root": str(tmp_path / "reports")})
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "1 of 5 HostedClusters selected" in output, output[-4000:]
    assert "  1. mc-1/clusters/hc-02 [KubeVirt] failed -> migrated" in output
    for name in ("hc-01", "hc-03", "hc-04", "hc-05"):
        assert "  -  mc-1/clusters/%s " % name in output
    # the failed HostedCluster is left alone (it needs remediation first): nothing was written
    assert [(c["name"], c["status"]) for c in read_report(str(tmp_path / "reports"))["clusters"]] == [("hc-02", "skipped")]
    assert hostedcluster_states(server) == before
    assert server.request_counts()["mutating"] == 0


def test_migrate_fleet_with_the_plugin_and_limit_migrates_exactly_that_hostedcluster(fleet_server, tmp_path):
    server, _fleet_tmp = fleet_server
    source = write_source(tmp_path / "run.hostedclusters.yml", server.kubeconfig)
    report_root = str(tmp_path / "reports")
    before = hostedcluster_states(server)
    result = run_playbook("migrate_fleet.yml", source, {"private_capi_fleet_serial": 2,
                                                        "private_capi_fleet_report_root": report_root},
                          limit="mc-1/clusters/hc-01")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    # dual_operator (on by default) also marked the unmarked hc-04 legacy before the new operator took over
    assert hostedcluster_states(server) == dict(before, **{"hc-01": "migrated", "hc-04": "legacy"}), output[-4000:]
    assert "1 of 1 HostedClusters selected" in output
    # the private CRDs went on once, from the selection play, not again inside the migration
    assert output.count("included: hypershift.private_capi.private_crds for") == 1, output[-4000:]
    assert [entry["name"] for entry in read_report(report_root)["clusters"]] == ["hc-01"]
    private = server.request("GET", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/clusters-hc-01/machines")
    assert len(private.json()["items"]) == 1
    standard = server.request("GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/clusters-hc-05/machines").json()
    assert len(standard["items"]) == 1
    untouched = server.request("GET", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/clusters-hc-05/machines")
    assert untouched.json()["items"] == []


def test_a_selection_of_nothing_with_the_plugin_fails_naming_what_left_each_hostedcluster_out(fleet_server, tmp_path):
    server, _fleet_tmp = fleet_server
    source = write_source(tmp_path / "none.hostedclusters.yml", server.kubeconfig, object_counts=False)
    report_root = tmp_path / "reports"
    server.reset_requests()
    result = run_playbook("migrate_fleet.yml", source, {
        "private_capi_fleet_names": ["hc-99"], "private_capi_fleet_install_crds": False,
        "private_capi_fleet_dual_operator": False, "private_capi_fleet_report_root": str(report_root)})
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-4000:]
    # judged in the plugin hosts' play, over all of them (the localhost play, with no candidate, leaves it to that one)
    assert ("0 HostedClusters selected: 5 HostedClusters found on mc-1, none passes the selection of this migration - "
            in output), output[-4000:]
    assert "private_capi_fleet_names [hc-99]: 0 of 5 are named" in output
    assert "set private_capi_fleet_allow_empty=true" in output
    # it stops before the migrate play and the report: no record directory, nothing written to the cluster
    assert not report_root.exists(), list(report_root.rglob("*"))
    assert "PLAY [Migrate each selected HostedCluster]" not in output
    assert server.request_counts()["mutating"] == 0


def test_verify_fleet_with_the_plugin_verifies_its_hostedcluster_hosts(fleet_server, tmp_path):
    server, _fleet_tmp = fleet_server
    source = write_source(tmp_path / "verify.hostedclusters.yml", server.kubeconfig, object_counts=False)
    report_root = tmp_path / "reports"
    server.reset_requests()
    result = run_playbook("verify_fleet.yml", source, {"private_capi_fleet_names": ["hc-01", "hc-05"],
                                                       "private_capi_verify_report_root": str(report_root)})
    output = result.stdout + result.stderr
    # each read and judged by its state (hc-01 is migrated once the --limit test above has run; hc-05 stays legacy,
    # so the run fails)
    assert result.returncode != 0, output[-4000:]
    assert "Verification (read-only): 2 of 5 HostedClusters" in output, output[-4000:]
    written = sorted(report_root.glob("verify-*.json"))
    assert len(written) == 1, written
    rows = json.loads(written[0].read_text())
    states = hostedcluster_states(server)
    assert [(row["management_cluster"], row["name"], row["state"], row["ok"]) for row in rows] == [
        ("mc-1", name, states[name], states[name] == "migrated") for name in ("hc-01", "hc-05")], rows
    assert states["hc-05"] == "legacy"
    assert server.request_counts()["mutating"] == 0
