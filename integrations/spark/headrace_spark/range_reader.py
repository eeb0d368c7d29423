"""Executor side: read one offset range of one partition into Arrow batches.

Contract: for a given ``OffsetRange`` the output is every record with
``from_offset <= offset < until_offset`` still stored by the broker and
visible at the source's isolation level, in offset order: the same range
read twice gives the same rows, which is what makes a micro-batch
replayable. Offsets inside a range need not all be records: control batches
(transaction markers) never are, and under read_committed neither are
aborted records. The driver plans read_committed ranges below the last
stable offset, where every transaction is decided, so the gaps are fixed.
Offsets the broker no longer has (retention, DeleteRecords, a recreated
topic) are data loss: an error when ``failOnDataLoss`` is true, skipped with
a warning otherwise.

Consumers are cached per Python worker process (Spark reuses workers between
tasks) and released with ``unassign`` after each range.
"""
from __future__ import annotations

import logging
import time
from typing import Iterator

import pyarrow as pa
from confluent_kafka import (TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Consumer,
                             KafkaError, KafkaException, TopicPartition)
from pyspark.sql.types import StructType

from .client_errors import ClientErrors
from .cluster import consumer_config
from .offsets import DataLoss, OffsetRange
from .options import SourceOptions
from .retries import retrying, transient
from .schema import CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE, ArrowRows

log = logging.getLogger("headrace.spark")

ROWS_PER_BATCH = 8192
_OUT_OF_RANGE = (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET)
_TS_TYPES = {TIMESTAMP_CREATE_TIME: CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME: LOG_APPEND_TIME}
_CONSUMERS: dict[tuple, tuple[Consumer, ClientErrors]] = {}


class HeadraceDataLossError(RuntimeError):
    """Offsets a query must read are gone from the broker (failOnDataLoss=true)."""


def _consumer(opts: SourceOptions) -> tuple[tuple, Consumer, ClientErrors]:
    key = tuple(sorted(opts.kafka_conf.items())) + (opts.group_id_prefix,)
    cached = _CONSUMERS.get(key)
    if cached is None:
        errors = ClientErrors("the source's executor consumer")
        cached = _CONSUMERS[key] = (Consumer(consumer_config(opts, "executor", errors)), errors)
    return (key,) + cached


def report_loss(opts: SourceOptions, loss: DataLoss) -> None:
    """Raises (failOnDataLoss=true) or logs a warning (false)."""
    if opts.fail_on_data_loss:
        raise HeadraceDataLossError(loss.message())
    log.warning("headrace: %s", loss.message())


def read_range(opts: SourceOptions, schema: StructType,
               rng: OffsetRange) -> Iterator[pa.RecordBatch]:
    """Yields the records of ``rng`` as Arrow batches in ``schema``."""
    if rng.size == 0:
        return
    key, consumer, errors = _consumer(opts)
    errors.reset()
    ok = False
    try:
        yield from _read(consumer, errors, opts, schema, rng)
        ok = True
    finally:
        if ok:
            consumer.unassign()
        else:   # a failed or abandoned read: start the next range on a fresh consumer
            _CONSUMERS.pop(key, None)
            consumer.close()


def _bounds(consumer: Consumer, errors: ClientErrors, opts: SourceOptions,
            rng: OffsetRange) -> tuple[int, int]:
    """The part of the range the broker still has, after data-loss checks."""
    # Not assigned yet: polling only serves callbacks.
    low, high = _watermarks(consumer, errors, opts, rng, lambda: consumer.poll(0))
    begin, until = rng.from_offset, rng.until_offset
    if begin < low:
        report_loss(opts, DataLoss(rng.topic, rng.partition,
                                   f"offsets [{begin}, {min(low, until)}) were requested but the "
                                   f"earliest available offset is {low}"))
        begin = low
    if until > high:
        report_loss(opts, DataLoss(rng.topic, rng.partition,
                                   f"offsets up to {until} were planned but the partition now "
                                   f"ends at {high}"))
        until = high
    return begin, until


def _read(consumer: Consumer, errors: ClientErrors, opts: SourceOptions, schema: StructType,
          rng: OffsetRange) -> Iterator[pa.RecordBatch]:
    begin, until = _bounds(consumer, errors, opts, rng)
    if begin >= until:
        return
    consumer.assign([TopicPartition(rng.topic, rng.partition, begin)])
    rows = ArrowRows(schema)
    deadline = time.monotonic() + opts.poll_timeout_ms / 1000.0
    position = begin   # every offset below this has been read or is known absent
    while position < until:
        if time.monotonic() > deadline:
            raise TimeoutError(f"headrace: no record at offset {position} of {rng.topic}-"
                               f"{rng.partition} within kafkaConsumer.pollTimeoutMs="
                               f"{opts.poll_timeout_ms} (range {rng})")
        batch = consumer.consume(num_messages=ROWS_PER_BATCH, timeout=1.0)
        if not batch:
            errors.check()   # consume served error_cb: a refused login fails now
        for msg in batch:
            if msg.partition() != rng.partition or msg.topic() != rng.topic:
                continue   # left over from a previous assignment of this cached consumer
            err = msg.error()
            if err is not None:
                position = _on_error(consumer, errors, opts, rng, err, msg, position, until)
                continue
            offset = msg.offset()
            if offset >= until:
                # Offsets between here and the last row are not records at
                # this isolation level (control batches, aborted records).
                position = until
                break
            if offset < position:
                continue
            ts_type, ts = msg.timestamp()
            rows.add(msg.key(), msg.value(), offset, _TS_TYPES.get(ts_type, NO_TIMESTAMP_TYPE),
                     ts if ts_type in _TS_TYPES else None, msg.headers())
            position = offset + 1
        if len(rows) >= ROWS_PER_BATCH:
            yield rows.take(rng.topic, rng.partition)
    if len(rows):
        yield rows.take(rng.topic, rng.partition)


def _on_error(consumer: Consumer, errors: ClientErrors, opts: SourceOptions, rng: OffsetRange,
              err: KafkaError, msg, position: int, until: int) -> int:
    """Handles an error event while reading; returns the new position."""
    code = err.code()
    if code == KafkaError._PARTITION_EOF:
        # Reached the end of the log: offsets below it that never came back
        # were not stored (transaction markers, compaction) - nothing to read.
        return max(position, min(msg.offset(), until)) if msg.offset() >= position else position
    if code in _OUT_OF_RANGE:
        low, _ = _watermarks(consumer, errors, opts, rng)   # assigned: no poll here
        if low <= position:
            raise KafkaException(err)
        report_loss(opts, DataLoss(rng.topic, rng.partition,
                                   f"offsets [{position}, {min(low, until)}) were deleted while "
                                   f"being read; the earliest available offset is {low}"))
        consumer.assign([TopicPartition(rng.topic, rng.partition, low)])
        return min(low, until)
    if not transient(err):
        raise KafkaException(err)
    return position   # librdkafka refetches from the partition's new leader


def _watermarks(consumer: Consumer, errors: ClientErrors, opts: SourceOptions, rng: OffsetRange,
                serve=None) -> tuple[int, int]:
    tp = TopicPartition(rng.topic, rng.partition)
    return retrying(lambda t: consumer.get_watermark_offsets(tp, timeout=t, cached=False),
                    f"watermarks of {rng.topic}-{rng.partition}", opts.poll_timeout_ms,
                    errors, serve)
