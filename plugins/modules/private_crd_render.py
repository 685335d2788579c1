#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: private_crd_render
short_description: Render and apply the private twins of Cluster API CRDs
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Turns Cluster API (CAPI) CustomResourceDefinitions of the standard groups C(cluster.x-k8s.io) and
    C(<x>.cluster.x-k8s.io) into their private twins in C(cluster.hypershift.openshift.io) and
    C(<x>.cluster.hypershift.openshift.io), so HyperShift's CAPI objects can live beside the platform's.
  - A twin keeps every version (with its C(served) and C(storage) flags), schema, subresource, printer
    column, scope and validation rule of its source unchanged. Only these change - C(spec.group);
    C(metadata.name) (C(<plural>.<private group>)); the short names, each prefixed with O(short_name_prefix)
    (C(cl) becomes C(hcpcl), C(ma) C(hcpma), C(md) C(hcpmd), C(ms) C(hcpms), C(mhc) C(hcpmhc), C(mp) C(hcpmp));
    the categories (C(cluster-api) becomes O(category), default C(hypershift-capi), any other category C(x) becomes
    C(hypershift-capi-x)); and C(spec.conversion).
  - So C(kubectl get ma) and C(kubectl get cluster-api) keep listing the standard objects only, while
    C(kubectl get hcpma) and C(kubectl get hypershift-capi) list the private ones.
  - Conversion is C(Webhook) at the conversion shim (a Service, or O(conversion_webhook_url)) when a CRD serves
    more than one version, and C(None) when it serves one. It never points at the standard CAPI webhook.
  - Labels and annotations that belong to CAPI's installers are dropped (C(cert-manager.io/*) CA injection of
    CAPI's certificate, C(clusterctl.cluster.x-k8s.io*) and C(cluster.x-k8s.io/provider), which would let
    C(clusterctl) treat the twin as its own). Other labels, such as the CAPI contract labels
    C(cluster.x-k8s.io/v1beta1), are kept.
  - Every twin carries the label C(hypershift.openshift.io/private-capi-crd=true) and annotations recording its
    source - C(hypershift.openshift.io/private-capi-source-group), C(...-source-crd),
    C(...-source-served-versions), C(...-source-hash) (sha256 of the source spec without C(conversion), independent
    of resourceVersion) and C(...-render-hash). A later run compares them to tell an upgrade of the source CRD
    (RV(results[].action=upgraded)) from a no-op.
  - CRDs of other groups are left alone and reported in RV(skipped). Input errors (not a CRD, no C(spec.group),
    a group that mentions C(cluster.x-k8s.io) without mapping, duplicate names, YAML errors) fail with the file and
    document index before anything is written.
  - With O(state=present) the twins are created or updated; C(changed) comes from comparing the live object
    with the result of the write. A re-run with the same input writes nothing and reports C(changed=false).
  - With O(state=absent) the twins are deleted, but only when no twin holds an object; otherwise the module fails
    and lists the objects, deleting nothing. Twins without the label above are left alone.
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.attributes.write
  - hypershift.private_capi.options.extra_groups
