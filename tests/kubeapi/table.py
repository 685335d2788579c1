"""`as=Table` responses (meta.k8s.io/v1 Table) like kube-apiserver's table convertors.

- Custom resources: apiextensions tableconvertor: Name + the version's additionalPrinterColumns, or an
  Age column when the version declares none (serveDefaultColumnsIfEmpty); cells from the client-go
  JSONPath subset CRDs use; `date` cells are rendered by the server as a human duration ("5m").
- Built-ins: pkg/printers/internalversion column sets and cell derivations, always generated "wide"
  (priority-1 cells included; kubectl hides them without `-o wide`), as the server does.
- Everything else: the default convertor (Name, Created At).
Column descriptions of built-ins are abridged from the API docs (clients do not display them).
"""
import json
import math
import re
from datetime import datetime, timezone
from decimal import Decimal

from tests.kubeapi.errors import ApiError, bad_request
from tests.kubeapi.selectors import label_selector_from_dict

NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources may "
    "allow a client to request the generation of an appropriate name automatically. Name is primarily intended "
    "for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")
CREATION_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value. "
    "It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. "
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")


# -- time ----------------------------------------------------------------------------------------------

def _epoch(now):
    if now is None:
        return datetime.now(timezone.utc).timestamp()
    if isinstance(now, datetime):
        return (now if now.tzinfo else now.replace(tzinfo=timezone.utc)).timestamp()
    return float(now)


_TIME_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def parse_time(text):
    """RFC3339 (optionally with fractional seconds) -> epoch seconds; None for empty/"null"; ValueError if bad."""
    if text is None or text == "" or text == "null":
        return None
    match = _TIME_RE.match(text)
    if not match:
        raise ValueError("not an RFC3339 timestamp: %r" % (text,))
    year, month, day, hour, minute, second = (int(group) for group in match.groups()[:6])
    moment = datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc).timestamp()
    moment += float(match.group(7) or 0)
    zone = match.group(8)
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        moment -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    return moment


