# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The one API-group translation core: cluster.x-k8s.io <-> cluster.hypershift.openshift.io.

Pure Python (no Ansible, no I/O), Python 3.9+, shared by the modules, the filters, the API proxy
and the conversion-webhook shim. Only *group positions* are rewritten, never free text:

* groups: ``cluster.x-k8s.io`` and ``<labels>.cluster.x-k8s.io`` (whole DNS labels only) map to the
  same labels under ``cluster.hypershift.openshift.io``, except ``EXCLUDED_STANDARD_GROUPS`` (clusterctl's
  inventory), which keep their name both ways; explicit extra pairs (e.g. the Agent provider group) only
  when configured;
* apiVersion strings ``<group>/<version>`` (``v1`` and unmapped groups untouched);
* URL paths ``/apis/<group>/...`` and CRD names in ``/apis/apiextensions.k8s.io/<v>/customresourcedefinitions/<plural>.<group>``;
* objects (see ``translate_object``): top-level apiVersion, List items, ownerReferences,
  managedFields, object references anywhere under spec/status, plus the wire shapes listed there.

Label/annotation keys and values, finalizers, names, messages and every other string stay
byte-identical: CAPI binaries compare those keys literally (e.g. cluster-api's util/contract and
util/conversion read `cluster.x-k8s.io/...` keys as written).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

# the translation errors' root lives below translate/ and k8s/ (errors.py); re-exported here for the core's callers
from ansible_collections.hypershift.private_capi.plugins.module_utils.errors import CapiTranslationError  # noqa: F401 pylint: disable=unused-import
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe_object

STANDARD_SUFFIX = "cluster.x-k8s.io"
PRIVATE_SUFFIX = "cluster.hypershift.openshift.io"
TO_PRIVATE = "to_private"
TO_STANDARD = "to_standard"
DIRECTIONS = (TO_PRIVATE, TO_STANDARD)

# The Agent provider group does not follow the suffix pattern. Its private name must lie outside the
# pattern's range: "capi-provider.cluster.hypershift.openshift.io" would be the image of
# "capi-provider.cluster.x-k8s.io" and break bijectivity, so GroupMap rejects it.
AGENT_STANDARD_GROUP = "capi-provider.agent-install.openshift.io"
AGENT_PRIVATE_GROUP = "capi-provider.agent-install.hypershift.openshift.io"
AGENT_EXTRA_GROUPS = {AGENT_STANDARD_GROUP: AGENT_PRIVATE_GROUP}

_DNS_LABEL = r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?"
_DNS_SUBDOMAIN_RE = re.compile(r"^%s(?:\.%s)*$" % (_DNS_LABEL, _DNS_LABEL))
_DNS_SUBDOMAIN_MAX = 253
_CACHE_LIMIT = 4096  # bounds memo growth when a proxy sees arbitrary strings
# A dotted name inside free text: "machines.cluster.hypershift.openshift.io", "Machine.cluster.x-k8s.io".
_DOTTED_NAME_RE = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9]*[A-Za-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)+")

_STANDARD_DOT_SUFFIX = "." + STANDARD_SUFFIX
_PRIVATE_DOT_SUFFIX = "." + PRIVATE_SUFFIX

# Groups the suffix pattern matches that are no HyperShift CAPI types. They, and names under them, keep their
# name in both directions: no private twin is ever rendered, copied, routed to or recognised (their private
# spelling is no private group either). The one place every caller (CRD rendering, the move, verify, rollback,
# the proxy, the shim) learns the rule from, through GroupMap.
# - clusterctl.cluster.x-k8s.io: clusterctl's inventory (CRD providers.clusterctl.cluster.x-k8s.io, kind
#   Provider) belongs to the platform's own tooling, not to HyperShift; a private twin would also outlive a rollback.
EXCLUDED_STANDARD_GROUPS = frozenset(("clusterctl.cluster.x-k8s.io",))
_EXCLUDED_PREFIXES = frozenset(group[: -len(_STANDARD_DOT_SUFFIX)] for group in EXCLUDED_STANDARD_GROUPS)

# String maps inside spec/status whose entries are user data, never references.
_FREE_TEXT_MAP_KEYS = frozenset(("labels", "annotations", "matchLabels", "nodeSelector"))


def _is_dns_subdomain(value):
    return len(value) <= _DNS_SUBDOMAIN_MAX and _DNS_SUBDOMAIN_RE.match(value) is not None


