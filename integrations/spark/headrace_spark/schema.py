"""The source's output schema: Spark's Kafka source columns. The executors'
Arrow batches in it are built in C++ (cpp/include/headrace/record_columns.h:
timestamp in microseconds, null when a record has none; timestampType 0 for
CreateTime, 1 for LogAppendTime, as Spark's Kafka source reports them)."""
from __future__ import annotations

from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType,
                               StructField, StructType, TimestampType)

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType()),
                                     StructField("value", BinaryType())]))


def source_schema(include_headers: bool) -> StructType:
    """key, value, topic, partition, offset, timestamp, timestampType[, headers]."""
    fields = [StructField("key", BinaryType()), StructField("value", BinaryType()),
              StructField("topic", StringType()), StructField("partition", IntegerType()),
              StructField("offset", LongType()), StructField("timestamp", TimestampType()),
              StructField("timestampType", IntegerType())]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def typed_source_schema(include_headers: bool, formats, topic: str | None) -> StructType:
    """The source's schema with each column of ``formats`` (a
    registry_format.RegistryFormat, or several: value and key) decoded: its
    reader schema is resolved now, on the driver, and travels to the
    executors in the field's metadata (avro_columns.SCHEMA_KEY), so every
    task of the query reads with the same one."""
    from .avro_columns import SCHEMA_ID_KEY, SCHEMA_KEY
    from .avro_types import spark_type
    from .registry_format import parsed, reader_schema

    typed = {}
    for fmt in formats if isinstance(formats, (list, tuple)) else (formats,):
        schema_id, text = reader_schema(fmt, topic)
        if fmt.value_format == "json":
            from .json_values import spark_type as json_spark_type
            t = json_spark_type(parsed(text))
        elif fmt.value_format == "protobuf":
            from .protobuf_values import message_class
            from .protobuf_values import spark_type as protobuf_spark_type
            t = protobuf_spark_type(message_class(fmt, schema_id).DESCRIPTOR)
        else:
            t, _ = spark_type(parsed(text))
        typed[fmt.column] = StructField(fmt.column, t, True,
                                        {SCHEMA_KEY: text, SCHEMA_ID_KEY: schema_id})
    return StructType([typed.get(f.name, f) for f in source_schema(include_headers).fields])


def matches_source_schema(schema: StructType, include_headers: bool,
                          typed: tuple = ()) -> bool:
    """True if ``schema`` is what the source returns, with the columns named
    in ``typed`` ("value", "key") decoded: any type carrying its reader schema."""
    from .avro_columns import SCHEMA_KEY

    want = source_schema(include_headers)
    if schema.fieldNames() != want.fieldNames():
        return False
    return all(f == w if f.name not in typed else SCHEMA_KEY in (f.metadata or {})
               for f, w in zip(schema.fields, want.fields))
