"""hypershift.private_capi.private_crd_render and the private_crds role against the real control plane.

The server is this module's own `bare_cluster` (testenv/cluster, no CRDs at the start): the tests install the real
standard CRDs (testenv/upstream/capi/crds plus testenv/upstream/hypershift/crds), render, upgrade and remove the
twins, so they run in file order on the one server. The module runs in its own process
(testenv/module_runner.py) and the role through ansible-playbook.
"""
import glob
import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.hypershift.private_capi.plugins.module_utils.crds import render as crd_render
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import TO_PRIVATE, translate_object
from ansible_collections.hypershift.private_capi.plugins.module_utils import contract
from testenv.cluster.testing import install_crds
from testenv.upstream import CAPI_CRDS, CAPI_EXAMPLES_V1BETA2, HYPERSHIFT_CRDS
from testenv import REPO_ROOT
from testenv.module_runner import run_module

pytestmark = pytest.mark.slow

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
# no webhook listens there: the tests write and read the twins' objects at their storage version only, which the
# apiserver never sends to a conversion webhook
SHIM_URL = "https://127.0.0.1:9/convert"
AGENT = {"capi-provider.agent-install.openshift.io": "capi-provider.agent-install.hypershift.openshift.io"}
EXAMPLE = os.path.join(CAPI_EXAMPLES_V1BETA2, "examples__simple-cluster-without-kcp.yaml")
ANSIBLE_PLAYBOOK = os.path.join(REPO_ROOT, ".venv", "bin", "ansible-playbook")
ROLE_PLAYBOOK = os.path.join(REPO_ROOT, "tests", "integration", "playbooks", "private_crds_role.yml")
RECAP_RE = re.compile(r"^localhost\s*:\s*(?P<counts>(?:\w+=\d+\s*)+)$", re.MULTILINE)


def standard_crds():
    """Every standard CRD HyperShift installs, once each (the HyperShift copies win over upstream's)."""
    by_name = {}
    paths = sorted(glob.glob(os.path.join(CAPI_CRDS, "*.yaml")))
    paths += sorted(glob.glob(os.path.join(HYPERSHIFT_CRDS, "**", "*.yaml"), recursive=True))
    for path in paths:
        with open(path) as handle:
            crd = yaml.load(handle, Loader=LOADER)
        by_name[crd["metadata"]["name"]] = crd
    return by_name


STANDARD = standard_crds()
MAPPED = sorted(name for name, crd in STANDARD.items() if crd["spec"]["group"] != "hypershift.openshift.io")


def through_the_shim(crd):
    """Whether a source's twin converts through the shim: two served versions, and the core group (the shim converts
    it) or a source that converts through a webhook itself (the shim delegates to it); else strategy None, as the
    source (Agent's v1alpha1/v1beta1, ipam and addons as these files ship)."""
    served = [v for v in crd["spec"]["versions"] if v["served"]]
    webhook = (crd["spec"].get("conversion") or {}).get("strategy") == "Webhook"
    return len(served) > 1 and (crd["spec"]["group"] == "cluster.x-k8s.io" or webhook)


@pytest.fixture(scope="module")
def server(bare_cluster):
    with bare_cluster.api_client() as api:
        install_crds(api, list(STANDARD.values()))
    response = bare_cluster.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                                   "metadata": {"name": "capi"}})
    assert response.status == 201, response
    return bare_cluster


def render(server, check_mode=False, diff=False, **options):
    args = dict(kubeconfig=server.kubeconfig, from_cluster=True, extra_groups=AGENT, conversion_webhook_url=SHIM_URL)
    args.update(options)
    return run_module("private_crd_render", args, check_mode=check_mode, diff=diff)


def private_name(name):
    plural, group = name.split(".", 1)
    return "%s.%s" % (plural, AGENT.get(group, group.replace("cluster.x-k8s.io", "cluster.hypershift.openshift.io")))


HOLD = "e2e.example.com/hold"


def live_crd(server, name):
    response = server.request("GET", "%s/%s" % (CRD_PATH, name))
    return response.json() if response.status == 200 else None


def writes_since(server, since):
    return [entry for entry in server.request_counts(since)["entries"] if entry["verb"] not in ("get", "list", "watch")]


