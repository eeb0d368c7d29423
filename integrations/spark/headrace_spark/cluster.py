"""Driver-side questions to the cluster: which partitions, which offsets.

One confluent-kafka Consumer (never subscribed, never committing) answers
metadata, watermark and offsets-for-times requests. It is created on first
use and is not picklable: holders drop it in ``__getstate__``.
"""
from __future__ import annotations

import logging
import re
import uuid
from typing import Iterable

from confluent_kafka import Consumer, KafkaException, TopicPartition

from .client_errors import ClientErrors
from .offsets import EARLIEST, LATEST, OffsetSpec, OffsetSpecError, Positions
from .options import SourceOptions, TopicSelection
from .retries import retrying

log = logging.getLogger("headrace.spark")
_QUIET = logging.getLogger("headrace.spark.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False



def consumer_config(opts: SourceOptions, purpose: str,
                    errors: ClientErrors | None = None) -> dict:
    """librdkafka settings for a consumer that only assigns and seeks: no
    group membership, no commits, and out-of-range fetches reported as errors
    (the source decides what data loss means). ``opts.kafka_conf`` always
    carries ``isolation.level``: under read_committed the "latest" offsets the
    driver plans with are last stable offsets, so every planned range holds
    only decided transactions and reads the same records every time.
    ``errors`` collects what librdkafka reports only to ``error_cb``
    (authentication failures: see ``client_errors``)."""
    conf = {"group.id": f"{opts.group_id_prefix}-{purpose}-{uuid.uuid4()}",
            "enable.auto.commit": False, "enable.auto.offset.store": False,
            "auto.offset.reset": "error", "enable.partition.eof": True,
            "logger": _QUIET, "error_cb": errors if errors is not None else (lambda err: None)}
    conf.update(opts.kafka_conf)
    return conf


class ClusterView:
    """Answers the driver's questions for one source. Not thread-safe."""

    def __init__(self, opts: SourceOptions):
        self._opts = opts
        self._consumer: Consumer | None = None
        self._committer: Consumer | None = None
        self._errors = ClientErrors("the source's driver consumer")

    def _client(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer(consumer_config(self._opts, "driver", self._errors))
        return self._consumer

    def _retrying(self, call, what: str):
        """``call(client, timeout_s)`` retried (``retries``); an
        authentication failure fails it at once, with its reason."""
        client = self._client()
        # Never assigned: poll only serves callbacks (error_cb).
        return retrying(lambda t: call(client, t), what, self._opts.poll_timeout_ms,
                        self._errors, lambda: client.poll(0))

    def close(self) -> None:
        for name in ("_consumer", "_committer"):
            client = getattr(self, name)
            setattr(self, name, None)
            if client is not None:
                client.close()

    def partitions(self) -> list[tuple[str, int]]:
        """The partitions the topic selection names now, sorted. Topics that
        do not exist (yet) contribute nothing; 'assign' is taken as given."""
        sel: TopicSelection = self._opts.topics
        if sel.strategy == "assign":
            return list(sel.value)
        md = self._retrying(lambda c, t: c.list_topics(timeout=t), "listing topics")
        if sel.strategy == "subscribe":
            names: Iterable[str] = [t for t in sel.value if t in md.topics]
        else:
            pattern = re.compile(sel.value)
            names = [t for t in md.topics if pattern.fullmatch(t) and not t.startswith("__")]
        out = []
        for name in names:
            topic = md.topics[name]
            if topic.error is None:
                out.extend((name, p) for p in topic.partitions)
        return sorted(out)

    def watermarks(self, partitions: Iterable[tuple[str, int]]
                   ) -> dict[tuple[str, int], tuple[int, int]]:
        """(log start offset, high watermark) of each partition, asked now
        (each retried through a leader failover, see ``retries``)."""
        out = {}
        for topic, part in partitions:
            tp = TopicPartition(topic, part)
            out[(topic, part)] = self._retrying(
                lambda c, t: c.get_watermark_offsets(tp, timeout=t, cached=False),
                f"watermarks of {topic}-{part}")
        return out

    def latest(self, partitions: Iterable[tuple[str, int]]) -> Positions:
        return {tp: high for tp, (_, high) in self.watermarks(partitions).items()}

    def resolve(self, spec: OffsetSpec, partitions: list[tuple[str, int]], name: str) -> Positions:
        """Turns 'earliest' / 'latest' / per-partition JSON into concrete
        offsets for ``partitions``. JSON must name every partition (as in
        Spark); -2 and -1 in it mean earliest and latest."""
        if isinstance(spec, dict):
            missing = sorted(set(partitions) - set(spec))
            if missing:
                raise OffsetSpecError(
                    f"If {name} contains specific offsets, you must specify all "
                    f"TopicPartitions; missing {missing}. Use -1 for latest, -2 for earliest.")
            wanted = {tp: spec[tp] for tp in partitions}
        else:
            wanted = {tp: EARLIEST if spec == "earliest" else LATEST for tp in partitions}
        marks = self.watermarks(tp for tp, off in wanted.items() if off in (EARLIEST, LATEST))
        out = {}
        for tp, off in wanted.items():
            if off == EARLIEST:
                off = marks[tp][0]
            elif off == LATEST:
                off = marks[tp][1]
            out[tp] = off
        return out

    def offsets_for_times(self, stamps, partitions: list[tuple[str, int]],
                          strategy: str) -> Positions:
        """The first offset whose timestamp is >= the given ms, per partition.
        No such record: strategy 'latest' takes the high watermark, 'error' fails."""
        if isinstance(stamps, int):
            stamps = {tp: stamps for tp in partitions}
        missing = sorted(set(partitions) - set(stamps))
        if missing:
            raise OffsetSpecError(f"startingOffsetsByTimestamp must name every partition; "
                                  f"missing {missing}")
        asked = [TopicPartition(t, p, stamps[(t, p)]) for t, p in partitions]
        try:
            found = self._retrying(lambda c, t: c.offsets_for_times(asked, timeout=t),
                                   "offsets for timestamps")
        except KafkaException as e:
            raise OffsetSpecError(f"offsets for timestamps failed: {e}") from e
        out = {}
        for tp in found:
            key = (tp.topic, tp.partition)
            if tp.offset >= 0:
                out[key] = tp.offset
            elif strategy == "latest":
                out[key] = self.latest([key])[key]
            else:
                raise OffsetSpecError(
                    f"No record in {tp.topic}-{tp.partition} has a timestamp >= "
                    f"{stamps[key]} ms; set 'startingOffsetsByTimestampStrategy' to 'latest' to "
                    f"start from the end instead")
        return out

    def starting_positions(self, partitions: list[tuple[str, int]]) -> Positions:
        """Where a query starts: timestamps (if given) win over startingOffsets."""
        if self._opts.starting_timestamps is not None:
            return self.offsets_for_times(self._opts.starting_timestamps, partitions,
                                          self._opts.timestamp_strategy)
        return self.resolve(self._opts.starting, partitions, "startingOffsets")

    def commit_group(self, group_id: str, positions: Positions) -> None:
        """Stores ``positions`` as ``group_id``'s committed offsets (a
        standalone commit, no group membership). Failures are logged only:
        these offsets are for monitoring, never read back by the source."""
        if self._committer is None:
            conf = consumer_config(self._opts, "commit")
            conf["group.id"] = group_id
            self._committer = Consumer(conf)
        try:
            self._committer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in positions.items()],
                asynchronous=False)
        except KafkaException as e:
            log.warning("headrace: committing offsets of group %s failed: %s", group_id, e)
