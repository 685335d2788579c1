# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Kubernetes label selectors (``key=value``, ``key!=value``, ``key in (a,b)``, ``key notin (a,b)``, ``key``,
``!key``), judged on a label mapping as the API server judges them. Pure; read by the proxy (the CRD labels a twin
keeps aside) and the fleet selection (a HostedCluster's labels)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_REQUIREMENT = re.compile(r"^\s*(?:(?P<not>!)\s*(?P<nkey>[^\s=!,()]+)|(?P<key>[^\s=!,()]+)\s*(?:(?P<op>==|=|!=)\s*"
                          r"(?P<value>[^\s,()]*)|\s+(?P<setop>in|notin)\s*\((?P<values>[^()]*)\))?)\s*$")


def requirements(selector):
    """The requirements of a label selector (key, operator, values); commas inside parentheses stay in their set."""
    parts, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    parsed = []
    for part in parts:
        if not part.strip():
            continue
        found = _REQUIREMENT.match(part)
        if found is None:
            return None  # not understood: the caller says what to do (the proxy leaves it to the server)
        if found.group("not"):
            parsed.append((found.group("nkey"), "!", ()))
        elif found.group("setop"):
            parsed.append((found.group("key"), found.group("setop"),
                           tuple(value.strip() for value in found.group("values").split(","))))
        elif found.group("op"):
            parsed.append((found.group("key"), "!=" if found.group("op") == "!=" else "=", (found.group("value"),)))
        else:
            parsed.append((found.group("key"), "exists", ()))
    return parsed


def matches(labels, parsed):
    """Whether the labels meet every requirement (as requirements() returns them)."""
    labels = labels or {}
    for key, operator, values in parsed:
        present = key in labels
        if (operator == "exists" and not present) or (operator == "!" and present) \
                or (operator == "=" and labels.get(key) != values[0]) \
                or (operator == "!=" and present and labels[key] == values[0]) \
                or (operator == "in" and labels.get(key) not in values) \
                or (operator == "notin" and present and labels[key] in values):
            return False
    return True
