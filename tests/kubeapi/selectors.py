"""Label and field selectors parsed and matched like k8s.io/apimachinery (labels.Parse, fields.ParseSelector).

Error texts follow kube-apiserver 1.33 word for word (labels/selector.go, fields/selector.go,
util/validation), so a bad `?labelSelector=` or `?fieldSelector=` gets the same 400 body as from a real
server. Field selectors are per resource: `field_selector_spec()` knows which fields each built-in kind
accepts (the registered field-label conversion funcs) and how each field's value is read from an object.
"""
import re
from dataclasses import dataclass

from tests.kubeapi.errors import bad_request

# ---------------------------------------------------------------------------------------------------
# Syntax validation shared with metadata.labels (util/validation/validation.go, 1.33 wording)

_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_RE = re.compile("^" + _QUALIFIED_NAME_FMT + "$")
_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', "
                       "and must start and end with an alphanumeric character")
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_RE = re.compile("^" + _LABEL_VALUE_FMT + "$")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
                    "or '.', and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN_RE = re.compile("^" + _DNS1123_SUBDOMAIN_FMT + "$")
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                          "'-' or '.', and must start and end with an alphanumeric character")


def regex_error(message, fmt, *examples):
    """validation.RegexError: the message, examples and the regex, in the real (odd) punctuation."""
    if not examples:
        return message + " (regex used for validation is '" + fmt + "')"
    text = message + " (e.g. "
    for index, example in enumerate(examples):
        if index:
            text += " or "
        text += "'" + example + "', "
    return text + "regex used for validation is '" + fmt + "')"


def max_len_error(length):
    return "must be no more than %d characters" % length


def dns1123_subdomain_errors(value):
    errors = []
    if len(value) > 253:
        errors.append(max_len_error(253))
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errors.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def label_key_errors(key):
    """validation.IsQualifiedName: [] when `key` is a valid label key, else the real error strings."""
    errors = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + message for message in dns1123_subdomain_errors(prefix))
    else:
        return ["a qualified name " + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                  "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part " + max_len_error(63))
    if not _QUALIFIED_NAME_RE.match(name):
        errors.append("name part " + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                 "123-abc"))
    return errors


def label_value_errors(value):
    """validation.IsValidLabelValue: [] when valid, else the real error strings."""
    errors = []
    if len(value) > 63:
        errors.append(max_len_error(63))
    if not _LABEL_VALUE_RE.match(value):
        errors.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def go_quote(text):
    """Go's %q for the strings we quote (printable text stays as is, quotes and controls escaped)."""
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append("\\x%02x" % ord(char))
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _field_invalid(path, value, detail):
    return "%s: Invalid value: %s: %s" % (path, go_quote(value), detail)


