"""The API proxy sidecar's merge patches (plugins/module_utils/hcp/sidecar.py): the cases the role's Jinja templates
(deployment_present.json.j2, original.json.j2, deployment_absent.json.j2) covered, as pure functions."""
import copy
import json

import pytest

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import sidecar
from ansible_collections.hypershift.private_capi.plugins.module_utils.merge_patch import merge_patch
from ansible_collections.hypershift.private_capi.plugins.module_utils import contract

SETTINGS = {"image": "quay.io/hypershift/capi-proxy:1.0.0", "image_pull_policy": "IfNotPresent",
            "mount_path": "/etc/capi-proxy", "port": 8080, "metrics_port": 9090, "log_level": "info",
            "use_own_credentials": True, "extra_args": ["--discovery-ttl=10"],
            "resources": {"requests": {"cpu": "10m"}}, "liveness_probe": {"httpGet": {"path": "/healthz", "port": 9090}},
            "readiness_probe": {"httpGet": {"path": "/readyz", "port": 9090}}, "config_map_name": "capi-proxy-kubeconfig",
            "main_containers": []}
USER_ENV = [{"name": "KUBECONFIG", "value": "/var/kubeconfig/kubeconfig"}, {"name": "LOG", "value": "2"}]
USER_MOUNTS = [{"name": "kubeconfig", "mountPath": "/var/kubeconfig"}]
USER_VOLUMES = [{"name": "kubeconfig", "secret": {"secretName": "service-network-admin-kubeconfig"}}]


def deployment(name="cluster-api", containers=None, volumes="user", annotations=None):
    spec = {"containers": containers if containers is not None else [
        {"name": "manager", "image": "capi:1", "env": list(USER_ENV), "volumeMounts": list(USER_MOUNTS)},
        {"name": "metrics", "image": "kube-rbac-proxy:1"}]}
    if volumes is not None:
        spec["volumes"] = list(USER_VOLUMES if volumes == "user" else volumes)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "clusters-prod-01", "annotations": dict(annotations or {})},
            "spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def applied(obj, patch):
    """The Deployment after the merge patch (as the API server merges and stores it: an empty annotations map is not
    kept, ObjectMeta's omitempty)."""
    result = merge_patch(copy.deepcopy(obj), patch)
    template_metadata = result["spec"]["template"].get("metadata") or {}
    if template_metadata.get("annotations") == {}:
        del template_metadata["annotations"]
    return result


def containers(obj):
    return {c["name"]: c for c in obj["spec"]["template"]["spec"]["containers"]}


def test_put_in_points_every_main_container_at_the_proxy_and_records_what_it_changed():
    before = deployment()
    pristine = copy.deepcopy(before)
    patch = sidecar.present_patch(before, SETTINGS)
    assert before == pristine, "present_patch changed its input"
    after = applied(before, patch)
    found = containers(after)
    # the sidecar first, its hook holding the next containers until it is ready; kubectl's default stays the manager
    assert list(found) == ["kube-apiserver-proxy", "manager", "metrics"]
    assert found["kube-apiserver-proxy"]["lifecycle"] == {"postStart": {"exec": {"command": [
        "capi-proxy", "wait-ready", "--port=8080", "--timeout=60"]}}}
    assert after["spec"]["template"]["metadata"]["annotations"] == {"kubectl.kubernetes.io/default-container": "manager"}
    for name in ("manager", "metrics"):
        assert found[name]["env"][-1] == {"name": "KUBECONFIG", "value": "/etc/capi-proxy/kubeconfig"}
        assert [e["name"] for e in found[name]["env"]].count("KUBECONFIG") == 1
        assert found[name]["volumeMounts"][-1] == {"name": "capi-proxy-kubeconfig", "mountPath": "/etc/capi-proxy",
                                                   "readOnly": True}
    assert found["manager"]["env"][0] == {"name": "LOG", "value": "2"}  # the user's own KUBECONFIG is replaced
    proxy = found["kube-apiserver-proxy"]
    assert proxy["args"] == ["--kubeconfig=/etc/capi-proxy/upstream.kubeconfig", "--listen=127.0.0.1:8080",
                             "--metrics-listen=0.0.0.0:9090", "--log-level=info",
                             "--mode-config-map=clusters-prod-01/capi-proxy-mode", "--use-own-credentials",
                             "--discovery-ttl=10"]
    # its mode follows the namespace's mode ConfigMap, acknowledged under the Pod's own name
    assert proxy["env"] == [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                            "fieldPath": "metadata.name"}}}]
    assert proxy["ports"] == [{"name": "proxy-metrics", "containerPort": 9090, "protocol": "TCP"}]
    assert proxy["securityContext"]["readOnlyRootFilesystem"] and proxy["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert after["spec"]["template"]["spec"]["volumes"] == USER_VOLUMES + [
        {"name": "capi-proxy-kubeconfig", "configMap": {"name": "capi-proxy-kubeconfig"}}]
    record = json.loads(after["metadata"]["annotations"][contract.PROXY_ORIGINAL_ANNOTATION])
    assert record == {"containers": {"manager": {"env": USER_ENV, "volumeMounts": USER_MOUNTS}, "metrics": {}},
                      "volumes": USER_VOLUMES, "default_container_added": True}


