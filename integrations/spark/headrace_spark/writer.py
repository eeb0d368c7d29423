"""``df.write.format("headrace")`` and ``writeStream.format("headrace")``.

Input columns as in Spark's Kafka sink: ``value`` (string or binary,
required), optional ``key`` (string or binary), ``topic`` (string; the
``topic`` option overrides it), ``partition`` (int; absent or null lets the
producer's murmur2 partitioner choose) and ``headers``
(array<struct<key: string, value: binary>>).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterator, List, Optional

from confluent_kafka import KafkaException, Producer
from pyspark import TaskContext
from pyspark.sql import Row
from pyspark.sql.datasource import (DataSourceStreamWriter, DataSourceWriter,
                                    WriterCommitMessage)
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, StringType, StructType)

from .delivery import AttemptLedger, check_guarantee_built, producer_config
from .options import HeadraceOptionError, SinkOptions

log = logging.getLogger("headrace.spark")
_PRODUCERS: dict[tuple, Producer] = {}


@dataclass
class SinkReport(WriterCommitMessage):
    """What one write task did, sent back to the driver's commit()."""

    partition_id: int
    attempt: int
    written: int = 0    # acknowledged by the broker
    failed: int = 0     # not acknowledged (at-most-once only; at-least-once raises)
    skipped: int = 0    # not sent: this (batch, partition) was already attempted


@dataclass(frozen=True)
class SinkColumns:
    """Positions of the sink's columns in the input rows (None: absent)."""

    value: int
    key: Optional[int]
    topic: Optional[int]
    partition: Optional[int]
    headers: Optional[int]

    @staticmethod
    def of(schema: StructType, opts: SinkOptions) -> "SinkColumns":
        names = schema.fieldNames()
        types = {f.name: f.dataType for f in schema.fields}
        if "value" not in names:
            raise HeadraceOptionError("Required attribute 'value' not found")
        checks = {"value": (StringType, BinaryType), "key": (StringType, BinaryType),
                  "topic": (StringType,), "partition": (IntegerType,), "headers": (ArrayType,)}
        for name, allowed in checks.items():
            if name in types and not isinstance(types[name], allowed):
                raise HeadraceOptionError(f"{name} attribute type must be one of "
                                          f"{[t.__name__ for t in allowed]}, got {types[name]}")
        if opts.topic is None and "topic" not in names:
            raise HeadraceOptionError("topic option required when no 'topic' attribute is "
                                      "present. Use the topic option for setting a topic.")
        pos = {n: names.index(n) if n in names else None for n in checks}
        return SinkColumns(**pos)


def _bytes(v) -> Optional[bytes]:
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    return bytes(v)


def _producer(opts: SinkOptions) -> tuple[tuple, Producer]:
    """One producer per settings per Python worker (Spark reuses workers)."""
    key = (opts.guarantee,) + tuple(sorted(opts.kafka_conf.items()))
    producer = _PRODUCERS.get(key)
    if producer is None:
        producer = _PRODUCERS[key] = Producer(producer_config(opts))
    return key, producer


def produce_rows(opts: SinkOptions, cols: SinkColumns, rows: Iterator[Row],
                 report: SinkReport) -> SinkReport:
    """Sends every row, flushes, and counts acknowledgements. at-least-once:
    raises on the first unacknowledged record (the task fails and Spark
    retries it). at-most-once: counts failures and goes on."""
    key, producer = _producer(opts)
    errors: list = []

    def on_delivery(err, _msg):
        if err is None:
            report.written += 1
        else:
            errors.append(err)

    try:
        for row in rows:
            _send(producer, opts, cols, row, on_delivery)
            if errors and opts.guarantee == "at-least-once":
                raise KafkaException(errors[0])
        left = producer.flush(opts.flush_timeout_s)
        if opts.guarantee == "at-least-once" and (errors or left):
            raise KafkaException(errors[0] if errors else
                                 f"{left} records not acknowledged in {opts.flush_timeout_s}s")
    except BaseException:
        _PRODUCERS.pop(key, None)   # its queue may hold records of this failed task
        producer.purge()
        raise
    report.failed = len(errors) + left
    if report.failed:
        log.warning("headrace: %d records dropped (at-most-once): %s", report.failed,
                    errors[0] if errors else "not acknowledged in time")
    return report