def _aggregate(messages):
    """utilerrors.NewAggregate(...).Error(): one message as is, several de-duplicated in brackets."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# ---------------------------------------------------------------------------------------------------
# Label selectors

IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS = "in", "notin", "=", "==", "!="
EXISTS, DOES_NOT_EXIST, GREATER_THAN, LESS_THAN = "exists", "!", "gt", "lt"
_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"

# lexer tokens
_END, _CLOSE, _COMMA, _NOT, _DEQ, _EQ, _GT, _ID, _IN, _LT, _NEQ, _NOTIN, _OPEN, _ERROR = range(14)
_TOKENS = {")": _CLOSE, ",": _COMMA, "!": _NOT, "==": _DEQ, "=": _EQ, ">": _GT, "in": _IN, "<": _LT,
           "!=": _NEQ, "notin": _NOTIN, "(": _OPEN}
_SPECIAL = set("=!(),><")
_WHITESPACE = set(" \t\r\n")


def _lex(text):
    """The label-selector lexer: identifiers, keywords and greedy operator symbols."""
    items, position, length = [], 0, len(text)
    while True:
        while position < length and text[position] in _WHITESPACE:
            position += 1
        if position >= length:
            items.append((_END, ""))
            return items
        if text[position] in _SPECIAL:
            buffer, last = "", None
            while position < length and text[position] in _SPECIAL:
                candidate = buffer + text[position]
                if candidate in _TOKENS:
                    buffer, last = candidate, (_TOKENS[candidate], candidate)
                    position += 1
                elif last is not None:
                    break
                else:
                    buffer = candidate
                    position += 1
            items.append(last or (_ERROR, "error expected: keyword found '%s'" % buffer))
        else:
            start = position
            while position < length and text[position] not in _SPECIAL and text[position] not in _WHITESPACE:
                position += 1
            word = text[start:position]
            items.append((_TOKENS.get(word, _ID), word))


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str          # one of IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, EXISTS, DOES_NOT_EXIST, GT, LT
    values: tuple = ()

    def matches(self, labels):
        if self.operator in (IN, EQUALS, DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if self.operator in (NOT_IN, NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == EXISTS:
            return self.key in labels
        if self.operator == DOES_NOT_EXIST:
            return self.key not in labels
        if self.key not in labels or len(self.values) != 1:
            return False
        try:
            have, want = int(labels[self.key], 10), int(self.values[0], 10)
        except ValueError:
            return False
        return have > want if self.operator == GREATER_THAN else have < want

    def __str__(self):
        if self.operator == DOES_NOT_EXIST:
            return "!" + self.key
        if self.operator == EXISTS:
            return self.key
        symbol = {GREATER_THAN: ">", LESS_THAN: "<", IN: " in ", NOT_IN: " notin "}.get(self.operator, self.operator)
        values = ",".join(sorted(self.values))
        if self.operator in (IN, NOT_IN):
            values = "(" + values + ")"
        return self.key + symbol + values


def _new_requirement(key, operator, values):
    """NewRequirement's validation (keys are validated by the parser first, as labels.Parse does)."""
    messages = []
    if operator in (GREATER_THAN, LESS_THAN):
        for index, value in enumerate(values):
            if not re.match(r"^[+-]?[0-9]+$", value) or not -2 ** 63 <= int(value) < 2 ** 63:
                messages.append(_field_invalid("values[%d]" % index, value,
                                               "for 'Gt', 'Lt' operators, the value must be an integer"))
    for index, value in enumerate(values):
        errors = label_value_errors(value)
        if errors:
            messages.append(_field_invalid("values[%d][%s]" % (index, key), value, "; ".join(errors)))
    if messages:
        raise _SelectorSyntaxError(_aggregate(messages))
    return Requirement(key, operator, tuple(values))


class _SelectorSyntaxError(Exception):
    pass


