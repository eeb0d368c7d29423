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

How (docs/spark.md, "How the source reads"): the records move in bulk.
Fetch requests (headrace.fetch_wire, the project's own wire client with the
``kafka.*`` TLS/SASL settings) go to the partition's leader, and each
answer's records, one buffer per answer, are decoded in C++
(``headrace._core.RecordColumns``, without the GIL) straight into Arrow
columns that pyarrow takes over without a copy: no Python object per
record. With ``valueFormat`` each batch's value column is then decoded
(``value_formats``). The range's bounds (the data-loss checks) are still asked through a
librdkafka consumer, whose error callback names a refused login clearly
(``client_errors``). Consumers and fetchers are cached per Python worker
process (Spark reuses workers between tasks).
"""
from __future__ import annotations

import logging
import time
from typing import Iterator

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from headrace._core import RecordColumns
from headrace.errors import HeadraceError
from headrace.fetch_wire import (LEADER_ERRORS, READ_COMMITTED, READ_UNCOMMITTED,
                                 RETRIABLE_ERRORS, PartitionFetcher)
from headrace.wire_codec import WireError, WireSecurityError, error_name

from .value_formats import batch_decoder, raw_schema
from .client_errors import ClientErrors
from .cluster import consumer_config
from .offsets import DataLoss, OffsetRange
from .options import SourceOptions
from .retries import FIRST_BACKOFF_S, MAX_BACKOFF_S, retrying

log = logging.getLogger("headrace.spark")

# An Arrow batch is cut at whichever comes first (Spark passes the batches
# on as they are); a Fetch asks for up to FETCH_BYTES of the partition.
ROWS_PER_BATCH = 65536
BYTES_PER_BATCH = 16 << 20
FETCH_BYTES = 8 << 20
OFFSET_OUT_OF_RANGE = 1
_CONSUMERS: dict[tuple, tuple[Consumer, ClientErrors]] = {}
_FETCHERS: dict[tuple, PartitionFetcher] = {}
_MAX_FETCHERS = 64   # open leader connections kept per worker


class HeadraceDataLossError(RuntimeError):
    """Offsets a query must read are gone from the broker (failOnDataLoss=true)."""


def _conf_key(opts: SourceOptions) -> tuple:
    return tuple(sorted(opts.kafka_conf.items())) + (opts.group_id_prefix,)


def _consumer(opts: SourceOptions) -> tuple[tuple, Consumer, ClientErrors]:
    key = _conf_key(opts)
    cached = _CONSUMERS.get(key)
    if cached is None:
        errors = ClientErrors("the source's executor consumer")
        cached = _CONSUMERS[key] = (Consumer(consumer_config(opts, "executor", errors)), errors)
    return (key,) + cached


def _fetcher(opts: SourceOptions, rng: OffsetRange) -> PartitionFetcher:
    key = _conf_key(opts) + (rng.topic, rng.partition)
    fetcher = _FETCHERS.get(key)
    if fetcher is None:
        while len(_FETCHERS) >= _MAX_FETCHERS:
            _FETCHERS.pop(next(iter(_FETCHERS))).close()
        fetcher = _FETCHERS[key] = PartitionFetcher(
            opts.kafka_conf, rng.topic, rng.partition,
            timeout_s=min(30.0, opts.poll_timeout_ms / 1000.0))
    return fetcher


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
        if not ok:   # a failed or abandoned read: start the next range on fresh clients
            _CONSUMERS.pop(key, None)
            consumer.close()
            fetcher = _FETCHERS.pop(key + (rng.topic, rng.partition), None)
            if fetcher is not None:
                fetcher.close()


def _bounds(consumer: Consumer, errors: ClientErrors, opts: SourceOptions,
            rng: OffsetRange) -> tuple[int, int]:
    """The part of the range the broker still has, after data-loss checks."""
    low, high = _watermarks(consumer, errors, opts, rng)
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
    fetcher = _fetcher(opts, rng)
    arrow_schema = to_arrow_schema(raw_schema(schema), timezone="UTC")
    finish = batch_decoder((opts.value_format, opts.key_format), schema, rng.topic,
                           rng.partition)
    cols = RecordColumns(rng.topic, rng.partition, "headers" in schema.fieldNames())
    committed = opts.isolation_level == "read_committed"
    isolation = READ_COMMITTED if committed else READ_UNCOMMITTED
    position = begin   # every offset below this has been read or is known absent
    deadline = time.monotonic() + opts.poll_timeout_ms / 1000.0
    backoff = FIRST_BACKOFF_S
    last_error = ""   # why the last try failed, for the time-out's message
    while position < until:
        if time.monotonic() > deadline:
            raise TimeoutError(f"headrace: no record at offset {position} of {rng.topic}-"
                               f"{rng.partition} within kafkaConsumer.pollTimeoutMs="
                               f"{opts.poll_timeout_ms} (range {rng})" +
                               (f"; last error: {last_error}" if last_error else ""))
        try:
            part = fetcher.fetch(position, FETCH_BYTES, isolation)
        except WireSecurityError as e:
            raise WireSecurityError(f"headrace: reading {rng.topic}-{rng.partition}: {e} (check "
                                    f"the kafka.security.protocol, kafka.sasl.* and kafka.ssl.* "
                                    f"options)") from None
        except WireError as e:   # leader gone or unreachable: ask for it again
            last_error = str(e)
            log.info("headrace: fetching %s-%s failed (%s); retrying in %.1f s", rng.topic,
                     rng.partition, e, backoff)
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)
            continue
        code = part.error_code
        if code == OFFSET_OUT_OF_RANGE:
            position = _out_of_range(consumer, errors, opts, rng, position, until)
            continue
        if code in RETRIABLE_ERRORS:
            last_error = error_name(code)
            if code in LEADER_ERRORS:
                fetcher.forget_leader()
            log.info("headrace: fetching %s-%s: %s; retrying in %.1f s", rng.topic,
                     rng.partition, error_name(code), backoff)
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)
            continue
        if code:
            raise KafkaException(KafkaError(code, f"headrace: fetching {rng.topic}-"
                                                  f"{rng.partition} at offset {position}: "
                                                  f"{error_name(code)}"))
        try:
            next_offset, _ = cols.append(part.records, position, until, committed, part.aborted)
        except HeadraceError as e:
            raise type(e)(f"headrace: {rng.topic}-{rng.partition} at offset {position}: "
                          f"{e}") from None
        if next_offset > position:
            # Offsets between here and the last row that are not rows are
            # not records at this isolation level (control batches,
            # aborted transactions, compacted away).
            position = next_offset
            deadline = time.monotonic() + opts.poll_timeout_ms / 1000.0
            backoff = FIRST_BACKOFF_S
        if cols.num_rows >= ROWS_PER_BATCH or cols.num_bytes >= BYTES_PER_BATCH:
            yield finish(cols.take(arrow_schema))
    if cols.num_rows:
        yield finish(cols.take(arrow_schema))


def _out_of_range(consumer: Consumer, errors: ClientErrors, opts: SourceOptions,
                  rng: OffsetRange, position: int, until: int) -> int:
    """OFFSET_OUT_OF_RANGE at ``position``: the offsets were deleted while
    being read (data loss, reported) or the log was truncated below them
    (an error); returns the new position."""
    low, _ = _watermarks(consumer, errors, opts, rng)
    if low <= position:
        raise KafkaException(KafkaError(
            KafkaError.OFFSET_OUT_OF_RANGE,
            f"headrace: fetching {rng.topic}-{rng.partition} at offset {position}: "
            f"OFFSET_OUT_OF_RANGE (the log starts at {low})"))
    report_loss(opts, DataLoss(rng.topic, rng.partition,
                               f"offsets [{position}, {min(low, until)}) were deleted while "
                               f"being read; the earliest available offset is {low}"))
    return min(low, until)


def _watermarks(consumer: Consumer, errors: ClientErrors, opts: SourceOptions,
                rng: OffsetRange) -> tuple[int, int]:
    tp = TopicPartition(rng.topic, rng.partition)

    def serve() -> None:
        """After a failed try: serve the callbacks (error_cb; the consumer
        is never assigned, so polling does nothing else) and refresh the
        topic's metadata. librdkafka refreshes only the topics a client
        uses, and this consumer never assigns one: without this its cache
        would keep a dead leader (``_UNKNOWN_PARTITION``) for minutes."""
        consumer.poll(0)
        consumer.list_topics(rng.topic, timeout=1.0)

    return retrying(lambda t: consumer.get_watermark_offsets(tp, timeout=t, cached=False),
                    f"watermarks of {rng.topic}-{rng.partition}", opts.poll_timeout_ms,
                    errors, serve)
