# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The root of the errors both the translation core (translate/) and the client layer (k8s/) raise.

A leaf: it imports nothing, so that translate/ stays pure (the proxy imports it on its own, without kubernetes.core)
and k8s/ can name these errors without importing translate/; free of kubernetes.core too, so that the filters that
reach these errors load where only ansible-core is installed (Galaxy's importer reads the collection so). k8s/errors.py
names the module runner's USER_ERRORS on top of them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class CapiTranslationError(ValueError):
    """Input that cannot be translated; the message names the input and what to do."""


class PrivateCapiError(Exception):
    """An error in the input or in the cluster's state that the user fixes; the message says how."""

    def result(self):
        """Fields returned beside msg when the run fails (none by default)."""
        return {}