class _LabelParser:
    def __init__(self, text):
        self.items = _lex(text)
        self.position = 0

    def lookahead(self, values_context=True):
        token, literal = self.items[self.position]
        return (_ID if values_context and token in (_IN, _NOTIN) else token), literal

    def consume(self, values_context=True):
        item = self.lookahead(values_context)
        self.position += 1
        return item

    def parse(self):
        requirements = []
        while True:
            token, literal = self.lookahead()
            if token in (_ID, _NOT):
                try:
                    requirements.append(self.requirement())
                except _SelectorSyntaxError as error:
                    raise _SelectorSyntaxError("unable to parse requirement: %s" % error)
                token, literal = self.consume()
                if token == _END:
                    return requirements
                if token == _COMMA:
                    next_token, next_literal = self.lookahead()
                    if next_token not in (_ID, _NOT):
                        raise _SelectorSyntaxError("found '%s', expected: identifier after ','" % next_literal)
                else:
                    raise _SelectorSyntaxError("found '%s', expected: ',' or 'end of string'" % literal)
            elif token == _END:
                return requirements
            else:
                raise _SelectorSyntaxError("found '%s', expected: !, identifier, or 'end of string'" % literal)

    def requirement(self):
        operator = None
        token, key = self.consume()
        if token == _NOT:
            operator = DOES_NOT_EXIST
            token, key = self.consume()
        if token != _ID:
            raise _SelectorSyntaxError("found '%s', expected: identifier" % key)
        errors = label_key_errors(key)
        if errors:
            raise _SelectorSyntaxError(_field_invalid("<nil>", key, "; ".join(errors)))
        if self.lookahead()[0] in (_END, _COMMA) and operator is None:
            operator = EXISTS
        if operator in (EXISTS, DOES_NOT_EXIST):
            return Requirement(key, operator, ())
        operator = self.operator()
        values = self.set_values() if operator in (IN, NOT_IN) else self.exact_value()
        return _new_requirement(key, operator, sorted(values))

    def operator(self):
        token, literal = self.consume(values_context=False)
        operators = {_IN: IN, _EQ: EQUALS, _DEQ: DOUBLE_EQUALS, _GT: GREATER_THAN, _LT: LESS_THAN, _NOTIN: NOT_IN,
                     _NEQ: NOT_EQUALS}
        if token not in operators:
            raise _SelectorSyntaxError("found '%s', expected: %s" % (literal, _BINARY_OPERATORS))
        return operators[token]

    def set_values(self):
        token, literal = self.consume()
        if token != _OPEN:
            raise _SelectorSyntaxError("found '%s' expected: '('" % literal)
        token, literal = self.lookahead()
        if token == _CLOSE:
            self.consume()
            return {""}
        if token not in (_ID, _COMMA):
            raise _SelectorSyntaxError("found '%s', expected: ',', ')' or identifier" % literal)
        values = self.identifier_list()
        if self.consume()[0] != _CLOSE:
            raise _SelectorSyntaxError("found '%s', expected: ')'" % literal)
        return values

    def identifier_list(self):
        values = set()
        while True:
            token, literal = self.consume()
            if token == _ID:
                values.add(literal)
                next_token, next_literal = self.lookahead()
                if next_token == _COMMA:
                    continue
                if next_token == _CLOSE:
                    return values
                raise _SelectorSyntaxError("found '%s', expected: ',' or ')'" % next_literal)
            if token == _COMMA:
                if not values:
                    values.add("")
                next_token = self.lookahead()[0]
                if next_token == _CLOSE:
                    values.add("")
                    return values
                if next_token == _COMMA:
                    self.consume()
                    values.add("")
                continue
            raise _SelectorSyntaxError("found '%s', expected: ',', or identifier" % literal)

    def exact_value(self):
        if self.lookahead()[0] in (_END, _COMMA):
            return {""}
        token, literal = self.consume()
        if token == _ID:
            return {literal}
        raise _SelectorSyntaxError("found '%s', expected: identifier" % literal)


class LabelSelector:
    """A parsed label selector: an AND of requirements sorted by key (labels.internalSelector)."""

    def __init__(self, requirements=(), matches_nothing=False):
        self.requirements = sorted(requirements, key=lambda requirement: requirement.key)
        self.matches_nothing = matches_nothing

    @property
    def empty(self):
        return not self.requirements and not self.matches_nothing

    def matches(self, labels):
        if self.matches_nothing:
            return False
        labels = labels or {}
        return all(requirement.matches(labels) for requirement in self.requirements)

    def requires_exact_match(self, key):
        """(value, True) when the selector pins `key` to one value (RequiresExactMatch)."""
        for requirement in self.requirements:
            if requirement.key == key:
                if requirement.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(requirement.values) == 1:
                    return requirement.values[0], True
                return "", False
        return "", False

    def __str__(self):
        return ",".join(str(requirement) for requirement in self.requirements)


def parse_label_selector(text):
    """labels.Parse: a LabelSelector, or ApiError 400 BadRequest with the real parser message."""
    try:
        return LabelSelector(_LabelParser(text or "").parse())
    except _SelectorSyntaxError as error:
        raise bad_request(str(error))


_EXPRESSION_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


