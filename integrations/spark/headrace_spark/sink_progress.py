"""A sink's progress, kept in the broker: one transactional.id and one
consumer group per (sink, Spark partition).

The exactly-once and at-most-once sinks record which micro-batches each
Spark partition of a sink has written (or claimed) as the committed offset of
the group ``<prefix>-<sinkId>-<partition>`` on partition 0 of an existing
topic (the output topic unless ``progressTopic`` says otherwise; the broker
refuses offsets of unknown topic-partitions). The offset is the next batch
id to write: ``batchId + 1`` once batch ``batchId`` is done (batch writes are
batch 0). The offset's metadata is a small JSON summary (batch, rows,
attempt, state, running totals) that :func:`sink_report` reads back.

Protocol of one task attempt for (sink S, partition P, batch B), with
transactional.id T = ``<prefix>-<S>-<P>``:

1. a new transactional producer for T calls ``init_transactions``: the
   broker completes (commits or aborts) any transaction of an earlier
   incarnation of T and fences it, so it can no longer produce or commit;
2. THEN it reads the committed offset of T's group with a read_committed
   consumer (OffsetFetch with require_stable: no pending commit is seen);
3. if that offset is > B the batch is already written (or claimed): the
   attempt writes nothing; else it writes the batch's rows and the offset
   B + 1 in ONE transaction (exactly-once), or the offset alone (an
   at-most-once claim), and commits.

Why no batch is written twice: let A commit B's transaction after its init
at time i(A). A commit succeeds only if no other init of T happened after
i(A) (that init would have fenced A). So every other attempt X either
initialised before i(A) - then A's init fenced X and completed (committed
or aborted) whatever transaction X had, before A's read at step 2; if X had
committed B, A read B + 1 and skipped - or initialised after A's commit,
and then X's read sees B + 1 and X skips. (An X initialised between i(A)
and A's commit would have fenced A.) Readers with
isolation.level=read_committed see the rows of committed transactions only;
aborted or fenced attempts leave nothing visible.
"""
from __future__ import annotations

import json
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Optional

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from .client_errors import ClientErrors
from .options import DEFAULT_TRANSACTIONAL_ID_PREFIX, SinkOptions
from .retries import retrying

PROGRESS_PARTITION = 0
_QUIET = logging.getLogger("headrace.spark.librdkafka")
_TIMEOUT_S = 60.0


def progress_name(prefix: str, sink_id: str, partition: int) -> str:
    """The transactional.id and the group id of one (sink, Spark partition)."""
    return f"{prefix}-{sink_id}-{partition}"


@dataclass
class Progress:
    """What the group holds: ``next_batch`` (0: nothing yet) and its metadata."""

    next_batch: int
    meta: dict = field(default_factory=dict)

    def done(self, batch_id: int) -> bool:
        return self.next_batch > batch_id

    def totals(self) -> dict:
        """Running totals carried from batch to batch in the metadata."""
        return {k: int(self.meta.get(k, 0))
                for k in ("total_rows", "total_written", "total_dropped")}


def _client_conf(opts: SinkOptions) -> dict:
    """The user's connection settings (security etc.) without producer-only keys."""
    conf = {k: v for k, v in opts.kafka_conf.items()
            if k in ("bootstrap.servers", "client.id") or k.startswith(("security.", "ssl.",
                                                                         "sasl."))}
    conf.update({"logger": _QUIET, "error_cb": lambda err: None})
    return conf


def _progress_consumer(opts: SinkOptions, group: str) -> Consumer:
    """A consumer of ``group`` that never joins it: it reads the group's
    offsets stable (read_committed makes librdkafka send OffsetFetch with
    require_stable) and lends its group metadata to transactions."""
    conf = _client_conf(opts)
    conf.update({"group.id": group, "isolation.level": "read_committed",
                 "enable.auto.commit": False})
    return Consumer(conf)


def _read_progress(consumer: Consumer, topic: str) -> Progress:
    """The group's committed progress. Retried (``retries``) for up to 60 s
    on transient errors: a group coordinator killed mid-stream makes the
    first OffsetFetch after it answer NOT_COORDINATOR, which librdkafka
    returns instead of asking the new coordinator (seen in
    test_spark_failover.py's coordinator kills, where it failed the query).
    Reading again is harmless: the read changes nothing."""
    def fetch(timeout_s: float) -> TopicPartition:
        tp, = consumer.committed([TopicPartition(topic, PROGRESS_PARTITION)], timeout=timeout_s)
        if tp.error is not None:
            raise KafkaException(tp.error)
        return tp

    tp = retrying(fetch, "reading the sink's progress", int(_TIMEOUT_S * 1000))
    if tp.offset < 0:
        return Progress(0)
    try:
        meta = json.loads(tp.metadata) if tp.metadata else {}
    except ValueError:
        meta = {}
    return Progress(tp.offset, meta if isinstance(meta, dict) else {})


def _init_transactions(producer: Producer, errors: ClientErrors,
                       timeout_s: float = 3 * _TIMEOUT_S) -> None:
    """init_transactions, resumed after each retriable time-out (librdkafka
    allows calling it again to resume) until ``timeout_s``. It waits 1 s
    at first, doubling to 60 s, and between waits serves the producer's
    callbacks: a refused login (reported only to ``error_cb``) fails at once
    with its reason instead of a time-out."""
    deadline = time.monotonic() + timeout_s
    wait = 1.0
    while True:
        try:
            producer.init_transactions(max(0.1, min(wait, deadline - time.monotonic())))
            return
        except KafkaException as e:
            errors.check(lambda: producer.poll(0))
            if time.monotonic() >= deadline or not e.args[0].retriable():
                raise
        wait = min(wait * 2, _TIMEOUT_S)