def test_a_pod_that_names_its_default_container_keeps_it_through_put_in_and_take_out():
    before = deployment()
    before["spec"]["template"]["metadata"]["annotations"] = {"kubectl.kubernetes.io/default-container": "metrics"}
    patch = sidecar.present_patch(before, SETTINGS)
    with_sidecar = applied(before, patch)
    assert with_sidecar["spec"]["template"]["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/default-container": "metrics"}
    assert "default_container_added" not in json.loads(patch["metadata"]["annotations"][contract.PROXY_ORIGINAL_ANNOTATION])
    assert sidecar.present_patch(with_sidecar, SETTINGS) == patch
    assert applied(with_sidecar, sidecar.absent_patch(with_sidecar)) == before


def test_an_earlier_release_sidecar_last_and_without_the_hook_is_moved_first_once():
    before = deployment()
    earlier = applied(before, sidecar.present_patch(before, SETTINGS))
    spec = earlier["spec"]["template"]["spec"]
    proxy = spec["containers"].pop(0)
    del proxy["lifecycle"]
    spec["containers"].append(proxy)
    del earlier["spec"]["template"]["metadata"]["annotations"]
    record = json.loads(earlier["metadata"]["annotations"][contract.PROXY_ORIGINAL_ANNOTATION])
    del record["default_container_added"]
    earlier["metadata"]["annotations"][contract.PROXY_ORIGINAL_ANNOTATION] = json.dumps(record, sort_keys=True)
    upgraded = applied(earlier, sidecar.present_patch(earlier, SETTINGS))
    assert upgraded == applied(before, sidecar.present_patch(before, SETTINGS))
    assert applied(upgraded, sidecar.absent_patch(upgraded)) == before


def test_put_in_twice_sends_the_same_patch_and_changes_nothing():
    once = applied(deployment(), sidecar.present_patch(deployment(), SETTINGS))
    again = sidecar.present_patch(once, SETTINGS)
    assert again == sidecar.present_patch(deployment(), SETTINGS), "the record must be kept, not recomputed"
    assert applied(once, again) == once


def test_main_containers_limits_which_containers_get_the_kubeconfig():
    patch = sidecar.present_patch(deployment(), dict(SETTINGS, main_containers=["manager"]))
    found = containers(applied(deployment(), patch))
    assert found["metrics"] == deployment()["spec"]["template"]["spec"]["containers"][1]
    assert json.loads(patch["metadata"]["annotations"][contract.PROXY_ORIGINAL_ANNOTATION])["containers"] == {
        "manager": {"env": USER_ENV, "volumeMounts": USER_MOUNTS}}


def test_without_own_credentials_the_flag_is_left_out():
    patch = sidecar.present_patch(deployment(), dict(SETTINGS, use_own_credentials=False, extra_args=[]))
    args = containers(applied(deployment(), patch))["kube-apiserver-proxy"]["args"]
    assert "--use-own-credentials" not in args and args[-1] == "--mode-config-map=clusters-prod-01/capi-proxy-mode"