def label_selector_from_dict(selector):
    """metav1.LabelSelectorAsSelector: a {matchLabels, matchExpressions} dict as a LabelSelector.

    None matches nothing, {} matches everything (as the real helper). Invalid content raises ApiError 400.
    """
    if selector is None:
        return LabelSelector(matches_nothing=True)
    requirements = []
    try:
        for key, value in sorted((selector.get("matchLabels") or {}).items()):
            _check_key(key)
            requirements.append(_new_requirement(key, EQUALS, [value]))
        for expression in selector.get("matchExpressions") or []:
            operator = _EXPRESSION_OPERATORS.get(expression.get("operator"))
            if operator is None:
                raise _SelectorSyntaxError("%s is not a valid label selector operator"
                                           % go_quote(str(expression.get("operator"))))
            key = expression.get("key", "")
            _check_key(key)
            values = list(expression.get("values") or [])
            if operator in (IN, NOT_IN) and not values:
                raise _SelectorSyntaxError("values: Invalid value: []string{}: for 'in', 'notin' operators, "
                                           "values set can't be empty")
            if operator in (EXISTS, DOES_NOT_EXIST) and values:
                raise _SelectorSyntaxError("values: Invalid value: []string{%s}: values set must be empty for "
                                           "exists and does not exist" % ", ".join(go_quote(v) for v in values))
            requirements.append(_new_requirement(key, operator, values))
    except _SelectorSyntaxError as error:
        raise bad_request(str(error))
    return LabelSelector(requirements)


def _check_key(key):
    errors = label_key_errors(key)
    if errors:
        raise _SelectorSyntaxError(_field_invalid("key", key, "; ".join(errors)))


# ---------------------------------------------------------------------------------------------------
# Field selectors


def _field_value_reader(path):
    """Read a dotted path (`spec.nodeName`) from an object as the string a fields.Set holds."""
    parts = path.split(".")

    def read(obj):
        value = obj
        for part in parts:
            if not isinstance(value, dict):
                return ""
            value = value.get(part)
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    return read


def _pod_ip(pod):
    pod_ips = (pod.get("status") or {}).get("podIPs") or []
    return pod_ips[0].get("ip", "") if pod_ips else ""


def _event_source(event):
    return ((event.get("source") or {}).get("component") or event.get("reportingComponent") or "")


class FieldSelectorSpec:
    """What one resource's field selector accepts (its field-label conversion) and how values are read."""

    def __init__(self, fields, unsupported="field label not supported: {label}", aliases=None, readers=None):
        self.fields = frozenset(fields)
        self.unsupported = unsupported
        self.aliases = dict(aliases or {})
        self.readers = {name: (readers or {}).get(name) or _field_value_reader(name) for name in self.fields}

    def convert(self, label):
        label = self.aliases.get(label, label)
        if label not in self.fields:
            raise bad_request(self.unsupported.format(label=label, quoted=go_quote(label)))
        return label

    def __contains__(self, label):
        return label in self.fields or label in self.aliases


_DEFAULT_META_MESSAGE = '{quoted} is not a known field selector: only "metadata.name", "metadata.namespace"'
_META = ("metadata.name", "metadata.namespace")

_BUILTIN_FIELDS = {
    ("", "pods"): FieldSelectorSpec(
        _META + ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                 "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName"),
        aliases={"spec.host": "spec.nodeName"},
        readers={"spec.hostNetwork": lambda pod: "true" if (pod.get("spec") or {}).get("hostNetwork") else "false",
                 "status.podIP": _pod_ip, "status.podIPs": _pod_ip}),
    ("", "namespaces"): FieldSelectorSpec(("metadata.name", "status.phase")),
    ("", "secrets"): FieldSelectorSpec(_META + ("type",)),
    ("", "services"): FieldSelectorSpec(_META + ("spec.clusterIP", "spec.type")),
    ("", "events"): FieldSelectorSpec(
        _META + ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
                 "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                 "reportingComponent", "source", "type"),
        readers={"source": _event_source}),
}