class ProgressTransaction:
    """One task attempt's fenced transactional producer for (sink, partition).

    Contract: construct (init_transactions, fencing every earlier attempt),
    then ``progress()``, then any number of ``begin()`` ... ``commit(...)``
    rounds, then ``close()``. On any exception call ``abort()`` (it never
    raises) and re-raise: Spark retries the task, whose new producer fences
    this one."""

    def __init__(self, opts: SinkOptions, sink_id: str, partition: int, producer_conf: dict):
        self.topic = opts.progress_topic
        self.name = progress_name(opts.transactional_id_prefix, sink_id, partition)
        conf = dict(producer_conf)
        conf["transactional.id"] = self.name
        # librdkafka's fatal and authentication errors, with their reasons
        self._errors = ClientErrors(f"the sink's producer {self.name}")
        conf["error_cb"] = self._errors
        self._timeout_ms = int(conf.get("transaction.timeout.ms", 60000))
        self._began = time.monotonic()
        self.producer = Producer(conf)
        self._consumer: Optional[Consumer] = None
        self._open = False
        try:
            _init_transactions(self.producer, self._errors)   # step 1: fence
            self._consumer = _progress_consumer(opts, self.name)
        except BaseException:
            self.close()
            raise

    def progress(self) -> Progress:
        """Step 2: the progress as committed; REQUIRES: called after init."""
        return _read_progress(self._consumer, self.topic)

    def begin(self) -> None:
        self._began = time.monotonic()
        self.producer.begin_transaction()
        self._open = True

    def commit(self, batch_id: int, meta: dict) -> None:
        """Adds the progress offset ``batch_id + 1`` with ``meta`` to the open
        transaction and commits it (with every record produced since
        ``begin``). Raises KafkaException if fenced or failed."""
        offset = TopicPartition(self.topic, PROGRESS_PARTITION, batch_id + 1,
                                metadata=json.dumps(meta, separators=(",", ":")))
        self.producer.send_offsets_to_transaction(
            [offset], self._consumer.consumer_group_metadata(), _TIMEOUT_S)
        self.producer.commit_transaction(_TIMEOUT_S)
        self._open = False

    def explain(self, exc: BaseException) -> BaseException:
        """``exc``, or a KafkaException that says why librdkafka failed
        (``client_errors``): its fatal error's reason (fencing,
        authorization, ...) instead of "Local: Fatal error", an
        authentication failure, and a transaction that outlived
        ``transaction.timeout.ms`` (the broker aborted it)."""
        if not isinstance(exc, KafkaException) or self.producer is None:
            return exc
        producer = self.producer
        try:
            self._errors.check(lambda: producer.poll(0))   # serves pending error events
        except KafkaException as auth:
            return auth
        extra = ()
        ran_ms = (time.monotonic() - self._began) * 1000
        if ran_ms > self._timeout_ms:
            extra = (f"the task ran {ran_ms / 1000:.0f} s, longer than "
                     f"kafka.transaction.timeout.ms={self._timeout_ms}, so the broker aborted "
                     f"its transaction",)
        return self._errors.explain(exc, extra, prefix=f"{self.name}: ")

    @contextmanager
    def aborting_on_error(self) -> Iterator["ProgressTransaction"]:
        """The body's exceptions abort and close this transaction (``abort``),
        then propagate; a KafkaException re-raised as ``explain`` says it,
        chained to the original."""
        try:
            yield self
        except BaseException as e:
            why = self.explain(e)
            self.abort()
            if why is not e:
                raise why from e
            raise

    def abort_open(self) -> None:
        """Aborts the open transaction and keeps the producer for another
        ``begin`` ... ``commit``; raises KafkaException if it cannot (fenced,
        fatal error)."""
        self.producer.abort_transaction(_TIMEOUT_S)
        self._open = False

    def abort(self) -> None:
        """Best effort: abort an open transaction (a fenced or dead producer
        cannot; the broker aborts it at the next init of this
        transactional.id or at its timeout), then close. Never raises."""
        if self._open and self.producer is not None:
            try:
                self.producer.flush(5)   # abort drops unsent records; let them settle first
                self.producer.abort_transaction(10)
            except Exception:   # noqa: BLE001 - the caller re-raises the original error
                pass
            self._open = False
        self.close()

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        self.producer = None


def sink_report(bootstrap_servers: str, sink_id: str, topic: str, partitions: int,
                transactional_id_prefix: str = DEFAULT_TRANSACTIONAL_ID_PREFIX,
                **kafka_conf: str) -> dict:
    """What an exactly-once or at-most-once sink has done, read from the
    broker: per Spark partition the last batch's summary (``batch``,
    ``rows``, ``written``, ``dropped``, ``state``, ``attempt``) and running
    totals; plus the sums over ``partitions`` partitions. ``sink_id`` is the
    streaming query's id (``query.id``, or the ``sinkId`` option) or the
    batch ``jobId``; ``topic`` the sink's progress topic (its ``topic``
    option unless ``progressTopic`` was given)."""
    opts = SinkOptions(kafka_conf={"bootstrap.servers": bootstrap_servers, **kafka_conf},
                       topic=topic, guarantee="exactly-once", progress_topic=topic,
                       transactional_id_prefix=transactional_id_prefix)
    per_partition = {}
    for p in range(partitions):
        consumer = _progress_consumer(opts, progress_name(transactional_id_prefix, sink_id, p))
        try:
            prog = _read_progress(consumer, topic)
        finally:
            consumer.close()
        if prog.next_batch:
            per_partition[p] = dict(prog.meta, next_batch=prog.next_batch)
    sums = {k: sum(int(m.get(k, 0)) for m in per_partition.values())
            for k in ("total_rows", "total_written", "total_dropped")}
    return {"sink_id": sink_id, "partitions": per_partition, **sums}