def last_seq(server):
    entries = server.request_counts()["entries"]
    return entries[-1]["seq"] if entries else 0


def assert_ok(result, changed):
    assert not result.failed, (result.get("msg"), result.stderr[-3000:])
    assert result["changed"] is changed


def test_apply_from_cluster_creates_every_twin_and_a_rerun_writes_nothing(server):
    first = render(server, wait=True)
    assert_ok(first, True)
    assert sorted(first["rendered"]) == sorted(private_name(name) for name in MAPPED)
    assert len(first["rendered"]) == 30
    assert {entry["action"] for entry in first["results"]} == {"created"}
    for name in MAPPED:
        twin = live_crd(server, private_name(name))
        source = STANDARD[name]
        assert twin["spec"]["versions"] == source["spec"]["versions"], name
        assert twin["metadata"]["annotations"][crd_render.SOURCE_CRD_ANNOTATION] == name
        assert twin["metadata"]["labels"][contract.CRD_MANAGED_LABEL] == "true"
        assert twin["spec"]["conversion"]["strategy"] == ("Webhook" if through_the_shim(source) else "None"), name
    since = last_seq(server)
    second = render(server, wait=True)
    assert_ok(second, False)
    assert {entry["action"] for entry in second["results"]} == {"unchanged"}
    assert writes_since(server, since) == []
    discovery = server.request("GET", "/apis").json()
    groups = {group["name"] for group in discovery["groups"]}
    assert {"cluster.hypershift.openshift.io", "infrastructure.cluster.hypershift.openshift.io",
            "ipam.cluster.hypershift.openshift.io", "addons.cluster.hypershift.openshift.io",
            "runtime.cluster.hypershift.openshift.io", "capi-provider.agent-install.hypershift.openshift.io"} <= groups


def test_check_mode_reports_without_writing_and_diff_lists_the_change(server):
    render(server)
    before = live_crd(server, "machines.cluster.hypershift.openshift.io")
    dry = render(server, check_mode=True, diff=True, conversion_webhook_url="https://127.0.0.1:10/convert")
    assert_ok(dry, True)
    changed = [entry for entry in dry["results"] if entry["changed"]]
    shimmed = [name for name in MAPPED if through_the_shim(STANDARD[name])]
    assert len(shimmed) == 8  # the core group's kinds with two versions
    assert sorted(entry["name"] for entry in changed) == sorted(private_name(name) for name in shimmed)
    assert {entry["action"] for entry in changed} == {"updated"}
    machine_diff = next(d for d in dry["diff"] if "machines.cluster.hypershift.openshift.io" in d["before_header"])
    assert machine_diff["after"]["spec.conversion.webhook.clientConfig.url"] == "https://127.0.0.1:10/convert"
    after = live_crd(server, "machines.cluster.hypershift.openshift.io")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    created_dry = render(server, check_mode=True, definitions=[dict(STANDARD["machines.cluster.x-k8s.io"],
                         metadata={"name": "machines.cluster.x-k8s.io"})], from_cluster=False, short_name_prefix="zz")
    assert_ok(created_dry, True)
    assert live_crd(server, "machines.cluster.hypershift.openshift.io")["spec"]["names"]["shortNames"] == ["hcpma"]


def test_verify_reads_back_and_names_each_standard_crd_without_a_right_twin(server):
    every = render(server, wait=True, verify=True)
    assert_ok(every, False)
    assert every["twin_problems"] == []
    # a standard CRD the run did not render (definitions name another one): its twin is missing, and verify says so
    extra = dict(STANDARD["machinesets.cluster.x-k8s.io"])
    extra["metadata"] = {"name": "widgetsets.cluster.x-k8s.io"}
    extra["spec"] = dict(extra["spec"], names={"plural": "widgetsets", "singular": "widgetset", "kind": "WidgetSet",
                                               "listKind": "WidgetSetList"})
    with server.api_client() as api:
        install_crds(api, [extra])
    try:
        one = render(server, wait=True, verify=True, from_cluster=False,
                     definitions=[STANDARD["machines.cluster.x-k8s.io"]])
        assert_ok(one, False)
        assert len(one["twin_problems"]) == 1, one["twin_problems"]
        assert one["twin_problems"][0].startswith("CRD widgetsets.cluster.x-k8s.io serves ['v1beta1', 'v1beta2'], but "
                                                  "its private twin widgetsets.cluster.hypershift.openshift.io is missing")
        # in check mode the twin the run would create stands in for it (nothing is written)
        predicted = render(server, check_mode=True, verify=True)
        assert_ok(predicted, True)
        assert predicted["twin_problems"] == []
        assert live_crd(server, "widgetsets.cluster.hypershift.openshift.io") is None
    finally:
        server.request("DELETE", "%s/widgetsets.cluster.x-k8s.io" % CRD_PATH)