def field_selector_spec(group, resource, namespaced=True, custom_resource=False, selectable_fields=()):
    """The field selector rules kube-apiserver applies to `group/resource`.

    Built-ins with their own conversion func (pods, namespaces, secrets, services, events) accept their
    fields with "field label not supported: X"; other built-ins accept metadata.name/namespace with the
    DefaultMetaV1FieldSelectorConversion message; custom resources accept metadata.name, metadata.namespace
    (namespaced only) and the version's selectableFields (JSONPaths such as ".spec.color").
    """
    if custom_resource:
        fields = ["metadata.name"] + (["metadata.namespace"] if namespaced else [])
        fields += [path.lstrip(".") for path in selectable_fields]
        return FieldSelectorSpec(fields)
    spec = _BUILTIN_FIELDS.get((group, resource))
    if spec is not None:
        return spec
    return FieldSelectorSpec(_META, unsupported=_DEFAULT_META_MESSAGE)


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    operator: str          # "=" (also for "==") or "!="
    value: str

    def __str__(self):
        escaped = self.value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        return self.field + ("!=" if self.operator == "!=" else "=") + escaped


class FieldSelector:
    """A parsed field selector: an AND of field=value / field!=value terms."""

    def __init__(self, requirements, spec):
        self.requirements = list(requirements)
        self.spec = spec

    @property
    def empty(self):
        return not self.requirements

    def matches(self, obj):
        for requirement in self.requirements:
            reader = self.spec.readers.get(requirement.field) or _field_value_reader(requirement.field)
            equal = reader(obj) == requirement.value
            if equal != (requirement.operator == "="):
                return False
        return True

    def requires_exact_match(self, field):
        for requirement in self.requirements:
            if requirement.field == field and requirement.operator == "=":
                return requirement.value, True
        return "", False

    def __str__(self):
        return ",".join(str(requirement) for requirement in self.requirements)


def _split_terms(text):
    terms, start, in_slash = [], 0, False
    for index, char in enumerate(text):
        if in_slash:
            in_slash = False
        elif char == "\\":
            in_slash = True
        elif char == ",":
            terms.append(text[start:index])
            start = index + 1
    terms.append(text[start:])
    return terms


def _split_term(term):
    for index in range(len(term)):
        for operator in ("!=", "==", "="):
            if term.startswith(operator, index):
                return term[:index], operator, term[index + len(operator):]
    return None


def _unescape_value(value):
    if not any(char in value for char in "\\,="):
        return value
    out, in_slash = [], False
    for char in value:
        if in_slash:
            if char not in "\\,=":
                raise _SelectorSyntaxError("invalid field selector: invalid escape sequence: \\" + char)
            out.append(char)
            in_slash = False
        elif char == "\\":
            in_slash = True
        elif char in ",=":
            # the real message prints the rune as a number (Go %v of a rune)
            raise _SelectorSyntaxError("invalid field selector: unescaped character in value: %d" % ord(char))
        else:
            out.append(char)
    if in_slash:
        raise _SelectorSyntaxError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(text, allowed_fields):
    """fields.ParseSelector + the resource's field-label conversion.

    `allowed_fields` is a FieldSelectorSpec (see field_selector_spec) or any collection of field names
    (then unsupported fields get "field label not supported: X"). ApiError 400 on bad syntax or fields.
    """
    spec = allowed_fields if isinstance(allowed_fields, FieldSelectorSpec) else FieldSelectorSpec(allowed_fields)
    text = text or ""
    requirements = []
    try:
        for part in sorted(_split_terms(text)) if text else []:
            if part == "":
                continue
            split = _split_term(part)
            if split is None:
                raise _SelectorSyntaxError("invalid selector: '%s'; can't understand '%s'" % (text, part))
            field, operator, raw_value = split
            requirements.append((field, "!=" if operator == "!=" else "=", _unescape_value(raw_value)))
    except _SelectorSyntaxError as error:
        raise bad_request(str(error))
    converted = [FieldRequirement(spec.convert(field), operator, value) for field, operator, value in requirements]
    return FieldSelector(converted, spec)
