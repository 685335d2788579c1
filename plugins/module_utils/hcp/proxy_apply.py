# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Runner of hypershift.private_capi.api_proxy_apply: the api_proxy role's sidecar, its RBAC and its mode ConfigMap
applied in one module run - read what sidecar.role_reads names, plan with sidecar.role_plan, write what differs, await
the rollout (rollout.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import PROXY_CA_SECRET
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import sidecar
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.quiesce import deployment_unchanged, merge_patch_changes
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.rollout import RolloutService
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import api_path, parallel_map
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.objects import comparable, identity
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import ModuleService
from ansible_collections.hypershift.private_capi.plugins.module_utils.shim.certificates import (
    CRYPTOGRAPHY_IMPORT_ERROR,
    CertificateError,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.shim.serving import (
    ServingCertificateError,
    ServingCertificates,
    choose_provider,
    wanted_dns_names,
)

# (group, version, plural) of each kind sidecar.role_reads reads and sidecar.role_plan writes
RESOURCES = dict([("Deployment", ("apps", "v1", "deployments")), ("ConfigMap", ("", "v1", "configmaps"))]
                 + [(kind, ("rbac.authorization.k8s.io", "v1", plural)) for plural, kind in sidecar.RBAC_KINDS.items()]
                 + [(kind, (group, version, plural)) for group, version, plural, kind in sidecar.SHARED_RESOURCES])
OPTIONS = dict(
    state=dict(type="str", choices=["present", "absent"], default="present"),
    steps=dict(type="str", choices=["all", "prepare"], default="all"),
    hcp_namespace=dict(type="str", required=True),
    deployments=dict(type="list", elements="str", required=True),
    skip_missing=dict(type="bool", default=False),
    rbac=dict(type="bool", default=True),
    upstream_server=dict(type="str", default="https://kubernetes.default.svc"),
    mode=dict(type="str", choices=["translate", "passthrough"], default="translate"),
    follow_mode=dict(type="bool", default=True),
    image=dict(type="str", default="quay.io/hypershift/capi-proxy:1.0.0"),
    image_pull_policy=dict(type="str", default="IfNotPresent"),
    mount_path=dict(type="str", default="/etc/capi-proxy"),
    port=dict(type="int", default=8080),
    metrics_port=dict(type="int", default=9090),
    log_level=dict(type="str", default="info"),
    use_own_credentials=dict(type="bool", default=True),
    extra_args=dict(type="list", elements="str", default=[]),
    resources=dict(type="dict", default={}),
    liveness_probe=dict(type="dict", default={}),
    readiness_probe=dict(type="dict", default={}),
    config_map_name=dict(type="str", default=sidecar.DEFAULT_CONFIG_MAP),
    main_containers=dict(type="list", elements="str", default=[]),
    topology=dict(type="str", choices=list(sidecar.TOPOLOGIES), default=sidecar.SIDECAR),
    replicas=dict(type="int", default=sidecar.SHARED_DEFAULTS["replicas"]),
    serving_secret_name=dict(type="str", default=sidecar.SHARED_DEFAULTS["serving_secret_name"]),
    ca_secret_name=dict(type="str", default=PROXY_CA_SECRET),
    certificate_provider=dict(type="str", choices=["auto", "generate", "openshift"], default="auto"),
)
# the shared proxy's own rollout is awaited at least this long, whatever wait_timeout says
SHARED_ROLLOUT_SECONDS = 120
# the options that are the module's own, not role_plan's settings
OWN_OPTIONS = ("hcp_namespace", "ca_secret_name", "certificate_provider")
# the shared proxy's serving certificate, as serving_certificate makes it (its defaults)
CERTIFICATE = {"cluster_domain": "cluster.local", "dns_names": [], "validity_days": 365, "ca_validity_days": 3650,
               "renew_before_days": 30, "ca_config_map_name": ""}


def object_path(obj, collection=False):
    """The REST path of one object sidecar.role_plan names (its kind one of RESOURCES), or of its collection."""
    metadata = obj.get("metadata") or {}
    group, version, plural = RESOURCES[obj["kind"]]
    return api_path(group, version, plural, metadata.get("namespace") or None, None if collection else metadata.get("name"))


def label(obj):
    return "/".join(part for part in (obj.get("kind"), (obj.get("metadata") or {}).get("namespace"),
                                      (obj.get("metadata") or {}).get("name")) if part)


class ProxyApplyService(ModuleService):
    """One run: read what sidecar.role_reads names, plan with sidecar.role_plan, write what differs, await the rollout."""

    MINIMUMS = {"wait_timeout": 0, "poll_seconds": 0.1}
    CONNECTIONS = 4

    def __init__(self, client, params, check_mode=False, diff=False):
        super(ProxyApplyService, self).__init__(client, params, check_mode=check_mode, diff=diff)
        # sidecar.role_plan's settings: the options, the namespace under the role's own name
        self.settings = dict((name, params[name]) for name in OPTIONS if name not in OWN_OPTIONS)
        self.settings["namespace"] = params["hcp_namespace"]
        self.actions = []
        self.before = {}
        self.after = {}

    def _read(self, wanted):
        group, version, plural = RESOURCES[wanted["kind"]]
        path = api_path(group, version, plural, wanted["namespace"] or None)
        what = "list %s%s" % (plural, " in namespace %s" % wanted["namespace"] if wanted["namespace"] else "")
        selector = ",".join(wanted.get("label_selectors") or ()) or None
        return {"resources": self.client.list(path, what, label_selector=selector)}

    def _record(self, obj, action, before=None, after=None):
        self.actions.append(dict(identity(obj), action=action))
        if action != "unchanged":
            self.before[label(obj)] = comparable(before)
            self.after[label(obj)] = comparable(after)

    def _apply(self, obj):
        """Create obj, or merge-patch it where the live object differs (labels, data, rules, subjects ...)."""
        path = object_path(obj)
        live = self.client.get_or_none(path, "get " + label(obj))
        if live is None:
            created = self.client.create(object_path(obj, collection=True), obj, "create " + label(obj))
            self._record(obj, "created", None, created)
        elif merge_patch_changes(live, obj):
            patched = self.client.patch(path, obj, "patch " + label(obj))
            self._record(obj, "patched" if comparable(patched) != comparable(live) else "unchanged", live, patched)
        else:
            self._record(obj, "unchanged")

    def _patch(self, deployment, patch):
        """Send a Deployment's merge patch unless it is in place. A patch of a list (the containers) lacks the fields
        the API server defaults: where it differs from the object as read, the answer (a dry run in check mode) says
        whether it changed the spec, the labels or the annotations."""
        if not merge_patch_changes(deployment, patch):
            self._record(patch, "unchanged")
            return
        answer = self.client.patch(object_path(patch), patch, "patch " + label(patch))
        self._record(patch, "unchanged" if deployment_unchanged(deployment, answer) else "patched", deployment, answer)

    def _delete(self, obj):
        live = self.client.delete_existing(object_path(obj), label(obj))
        if live is not None:
            self._record(obj, "deleted", live, None)

    def partial(self):
        """What the run did so far (also what a failed run returns beside its message)."""
        return {"changed": any(action["action"] != "unchanged" for action in self.actions), "actions": self.actions}

    def _rollout_service(self, names, replaced, timeout=None):
        """The rollout of the Deployments names (RolloutService), awaited for timeout seconds (wait_timeout); replaced:
        count the Pods replaced and hand the managers' Leases over, as the options say."""
        return RolloutService(self.client, self.settings["namespace"], names,
                              self.params["wait_timeout"] if timeout is None else timeout,
                              self.params["poll_seconds"], pods=replaced and self.params["count_replaced_pods"],
                              leases=replaced and self.params["leader_handover"], watch=True)

    def _rollout(self, rollout):
        outcome = rollout.run()
        self.warnings += rollout.warnings
        return outcome

    def warn(self, message):
        self.warnings.append(message)

    def _certificate(self):
        """The shared proxy's serving certificate for its Service (serving_certificate's work in this run): the
        settings get the CA bundle the workloads verify it with and the provider that made it."""
        namespace = self.settings["namespace"]
        params = dict(CERTIFICATE, provider=self.params["certificate_provider"], namespace=namespace,
                      secret_name=self.settings["serving_secret_name"], ca_secret_name=self.params["ca_secret_name"],
                      service_name=sidecar.SHARED_NAME, labels=sidecar.rbac_labels(namespace),
                      wait_timeout=max(self.params["wait_timeout"], 60),
                      generate_hint="certificate_provider generate (private_capi_proxy_certificate_provider)")
        certificates = ServingCertificates(self.client, params)
        api, exists = certificates.detect() if params["provider"] == "auto" else (None, None)
        provider, reason = choose_provider(params["provider"], api, exists)
        if provider == "generate" and CRYPTOGRAPHY_IMPORT_ERROR is not None:
            raise ServingCertificateError("the shared proxy's serving certificate needs the Python library cryptography "
                                          "(42.0 or later) on the controller: pip install cryptography (%s)"
                                          % CRYPTOGRAPHY_IMPORT_ERROR)
        try:
            done = (certificates.generate(wanted_dns_names(params)) if provider == "generate"
                    else certificates.openshift(wanted_dns_names(params), self))
        except CertificateError as error:
            raise ServingCertificateError(str(error))
        bundle = done["ca_bundle"]
        if not bundle and self.check_mode:  # the service CA injects it once the ConfigMap exists: a dry run cannot wait
            bundle = "# the service CA's bundle, once injected (check mode)\n"
        self.settings.update(ca_bundle=bundle, serving_certificate_provider=provider,
                             serving_cert_sha256=done.get("tls_crt_sha256", ""))
        if done["changed"]:
            self.actions.append({"kind": "Secret", "namespace": namespace, "name": done["secret_name"],
                                 "action": done["action"]})
        return {"provider": provider, "provider_reason": reason, "action": done["action"],
                "not_after": done.get("not_after", "")}

    def run(self):
        reads = sidecar.role_reads(self.settings)
        self.client.require_namespace(self.settings["namespace"], "hcp_namespace")
        certificate = {}
        if self.settings["topology"] == sidecar.SHARED and self.settings["state"] == "present":
            certificate = self._certificate()
        results = parallel_map(lambda index: self._read(reads[index]), range(len(reads)), len(reads))
        plan = sidecar.role_plan(results, self.settings)
        if plan["error"]:
            raise sidecar.SidecarError(plan["error"])
        for obj in plan["apply"]:
            self._apply(obj)
        waiting = self.params["wait_timeout"] > 0 and not self.check_mode
        shared = any(obj["kind"] == "Deployment" and obj["metadata"]["name"] == sidecar.SHARED_NAME for obj in plan["apply"])
        result = {"proxy_rollout": {}}
        if shared and not self.check_mode:
            # the workloads point at the shared proxy only once its Service has Ready Pods behind it: awaited whatever
            # wait_timeout says (with steps prepare too: the caller sends the patches later)
            result["proxy_rollout"] = self._rollout(self._rollout_service(
                [sidecar.SHARED_NAME], False, max(self.params["wait_timeout"], SHARED_ROLLOUT_SECONDS)))
        deployments = dict(((item.get("metadata") or {}).get("name"), item) for item in results[0]["resources"])
        # awaited whenever patches are sent (a re-run after a kill finds them in place, its rollout maybe not done),
        # before anything is deleted: a Pod that has not rolled yet may still use the proxy or its RBAC; its first
        # sample is taken before the patches, so that every Pod they replace is counted
        rollout = None
        if plan["patch"] and plan["patches"] and waiting:
            rollout = self._rollout_service([name for name in self.settings["deployments"] if name in deployments], True)
            rollout.start()
        if plan["patch"]:
            for patch in plan["patches"]:
                self._patch(deployments[patch["metadata"]["name"]], patch)
        result.update(self.partial(), patches=plan["patches"], rollout={})
        if rollout is not None:
            result["rollout"] = self._rollout(rollout)
        for obj in plan["delete"]:
            self._delete(obj)
        if plan["delete_shared"] and (result["rollout"] or not plan["patches"]):
            for obj in plan["delete_shared"]:  # no Deployment uses it any more: their rollout is done
                self._delete(obj)
        elif plan["delete_shared"] and not self.check_mode:
            self.warnings.append("the shared proxy of namespace %s stays: its Deployments' rollout was not awaited "
                                 "(wait_timeout 0), and a Pod that has not rolled may still use it; run again with "
                                 "wait_timeout to remove it" % self.settings["namespace"])
        result.update(self.partial(), certificate=certificate)
        if self.diff and result["changed"]:
            result["diff"] = {"before": self.before, "after": self.after}
        return result
