"""``spark.read.format("headrace")``: a bounded read of offset ranges.

The ranges are fixed when Spark plans the query (``partitions()`` on the
driver): startingOffsets / startingTimestamp up to endingOffsets, resolved to
concrete offsets once. Each range is one task on an executor.
"""
from __future__ import annotations

import logging
from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from .batch_plans import record_plan, recorded_plan
from .cluster import ClusterView
from .offsets import OffsetRange, OffsetSpecError, plan_ranges
from .options import SourceOptions
from .range_reader import read_range

log = logging.getLogger("headrace.spark")


class HeadraceBatchReader(DataSourceReader):
    """Plans and reads one batch query. Picklable (no client is kept)."""

    def __init__(self, opts: SourceOptions, schema: StructType):
        self.opts = opts
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        """The ranges; with ``jobId``, the ones its first read recorded
        (see ``batch_plans``)."""
        cluster = ClusterView(self.opts)
        try:
            parts = cluster.partitions()
            if self.opts.job_id:
                recorded = recorded_plan(self.opts, parts)
                if recorded is not None:
                    log.info("headrace: job %s reads the offset ranges its first run recorded",
                             self.opts.job_id)
                    return plan_ranges(*recorded)
            start = cluster.starting_positions(parts)
            end = cluster.resolve(self.opts.ending, parts, "endingOffsets")
        finally:
            cluster.close()
        for tp in parts:
            if end[tp] < start[tp]:
                raise OffsetSpecError(f"{tp[0]}-{tp[1]}: the starting offset {start[tp]} is "
                                      f"after the ending offset {end[tp]}")
        if self.opts.job_id:
            record_plan(self.opts, start, end, self.opts.min_partitions)
        return plan_ranges(start, end, self.opts.min_partitions)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):   # Spark's placeholder when nothing to read
            return iter(())
        return read_range(self.opts, self.schema, partition)
