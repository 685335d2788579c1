"""RE2 Unicode classes in CRD patterns (HyperShift's componentRoutes hostname) as Python patterns, for the test data
generators (tests/unit/strategies.py)."""
import re

import pytest

from testenv.goregex import to_python_regex


@pytest.mark.parametrize("pattern, value, matches", [
    (r"^[a-z\p{L}]+$", "caf\u00e9", True),
    (r"^[a-z\p{L}]+$", "cafe1", False),
    (r"^\p{L}\pN$", "a1", True),
    (r"^[\p{S}]$", "+", True),
    (r"^[a-z]+$", "abc", True),
])
def test_unicode_classes_inside_and_outside_brackets(pattern, value, matches):
    assert bool(re.search(to_python_regex(pattern), value)) is matches


def test_unknown_class_is_a_clear_error():
    with pytest.raises(ValueError, match=r"\\p\{Greek\}"):
        to_python_regex(r"^\p{Greek}$")