def _pattern_prefix(group, dot_suffix, bare_suffix):
    """Return the label prefix ('' for the bare suffix) if group matches the suffix pattern, else None."""
    if group == bare_suffix:
        return ""
    if not group.endswith(dot_suffix):
        return None
    prefix = group[: -len(dot_suffix)]
    if not prefix or _DNS_SUBDOMAIN_RE.match(prefix) is None:
        return None
    return prefix


def _is_excluded_prefix(prefix):
    """Whether a pattern prefix ('infrastructure', 'providers.clusterctl') names an excluded group or one under it."""
    return prefix in _EXCLUDED_PREFIXES or any(prefix.endswith("." + excluded) for excluded in _EXCLUDED_PREFIXES)


def is_excluded_group(group):
    """True for an EXCLUDED_STANDARD_GROUPS group, its would-be private spelling and any name under either."""
    if not isinstance(group, str):
        return False
    for dot_suffix, bare_suffix in ((_STANDARD_DOT_SUFFIX, STANDARD_SUFFIX), (_PRIVATE_DOT_SUFFIX, PRIVATE_SUFFIX)):
        prefix = _pattern_prefix(group, dot_suffix, bare_suffix)
        if prefix and _is_excluded_prefix(prefix):
            return True
    return False


def _join(prefix, suffix):
    return suffix if not prefix else prefix + "." + suffix


def _check_direction(direction):
    if direction not in DIRECTIONS:
        raise CapiTranslationError(
            "direction must be %r or %r, got %r; pass one of the module constants TO_PRIVATE/TO_STANDARD"
            % (TO_PRIVATE, TO_STANDARD, direction)
        )


