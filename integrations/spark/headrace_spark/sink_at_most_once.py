"""The at-most-once write task: claim, deliver in a transaction, and count
every row that an attempt claimed and did not deliver.

For (sink S, Spark partition P, batch B), with the fenced progress of
``sink_progress``:

1. claim: a transaction holding only the progress offset B + 1, metadata
   ``{"state": "claimed", "rows": 0}`` (rows = rows accounted for so far).
   From then on no attempt or replay sends B's rows again;
2. deliver: one more transaction with every row and the offset B + 1,
   metadata ``{"state": "done", "rows_in": n, "rows": n, "written": n}``.
   If a record fails, the transaction is aborted and all n rows are dropped
   (counted, ``dropped: n``); the task succeeds, nothing is retried;
3. an attempt whose rows' iterator failed (an upstream error, or an input
   an upstream failure cut short: ``sink_rows.whole_input`` raises then)
   commits the rows it took, metadata ``"state": "failed"`` without
   ``rows_in`` (it does not know the task's size), and fails the task.

A later attempt or replay of (B, P) that finds the claim with no ``rows_in``
knows the claimed attempt's visible output exactly - ``written`` if its
delivery committed, else nothing, since its delivery transaction was
aborted (by this attempt's init if it was still open) - so the rows not
yet accounted for, its own row count minus ``rows``, are dropped: it records
them and reports them (task report, driver WARNING, ``sink_report``). Counts
are exact for read_committed readers.
"""
from __future__ import annotations

import logging
from typing import Iterator

from confluent_kafka import KafkaException
from pyspark.sql import Row

from .delivery import claim_producer_config
from .options import SinkOptions
from .sink_progress import Progress, ProgressTransaction
from .sink_rows import SinkColumns, SinkReport, send_row
from .sink_tasks import TaskIdentity

log = logging.getLogger("headrace.spark")


class _Counted:
    """One pass over a task's rows (``first`` then ``rows``) that counts
    what it hands out."""

    def __init__(self, first: Row, rows: Iterator[Row]):
        self._first = first
        self._rows = rows
        self.count = 0
        self.failed = False   # the rows' own iterator raised (an upstream error)

    def __iter__(self):
        return self

    def __next__(self) -> Row:
        if self._first is not None:
            row, self._first = self._first, None
        else:
            try:
                row = next(self._rows)
            except StopIteration:
                raise
            except BaseException:
                self.failed = True
                raise
        self.count += 1
        return row


def write_at_most_once(opts: SinkOptions, cols: SinkColumns, rows: Iterator[Row],
                       task: TaskIdentity) -> SinkReport:
    """Claims (batch, partition) when the first row arrives (a task that
    fails before any row keeps the claim unburnt), then delivers the rows in
    one transaction; see the module doc."""
    report = task.report()
    rows = iter(rows)
    first = next(rows, None)
    if first is None:
        return report
    txn = ProgressTransaction(opts, task.sink_id, task.partition, claim_producer_config(opts))
    with txn.aborting_on_error():
        progress = txn.progress()
        if progress.done(task.batch_id):
            report.skipped = 1 + sum(1 for _ in rows)
            task.check_replay(opts.guarantee, progress, report.skipped)
            _account_for_claimed(txn, task, progress, report)
            txn.close()
            return report
        totals = progress.totals()
        txn.begin()
        txn.commit(task.batch_id, _meta(task, "claimed", totals, rows=0))
    _deliver(opts, cols, txn, task, _Counted(first, rows), totals, report)
    return report


def _meta(task: TaskIdentity, state: str, totals: dict, rows: int, written: int = 0,
          dropped: int = 0, rows_in: int | None = None) -> dict:
    """Progress metadata; ``totals`` are the partition's totals before this batch."""
    meta = {"state": state, "batch": task.batch_id, "attempt": task.attempt,
            "query": task.query_id or task.sink_id, "rows": rows, "written": written,
            "dropped": dropped, "total_rows": totals["total_rows"] + rows,
            "total_written": totals["total_written"] + written,
            "total_dropped": totals["total_dropped"] + dropped}
    if rows_in is not None:
        meta["rows_in"] = rows_in
    return meta


