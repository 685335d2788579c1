# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters proxy_sidecar_patches, proxy_sidecar_removals, proxy_reads and proxy_plan (docs: the .yml files beside this file)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp import sidecar
from ansible_collections.hypershift.private_capi.plugins.module_utils.filters.args import checked_arguments

PATCHES_USAGE = "{{ deployments | hypershift.private_capi.proxy_sidecar_patches(names, settings) }}"
REMOVALS_USAGE = "{{ deployments | hypershift.private_capi.proxy_sidecar_removals(names) }}"
READS_USAGE = "{{ settings | hypershift.private_capi.proxy_reads }}"
PLAN_USAGE = "{{ read.results | hypershift.private_capi.proxy_plan(settings) }}"


def _check(filter_name, deployments, names, usage):
    if not isinstance(deployments, (list, tuple)) or not all(isinstance(item, dict) for item in deployments):
        raise AnsibleFilterError("%s: the input must be a list of Deployments as read (mappings), got %s; usage: %s"
                                 % (filter_name, type(deployments).__name__, usage))
    if isinstance(names, (str, bytes)) or not isinstance(names, (list, tuple)):
        raise AnsibleFilterError("%s: names must be a list of Deployment names, got %s; usage: %s"
                                 % (filter_name, type(names).__name__, usage))


@checked_arguments("proxy_sidecar_patches", PATCHES_USAGE, AnsibleFilterError)
def proxy_sidecar_patches(deployments, names, settings):
    """Merge patches putting the API proxy sidecar into each Deployment of deployments named in names."""
    _check("proxy_sidecar_patches", deployments, names, PATCHES_USAGE)
    if not isinstance(settings, dict):
        raise AnsibleFilterError("proxy_sidecar_patches: settings must be a mapping, got %s; usage: %s"
                                 % (type(settings).__name__, PATCHES_USAGE))
    try:
        return sidecar.present_patches(deployments, names, settings)
    except sidecar.SidecarError as error:
        raise AnsibleFilterError("proxy_sidecar_patches: %s" % error)


@checked_arguments("proxy_sidecar_removals", REMOVALS_USAGE, AnsibleFilterError)
def proxy_sidecar_removals(deployments, names):
    """Merge patches taking the sidecar out of each named Deployment that has it (or its record)."""
    _check("proxy_sidecar_removals", deployments, names, REMOVALS_USAGE)
    try:
        return sidecar.absent_patches(deployments, names)
    except sidecar.SidecarError as error:
        raise AnsibleFilterError("proxy_sidecar_removals: %s" % error)


def _check_settings(filter_name, settings, usage):
    if not isinstance(settings, dict):
        raise AnsibleFilterError("%s: settings must be a mapping of the api_proxy role's settings, got %s; usage: %s"
                                 % (filter_name, type(settings).__name__, usage))


@checked_arguments("proxy_reads", READS_USAGE, AnsibleFilterError)
def proxy_reads(settings):
    """The hypershift.private_capi.k8s_lists entries the api_proxy role reads."""
    _check_settings("proxy_reads", settings, READS_USAGE)
    try:
        return sidecar.role_reads(settings)
    except sidecar.SidecarError as error:
        raise AnsibleFilterError("proxy_reads: %s" % error)


@checked_arguments("proxy_plan", PLAN_USAGE, AnsibleFilterError)
def proxy_plan(results, settings):
    """What the api_proxy role writes and deletes, from what proxy_reads read."""
    if not isinstance(results, (list, tuple)) or not all(isinstance(item, dict) for item in results):
        raise AnsibleFilterError("proxy_plan: the input must be the k8s_lists results of the proxy_reads read (a list of "
                                 "mappings), got %s; usage: %s" % (type(results).__name__, PLAN_USAGE))
    _check_settings("proxy_plan", settings, PLAN_USAGE)
    try:
        return sidecar.role_plan(results, settings)
    except sidecar.SidecarError as error:
        raise AnsibleFilterError("proxy_plan: %s" % error)


class FilterModule(object):
    def filters(self):
        return {"proxy_sidecar_patches": proxy_sidecar_patches, "proxy_sidecar_removals": proxy_sidecar_removals,
                "proxy_reads": proxy_reads, "proxy_plan": proxy_plan}
