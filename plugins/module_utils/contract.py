# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The collection's on-cluster contract, written once: every annotation and label key it reads or writes, the time
formats of what it writes, and the clock.

A leaf: it imports only the standard library, so every package (translate/ and k8s/ included) may import it. Keys are
grouped by the object that carries them; each line says who writes the key and who reads it. Keys that are another
project's own API (CAPI's cluster-name labels, its conversion-data annotation, OpenShift's service CA annotations)
live with the code that follows that API; CAPI's paused annotation is here because the collection writes it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

# --- HostedCluster --------------------------------------------------------------------------------------------------
# the migration state, as a label so a LIST can select by it: written by migration_state, read by the inventory and
# every module that checks the lock
STATE_LABEL = "hypershift.openshift.io/capi-migration-state"
# HyperShift's legacy-operator scope: written by migration_state (legacy), read by the dual operator's legacy instance
SCOPE_ANNOTATION = "hypershift.openshift.io/scope"
# HyperShift's markers of a migration: written by migration_state, read by the HyperShift operator
IN_PROGRESS_ANNOTATION = "hypershift.openshift.io/migration-in-progress"
FAILED_ANNOTATION = "hypershift.openshift.io/migration-failed"
# migrated (on the HostedCluster, by migration_state) and the control-plane-operator's signal (on the
# HostedControlPlane, by hcp_migrate_window; removed by hcp_migrate_rollback): read by HyperShift's operators
PRIVATE_TYPES_ANNOTATION = "hypershift.openshift.io/private-capi-types"
# the lock (a lease): written by migration_state and state/fence.py, read by every module that holds it
LEASE_HOLDER_ANNOTATION = "hypershift.openshift.io/capi-migration-lease-holder"
LEASE_ACQUIRE_TIME_ANNOTATION = "hypershift.openshift.io/capi-migration-lease-acquire-time"
LEASE_RENEW_TIME_ANNOTATION = "hypershift.openshift.io/capi-migration-lease-renew-time"
LEASE_DURATION_ANNOTATION = "hypershift.openshift.io/capi-migration-lease-duration-seconds"
# "rollback" on a lock taken to roll a migrated HostedCluster back; absent (or anything else) means "migrate"
LEASE_DIRECTION_ANNOTATION = "hypershift.openshift.io/capi-migration-lease-direction"
# the module process that writes under the lock now (JSON: id, run, pid, host) and when it last renewed it: written
# and read by state/fence.py, reported by migration_state
LEASE_TOKEN_ANNOTATION = "hypershift.openshift.io/capi-migration-lease-token"
LEASE_TOKEN_RENEW_TIME_ANNOTATION = "hypershift.openshift.io/capi-migration-lease-token-renew-time"
# why a rescue or rollback failed and what to do (it goes with the lock): written by hcp_migrate_rollback, read by
# migration_state
ROLLBACK_FAILED_ANNOTATION = "hypershift.openshift.io/capi-migration-rollback-failed"
# the last moves (JSON list): written by migration_state, read by migration_state and the operator guide's support steps
HISTORY_ANNOTATION = "hypershift.openshift.io/capi-migration-history"
# spec.pausedUntil before the fence ("none" when unset): written by hcp_quiesce's fence, read when it lifts the fence
PAUSED_UNTIL_ANNOTATION = "hypershift.openshift.io/capi-migration-paused-until"
# how far a migration or rollback got ("finish", "revert-resume", "revert-finish"): written by hcp_migrate_finish and
# hcp_migrate_rollback, read by hcp_migrate_rollback (where to go on); removed with the fence
PHASE_ANNOTATION = "hypershift.openshift.io/capi-migration-phase"
# the source counts before the deletion of the sources (JSON): written by hcp_migrate_finish, read by capi_verify,
# removed by hcp_migrate_rollback
COUNTS_ANNOTATION = "hypershift.openshift.io/capi-migration-counts"
# the longest time a CAPI manager of the HCP namespace had no live leader, over the pre-install and the window of the
# last migration (seconds, a decimal string): written by hcp_migrate_finish, read by the fleet exporter, removed by the
# rollback of the migration (hcp_migrate_rollback)
LEADERLESS_ANNOTATION = "hypershift.openshift.io/capi-migration-leaderless-seconds"

