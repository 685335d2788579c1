# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""How the private CRDs are named beside the standard ones: their short-name prefix and categories, and the labels
they do not carry. Pure; read by crds/render.py (which renders them) and the proxy (which shows the standard names,
categories and labels to clients)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.hypershift.private_capi.plugins.module_utils.contract import SOURCE_LABELS_ANNOTATION

DEFAULT_SHORT_NAME_PREFIX = "hcp"
DEFAULT_CATEGORY = "hypershift-capi"
STANDARD_CATEGORY = "cluster-api"

# Labels of a source CRD that its twin does not carry on the server: clusterctl's (``clusterctl.cluster.x-k8s.io``
# marks the types `clusterctl move` and `delete` act on) and CAPI's provider label. The platform's own clusterctl,
# straight at the server, must never find HyperShift's objects. The twin keeps them in SOURCE_LABELS_ANNOTATION,
# and the proxy shows them again on the standard view, so that clusterctl through the proxy works as before.
DROPPED_LABEL_PREFIXES = ("clusterctl.cluster.x-k8s.io", "cluster.x-k8s.io/provider")


def dropped_labels(labels):
    """The labels of a source CRD its twin does not carry (see DROPPED_LABEL_PREFIXES)."""
    return {key: value for key, value in (labels or {}).items()
            if any(key.startswith(prefix) for prefix in DROPPED_LABEL_PREFIXES)}


def standard_view_labels(metadata):
    """A twin's labels as the standard CRD had them: its own plus those kept in SOURCE_LABELS_ANNOTATION (None when
    the twin keeps none)."""
    kept = ((metadata or {}).get("annotations") or {}).get(SOURCE_LABELS_ANNOTATION)
    if not isinstance(kept, str):
        return None
    try:
        restored = json.loads(kept)
    except ValueError:
        return None
    if not isinstance(restored, dict):
        return None
    labels = dict((metadata or {}).get("labels") or {})
    labels.update({key: value for key, value in restored.items() if isinstance(value, str)})
    return labels
