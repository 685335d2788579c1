"""Private CRD rendering: every real CAPI/HyperShift CRD, the apiextensions rules, input errors, updates."""
import base64
import copy
import glob
import os
import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.hypershift.private_capi.plugins.module_utils.crds import render as crd_render
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    AGENT_EXTRA_GROUPS,
    GroupMap,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.crds.render import (
    CrdRenderError,
    RenderOptions,
    render_all,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.crds.service import (
    build_options,
    load_file,
    load_src,
)
from ansible_collections.hypershift.private_capi.plugins.modules import private_crd_render
from ansible_collections.hypershift.private_capi.plugins.module_utils import contract
from testenv import upstream
from tests.unit.module_docs import assert_argspec_matches_documentation

CAPI_CRDS = sorted(glob.glob(os.path.join(upstream.CAPI_CRDS, "*.yaml")))
HYPERSHIFT_CRDS = sorted(glob.glob(os.path.join(upstream.HYPERSHIFT_CRDS, "**", "*.yaml"), recursive=True))
ALL_CRD_FILES = CAPI_CRDS + HYPERSHIFT_CRDS + [upstream.CLUSTERCTL_CRD]
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
AGENT_OPTIONS = RenderOptions(group_map=GroupMap(AGENT_EXTRA_GROUPS))
CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUW\n-----END CERTIFICATE-----"


def _load(path):
    with open(path) as handle:
        return [document for document in yaml.load_all(handle, Loader=LOADER) if document]


SOURCES = {path: _load(path)[0] for path in ALL_CRD_FILES}
STANDARD_SHORT_NAMES = {
    short for crd in SOURCES.values() for short in crd["spec"]["names"].get("shortNames") or ()
}
STANDARD_CATEGORIES = {
    category for crd in SOURCES.values() for category in crd["spec"]["names"].get("categories") or ()
}


def _render_one(source, options=AGENT_OPTIONS):
    result = render_all([("test", 0, source)], options)
    assert len(result.rendered) == 1, result.skipped
    return result.rendered[0]


def api_server_errors(crd):
    """The apiextensions.k8s.io/v1 validation rules a rendered CRD could break (ValidateCustomResourceDefinition)."""
    errors = []
    spec, names = crd["spec"], crd["spec"]["names"]
    if crd["metadata"]["name"] != "%s.%s" % (names["plural"], spec["group"]):
        errors.append("metadata.name must be spec.names.plural+'.'+spec.group")
    if "." not in spec["group"] or not DNS1123_SUBDOMAIN.match(spec["group"]) or len(spec["group"]) > 253:
        errors.append("spec.group must be a DNS subdomain with at least one dot")
    for field in ("plural", "singular", "listKind"):
        if field in names and field != "listKind" and not DNS1035.match(names[field]):
            errors.append("names.%s not a DNS-1035 label" % field)
    for value in (names.get("shortNames") or []) + (names.get("categories") or []):
        if not DNS1035.match(value) or len(value) > 63:
            errors.append("short name/category %r not a DNS-1035 label" % value)
    if len(set(names.get("shortNames") or [])) != len(names.get("shortNames") or []):
        errors.append("duplicate short names")
    versions = spec["versions"]
    if len({v["name"] for v in versions}) != len(versions):
        errors.append("duplicate version names")
    if sum(1 for v in versions if v.get("storage")) != 1:
        errors.append("exactly one storage version")
    conversion = spec.get("conversion") or {}
    if conversion.get("strategy") == "None":
        if "webhook" in conversion:
            errors.append("webhook must be unset with strategy None")
    elif conversion.get("strategy") == "Webhook":
        webhook = conversion.get("webhook") or {}
        review = webhook.get("conversionReviewVersions") or []
        if not review or not ({"v1", "v1beta1"} & set(review)):
            errors.append("conversionReviewVersions must include v1 or v1beta1")
        config = webhook.get("clientConfig") or {}
        if ("url" in config) == ("service" in config):
            errors.append("exactly one of url/service")
        if "service" in config:
            service = config["service"]
            if not service.get("name") or not service.get("namespace"):
                errors.append("service name/namespace required")
            if not service.get("path", "/").startswith("/"):
                errors.append("service path must start with /")
            if not 1 <= service.get("port", 443) <= 65535:
                errors.append("service port range")
        if "url" in config and not config["url"].startswith("https://"):
            errors.append("url must be https")
        if "caBundle" in config:
            base64.b64decode(config["caBundle"], validate=True)
        if spec.get("preserveUnknownFields"):
            errors.append("Webhook conversion needs preserveUnknownFields false")
    else:
        errors.append("unknown conversion strategy %r" % conversion.get("strategy"))
    return errors


@pytest.mark.parametrize("path", ALL_CRD_FILES, ids=lambda p: os.path.relpath(p, upstream.UPSTREAM_ROOT))
def test_every_shared_crd_renders_to_a_valid_twin_or_is_skipped(path):
    source = SOURCES[path]
    pristine = copy.deepcopy(source)
    group = source["spec"]["group"]
    result = render_all([(path, 0, source)], AGENT_OPTIONS)
    assert source == pristine, "render mutated its input"
    if not AGENT_OPTIONS.group_map.is_standard(group):
        reason = "group %s is not a standard CAPI group (add it to extra_groups to render it)" % group
        if AGENT_OPTIONS.group_map.is_excluded(group):  # clusterctl's Provider: inside the pattern, no CAPI type
            reason = "group %s is no HyperShift CAPI type (excluded from translation: EXCLUDED_STANDARD_GROUPS)" % group
        assert result.rendered == []
        assert result.skipped == [{"name": source["metadata"]["name"], "group": group, "origin": "%s document 0" % path,
                                   "reason": reason}]
        return
    twin = result.rendered[0]
    private_group = AGENT_OPTIONS.group_map.to_private(group)
    assert twin["spec"]["group"] == private_group != group
    assert twin["metadata"]["name"] == "%s.%s" % (source["spec"]["names"]["plural"], private_group)
    assert api_server_errors(twin) == []
    # versions, schemas, subresources, printer columns, served/storage flags: byte-identical
    assert twin["spec"]["versions"] == source["spec"]["versions"]
    for field in set(source["spec"]) - {"group", "names", "conversion"}:
        assert twin["spec"][field] == source["spec"][field], field
    source_names, twin_names = source["spec"]["names"], twin["spec"]["names"]
    for field in ("kind", "listKind", "plural", "singular"):
        assert twin_names.get(field) == source_names.get(field)
    assert twin_names.get("shortNames", []) == ["hcp" + s for s in source_names.get("shortNames", [])]
    assert not set(twin_names.get("shortNames", [])) & STANDARD_SHORT_NAMES
    if source_names.get("categories"):
        assert twin_names["categories"] == ["hypershift-capi"]
    assert not set(twin_names.get("categories", [])) & STANDARD_CATEGORIES
    served = [v["name"] for v in source["spec"]["versions"] if v["served"]]
    conversion = twin["spec"]["conversion"]
    # the shim converts the core group; a provider converts as its own CRD says (these files carry no webhook)
    assert (source["spec"].get("conversion") or {}).get("strategy") in (None, "None")
    if len(served) > 1 and group == "cluster.x-k8s.io":
        assert conversion == {
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": {"service": {"name": "capi-conversion-webhook-shim", "namespace": "hypershift",
                                             "path": "/convert", "port": 443}},
                "conversionReviewVersions": ["v1"],
            },
        }
    else:
        assert conversion == {"strategy": "None"}
    labels, annotations = twin["metadata"]["labels"], twin["metadata"]["annotations"]
    assert labels[contract.CRD_MANAGED_LABEL] == "true"
    assert annotations[crd_render.SOURCE_GROUP_ANNOTATION] == group
    assert annotations[crd_render.SOURCE_CRD_ANNOTATION] == source["metadata"]["name"]
    assert annotations[crd_render.SOURCE_VERSIONS_ANNOTATION] == ",".join(served)
    assert annotations[crd_render.SOURCE_HASH_ANNOTATION] == crd_render.source_spec_hash(source)
    assert annotations["controller-gen.kubebuilder.io/version"] == source["metadata"]["annotations"]["controller-gen.kubebuilder.io/version"]
    # a re-render of the same input is identical (hashes included)
    assert render_all([(path, 0, copy.deepcopy(source))], AGENT_OPTIONS).rendered == [twin]


