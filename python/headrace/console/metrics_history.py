"""The console's live charts: rates and recent latency quantiles of this
broker, from its own metrics (docs/metrics.md).

A sample is the broker's /metrics text (``Broker.metrics_text``, rendered
by the C++ core with the GIL released) reduced to a few counters and the
Produce and Fetch latency histograms (handler time when the broker exports
it, else total time), parsed with prometheus_client's text
parser. Samples are taken only when a chart asks (``series()``), at most one
per ``min_interval`` seconds however many browsers watch, so an unwatched
console costs nothing. The last ``keep`` samples are kept.

A chart point is the difference of two consecutive samples: bytes and
records in and out per second, requests per second, and the p50/p99 of the
requests answered in between (histogram_quantile over the bucket
differences, linear inside a bucket: error under one bucket, < 50 %). Two
samples further apart than ``max_gap`` give a break in the lines (null).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

BYTES_IN = "headrace_topic_bytes_in_total"
BYTES_OUT = "headrace_topic_bytes_out_total"
RECORDS_IN = "headrace_topic_records_in_total"
REQUESTS = "headrace_requests_total"
BUCKETS = "headrace_request_duration_seconds_bucket"  # total time (Kafka's TotalTimeMs)
# Time in the handler only (Kafka's LocalTimeMs): without the wait in the
# purgatory (long polls, acks=all). Brokers built before it have only BUCKETS.
HANDLER_BUCKETS = "headrace_request_handler_duration_seconds_bucket"
LATENCY_APIS = ("Produce", "Fetch")

# Lines of the metrics text a sample needs; the rest (most of the text: the
# other APIs' buckets) is dropped before parsing.
_WANTED = (BYTES_IN, BYTES_OUT, RECORDS_IN, REQUESTS) + tuple(
    f'{name}{{api="{api}",' for name in (BUCKETS, HANDLER_BUCKETS) for api in LATENCY_APIS)


@dataclass
class Sample:
    t: float                                   # epoch seconds
    bytes_in: float = 0.0                      # summed over topics
    bytes_out: float = 0.0
    records_in: float = 0.0
    requests: dict[str, float] = field(default_factory=dict)   # by API
    # api -> [(upper bound in seconds, cumulative count)], ascending, +Inf last
    buckets: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    # the same of the handler-time histogram (empty on older brokers)
    handler: dict[str, list[tuple[float, float]]] = field(default_factory=dict)


def parse_sample(text: str, t: float) -> Sample:
    """The figures of one /metrics text."""
    from prometheus_client.parser import text_string_to_metric_families

    wanted = "\n".join(line for line in text.splitlines() if line.startswith(_WANTED))
    s = Sample(t)
    for family in text_string_to_metric_families(wanted + "\n"):
        for x in family.samples:
            if x.name == BYTES_IN:
                s.bytes_in += x.value
            elif x.name == BYTES_OUT:
                s.bytes_out += x.value
            elif x.name == RECORDS_IN:
                s.records_in += x.value
            elif x.name == REQUESTS:
                s.requests[x.labels["api"]] = x.value
            elif x.name == BUCKETS:
                s.buckets.setdefault(x.labels["api"], []).append(
                    (float(x.labels["le"]), x.value))
            elif x.name == HANDLER_BUCKETS:
                s.handler.setdefault(x.labels["api"], []).append(
                    (float(x.labels["le"]), x.value))
    for b in (*s.buckets.values(), *s.handler.values()):
        b.sort()
    return s


def quantile(q: float, before: list[tuple[float, float]], after: list[tuple[float, float]]
             ) -> float | None:
    """The q-quantile (seconds) of the observations between two cumulative
    bucket lists of one histogram; None when there were none. Linear
    interpolation inside the bucket; the last finite bound for +Inf."""
    prev = dict(before)
    cum = [(le, c - prev.get(le, 0.0)) for le, c in after]
    total = cum[-1][1] if cum else 0.0
    if total <= 0:
        return None
    rank = q * total
    lower, below = 0.0, 0.0
    for le, c in cum:
        if c >= rank:
            if le == float("inf"):
                return lower
            inside = c - below
            return lower + (le - lower) * ((rank - below) / inside if inside > 0 else 1.0)
        lower, below = le, c
    return lower


SERIES = ("bytes_in_per_s", "bytes_out_per_s", "records_in_per_s", "produce_per_s",
          "fetch_per_s", "other_requests_per_s", "produce_p50_ms", "produce_p99_ms",
          "fetch_p50_ms", "fetch_p99_ms")


def latency_source(a: Sample, b: Sample) -> str:
    """"handler" when both samples have the handler-time histogram (the
    latency series are then handler time), else "total"."""
    return "handler" if a.handler and b.handler else "total"


def point(a: Sample, b: Sample) -> dict[str, float | None]:
    """One chart point from two consecutive samples. The latency series
    are handler time when the broker exports it (latency_source), else
    total time."""
    dt = b.t - a.t
    handler = latency_source(a, b) == "handler"

    def rate(x: float, y: float) -> float:
        return max(0.0, y - x) / dt

    def ms(api: str, q: float) -> float | None:
        before, after = (a.handler, b.handler) if handler else (a.buckets, b.buckets)
        v = quantile(q, before.get(api, []), after.get(api, []))
        return None if v is None else v * 1000.0

    other_a = sum(v for k, v in a.requests.items() if k not in LATENCY_APIS)
    other_b = sum(v for k, v in b.requests.items() if k not in LATENCY_APIS)
    return {"bytes_in_per_s": rate(a.bytes_in, b.bytes_in),
            "bytes_out_per_s": rate(a.bytes_out, b.bytes_out),
            "records_in_per_s": rate(a.records_in, b.records_in),
            "produce_per_s": rate(a.requests.get("Produce", 0), b.requests.get("Produce", 0)),
            "fetch_per_s": rate(a.requests.get("Fetch", 0), b.requests.get("Fetch", 0)),
            "other_requests_per_s": rate(other_a, other_b),
            "produce_p50_ms": ms("Produce", 0.5), "produce_p99_ms": ms("Produce", 0.99),
            "fetch_p50_ms": ms("Fetch", 0.5), "fetch_p99_ms": ms("Fetch", 0.99)}


class MetricsHistory:
    """Samples on demand and the chart series from them. Thread-safe."""

    def __init__(self, metrics_text: Callable[[], str], keep: int = 300,
                 min_interval: float = 1.0, max_gap: float = 10.0,
                 clock: Callable[[], float] = time.time):
        self._metrics_text = metrics_text
        self._keep = keep
        self._min_interval = min_interval
        self._max_gap = max_gap
        self._clock = clock
        self._samples: list[Sample] = []
        self._lock = threading.Lock()  # guards _samples; held while sampling

    def series(self) -> dict:
        """{"interval_s", "latency" ("handler" or "total": what the latency
        series measure, from the last two samples), "t": [epoch seconds],
        name: [value or null] for each of SERIES}; takes a sample first
        when the last is older than min_interval."""
        with self._lock:
            now = self._clock()
            if not self._samples or now - self._samples[-1].t >= self._min_interval:
                text = self._metrics_text()
                if text:  # "" while the broker starts or stops
                    self._samples.append(parse_sample(text, now))
                    del self._samples[:-self._keep]
            samples = list(self._samples)
        out: dict = {"interval_s": self._min_interval, "t": [],
                     "latency": latency_source(*samples[-2:]) if len(samples) > 1 else
                     ("handler" if samples and samples[-1].handler else "total")}
        out.update({name: [] for name in SERIES})
        for a, b in zip(samples, samples[1:]):
            p = point(a, b) if b.t - a.t <= self._max_gap else dict.fromkeys(SERIES)
            out["t"].append(b.t)
            for name in SERIES:
                out[name].append(p[name])
        return out