def _send(producer: Producer, opts: SinkOptions, cols: SinkColumns, row: Row, on_delivery) -> None:
    topic = opts.topic or row[cols.topic]
    if topic is None:
        raise HeadraceOptionError("Null topic present in the data. Use the topic option for "
                                  "setting a topic.")
    kwargs = {"value": _bytes(row[cols.value]), "on_delivery": on_delivery}
    if cols.key is not None:
        kwargs["key"] = _bytes(row[cols.key])
    if cols.partition is not None and row[cols.partition] is not None:
        kwargs["partition"] = int(row[cols.partition])
    if cols.headers is not None and row[cols.headers]:
        kwargs["headers"] = [(h["key"], _bytes(h["value"])) for h in row[cols.headers]]
    while True:
        try:
            producer.produce(topic, **kwargs)
            break
        except BufferError:   # local queue full: let deliveries drain
            producer.poll(0.1)
    producer.poll(0)


def _log_totals(what: str, messages: List[Optional[WriterCommitMessage]]) -> None:
    reports = [m for m in messages if isinstance(m, SinkReport)]
    log.info("headrace: %s: %d written, %d dropped, %d skipped by %d tasks", what,
             sum(r.written for r in reports), sum(r.failed for r in reports),
             sum(r.skipped for r in reports), len(reports))


class HeadraceBatchWriter(DataSourceWriter):
    """A batch write. at-most-once: only a task's first attempt sends."""

    def __init__(self, opts: SinkOptions, schema: StructType):
        check_guarantee_built(opts, streaming=False)
        producer_config(opts)   # validate now, on the driver
        self.opts = opts
        self.cols = SinkColumns.of(schema, opts)

    def write(self, iterator: Iterator[Row]) -> SinkReport:
        ctx = TaskContext.get()
        report = SinkReport(ctx.partitionId(), ctx.attemptNumber())
        if self.opts.guarantee == "at-most-once" and ctx.attemptNumber() > 0:
            report.skipped = sum(1 for _ in iterator)
            return report
        return produce_rows(self.opts, self.cols, iterator, report)

    def commit(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        _log_totals("batch write committed", messages)

    def abort(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        # Records already acknowledged stay in the topic (no transactions yet).
        _log_totals("batch write aborted", messages)


class HeadraceStreamWriter(DataSourceStreamWriter):
    """A streaming write; the guarantee covers task retries and micro-batches
    replayed after a restart (see ``delivery``)."""

    def __init__(self, opts: SinkOptions, schema: StructType):
        check_guarantee_built(opts, streaming=True)
        producer_config(opts)
        self.opts = opts
        self.cols = SinkColumns.of(schema, opts)

    def write(self, iterator: Iterator[Row]) -> SinkReport:
        ctx = TaskContext.get()
        report = SinkReport(ctx.partitionId(), ctx.attemptNumber())
        if self.opts.guarantee == "at-most-once":
            batch_id = int(ctx.getLocalProperty("streaming.sql.batchId"))
            if not AttemptLedger(self.opts.attempts_dir).claim(batch_id, ctx.partitionId()):
                report.skipped = sum(1 for _ in iterator)
                return report
        return produce_rows(self.opts, self.cols, iterator, report)

    def commit(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
        _log_totals(f"micro-batch {batchId} committed", messages)
        if self.opts.guarantee == "at-most-once":
            AttemptLedger(self.opts.attempts_dir).forget_before(batchId)

    def abort(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
        _log_totals(f"micro-batch {batchId} aborted", messages)