class GroupMap(object):
    """Bijective map between standard CAPI groups and their private names.

    extra_groups: mapping standard_group -> private_group for pairs outside the suffix pattern,
    e.g. ``AGENT_EXTRA_GROUPS``. A pair whose groups overlap the pattern (on either side) or another
    pair is rejected, so ``to_standard(to_private(g)) == g`` for every mapped ``g``.
    """

    def __init__(self, extra_groups=None):
        extra_groups = {} if extra_groups is None else extra_groups
        if not hasattr(extra_groups, "items"):
            raise CapiTranslationError(
                "extra_groups must be a mapping of standard group -> private group, got %s %r"
                % (type(extra_groups).__name__, extra_groups)
            )
        self._extra_to_private = {}
        self._extra_to_standard = {}
        for standard, private in sorted(extra_groups.items(), key=lambda pair: str(pair[0])):
            self._add_extra_pair(standard, private)
        self._cache = {TO_PRIVATE: {}, TO_STANDARD: {}}
        self._api_version_cache = {TO_PRIVATE: {}, TO_STANDARD: {}}
        self._side_cache = {}  # group -> _pattern_side(group), for is_standard / is_private

    def _add_extra_pair(self, standard, private):
        pair = "extra group pair %r -> %r" % (standard, private)
        for group in (standard, private):
            if not isinstance(group, str) or not _is_dns_subdomain(group):
                raise CapiTranslationError(
                    "%s: %r is not a valid API group (lowercase DNS subdomain); fix the extra_groups entry" % (pair, group)
                )
        if standard == private:
            raise CapiTranslationError("%s: a group cannot map to itself; remove the entry" % pair)
        for group in (standard, private):
            if is_excluded_group(group):
                raise CapiTranslationError(
                    "%s: %r is excluded from translation (EXCLUDED_STANDARD_GROUPS: %s, no HyperShift CAPI type); "
                    "remove the entry" % (pair, group, ", ".join(sorted(EXCLUDED_STANDARD_GROUPS)))
                )
            if self._pattern_side(group) is not None:
                raise CapiTranslationError(
                    "%s collides with the suffix pattern (%r is already translated as %s <-> %s); "
                    "choose a private name outside '*.%s', e.g. %r for the Agent group"
                    % (pair, group, STANDARD_SUFFIX, PRIVATE_SUFFIX, PRIVATE_SUFFIX, AGENT_PRIVATE_GROUP)
                )
            if group in self._extra_to_private or group in self._extra_to_standard:
                raise CapiTranslationError(
                    "%s collides with another extra pair that already uses %r; each group may appear once" % (pair, group)
                )
        self._extra_to_private[standard] = private
        self._extra_to_standard[private] = standard

    @staticmethod
    def _pattern_side(group):
        """TO_PRIVATE-able ('standard'), TO_STANDARD-able ('private') or None for the suffix pattern."""
        prefix = _pattern_prefix(group, _STANDARD_DOT_SUFFIX, STANDARD_SUFFIX)
        if prefix is not None:
            # The private image must still be a legal group name (253 characters at most).
            if len(group) - len(STANDARD_SUFFIX) + len(PRIVATE_SUFFIX) <= _DNS_SUBDOMAIN_MAX and not _is_excluded_prefix(prefix):
                return "standard"
            return None
        prefix = _pattern_prefix(group, _PRIVATE_DOT_SUFFIX, PRIVATE_SUFFIX)
        if prefix is not None and len(group) <= _DNS_SUBDOMAIN_MAX and not _is_excluded_prefix(prefix):
            return "private"
        return None

    @property
    def extra_groups(self):
        """A copy of the configured extra pairs (standard -> private)."""
        return dict(self._extra_to_private)

    def __repr__(self):
        return "GroupMap(extra_groups=%r)" % (self._extra_to_private,)

    def __eq__(self, other):
        return isinstance(other, GroupMap) and other._extra_to_private == self._extra_to_private

    def __hash__(self):
        return hash(tuple(sorted(self._extra_to_private.items())))

    def _require_group(self, group):
        if not isinstance(group, str):
            raise CapiTranslationError("API group must be a string, got %s %r" % (type(group).__name__, group))

    def _side(self, group):
        """_pattern_side(group), remembered (a proxy asks about the same few groups on every request)."""
        cache = self._side_cache
        try:
            return cache[group]
        except KeyError:
            pass
        side = self._pattern_side(group)
        if len(cache) < _CACHE_LIMIT:
            cache[group] = side
        return side

    def is_standard(self, group):
        """True if group is a standard group this map translates to a private one."""
        self._require_group(group)
        return group in self._extra_to_private or self._side(group) == "standard"

    def is_private(self, group):
        """True if group is a private group this map translates back to a standard one."""
        self._require_group(group)
        return group in self._extra_to_standard or self._side(group) == "private"

    def is_mapped(self, group):
        return self.is_standard(group) or self.is_private(group)

    @staticmethod
    def is_excluded(group):
        """True for a group the pattern matches but that is no CAPI type (see EXCLUDED_STANDARD_GROUPS)."""
        return is_excluded_group(group)

    def to_private(self, group):
        return self.translate_group(group, TO_PRIVATE)

    def to_standard(self, group):
        return self.translate_group(group, TO_STANDARD)

    def translate_group(self, group, direction):
        """The group in the other naming, or the group unchanged when it is unmapped or already there."""
        cache = self._cache.get(direction)
        if cache is None:
            _check_direction(direction)
        self._require_group(group)
        translated = cache.get(group)
        if translated is not None:
            return translated
        translated = self._translate_uncached(group, direction)
        if len(cache) < _CACHE_LIMIT:
            cache[group] = translated
        return translated

    def _translate_uncached(self, group, direction):
        if direction == TO_PRIVATE:
            if group in self._extra_to_private:
                return self._extra_to_private[group]
            if self._pattern_side(group) == "standard":
                return _join(_pattern_prefix(group, _STANDARD_DOT_SUFFIX, STANDARD_SUFFIX), PRIVATE_SUFFIX)
            return group
        if group in self._extra_to_standard:
            return self._extra_to_standard[group]
        if self._pattern_side(group) == "private":
            return _join(_pattern_prefix(group, _PRIVATE_DOT_SUFFIX, PRIVATE_SUFFIX), STANDARD_SUFFIX)
        return group

    def translate_api_version(self, api_version, direction):
        """'<group>/<version>' with the group translated; 'v1', unmapped and malformed values unchanged."""
        cache = self._api_version_cache.get(direction)
        if cache is None:
            _check_direction(direction)
        if not isinstance(api_version, str):
            raise CapiTranslationError(
                "apiVersion must be a string like 'cluster.x-k8s.io/v1beta2', got %s %r"
                % (type(api_version).__name__, api_version)
            )
        translated = cache.get(api_version)
        if translated is not None:
            return translated
        group, slash, version = api_version.partition("/")
        translated = api_version
        if slash and version and "/" not in version:
            new_group = self.translate_group(group, direction)
            if new_group != group:
                translated = new_group + "/" + version
        if len(cache) < _CACHE_LIMIT:
            cache[api_version] = translated
        return translated


DEFAULT_GROUP_MAP = GroupMap()


def _group_map(group_map):
    if group_map is None:
        return DEFAULT_GROUP_MAP
    if not isinstance(group_map, GroupMap):
        raise CapiTranslationError(
            "group_map must be a GroupMap (build one with GroupMap(extra_groups)), got %s" % type(group_map).__name__
        )
    return group_map