@pytest.mark.parametrize("volumes", [USER_VOLUMES, None], ids=["with-volumes", "no-volumes"])
@pytest.mark.parametrize("main_containers", [[], ["manager"]])
def test_take_out_restores_the_deployment_exactly_as_it_was(volumes, main_containers):
    before = deployment(volumes=volumes)
    settings = dict(SETTINGS, main_containers=main_containers)
    with_sidecar = applied(before, sidecar.present_patch(before, settings))
    restored = applied(with_sidecar, sidecar.absent_patch(with_sidecar))
    assert restored == before
    assert sidecar.absent_patch(restored) is None, "nothing left to take out: no patch"


def test_a_sidecar_without_record_loses_only_the_sidecar_and_its_volume():
    hand_made = deployment(containers=[{"name": "manager", "image": "capi:1"},
                                       {"name": "kube-apiserver-proxy", "image": "proxy:0"}],
                           volumes=USER_VOLUMES + [{"name": "capi-proxy-kubeconfig", "configMap": {"name": "x"}}])
    restored = applied(hand_made, sidecar.absent_patch(hand_made))
    assert list(containers(restored)) == ["manager"]
    assert restored["spec"]["template"]["spec"]["volumes"] == USER_VOLUMES
    only_volume = deployment(containers=[{"name": "manager", "image": "capi:1"}, {"name": "kube-apiserver-proxy"}],
                             volumes=[{"name": "capi-proxy-kubeconfig", "configMap": {"name": "x"}}])
    assert "volumes" not in applied(only_volume, sidecar.absent_patch(only_volume))["spec"]["template"]["spec"]


def test_the_lists_keep_the_named_deployments_in_the_order_read_and_skip_the_untouched():
    read = [deployment("capi-provider"), deployment("other"), deployment("cluster-api")]
    patches = sidecar.present_patches(read, ["cluster-api", "capi-provider", "absent-one"], SETTINGS)
    assert [p["metadata"]["name"] for p in patches] == ["capi-provider", "cluster-api"]
    patched = [applied(read[0], patches[0]), read[1], read[2]]
    assert [p["metadata"]["name"] for p in sidecar.absent_patches(patched, ["cluster-api", "capi-provider"])] == \
        ["capi-provider"]


def test_a_broken_record_or_missing_setting_is_named():
    broken = deployment(annotations={contract.PROXY_ORIGINAL_ANNOTATION: "{not json"})
    with pytest.raises(sidecar.SidecarError, match="Deployment clusters-prod-01/cluster-api: annotation "
                                                   "hypershift.openshift.io/capi-proxy-original is not JSON"):
        sidecar.absent_patch(broken)
    with pytest.raises(sidecar.SidecarError, match="not a JSON object"):
        sidecar.present_patch(deployment(annotations={contract.PROXY_ORIGINAL_ANNOTATION: "[1]"}), SETTINGS)
    settings = dict(SETTINGS)
    del settings["image"]
    with pytest.raises(sidecar.SidecarError, match="the sidecar settings lack image"):
        sidecar.present_patch(deployment(), settings)


def test_the_labels_and_names_are_defined_once_in_python():
    """The role's objects are labeled by sidecar.rbac_labels (through proxy_plan) and found by the same labels (proxy_reads,
    the rollback's rbac_label_selector); no role file spells a label, and the ConfigMap default is the one named here."""
    import os
    import yaml
    role = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "roles", "api_proxy")
    assert sidecar.rbac_label_selector("ns-1") == ",".join(
        "%s=%s" % item for item in sorted(sidecar.rbac_labels("ns-1").items()))
    assert sidecar.rbac_label_selector("ns-1") == ("app.kubernetes.io/managed-by=hypershift.private_capi.api_proxy,"
                                                   "hypershift.openshift.io/capi-proxy-namespace=ns-1")
    for directory, _subdirectories, files in os.walk(role):
        for name in files:
            if name.endswith((".yml", ".j2")) and "meta" not in directory:
                with open(os.path.join(directory, name)) as handle:
                    text = handle.read()
                assert sidecar.MANAGED_BY_LABEL not in text and contract.PROXY_NAMESPACE_LABEL not in text, name
    with open(os.path.join(role, "defaults", "main.yml")) as handle:
        assert yaml.safe_load(handle)["private_capi_proxy_config_map_name"] == sidecar.DEFAULT_CONFIG_MAP
