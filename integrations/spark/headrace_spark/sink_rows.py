"""The sink's input columns, one row to one produce() call, and the report a
write task sends back to the driver.

Input columns as in Spark's Kafka sink: ``value`` (string or binary,
required), optional ``key`` (string or binary), ``topic`` (string; the
``topic`` option overrides it), ``partition`` (int; absent or null lets the
producer's murmur2 partitioner choose) and ``headers``
(array<struct<key: string, value: binary>>).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from confluent_kafka import Producer
from pyspark.sql import Row
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from .options import HeadraceOptionError, SinkOptions


@dataclass
class SinkReport(WriterCommitMessage):
    """What one write task did, sent back to the driver's commit()."""

    partition_id: int
    attempt: int
    batch_id: int = 0
    written: int = 0    # acknowledged by the broker (exactly-once: committed)
    dropped: int = 0    # not acknowledged (at-most-once only; other modes raise)
    skipped: int = 0    # not sent: this (batch, partition) was already written or claimed


@dataclass(frozen=True)
class SinkColumns:
    """Positions of the sink's columns in the input rows (None: absent)."""

    value: int
    key: Optional[int]
    topic: Optional[int]
    partition: Optional[int]
    headers: Optional[int]

    @staticmethod
    def of(schema: StructType, opts: SinkOptions) -> "SinkColumns":
        names = schema.fieldNames()
        types = {f.name: f.dataType for f in schema.fields}
        if "value" not in names:
            raise HeadraceOptionError("Required attribute 'value' not found")
        checks = {"value": (StringType, BinaryType), "key": (StringType, BinaryType),
                  "topic": (StringType,), "partition": (IntegerType,), "headers": (ArrayType,)}
        for name, allowed in checks.items():
            if name in types and not isinstance(types[name], allowed):
                raise HeadraceOptionError(f"{name} attribute type must be one of "
                                          f"{[t.__name__ for t in allowed]}, got {types[name]}")
        if opts.topic is None and "topic" not in names:
            raise HeadraceOptionError("topic option required when no 'topic' attribute is "
                                      "present. Use the topic option for setting a topic.")
        pos = {n: names.index(n) if n in names else None for n in checks}
        return SinkColumns(**pos)


def _bytes(v) -> Optional[bytes]:
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    return bytes(v)


def send_row(producer: Producer, opts: SinkOptions, cols: SinkColumns, row: Row,
             on_delivery) -> None:
    """Queues one row; waits for room when the local queue is full."""
    topic = opts.topic or row[cols.topic]
    if topic is None:
        raise HeadraceOptionError("Null topic present in the data. Use the topic option for "
                                  "setting a topic.")
    kwargs = {"value": _bytes(row[cols.value]), "on_delivery": on_delivery}
    if cols.key is not None:
        kwargs["key"] = _bytes(row[cols.key])
    if cols.partition is not None and row[cols.partition] is not None:
        kwargs["partition"] = int(row[cols.partition])
    if cols.headers is not None and row[cols.headers]:
        kwargs["headers"] = [(h["key"], _bytes(h["value"])) for h in row[cols.headers]]
    while True:
        try:
            producer.produce(topic, **kwargs)
            break
        except BufferError:   # local queue full: let deliveries drain
            producer.poll(0.1)
    producer.poll(0)