def translate_api_version(api_version, direction, group_map=None):
    """Translate the group of an apiVersion string ('v1' and unmapped groups are returned unchanged)."""
    return _group_map(group_map).translate_api_version(api_version, direction)


def translate_text(text, direction, group_map=None):
    """Free text a server composed from group names (a Status message: 'machines.<group> "m1" is forbidden')
    with every dotted name that ends in a mapped group, at a label boundary, in the other naming."""
    group_map = _group_map(group_map)
    _check_direction(direction)
    if not isinstance(text, str):
        return text
    source_suffixes = (PRIVATE_SUFFIX,) + tuple(group_map.extra_groups.values()) if direction == TO_STANDARD \
        else (STANDARD_SUFFIX,) + tuple(group_map.extra_groups)
    if not any(suffix in text for suffix in source_suffixes):
        return text
    is_source = group_map.is_private if direction == TO_STANDARD else group_map.is_standard

    def translate_name(match):
        name = match.group(0)
        start = 0
        while True:
            if is_excluded_group(name[start:]):  # 'providers.clusterctl.cluster.x-k8s.io' stays whole
                return name
            if is_source(name[start:]):
                return name[:start] + group_map.translate_group(name[start:], direction)
            dot = name.find(".", start)
            if dot < 0:
                return name
            start = dot + 1
    return _DOTTED_NAME_RE.sub(translate_name, text)


def translate_crd_name(name, direction, group_map=None):
    """'<plural>.<group>' with the group translated; names whose group is unmapped are unchanged."""
    if not isinstance(name, str):
        raise CapiTranslationError(
            "CRD name must be a string like 'machines.cluster.x-k8s.io', got %s %r" % (type(name).__name__, name)
        )
    _check_direction(direction)
    plural, dot, group = name.partition(".")
    if not dot or not plural:
        return name
    new_group = _group_map(group_map).translate_group(group, direction)
    return name if new_group == group else plural + "." + new_group


def translate_path(path, direction, group_map=None):
    """Translate the group segment of an API URL path; everything else, and the query, stays as is.

    Segment-wise only (no decoding, no normalisation): ``/apis/<group>[/...]`` has segment 2
    translated; ``/apis/apiextensions.k8s.io/<v>/[watch/]customresourcedefinitions/<plural>.<group>[/status]``
    has the CRD name translated. ``/api/v1/...``, ``/healthz`` and all other segments are untouched.
    """
    if not isinstance(path, str):
        raise CapiTranslationError("URL path must be a string, got %s %r" % (type(path).__name__, path))
    if not path.startswith("/"):
        raise CapiTranslationError(
            "URL path must start with '/', got %r; pass only the path (and query) of the request, not a full URL" % path
        )
    _check_direction(direction)
    group_map = _group_map(group_map)
    path_part, question, query = path.partition("?")
    segments = path_part.split("/")
    if len(segments) < 3 or segments[1] != "apis":
        return path
    changed = False
    group = segments[2]
    new_group = group_map.translate_group(group, direction)
    if new_group != group:
        segments[2] = new_group
        changed = True
    elif group == "apiextensions.k8s.io" and len(segments) >= 6:
        name_index = None
        if segments[4] == "customresourcedefinitions":
            name_index = 5
        elif segments[4] == "watch" and len(segments) >= 7 and segments[5] == "customresourcedefinitions":
            name_index = 6
        if name_index is not None:
            name = segments[name_index]
            new_name = translate_crd_name(name, direction, group_map)
            if new_name != name:
                segments[name_index] = new_name
                changed = True
    if not changed:
        return path
    return "/".join(segments) + question + query


# ---- objects -------------------------------------------------------------------------------------


def copy_json(value):
    """Independent copy of JSON-like data (faster than copy.deepcopy); dict/list subclasses become plain."""
    value_type = type(value)
    if value_type is dict:
        return {key: copy_json(item) for key, item in value.items()}
    if value_type is list:
        return [copy_json(item) for item in value]
    if value_type in (str, int, float, bool) or value is None:
        return value
    if isinstance(value, (str, int, float, bool)):
        return value  # immutable subclasses (e.g. Ansible's tagged strings)
    if hasattr(value, "items"):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [copy_json(item) for item in value]
    return copy.deepcopy(value)


