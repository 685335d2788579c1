# -*- coding: utf-8 -*-
# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: hostedclusters
short_description: HyperShift HostedClusters as hosts, grouped by private-CAPI migration state
version_added: 1.0.0
author:
  - hypershift.private_capi maintainers (@hypershift)
description:
  - Reads the C(HostedCluster) objects (C(hypershift.openshift.io/v1beta1)) of one or more HyperShift management
    clusters and makes each one a host named C(<management cluster>/<namespace>/<name>), the same key
    C(playbooks/migrate_fleet.yml) uses with a static inventory. So C(--limit), C(serial), C(max_fail_percentage) and
    AAP job slicing select HostedClusters with no extra code.
  - Each host gets the variables the C(hypershift.private_capi.migrate) play reads (C(private_capi_hc_name),
    C(private_capi_hc_namespace), C(private_capi_hcp_namespace), C(private_capi_management_cluster),
    C(private_capi_kubeconfig), C(private_capi_context)) and C(private_capi_platform), C(private_capi_state) (the
    migration state judged from the annotations exactly as M(hypershift.private_capi.migration_state) judges it),
    C(private_capi_state_label), C(private_capi_failed_reason), C(private_capi_lease_holder), C(private_capi_hc_labels),
    C(ansible_connection=local) and, with O(object_counts=true), C(private_capi_capi_objects)
    (a mapping C(standard) and C(private), each C(Kind) -> number, for the HCP namespace), C(private_capi_standard_objects) and
    C(private_capi_private_objects).
  - "Groups - C(capi_hostedclusters) (every host); by state C(capi_new), C(capi_legacy), C(capi_in_progress),
    C(capi_migrated), C(capi_failed), C(capi_invalid); by platform C(platform_<type>) (C(platform_aws),
    C(platform_kubevirt), C(platform_none)...); by management cluster C(mc_<name>). Names are lower-cased and every
    character outside C([a-z0-9_]) becomes C(_). O(keyed_groups), O(groups) and O(compose) add more."
  - "Requests per management cluster - one LIST of HostedClusters (cluster-wide, or in O(management_clusters[].namespace)),
    read in pages of O(page_size) (one GET per O(page_size) HostedClusters, the pages forming one consistent list). With
    O(object_counts=true), 2 discovery GETs (aggregated discovery of C(/apis) and C(/api)) and one cluster-wide,
    metadata-only LIST (C(PartialObjectMetadataList), also paged) per namespaced CAPI resource served in a standard
    (C(*.cluster.x-k8s.io)) or private (C(*.cluster.hypershift.openshift.io)) group, counted per namespace. The cost
    does not grow with the number of HostedClusters. O(object_counts=false) leaves only the HostedCluster LIST."
  - With O(cache=true) the result is kept in the cache plugin for O(cache_timeout) seconds and a later run sends no
    request at all; C(ansible-inventory --flush-cache) (or C(ansible-playbook --flush-cache)) reads again. A changed
    O(management_clusters), O(object_counts) or O(page_size) invalidates the cached entry. The migrate role reads
    the state again before it acts, so a stale cached state can only mis-select, never mis-migrate.
  - The inventory file name must end in C(hostedclusters.yml) or C(hostedclusters.yaml)
    (e.g. C(fleet.hostedclusters.yml)); the default C(auto) inventory plugin loads it by its C(plugin) key.
