"""Prometheus metrics of the proxy and the shim, on prometheus-client, with every label drawn from a bounded set.

Label values a client chooses (the API group in its path, an HTTP method) are never used as they come: a
group is labelled by name only when the API server serves it (or its private twin), a verb only when it
is a Kubernetes verb; anything else is counted under "other", so no request can add a series.
"""
import bisect

import prometheus_client
from prometheus_client import exposition
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString

prometheus_client.disable_created_metrics()  # the *_created series double the output and no dashboard reads them

OWN_BUCKETS = (0.00005, 0.0001, 0.0002, 0.0003, 0.0005, 0.00075, 0.001, 0.002, 0.005, 0.01, 0.025, 0.1)
# hypershift_api_proxy_request_duration_seconds: the enhancement's buckets (1 ms to 1 s), then up to 10 s for a slow
# API server; HyperShiftAPIProxyHighLatency reads its p95 against 100 ms (plugins/module_utils/monitoring.py)
REQUEST_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0)
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
OTHER = "other"
CORE_GROUP = "core"
VERBS = frozenset(("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "head",
                   "options", "post", "put"))


def verb_label(verb):
    return verb if verb in VERBS else OTHER


def group_label(group, known_groups, group_map):
    """group as a label: "core", the group when served (as itself or as its private twin), else "other"."""
    if not group:
        return CORE_GROUP
    if group in known_groups:
        return group
    if group_map.is_standard(group) and group_map.to_private(group) in known_groups:
        return group
    return OTHER


class Registry(object):
    """One prometheus-client registry per proxy or shim (tests run several in one process)."""

    def __init__(self):
        self.collectors = prometheus_client.CollectorRegistry(auto_describe=True)

    def exposition(self):
        """(body bytes, Content-Type) in the text format every Prometheus scrapes."""
        return exposition.generate_latest(self.collectors), exposition.CONTENT_TYPE_LATEST

    def render(self):
        return self.exposition()[0].decode()

    def sample(self, name, labels=None):
        return self.collectors.get_sample_value(name, labels or {})


class _Metric(object):
    """A Prometheus metric of fixed label names; label values are given positionally, in labelnames' order."""

    def __init__(self, registry, name, help_text, labelnames=()):
        self.registry = registry
        self.name = name
        self.help_text = help_text
        self.labelnames = tuple(labelnames)

    def labels_dict(self, labelvalues):
        return dict(zip(self.labelnames, labelvalues))


class _Collected(_Metric):
    """A counter or histogram whose values are plain numbers kept here, one entry per label values, and handed to
    prometheus-client only when it is scraped (a collector of the registry). prometheus-client's own counters and
    histograms take a lock per increment (two per observation) and check their labels on every call: a fifth of
    what the proxy adds to a GET went to its five metric updates. The proxy and the shim update their metrics on
    their event loop's thread only, which is also where a scrape reads them."""

    def __init__(self, registry, name, help_text, labelnames=()):
        super().__init__(registry, name, help_text, labelnames)
        self._values = {}
        if not self.labelnames:  # like prometheus-client: a metric without labels is exposed from the start
            self._values[()] = self._zero()
        registry.collectors.register(self)

    def describe(self):
        return [self._family()]

    def collect(self):
        family = self._family()
        for labelvalues, value in list(self._values.items()):
            self._add(family, labelvalues, value)
        return [family]


class Counter(_Collected):
    def _zero(self):
        return 0.0

    def _family(self):
        return CounterMetricFamily(self.name, self.help_text, labels=self.labelnames)

    @staticmethod
    def _add(family, labelvalues, value):
        family.add_metric(labelvalues, value)

    def inc(self, *labelvalues, amount=1.0):
        values = self._values
        values[labelvalues] = values.get(labelvalues, 0.0) + amount

    def value(self, *labelvalues):
        sample = "%s_total" % self.name if not self.name.endswith("_total") else self.name
        return self.registry.sample(sample, self.labels_dict(labelvalues)) or 0.0


