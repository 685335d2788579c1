"""What the private_crds role decides (plugins/module_utils/crds/role.py, filters private_crds_plan and
private_crd_twin_problems): the render options, the shim it deploys and the settings that disagree with it, and the
standard CAPI CRDs without a right twin."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hypershift.private_capi.plugins.filter.private_crds import FilterModule
from ansible_collections.hypershift.private_capi.plugins.module_utils.crds import role

SETTINGS = {"source": "cluster", "src": "", "conversion_shim": True, "conversion_webhook_service_name": "",
            "conversion_webhook_service_namespace": "", "conversion_webhook_service_path": "/convert",
            "conversion_webhook_service_port": 443, "conversion_webhook_url": "", "conversion_webhook_ca_bundle": ""}
SHIM = {"state": "present", "namespace": "hypershift", "service_name": "capi-conversion-webhook-shim",
        "service_port": 8443, "service_path": "/convert", "ca_bundle": "PEM"}
AGENT = {"capi-provider.agent-install.openshift.io": "capi-provider.agent-install.hypershift.openshift.io"}


def test_the_shim_is_deployed_unless_off_or_given_a_url_and_its_service_and_ca_win():
    before = role.plan(SETTINGS)
    assert before["deploy_shim"] is True and before["error"] == "" and before["from_cluster"] is True and before["src"] == ""
    after = role.plan(SETTINGS, SHIM)
    assert (after["service_name"], after["service_namespace"], after["service_port"], after["service_path"],
            after["ca_bundle"], after["error"]) == ("capi-conversion-webhook-shim", "hypershift", 8443, "/convert", "PEM", "")
    # the shim's own values repeated are no conflict
    same = dict(SETTINGS, conversion_webhook_service_name="capi-conversion-webhook-shim",
                conversion_webhook_service_namespace="hypershift")
    assert role.plan(same, SHIM)["error"] == ""
    by_url = role.plan(dict(SETTINGS, conversion_webhook_url="https://127.0.0.1:9443/convert"), SHIM)
    assert by_url["deploy_shim"] is False and by_url["url"] == "https://127.0.0.1:9443/convert"
    assert (by_url["service_name"], by_url["service_port"], by_url["ca_bundle"]) == ("", 443, "")  # a stale shim ignored
    own = dict(SETTINGS, conversion_shim=False, conversion_webhook_service_name="mine", conversion_webhook_ca_bundle="CA",
               conversion_webhook_service_port=9443)
    planned = role.plan(own, SHIM)
    assert (planned["deploy_shim"], planned["service_name"], planned["service_port"], planned["ca_bundle"],
            planned["error"]) == (False, "mine", 9443, "CA", "")
    files = role.plan(dict(SETTINGS, source="files", src="/crds"))
    assert files["from_cluster"] is False and files["src"] == "/crds"


def test_settings_that_disagree_with_the_deployed_shim_stop_the_run_naming_each():
    settings = dict(SETTINGS, conversion_webhook_service_name="other", conversion_webhook_service_namespace="elsewhere",
                    conversion_webhook_ca_bundle="CA")
    error = role.plan(settings, dict(SHIM, state="absent"))["error"]
    assert error == (
        "private_crds deployed the conversion shim (private_capi_crds_conversion_shim=true), so the private CRDs convert "
        "through its Service hypershift/capi-conversion-webhook-shim:8443/convert and trust its CA, but "
        "private_capi_crds_conversion_webhook_service_name is other, the shim's Service is capi-conversion-webhook-shim; "
        "private_capi_crds_conversion_webhook_service_namespace is elsewhere, the shim's is hypershift; "
        "private_capi_crds_conversion_webhook_ca_bundle is set, while the shim's certificate chains to its own CA; "
        "private_capi_shim_state is absent. Set the shim's variables instead (private_capi_shim_namespace, "
        "private_capi_shim_service_name, private_capi_shim_service_port), or private_capi_crds_conversion_shim=false "
        "for a shim you run yourself. Nothing was written to the CRDs.")
    assert "the shim's is hypershift" in role.plan(dict(SETTINGS, conversion_webhook_service_namespace="other"), SHIM)["error"]


def crd(group, plural="machines", served=("v1beta1", "v1beta2"), established=True):
    return {"metadata": {"name": "%s.%s" % (plural, group)},
            "spec": {"group": group, "names": {"plural": plural},
                     "versions": [{"name": name, "served": name in served} for name in ("v1beta1", "v1beta2")]},
            "status": {"conditions": [{"type": "Established", "status": "True" if established else "False"}]}}


@pytest.mark.parametrize("crds, extra_groups, expected", [
    ([], None, []),
    ([crd("cluster.x-k8s.io"), crd("cluster.hypershift.openshift.io")], None, []),
    ([crd("hypershift.openshift.io", "hostedclusters")], None, []),  # not a CAPI group: no twin expected
    ([crd("cluster.x-k8s.io")], None,
     ["CRD machines.cluster.x-k8s.io serves ['v1beta1', 'v1beta2'], but its private twin "
      "machines.cluster.hypershift.openshift.io is missing; re-run the role or read the private_crd_render results"]),
    ([crd("cluster.x-k8s.io"), crd("cluster.hypershift.openshift.io", served=("v1beta2",))], None,
     ["CRD machines.cluster.x-k8s.io serves ['v1beta1', 'v1beta2'], but its private twin "
      "machines.cluster.hypershift.openshift.io serves ['v1beta2'] (Established: True); re-run the role or read the "
      "private_crd_render results"]),
    ([crd("infrastructure.cluster.x-k8s.io", "awsclusters"),
      crd("infrastructure.cluster.hypershift.openshift.io", "awsclusters", established=False)], None,
     ["CRD awsclusters.infrastructure.cluster.x-k8s.io serves ['v1beta1', 'v1beta2'], but its private twin "
      "awsclusters.infrastructure.cluster.hypershift.openshift.io serves ['v1beta1', 'v1beta2'] (Established: False); "
      "re-run the role or read the private_crd_render results"]),
    ([crd("capi-provider.agent-install.openshift.io", "agentclusters")], None, []),  # an extra group only when given
    ([crd("capi-provider.agent-install.openshift.io", "agentclusters")], AGENT,
     ["CRD agentclusters.capi-provider.agent-install.openshift.io serves ['v1beta1', 'v1beta2'], but its private twin "
      "agentclusters.capi-provider.agent-install.hypershift.openshift.io is missing; re-run the role or read the "
      "private_crd_render results"]),
])
def test_each_standard_crd_needs_an_established_twin_serving_the_same_versions(crds, extra_groups, expected):
    assert role.twin_problems(crds, extra_groups) == expected


def test_in_check_mode_the_twins_the_render_would_apply_stand_in_for_those_not_installed():
    standard = {"metadata": {"name": "machines.cluster.x-k8s.io"},
                "spec": {"group": "cluster.x-k8s.io", "names": {"plural": "machines"},
                         "versions": [{"name": "v1beta1", "served": True}, {"name": "v1beta2", "served": True}]}}
    planned = {"metadata": {"name": "machines.cluster.hypershift.openshift.io"},
               "spec": {"group": "cluster.hypershift.openshift.io", "names": {"plural": "machines"},
                        "versions": [{"name": "v1beta1", "served": True}, {"name": "v1beta2", "served": True}]}}
    missing = role.twin_problems([standard])
    assert len(missing) == 1 and "machines.cluster.hypershift.openshift.io is missing" in missing[0]
    assert role.twin_problems([standard], planned=[planned], check_mode=True) == []
    # outside check mode a twin must really be installed: the rendered one does not count
    assert role.twin_problems([standard], planned=[planned]) == missing
    # a planned twin serving other versions is still named
    narrow = dict(planned, spec=dict(planned["spec"], versions=[{"name": "v1beta2", "served": True}]))
    assert "serves ['v1beta2']" in role.twin_problems([standard], planned=[narrow], check_mode=True)[0]


@pytest.mark.parametrize("name, args, message", [
    ("private_crds_plan", ("text",), "private_crds_plan: settings and shim must be mappings, got str"),
    ("private_crds_plan", ({},), "private_crds_plan: the settings lack source, src"),
    ("private_crds_plan", (dict(SETTINGS, source="git"),), "private_crds_plan: source must be cluster or files"),
    ("private_crds_plan", (SETTINGS, {}, 1), "private_crds_plan: too many positional arguments"),
    ("private_crd_twin_problems", ("text",), "private_crd_twin_problems: the input must be the installed CRDs"),
    ("private_crd_twin_problems", ([], ["a"]), "private_crd_twin_problems: invalid extra_groups"),
    ("private_crd_twin_problems", (), "private_crd_twin_problems: missing a required argument: 'crds'"),
])
def test_the_filters_name_themselves_in_their_errors(name, args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        FilterModule().filters()[name](*args)


def test_the_filters_return_what_the_functions_return():
    filters = FilterModule().filters()
    assert filters["private_crds_plan"](SETTINGS, SHIM) == role.plan(SETTINGS, SHIM)
    assert filters["private_crd_twin_problems"]([crd("cluster.x-k8s.io")]) == role.twin_problems([crd("cluster.x-k8s.io")])


def test_files_as_source_without_src_stops_before_any_change_naming_both_variables():
    with pytest.raises(AnsibleFilterError, match=r"^private_crds_plan: private_capi_crds_source is 'files' but "
                                                 r"private_capi_crds_src is empty"):
        FilterModule().filters()["private_crds_plan"](dict(SETTINGS, source="files"))
    assert role.plan(dict(SETTINGS, source="files", src="/crds"))["src"] == "/crds"
