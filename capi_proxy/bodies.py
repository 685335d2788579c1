"""Request and response bodies: decode, translate group positions with the core, encode. Pure.

Every rewrite goes through translate.groups.translate_object / translate_object_in_place (or
translate_api_version/translate_group for a lone JSON-patch value); this module only finds *where*
a body holds an object. JSON goes through orjson when it is installed (4x faster to parse, 25x to
encode); the stdlib decides every input orjson would read differently, so documents are the same.
"""
import json

import yaml

try:
    import orjson
except ImportError:  # pragma: no cover - the stdlib codec gives the same documents, slower
    orjson = None
# orjson before 3.13 corrupts the heap when dumps() reaches its recursion limit (a document nested ~255 deep
# aborted the process with "realloc(): invalid next size"): such a version is not used at all.
ORJSON_MINIMUM = (3, 13)
if orjson is not None and tuple(int(part) for part in orjson.__version__.split(".")[:2]) < ORJSON_MINIMUM:
    orjson = None  # pragma: no cover - requirements.txt pins a fixed version

from capi_proxy import nesting
from capi_proxy.core import (
    DEFAULT_GROUP_MAP,
    PRIVATE_SUFFIX,
    STANDARD_SUFFIX,
    TO_PRIVATE,
    CapiTranslationError,
    translate_object,
    translate_object_in_place,
)
from capi_proxy.errors import ProxyError

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
YAML_TYPES = frozenset((APPLY_PATCH, "application/yaml", "application/apply-patch+yaml+json"))
JSON_TYPES = frozenset(("application/json", JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH))
_PLACEHOLDER_API_VERSION = "v1"  # untranslatable: lets partial objects (patches) pass the core's apiVersion check

try:
    _YAML_C_LOADER = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    _YAML_C_LOADER = yaml.SafeLoader
# libyaml's composer recurses on the C stack with no limit of its own (a body of 30,000 '[' is a segmentation
# fault): it only reads bodies that cannot nest deeper than this; others go to the pure-Python loader, whose
# recursion Python bounds.
_YAML_C_MAX_NESTING = 1000
# YAML anchors and aliases can make a small body expand to an exponentially large document ("billion laughs").
_YAML_NODES_PER_BYTE = 2
_YAML_NODES_FLOOR = 10000

# orjson reads integers beyond 64 bits as floats (lossy); any such literal has 19 digits in a row.
_DIGITS_AS_ZERO = bytes(ord("0") if ord("0") <= code <= ord("9") else code for code in range(256))
_LONG_NUMBER = b"0" * 19


def _reject_constant(name):
    raise ValueError("%s is not a JSON value (RFC 8259)" % name)


def _finite_float(text):
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number %s is out of range (RFC 8259)" % text[:40])
    return value


class NotExact(ValueError):
    """orjson cannot read or write this as the stdlib would (or it is not JSON): ask loads or dumps."""


class InexactNumber(NotExact):
    """Valid JSON that orjson reads, but not exactly: an integer literal of 19 digits or more."""


def loads_exact(raw):
    """The JSON document in raw by orjson alone, when its reading is the stdlib's; NotExact otherwise (bad JSON, a
    lone surrogate, a BOM, an integer beyond 64 bits, no orjson): the fast reading, never a different one."""
    if orjson is None:
        raise NotExact("orjson is not installed")
    try:
        document = orjson.loads(raw)
    except ValueError as exc:
        raise NotExact(str(exc))
    if _LONG_NUMBER in raw.translate(_DIGITS_AS_ZERO):
        raise InexactNumber("a number of 19 digits or more (orjson would read a float)")
    return document


def loads(raw):
    """The JSON document in raw (bytes); ValueError unless it is RFC 8259 JSON (NaN/Infinity are not)."""
    try:
        return loads_exact(raw)
    except NotExact:
        pass  # lone surrogates, a BOM, other encodings, bad input: the stdlib decides (and words the error)
    return json.loads(raw, parse_constant=_reject_constant, parse_float=_finite_float)


def dumps_exact(document):
    """orjson's encoding of a document loads built; NotExact where dumps must ask the stdlib instead (integers
    beyond 64 bits, lone surrogates, nesting past orjson's limit, no orjson)."""
    if orjson is None:
        raise NotExact("orjson is not installed")
    try:
        return orjson.dumps(document)
    except TypeError as exc:
        raise NotExact(str(exc))