# --- CAPI objects (Cluster, MachineDeployment, MachineSet, Machine, ...) --------------------------------------------
# CAPI's own pause: written by hcp_quiesce (and the Cluster's spec.paused), read by capi_object_migrate (require_paused)
PAUSED_ANNOTATION = "cluster.x-k8s.io/paused"
# on a copy, its source's uid and resourceVersion: written and read by capi_object_migrate (resume, verify)
SOURCE_UID_ANNOTATION = "hypershift.openshift.io/capi-migration-source-uid"
SOURCE_VERSION_ANNOTATION = "hypershift.openshift.io/capi-migration-source-resource-version"
# on a source in the delete phase, in the same write that removes its finalizers (kept in FINALIZERS_ANNOTATION as
# JSON): written and read by capi_object_migrate
DELETE_LABEL = "hypershift.openshift.io/capi-migration-delete"
FINALIZERS_ANNOTATION = "hypershift.openshift.io/capi-migration-finalizers"
# on a source whose deletion (or its owner's) a run carried to its copy (the copy's uid): never copied again; written
# and read by capi_object_migrate
CARRIED_ANNOTATION = "hypershift.openshift.io/capi-migration-carried"
# beside it on a source that was itself being deleted when it was carried: capi_object_migrate deletes its copy
CARRIED_DELETION_ANNOTATION = "hypershift.openshift.io/capi-migration-carried-deletion"

# --- Deployments ----------------------------------------------------------------------------------------------------
# the replicas before the first scale to 0 and when it happened: written by hcp_quiesce, read when it scales back
REPLICAS_ANNOTATION = "hypershift.openshift.io/capi-migration-replicas"
STOPPED_AT_ANNOTATION = "hypershift.openshift.io/capi-migration-stopped-at"
# what the proxy sidecar changed (JSON): written by the sidecar patch (api_proxy, hcp_migrate_window), read by its
# removal (hcp_migrate_rollback, api_proxy absent)
PROXY_ORIGINAL_ANNOTATION = "hypershift.openshift.io/capi-proxy-original"
# the HyperShift operator's spec and labels before the dual operator: written and read by the dual_operator role
OPERATOR_ORIGINAL_ANNOTATION = "hypershift.openshift.io/private-capi-operator-original"
# the hash of what the dual_operator role last applied: written and read by it
DUAL_OPERATOR_HASH_ANNOTATION = "hypershift.openshift.io/private-capi-dual-operator-hash"
# the legacy operator's selector and pod label: written by the dual_operator role
OPERATOR_SCOPE_LABEL = "hypershift.openshift.io/capi-operator-scope"
# in the conversion shim's Pod template, so a new serving certificate rolls the Pods: written by conversion_shim
SERVING_CERT_HASH_ANNOTATION = "hypershift.openshift.io/serving-cert-sha256"
# On a Service: OpenShift's service CA makes its serving certificate in the Secret this names (the shim's, the shared
# proxy's with provider openshift)
SERVING_CERT_ANNOTATION = "service.beta.openshift.io/serving-cert-secret-name"

# --- CustomResourceDefinitions (the private twins) ------------------------------------------------------------------
# provenance of a rendered twin: written by private_crd_render, read by it (drift, ownership) and by capi_proxy
CRD_MANAGED_LABEL = "hypershift.openshift.io/private-capi-crd"
SOURCE_GROUP_ANNOTATION = "hypershift.openshift.io/private-capi-source-group"
SOURCE_CRD_ANNOTATION = "hypershift.openshift.io/private-capi-source-crd"
SOURCE_VERSIONS_ANNOTATION = "hypershift.openshift.io/private-capi-source-served-versions"
SOURCE_HASH_ANNOTATION = "hypershift.openshift.io/private-capi-source-hash"
RENDER_HASH_ANNOTATION = "hypershift.openshift.io/private-capi-render-hash"
# the source CRD's labels the twin does not carry (JSON): written by private_crd_render, read by capi_proxy's CRD view
SOURCE_LABELS_ANNOTATION = "hypershift.openshift.io/private-capi-source-labels"

# --- Secrets, ConfigMaps and RBAC objects ---------------------------------------------------------------------------
# the Secrets capi_serving_certificate made (it never overwrites another's): written and read by it
SERVING_CERTIFICATE_LABEL = "hypershift.openshift.io/serving-certificate"
# the HCP namespace of the proxy's ConfigMap and RBAC objects: written by the api_proxy role, read by its removal and
# hcp_migrate_rollback
PROXY_NAMESPACE_LABEL = "hypershift.openshift.io/capi-proxy-namespace"
# the entry point of a shipped ClusterRole (meta/rbac/*.yaml): written by hack/render_rbac.py
RBAC_ENTRY_POINT_LABEL = "hypershift.openshift.io/private-capi-entry-point"

