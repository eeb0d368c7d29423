"""``headrace.spark``: headrace (or any Kafka-compatible cluster) as a PySpark
data source named ``headrace``, for batch and Structured Streaming, reading
and writing. Options and columns mirror Spark's built-in Kafka source::

    import headrace.spark
    headrace.spark.register(spark)
    df = (spark.readStream.format("headrace")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "clicks").load())

See docs/spark.md for the options, the schema and the delivery guarantees.
Needs pyspark >= 4.2 (admission control in Python stream readers) and pyarrow.
"""
from __future__ import annotations

from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader,
                                    DataSourceStreamWriter, DataSourceWriter)
from pyspark.sql.types import StructType

from .batch_reader import HeadraceBatchReader
from .offsets import OffsetRange, OffsetSpecError
from .options import HeadraceOptionError, parse_sink_options, parse_source_options
from .range_reader import HeadraceDataLossError
from .registry_format import parse_registry_format
from .schema import matches_source_schema, source_schema, typed_source_schema
from .sink_progress import sink_report
from .stream_reader import HeadraceStreamReader
from .writer import HeadraceBatchWriter, HeadraceStreamWriter, SinkReport

__all__ = ["HeadraceDataSource", "register", "source_schema", "HeadraceOptionError",
           "HeadraceDataLossError", "OffsetSpecError", "OffsetRange", "SinkReport", "sink_report",
           "FORMAT"]

FORMAT = "headrace"


class HeadraceDataSource(DataSource):
    """The ``headrace`` format. Spark creates it from the user's options on
    the driver; readers and writers parse and validate them there, so a bad
    option fails the query before any task runs."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def _include_headers(self) -> bool:
        return str(self.options.get("includeHeaders", "false")).strip().lower() == "true"

    def _lower(self) -> dict:
        return {str(k).lower(): v for k, v in self.options.items()}

    def _formats(self) -> list:
        found = [parse_registry_format(self._lower(), sink=False, column=c)
                 for c in ("value", "key")]
        return [f for f in found if f is not None]

    def schema(self) -> StructType:
        """The columns; with ``valueFormat`` (``keyFormat``) a typed ``value``
        (``key``) whose reader schema is asked of the registry here
        (registry_format)."""
        formats = self._formats()
        if not formats:
            return source_schema(self._include_headers())
        return typed_source_schema(self._include_headers(), formats,
                                   single_topic(self._lower()))

    def _check_schema(self, schema: StructType) -> None:
        typed = tuple(f.column for f in self._formats())
        if not matches_source_schema(schema, self._include_headers(), typed):
            raise HeadraceOptionError("The headrace source does not support a user-specified "
                                      "schema; its columns are fixed (see docs/spark.md)")

    def reader(self, schema: StructType) -> DataSourceReader:
        self._check_schema(schema)
        return HeadraceBatchReader(parse_source_options(self.options, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        self._check_schema(schema)
        return HeadraceStreamReader(parse_source_options(self.options, streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return HeadraceBatchWriter(parse_sink_options(self.options, streaming=False), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return HeadraceStreamWriter(parse_sink_options(self.options, streaming=True), schema)


def single_topic(options: dict) -> str | None:
    """The topic a source reads when it reads exactly one (for the default
    subject ``<topic>-value``); else None."""
    from .options import TopicSelection

    sel = TopicSelection.parse(options)
    if sel.strategy == "subscribe" and len(sel.value) == 1:
        return sel.value[0]
    if sel.strategy == "assign" and len({t for t, _ in sel.value}) == 1:
        return sel.value[0][0]
    return None


def register(spark) -> None:
    """Makes ``format("headrace")`` available in this SparkSession."""
    spark.dataSource.register(HeadraceDataSource)
