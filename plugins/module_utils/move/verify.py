# Copyright: hypershift.private_capi contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""verify: every copy equals its source after translation (pure; the caller reads the targets)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.hypershift.private_capi.plugins.module_utils.move.plan import compare_copy

FIRST_FAILURES = 10


def verify_copies(pairs):
    """pairs: [(description, desired body, desired status, live target or None)] -> failures, in input order.

    A failure is {"object", "differences": [{"path", "before" (desired), "after" (live), "change"}]}.
    """
    failures = []
    for description, body, status, target in pairs:
        if target is None:
            failures.append({"object": description, "differences": [
                {"path": ".", "before": "a copy", "after": None, "change": "removed"}]})
            continue
        differences = compare_copy(body, status, target)
        if differences:
            failures.append({"object": description, "differences": differences})
    return failures


def failure_message(failures, total):
    """One message naming the first failing objects and their first differing fields."""
    lines = ["verify: %d of %d copies differ from their sources (after translation); first differences:"
             % (len(failures), total)]
    for failure in failures[:FIRST_FAILURES]:
        details = "; ".join("%s: %r -> %r" % (change["path"], change["before"], change["after"])
                            for change in failure["differences"][:3])
        lines.append("  %s: %s" % (failure["object"], details))
    lines.append("Compare the objects (kubectl get -o yaml), fix the source or the copy, and re-run "
                 "(force: true overwrites differing copies).")
    return "\n".join(lines)
