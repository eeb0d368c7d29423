"""The sink's input columns and rows, one row to one produce() call, and the
report a write task sends back to the driver.

Input columns as in Spark's Kafka sink: ``value`` (string or binary,
required), optional ``key`` (string or binary), ``topic`` (string; the
``topic`` option overrides it), ``partition`` (int; absent or null lets the
producer's murmur2 partitioner choose) and ``headers``
(array<struct<key: string, value: binary>>). With ``valueFormat``
(``keyFormat``) ``value`` (``key``) is a struct, sent registry-framed
(``value_formats``).
"""
from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from confluent_kafka import Producer
from pyspark.sql import Row
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from .options import HeadraceOptionError, SinkOptions

log = logging.getLogger("headrace.spark")
_WORKER_PY = os.path.join("pyspark", "worker.py")
_unchecked_warned = False


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
    encoder: Any = None       # with valueFormat: value_formats.sink_encoder's encoder
    key_encoder: Any = None   # with keyFormat

    @staticmethod
    def of(schema: StructType, opts: SinkOptions) -> "SinkColumns":
        """REQUIRES: on the driver (with valueFormat it registers the schema)."""
        names = schema.fieldNames()
        types = {f.name: f.dataType for f in schema.fields}
        if "value" not in names:
            raise HeadraceOptionError("Required attribute 'value' not found")
        values = (StructType,) if opts.value_format else (StringType, BinaryType)
        keys = (StructType,) if opts.key_format else (StringType, BinaryType)
        checks = {"value": values, "key": keys,
                  "topic": (StringType,), "partition": (IntegerType,), "headers": (ArrayType,)}
        for name, allowed in checks.items():
            if name in types and not isinstance(types[name], allowed):
                raise HeadraceOptionError(f"{name} attribute type must be one of "
                                          f"{[t.__name__ for t in allowed]}, got {types[name]}")
        if opts.topic is None and "topic" not in names:
            raise HeadraceOptionError("topic option required when no 'topic' attribute is "
                                      "present. Use the topic option for setting a topic.")
        pos = {n: names.index(n) if n in names else None for n in checks}
        if opts.value_format:
            from .value_formats import sink_encoder

            pos["encoder"] = sink_encoder(opts.value_format, types["value"], opts.topic)
        if opts.key_format:
            from .value_formats import sink_encoder

            if "key" not in types:
                raise HeadraceOptionError("keyFormat needs a 'key' column")
            pos["key_encoder"] = sink_encoder(opts.key_format, types["key"], opts.topic)
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
    value = (cols.encoder.encode(row[cols.value]) if cols.encoder is not None
             else _bytes(row[cols.value]))
    kwargs = {"value": value, "on_delivery": on_delivery}
    if cols.key is not None:
        kwargs["key"] = (cols.key_encoder.encode(row[cols.key]) if cols.key_encoder is not None
                         else _bytes(row[cols.key]))
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


class SinkInputCutError(RuntimeError):
    """Spark ended a write task's input before its end (an upstream failure)."""


def whole_input(rows: Iterator[Row]) -> Iterator[Row]:
    """``rows``, the input Spark gives a write task, raising
    SinkInputCutError at their end unless Spark sent all of them.
    REQUIRES: called from the writer's ``write`` in pyspark's Python worker.

    Why: when something upstream of the sink in the same task fails (a Python
    UDF raises, or its worker dies) after Spark passed the sink some rows,
    Spark does not fail the sink's input; it shuts the socket it feeds the
    sink's Python worker with, and pyarrow reads the cut Arrow stream as a
    complete one. What tells the two apart is what follows the stream: the
    JVM sends its END_OF_STREAM marker (which pyspark's worker reads after
    the task) only once the task's input iterator is exhausted; after a cut
    it sends nothing, and the socket is at end-of-file. So at the end of the
    rows this peeks (never consumes) one byte of the worker's input: none
    means a cut, and raising makes it what it is, a failed input, for every
    sink mode (exactly-once aborts, at-most-once records the rows it took as
    "failed", Spark retries the task). docs/spark.md has the argument.

    The stream is found on the stack of pyspark's worker (pyspark 4.3:
    ``input_data_stream`` of ``invoke_udf``; untested fallback for earlier
    versions, which read the data from it: ``infile`` of ``main``). Without
    it (another pyspark layout) ``rows`` is returned unchecked, with a
    WARNING once per worker process."""
    stream = _worker_input()
    peek = getattr(stream, "peek", None)
    if peek is None:
        global _unchecked_warned
        if not _unchecked_warned:
            _unchecked_warned = True
            log.warning("headrace: the sink cannot tell a complete input from one an "
                        "upstream failure cut short (pyspark's worker input not found)")
        return rows
    return _checked(rows, peek)


def _checked(rows: Iterator[Row], peek) -> Iterator[Row]:
    """``peek``: the stream's BufferedReader.peek, b"" only at end-of-file."""
    taken = 0
    for row in rows:
        taken += 1
        yield row
    if not peek(1):
        raise SinkInputCutError(
            f"headrace sink: Spark ended this task's input after {taken} rows without its "
            f"end-of-stream marker (a failure upstream in the same task: a Python UDF that "
            f"raised or whose worker died); failing the task instead of writing it as whole")


def _worker_input():
    """The stream pyspark's worker reads this task's input rows from, found on
    the call stack; None if there is none."""
    frame = sys._getframe(1)
    found = None
    while frame is not None:
        if frame.f_code.co_filename.endswith(_WORKER_PY):
            names = frame.f_locals
            if "input_data_stream" in names:
                return names["input_data_stream"]
            if frame.f_code.co_name == "main" and "infile" in names:
                found = names["infile"]
        frame = frame.f_back
    return found
