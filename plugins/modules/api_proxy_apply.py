#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: api_proxy_apply
short_description: Put the API proxy sidecar into a namespace's CAPI-dependent Deployments, or take it out, in one run
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - The whole of the role C(hypershift.private_capi.api_proxy) in one module process - reads, plan, writes, and the
    rollout awaited. It replaces four module runs (a M(hypershift.private_capi.k8s_lists) read, two
    M(kubernetes.core.k8s) writes and a M(hypershift.private_capi.deployment_rollout) wait); each costs a Python start
    and a client import (0.5-0.7 CPU-seconds on two cores), which was most of the role's time in a fleet run.
  - What it reads, writes and deletes is decided by C(plugins/module_utils/hcp/sidecar.py) (C(role_reads),
    C(role_plan)), the same functions behind the filters C(proxy_reads) and C(proxy_plan).
  - With O(state=present) - the kubeconfig ConfigMap the sidecars read, the mode ConfigMap when it is missing (one that
    exists keeps its mode - the migration flips it), the RBAC on the private groups derived from the workloads'
    grants (O(rbac)), then the merge patch of each named Deployment that puts the sidecar and C(KUBECONFIG) in, after
    recording what it changes. With O(state=absent) - each Deployment's recorded env, mounts and volumes put back
    and the sidecar out, then the RBAC objects this role created and its ConfigMaps deleted, and the shared proxy
    (its Deployment, Service, PodDisruptionBudget and ServiceAccount; its certificate's Secrets stay) once the
    rollout was awaited (O(wait_timeout)) and no Deployment left out of O(deployments) still points at it.
  - With O(topology=shared) there is no sidecar - one proxy Deployment per namespace (C(capi-proxy), O(replicas) Pods
    spread over nodes where it can, its Service, a PodDisruptionBudget and its ServiceAccount) serves HTTPS with the
    certificate of the Secret O(serving_secret_name), and each named Deployment's containers get a C(KUBECONFIG) that
    names that Service (C(https://capi-proxy.<namespace>.svc:<port>)), verified with the CA bundle of that certificate
    (O(certificate_provider)), with their Pod's own service-account token. The proxy's Deployment is created first
    and awaited until it has rolled out (at least 120 s, whatever O(wait_timeout) says, O(steps=prepare) too) before
    any workload is patched or its patch returned. Its Pods take the scheduling of the first named Deployment
    (nodeSelector, tolerations, priority class, node affinity) and HyperShift's label
    C(hypershift.openshift.io/need-management-kas-access), and roll when the serving certificate is renewed. It costs
    one proxy process per replica for the whole namespace instead of one per Deployment's Pod; docs/proxy.md compares
    the two.
  - A named Deployment that does not exist fails the run before any write (with O(topology=shared), after the serving
    certificate's Secrets), naming it, unless O(skip_missing).
  - Every write is sent only when something differs - an object already as wanted, a patch already in place (a
    server-side dry run judges a patch of a list, which lacks the fields the API server defaults) - so a second run
    changes nothing.
  - With O(wait_timeout) above 0 and a Deployment patched, waits until the named Deployments have rolled out and
    returns what the rollout did (RV(rollout)), as M(hypershift.private_capi.deployment_rollout) measures it.
extends_documentation_fragment:
  - hypershift.private_capi.api_module
  - hypershift.private_capi.api_module.cryptography
  - hypershift.private_capi.attributes.write
options:
  state:
    description:
      - C(present) puts the proxy in, C(absent) takes it out and restores each Deployment exactly as it was.
    type: str
    choices: [present, absent]
    default: present
  steps:
    description:
      - C(all) sends the Deployments' patches; C(prepare) writes the ConfigMaps and the RBAC and only returns the
        patches (RV(patches)) for the caller to send (the migrate role's strategy C(scale_down) sends them in its
        window).
    type: str
    choices: [all, prepare]
    default: all
  hcp_namespace:
    description:
      - The HCP namespace whose Deployments get the sidecar.
    type: str
    required: true
  deployments:
    description:
      - The CAPI-dependent Deployments of O(hcp_namespace).
    type: list
    elements: str
    required: true
  skip_missing:
    description:
      - Leave out named Deployments that do not exist instead of failing.
    type: bool
    default: false
  rbac:
    description:
      - Grant the workloads' service accounts on the private groups what they hold on the standard ones (Roles and
        ClusterRoles with their bindings, labelled as this role's).
    type: bool
    default: true
  upstream_server:
    description:
      - The API server the sidecars forward to (their kubeconfig ConfigMap).
    type: str
    default: https://kubernetes.default.svc
  mode:
    description:
      - The mode the namespace's mode ConfigMap starts in when this run creates it (an existing one is never changed).
    type: str
    choices: [translate, passthrough]
    default: translate
  follow_mode:
    description:
      - Whether the sidecars follow the namespace's mode ConfigMap. C(false) - they always translate and no mode
        ConfigMap is made (the HyperShift operator's own sidecar, role C(hypershift.private_capi.dual_operator)).
    type: bool
    default: true
  image:
    description:
      - The sidecar's image.
    type: str
    default: quay.io/hypershift/capi-proxy:1.0.0
  image_pull_policy:
    description:
      - The sidecar's image pull policy.
    type: str
    default: IfNotPresent
  mount_path:
    description:
      - Where the kubeconfig ConfigMap is mounted in the containers.
    type: str
    default: /etc/capi-proxy
  port:
    description:
      - The loopback port the sidecar listens on (the main containers' kubeconfig points there).
    type: int
    default: 8080
  metrics_port:
    description:
      - The sidecar's metrics and probe port (on the pod IP).
    type: int
    default: 9090
  log_level:
    description:
      - The sidecar's log level.
    type: str
    default: info
  use_own_credentials:
    description:
      - Whether the sidecar speaks with the pod's service account (in-pod clients reach it over plain HTTP, where
        client-go sends no token).
    type: bool
    default: true
  extra_args:
    description:
      - More arguments of the sidecar.
    type: list
    elements: str
    default: []
  resources:
    description:
      - The sidecar's resources.
    type: dict
    default: {}
  liveness_probe:
    description:
      - The sidecar's liveness probe.
    type: dict
    default: {}
  readiness_probe:
    description:
      - The sidecar's readiness probe.
    type: dict
    default: {}
  config_map_name:
    description:
      - The kubeconfig ConfigMap's name.
    type: str
    default: capi-proxy-kubeconfig
  main_containers:
    description:
      - The containers that get C(KUBECONFIG) (empty - every container of the Deployment but the sidecar).
    type: list
    elements: str
    default: []
  topology:
    description:
      - V(sidecar) - a proxy in each Pod of the named Deployments, on loopback, speaking as the Pod's service account
        (the enhancement's design). V(shared) - one proxy Deployment for the namespace behind a Service, over TLS,
        each client's own token forwarded (O(use_own_credentials) does not apply). A run with the other topology than
        the namespace has moves it over; a shared proxy no Deployment uses any more is deleted once the rollout was
        awaited (O(wait_timeout)), otherwise it stays with a warning.
    type: str
    choices: [sidecar, shared]
    default: sidecar
  replicas:
    description:
      - The shared proxy's Pods (O(topology=shared)); at least 1. Two keep a proxy through the loss of a Pod or a node.
    type: int
    default: 2
  serving_secret_name:
    description:
      - The C(kubernetes.io/tls) Secret of the shared proxy's serving certificate (O(topology=shared)), mounted into its
        Pods.
    type: str
    default: capi-proxy-serving
  ca_secret_name:
    description:
      - With the provider V(generate), the Secret that keeps the shared proxy's CA (certificate and key; no Pod mounts
        it).
    type: str
    default: capi-proxy-ca
  certificate_provider:
    description:
      - Who issues the shared proxy's serving certificate (O(topology=shared)), as
        M(hypershift.private_capi.serving_certificate) does it, in this run - V(generate) (a CA of the collection's own
        in O(ca_secret_name), the certificate renewed 30 days before it expires), V(openshift) (OpenShift's service CA,
        asked for by the annotation C(service.beta.openshift.io/serving-cert-secret-name) on the proxy's Service) or
        V(auto) (V(openshift) where the cluster runs the service CA). The CA bundle goes into the kubeconfig ConfigMap
        (key C(ca.crt)), from which the workloads verify the proxy.
    type: str
    choices: [auto, generate, openshift]
    default: auto
  wait_timeout:
    description:
      - Seconds to wait for the named Deployments to roll out once a patch was sent (0 - do not wait). A rollout
        not done in time fails the run, naming the Deployments (what was written stays; a re-run changes nothing
        and waits again).
    type: int
    default: 0
  count_replaced_pods:
    description:
      - While waiting, also read the namespace's Pods to count those the rollout replaced (C(pods_replaced) in RV(rollout);
        needs C(list) on C(pods)). Without it (and without O(leader_handover), which reads them for the Leases) the
        rollout is judged from the Deployments alone.
    type: bool
    default: false
  poll_seconds:
    description:
      - The shortest time between two reads of the Deployments during the rollout, in seconds. Between reads the
        module watches the namespace's Deployments and Pods and reads again when one changes (otherwise every 5
        seconds; without C(watch) on them, every O(poll_seconds)); their Pods and the managers' Leases are read with
        them when a Pod or a Deployment changed or a manager has no live leader, otherwise once a second.
    type: float
    default: 0.2
  leader_handover:
    description:
      - While waiting (O(wait_timeout)), also follow the leader election of the Deployments' managers - each
        C(coordination.k8s.io/v1) Lease in O(hcp_namespace) whose holder identity names a Pod of a named Deployment -
        and wait, after the rollout, until each has a live holder again (bounded by O(wait_timeout); a Lease still
        without one is a warning, not a failure). C(leaderless_seconds) in RV(rollout) is the longest time one had none.
      - A manager that stops without giving its Lease back (CAPI v1.14.2 sets no C(LeaderElectionReleaseOnCancel)) leaves
        it to expire, and its new Pod waits up to the lease duration plus one retry. So once the old holder's Pod is
        gone from the API, the run releases its Lease (clears the holder, sent with the C(resourceVersion) read) and
        the new Pod takes it on its next retry - but never while the holder may still run - its Pod still exists (being
        deleted included), its node is gone or not Ready, its node is unknown to this run (the Pod was gone before the
        run saw it), or the Lease was renewed after the Pod went. C(leadership) in RV(rollout) says which Leases were
        released and why each other one was not.
      - C(false) - no Lease is read or written.
    type: bool
    default: true
attributes:
  check_mode:
    details: Reads, then sends each write as a server-side dry run (C(dryRun=All)); RV(actions) and the diff say what
      would change. Nothing is waited for.
  diff_mode:
    details: C(before) and C(after) hold, per C(Kind/namespace/name), each object that changes (C(null) - absent).
notes:
  - RBAC - C(list) on C(apps/deployments) and C(configmaps) in O(hcp_namespace), C(get), C(create), C(patch) on
    C(configmaps); C(patch) on C(apps/deployments); with O(rbac) C(list) on roles, rolebindings, clusterroles and
    clusterrolebindings, C(get), C(create), C(patch) (O(state=absent) C(delete)) on those this role labels; with
    O(topology=shared) C(get), C(create), C(patch), C(delete) on C(apps/deployments), C(services),
    C(serviceaccounts) and C(policy/poddisruptionbudgets) in O(hcp_namespace) (O(state=absent) C(list) on them), and
    what M(hypershift.private_capi.serving_certificate) needs for O(certificate_provider); with
    O(count_replaced_pods) C(list) on C(pods); with O(wait_timeout), C(watch) on C(apps/deployments) (and on C(pods)
    where they are read; without it the rollout is polled); with O(wait_timeout) and O(leader_handover) C(list) on C(pods) and
    C(coordination.k8s.io/leases), C(update) on leases and C(get) on C(nodes) (cluster-scoped) to release a Lease whose
    holder is gone. The pre-flight C(hypershift.private_capi.capi_access_review) checks them.
seealso:
  - module: hypershift.private_capi.deployment_rollout
  - module: hypershift.private_capi.k8s_lists
"""

EXAMPLES = r"""
- name: The sidecars in, in pass-through mode, and their rollout measured
  hypershift.private_capi.api_proxy_apply:
    hcp_namespace: clusters-prod-01
    deployments: [cluster-api, capi-provider, cluster-autoscaler, machine-approver]
    skip_missing: true
    mode: passthrough
    image: quay.io/hypershift/capi-proxy:1.0.0
    wait_timeout: 600
    count_replaced_pods: true
  register: proxy_in

- name: One shared proxy for the namespace instead of a sidecar per Pod, in pass-through, the workloads pointed at it
  hypershift.private_capi.api_proxy_apply:
    topology: shared
    hcp_namespace: clusters-prod-01
    deployments: [cluster-api, capi-provider, cluster-autoscaler, machine-approver]
    skip_missing: true
    mode: passthrough
    wait_timeout: 600

- name: The sidecars out, each Deployment as it was
  hypershift.private_capi.api_proxy_apply:
    state: absent
    hcp_namespace: clusters-prod-01
    deployments: [cluster-api, capi-provider, cluster-autoscaler, machine-approver]
"""

RETURN = r"""
api_calls: {returned: success, type: dict, sample: {"total": 14, "by_method": {"GET": 9, "PATCH": 5}}, description: "Requests this run sent to the API server -
  C(total) and C(by_method)."}
actions:
  description: What the run did (or would do in check mode) with each object it wanted, in order.
  returned: success
  type: list
  elements: dict
  contains:
    kind:
      description: The object's kind.
      type: str
      sample: Deployment
    namespace:
      description: Its namespace (empty - cluster-scoped).
      type: str
      sample: clusters-prod-01
    name:
      description: Its name.
      type: str
      sample: cluster-api
    action:
      description: C(created), C(patched), C(deleted) or C(unchanged).
      type: str
      sample: patched
certificate:
  description: The shared proxy's serving certificate (O(topology=shared), O(state=present); empty otherwise) -
    C(provider) and C(provider_reason) (what O(certificate_provider) decided), C(action) (C(created), C(renewed),
    C(updated) or C(unchanged)) and C(not_after).
  returned: success
  type: dict
  sample: {"provider": "generate", "provider_reason": "no OpenShift service CA on the cluster (no servicecas API, no
           namespace openshift-service-ca)", "action": "unchanged", "not_after": "2027-12-04T19:40:00+00:00"}
proxy_rollout:
  description: What the shared proxy's own rollout did before the workloads were patched (O(topology=shared) with
    O(wait_timeout); empty otherwise), in the form of RV(rollout).
  returned: success
  type: dict
  sample: {"waited_seconds": 4.1, "polls": 9, "deployments": [{"name": "capi-proxy"}]}
patches:
  description: The Deployments' merge patches this plan computed (sent unless O(steps=prepare)).
  returned: success
  type: list
  elements: dict
rollout:
  description: What the rollout did, as M(hypershift.private_capi.deployment_rollout) returns it (empty - not
    waited); with O(leader_handover) also C(leaderless_seconds) (the longest time a manager's Lease had no live holder,
    from the rollout's start until each has one again), C(leaders_waited_seconds) (the wait after the rollout until
    then; C(waited_seconds) stays the rollout's) and C(leadership) - C(leases) (per Lease its C(deployment), its
    C(leaderless_seconds), whether it is C(live) at the end and, if not, C(why)), C(released) (the Leases this run
    released - C(lease), C(deployment), the gone holder C(pod), C(seconds) into the wait, C(why)) and C(waited) (each
    Lease this run did not release although its holder was stopping or gone, and C(why) - for instance a Pod still
    there with a finalizer), C(errors) (what could not be read or written - a sample missed, a release not made; the
    run does not fail for it, and warns).
  returned: success
  type: dict
  sample: {"pods_replaced": 4, "longest_unready_seconds": 0.0, "waited_seconds": 12.3, "polls": 52,
           "deployments": [{"name": "cluster-api", "pods_replaced": ["cluster-api-5d9c-x2"],
                            "longest_unready_seconds": 0.0}],
           "leaderless_seconds": 27.4, "leaders_waited_seconds": 29.0,
           "leadership": {"leaderless_seconds": 27.4, "leases": [{"lease": "controller-leader-election-capi",
                                                                  "deployment": "cluster-api", "live": true, "why": "",
                                                                  "leaderless_seconds": 27.4}],
                          "released": [{"lease": "controller-leader-election-capi", "deployment": "cluster-api",
                                        "pod": "cluster-api-5d9c8b7f4-x2kqz", "seconds": 3.1,
                                        "why": "its holder's Pod cluster-api-5d9c8b7f4-x2kqz is gone and its node
                                                worker-1 is Ready"}],
                          "waited": [], "errors": []}}
"""

import copy

from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.proxy_apply import OPTIONS, ProxyApplyService
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.args import auth_argspec
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.names import NAMESPACE, OBJECT_NAME
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.runner import run_module

# options holding a namespace or object names (checked before any API call)
NAME_RULES = [("hcp_namespace", NAMESPACE), ("deployments[]", OBJECT_NAME), ("config_map_name", OBJECT_NAME),
              ("serving_secret_name", OBJECT_NAME), ("ca_secret_name", OBJECT_NAME)]


def argspec():
    """This module's argument spec (kubernetes.core authentication options included)."""
    spec = auth_argspec()
    spec.update(copy.deepcopy(OPTIONS))
    spec.update(wait_timeout=dict(type="int", default=0), count_replaced_pods=dict(type="bool", default=False),
                poll_seconds=dict(type="float", default=0.2), leader_handover=dict(type="bool", default=True))
    return spec


def main():
    run_module(argspec, NAME_RULES, ProxyApplyService)


if __name__ == "__main__":
    main()