def load_example_objects():
    with open(EXAMPLE) as handle:
        documents = [doc for doc in yaml.load_all(handle, Loader=LOADER) if doc]
    return [dict(doc, metadata=dict(doc["metadata"], namespace="capi")) for doc in documents
            if doc["kind"] in ("Cluster", "Machine", "MachineDeployment")]


def test_objects_in_both_groups_are_separate_and_kubectl_finds_each_by_full_resource_name(server):
    render(server, wait=True)
    for standard in load_example_objects():
        private = translate_object(standard, TO_PRIVATE)
        for obj in (standard, private):
            group, version = obj["apiVersion"].split("/")
            plural = obj["kind"].lower() + "s"
            response = server.request("POST", "/apis/%s/%s/namespaces/capi/%s" % (group, version, plural), obj)
            assert response.status == 201, response
    standard_machines = server.kubectl_json("get", "machines.cluster.x-k8s.io", "-n", "capi")
    private_machines = server.kubectl_json("get", "machines.cluster.hypershift.openshift.io", "-n", "capi")
    assert [m["apiVersion"] for m in standard_machines["items"]] == ["cluster.x-k8s.io/v1beta2"]
    assert [m["apiVersion"] for m in private_machines["items"]] == ["cluster.hypershift.openshift.io/v1beta2"]
    assert private_machines["items"][0]["spec"]["infrastructureRef"]["apiGroup"] == "infrastructure.cluster.hypershift.openshift.io"
    by_short_name = server.kubectl_json("get", "hcpma", "-n", "capi")
    assert [m["apiVersion"] for m in by_short_name["items"]] == ["cluster.hypershift.openshift.io/v1beta2"]
    standard_short = server.kubectl_json("get", "ma", "-n", "capi")
    assert [m["apiVersion"] for m in standard_short["items"]] == ["cluster.x-k8s.io/v1beta2"]
    category = server.kubectl("get", "hypershift-capi", "-n", "capi", "-o", "name").stdout.split()
    assert sorted(category) == ["cluster.cluster.hypershift.openshift.io/my-cluster",
                                "machine.cluster.hypershift.openshift.io/controlplane-0",
                                "machinedeployment.cluster.hypershift.openshift.io/worker-md-0"]
    mds = server.kubectl("get", "machinedeployments.cluster.hypershift.openshift.io", "-n", "capi", "-o", "name").stdout.split()
    assert mds == ["machinedeployment.cluster.hypershift.openshift.io/worker-md-0"]


def test_an_upgraded_source_crd_is_reported_as_an_upgrade(server):
    render(server)
    name = "machinedrainrules.cluster.x-k8s.io"
    live = live_crd(server, name)
    live["spec"]["versions"][0]["additionalPrinterColumns"] = [{"name": "Order", "type": "integer", "jsonPath": ".spec.drain.order"}]
    response = server.request("PUT", "%s/%s" % (CRD_PATH, name), live)
    assert response.status == 200, response
    upgraded = render(server)
    assert_ok(upgraded, True)
    changes = [(entry["name"], entry["action"]) for entry in upgraded["results"] if entry["changed"]]
    assert changes == [("machinedrainrules.cluster.hypershift.openshift.io", "upgraded")]
    entry = next(entry for entry in upgraded["results"] if entry["changed"])
    assert entry["previous_source_hash"] != entry["source_hash"] == crd_render.source_spec_hash(live)
    twin = live_crd(server, "machinedrainrules.cluster.hypershift.openshift.io")
    assert twin["spec"]["versions"][0]["additionalPrinterColumns"][0]["name"] == "Order"
    assert_ok(render(server), False)


