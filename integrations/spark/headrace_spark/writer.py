"""``df.write.format("headrace")`` and ``writeStream.format("headrace")``:
the Spark side of the sink. Columns and per-row sending are in
``sink_rows``, what a task does per guarantee in ``sink_tasks``."""
from __future__ import annotations

import logging
from typing import Iterator, List, Optional

from pyspark import TaskContext
from pyspark.sql import Row
from pyspark.sql.datasource import (DataSourceStreamWriter, DataSourceWriter,
                                    WriterCommitMessage)
from pyspark.sql.types import StructType

from .delivery import claim_producer_config, producer_config
from .options import SinkOptions
from .sink_rows import SinkColumns, SinkReport, whole_input
from .sink_at_most_once import write_at_most_once
from .sink_tasks import TaskIdentity, write_at_least_once, write_exactly_once

__all__ = ["HeadraceBatchWriter", "HeadraceStreamWriter", "SinkReport"]

log = logging.getLogger("headrace.spark")
_WRITE = {"at-least-once": write_at_least_once, "exactly-once": write_exactly_once,
          "at-most-once": write_at_most_once}
# Local properties Spark sets on a micro-batch's tasks (checked in pyspark 4.3).
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"


def _validate(opts: SinkOptions) -> None:
    """Producer settings fail on the driver, before any task."""
    producer_config(opts)
    if opts.guarantee == "at-most-once":
        claim_producer_config(opts)


def _log_totals(what: str, messages: List[Optional[WriterCommitMessage]]) -> None:
    """INFO with the task counts; WARNING when records were dropped."""
    reports = [m for m in messages if isinstance(m, SinkReport)]
    written = sum(r.written for r in reports)
    dropped = sum(r.dropped for r in reports)
    skipped = sum(r.skipped for r in reports)
    level = logging.WARNING if dropped else logging.INFO
    log.log(level, "headrace: %s: %d written, %d dropped, %d skipped by %d tasks", what,
            written, dropped, skipped, len(reports))


class HeadraceBatchWriter(DataSourceWriter):
    """A batch write. exactly-once and at-most-once are keyed by ``jobId``
    (required for both); at-least-once needs no identity."""

    def __init__(self, opts: SinkOptions, schema: StructType):
        _validate(opts)
        self.opts = opts
        self.cols = SinkColumns.of(schema, opts)
        self.sink_id = opts.job_id or "without jobId"

    def write(self, iterator: Iterator[Row]) -> SinkReport:
        ctx = TaskContext.get()
        task = TaskIdentity(self.sink_id, 0, ctx.partitionId(), ctx.attemptNumber(),
                            self.sink_id)
        return _WRITE[self.opts.guarantee](self.opts, self.cols, whole_input(iterator), task)

    def commit(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        _log_totals(f"batch write {self.sink_id} committed", messages)

    def abort(self, messages: List[Optional[WriterCommitMessage]]) -> None:
        # exactly-once: committed tasks stay committed and a rerun with the
        # same jobId skips them; other modes: acknowledged records stay.
        _log_totals(f"batch write {self.sink_id} aborted", messages)


class HeadraceStreamWriter(DataSourceStreamWriter):
    """A streaming write, keyed by the query id (stable across restarts from
    the same checkpoint) unless ``sinkId`` is given."""

    def __init__(self, opts: SinkOptions, schema: StructType):
        _validate(opts)
        self.opts = opts
        self.cols = SinkColumns.of(schema, opts)

    def write(self, iterator: Iterator[Row]) -> SinkReport:
        ctx = TaskContext.get()
        query_id = ctx.getLocalProperty(QUERY_ID_PROPERTY)
        task = TaskIdentity(self.opts.sink_id or query_id,
                            int(ctx.getLocalProperty(BATCH_ID_PROPERTY)),
                            ctx.partitionId(), ctx.attemptNumber(), query_id)
        return _WRITE[self.opts.guarantee](self.opts, self.cols, whole_input(iterator), task)

    def commit(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
        _log_totals(f"micro-batch {batchId} committed", messages)

    def abort(self, messages: List[Optional[WriterCommitMessage]], batchId: int) -> None:
        _log_totals(f"micro-batch {batchId} aborted", messages)