options:
  definitions:
    description:
      - CRD documents to render, as a list of mappings.
      - Mutually exclusive with O(src) and O(from_cluster).
    type: list
    elements: dict
  src:
    description:
      - A YAML or JSON file of CRD documents, or a directory whose C(*.yaml), C(*.yml) and C(*.json) files (searched
        recursively, in sorted order) hold them. Read on the host the module runs on.
      - Mutually exclusive with O(definitions) and O(from_cluster).
    type: path
  from_cluster:
    description:
      - Read every CRD installed on the cluster whose group is a standard CAPI group (one LIST), or a group of
        O(extra_groups).
      - Mutually exclusive with O(definitions) and O(src).
    type: bool
    default: false
  state:
    description:
      - V(present) creates or updates the twins; V(absent) deletes them (see the description);
        V(rendered) only returns them in RV(crds) and writes nothing.
      - V(rendered) needs no cluster access unless O(from_cluster=true).
    type: str
    choices: [present, absent, rendered]
    default: present
  short_name_prefix:
    description:
      - Prefix added to every short name of a twin.
    type: str
    default: hcp
  category:
    description:
      - The category that replaces C(cluster-api) on the twins; must differ from C(cluster-api).
    type: str
    default: hypershift-capi
  conversion_webhook_service_name:
    description:
      - Name of the Service of the conversion shim, used by twins serving more than one version.
    type: str
    default: capi-conversion-webhook-shim
  conversion_webhook_service_namespace:
    description:
      - Namespace of that Service.
    type: str
    default: hypershift
  conversion_webhook_service_path:
    description:
      - URL path the shim serves conversions on.
    type: str
    default: /convert
  conversion_webhook_service_port:
    description:
      - Port of that Service.
    type: int
    default: 443
  conversion_webhook_url:
    description:
      - An https URL of the conversion shim, used instead of the Service options (for shims outside the cluster
        or test API servers that cannot reach Services).
    type: str
  conversion_webhook_ca_bundle:
    description:
      - The CA certificate that signs the shim's serving certificate, as PEM text or base64-encoded PEM.
      - Without it the API server must already trust the shim (or a CA injector must fill C(caBundle) in).
    type: str
  wait:
    description:
      - With O(state=present), wait until every twin reports the C(Established) condition.
      - With O(state=absent), wait until every twin deleted (or already being deleted) is gone. The API server deletes
        a CRD asynchronously (it deletes the CRD's objects first), so without O(wait) a twin may still be listed,
        with a C(deletionTimestamp), when the module returns.
    type: bool
    default: false
  wait_timeout:
    description:
      - How long O(wait) waits, in seconds.
    type: int
    default: 60
  verify:
    description:
      - With O(state=present), read every installed CRD once more after the writes (and after O(wait)), and return in
        RV(twin_problems) each standard CAPI CRD (or CRD of a group of O(extra_groups)) that lacks an Established
        twin serving the same versions. The judgement is the filter
        P(hypershift.private_capi.private_crd_twin_problems#filter)'s; in check mode a twin not installed is judged
        by the version this run would have applied, taken as Established.
      - The C(hypershift.private_capi.private_crds) role verifies its twins this way, so that the CRDs (megabytes
        on a HyperShift management cluster) are read in the module and never pass through the controller's task
        results.
    type: bool
    default: false
    version_added: 1.2.0
attributes:
  check_mode:
    details: Writes are sent with the server-side dry run C(dryRun=All), so the API server validates them.
  diff_mode:
    details: One entry per changed CRD with only the changed fields (paths like C(spec.versions[0].served)).
notes:
  - The RBAC the module needs - C(get), C(list), C(create), C(update) and C(delete) on
    C(customresourcedefinitions.apiextensions.k8s.io), plus C(list) on the private kinds for O(state=absent).
seealso:
  - module: hypershift.private_capi.migration_state
  - module: kubernetes.core.k8s
"""

EXAMPLES = r"""
- name: Put the private twins of every installed CAPI CRD on the cluster and wait for them
  hypershift.private_capi.private_crd_render:
    from_cluster: true
    extra_groups:
      capi-provider.agent-install.openshift.io: capi-provider.agent-install.hypershift.openshift.io
    conversion_webhook_ca_bundle: "{{ lookup('ansible.builtin.file', 'shim-ca.crt') }}"
    wait: true

- name: Render twins from files without touching a cluster
  hypershift.private_capi.private_crd_render:
    src: /srv/hypershift/crds/cluster-api
    state: rendered
  register: rendered

- name: Write them out for review
  ansible.builtin.copy:
    content: "{{ rendered.crds | map('ansible.builtin.to_nice_yaml') | join('---\n') }}"
    dest: /tmp/private-capi-crds.yaml
    mode: "0644"

- name: Apply twins whose conversion shim runs outside the cluster
  hypershift.private_capi.private_crd_render:
    src: crds/
    conversion_webhook_url: https://shim.example.com:9443/convert
    kubeconfig: ~/.kube/management

- name: Remove the twins (fails, deleting nothing, while any private object remains) and wait until they are gone
  hypershift.private_capi.private_crd_render:
    from_cluster: true
    state: absent
    wait: true
"""

RETURN = r"""
rendered:
  description: Names of the private CRDs rendered from the input, in input order.
  returned: always
  type: list
  elements: str
  sample: [clusters.cluster.hypershift.openshift.io, machines.cluster.hypershift.openshift.io]
skipped:
  description: Input CRDs that were left alone, with why.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Name of the input CRD.
      type: str
      sample: hostedclusters.hypershift.openshift.io
    group:
      description: Its group.
      type: str
      sample: hypershift.openshift.io
    origin:
      description: Where it came from (file or V(definitions) or V(cluster), and document index).
      type: str
      sample: crds/hostedclusters.yaml document 0
    reason:
      description: Why it was not rendered.
      type: str
      sample: group hypershift.openshift.io is not a standard CAPI group (add it to extra_groups to render it)
results:
  description: What happened to each twin with O(state=present) or O(state=absent); empty for O(state=rendered).
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Name of the private CRD.
      type: str
      sample: machines.cluster.hypershift.openshift.io
    action:
      description:
        - V(created), V(unchanged), V(upgraded) (the source CRD changed), V(updated) (render options changed),
          V(repaired) (the live twin had drifted), V(deleted), V(deleting) (the API server was already deleting it,
          not changed), V(absent) (nothing to delete), or V(unmanaged)
          (exists without this collection's label; left alone).
      type: str
      sample: upgraded
    changed:
      description: Whether the live object changed (would change, in check mode).
      type: bool
    source_hash:
      description: Hash of the source spec now recorded on the twin.
      type: str
      returned: O(state=present)
      sample: sha256:4b0c...
    previous_source_hash:
      description: The hash the live twin recorded before, or null when it did not exist.
      type: str
      returned: O(state=present)
crds:
  description: The rendered CRDs, complete, ready to apply (in check mode with O(state=present), those that would be
    applied).
  returned: O(state=rendered); O(state=present) in check mode
  type: list
  elements: dict
twin_problems:
  description: With O(verify=true), one message per standard CAPI CRD without a right private twin (empty when every
    one has its twin); the module does not fail for them, its caller decides.
  returned: O(state=present) with O(verify=true)
  type: list
  elements: str
  sample: ["CRD machines.cluster.x-k8s.io serves ['v1beta1', 'v1beta2'], but its private twin
            machines.cluster.hypershift.openshift.io is missing; re-run the role or read the private_crd_render results"]
  version_added: 1.2.0
diff:
  description: With C(--diff), one entry per changed CRD with the changed paths before and after.
  returned: when diff mode is on and something changed
  type: list
  elements: dict
"""

from ansible_collections.hypershift.private_capi.plugins.module_utils.crds.service import PrivateCrdModule
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec, extra_groups_option
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import NAMESPACE, SERVICE_NAME

# options holding a namespace or object names (checked before any API call)
NAME_RULES = [("conversion_webhook_service_name", SERVICE_NAME), ("conversion_webhook_service_namespace", NAMESPACE)]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(
        definitions=dict(type="list", elements="dict"),
        src=dict(type="path"),
        from_cluster=dict(type="bool", default=False),
        state=dict(type="str", choices=["present", "absent", "rendered"], default="present"),
        extra_groups=extra_groups_option(),
        short_name_prefix=dict(type="str", default="hcp"),
        category=dict(type="str", default="hypershift-capi"),
        conversion_webhook_service_name=dict(type="str", default="capi-conversion-webhook-shim"),
        conversion_webhook_service_namespace=dict(type="str", default="hypershift"),
        conversion_webhook_service_path=dict(type="str", default="/convert"),
        conversion_webhook_service_port=dict(type="int", default=443),
        conversion_webhook_url=dict(type="str"),
        conversion_webhook_ca_bundle=dict(type="str"),
        wait=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=60),
        verify=dict(type="bool", default=False),
    )
    return spec


def main():
    run_module(argspec, NAME_RULES, PrivateCrdModule, mutually_exclusive=[["definitions", "src"]])


if __name__ == "__main__":
    main()