def test_input_errors_fail_with_file_and_index_before_any_write(server, tmp_path):
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(STANDARD["machines.cluster.x-k8s.io"]))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(STANDARD["clusters.cluster.x-k8s.io"]) + "---\napiVersion: v1\nkind: ConfigMap\n")
    since = last_seq(server)
    result = render(server, from_cluster=False, src=str(tmp_path))
    assert result.failed
    assert result["msg"] == ("%s document 1: expected kind CustomResourceDefinition, found kind 'ConfigMap'; pass only CRDs"
                             % (tmp_path / "b.yaml"))
    assert writes_since(server, since) == []
    both = render(server, src=str(tmp_path))
    assert both.failed and "do not also pass src" in both["msg"]


def test_role_applies_verifies_and_a_second_run_is_all_ok(server):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    command = [ANSIBLE_PLAYBOOK, ROLE_PLAYBOOK, "-e", "kubeconfig=%s" % server.kubeconfig, "-e", "shim_url=%s" % SHIM_URL,
               "-e", "ansible_python_interpreter=%s" % sys.executable]
    runs = []
    for _run in range(2):
        completed = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
        output = completed.stdout + completed.stderr
        assert completed.returncode == 0, output
        match = RECAP_RE.search(completed.stdout)
        assert match, output
        runs.append(({key: int(value) for key, value in (item.split("=") for item in match.group("counts").split())}, output))
    second, output = runs[1]
    assert second["changed"] == 0 and second["failed"] == 0 and second["ok"] >= 5, output
    assert "Assert each standard CAPI CRD has an Established twin" in output


def test_absent_refuses_while_objects_exist_then_removes_only_managed_twins(server):
    blocked = render(server, state="absent")
    assert blocked.failed
    assert "refusing to delete private CRDs that still hold objects" in blocked["msg"]
    assert "machines.cluster.hypershift.openshift.io: Machine capi/controlplane-0" in blocked["msg"]
    assert live_crd(server, "machinehealthchecks.cluster.hypershift.openshift.io") is not None, "nothing may be deleted"
    for plural, name in (("machines", "controlplane-0"), ("machinedeployments", "worker-md-0"), ("clusters", "my-cluster")):
        response = server.request("DELETE", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/capi/%s/%s" % (plural, name))
        assert response.status in (200, 202), response
    dry = render(server, state="absent", check_mode=True)
    assert_ok(dry, True)
    assert live_crd(server, "machines.cluster.hypershift.openshift.io") is not None
    # a finalizer of someone else's keeps one twin Terminating, as a slow cleanup would
    held = "machinehealthchecks.cluster.hypershift.openshift.io"
    response = server.request("PATCH", "%s/%s" % (CRD_PATH, held), {"metadata": {"finalizers": [HOLD]}},
                              content_type="application/merge-patch+json")
    assert response.status == 200, response
    removed = render(server, state="absent", wait=True, wait_timeout=3)
    assert removed.failed
    assert removed["msg"] == ("timed out after 3s waiting for the API server to finish deleting: %s; "
                              "read their status.conditions (Terminating) and re-run" % held)
    assert all(live_crd(server, private_name(name)) is None for name in MAPPED if private_name(name) != held)
    assert live_crd(server, held)["metadata"]["deletionTimestamp"]
    again = render(server, state="absent")
    assert_ok(again, False)
    assert [(entry["name"], entry["action"]) for entry in again["results"] if entry["action"] != "absent"] == [(held, "deleting")]
    finalizers = [name for name in live_crd(server, held)["metadata"]["finalizers"] if name != HOLD]
    response = server.request("PATCH", "%s/%s" % (CRD_PATH, held), {"metadata": {"finalizers": finalizers}},
                              content_type="application/merge-patch+json")
    assert response.status == 200, response
    assert_ok(render(server, state="absent", wait=True, wait_timeout=30), False)
    assert live_crd(server, held) is None
    assert live_crd(server, "machines.cluster.x-k8s.io") is not None, "standard CRDs are never touched"
    assert_ok(render(server, state="absent"), False)
