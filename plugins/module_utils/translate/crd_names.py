# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""How the private CRDs are named beside the standard ones: their short-name prefix and categories. Pure; read by
crds/render.py (which renders them) and the proxy (which shows the standard names and categories to clients)."""

DEFAULT_SHORT_NAME_PREFIX = "hcp"
DEFAULT_CATEGORY = "hypershift-capi"
STANDARD_CATEGORY = "cluster-api"