class _Walker(object):
    """Copies one object tree, translating group positions on the way (the input is only read)."""

    __slots__ = ("group_map", "direction", "root")

    def __init__(self, group_map, direction, root):
        self.group_map = group_map
        self.direction = direction
        self.root = root

    def fail(self, where, problem):
        raise CapiTranslationError(
            "%s: %s %s; fix the object (only Kubernetes JSON objects can be translated)"
            % (describe_object(self.root), where.lstrip(".") or "the object", problem)
        )

    def api_version(self, holder, key):
        value = holder.get(key)
        if isinstance(value, str):
            holder[key] = self.group_map.translate_api_version(value, self.direction)

    def group(self, holder, key):
        value = holder.get(key)
        if isinstance(value, str):
            holder[key] = self.group_map.translate_group(value, self.direction)

    def object(self, obj, where):
        """A translated copy of obj (a full object, a List item or a WatchEvent)."""
        if not hasattr(obj, "items") or isinstance(obj, (str, bytes)):
            self.fail(where, "must be a mapping, found %s" % type(obj).__name__)
        if "apiVersion" not in obj and "object" in obj and "type" in obj:  # WatchEvent {"type", "object"}
            return {
                key: self.object(value, where + ".object") if key == "object" else copy_json(value)
                for key, value in obj.items()
            }
        kind = obj.get("kind")
        kind = kind if isinstance(kind, str) else ""
        is_list = kind.endswith("List") and isinstance(obj.get("items"), list)
        walk_refs = kind != "CustomResourceDefinition"  # CRD schemas are not references
        result = {}
        for key, value in obj.items():
            if key == "apiVersion" and isinstance(value, str):
                result[key] = self.group_map.translate_api_version(value, self.direction)
            elif key == "metadata":
                result[key] = self.metadata(value, where)
            elif (key == "spec" or key == "status") and walk_refs:
                result[key] = self.refs(value)
            elif key == "items" and is_list:
                result[key] = [self.object(item, "%s.items[%d]" % (where, index)) for index, item in enumerate(value)]
            else:
                result[key] = copy_json(value)
        if not walk_refs:
            self.crd(result)
        else:
            handler = _SHAPE_HANDLERS.get(kind)
            if handler is not None:
                handler(self, result, where)
        return result

    def metadata(self, value, where):
        metadata = copy_json(value)
        if not isinstance(metadata, dict):
            return metadata
        for field in ("ownerReferences", "managedFields"):
            entries = metadata.get(field)
            if entries is None:
                continue
            if not isinstance(entries, list):
                self.fail("%s.metadata.%s" % (where, field), "must be a list, found %s" % type(entries).__name__)
            for index, entry in enumerate(entries):
                if not isinstance(entry, dict):
                    self.fail("%s.metadata.%s[%d]" % (where, field, index), "must be a mapping, found %s" % type(entry).__name__)
                api_version = entry.get("apiVersion")
                if api_version is not None and not isinstance(api_version, str):
                    self.fail(
                        "%s.metadata.%s[%d].apiVersion" % (where, field, index),
                        "must be a string, found %s" % type(api_version).__name__,
                    )
                self.api_version(entry, "apiVersion")
        return metadata

    def refs(self, node):
        """A copy of node with every object reference below it translated: {kind, apiVersion} or {kind, apiGroup}."""
        node_type = type(node)
        if node_type is not dict:
            if node_type is list or isinstance(node, (list, tuple)):
                return [self.refs(child) for child in node]
            if not hasattr(node, "items") or isinstance(node, (str, bytes)):
                return copy_json(node)
        result = {}
        for key, child in node.items():
            child_type = type(child)
            if child_type is str or child_type is int or child_type is bool or child is None:
                result[key] = child
            elif key in _FREE_TEXT_MAP_KEYS:
                result[key] = copy_json(child)
            else:
                result[key] = self.refs(child)
        if "kind" in result:
            self.api_version(result, "apiVersion")
            self.group(result, "apiGroup")
        return result

    def crd(self, crd):
        metadata = crd.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("name"), str):
            metadata["name"] = translate_crd_name(metadata["name"], self.direction, self.group_map)
        spec = crd.get("spec")
        if isinstance(spec, dict):
            self.group(spec, "group")


def _status_shape(walker, status, where):
    if "message" in status:
        status["message"] = translate_text(status["message"], walker.direction, walker.group_map)
    details = status.get("details")
    if isinstance(details, dict):
        walker.group(details, "group")
        for cause in details.get("causes") if isinstance(details.get("causes"), list) else ():
            if isinstance(cause, dict) and "message" in cause:
                cause["message"] = translate_text(cause["message"], walker.direction, walker.group_map)


