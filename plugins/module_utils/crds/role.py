# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the private_crds role decides, as pure functions (no API call, no Ansible): where the twins' source CRDs
come from, whether it deploys the conversion shim, which Service and CA the twins name, and, after applying, which
standard CAPI CRDs lack a right twin. The role calls them through the filters private_crds_plan and
private_crd_twin_problems.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import GroupMap

# The role's private_capi_crds_* variables plan takes (without the prefix)
SETTINGS = ("source", "src", "conversion_shim", "conversion_webhook_service_name", "conversion_webhook_service_namespace",
            "conversion_webhook_service_path", "conversion_webhook_service_port", "conversion_webhook_url",
            "conversion_webhook_ca_bundle")


class CrdsRoleError(PrivateCapiError, ValueError):
    """Settings or objects these functions cannot work with; the message names them and what to do."""


def _shim_conflicts(settings, shim):
    """Why the webhook settings disagree with the shim the role deployed: a name or namespace left empty takes the
    shim's, one that is set must be the shim's; a CA bundle never (the shim has its own)."""
    conflicts = []
    name, namespace = settings["conversion_webhook_service_name"], settings["conversion_webhook_service_namespace"]
    if name and name != shim.get("service_name"):
        conflicts.append("private_capi_crds_conversion_webhook_service_name is %s, the shim's Service is %s"
                         % (name, shim.get("service_name")))
    if namespace and namespace != shim.get("namespace"):
        conflicts.append("private_capi_crds_conversion_webhook_service_namespace is %s, the shim's is %s"
                         % (namespace, shim.get("namespace")))
    if settings["conversion_webhook_ca_bundle"]:
        conflicts.append("private_capi_crds_conversion_webhook_ca_bundle is set, while the shim's certificate chains to "
                         "its own CA")
    if shim.get("state") != "present":
        conflicts.append("private_capi_shim_state is %s" % shim.get("state"))
    return conflicts


def plan(settings, shim=None):
    """The private_crd_render options the settings give (from_cluster, src, conversion_webhook_*; an empty value
    means the module's default), whether to deploy the conversion shim first (deploy_shim: unless told not to or given
    a URL), and error: why to stop before writing a CRD (or ""). shim is the conversion_shim role's
    private_capi_shim_result once deployed: the twins then name its Service and carry its CA."""
    missing = [name for name in SETTINGS if name not in settings]
    if missing:
        raise CrdsRoleError("the settings lack %s (the private_crds role's private_capi_crds_* variables)" % ", ".join(missing))
    if settings["source"] not in ("cluster", "files"):
        raise CrdsRoleError("source must be cluster or files, got %r" % (settings["source"],))
    if settings["source"] == "files" and not settings["src"]:
        raise CrdsRoleError("private_capi_crds_source is 'files' but private_capi_crds_src is empty: set it to a CRD file "
                            "or directory")
    deploy_shim = bool(settings["conversion_shim"]) and not settings["conversion_webhook_url"]
    shim = (shim or {}) if deploy_shim else {}
    result = {
        "deploy_shim": deploy_shim,
        "from_cluster": settings["source"] == "cluster",
        "src": settings["src"] if settings["source"] == "files" else "",
        "service_name": shim.get("service_name") or settings["conversion_webhook_service_name"],
        "service_namespace": shim.get("namespace") or settings["conversion_webhook_service_namespace"],
        "service_port": shim.get("service_port", settings["conversion_webhook_service_port"]),
        "service_path": shim.get("service_path", settings["conversion_webhook_service_path"]),
        "url": settings["conversion_webhook_url"],
        "ca_bundle": shim.get("ca_bundle") or settings["conversion_webhook_ca_bundle"],
        "error": "",
    }
    conflicts = _shim_conflicts(settings, shim) if deploy_shim and shim else []
    if conflicts:
        result["error"] = (
            "private_crds deployed the conversion shim (private_capi_crds_conversion_shim=true), so the private CRDs "
            "convert through its Service %s/%s:%s%s and trust its CA, but %s. Set the shim's variables instead "
            "(private_capi_shim_namespace, private_capi_shim_service_name, private_capi_shim_service_port), or "
            "private_capi_crds_conversion_shim=false for a shim you run yourself. Nothing was written to the CRDs."
            % (shim.get("namespace"), shim.get("service_name"), shim.get("service_port"), shim.get("service_path"),
               "; ".join(conflicts)))
    return result


def _served(crd):
    return [version.get("name") for version in ((crd or {}).get("spec") or {}).get("versions") or [] if version.get("served")]


def _established(crd):
    conditions = ((crd or {}).get("status") or {}).get("conditions") or []
    return len([c for c in conditions if c.get("type") == "Established" and c.get("status") == "True"]) == 1


def twin_problems(crds, extra_groups=None, planned=(), check_mode=False):
    """For each standard CAPI CRD of crds (the installed CRDs, as read) whose private twin (among crds) is missing,
    serves other versions or is not Established, a message naming both; [] when every one has a right twin.

    planned, in check mode only: the twins the run would have applied (private_crd_render's RV(crds), sent as dry runs):
    a twin not installed yet is judged by its planned version, taken as Established (as the apply would wait for).
    Outside check mode the twins must really be there."""
    try:
        group_map = GroupMap(extra_groups or {})
    except ValueError as error:
        raise CrdsRoleError("invalid extra_groups: %s" % error)
    by_name = {}
    for twin in (planned or ()) if check_mode else ():
        established = dict(twin, status={"conditions": [{"type": "Established", "status": "True"}]})
        by_name[(twin.get("metadata") or {}).get("name")] = established
    by_name.update(((crd.get("metadata") or {}).get("name"), crd) for crd in crds)
    problems = []
    for crd in crds:
        spec = crd.get("spec") or {}
        group = spec.get("group")
        if not isinstance(group, str) or not group_map.is_standard(group):
            continue
        twin_name = "%s.%s" % ((spec.get("names") or {}).get("plural"), group_map.to_private(group))
        twin = by_name.get(twin_name)
        if twin is not None and _served(twin) == _served(crd) and _established(twin):
            continue
        found = "is missing" if twin is None else "serves %s (Established: %s)" % (_served(twin), _established(twin))
        problems.append("CRD %s serves %s, but its private twin %s %s; re-run the role or read the private_crd_render "
                        "results" % ((crd.get("metadata") or {}).get("name"), _served(crd), twin_name, found))
    return problems