def test_all_sources_together_render_disjoint_names_and_skip_only_non_capi():
    documents = [(path, 0, crd) for path, crd in SOURCES.items() if "/capi/crds/" not in path]
    result = render_all(documents, AGENT_OPTIONS)
    assert sorted(result.skipped_names) == [
        "hostedclusters.hypershift.openshift.io", "hostedcontrolplanes.hypershift.openshift.io", "nodepools.hypershift.openshift.io",
        "providers.clusterctl.cluster.x-k8s.io"]
    assert len(result.rendered) == 29
    assert len(set(result.rendered_names)) == 29
    short_names = [s for crd in result.rendered for s in crd["spec"]["names"].get("shortNames", [])]
    assert len(short_names) == len(set(short_names))
    assert {"hcpcl", "hcpma", "hcpmd", "hcpms", "hcpmhc", "hcpmp"} <= set(short_names)


def test_agent_group_is_skipped_without_extra_groups_and_rendered_with_them():
    agent = next(crd for crd in SOURCES.values() if crd["spec"]["group"] == "capi-provider.agent-install.openshift.io")
    assert render_all([("f", 0, agent)], RenderOptions()).skipped[0]["reason"].startswith(
        "group capi-provider.agent-install.openshift.io is not a standard CAPI group")
    twin = _render_one(agent)
    assert twin["spec"]["group"] == "capi-provider.agent-install.hypershift.openshift.io"