def _conversion_review_shape(walker, review, where):
    request = review.get("request")
    if isinstance(request, dict):
        walker.api_version(request, "desiredAPIVersion")
        if isinstance(request.get("objects"), list):
            request["objects"] = [
                walker.object(item, "%s.request.objects[%d]" % (where, index)) for index, item in enumerate(request["objects"])
            ]
    response = review.get("response")
    if isinstance(response, dict) and isinstance(response.get("convertedObjects"), list):
        response["convertedObjects"] = [
            walker.object(item, "%s.response.convertedObjects[%d]" % (where, index))
            for index, item in enumerate(response["convertedObjects"])
        ]


def _admission_review_shape(walker, review, where):
    request = review.get("request")
    if not isinstance(request, dict):
        return
    for field in ("kind", "requestKind", "resource", "requestResource"):
        if isinstance(request.get(field), dict):
            walker.group(request[field], "group")
    for field in ("object", "oldObject"):
        if isinstance(request.get(field), dict):
            request[field] = walker.object(request[field], "%s.request.%s" % (where, field))


def _table_shape(walker, table, where):
    for index, row in enumerate(table.get("rows") or ()):
        if isinstance(row, dict) and isinstance(row.get("object"), dict):
            row["object"] = walker.object(row["object"], "%s.rows[%d].object" % (where, index))


def _event_shape(walker, event, where):
    for field in ("involvedObject", "regarding", "related"):
        if isinstance(event.get(field), dict):
            walker.api_version(event[field], "apiVersion")


def _rbac_shape(walker, role, where):
    for rule in role.get("rules") or ():
        groups = rule.get("apiGroups") if isinstance(rule, dict) else None
        if isinstance(groups, list):
            rule["apiGroups"] = [
                walker.group_map.translate_group(group, walker.direction) if isinstance(group, str) else group
                for group in groups
            ]


def _api_group_shape(walker, api_group, where):
    walker.group(api_group, "name")
    for version in api_group.get("versions") or ():
        if isinstance(version, dict):
            walker.api_version(version, "groupVersion")
    if isinstance(api_group.get("preferredVersion"), dict):
        walker.api_version(api_group["preferredVersion"], "groupVersion")


def _api_group_list_shape(walker, group_list, where):
    for api_group in group_list.get("groups") or ():
        if isinstance(api_group, dict):
            _api_group_shape(walker, api_group, where)


def _api_resource_list_shape(walker, resource_list, where):
    walker.api_version(resource_list, "groupVersion")
    for resource in resource_list.get("resources") or ():
        if isinstance(resource, dict):
            walker.group(resource, "group")


_SHAPE_HANDLERS = {
    "Status": _status_shape,
    "ConversionReview": _conversion_review_shape,
    "AdmissionReview": _admission_review_shape,
    "Table": _table_shape,
    "Event": _event_shape,
    "Role": _rbac_shape,
    "ClusterRole": _rbac_shape,
    "APIGroup": _api_group_shape,
    "APIGroupList": _api_group_list_shape,
    "APIResourceList": _api_resource_list_shape,
}