requirements:
  - kubernetes (the Python client, as pinned in the collection's requirements.txt)
  - kubernetes.core (for the collection's shared client layer)
extends_documentation_fragment:
  - ansible.builtin.constructed
  - ansible.builtin.inventory_cache
options:
  plugin:
    description: The name of this plugin; the file is for this plugin only when it says so.
    required: true
    type: str
    choices: [hypershift.private_capi.hostedclusters]
  management_clusters:
    description:
      - The HyperShift management clusters to read, one entry each.
      - Without O(management_clusters[].kubeconfig) and O(management_clusters[].context) the in-cluster service account
        is used when running in a pod (C(KUBERNETES_SERVICE_HOST) set, as in an AAP container group), otherwise the
        default kubeconfig (C($KUBECONFIG) or C(~/.kube/config)) with its current context.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description:
          - The management cluster's name - the first part of every host name and the C(mc_<name>) group.
          - Unique among the entries; no C(/).
        type: str
        required: true
      kubeconfig:
        description: Path of the kubeconfig file; relative paths are relative to the inventory file's directory.
        type: path
      context:
        description: Context of the kubeconfig (its current context when omitted).
        type: str
      namespace:
        description: Read HostedClusters of this namespace only (default - every namespace).
        type: str
      label_selector:
        description: Only HostedClusters matching this label selector (applied by the API server).
        type: str
  page_size:
    description: Items per LIST page (the C(limit) of each request); the C(continue) token chains the pages.
    type: int
    default: 500
  object_counts:
    description: Count the CAPI objects of each HCP namespace, in the standard and in the private groups.
    type: bool
    default: true
  count_parallelism:
    description: How many of the counting LISTs of one management cluster run at once.
    type: int
    default: 4
  request_timeout:
    description: Seconds one request may take before the management cluster counts as unreachable.
    type: int
    default: 30
"""

EXAMPLES = r"""
# One inventory source file per example (the plugin reads one document per file).

# fleet.hostedclusters.yml - two management clusters from one kubeconfig
plugin: hypershift.private_capi.hostedclusters
management_clusters:
  - name: mc-east
    kubeconfig: ~/.kube/fleet
    context: mc-east-admin
  - name: mc-west
    kubeconfig: ~/.kube/fleet
    context: mc-west-admin
    namespace: clusters

# cached.hostedclusters.yml - cached for 10 minutes, without object counts, extra groups
# plugin: hypershift.private_capi.hostedclusters
# management_clusters:
#   - name: mc-1
#     kubeconfig: kubeconfigs/mc-1
#     label_selector: environment=staging
# object_counts: false
# cache: true
# cache_plugin: ansible.builtin.jsonfile
# cache_connection: ~/.cache/private_capi_inventory
# cache_timeout: 600
# keyed_groups:
#   - key: private_capi_hc_labels['environment'] | default('none')
#     prefix: env
# groups:
#   needs_attention: private_capi_state in ['failed', 'invalid']
# compose:
#   private_capi_release: private_capi_hc_labels['release'] | default('unknown')

# in-cluster.hostedclusters.yml - an AAP container group running on the management cluster itself
# plugin: hypershift.private_capi.hostedclusters
# management_clusters:
#   - name: local
#
# Then, for example:
#   ansible-inventory -i fleet.hostedclusters.yml --graph
#   ansible-playbook -i fleet.hostedclusters.yml playbooks/migrate_fleet.yml --limit 'mc-east/clusters/prod-01'
#   ansible-playbook -i fleet.hostedclusters.yml playbooks/migrate_fleet.yml --limit 'capi_legacy:&platform_aws'
"""

import hashlib
import json
import os
import re

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

from ansible_collections.hypershift.private_capi.plugins.module_utils import hypershift
from ansible_collections.hypershift.private_capi.plugins.module_utils.state import machine as migration_states
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import AGENT_EXTRA_GROUPS, GroupMap

try:
    from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.discovery import (
        capi_resources as discovery_capi_resources,
        read_served_resources,
    )
    from ansible_collections.hypershift.private_capi.plugins.module_utils.k8s.client import (
        PARTIAL_METADATA_LIST_ACCEPT,
        ApiClient,
        ApiError,
        ConfigurationError,
        api_path,
        call_with_retries,
        explain_failure,
        parallel_map,
    )
    # the client layer imports without the kubernetes client (modules report it themselves); parse() reports it here
    import kubernetes  # noqa: F401 pylint: disable=unused-import
except ImportError as exc:  # reported by parse(), so ansible-doc and verify_file still work without them
    IMPORT_ERROR = exc
else:
    IMPORT_ERROR = None

HOSTEDCLUSTER_GROUP = hypershift.HOSTEDCLUSTER_GROUP
HOSTEDCLUSTER_VERSION = hypershift.HOSTEDCLUSTER_VERSION
HOSTEDCLUSTER_PLURAL = hypershift.HOSTEDCLUSTER_PLURAL
ALL_GROUP = "capi_hostedclusters"
STANDARD = "standard"
PRIVATE = "private"
CACHE_FORMAT = 1
_UNSAFE_GROUP_CHARACTERS = re.compile(r"[^a-z0-9_]")
_SOURCE_KEYS = ("name", "kubeconfig", "context", "namespace", "label_selector")


class SourceError(ValueError):
    """A management_clusters entry that cannot be used; the message names it and says what to fix."""


# --- pure: sources, records, names, groups, counts ------------------------------------------------------------


def _plain(value):
    """A plain str (config values may carry Ansible's trust tags, which have no place in the cache)."""
    return None if value is None else "%s" % (value,)


def normalise_sources(entries, inventory_dir):
    """The management_clusters option as validated dicts (keys _SOURCE_KEYS); SourceError says what is wrong."""
    if not isinstance(entries, list) or not entries:
        raise SourceError("management_clusters must be a non-empty list of entries such as "
                          "{name: mc-1, kubeconfig: /path/to/kubeconfig, context: admin}; found %r" % (entries,))
    sources = []
    seen = set()
    for index, entry in enumerate(entries):
        where = "management_clusters[%d]" % index
        if not isinstance(entry, dict):
            raise SourceError("%s must be a mapping with at least a name; found %r" % (where, entry))
        unknown = sorted("%s" % key for key in entry if key not in _SOURCE_KEYS)
        if unknown:
            raise SourceError("%s has unknown keys %s; allowed: %s" % (where, ", ".join(unknown), ", ".join(_SOURCE_KEYS)))
        for key in _SOURCE_KEYS:
            if entry.get(key) is not None and not isinstance(entry.get(key), str):
                raise SourceError("%s.%s must be a string; found %r" % (where, key, entry.get(key)))
        name = _plain(entry.get("name"))
        if not name or "/" in name:
            raise SourceError("%s.name must be a non-empty name without '/' (it starts every host name "
                              "<management cluster>/<namespace>/<name>); found %r" % (where, name))
        if name in seen:
            raise SourceError("%s.name %r is used by an earlier entry; give each management cluster its own name"
                              % (where, name))
        seen.add(name)
        kubeconfig = _plain(entry.get("kubeconfig")) or None
        if kubeconfig:
            kubeconfig = os.path.expanduser(kubeconfig)
            if not os.path.isabs(kubeconfig):
                kubeconfig = os.path.normpath(os.path.join(inventory_dir, kubeconfig))
        sources.append({"name": name, "kubeconfig": kubeconfig, "context": _plain(entry.get("context")) or None,
                        "namespace": _plain(entry.get("namespace")) or None,
                        "label_selector": _plain(entry.get("label_selector")) or None})
    return sources


def describe_source(source):
    """'management cluster 'mc-1' (kubeconfig /k, context c)' for messages."""
    how = []
    if source.get("kubeconfig"):
        how.append("kubeconfig %s" % source["kubeconfig"])
    if source.get("context"):
        how.append("context %s" % source["context"])
    return "management cluster %r (%s)" % (source["name"], ", ".join(how) or "in-cluster or default kubeconfig")


def cache_fingerprint(sources, object_counts, page_size):
    """What the cached records depend on: a changed inventory file must not reuse them."""
    text = json.dumps({"format": CACHE_FORMAT, "sources": sources, "object_counts": bool(object_counts),
                       "page_size": int(page_size)}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def safe_group_name(text):
    """Lower case, every character outside [a-z0-9_] as '_' (valid in every Ansible group pattern)."""
    return _UNSAFE_GROUP_CHARACTERS.sub("_", ("%s" % text).lower())


def host_name(record):
    """<management cluster>/<namespace>/<name>: unique across management clusters, as migrate_fleet.yml keys them."""
    return "%s/%s/%s" % (record["management_cluster"], record["namespace"], record["name"])


def state_group(state):
    return "capi_" + safe_group_name(state)


STATE_GROUPS = tuple(state_group(state) for state in migration_states.STATES)


def group_names(record):
    """The plugin's own groups of one host (Constructable options add more)."""
    return [ALL_GROUP, state_group(record["state"]), "platform_" + safe_group_name(record["platform"]),
            "mc_" + safe_group_name(record["management_cluster"])]


def hostedcluster_record(hostedcluster, management_cluster):
    """What the inventory keeps of one HostedCluster (state judged by migration_states from its annotations)."""
    metadata = hostedcluster.get("metadata") or {}
    namespace, name = metadata.get("namespace") or "", metadata.get("name") or ""
    annotations = dict(metadata.get("annotations") or {})
    labels = dict(metadata.get("labels") or {})
    lease = migration_states.lease_of(annotations)
    return {
        "management_cluster": management_cluster,
        "namespace": namespace,
        "name": name,
        "hcp_namespace": hypershift.hcp_namespace(namespace, name),
        "platform": ((hostedcluster.get("spec") or {}).get("platform") or {}).get("type") or "None",
        "state": migration_states.state_of_annotations(annotations),
        "state_label": labels.get(migration_states.STATE_LABEL),
        "failed_reason": annotations.get(migration_states.FAILED_ANNOTATION) or None,
        "lease_holder": lease["holder"] if lease else None,
        "labels": labels,
        "objects": None,
    }


def capi_resources(served, group_map):
    """[(STANDARD|PRIVATE, ServedResource)]: each namespaced, listable resource of a mapped group, preferred version
    (the collection's one CAPI resource discovery, discovery.capi_resources)."""
    return [(STANDARD if group_map.is_standard(resource.group) else PRIVATE, resource)
            for resource in discovery_capi_resources(served, group_map.is_mapped)]


def namespace_counts(items):
    """{namespace: number of items} of one LIST."""
    counts = {}
    for item in items:
        namespace = (item.get("metadata") or {}).get("namespace") or ""
        counts[namespace] = counts.get(namespace, 0) + 1
    return counts


def objects_in(namespace, tallies):
    """{standard: {Kind: n}, private: {Kind: n}} of one namespace, from [(side, kind, {namespace: n})]."""
    objects = {STANDARD: {}, PRIVATE: {}}
    for side, kind, per_namespace in tallies:
        found = per_namespace.get(namespace, 0)
        if found:
            objects[side][kind] = objects[side].get(kind, 0) + found
    return objects


def host_variables(record, source):
    """The host variables of one HostedCluster (the names the migrate play and its selection read)."""
    variables = {
        "ansible_connection": "local",
        "private_capi_management_cluster": record["management_cluster"],
        "private_capi_hc_name": record["name"],
        "private_capi_hc_namespace": record["namespace"],
        "private_capi_hcp_namespace": record["hcp_namespace"],
        "private_capi_platform": record["platform"],
        "private_capi_state": record["state"],
        "private_capi_state_label": record["state_label"],
        "private_capi_failed_reason": record["failed_reason"],
        "private_capi_lease_holder": record["lease_holder"],
        "private_capi_hc_labels": dict(record["labels"]),
    }
    if source.get("kubeconfig"):
        variables["private_capi_kubeconfig"] = source["kubeconfig"]
    if source.get("context"):
        variables["private_capi_context"] = source["context"]
    if record.get("objects") is not None:
        objects = record["objects"]
        variables["private_capi_capi_objects"] = {side: dict(objects[side]) for side in (STANDARD, PRIVATE)}
        variables["private_capi_standard_objects"] = sum(objects[STANDARD].values())
        variables["private_capi_private_objects"] = sum(objects[PRIVATE].values())
    return variables


# --- I/O: one management cluster --------------------------------------------------------------------------------


def connect(source, timeout):
    """(k8s_client.ApiClient, server URL) for one management cluster: its kubeconfig/context, else in-cluster, else the
    default kubeconfig (ApiClient.from_kubeconfig: no request sent until the LIST)."""
    try:
        client = ApiClient.from_kubeconfig(source["kubeconfig"], source["context"], request_timeout=timeout,
                                           owner="this entry")
    except ConfigurationError as exc:
        raise SourceError(str(exc))
    return client, client.server


def list_snapshot(client, path, what, page_size, label_selector=None, headers=None):
    """Every item of a collection as one consistent LIST (pages chained by `continue`; the client restarts a LIST
    whose continue token expired). Transient errors are retried."""
    items, _metadata = call_with_retries(lambda: client.list_all(
        path, what, page_size=page_size, label_selector=label_selector, headers=headers), attempts=3)
    return items


def read_hostedclusters(client, server, source, page_size):
    """Every HostedCluster of the source: one LIST (pages chained by `continue`, so one consistent snapshot)."""
    path = api_path(HOSTEDCLUSTER_GROUP, HOSTEDCLUSTER_VERSION, HOSTEDCLUSTER_PLURAL, namespace=source["namespace"])
    what = "LIST HostedClusters (%s)" % path
    try:
        items = list_snapshot(client, path, what, page_size, label_selector=source["label_selector"])
    except ApiError as exc:
        if exc.status == 404:
            raise SourceError(
                "the API server %s does not serve hostedclusters.%s/%s (404: %s): the HostedCluster CRD is absent, so "
                "this is not a HyperShift management cluster (or the kubeconfig/context points at the wrong cluster); "
                "fix the entry, install HyperShift, or remove the entry"
                % (server, HOSTEDCLUSTER_GROUP, HOSTEDCLUSTER_VERSION, exc.api_message))
        raise SourceError(explain_failure(exc, server, "remove the entry"))
    return items


def read_capi_tallies(client, server, page_size, parallelism):
    """[(side, kind, {namespace: n})] for every CAPI resource served: 2 discovery GETs + one metadata LIST each."""
    try:
        served = read_served_resources(client, parallelism=2)
        resources = capi_resources(served, GroupMap(AGENT_EXTRA_GROUPS))

        def tally(entry):
            side, resource = entry
            path = api_path(resource.group, resource.version, resource.plural)
            items = list_snapshot(client, path, "LIST %s (%s)" % (resource.kind, path), page_size,
                                  headers={"Accept": PARTIAL_METADATA_LIST_ACCEPT})
            return side, resource.kind, namespace_counts(items)

        return parallel_map(tally, resources, max(1, parallelism))
    except ApiError as exc:
        raise SourceError(explain_failure(exc, server, "set object_counts: false in the inventory file"))


def read_source(source, page_size, object_counts, parallelism, timeout):
    """The records of one management cluster, sorted by namespace and name."""
    client, server = connect(source, timeout)
    records = [hostedcluster_record(hostedcluster, source["name"])
               for hostedcluster in read_hostedclusters(client, server, source, page_size)]
    if object_counts and records:
        tallies = read_capi_tallies(client, server, page_size, parallelism)
        for record in records:
            record["objects"] = objects_in(record["hcp_namespace"], tallies)
    return sorted(records, key=lambda record: (record["namespace"], record["name"]))


# --- the plugin ----------------------------------------------------------------------------------------------------


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "hypershift.private_capi.hostedclusters"

    def verify_file(self, path):
        """Only files named hostedclusters.yml|yaml or *.hostedclusters.yml|yaml."""
        if not super(InventoryModule, self).verify_file(path):
            return False
        base = os.path.basename(path)
        return any(base == "hostedclusters" + suffix or base.endswith(".hostedclusters" + suffix)
                   for suffix in (".yml", ".yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super(InventoryModule, self).parse(inventory, loader, path, cache)
        self._read_config_data(path)
        if IMPORT_ERROR is not None:
            raise AnsibleParserError("hostedclusters inventory %s needs the kubernetes Python client and the "
                                     "kubernetes.core collection: %s; install the collection's requirements.txt"
                                     % (path, IMPORT_ERROR))
        try:
            sources = normalise_sources(self.get_option("management_clusters"), os.path.dirname(os.path.abspath(path)))
        except SourceError as exc:
            raise AnsibleParserError("hostedclusters inventory %s: %s; fix the inventory file" % (path, exc))
        page_size, object_counts = self.get_option("page_size"), self.get_option("object_counts")
        if page_size < 1:
            raise AnsibleParserError("hostedclusters inventory %s: page_size must be at least 1; found %s"
                                     % (path, page_size))
        fingerprint = cache_fingerprint(sources, object_counts, page_size)
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache")
        records = None
        if use_cache and cache:
            cached = self._cache.get(cache_key)
            if isinstance(cached, dict) and cached.get("fingerprint") == fingerprint:
                records = cached.get("records")
        if records is None:
            records = self._read_sources(path, sources, page_size, object_counts)
            if use_cache:
                self._cache[cache_key] = {"fingerprint": fingerprint, "records": records}
        self._populate(records, sources)

    def _read_sources(self, path, sources, page_size, object_counts):
        records = []
        for source in sources:
            try:
                records.extend(read_source(source, page_size, object_counts, self.get_option("count_parallelism"),
                                           self.get_option("request_timeout")))
            except SourceError as exc:
                raise AnsibleParserError("hostedclusters inventory %s, %s: %s" % (path, describe_source(source), exc))
        return records

    def _populate(self, records, sources):
        by_name = {source["name"]: source for source in sources}
        strict = self.get_option("strict")
        for record in records:
            host = self.inventory.add_host(host_name(record))
            for group in group_names(record):
                self.inventory.add_group(group)
                self.inventory.add_child(group, host)
            variables = host_variables(record, by_name[record["management_cluster"]])
            for key, value in variables.items():
                self.inventory.set_variable(host, key, value)
            self._set_composite_vars(self.get_option("compose"), variables, host, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), variables, host, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), variables, host, strict=strict)