def test_aws_crd_with_one_served_version_gets_strategy_none_and_keeps_the_unserved_one():
    source = next(crd for crd in SOURCES.values() if crd["metadata"]["name"] == "awsmachines.infrastructure.cluster.x-k8s.io")
    twin = _render_one(source)
    assert twin["spec"]["conversion"] == {"strategy": "None"}
    assert [(v["name"], v["served"], v["storage"]) for v in twin["spec"]["versions"]] == [
        ("v1beta1", False, False), ("v1beta2", True, True)]


def test_a_provider_twin_converts_as_its_source_and_the_core_group_always_through_the_shim():
    agent = next(crd for crd in SOURCES.values()
                 if crd["metadata"]["name"] == "agentmachines.capi-provider.agent-install.openshift.io")
    assert [v["name"] for v in agent["spec"]["versions"] if v["served"]] == ["v1alpha1", "v1beta1"]
    # HyperShift installs Agent's two versions without a webhook: the twin must not name the shim (it converts the
    # core group only and would fail every Agent conversion)
    assert _render_one(agent)["spec"]["conversion"] == {"strategy": "None"}
    webhook = copy.deepcopy(agent)
    webhook["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"name": "capi-provider", "namespace": "agent"}}, "conversionReviewVersions": ["v1"]}}
    twin = _render_one(webhook)  # the shim delegates to the provider's own webhook
    assert twin["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["name"] == "capi-conversion-webhook-shim"
    machines = SOURCES[next(path for path in CAPI_CRDS if path.endswith("cluster.x-k8s.io_machines.yaml"))]
    assert "conversion" not in machines["spec"]  # as the files ship: the operator adds its webhook at install
    assert _render_one(machines)["spec"]["conversion"]["strategy"] == "Webhook"
    assert api_server_errors(twin) == []


def test_webhook_url_and_ca_bundle_options():
    source = SOURCES[next(path for path in CAPI_CRDS if path.endswith("/cluster.x-k8s.io_clusters.yaml"))]
    twin = _render_one(source, RenderOptions(webhook_url="https://127.0.0.1:9443/convert", webhook_ca_bundle=CA_PEM))
    config = twin["spec"]["conversion"]["webhook"]["clientConfig"]
    assert config["url"] == "https://127.0.0.1:9443/convert" and "service" not in config
    assert base64.b64decode(config["caBundle"]).decode().startswith("-----BEGIN CERTIFICATE-----")
    encoded = base64.b64encode(CA_PEM.encode()).decode()
    assert RenderOptions(webhook_ca_bundle=encoded).webhook_ca_bundle == encoded
    assert api_server_errors(twin) == []


@pytest.mark.parametrize("kwargs, message", [
    ({"webhook_url": "http://shim/convert"}, "must use https://"),
    ({"webhook_url": "https://u:p@shim/convert"}, "user info"),
    ({"webhook_ca_bundle": "not base64!"}, "neither PEM"),
    ({"webhook_ca_bundle": base64.b64encode(b"hello").decode()}, "holds no PEM"),
    ({"category": "cluster-api"}, "standard CAPI category"),
    ({"category": "Bad_Category"}, "DNS-1035"),
    ({"short_name_prefix": "9x"}, "short_name_prefix"),
    ({"webhook_service_path": "convert"}, "must start with '/'"),
    ({"webhook_service_port": 0}, "1-65535"),
    ({"webhook_service_name": "Shim"}, "DNS-1035"),
])
def test_bad_options_fail_naming_the_option(kwargs, message):
    with pytest.raises(CrdRenderError, match=re.escape(message)):
        RenderOptions(**kwargs)


def test_extra_groups_errors_come_from_the_group_core():
    params = {"extra_groups": {"capi-provider.agent-install.openshift.io": "capi-provider.cluster.hypershift.openshift.io"},
              "short_name_prefix": "hcp", "category": "hypershift-capi", "conversion_webhook_service_name": "s",
              "conversion_webhook_service_namespace": "n", "conversion_webhook_service_path": "/convert",
              "conversion_webhook_service_port": 443}
    with pytest.raises(CrdRenderError, match="extra_groups: .*collides with the suffix pattern"):
        build_options(params)


def _crd(name="machines.cluster.x-k8s.io", group="cluster.x-k8s.io", **overrides):
    plural = name.split(".", 1)[0]
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": plural, "singular": plural[:-1], "kind": "Thing", "listKind": "ThingList"},
                    "versions": [{"name": "v1beta1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    crd.update(overrides)
    return crd


@pytest.mark.parametrize("document, message", [
    (["a list"], "definitions document 3: expected a CustomResourceDefinition mapping, found list"),
    ({"apiVersion": "v1", "kind": "ConfigMap"}, "definitions document 3: expected kind CustomResourceDefinition, found kind 'ConfigMap'"),
    (_crd(apiVersion="apiextensions.k8s.io/v1beta1"), "found 'apiextensions.k8s.io/v1beta1'"),
    (_crd(spec={"names": {"plural": "machines"}, "versions": []}), "spec.group is missing"),
    (_crd(metadata={"name": "wrong.cluster.x-k8s.io"}), "does not equal spec.names.plural"),
    (_crd(name="things.cluster.x-k8s.io.evil.com", group="cluster.x-k8s.io.evil.com"), "is not a mappable CAPI group"),
    (_crd(metadata={}), "metadata.name is missing"),
])
def test_input_errors_name_origin_and_index(document, message):
    documents = [("definitions", index, _crd("m%d.cluster.x-k8s.io" % index)) for index in range(3)]
    with pytest.raises(CrdRenderError, match=re.escape(message)):
        render_all(documents + [("definitions", 3, document)], RenderOptions())


def test_clusterctl_crd_is_skipped_and_no_twin_of_it_is_ever_rendered():
    """clusterctl's inventory CRD among the CAPI CRDs: the CAPI ones render, it is skipped (no error, no twin), and a
    stray CRD in its private spelling is not taken for a rendered twin of a CAPI group either."""
    clusterctl = load_file(upstream.CLUSTERCTL_CRD)[0][2]
    stray = _crd("providers.clusterctl.cluster.hypershift.openshift.io", "clusterctl.cluster.hypershift.openshift.io")
    result = render_all([("f", 0, _crd()), ("f", 1, clusterctl), ("f", 2, stray)], AGENT_OPTIONS)
    assert [twin["metadata"]["name"] for twin in result.rendered] == ["machines.cluster.hypershift.openshift.io"]
    assert [(skipped["name"], skipped["reason"]) for skipped in result.skipped] == [
        ("providers.clusterctl.cluster.x-k8s.io", "group clusterctl.cluster.x-k8s.io is no HyperShift CAPI type "
                                                  "(excluded from translation: EXCLUDED_STANDARD_GROUPS)"),
        ("providers.clusterctl.cluster.hypershift.openshift.io", "group clusterctl.cluster.hypershift.openshift.io is no "
                                                                 "HyperShift CAPI type (excluded from translation: "
                                                                 "EXCLUDED_STANDARD_GROUPS)")]


def test_duplicates_fail_before_any_output():
    with pytest.raises(CrdRenderError, match=r"f document 1: CRD machines.cluster.x-k8s.io is given twice \(first at f document 0\)"):
        render_all([("f", 0, _crd()), ("f", 1, _crd())], RenderOptions())
    private = _crd("machines.cluster.hypershift.openshift.io", "cluster.hypershift.openshift.io")
    with pytest.raises(CrdRenderError, match="renders to machines.cluster.hypershift.openshift.io"):
        render_all([("f", 0, private), ("f", 1, _crd())], RenderOptions())


def test_already_private_crd_is_skipped():
    private = _crd("machines.cluster.hypershift.openshift.io", "cluster.hypershift.openshift.io")
    assert render_all([("f", 0, private)], RenderOptions()).skipped[0]["reason"].endswith("already private (this is a rendered twin)")


def test_short_name_collision_with_a_source_is_refused():
    crds = [_crd(), _crd("clusters.cluster.x-k8s.io")]
    crds[0]["spec"]["names"]["shortNames"] = ["ma"]
    crds[1]["spec"]["names"]["shortNames"] = ["xma"]
    with pytest.raises(CrdRenderError, match="private short name 'xma' collides"):
        render_all([("f", i, crd) for i, crd in enumerate(crds)], RenderOptions(short_name_prefix="x"))


def test_capi_installer_metadata_is_dropped_and_contract_labels_kept():
    source = _crd()
    source["metadata"].update(
        labels={"cluster.x-k8s.io/v1beta1": "v1beta1", "cluster.x-k8s.io/provider": "cluster-api",
                "clusterctl.cluster.x-k8s.io": "", "app": "capi"},
        annotations={"cert-manager.io/inject-ca-from": "capi-system/capi-serving-cert", "keep": "me",
                     "kubectl.kubernetes.io/last-applied-configuration": "{}"},
    )
    twin = _render_one(source, RenderOptions())
    assert twin["metadata"]["labels"] == {"cluster.x-k8s.io/v1beta1": "v1beta1", "app": "capi", contract.CRD_MANAGED_LABEL: "true"}
    assert "keep" in twin["metadata"]["annotations"]
    assert not [key for key in twin["metadata"]["annotations"] if key.startswith(("cert-manager", "kubectl"))]


def test_yaml_errors_name_file_and_document(tmp_path):
    path = tmp_path / "crds.yaml"
    path.write_text(yaml.safe_dump(_crd()) + "---\nkind: [unclosed\n")
    with pytest.raises(CrdRenderError, match=re.escape("%s document 1: not valid YAML" % path)):
        load_file(str(path))
    with pytest.raises(CrdRenderError, match="no such file"):
        load_src(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(CrdRenderError, match="holds no .yaml"):
        load_src(str(tmp_path / "empty"))


def test_load_src_reads_a_directory_recursively_in_sorted_order():
    documents = load_src(upstream.HYPERSHIFT_CRDS)
    assert [path for path, _index, _doc in documents] == sorted(HYPERSHIFT_CRDS)


def test_source_hash_ignores_server_metadata_and_conversion_but_not_the_api():
    source = SOURCES[CAPI_CRDS[3]]
    live = copy.deepcopy(source)
    live["metadata"].update(resourceVersion="123", uid="u", generation=4)
    live["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {"clientConfig": {"caBundle": "Zm9v"}}}
    live["status"] = {"acceptedNames": {}}
    assert crd_render.source_spec_hash(live) == crd_render.source_spec_hash(source)
    assert _render_one(crd_render.strip_server_fields(live)) == _render_one(source)
    changed = copy.deepcopy(source)
    changed["spec"]["versions"][0]["served"] = False
    assert crd_render.source_spec_hash(changed) != crd_render.source_spec_hash(source)


def _server_defaulted(crd):
    """What an API server returns: defaults added, server metadata set."""
    live = copy.deepcopy(crd)
    live["metadata"].update(resourceVersion="7", uid="u-1", generation=1, creationTimestamp="2026-01-01T00:00:00Z")
    live["metadata"]["labels"]["someone-else"] = "x"
    webhook = live["spec"]["conversion"].get("webhook")
    if webhook and "service" in webhook["clientConfig"]:
        webhook["clientConfig"]["service"].setdefault("port", 443)
    live["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
    return live


def test_live_matches_after_server_defaulting_and_detects_drift_upgrades_and_option_changes():
    source = SOURCES[CAPI_CRDS[3]]
    desired = _render_one(source)
    live = _server_defaulted(desired)
    assert crd_render.live_matches(desired, live)
    drifted = copy.deepcopy(live)
    drifted["spec"]["versions"][0]["served"] = False
    assert not crd_render.live_matches(desired, drifted)
    assert crd_render.change_kind(desired, drifted) == "repair"
    upgraded_source = copy.deepcopy(source)
    upgraded_source["spec"]["versions"][0]["deprecationWarning"] = "use v1beta2 (test)"
    upgraded = _render_one(upgraded_source)
    assert not crd_render.live_matches(upgraded, live)
    assert crd_render.change_kind(upgraded, live) == "upgrade"
    no_ca = _render_one(source)
    with_ca = _render_one(source, RenderOptions(group_map=GroupMap(AGENT_EXTRA_GROUPS), webhook_ca_bundle=CA_PEM))
    live_with_ca = _server_defaulted(with_ca)
    assert not crd_render.live_matches(no_ca, live_with_ca), "removing caBundle must be seen (render hash)"
    assert crd_render.change_kind(no_ca, live_with_ca) == "update"


def test_merged_for_replace_keeps_foreign_metadata_and_the_resource_version():
    desired = _render_one(SOURCES[CAPI_CRDS[3]])
    live = _server_defaulted(desired)
    live["metadata"]["annotations"][crd_render.SOURCE_HASH_ANNOTATION] = "sha256:old"
    body = crd_render.merged_for_replace(desired, live)
    assert body["metadata"]["resourceVersion"] == "7"
    assert body["metadata"]["labels"]["someone-else"] == "x"
    assert body["metadata"]["annotations"][crd_render.SOURCE_HASH_ANNOTATION] == desired["metadata"]["annotations"][
        crd_render.SOURCE_HASH_ANNOTATION]
    assert body["spec"] == desired["spec"] and body["spec"] is not desired["spec"]


@settings(max_examples=60, deadline=None)
@given(
    short_names=st.lists(st.from_regex(r"^[a-z][a-z0-9]{0,8}$", fullmatch=True), unique=True, max_size=4),
    categories=st.lists(st.sampled_from(["cluster-api", "all", "capi", "infra"]), unique=True, max_size=3),
    prefix=st.from_regex(r"^[a-z][a-z0-9]{0,4}$", fullmatch=True),
)
def test_generated_names_stay_valid_and_never_reuse_a_standard_name(short_names, categories, prefix):
    source = _crd()
    source["spec"]["names"].update(shortNames=short_names, categories=categories)
    try:
        result = render_all([("f", 0, source)], RenderOptions(short_name_prefix=prefix))
    except CrdRenderError as exc:
        assert "collides" in str(exc)  # prefix + one short name equals another source short name
        assert any(prefix + a in short_names for a in short_names)
        return
    twin = result.rendered[0]
    assert api_server_errors(twin) == []
    assert not set(twin["spec"]["names"]["shortNames"]) & set(short_names)
    assert "cluster-api" not in twin["spec"]["names"]["categories"]


def test_argspec_matches_documentation():
    assert_argspec_matches_documentation(private_crd_render)