class Histogram(_Collected):
    """Buckets as Prometheus defines them: a value is counted in the first bucket whose upper bound (le) it does not
    exceed, exposed cumulatively, with +Inf last."""

    def __init__(self, registry, name, help_text, labelnames=(), buckets=LATENCY_BUCKETS):
        self.bounds = tuple(sorted(float(bound) for bound in buckets))
        self._les = tuple(floatToGoString(bound) for bound in self.bounds) + ("+Inf",)
        super().__init__(registry, name, help_text, labelnames)

    def _zero(self):
        return [0] * (len(self.bounds) + 1) + [0.0]  # a count per bucket, then the sum

    def _family(self):
        return HistogramMetricFamily(self.name, self.help_text, labels=self.labelnames)

    def _add(self, family, labelvalues, value):
        cumulative, buckets = 0, []
        for le, count in zip(self._les, value):
            cumulative += count
            buckets.append((le, cumulative))
        family.add_metric(labelvalues, buckets, value[-1])

    def observe(self, value, *labelvalues):
        entry = self._values.get(labelvalues)
        if entry is None:
            entry = self._values[labelvalues] = self._zero()
        entry[bisect.bisect_left(self.bounds, value)] += 1
        entry[-1] += value

    def count(self, *labelvalues):
        return int(self.registry.sample(self.name + "_count", self.labels_dict(labelvalues)) or 0)


class Gauge(_Metric):
    """A prometheus-client gauge (set rarely: a watch opening or closing, the mode; or read when scraped)."""

    def __init__(self, registry, name, help_text, labelnames=()):
        super().__init__(registry, name, help_text, labelnames)
        self.metric = prometheus_client.Gauge(name, help_text, self.labelnames, registry=registry.collectors)
        self._children = {}

    def child(self, labelvalues):
        if not self.labelnames:
            return self.metric
        child = self._children.get(labelvalues)
        if child is None:
            child = self._children[labelvalues] = self.metric.labels(*labelvalues)
        return child

    def inc(self, *labelvalues, amount=1.0):
        self.child(labelvalues).inc(amount)

    def dec(self, *labelvalues):
        self.child(labelvalues).dec()

    def set(self, value, *labelvalues):
        self.child(labelvalues).set(value)

    def track(self, function):
        """The value is function() whenever it is read (a scrape): nothing to set as it changes."""
        self.metric.set_function(function)

    def value(self, *labelvalues):
        return self.registry.sample(self.name, self.labels_dict(labelvalues)) or 0.0


class ProxyMetrics(object):
    """The proxy's metrics (names follow the enhancement's hypershift_api_proxy_* family)."""

    def __init__(self):
        self.registry = Registry()
        prefix = "hypershift_api_proxy_"
        self.requests = Counter(self.registry, prefix + "requests_total",
                                "Requests answered, by API group as the client sees it (served groups only, the "
                                "rest as other), verb and HTTP code.", ("group", "verb", "code"))
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
        self.request_seconds = Histogram(self.registry, prefix + "request_duration_seconds",
                                         "Time from a request's arrival to its whole answer, the API server's round "
                                         "trips included (not watches): the latency a CAPI controller sees.",
                                         ("verb",), buckets=REQUEST_BUCKETS)
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
        self.patch_conflicts = Counter(self.registry, prefix + "patch_conflict_retries_total",
                                       "Conflicts between the read and the write of a version-adapted patch that the "
                                       "proxy retried (the client sent no resourceVersion: the API server would "
                                       "have retried too).", ())
        self.inflight_bytes = Gauge(self.registry, prefix + "inflight_body_bytes",
                                    "Body bytes held now by requests in flight (the --max-inflight-bytes budget).")
        self.budget_refusals = Counter(self.registry, prefix + "budget_refusals_total",
                                       "Requests answered 429 because the in-flight body budget was spent.", ())
        self.mode = Gauge(self.registry, prefix + "mode",
                          "1 for the mode the proxy serves in now (translate or passthrough), 0 for the other; no "
                          "series while its mode ConfigMap has not been read.", ("mode",))
