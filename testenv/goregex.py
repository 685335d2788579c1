"""Go RE2 patterns (CRD `pattern`) as Python `re` patterns.

CRD schemas are validated by kube-apiserver with Go's RE2, whose Unicode classes (``\\p{L}``, ``\\p{S}``,
``\\p{N}`` ...) Python's ``re`` does not know. HyperShift's CRDs use them (e.g. componentRoutes hostnames),
so the test data generators (tests/unit/strategies.py) translate them here.
"""
import re

# Python `re` has no Unicode property classes: Latin-range approximations, good for the values tests use.
_UNICODE_CLASSES = {
    "L": "a-zA-Z\u00c0-\u024f",
    "Lu": "A-Z\u00c0-\u00de",
    "Ll": "a-z\u00df-\u00ff",
    "N": "0-9",
    "Nd": "0-9",
    "S": "$+<=>^`|~",
    "P": "!-#%-*,-/:;?@\\[-\\]_{}",
}
_CLASS_RE = re.compile(r"\\p\{([A-Za-z]+)\}|\\p([LNSP])")


def _class_body(name):
    try:
        return _UNICODE_CLASSES[name]
    except KeyError:
        raise ValueError("unsupported Unicode class \\p{%s} in CRD pattern" % name) from None


def to_python_regex(pattern):
    """Return ``pattern`` with RE2 Unicode classes replaced (inside or outside brackets); others unchanged."""
    if "\\p" not in pattern:
        return pattern
    out = []
    index = 0
    in_class = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            match = _CLASS_RE.match(pattern, index)
            if match:
                body = _class_body(match.group(1) or match.group(2))
                out.append(body if in_class else "[%s]" % body)
                index = match.end()
                continue
            out.append(pattern[index:index + 2])
            index += 2
            continue
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        out.append(char)
        index += 1
    return "".join(out)
