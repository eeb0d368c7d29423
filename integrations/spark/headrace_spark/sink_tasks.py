"""One write task per delivery guarantee: what an executor does with the
rows of one (batch, Spark partition). See ``delivery`` for the modes and
``sink_progress`` for the fenced progress protocol and why it is safe."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterator

from confluent_kafka import KafkaException, Producer
from pyspark.sql import Row

from .delivery import claim_producer_config, producer_config
from .options import SinkOptions
from .sink_progress import ProgressTransaction
from .sink_rows import SinkColumns, SinkReport, send_row

log = logging.getLogger("headrace.spark")
# Plain (non-transactional) producers, one per settings per Python worker
# (Spark reuses workers).
_PRODUCERS: dict[tuple, Producer] = {}


@dataclass(frozen=True)
class TaskIdentity:
    """Who is writing: the sink (query id, sinkId or jobId), the micro-batch
    (0 for a batch write), the Spark partition and this task's attempt."""

    sink_id: str
    batch_id: int
    partition: int
    attempt: int

    def report(self) -> SinkReport:
        return SinkReport(self.partition, self.attempt, self.batch_id)


def _plain_producer(opts: SinkOptions) -> tuple[tuple, Producer]:
    key = (opts.guarantee,) + tuple(sorted(opts.kafka_conf.items()))
    producer = _PRODUCERS.get(key)
    if producer is None:
        producer = _PRODUCERS[key] = Producer(producer_config(opts))
    return key, producer


def _counting_deliveries(report: SinkReport, errors: list):
    """A delivery callback: counts acknowledged records in ``report.written``
    and keeps the errors of the others in ``errors``."""
    def on_delivery(err, _msg):
        if err is None:
            report.written += 1
        else:
            errors.append(err)
    return on_delivery


def write_at_least_once(opts: SinkOptions, cols: SinkColumns, rows: Iterator[Row],
                        task: TaskIdentity) -> SinkReport:
    """Sends every row, flushes, and raises on the first unacknowledged
    record (the task fails and Spark retries it: duplicates, no loss)."""
    report = task.report()
    key, producer = _plain_producer(opts)
    errors: list = []
    on_delivery = _counting_deliveries(report, errors)

    try:
        for row in rows:
            send_row(producer, opts, cols, row, on_delivery)
            if errors:
                raise KafkaException(errors[0])
        left = producer.flush(opts.flush_timeout_s)
        if errors or left:
            raise KafkaException(errors[0] if errors else
                                 f"{left} records not acknowledged in {opts.flush_timeout_s}s")
    except BaseException:
        _PRODUCERS.pop(key, None)   # its queue may hold records of this failed task
        producer.purge()
        raise
    return report


def write_exactly_once(opts: SinkOptions, cols: SinkColumns, rows: Iterator[Row],
                       task: TaskIdentity) -> SinkReport:
    """Fence, read progress, then the rows and progress batch+1 in one
    transaction; a (batch, partition) already committed is skipped. Any
    error aborts and raises (Spark retries; the retry fences this attempt)."""
    report = task.report()
    txn = ProgressTransaction(opts, task.sink_id, task.partition, producer_config(opts))
    try:
        progress = txn.progress()
        if progress.done(task.batch_id):
            report.skipped = sum(1 for _ in rows)
            txn.close()
            return report
        errors: list = []
        txn.begin()
        sent = 0
        for row in rows:
            send_row(txn.producer, opts, cols, row,
                     lambda err, _m: err is not None and errors.append(err))
            sent += 1
            if errors:
                raise KafkaException(errors[0])
        totals = progress.totals()
        txn.commit(task.batch_id, {
            "state": "committed", "batch": task.batch_id, "rows": sent, "written": sent,
            "attempt": task.attempt, "total_rows": totals["total_rows"] + sent,
            "total_written": totals["total_written"] + sent,
            "total_dropped": totals["total_dropped"]})
        report.written = sent
    except BaseException:
        txn.abort()
        raise
    txn.close()
    return report


def write_at_most_once(opts: SinkOptions, cols: SinkColumns, rows: Iterator[Row],
                       task: TaskIdentity) -> SinkReport:
    """Claims (batch, partition) in the broker when the first row arrives
    (a task that fails before any row keeps the claim unburnt), then sends
    without retries; failed records are dropped and counted. A claimed
    (batch, partition) is never sent again by any attempt or replay."""
    report = task.report()
    rows = iter(rows)
    first = next(rows, None)
    if first is None:
        return report
    claim = ProgressTransaction(opts, task.sink_id, task.partition, claim_producer_config(opts))
    try:
        progress = claim.progress()
        if progress.done(task.batch_id):
            report.skipped = 1 + sum(1 for _ in rows)
            claim.close()
            return report
        totals = progress.totals()
        claim.begin()
        claim.commit(task.batch_id, {"state": "claimed", "batch": task.batch_id,
                                     "attempt": task.attempt, **totals})
    except BaseException:
        claim.abort()
        raise
    try:
        _send_at_most_once(opts, cols, first, rows, report)
    finally:
        _record_outcome(claim, task, report, totals)
    return report


def _send_at_most_once(opts: SinkOptions, cols: SinkColumns, first: Row,
                       rows: Iterator[Row], report: SinkReport) -> None:
    """Sends ``first`` and the rest; never retries. If the rows' iterator
    raises (the upstream failed) what was queued is still flushed, the rest
    is lost, and the error goes on to Spark."""
    _, producer = _plain_producer(opts)
    errors: list = []
    on_delivery = _counting_deliveries(report, errors)

    try:
        send_row(producer, opts, cols, first, on_delivery)
        for row in rows:
            send_row(producer, opts, cols, row, on_delivery)
    finally:
        left = producer.flush(opts.flush_timeout_s)
        report.dropped = len(errors) + left
        if report.dropped:
            log.warning("headrace: %d records dropped (at-most-once): %s", report.dropped,
                        errors[0] if errors else "not acknowledged in time")


def _record_outcome(claim: ProgressTransaction, task: TaskIdentity, report: SinkReport,
                    totals: dict) -> None:
    """Best effort: replaces the claim's metadata by the counts (the offset
    stays batch+1). A fenced claim producer (a later attempt found the claim
    and skipped) cannot; the driver still logs the task's report."""
    rows = report.written + report.dropped
    try:
        claim.begin()
        claim.commit(task.batch_id, {
            "state": "done", "batch": task.batch_id, "attempt": task.attempt, "rows": rows,
            "written": report.written, "dropped": report.dropped,
            "total_rows": totals["total_rows"] + rows,
            "total_written": totals["total_written"] + report.written,
            "total_dropped": totals["total_dropped"] + report.dropped})
    except KafkaException as e:
        log.warning("headrace: at-most-once counts of batch %d partition %d not recorded: %s",
                    task.batch_id, task.partition, e)
        claim.abort()
        return
    claim.close()