def human_duration(seconds):
    """duration.HumanDuration: ~2-3 significant figures ("45s", "5m10s", "3h", "2d3h", "3y120d")."""
    whole = int(seconds)  # Go truncates toward zero
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return "%ds" % whole
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return "%dm" % minutes if rest == 0 else "%dm%ds" % (minutes, rest)
    if minutes < 180:
        return "%dm" % minutes
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return "%dh" % hours if rest == 0 else "%dh%dm" % (hours, rest)
    if hours < 48:
        return "%dh" % hours
    if hours < 24 * 8:
        rest = hours % 24
        return "%dd" % (hours // 24) if rest == 0 else "%dd%dh" % (hours // 24, rest)
    if hours < 24 * 365 * 2:
        return "%dd" % (hours // 24)
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return "%dy" % (hours // 24 // 365) if days == 0 else "%dy%dd" % (hours // 24 // 365, days)
    return "%dy" % (hours // 24 // 365)


def age_since(timestamp, now):
    """translateTimestampSince: "<unknown>" for a missing time, else the human duration since it."""
    try:
        moment = parse_time(timestamp)
    except ValueError:
        return "<invalid>"
    if moment is None:
        return "<unknown>"
    return human_duration(_epoch(now) - moment)


# -- JSONPath (the client-go subset used by printer columns) -----------------------------------------------

class JsonPathError(Exception):
    pass


_MISSING = object()
_FILTER_RE = re.compile(r"^\s*@((?:\.[^\s=!<>]+)*)\s*(?:(==|!=|<=|>=|<|>)\s*(.+?))?\s*$")


def _parse_literal(text):
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    if re.match(r"^-?\d+$", text):
        return int(text)
    if re.match(r"^-?\d+\.\d*$", text):
        return float(text)
    if text.startswith("@"):
        return ("path", parse_jsonpath(text[1:]))
    raise JsonPathError("unrecognized literal in filter: %s" % text)


def parse_jsonpath(expression):
    """Steps of a JSONPath like `.status.conditions[?(@.type=="Ready")].status` (braces optional)."""
    text = expression.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    steps, position = [], 0
    if text.startswith("$"):
        position = 1
    while position < len(text):
        char = text[position]
        if text.startswith("..", position):
            position += 2
            name, position = _read_name(text, position)
            steps.append(("recursive", name))
        elif char == ".":
            name, position = _read_name(text, position + 1)
            steps.append(("wildcard",) if name == "*" else ("field", name))
        elif char == "[":
            end = _matching_bracket(text, position)
            steps.append(_parse_bracket(text[position + 1:end].strip()))
            position = end + 1
        else:
            raise JsonPathError("unrecognized character in JSONPath %r at %d: %r" % (expression, position, char))
    return steps


def _read_name(text, position):
    name = []
    while position < len(text) and text[position] not in ".[":
        if text[position] == "\\" and position + 1 < len(text):
            position += 1
        name.append(text[position])
        position += 1
    if not name:
        raise JsonPathError("empty field name in JSONPath %r" % text)
    return "".join(name), position


def _matching_bracket(text, start):
    depth, quote = 0, None
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return index
    raise JsonPathError("unclosed [ in JSONPath %r" % text)


def _parse_bracket(inner):
    if inner == "*":
        return ("wildcard",)
    if inner.startswith("?(") and inner.endswith(")"):
        match = _FILTER_RE.match(inner[2:-1])
        if not match:
            raise JsonPathError("unrecognized filter %r" % inner)
        path = parse_jsonpath(match.group(1)) if match.group(1) else []
        if match.group(2) is None:
            return ("filter", path, "exists", None)
        return ("filter", path, match.group(2), _parse_literal(match.group(3).strip()))
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
        return ("field", inner[1:-1])
    if ":" in inner:
        parts = [part.strip() for part in inner.split(":")]
        try:
            bounds = [int(part) if part else None for part in parts[:3]]
        except ValueError:
            raise JsonPathError("unrecognized slice [%s]" % inner)
        return ("slice",) + tuple(bounds + [None] * (3 - len(bounds)))
    try:
        return ("index", int(inner))
    except ValueError:
        raise JsonPathError("unrecognized subscript [%s]" % inner)


def _compare(left, operator, right):
    if operator == "exists":
        return True
    numeric = (int, float)
    same = ((isinstance(left, str) and isinstance(right, str))
            or (isinstance(left, numeric) and not isinstance(left, bool)
                and isinstance(right, numeric) and not isinstance(right, bool))
            or (isinstance(left, bool) and isinstance(right, bool)))
    if not same:
        raise JsonPathError("incompatible types for comparison: %r %s %r" % (left, operator, right))
    return {"==": left == right, "!=": left != right, "<": left < right, ">": left > right,
            "<=": left <= right, ">=": left >= right}[operator]


def _descendants(value, name):
    if isinstance(value, dict):
        if name in value:
            yield value[name]
        for child in value.values():
            yield from _descendants(child, name)
    elif isinstance(value, list):
        for child in value:
            yield from _descendants(child, name)


def evaluate_jsonpath(steps, data):
    """All values the path selects (missing keys select nothing, like AllowMissingKeys(true))."""
    current = [data]
    for step in steps:
        following = []
        for value in current:
            kind = step[0]
            if kind == "field":
                if isinstance(value, dict) and step[1] in value:
                    following.append(value[step[1]])
            elif kind == "wildcard":
                following.extend(value.values() if isinstance(value, dict) else value if isinstance(value, list) else [])
            elif kind == "recursive":
                following.extend(_descendants(value, step[1]))
            elif kind == "index":
                if not isinstance(value, list):
                    continue
                index = step[1] + len(value) if step[1] < 0 else step[1]
                if not 0 <= index < len(value):
                    raise JsonPathError("array index out of bounds: index %d, length %d" % (step[1], len(value)))
                following.append(value[index])
            elif kind == "slice":
                if isinstance(value, list):
                    following.extend(value[slice(*step[1:])])
            elif kind == "filter":
                if not isinstance(value, list):
                    raise JsonPathError("%r is not array or slice and cannot be filtered" % (value,))
                _path, operator, literal = step[1:]
                for item in value:
                    lefts = evaluate_jsonpath(step[1], item)
                    if not lefts:
                        continue
                    right = literal
                    if isinstance(literal, tuple):
                        rights = evaluate_jsonpath(literal[1], item)
                        if not rights:
                            continue
                        right = rights[0]
                    if _compare(lefts[0], operator, right):
                        following.append(item)
        current = following
    return current


def _go_float(number):
    """fmt.Sprint of a float64: shortest digits, exponent form when the exponent is < -4 or >= 6 (%v)."""
    if math.isnan(number):
        return "NaN"
    if number in (float("inf"), float("-inf")):
        return "+Inf" if number > 0 else "-Inf"
    if number == 0:
        return "-0" if str(number).startswith("-") else "0"
    sign, digits, exponent = Decimal(repr(number)).normalize().as_tuple()
    text_digits = "".join(str(digit) for digit in digits)
    exponent10 = len(digits) + exponent - 1
    prefix = "-" if sign else ""
    if exponent10 < -4 or exponent10 >= 6:
        mantissa = text_digits[0] + ("." + text_digits[1:] if len(text_digits) > 1 else "")
        return "%s%se%s%02d" % (prefix, mantissa, "+" if exponent10 >= 0 else "-", abs(exponent10))
    return prefix + format(Decimal(repr(abs(number))).normalize(), "f")


def _go_json(value):
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _print_string_cell(value):
    """jsonpath PrintResults for one value: strings raw, maps/lists as JSON, null as "<no value>"."""
    if value is None:
        return "<no value>"
    if isinstance(value, (dict, list)):
        return _go_json(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    return str(value)


def _typed_cell(column_type, value, now):
    """cellForJSONValue: the cell for a non-string printer column, None when the value does not fit."""
    if value is None:
        return None
    if column_type == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return int(value)
    elif column_type == "number":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif column_type == "boolean":
        if isinstance(value, bool):
            return value
    elif column_type == "string":
        if isinstance(value, str):
            return value
    elif column_type == "date":
        if isinstance(value, str):
            try:
                moment = parse_time(value)
            except ValueError:
                return "<invalid>"
            return "<unknown>" if moment is None else human_duration(_epoch(now) - moment)
    return None


# -- columns -----------------------------------------------------------------------------------------------

def _definition(name, column_type="string", description="", priority=0, fmt=""):
    return {"name": name, "type": column_type, "format": fmt, "description": description, "priority": priority}


NAME_COLUMN = _definition("Name", "string", NAME_DESCRIPTION, fmt="name")
AGE_COLUMN = _definition("Age", "string", CREATION_DESCRIPTION)


class Columns:
    """Column definitions plus how to compute one row's cells (and row conditions) from an object."""

    def __init__(self, definitions, cells):
        self.definitions = definitions
        self._cells = cells

    def row(self, obj, now):
        result = self._cells(obj, now)
        return result if isinstance(result, tuple) else (result, None)


def columns_for_crd_version(crd_version):
    """Name + spec.versions[].additionalPrinterColumns (Age when none), as the CRD table convertor."""
    printer_columns = crd_version.get("additionalPrinterColumns") or [
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "description": CREATION_DESCRIPTION}]
    definitions, paths = [dict(NAME_COLUMN)], []
    for column in printer_columns:
        try:
            paths.append(parse_jsonpath(column.get("jsonPath", "")))
        except JsonPathError:
            break  # the real convertor keeps the columns parsed so far and logs the bad one
        description = column.get("description") or (
            "Custom resource definition column (in JSONPath format): %s" % column.get("jsonPath", ""))
        definitions.append(_definition(column.get("name", ""), column.get("type", "string"), description,
                                       column.get("priority", 0), column.get("format", "")))

    def cells(obj, now):
        row = [_name(obj)]
        for definition, path in zip(definitions[1:], paths):
            try:
                results = evaluate_jsonpath(path, obj)
            except JsonPathError:
                results = []
            if not results:
                row.append(None)
            elif definition["type"] == "string":
                row.append(_print_string_cell(results[0]))
            else:
                row.append(_typed_cell(definition["type"], results[0], now))
        return row
    return Columns(definitions, cells)


def default_columns():
    """rest.NewDefaultTableConvertor: Name and Created At (RFC3339)."""
    definitions = [dict(NAME_COLUMN), _definition("Created At", "date", CREATION_DESCRIPTION)]
    return Columns(definitions, lambda obj, now: [_name(obj), _created_at(obj)])


def _name(obj):
    return (obj.get("metadata") or {}).get("name", "")


def _created_at(obj):
    stamp = (obj.get("metadata") or {}).get("creationTimestamp")
    try:
        moment = parse_time(stamp)
    except ValueError:
        return stamp
    moment = 0 if moment is None else moment  # Go formats the zero time as 0001-01-01T00:00:00Z
    if moment == 0 and not stamp:
        return "0001-01-01T00:00:00Z"
    return datetime.fromtimestamp(int(moment), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _age(obj, now):
    return age_since((obj.get("metadata") or {}).get("creationTimestamp"), now)


def _get(obj, *path, default=None):
    for key in path:
        if not isinstance(obj, dict):
            return default
        obj = obj.get(key)
    return default if obj is None else obj


# -- built-in printers (pkg/printers/internalversion) -------------------------------------------------------

_POD_SUCCEEDED = [{"type": "Completed", "status": "True", "reason": "Succeeded",
                   "message": "The pod has completed successfully."}]
_POD_FAILED = [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]


def _condition_true(conditions, condition_type):
    return any(c.get("type") == condition_type and c.get("status") == "True" for c in conditions or [])


def _pod_cells(pod, now):
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    conditions = status.get("conditions") or []
    restarts, restartable_restarts, ready = 0, 0, 0
    total = len(spec.get("containers") or [])
    last_restart, last_restartable_restart = None, None
    phase = status.get("phase", "")
    reason = status.get("reason") or phase
    if any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in conditions):
        reason = "SchedulingGated"
    row_conditions = {"Succeeded": _POD_SUCCEEDED, "Failed": _POD_FAILED}.get(phase)
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    total += sum(1 for c in init_specs.values() if c.get("restartPolicy") == "Always")

    def finished_at(container_status):
        stamp = _get(container_status, "lastState", "terminated", "finishedAt")
        try:
            return parse_time(stamp)
        except ValueError:
            return None

    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    for index, container in enumerate(init_statuses):
        restartable = (init_specs.get(container.get("name")) or {}).get("restartPolicy") == "Always"
        restarts += container.get("restartCount", 0)
        finished = finished_at(container)
        if finished is not None and (last_restart is None or finished > last_restart):
            last_restart = finished
        if restartable:
            restartable_restarts += container.get("restartCount", 0)
            if finished is not None and (last_restartable_restart is None or finished > last_restartable_restart):
                last_restartable_restart = finished
        terminated = _get(container, "state", "terminated")
        waiting = _get(container, "state", "waiting")
        if terminated is not None and terminated.get("exitCode", 0) == 0:
            continue
        if restartable and container.get("started"):
            ready += 1 if container.get("ready") else 0
            continue
        if terminated is not None:
            if not terminated.get("reason"):
                reason = ("Init:Signal:%d" % terminated["signal"] if terminated.get("signal")
                          else "Init:ExitCode:%d" % terminated.get("exitCode", 0))
            else:
                reason = "Init:" + terminated["reason"]
        elif waiting is not None and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = "Init:%d/%d" % (index, len(init_specs))
        initializing = True
        break

    if not initializing or _condition_true(conditions, "Initialized"):
        restarts, last_restart = restartable_restarts, last_restartable_restart
        has_running = False
        for container in reversed(status.get("containerStatuses") or []):
            restarts += container.get("restartCount", 0)
            finished = finished_at(container)
            if finished is not None and (last_restart is None or finished > last_restart):
                last_restart = finished
            waiting, terminated = _get(container, "state", "waiting"), _get(container, "state", "terminated")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated is not None and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated is not None:
                reason = ("Signal:%d" % terminated["signal"] if terminated.get("signal")
                          else "ExitCode:%d" % terminated.get("exitCode", 0))
            elif container.get("ready") and _get(container, "state", "running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(conditions, "Ready") else "NotReady"

    if _get(pod, "metadata", "deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif _get(pod, "metadata", "deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        restarts_text = "%d (%s ago)" % (restarts, human_duration(_epoch(now) - last_restart))
    pod_ips = status.get("podIPs") or []
    readiness_gates = spec.get("readinessGates") or []
    gates = "<none>"
    if readiness_gates:
        true_count = 0
        for gate in readiness_gates:
            match = next((c for c in conditions if c.get("type") == gate.get("conditionType")), None)
            true_count += 1 if match is not None and match.get("status") == "True" else 0
        gates = "%d/%d" % (true_count, len(readiness_gates))
    cells = [_name(pod), "%d/%d" % (ready, total), reason, restarts_text, _age(pod, now),
             (pod_ips[0].get("ip") if pod_ips else "") or "<none>", spec.get("nodeName") or "<none>",
             status.get("nominatedNodeName") or "<none>", gates]
    return cells, row_conditions


def _selector_string(selector):
    try:
        return str(label_selector_from_dict(selector))
    except ApiError:
        return ""


def _containers_and_images(pod_spec):
    containers = pod_spec.get("containers") or []
    return ",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)


def _deployment_cells(deployment, now):
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    replicas = spec.get("replicas", 1)
    names, images = _containers_and_images(_get(spec, "template", "spec", default={}))
    return [_name(deployment), "%d/%d" % (status.get("readyReplicas", 0), replicas), status.get("updatedReplicas", 0),
            status.get("availableReplicas", 0), _age(deployment, now), names, images,
            _selector_string(spec.get("selector"))]


def _format_labels(labels):
    return ",".join("%s=%s" % (key, labels[key]) for key in sorted(labels)) if labels else "<none>"


def _service_external_ip(service):
    spec = service.get("spec") or {}
    external_ips = spec.get("externalIPs") or []
    service_type = spec.get("type", "")
    if service_type in ("ClusterIP", "NodePort"):
        return ",".join(external_ips) if external_ips else "<none>"
    if service_type == "LoadBalancer":
        ingress = _get(service, "status", "loadBalancer", "ingress", default=[])
        addresses = sorted({item.get("ip") or item.get("hostname") for item in ingress
                            if item.get("ip") or item.get("hostname")})
        if external_ips:
            return ",".join(addresses + external_ips)
        return ",".join(addresses) if addresses else "<pending>"
    if service_type == "ExternalName":
        return spec.get("externalName", "")
    return "<unknown>"


def _service_cells(service, now):
    spec = service.get("spec") or {}
    cluster_ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    ports = []
    for port in spec.get("ports") or []:
        protocol = port.get("protocol", "TCP")
        if port.get("nodePort"):
            ports.append("%d:%d/%s" % (port.get("port", 0), port["nodePort"], protocol))
        else:
            ports.append("%d/%s" % (port.get("port", 0), protocol))
    return [_name(service), spec.get("type", ""), cluster_ips[0] if cluster_ips else "<none>",
            _service_external_ip(service), ",".join(ports) or "<none>", _age(service, now),
            _format_labels(spec.get("selector"))]


def _event_cells(event, now):
    first = age_since(event.get("firstTimestamp"), now)
    if not event.get("firstTimestamp"):
        first = age_since(event.get("eventTime"), now)
    last = age_since(event.get("lastTimestamp"), now) if event.get("lastTimestamp") else first
    count = event.get("count") or 0
    if event.get("series"):
        last = age_since(_get(event, "series", "lastObservedTime"), now)
        count = _get(event, "series", "count", default=0)
    elif count == 0:
        count = 1
    involved = event.get("involvedObject") or {}
    kind = (involved.get("kind") or "").lower()
    target = "%s/%s" % (kind, involved["name"]) if involved.get("name") else kind
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    return [last, event.get("type", ""), event.get("reason", ""), target, involved.get("fieldPath", ""),
            component + (", " + instance if instance else ""), (event.get("message") or "").strip(), first, count,
            _name(event)]


def _binding_cells(binding, now):
    role_ref = binding.get("roleRef") or {}
    users, groups, service_accounts = [], [], []
    for subject in binding.get("subjects") or []:
        if subject.get("kind") == "ServiceAccount":
            service_accounts.append("%s/%s" % (subject.get("namespace", ""), subject.get("name", "")))
        elif subject.get("kind") == "User":
            users.append(subject.get("name", ""))
        elif subject.get("kind") == "Group":
            groups.append(subject.get("name", ""))
    return [_name(binding), "%s/%s" % (role_ref.get("kind", ""), role_ref.get("name", "")), _age(binding, now),
            ", ".join(users), ", ".join(groups), ", ".join(service_accounts)]


def _simple(*extra):
    """Columns Name, <extra...>, Age where each extra is (definition, cell(obj))."""
    definitions = [dict(NAME_COLUMN)] + [definition for definition, _cell in extra] + [dict(AGE_COLUMN)]
    return Columns(definitions, lambda obj, now: [_name(obj)] + [cell(obj) for _definition, cell in extra] + [_age(obj, now)])


def _builtin_columns():
    age = dict(AGE_COLUMN)
    pods = Columns([dict(NAME_COLUMN),
                    _definition("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
                    _definition("Status", description="The aggregate status of the containers in this pod."),
                    _definition("Restarts", description="The number of times the containers in this pod have been "
                                "restarted and when the last container in this pod has restarted."),
                    age,
                    _definition("IP", description="podIP address allocated to the pod.", priority=1),
                    _definition("Node", description="NodeName indicates in which node this pod is scheduled.",
                                priority=1),
                    _definition("Nominated Node", description="nominatedNodeName is set only when this pod preempts "
                                "other pods on the node.", priority=1),
                    _definition("Readiness Gates", description="If specified, all readiness gates will be evaluated "
                                "for pod readiness.", priority=1)], _pod_cells)
    deployments = Columns([dict(NAME_COLUMN), _definition("Ready", description="Number of the pod with ready state"),
                           _definition("Up-to-date", description="Total number of non-terminated pods targeted by this "
                                       "deployment that have the desired template spec."),
                           _definition("Available", description="Total number of available pods (ready for at least "
                                       "minReadySeconds) targeted by this deployment."), age,
                           _definition("Containers", description="Names of each container in the template.",
                                       priority=1),
                           _definition("Images", description="Images referenced by each container in the template.",
                                       priority=1),
                           _definition("Selector", description="Label selector for pods.", priority=1)],
                          _deployment_cells)
    services = Columns([dict(NAME_COLUMN), _definition("Type", description="type determines how the Service is exposed."),
                        _definition("Cluster-IP", description="clusterIP is the IP address of the service."),
                        _definition("External-IP", description="externalIPs is a list of IP addresses for which nodes "
                                    "in the cluster will also accept traffic for this service."),
                        _definition("Port(s)", description="The list of ports that are exposed by this service."), age,
                        _definition("Selector", description="Route service traffic to pods with label keys and values "
                                    "matching this selector.", priority=1)], _service_cells)
    events = Columns([_definition("Last Seen", description="The time at which the most recent occurrence of this event "
                                  "was recorded."),
                      _definition("Type", description="Type of this event (Normal, Warning)."),
                      _definition("Reason", description="This should be a short, machine understandable string that "
                                  "gives the reason for the transition into the object's current status."),
                      _definition("Object", description="The object that this event is about."),
                      _definition("Subobject", description="If referring to a piece of an object instead of an entire "
                                  "object, this string should contain a valid JSON/Go field access statement.",
                                  priority=1),
                      _definition("Source", description="The component reporting this event.", priority=1),
                      _definition("Message", description="A human-readable description of the status of this "
                                  "operation."),
                      _definition("First Seen", description="The time at which the event was first recorded.",
                                  priority=1),
                      _definition("Count", description="The number of times this event has occurred.", priority=1),
                      _definition("Name", "string", NAME_DESCRIPTION, priority=1, fmt="name")], _event_cells)
    bindings = Columns([dict(NAME_COLUMN), _definition("Role", description="RoleRef can reference a Role in the "
                                                       "current namespace or a ClusterRole in the global namespace."),
                        age, _definition("Users", description="Users in the roleBinding", priority=1),
                        _definition("Groups", description="Groups in the roleBinding", priority=1),
                        _definition("ServiceAccounts", description="ServiceAccounts in the roleBinding", priority=1)],
                       _binding_cells)
    roles = Columns([dict(NAME_COLUMN), _definition("Created At", "date", CREATION_DESCRIPTION)],
                    lambda obj, now: [_name(obj), _created_at(obj)])
    return {
        ("", "pods"): pods,
        ("apps", "deployments"): deployments,
        ("", "services"): services,
        ("", "events"): events,
        ("", "namespaces"): _simple((_definition("Status", description="The status of the namespace"),
                                     lambda obj: _get(obj, "status", "phase", default=""))),
        ("", "configmaps"): _simple((_definition("Data", description="Data contains the configuration data."),
                                     lambda obj: len(obj.get("data") or {}) + len(obj.get("binaryData") or {}))),
        ("", "secrets"): _simple((_definition("Type", description="Used to facilitate programmatic handling of secret "
                                              "data."), lambda obj: obj.get("type", "")),
                                 (_definition("Data", description="Data contains the secret data."),
                                  lambda obj: len(obj.get("data") or {}))),
        ("", "serviceaccounts"): _simple((_definition("Secrets", description="Secrets is a list of the secrets in the "
                                                      "same namespace that pods running using this ServiceAccount are "
                                                      "allowed to use."), lambda obj: len(obj.get("secrets") or []))),
        ("coordination.k8s.io", "leases"): _simple((_definition("Holder", description="holderIdentity contains the "
                                                                "identity of the holder of a current lease."),
                                                    lambda obj: _get(obj, "spec", "holderIdentity", default=""))),
        ("rbac.authorization.k8s.io", "roles"): roles,
        ("rbac.authorization.k8s.io", "clusterroles"): roles,
        ("rbac.authorization.k8s.io", "rolebindings"): bindings,
        ("rbac.authorization.k8s.io", "clusterrolebindings"): bindings,
    }


_BUILTIN_COLUMNS = _builtin_columns()


def columns_for_builtin(group, resource):
    """The columns `kubectl get` shows for a built-in resource (default Name/Created At otherwise,
    which is also what customresourcedefinitions use)."""
    return _BUILTIN_COLUMNS.get((group, resource)) or default_columns()


# -- the Table ---------------------------------------------------------------------------------------------

def _row_object(obj, include_object):
    if include_object == "Object":
        return obj
    if include_object == "None":
        return None
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def build_table(objects, columns, include_object=None, list_metadata=None, now=None, no_headers=False):
    """A meta.k8s.io/v1 Table for `objects` (a list, or one object for a GET).

    include_object: "Metadata" (also None/"", the default: rows carry PartialObjectMetadata), "Object"
    (the full object) or "None" (row object null); anything else is 400 like the real server.
    list_metadata: the list's {resourceVersion, continue, remainingItemCount}; None for a single GET
    (the table then carries the object's resourceVersion).
    """
    if include_object in (None, ""):
        include_object = "Metadata"
    if include_object not in ("Metadata", "Object", "None"):
        raise bad_request("unrecognized includeObject value: %s" % json.dumps(include_object))
    if isinstance(objects, dict):
        objects = [objects]
    metadata = {}
    if list_metadata is None:
        if objects and _get(objects[0], "metadata", "resourceVersion"):
            metadata["resourceVersion"] = objects[0]["metadata"]["resourceVersion"]
    else:
        for key in ("resourceVersion", "continue", "remainingItemCount"):
            if list_metadata.get(key) not in (None, ""):
                metadata[key] = list_metadata[key]
    rows = []
    for obj in objects:
        cells, conditions = columns.row(obj, now)
        row = {"cells": cells}
        if conditions:
            row["conditions"] = [dict(condition) for condition in conditions]
        row["object"] = _row_object(obj, include_object)
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
            "columnDefinitions": None if no_headers else [dict(d) for d in columns.definitions], "rows": rows}