def _deliver(opts: SinkOptions, cols: SinkColumns, txn: ProgressTransaction,
             task: TaskIdentity, taken: _Counted, totals: dict, report: SinkReport) -> None:
    errors: list = []
    try:
        txn.begin()
        for row in taken:
            send_row(txn.producer, opts, cols, row,
                     lambda err, _m: err is not None and errors.append(err))
            if errors:
                raise KafkaException(errors[0])
        txn.commit(task.batch_id, _meta(task, "done", totals, rows=taken.count,
                                        written=taken.count, rows_in=taken.count))
        report.written = taken.count
    except BaseException as e:
        if taken.failed or not isinstance(e, KafkaException):
            _deliver_taken(txn, task, taken.count, totals, report)
            raise
        # Delivery failed: the whole transaction is dropped, every row counted.
        for _ in taken:
            pass
        report.dropped = taken.count
        _warn(task, taken.count, txn.explain(e))
        if _abort_keeping(txn):
            _record(txn, task, _meta(task, "done", totals, rows=taken.count,
                                     dropped=taken.count, rows_in=taken.count))
        return
    txn.close()


def _deliver_taken(txn: ProgressTransaction, task: TaskIdentity, taken: int, totals: dict,
                   report: SinkReport) -> None:
    """The rows' iterator failed (upstream error) after ``taken`` rows: they
    are delivered with metadata "failed" and no ``rows_in`` (the task's size
    is unknown), so a retry or replay counts the rest as dropped. If even
    that fails, nothing of this attempt is visible and the next one counts
    every row."""
    try:
        txn.commit(task.batch_id, _meta(task, "failed", totals, rows=taken, written=taken))
        report.written = taken
        txn.close()
    except KafkaException:
        txn.abort()


def _abort_keeping(txn: ProgressTransaction) -> bool:
    """Aborts the open delivery transaction; False (and closed) if the
    producer cannot go on (fenced, fatal): the next attempt then counts."""
    try:
        txn.abort_open()
        return True
    except KafkaException:
        txn.abort()
        return False


def _account_for_claimed(txn: ProgressTransaction, task: TaskIdentity, progress: Progress,
                         report: SinkReport) -> None:
    """A replay found (batch, partition) claimed: if the claiming attempt did
    not account for all rows (it died, or its input failed), the rest were
    never delivered. Records and reports them as dropped."""
    meta = progress.meta
    if meta.get("batch") != task.batch_id or "rows_in" in meta:
        return
    accounted = int(meta.get("rows", 0))
    lost = report.skipped - accounted
    if lost <= 0:
        return
    report.dropped = lost
    _warn(task, lost, f"attempt {meta.get('attempt')} claimed them and did not deliver them")
    totals = progress.totals()
    totals = {k: totals[k] - int(meta.get(k[len("total_"):], 0)) for k in totals}
    _record(txn, task, _meta(task, "done", totals, rows=report.skipped,
                             written=int(meta.get("written", 0)),
                             dropped=int(meta.get("dropped", 0)) + lost,
                             rows_in=report.skipped))


def _record(txn: ProgressTransaction, task: TaskIdentity, meta: dict) -> None:
    """Best effort: commits ``meta`` at offset batch+1. If this producer is
    fenced or failed, the next attempt or replay accounts for the rows."""
    try:
        txn.begin()
        txn.commit(task.batch_id, meta)
    except KafkaException as e:
        log.warning("headrace: at-most-once counts of batch %d partition %d not recorded: %s",
                    task.batch_id, task.partition, e)
        txn.abort()
        return
    txn.close()


def _warn(task: TaskIdentity, n: int, why) -> None:
    log.warning("headrace: at-most-once sink %s batch %d partition %d: %d records dropped: %s",
                task.sink_id, task.batch_id, task.partition, n, why)
