"""One write task per delivery guarantee: what an executor does with the
rows of one (batch, Spark partition). See ``delivery`` for the modes and
``sink_progress`` for the fenced progress protocol and why it is safe;
at-most-once is in ``sink_at_most_once``."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator

from confluent_kafka import KafkaException, Producer
from pyspark.sql import Row

from .client_errors import ClientErrors
from .delivery import producer_config
from .options import SinkOptions
from .sink_progress import ProgressTransaction
from .sink_replay import check_replay
from .sink_rows import SinkColumns, SinkReport, send_row

# Plain (non-transactional) producers, one per settings per Python worker
# (Spark reuses workers), each with its error_cb (``client_errors``).
_PRODUCERS: dict[tuple, tuple[Producer, ClientErrors]] = {}


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


def _plain_producer(opts: SinkOptions) -> tuple[tuple, Producer, ClientErrors]:
    key = (opts.guarantee,) + tuple(sorted(opts.kafka_conf.items()))
    cached = _PRODUCERS.get(key)
    if cached is None:
        errors = ClientErrors("the sink's producer")
        conf = producer_config(opts)
        conf["error_cb"] = errors
        cached = _PRODUCERS[key] = (Producer(conf), errors)
    return (key,) + cached


def _flush(producer: Producer, errors: ClientErrors, timeout_s: float, failed: list) -> int:
    """``producer.flush`` for up to ``timeout_s``, in slices of 1 s: an
    authentication failure (``error_cb``, served by flush) raises at once
    instead of waiting for the records' time-out. Returns the records left."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = producer.flush(max(0.1, min(1.0, deadline - time.monotonic())))
        if not left or failed or time.monotonic() >= deadline:
            return left
        errors.check()


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
    key, producer, client_errors = _plain_producer(opts)
    client_errors.reset()
    errors: list = []
    on_delivery = _counting_deliveries(report, errors)

    try:
        for row in rows:
            send_row(producer, opts, cols, row, on_delivery)   # polls: serves error_cb
            if errors:
                raise KafkaException(errors[0])
            client_errors.check()
        left = _flush(producer, client_errors, opts.flush_timeout_s, errors)
        if errors or left:
            raise KafkaException(errors[0] if errors else
                                 f"{left} records not acknowledged in {opts.flush_timeout_s}s")
    except BaseException as e:
        _PRODUCERS.pop(key, None)   # its queue may hold records of this failed task
        producer.purge()
        why = client_errors.explain(e)
        if why is not e:
            raise why from e
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
