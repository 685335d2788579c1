# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Kubernetes names and namespaces checked in the argument checks, before any API call.

Every module names the options that hold an object name or a namespace in ``NAME_OPTIONS``-style rules and calls
``check_names(module, rules)`` right after building its AnsibleModule. Values go into REST paths, so an empty
namespace would widen a request to every namespace and ``../../api/v1/secrets`` would address another resource;
both are refused here with the option, the value, the rule and an example.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(r"\A%s\Z" % _LABEL)
DNS1123_SUBDOMAIN = re.compile(r"\A%s(\.%s)*\Z" % (_LABEL, _LABEL))
DNS1035_LABEL = re.compile(r"\A[a-z]([-a-z0-9]*[a-z0-9])?\Z")


class NameRule(object):
    """What a value must look like: a pattern, a maximum length, the rule in words and an example."""

    def __init__(self, what, pattern, max_length, rule, example, empty_means=None):
        self.what = what
        self.pattern = pattern
        self.max_length = max_length
        self.rule = rule
        self.example = example
        self.empty_means = empty_means  # None: an empty value is refused

    def or_empty(self, meaning):
        """The same rule, but an empty value is allowed (the option documents what it means)."""
        return NameRule(self.what, self.pattern, self.max_length, self.rule, self.example, empty_means=meaning)

    def problem(self, value):
        """Why value breaks the rule, or None when it is fine."""
        if not isinstance(value, str):
            return "is not a string (it is a %s value)" % type(value).__name__
        if value == "":
            return None if self.empty_means is not None else "is empty"
        if len(value) > self.max_length:
            return "is %d characters long (at most %d)" % (len(value), self.max_length)
        if not self.pattern.match(value):
            if value[:1] in "[{":
                return "is not a valid %s (it looks like a list or a mapping turned into text; give one %s as a string)" \
                    % (self.what, self.what)
            return "is not a valid %s" % self.what
        return None


NAMESPACE = NameRule(
    "namespace", DNS1123_LABEL, 63,
    "a DNS-1123 label - at most 63 characters of lowercase letters, digits and '-', starting and ending with a "
    "letter or digit", "clusters-prod-01")
# object names and API groups follow the same rule
DNS1123_SUBDOMAIN_RULE = ("a DNS-1123 subdomain - at most 253 characters of lowercase letters, digits, '-' and '.', "
                          "each '.'-separated part starting and ending with a letter or digit")
OBJECT_NAME = NameRule("object name", DNS1123_SUBDOMAIN, 253, DNS1123_SUBDOMAIN_RULE, "prod-01")
API_GROUP = NameRule("API group", DNS1123_SUBDOMAIN, 253, DNS1123_SUBDOMAIN_RULE, "cluster.x-k8s.io")
SERVICE_NAME = NameRule(
    "Service name", DNS1035_LABEL, 63,
    "a DNS-1035 label - at most 63 characters of lowercase letters, digits and '-', starting with a letter and "
    "ending with a letter or digit", "capi-conversion-webhook-shim")


def _values_at(params, path):
    """(option path as written in messages, value) for every value at path ('lists[].namespace', 'deployments[]')."""
    found = [("", params)]
    for part in path.split("."):
        is_list = part.endswith("[]")
        key = part[:-2] if is_list else part
        step = []
        for where, node in found:
            if not isinstance(node, dict) or node.get(key) is None:
                continue
            label = "%s.%s" % (where, key) if where else key
            value = node[key]
            if is_list:
                if isinstance(value, (list, tuple)):
                    step.extend(("%s[%d]" % (label, index), item) for index, item in enumerate(value))
            else:
                step.append((label, value))
        found = step
    return found


def name_problems(params, rules):
    """One message per value breaking its rule; rules: [(option path, NameRule)], in the order to report."""
    problems = []
    for path, rule in rules:
        for option, value in _values_at(params, path):
            problem = rule.problem(value)
            if problem is None:
                continue
            problems.append("option %s: %r %s; it must be %s, such as %r" % (option, value, problem, rule.rule, rule.example))
    return problems


def check_names(module, rules):
    """fail_json (no API call made yet) when an option of rules holds an invalid name or namespace."""
    problems = name_problems(module.params, rules)
    if problems:
        module.fail_json(msg="invalid %s: %s" % ("names" if len(problems) > 1 else "name", " | ".join(problems)),
                         changed=False)
