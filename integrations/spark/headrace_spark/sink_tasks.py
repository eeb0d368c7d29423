"""One write task per delivery guarantee: what an executor does with the
rows of one (batch, Spark partition). See ``delivery`` for the modes and
``sink_progress`` for the fenced progress protocol and why it is safe;
at-most-once is in ``sink_at_most_once``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from confluent_kafka import KafkaException, Producer
from pyspark.sql import Row

from .delivery import producer_config
from .options import SinkOptions
from .sink_progress import ProgressTransaction
from .sink_replay import check_replay
from .sink_rows import SinkColumns, SinkReport, send_row

# Plain (non-transactional) producers, one per settings per Python worker
# (Spark reuses workers).
_PRODUCERS: dict[tuple, Producer] = {}


@dataclass(frozen=True)
class TaskIdentity:
    """Who is writing: the sink (query id, sinkId or jobId), the micro-batch
    (0 for a batch write), the Spark partition, this task's attempt, and the
    query (streaming: the query id, kept by its checkpoint; batch: the jobId)."""

    sink_id: str
    batch_id: int
    partition: int
    attempt: int
    query_id: str = ""

    def check_replay(self, guarantee: str, progress, rows_now: int) -> None:
        check_replay(guarantee, progress, self.sink_id, self.query_id or self.sink_id,
                     self.batch_id, self.partition, rows_now)

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
    with txn.aborting_on_error():
        progress = txn.progress()
        if progress.done(task.batch_id):
            report.skipped = sum(1 for _ in rows)
            task.check_replay(opts.guarantee, progress, report.skipped)
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
            "state": "committed", "batch": task.batch_id, "rows": sent, "rows_in": sent,
            "written": sent, "attempt": task.attempt, "query": task.query_id or task.sink_id,
            "total_rows": totals["total_rows"] + sent,
            "total_written": totals["total_written"] + sent,
            "total_dropped": totals["total_dropped"]})
        report.written = sent
    txn.close()
    return report
