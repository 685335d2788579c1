# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The one root of every error a module runner turns into fail_json (see runner.py).

PrivateCapiError (defined in the leaf errors.py) is the one type that crosses layers, as CoreException does in
kubernetes.core's own client/service/runner split, but free of kubernetes.core: the filters reach it, and Galaxy's
importer loads them with ansible-core alone. Its message is written for the user (the object, what was expected, what
was found, what to do), so it is reported as it is, without a traceback; result() adds fields beside msg (ApiError:
the HTTP status, reason and the API's own message).

The translation core's errors (CapiTranslationError and its ConversionError) have the same leaf root, because the
proxy imports translate/ on its own; USER_ERRORS names both, once, for the runner.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.errors import (  # noqa: F401 pylint: disable=unused-import
    CapiTranslationError,
    PrivateCapiError,
)


class OptionError(PrivateCapiError):
    """Module options that cannot be used together or as given (checked before any API call)."""


# What run_module reports as a user error (msg, no traceback); anything else is a bug and keeps its traceback.
USER_ERRORS = (PrivateCapiError, CapiTranslationError)


def error_result(error):
    """The fields an error adds to the failed result ({} for errors without result())."""
    result = getattr(error, "result", None)
    return dict(result()) if callable(result) else {}


def fail_from_error(module, error, **result):
    """fail_json with the error's message and its result() fields (API errors: status, reason, api_message).

    Call it outside any except block, so that the result carries no traceback for a user error.
    """
    failed = error_result(error)
    failed.update(result)
    module.fail_json(msg=str(error), **failed)
