"""Prometheus text exposition (format 0.0.4), written here to keep the sidecar free of extra packages."""
import bisect
import threading

OWN_BUCKETS = (0.00005, 0.0001, 0.0002, 0.0003, 0.0005, 0.00075, 0.001, 0.002, 0.005, 0.01, 0.025, 0.1)
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _escape(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(names, values, extra=()):
    pairs = list(zip(names, values)) + list(extra)
    if not pairs:
        return ""
    return "{" + ",".join('%s="%s"' % (name, _escape(value)) for name, value in pairs) + "}"


class _Metric(object):
    kind = "untyped"

    def __init__(self, registry, name, help_text, labelnames=()):
        self.name = name
        self.help_text = help_text
        self.labelnames = tuple(labelnames)
        self.values = {}
        self.lock = threading.Lock()
        registry.metrics.append(self)

    def header(self):
        return ["# HELP %s %s" % (self.name, self.help_text), "# TYPE %s %s" % (self.name, self.kind)]


class Counter(_Metric):
    kind = "counter"

    def inc(self, *labelvalues, amount=1.0):
        with self.lock:
            self.values[labelvalues] = self.values.get(labelvalues, 0.0) + amount

    def value(self, *labelvalues):
        return self.values.get(labelvalues, 0.0)

    def render(self):
        lines = self.header()
        for labelvalues, value in sorted(self.values.items()):
            lines.append("%s%s %s" % (self.name, _labels(self.labelnames, labelvalues), repr(float(value))))
        return lines


class Gauge(Counter):
    kind = "gauge"

    def dec(self, *labelvalues):
        self.inc(*labelvalues, amount=-1.0)


class Histogram(_Metric):
    kind = "histogram"

    def __init__(self, registry, name, help_text, labelnames=(), buckets=LATENCY_BUCKETS):
        super().__init__(registry, name, help_text, labelnames)
        self.buckets = tuple(buckets)

    def observe(self, value, *labelvalues):
        with self.lock:
            state = self.values.get(labelvalues)
            if state is None:
                state = self.values[labelvalues] = [[0] * len(self.buckets), 0, 0.0]
            index = bisect.bisect_left(self.buckets, value)
            if index < len(self.buckets):
                state[0][index] += 1
            state[1] += 1
            state[2] += value

    def count(self, *labelvalues):
        state = self.values.get(labelvalues)
        return state[1] if state else 0

    def render(self):
        lines = self.header()
        for labelvalues, (counts, total, value_sum) in sorted(self.values.items()):
            cumulative = 0
            for bound, count in zip(self.buckets, counts):
                cumulative += count
                lines.append("%s_bucket%s %d" % (self.name, _labels(self.labelnames, labelvalues, [("le", repr(bound))]),
                                                 cumulative))
            lines.append("%s_bucket%s %d" % (self.name, _labels(self.labelnames, labelvalues, [("le", "+Inf")]), total))
            lines.append("%s_sum%s %s" % (self.name, _labels(self.labelnames, labelvalues), repr(float(value_sum))))
            lines.append("%s_count%s %d" % (self.name, _labels(self.labelnames, labelvalues), total))
        return lines


class Registry(object):
    def __init__(self):
        self.metrics = []

    def render(self):
        lines = []
        for metric in self.metrics:
            lines.extend(metric.render())
        return "\n".join(lines) + "\n"


class ProxyMetrics(object):
    """The proxy's metrics (names follow the enhancement's hypershift_api_proxy_* family)."""

    def __init__(self):
        self.registry = Registry()
        prefix = "hypershift_api_proxy_"
        self.requests = Counter(self.registry, prefix + "requests_total",
                                "Requests answered, by API group as the client sees it, verb and HTTP code.",
                                ("group", "verb", "code"))
        self.translation_errors = Counter(self.registry, prefix + "translation_errors_total",
                                          "Bodies or events that could not be translated or converted.", ("direction",))
        self.translation_seconds = Histogram(self.registry, prefix + "translation_duration_seconds",
                                             "Time spent translating and converting one body or watch event.",
                                             ("direction",))
        self.upstream_seconds = Histogram(self.registry, prefix + "upstream_duration_seconds",
                                          "Time until the API server's whole response arrived (watches: until the stream opened).",
                                          ("verb",))
        self.own_seconds = Histogram(self.registry, prefix + "own_duration_seconds",
                                     "Time the proxy itself took per answered request: the handler's time without "
                                     "the API server's round trips (also in each response's Server-Timing header).",
                                     ("verb",), buckets=OWN_BUCKETS)
        self.upstream_errors = Counter(self.registry, prefix + "upstream_errors_total",
                                       "Requests the API server did not answer (refused, reset, timed out).", ("reason",))
        self.open_watches = Gauge(self.registry, prefix + "open_watches", "Watch streams open now.")
        self.watch_events = Counter(self.registry, prefix + "watch_events_total", "Watch events forwarded.", ())
        self.bytes = Counter(self.registry, prefix + "bytes_total", "Body bytes, by direction (request, response).",
                             ("direction",))
        self.memory_trims = Counter(self.registry, prefix + "memory_trims_total",
                                    "Times freed memory was given back to the system after a burst (malloc_trim).", ())
        self.adaptations = Counter(self.registry, prefix + "version_adaptations_total",
                                   "Requests served by converting between API versions.", ("client_version", "served_version"))
