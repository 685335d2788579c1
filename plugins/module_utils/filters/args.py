# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Argument checks shared by the collection's filters (plugins/filter/*.py).

A filter called with a missing, extra or unknown argument would otherwise show Python's own message
("convert_capi() missing 1 required positional argument: 'version'"); ``checked_arguments`` turns that into one
naming the filter, its arguments and a usage example. The error class is passed in because module_utils cannot
import ansible.errors (the filters pass AnsibleFilterError).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import inspect


def _arguments_after_value(signature):
    """'version, ref_versions=None, crds=None': the arguments a filter takes after the piped value."""
    shown = []
    for parameter in list(signature.parameters.values())[1:]:
        if parameter.default is inspect.Parameter.empty:
            shown.append(parameter.name)
        else:
            shown.append("%s=%r" % (parameter.name, parameter.default))
    return ", ".join(shown) or "none"


def checked_arguments(filter_name, usage, error_class):
    """Decorator: calls whose arguments do not fit the filter raise error_class naming the filter, with usage."""
    def decorate(function):
        signature = inspect.signature(function)

        @functools.wraps(function)
        def checked(*args, **kwargs):
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise error_class("%s: %s; it takes the piped value and then: %s; usage: %s"
                                  % (filter_name, exc, _arguments_after_value(signature), usage))
            return function(*args, **kwargs)

        return checked

    return decorate


def type_problem(filter_name, argument, value, expected_types, expected):
    """A message when value is not one of expected_types (bool is never taken for int), else None."""
    if isinstance(value, expected_types) and not (isinstance(value, bool) and bool not in _as_tuple(expected_types)):
        return None
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return "%s: %s must be %s, got %s %s" % (filter_name, argument, expected, type(value).__name__, shown)


def _as_tuple(types):
    return types if isinstance(types, tuple) else (types,)
