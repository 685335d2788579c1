# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The flip: every API proxy sidecar of an HCP namespace moved to one mode at once, without a Pod restart.

Each sidecar follows data.mode of the namespace's mode ConfigMap live (capi_proxy/proxy/mode.py) and, once it applied a mode,
writes it under its Pod's name there (contract.py: PROXY_MODE_CONFIG_MAP, PROXY_APPLIED_PREFIX). A flip is one write of
that ConfigMap, then a wait until every sidecar that runs has acknowledged the new mode. A sidecar that does not run
yet reads the ConfigMap as it starts, so it comes up in the new mode: only running ones are waited for.

Why a flip needs no stricter order: it happens while CAPI reconciliation is paused (the standard objects and their
copies alike), so in the moment when one sidecar of the namespace already serves the private objects and another
still the standard ones, neither controller acts on what it reads. The caller unpauses only once every running
sidecar has acknowledged; from then on no controller of the namespace reads the standard groups.

Pure functions (what to refuse before any change, who has not acknowledged) and FlipService, which reads, writes and
waits with one client.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import (
    PROXY_APPLIED_PREFIX,
    PROXY_MODE_CONFIG_MAP,
    PROXY_MODE_KEY,
    proxy_applied_key,
    proxy_mode,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.errors import PrivateCapiError
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.quiesce import owned_by, owner_pattern
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.objects import rolled_out
from ansible_collections.hypershift.private_capi.plugins.module_utils.hcp.sidecar import (
    CONTAINER_NAME,
    SHARED_NAME,
    follows_mode,
    has_sidecar,
    points_at_shared,
    proxied,
    shared_proxy_of,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import api_path
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe

POLL_SECONDS = 0.05  # the acknowledgements read this often (one GET of the ConfigMap)
RUNNING_SECONDS = 1.0  # the running sidecars' Pods listed again this often while waiting (one went away: not waited for)
# what puts the sidecar in ahead of the migration, named in the refusals
PREINSTALL = ("migrate_fleet.yml with private_capi_migrate_strategy=zero_stop (its phase sidecar puts them in ahead), or "
              "the api_proxy role with private_capi_proxy_mode: passthrough")


class FlipError(PrivateCapiError):
    """A flip refused before any change, or not acknowledged in time; the message names the objects and what to do."""


# what is wrong with a Deployment's sidecar for a flip (_sidecar_problems); only ROLLING_OUT is cured by waiting
NO_SIDECAR, OLD_SIDECAR, ROLLING_OUT = "no-sidecar", "old-sidecar", "rolling-out"


def _rolling_out(deployment, namespace, what):
    """The ROLLING_OUT message of a Deployment whose rollout (of what) has not finished."""
    name = (deployment.get("metadata") or {}).get("name")
    status = deployment.get("status") or {}
    return ("Deployment %s/%s is still rolling out %s (replicas %s wanted, %s updated, %s available, %s in all): wait "
            "until `kubectl -n %s rollout status deployment/%s` succeeds, then run again"
            % (namespace, name, what, (deployment.get("spec") or {}).get("replicas", 1), status.get("updatedReplicas", 0),
               status.get("availableReplicas", 0), status.get("replicas", 0), namespace, name))


def _shared_problems(deployments, names, namespace):
    """(kind, message) about the namespace's shared proxy when a Deployment of names points at it: it must exist,
    follow the mode ConfigMap and have rolled out."""
    if not any(points_at_shared(d) for d in deployments if (d.get("metadata") or {}).get("name") in names):
        return []
    shared = shared_proxy_of(deployments)
    if shared is None:
        return [(NO_SIDECAR, "Deployment %s/%s, the shared API proxy its Deployments point at, is missing: put it in "
                             "with %s and private_capi_proxy_topology shared" % (namespace, SHARED_NAME, PREINSTALL))]
    if not follows_mode(shared, namespace):
        return [(OLD_SIDECAR, "Deployment %s/%s, the shared API proxy, does not follow the mode ConfigMap %s: run %s "
                              "again to update it" % (namespace, SHARED_NAME, PROXY_MODE_CONFIG_MAP, PREINSTALL))]
    if not rolled_out(shared):
        return [(ROLLING_OUT, _rolling_out(shared, namespace, "the shared API proxy"))]
    return []


def _sidecar_problems(deployments, names, namespace):
    """(kind, message) of each Deployment of names found in deployments (as read) that must not be flipped yet, and
    of the shared proxy some of them point at."""
    problems = _shared_problems(deployments, names, namespace)
    for deployment in deployments:
        name = (deployment.get("metadata") or {}).get("name")
        if name not in names:
            continue
        who = "Deployment %s/%s" % (namespace, name)
        if points_at_shared(deployment):
            if not rolled_out(deployment):
                problems.append((ROLLING_OUT, _rolling_out(deployment, namespace, "its pointer at the shared API proxy")))
        elif not has_sidecar(deployment):
            problems.append((NO_SIDECAR, "%s has no API proxy sidecar: put it in first with %s" % (who, PREINSTALL)))
        elif not follows_mode(deployment, namespace):
            problems.append((OLD_SIDECAR, "%s has an API proxy sidecar that does not follow the mode ConfigMap %s (put "
                                          "in by an older release): run %s again to update it"
                                          % (who, PROXY_MODE_CONFIG_MAP, PREINSTALL)))
        elif not rolled_out(deployment):
            problems.append((ROLLING_OUT, _rolling_out(deployment, namespace, "its API proxy sidecar")))
    return problems


def sidecar_problems(deployments, names, namespace):
    """Why a flip in namespace must not start, one line per Deployment of names found in deployments (as read): no
    sidecar, a sidecar that does not follow the mode ConfigMap, or a rollout of it not finished. Each names the
    Deployment and the step that fixes it."""
    return [message for _kind, message in _sidecar_problems(deployments, names, namespace)]


def mode_problem(config_map, namespace, allowed):
    """Why the mode ConfigMap (as read, None when missing) does not allow a flip: its mode must be one of allowed."""
    mode, problem = proxy_mode(config_map)
    if mode is None:
        return "the proxy mode ConfigMap %s/%s: %s; create it with %s" % (namespace, PROXY_MODE_CONFIG_MAP, problem,
                                                                          PREINSTALL)
    if mode not in allowed:
        return ("the proxy mode ConfigMap %s/%s holds mode %s, expected %s: another run or a person changed it; find out "
                "why before running again" % (namespace, PROXY_MODE_CONFIG_MAP, mode, " or ".join(allowed)))
    return None


def running_sidecars(pods, names, shared=False):
    """Names of the Pods of the named Deployments and, with shared (a named Deployment points at the namespace's
    shared proxy), of that proxy, whose proxy container runs now and that are not going away."""
    if not names:
        return []
    pattern = owner_pattern(list(names) + ([SHARED_NAME] if shared else []))
    found = []
    for pod in pods:
        metadata = pod.get("metadata") or {}
        if metadata.get("deletionTimestamp") or not owned_by(pod, pattern):
            continue
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            if status.get("name") == CONTAINER_NAME and "running" in (status.get("state") or {}):
                found.append(metadata.get("name"))
    return sorted(found)


def unacknowledged(config_map, pod_names, mode):
    """The pods of pod_names whose sidecar has not acknowledged mode in the mode ConfigMap (as read), sorted."""
    data = (config_map or {}).get("data") or {}
    return sorted(name for name in pod_names if data.get(proxy_applied_key(name)) != mode)


def flip_patch(config_map, mode, pod_names):
    """The merge patch of the mode ConfigMap that sets mode and drops the acknowledgements of Pods gone (pod_names are
    the Pods that may still acknowledge), or None when nothing changes."""
    data = (config_map or {}).get("data") or {}
    changes = dict((key, None) for key in data
                   if key.startswith(PROXY_APPLIED_PREFIX) and key[len(PROXY_APPLIED_PREFIX):] not in pod_names)
    if data.get(PROXY_MODE_KEY) != mode:
        changes[PROXY_MODE_KEY] = mode
    return {"data": changes} if changes else None


def zero_stop_way_back(deployments, names, namespace, config_map):
    """Whether the way back of namespace keeps its controllers running: its mode ConfigMap names a mode and every named
    Deployment that exists runs a sidecar that follows it (else the sidecars are an older release's, or missing, and
    the way back stops the controllers to take them out)."""
    named = [d for d in deployments if (d.get("metadata") or {}).get("name") in names]
    return (proxy_mode(config_map)[0] is not None and bool(named)
            and all(proxied(d, namespace, deployments) for d in named))


class FlipService(object):
    """Reads the namespace's sidecar Deployments, their Pods and the mode ConfigMap; checks, flips and waits."""

    def __init__(self, client, namespace, names, check_mode=False, clock=time.monotonic, sleep=time.sleep):
        self.client = client
        self.namespace = namespace
        self.names = list(names)
        self.check_mode = check_mode
        self.clock = clock
        self.sleep = sleep
        self.result = {"mode": None, "changed": False, "pods": [], "waited_seconds": 0.0, "rollout_waited_seconds": 0.0}
        self.deployments = None  # the Deployments as last read (read_deployments)

    def _config_map_path(self):
        return api_path("", "v1", "configmaps", self.namespace, PROXY_MODE_CONFIG_MAP)

    def read_config_map(self):
        return self.client.get_or_none(self._config_map_path(),
                                       "get " + describe("ConfigMap", PROXY_MODE_CONFIG_MAP, self.namespace))

    def read_deployments(self):
        path = api_path("apps", "v1", "deployments", self.namespace)
        self.deployments = self.client.list(path, "list " + describe("Deployments", namespace=self.namespace))
        return self.deployments

    def _running(self, shared):
        path = api_path("", "v1", "pods", self.namespace)
        return running_sidecars(self.client.list(path, "list " + describe("Pods", namespace=self.namespace)), self.names,
                                shared)

    def check(self, allowed, rollout_timeout=0):
        """Refuse (FlipError, nothing written) unless every named Deployment that exists has a sidecar that follows
        the mode ConfigMap, rolled out, and the ConfigMap holds one of allowed. Returns the ConfigMap as read.

        A rollout not finished when it is the only problem (a Pod that is not Ready yet, or not Ready again: a probe
        that failed for a while) is waited for up to rollout_timeout seconds before it is refused
        (result rollout_waited_seconds)."""
        started = self.clock()
        problems = _sidecar_problems(self.read_deployments(), self.names, self.namespace)
        while (problems and all(kind == ROLLING_OUT for kind, _message in problems)
               and self.clock() - started < rollout_timeout):
            self.sleep(RUNNING_SECONDS)
            problems = _sidecar_problems(self.read_deployments(), self.names, self.namespace)
        self.result["rollout_waited_seconds"] = round(self.clock() - started, 3)
        problems = [message for _kind, message in problems]
        config_map = self.read_config_map()
        problem = mode_problem(config_map, self.namespace, allowed)
        if problem:
            problems.append(problem)
        if problems:
            raise FlipError("the proxy sidecars of namespace %s cannot be flipped, nothing was changed: %s"
                            % (self.namespace, "; ".join(problems)))
        return config_map

    def flip(self, mode, timeout):
        """Set mode (one write, none when it is set) and wait until every running sidecar acknowledged it; FlipError
        naming the Pods that did not within timeout seconds. In check mode nothing is written or waited for."""
        config_map = self.read_config_map()
        # the Deployments as check() or the caller last read them (a flip changes none of them)
        deployments = self.deployments if self.deployments is not None else self.read_deployments()
        shared = any(points_at_shared(d) for d in deployments if (d.get("metadata") or {}).get("name") in self.names)
        running = self._running(shared)
        patch = flip_patch(config_map, mode, running)
        self.result.update(mode=mode, changed=bool(patch and PROXY_MODE_KEY in patch["data"]))
        if self.check_mode:
            return self.result
        if patch is not None:
            what = "flip " + describe("ConfigMap", PROXY_MODE_CONFIG_MAP, self.namespace)
            config_map = self.client.patch(self._config_map_path(), patch, "%s to %s" % (what, mode))
        started = listed = self.clock()
        while True:
            missing = unacknowledged(config_map, running, mode)
            if not missing:
                break
            if self.clock() - started > timeout:
                raise FlipError("the proxy sidecars of Pods %s in namespace %s did not acknowledge mode %s within %ss "
                                "(data.%s<pod> of ConfigMap %s): see each sidecar's log (container %s) and its Role "
                                "private-capi-proxy-mode" % (", ".join(missing), self.namespace, mode, timeout,
                                                             PROXY_APPLIED_PREFIX, PROXY_MODE_CONFIG_MAP, CONTAINER_NAME))
            self.sleep(POLL_SECONDS)
            config_map = self.read_config_map()
            if self.clock() - listed >= RUNNING_SECONDS:
                running, listed = self._running(shared), self.clock()
        self.result.update(pods=running, waited_seconds=round(self.clock() - started, 3))
        return self.result