# --- the proxy's mode ConfigMap (one per HCP namespace) -------------------------------------------------------------
# Every proxy sidecar of the namespace follows data[PROXY_MODE_KEY] live (capi_proxy/proxy/mode.py): PROXY_PASSTHROUGH
# relays the standard groups unchanged (the sidecar put in ahead of the migration), PROXY_TRANSLATE serves them from the
# private groups. Written by the migration (the flip) and its way back, read by the sidecars; once a sidecar applied a
# mode it writes data[PROXY_APPLIED_PREFIX + <its Pod's name>] = that mode, which the flip waits for from every Pod.
PROXY_MODE_CONFIG_MAP = "capi-proxy-mode"
# The shared proxy's serving certificate and its CA (api_proxy_apply's defaults; the migrate identity's RBAC names them)
PROXY_SERVING_SECRET, PROXY_CA_SECRET = "capi-proxy-serving", "capi-proxy-ca"
PROXY_MODE_KEY = "mode"
PROXY_APPLIED_PREFIX = "applied."
PROXY_PASSTHROUGH, PROXY_TRANSLATE = "passthrough", "translate"
PROXY_MODES = (PROXY_PASSTHROUGH, PROXY_TRANSLATE)

# --- times ----------------------------------------------------------------------------------------------------------
# annotations the collection writes (lease times, history entries, stopped-at): RFC 3339 UTC with microseconds, like a
# Lease's MicroTime
ANNOTATION_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
# phase marks (RV(marks)), migration_state's RV(read_at) and the fleet report: UTC, no zone letter
MARK_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"
# Events and Kubernetes conditions (lastTransitionTime): RFC 3339 UTC to the second
EVENT_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# the time in a run id (fleet-<time>-<suffix>, the lock holder and the report's name): UTC to the second, compact
RUN_ID_TIME_FORMAT = "%Y%m%dT%H%M%SZ"


def utc_now():
    """The clock: now, a timezone-aware datetime in UTC."""
    return datetime.datetime.now(datetime.timezone.utc)


def format_time(moment):
    """An annotation's time (ANNOTATION_TIME_FORMAT) of an aware datetime."""
    return moment.astimezone(datetime.timezone.utc).strftime(ANNOTATION_TIME_FORMAT)


def parse_time(text):
    """A timezone-aware datetime from an annotation's or an Event's time, or None when missing or malformed."""
    if not isinstance(text, str):
        return None
    for pattern in (ANNOTATION_TIME_FORMAT, EVENT_TIME_FORMAT):
        try:
            return datetime.datetime.strptime(text, pattern).replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            continue
    return None


def parse_seconds(text):
    """A figure in seconds recorded in an annotation (LEADERLESS_ANNOTATION): the float, or None when it is not a
    finite non-negative number."""
    try:
        seconds = float(text)
    except (TypeError, ValueError):
        return None
    return seconds if 0 <= seconds < float("inf") else None


def format_mark(moment):
    """A phase mark's time (MARK_TIME_FORMAT) of an aware datetime."""
    return moment.astimezone(datetime.timezone.utc).strftime(MARK_TIME_FORMAT)


def format_event_time(moment):
    """An Event's or a condition's time (EVENT_TIME_FORMAT) of an aware datetime."""
    return moment.astimezone(datetime.timezone.utc).strftime(EVENT_TIME_FORMAT)


def proxy_mode(config_map):
    """(mode, problem) of a mode ConfigMap as read (a dict, or None when it does not exist): the mode it names, or
    None with what is wrong - a sidecar never guesses a mode."""
    if not isinstance(config_map, dict):
        return None, "the ConfigMap does not exist"
    mode = (config_map.get("data") or {}).get(PROXY_MODE_KEY)
    if mode not in PROXY_MODES:
        return None, "its data.%s is %r, not one of %s" % (PROXY_MODE_KEY, mode, ", ".join(PROXY_MODES))
    return mode, None


def proxy_applied_key(pod_name):
    """The ConfigMap data key under which the sidecar of the Pod pod_name records the mode it applied."""
    return PROXY_APPLIED_PREFIX + pod_name
