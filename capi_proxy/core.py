"""The collection's translation core (and its JSON merge patch), imported once under short names (no logic of its
own here)."""
# pylint: disable=unused-import
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.groups import (  # noqa: F401
    DEFAULT_GROUP_MAP,
    PRIVATE_SUFFIX,
    STANDARD_SUFFIX,
    TO_PRIVATE,
    TO_STANDARD,
    CapiTranslationError,
    GroupMap,
    list_items_alone,
    translate_api_version,
    translate_crd_name,
    translate_items_in_place,
    translate_object,
    translate_object_in_place,
    translate_path,
    translate_text,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.versions import (  # noqa: F401
    CONTRACT_LABELS,
    CONVERTIBLE_KINDS,
    SUPPORTED_VERSIONS,
    ConversionError,
    convert_object,
    converts_group,
)
from ansible_collections.hypershift.private_capi.plugins.module_utils.merge_patch import merge_patch  # noqa: F401
from ansible_collections.hypershift.private_capi.plugins.module_utils.translate.crd_names import (  # noqa: F401
    DEFAULT_CATEGORY,
    DEFAULT_SHORT_NAME_PREFIX,
    DROPPED_LABEL_PREFIXES,
    STANDARD_CATEGORY,
    standard_view_labels,
)

CORE_STANDARD_GROUP = STANDARD_SUFFIX