def dumps(document):
    """encode() for a document loads built (finite numbers only: orjson would write NaN as null)."""
    try:
        return dumps_exact(document)
    except NotExact:  # the stdlib writes (or refuses) what orjson cannot
        return encode(document)


def media_type(content_type):
    """'application/json' from 'application/json; charset=utf-8' (lowercase, no parameters)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def markers(group_map, direction):
    """Byte strings one of which every body needing translation in direction contains."""
    if direction == TO_PRIVATE:
        groups = [STANDARD_SUFFIX] + list(group_map.extra_groups)
    else:
        groups = [PRIVATE_SUFFIX] + list(group_map.extra_groups.values())
    return tuple(group.encode() for group in groups)


def contains_any(raw, needles):
    find = raw.find
    for needle in needles:  # a loop, not any() over a generator: this runs on every answer
        # find, not "in": bytes' "in" first tries its needle as an integer, and the TypeError it makes and clears
        # costs more than the search (a GET's test 2,800 -> 1,800 instructions under callgrind)
        if find(needle) != -1:
            return True
    return False


def is_translatable_type(content_type):
    kind = media_type(content_type)
    return kind in JSON_TYPES or kind in YAML_TYPES


def decode(raw, content_type, what):
    """The JSON (or YAML, for apply patches) document in raw; ProxyError 400 names what failed."""
    kind = media_type(content_type)
    try:
        if kind not in YAML_TYPES:
            return loads(raw)
        if raw.lstrip()[:1] in (b"{", b"["):
            try:  # kubectl sends its apply patches as JSON text: read as JSON (to any depth, see nesting)
                return loads(raw)
            except ValueError:
                pass  # YAML flow style
        return _yaml_document(raw, what)
    except nesting.DocumentTooDeep:
        raise
    except (ValueError, yaml.YAMLError) as exc:
        raise ProxyError(400, "%s is not valid %s (%s); send a well-formed body"
                              % (what, "YAML" if kind in YAML_TYPES else "JSON", str(exc)[:300]))


def _yaml_document(raw, what):
    shallow = raw.count(b"[") + raw.count(b"{") + raw.count(b"\n") <= _YAML_C_MAX_NESTING
    try:
        document = yaml.load(raw, Loader=_YAML_C_LOADER if shallow else yaml.SafeLoader)  # nosec B506 - safe loaders
    except RecursionError:  # never retried on nesting's deep thread: the pure-Python loader takes minutes at depth
        raise nesting.DocumentTooDeep(nesting.MAX_DEPTH, "YAML bodies are read only to a few hundred levels; "
                                                         "send it as JSON")
    limit = max(_YAML_NODES_FLOOR, _YAML_NODES_PER_BYTE * len(raw))
    if expanded_nodes(document, limit) > limit:
        raise ProxyError(413, "%s expands through YAML anchors and aliases to more than %d values; send it "
                              "without aliases" % (what, limit))
    return document


def expanded_nodes(document, limit):
    """How many values document holds with every shared (aliased) part counted each time it appears; counting
    stops soon after limit. Shared parts are measured once, so this takes time linear in the distinct parts."""
    measured = {}

    def count(node):
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            return 1
        known = measured.get(id(node))
        if known is None:
            known = 1
            for child in children:
                known += count(child)
                if known > limit:
                    break
            measured[id(node)] = known
        return known
    return count(document)


def encode(document):
    """Compact UTF-8 JSON bytes of any document (also YAML-decoded ones, which may hold .nan)."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


def _translate_partial(document, direction, group_map):
    """translate_object for objects that may lack apiVersion (patch bodies, JSON-patch shells)."""
    if "apiVersion" in document or ("type" in document and isinstance(document.get("object"), dict)):
        return translate_object(document, direction, group_map)
    shell = dict(document)
    shell["apiVersion"] = _PLACEHOLDER_API_VERSION
    translated = translate_object(shell, direction, group_map)
    del translated["apiVersion"]
    return translated


def _unescape_pointer(segment):
    return segment.replace("~1", "/").replace("~0", "~")


