"""The source's output schema (Spark's Kafka source columns) and the Arrow
batches the executors emit in it."""
from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType,
                               StructField, StructType, TimestampType)

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()),
                                     StructField("value", BinaryType())]))

# Kafka's TimestampType ids, as Spark's Kafka source reports them.
NO_TIMESTAMP_TYPE, CREATE_TIME, LOG_APPEND_TIME = -1, 0, 1


def source_schema(include_headers: bool) -> StructType:
    """key, value, topic, partition, offset, timestamp, timestampType[, headers]."""
    fields = [StructField("key", BinaryType()), StructField("value", BinaryType()),
              StructField("topic", StringType()), StructField("partition", IntegerType()),
              StructField("offset", LongType()), StructField("timestamp", TimestampType()),
              StructField("timestampType", IntegerType())]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


class ArrowRows:
    """Collects records column by column and cuts them into Arrow record
    batches whose schema is exactly what Spark expects for ``schema``."""

    def __init__(self, schema: StructType):
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self.include_headers = "headers" in schema.fieldNames()
        self.clear()

    def clear(self) -> None:
        self.keys: list[Any] = []
        self.values: list[Any] = []
        self.offsets: list[int] = []
        self.times_us: list[int | None] = []
        self.time_types: list[int] = []
        self.headers: list[Any] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, key: bytes | None, value: bytes | None, offset: int, ts_type: int,
            ts_ms: int | None, headers: list[tuple[str, bytes]] | None) -> None:
        self.keys.append(key)
        self.values.append(value)
        self.offsets.append(offset)
        self.time_types.append(ts_type)
        self.times_us.append(None if ts_ms is None or ts_ms < 0 else ts_ms * 1000)
        if self.include_headers:
            self.headers.append([{"key": k, "value": v} for k, v in headers or []])

    def take(self, topic: str, partition: int) -> pa.RecordBatch:
        """The collected rows as one batch; the collector is empty afterwards."""
        n = len(self.offsets)
        s = self.arrow_schema
        columns = [pa.array(self.keys, type=s.field("key").type),
                   pa.array(self.values, type=s.field("value").type),
                   pa.array([topic] * n, type=s.field("topic").type),
                   pa.array([partition] * n, type=s.field("partition").type),
                   pa.array(self.offsets, type=s.field("offset").type),
                   pa.array(self.times_us, type=s.field("timestamp").type),
                   pa.array(self.time_types, type=s.field("timestampType").type)]
        if self.include_headers:
            columns.append(pa.array(self.headers, type=s.field("headers").type))
        self.clear()
        return pa.RecordBatch.from_arrays(columns, schema=s)
