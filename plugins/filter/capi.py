# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Filters to_private_capi, to_standard_capi and convert_capi (docs: the YAML files beside this one)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.hypershift.private_capi.plugins.module_utils.messages import describe_object
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (
    DEFAULT_GROUP_MAP,
    TO_PRIVATE,
    TO_STANDARD,
    CapiTranslationError,
    GroupMap,
    translate,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.filters.args import checked_arguments

CAPI_VERSIONS = ("v1beta1", "v1beta2")


def _group_map(filter_name, extra_groups):
    if not extra_groups:
        return DEFAULT_GROUP_MAP
    try:
        return GroupMap(extra_groups)
    except CapiTranslationError as error:
        raise AnsibleFilterError("%s: invalid extra_groups: %s" % (filter_name, error))


def _translate(filter_name, value, direction, extra_groups):
    group_map = _group_map(filter_name, extra_groups)
    try:
        return translate(value, direction, group_map)
    except CapiTranslationError as error:
        raise AnsibleFilterError("%s: %s" % (filter_name, error))


@checked_arguments("to_private_capi", "{{ obj | hypershift.private_capi.to_private_capi }}, or with "
                   "extra_groups={'<standard group>': '<private group>'}", AnsibleFilterError)
def to_private_capi(value, extra_groups=None):
    """Standard CAPI groups -> private groups in an apiVersion, URL path, object or list of objects."""
    return _translate("to_private_capi", value, TO_PRIVATE, extra_groups)


@checked_arguments("to_standard_capi", "{{ obj | hypershift.private_capi.to_standard_capi }}, or with "
                   "extra_groups={'<standard group>': '<private group>'}", AnsibleFilterError)
def to_standard_capi(value, extra_groups=None):
    """Private CAPI groups -> standard groups in an apiVersion, URL path, object or list of objects."""
    return _translate("to_standard_capi", value, TO_STANDARD, extra_groups)


def _load_convert_object():
    # Imported lazily: the version-conversion core is a separate module_util that the group filters do not need.
    try:
        from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions import convert_object
    except ImportError as error:
        raise AnsibleFilterError(
            "convert_capi: cannot import plugins/module_utils/translate/versions.py (%s); reinstall the "
            "hypershift.private_capi collection" % error
        )
    return convert_object


def _check_convertible(obj, where):
    if not hasattr(obj, "items") or isinstance(obj, (str, bytes)):
        raise AnsibleFilterError(
            "convert_capi: %sexpected a CAPI object (a mapping with apiVersion and kind), got %s %r"
            % (where, type(obj).__name__, obj)
        )
    api_version = obj.get("apiVersion")
    if not isinstance(api_version, str) or not api_version:
        raise AnsibleFilterError(
            "convert_capi: %s%s has no apiVersion (found %r); give the full object with apiVersion and kind"
            % (where, describe_object(dict(obj)), api_version)
        )


def _convert_one(convert_object, obj, version, ref_versions, crds, where):
    try:
        return convert_object(obj, version, ref_versions=ref_versions, crds=crds)
    except CapiTranslationError as error:  # the core's errors already name the object
        raise AnsibleFilterError("convert_capi: %s%s" % (where, error))
    except ValueError as error:
        raise AnsibleFilterError("convert_capi: %s%s: %s" % (where, describe_object(dict(obj)), error))


CONVERT_USAGE = "{{ obj | hypershift.private_capi.convert_capi('v1beta2') }} (or 'v1beta1', with ref_versions or crds)"


@checked_arguments("convert_capi", CONVERT_USAGE, AnsibleFilterError)
def convert_capi(value, version, ref_versions=None, crds=None):
    """CAPI core objects between v1beta1 and v1beta2 (one object or a list of objects)."""
    if version not in CAPI_VERSIONS:
        raise AnsibleFilterError(
            "convert_capi: target version must be one of %s, got %r; usage: %s"
            % (", ".join(CAPI_VERSIONS), version, CONVERT_USAGE)
        )
    if isinstance(value, (list, tuple)):
        objects = [(item, "list item %d: " % index) for index, item in enumerate(value)]
    elif hasattr(value, "items") and not isinstance(value, (str, bytes)):
        objects = [(value, "")]
    else:
        raise AnsibleFilterError(
            "convert_capi: expected a CAPI object or a list of objects, got %s %r" % (type(value).__name__, value)
        )
    if ref_versions is not None and not hasattr(ref_versions, "items"):
        raise AnsibleFilterError(
            "convert_capi: ref_versions must be a mapping, got %s %r" % (type(ref_versions).__name__, ref_versions)
        )
    if crds is not None and not isinstance(crds, (list, tuple)):
        raise AnsibleFilterError(
            "convert_capi: crds must be a list of CustomResourceDefinition objects, got %s" % type(crds).__name__
        )
    # Check every object before converting any, so the first error names the bad item, not a half-done list.
    for obj, where in objects:
        _check_convertible(obj, where)
    convert_object = _load_convert_object()
    converted = [_convert_one(convert_object, obj, version, ref_versions, crds, where) for obj, where in objects]
    return converted if isinstance(value, (list, tuple)) else converted[0]


class FilterModule(object):
    def filters(self):
        return {
            "to_private_capi": to_private_capi,
            "to_standard_capi": to_standard_capi,
            "convert_capi": convert_capi,
        }