class _InPlaceWalker(_Walker):
    """Rewrites the group positions of a JSON tree the caller owns, in place; visits what _Walker visits.

    Only plain JSON containers (dict, list) are descended, as json.loads builds them; a tree that
    shares one sub-object between two positions must use translate_object instead.
    """

    __slots__ = ()

    def object(self, obj, where):
        """obj itself, translated in place (a full object, a List item or a WatchEvent)."""
        obj_type = type(obj)
        if obj_type is not dict:  # a str fails there; another mapping becomes a translated plain dict
            return _Walker(self.group_map, self.direction, self.root).object(obj, _where_text(where))
        if "apiVersion" not in obj and "object" in obj and "type" in obj:  # WatchEvent {"type", "object"}
            obj["object"] = self.object(obj["object"], (where, ".object"))
            return obj
        kind = obj.get("kind")
        kind = kind if isinstance(kind, str) else ""
        walk_refs = kind != "CustomResourceDefinition"  # CRD schemas are not references
        api_version = obj.get("apiVersion")
        if isinstance(api_version, str):
            translated = self.group_map._api_version_cache[self.direction].get(api_version)  # the method's own memo
            obj["apiVersion"] = translated if translated is not None else \
                self.group_map.translate_api_version(api_version, self.direction)
        items = obj.get("items") if kind.endswith("List") else None
        if isinstance(items, list) and "metadata" in obj:
            keys = list(obj)
            if keys.index("items") < keys.index("metadata"):  # _Walker.object goes by key order: same first error
                self.items(items, where)
                items = None
        metadata = obj.get("metadata")
        if isinstance(metadata, dict):
            self.metadata_in_place(metadata, where)
        if walk_refs:
            value = obj.get("spec")
            value_type = type(value)
            if value_type is dict or value_type is list:
                self.refs(value)
            value = obj.get("status")
            value_type = type(value)
            if value_type is dict or value_type is list:
                self.refs(value)
        if isinstance(items, list):
            self.items(items, where)
        if not walk_refs:
            self.crd(obj)
        else:
            handler = _SHAPE_HANDLERS.get(kind)
            if handler is not None:
                handler(self, obj, _where_text(where))
        return obj

    def items(self, items, where):
        for index, item in enumerate(items):
            items[index] = self.object(item, (where, ".items[%d]", index))

    def metadata_in_place(self, metadata, where):
        # translate_api_version's own memo read here without a call per entry (a memo miss still calls it; no GroupMap
        # subclass overrides it), and refs' api_version/group inlined: a Machine's walk 30,800 -> 28,000 instructions
        # under callgrind, one with five managedFields entries, an owner and a status 95,600 -> 86,800
        group_map = self.group_map
        direction = self.direction
        versions = group_map._api_version_cache[direction]
        for field in ("ownerReferences", "managedFields"):
            entries = metadata.get(field)
            if entries is None:
                continue
            if not isinstance(entries, list):
                self.fail("%s.metadata.%s" % (_where_text(where), field), "must be a list, found %s" % type(entries).__name__)
            for index, entry in enumerate(entries):
                if not isinstance(entry, dict):
                    self.fail("%s.metadata.%s[%d]" % (_where_text(where), field, index),
                              "must be a mapping, found %s" % type(entry).__name__)
                api_version = entry.get("apiVersion")
                if isinstance(api_version, str):
                    translated = versions.get(api_version)
                    entry["apiVersion"] = translated if translated is not None else \
                        group_map.translate_api_version(api_version, direction)
                elif api_version is not None:
                    self.fail("%s.metadata.%s[%d].apiVersion" % (_where_text(where), field, index),
                              "must be a string, found %s" % type(api_version).__name__)

    def refs(self, node):
        """node with every object reference below it translated in place (see _Walker.refs)."""
        if type(node) is list:  # pylint: disable=unidiomatic-typecheck  # exact JSON types: subclasses are not walked
            for child in node:
                child_type = type(child)
                if child_type is dict or child_type is list:
                    self.refs(child)
            return node
        for key, child in node.items():
            child_type = type(child)
            if (child_type is dict or child_type is list) and key not in _FREE_TEXT_MAP_KEYS:
                self.refs(child)
        if "kind" in node:  # _Walker.api_version and .group without their calls
            value = node.get("apiVersion")
            if isinstance(value, str):
                node["apiVersion"] = self.group_map.translate_api_version(value, self.direction)
            value = node.get("apiGroup")
            if isinstance(value, str):
                node["apiGroup"] = self.group_map.translate_group(value, self.direction)
        return node


def _where_text(where):
    """The dotted location of an error: where is a string or (parent, suffix format, *arguments)."""
    if isinstance(where, str):
        return where
    return _where_text(where[0]) + (where[1] % where[2:] if len(where) > 2 else where[1])


def _check_translatable(obj, direction, group_map):
    _check_direction(direction)
    group_map = _group_map(group_map)
    if not hasattr(obj, "items") or isinstance(obj, (str, bytes)):
        raise CapiTranslationError(
            "expected a Kubernetes object (a mapping with apiVersion and kind), got %s %r" % (type(obj).__name__, obj)
        )
    if not isinstance(obj.get("apiVersion"), str) and not ("type" in obj and hasattr(obj.get("object"), "items")):
        raise CapiTranslationError(
            "%s: apiVersion is missing or not a string (found %r); give the full object with apiVersion and kind"
            % (describe_object(obj), obj.get("apiVersion"))
        )
    return group_map


def translate_object(obj, direction, group_map=None):
    """A translated copy of a Kubernetes object (the input is never mutated; the result shares nothing).

    Group positions rewritten:
    * ``apiVersion``; for ``List``/``*List`` kinds every ``items[]`` entry (items may lack apiVersion);
    * ``metadata.ownerReferences[].apiVersion`` and ``metadata.managedFields[].apiVersion`` (any kind);
    * under ``spec`` and ``status``, recursively, every mapping with ``kind`` plus ``apiVersion``
      (v1beta1 ObjectReference, ClusterClass patch selectors) or ``kind`` plus ``apiGroup`` (v1beta2
      ContractVersionedObjectReference); maps named labels/annotations/matchLabels/nodeSelector are skipped;
    * shapes: CustomResourceDefinition (``metadata.name``, ``spec.group``), Status (``details.group``),
      WatchEvent (``{"type", "object"}``), ConversionReview (``request.desiredAPIVersion``,
      ``request.objects``, ``response.convertedObjects``), AdmissionReview (``request`` kind/resource
      groups, ``object``, ``oldObject``; not the base64 ``response.patch``), Table (``rows[].object``),
      Event (``involvedObject``/``regarding``/``related``), Role/ClusterRole (``rules[].apiGroups``),
      APIGroup/APIGroupList/APIResourceList (discovery).
    Never rewritten: label/annotation keys and values (incl. conversion-data, cloned-from-groupkind),
    finalizers, names, messages, CRD schemas and any other string.
    """
    group_map = _check_translatable(obj, direction, group_map)
    return _Walker(group_map, direction, obj).object(obj, "")