def _translate_patch_value(pointer, value, direction, group_map):
    """A JSON-patch value translated as if it sat at pointer inside an object."""
    segments = [_unescape_pointer(segment) for segment in pointer.split("/")[1:]] if pointer else []
    if isinstance(value, str) and segments:
        if segments[-1] == "apiVersion":
            return group_map.translate_api_version(value, direction)
        if segments[-1] == "apiGroup":
            return group_map.translate_group(value, direction)
    if not segments:
        return _translate_partial(value, direction, group_map) if isinstance(value, dict) else value
    shell = value
    for segment in reversed(segments):
        shell = [shell] if (segment == "-" or segment.isdigit()) else {segment: shell}
    if not isinstance(shell, dict):
        return value  # a top-level array cannot be an object
    node = _translate_partial(shell, direction, group_map)
    for segment in segments:
        node = node[0] if isinstance(node, list) else node[segment]
    return node


def translate_json_patch(operations, direction, group_map=None):
    """RFC 6902 operations with every value translated at its path (paths themselves never hold groups)."""
    group_map = group_map or DEFAULT_GROUP_MAP
    if not isinstance(operations, list):
        raise ProxyError(400, "a JSON patch must be a JSON array of operations, found %s" % type(operations).__name__)
    translated = []
    for index, operation in enumerate(operations):
        if not isinstance(operation, dict):
            raise ProxyError(400, "JSON patch operation %d must be an object, found %s" % (index, type(operation).__name__))
        operation = dict(operation)
        if "value" in operation and isinstance(operation.get("path"), str):
            operation["value"] = _translate_patch_value(operation["path"], operation["value"], direction, group_map)
        translated.append(operation)
    return translated


def translate_document(document, content_type, direction, group_map=None):
    """A translated copy of a decoded body: an object, a partial object (patch) or a JSON patch."""
    group_map = group_map or DEFAULT_GROUP_MAP
    try:
        if media_type(content_type) == JSON_PATCH:
            return translate_json_patch(document, direction, group_map)
        if isinstance(document, dict):
            return _translate_partial(document, direction, group_map)
    except CapiTranslationError as exc:
        raise ProxyError(400, "cannot translate the body: %s" % exc)
    return document


def translated_response(raw, direction, group_map=None):
    """dumps(translate_response(loads(raw), direction, group_map, in_place=True)) by orjson alone, without loads'
    long-digit scan; None where that path must decide (it raises or answers as before).

    loads scans every answer for a run of 19 digits before it trusts orjson's reading (12,800 of a Machine's 47,000
    parse instructions under callgrind). The one value orjson reads otherwise than the stdlib (see loads_exact), an
    integer beyond 64 bits, becomes a float of at least 2**63 in magnitude (a literal beyond the double range is
    refused: infinity), and orjson writes every such float in exponent form, "e+18" to "e+308": an encoding without
    "e+" held no such value, so the document was the stdlib's and so are these bytes, whatever the digits. The check
    runs on the encoding, after the work: a string with "e+" in it, a large float of its own or any error (bad JSON,
    a document the core refuses, one orjson cannot write) only sends the answer down the full path, which words the
    error from the exact document. A Machine's GET answer: 118,000 -> 107,800 instructions."""
    if orjson is None:
        return None
    try:
        document = orjson.loads(raw)
    except ValueError:  # also orjson's own depth limit: the full path reads (or refuses) it
        return None
    try:
        encoded = orjson.dumps(translate_response(document, direction, group_map, in_place=True))
    except (CapiTranslationError, TypeError):  # worded from the exact document, or written by the stdlib
        return None
    # find, not "in": bytes' "in" first asks whether its needle is an integer, and that TypeError costs more than the
    # search; a "+" is rare in an object, and a one-byte search (memchr) is half the two-byte one
    if encoded.find(b"+") != -1 and encoded.find(b"e+") != -1:
        return None
    return encoded


def translate_response(document, direction, group_map=None, in_place=False):
    """Response documents: objects, lists, Status, Table, WatchEvent; anything else is returned as is.

    in_place: document is the caller's own parsed tree (translate_object_in_place, no copy).
    """
    if isinstance(document, dict) and (isinstance(document.get("apiVersion"), str) or
                                       ("type" in document and isinstance(document.get("object"), dict))):
        translate = translate_object_in_place if in_place else translate_object
        return translate(document, direction, group_map or DEFAULT_GROUP_MAP)
    return document
