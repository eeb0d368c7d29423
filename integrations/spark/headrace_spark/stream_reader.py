"""``spark.readStream.format("headrace")``: a micro-batch source.

Offsets are the checkpoint's truth: each micro-batch is the pair (start, end)
of ``{"topic": {"partition": offset}}`` maps that Spark writes to its offset
log before running the batch, and ``read()`` is deterministic for a range, so
a batch replayed after a crash reads exactly the same records. Group offsets
(``commitOffsetsToGroup``) are only a lagging copy for monitoring tools.

Admission control: ``maxOffsetsPerTrigger`` becomes the default ReadLimit
(``ReadMaxRows``); ``Trigger.AvailableNow`` fixes a target at the query's
start and never reads past it.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows,
                                              SupportsTriggerAvailableNow)
from pyspark.sql.types import StructType

from .cluster import ClusterView
from .offsets import (DataLoss, OffsetRange, Positions, plan_ranges, positions_from_json,
                      positions_to_json, rate_limit, recorded_min_partitions, with_plan)
from .options import SourceOptions
from .range_reader import read_range, report_loss


class HeadraceStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """One streaming source. The driver-side instance lives as long as the
    query; executors get a pickled copy without the cluster client."""

    def __init__(self, opts: SourceOptions, schema: StructType):
        self.opts = opts
        self.schema = schema
        self._cluster: ClusterView | None = None
        self._target: Positions | None = None   # set by Trigger.AvailableNow

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_cluster"] = None
        return state

    def _view(self) -> ClusterView:
        if self._cluster is None:
            self._cluster = ClusterView(self.opts)
        return self._cluster

    # -- driver: offsets ------------------------------------------------------
    def initialOffset(self) -> dict:
        view = self._view()
        return positions_to_json(view.starting_positions(view.partitions()))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        view = self._view()
        self._target = view.latest(view.partitions())

    def reportLatestOffset(self) -> dict:
        view = self._view()
        return positions_to_json(view.latest(view.partitions()))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The end of the next micro-batch: the latest offsets (capped by the
        AvailableNow target), cut down to ``limit``, with the batch's plan
        (``minPartitions``) recorded beside them. Returns ``start`` itself
        when there is nothing new."""
        begin = positions_from_json(start)
        view = self._view()
        latest = view.latest(view.partitions())
        end = dict(begin)
        for tp, off in latest.items():
            if self._target is not None:
                if tp not in self._target:
                    continue   # appeared after AvailableNow started: not this run's data
                off = min(off, self._target[tp])
            if tp in begin or off > 0:
                end[tp] = off
        self._check_regressions(begin, latest, end)
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(begin, end, limit.max_rows)
        if end == begin:
            return start
        return with_plan(positions_to_json(end), self.opts.min_partitions)

    def _check_regressions(self, begin: Positions, latest: Positions, end: Positions) -> None:
        """Partitions that vanished or whose log now ends before where the
        query stands: data loss. When tolerated, the query jumps to the new end."""
        for tp, off in sorted(begin.items()):
            if tp not in latest:
                report_loss(self.opts, DataLoss(tp[0], tp[1], "the partition no longer exists"))
            elif latest[tp] < off:
                report_loss(self.opts, DataLoss(
                    tp[0], tp[1], f"the log now ends at {latest[tp]}, before offset {off} "
                                  f"that the query has already read up to"))
                end[tp] = latest[tp]

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        """The batch's ranges, split as recorded in ``end`` when the batch
        was planned: a replay after a restart with another ``minPartitions``
        puts the same records in the same Spark partitions, which is what the
        exactly-once and at-most-once sinks' progress is keyed by."""
        return plan_ranges(positions_from_json(start), positions_from_json(end),
                           recorded_min_partitions(end, self.opts.min_partitions))

    def commit(self, end: dict) -> None:
        """Spark finished every batch up to ``end``: optionally mirror it
        into a consumer group (lagging, for monitoring only)."""
        if self.opts.commit_group_id:
            self._view().commit_group(self.opts.commit_group_id, positions_from_json(end))

    def stop(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    # -- executors --------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            return iter(())
        return read_range(self.opts, self.schema, partition)