def translate_object_in_place(obj, direction, group_map=None):
    """translate_object for a JSON tree the caller owns (e.g. fresh from json.loads): the same result, no copy.

    Mutates only the group positions translate_object rewrites and returns obj. obj must be plain
    JSON data (dict, list, str, int, float, bool, None) with no sub-object shared between two
    positions. On an error obj may be partly translated: discard it. Proven equal to translate_object
    by tests/unit/translate/test_capi_groups_fast.py (examples, fixtures, schema-generated objects).
    """
    plain = type(obj) is dict and type(group_map) is GroupMap  # pylint: disable=unidiomatic-typecheck
    plain = plain and type(obj.get("apiVersion")) is str  # pylint: disable=unidiomatic-typecheck
    if plain and (direction is TO_STANDARD or direction is TO_PRIVATE):
        # what _check_translatable lets through, told by four tests instead of its three calls (the proxy's every
        # answer: a Machine's walk 34,800 -> 31,800 instructions under callgrind); anything else (a subclass, a
        # direction equal to a constant but not it, no group_map) is checked there
        return _InPlaceWalker(group_map, direction, obj).object(obj, "")
    group_map = _check_translatable(obj, direction, group_map)
    return _InPlaceWalker(group_map, direction, obj).object(obj, "")


def list_items_alone(kind):
    """Whether translate_object translates the items of a List of this kind one by one and nothing else of the
    List reads them (no shape of its own): then a batch of its items may be translated apart from the List."""
    return isinstance(kind, str) and kind.endswith("List") and kind not in _SHAPE_HANDLERS


def translate_items_in_place(items, direction, group_map=None):
    """Items of a List (a plain list of JSON trees the caller owns) translated in place, each exactly as
    translate_object_in_place translates it inside its List when list_items_alone(the List's kind); returns items.

    For a List that arrives in pieces (the proxy translates a LIST answer while it streams in). Errors name the
    item by its index in this batch: a caller that needs the List's own wording translates the whole List.
    """
    _check_direction(direction)
    group_map = _group_map(group_map)
    if not isinstance(items, list):
        raise CapiTranslationError("expected the items of a List (a list), got %s" % type(items).__name__)
    _InPlaceWalker(group_map, direction, {"kind": "List", "items": items}).items(items, "")
    return items


def translate(value, direction, group_map=None):
    """Dispatch for the filters: a group, an apiVersion, a URL path, an object or a list of those.

    Strings: a leading '/' means a URL path (query kept), a '/' elsewhere an apiVersion, no '/' a
    bare group name or core version ('v1' stays 'v1'). Mappings go to translate_object; lists are
    translated element by element into a new list.
    """
    _check_direction(direction)
    group_map = _group_map(group_map)
    if isinstance(value, str):
        if value.startswith("/"):
            return translate_path(value, direction, group_map)
        if "://" in value:
            raise CapiTranslationError(
                "%r looks like a full URL; pass only its path (e.g. '/apis/cluster.x-k8s.io/v1beta2/machines')" % value
            )
        if "/" in value:
            return group_map.translate_api_version(value, direction)
        return group_map.translate_group(value, direction)
    if hasattr(value, "items"):
        return translate_object(value, direction, group_map)
    if isinstance(value, (list, tuple)):
        translated = []
        for index, item in enumerate(value):
            if not isinstance(item, str) and not hasattr(item, "items"):
                raise CapiTranslationError(
                    "list item %d must be an object, an apiVersion or a path, got %s %r; "
                    "flatten nested lists first" % (index, type(item).__name__, item)
                )
            translated.append(translate(item, direction, group_map))
        return translated
    raise CapiTranslationError(
        "cannot translate %s %r: expected an apiVersion string, a URL path, a Kubernetes object or a list of objects"
        % (type(value).__name__, value)
    )
