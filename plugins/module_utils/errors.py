# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The root of the errors both the translation core (translate/) and the client layer (k8s/) raise.

A leaf: it imports nothing, so that translate/ stays pure (the proxy imports it on its own, without kubernetes.core)
and k8s/ can name these errors without importing translate/. k8s/errors.py builds the module runner's error root
(PrivateCapiError, a kubernetes.core CoreException) and its USER_ERRORS on top of it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class CapiTranslationError(ValueError):
    """Input that cannot be translated; the message names the input and what to do."""
