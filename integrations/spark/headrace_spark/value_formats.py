"""Where the registry value formats (``valueFormat``: registry_format) meet
the reader and the sink: the per-batch decoding step of a read (Avro:
avro_columns, JSON: json_values, Protobuf: protobuf_values) and the encoder of a write, with the
schema it registers. The source's typed schema is schema.typed_source_schema."""
from __future__ import annotations

import json
from typing import Callable

import pyarrow as pa
from pyspark.sql.types import BinaryType, DataType, StructType

from .avro_columns import SCHEMA_ID_KEY, SCHEMA_KEY, BatchDecoder, FramedAvroEncoder
from .avro_types import avro_schema
from .json_values import FramedJsonEncoder, JsonBatchDecoder, json_schema
from .option_error import HeadraceOptionError
from .registry_format import (SCHEMA_TYPES, RegistryFormat, default_subject, reader_schema,
                              registry_error)


def raw_schema(schema: StructType) -> StructType:
    """``schema`` with binary key and value columns (what the C++ reader builds)."""
    fields = [f if f.name not in ("key", "value") else type(f)(f.name, BinaryType(), True)
              for f in schema.fields]
    return StructType(fields)


def batch_decoder(formats, schema: StructType, topic: str,
                  partition: int) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    """The per-batch step of a read: decoding each column of ``formats``
    (RegistryFormat or None each), or nothing. ``schema``: the source's
    (typed) schema, whose decoded fields' metadata hold the reader schemas
    the driver resolved."""
    steps = [_decoder(f, schema, topic, partition) for f in formats if f is not None]

    def run(batch: pa.RecordBatch) -> pa.RecordBatch:
        for step in steps:
            batch = step(batch)
        return batch
    return run


def _decoder(fmt: RegistryFormat, schema: StructType, topic: str, partition: int):
    value = schema[fmt.column]
    if fmt.value_format == "json":
        return JsonBatchDecoder(fmt, value.dataType, topic, partition).decode
    if fmt.value_format == "protobuf":
        from .protobuf_values import ProtobufBatchDecoder
        return ProtobufBatchDecoder(fmt, value.metadata[SCHEMA_ID_KEY], value.dataType, topic,
                                    partition).decode
    text = value.metadata.get(SCHEMA_KEY)
    if text is None:
        raise HeadraceOptionError(f"{fmt.column}Format avro: the {fmt.column} column lost its "
                                  f"reader schema (metadata '{SCHEMA_KEY}')")
    return BatchDecoder(fmt, text, value.dataType, topic, partition,
                        value.metadata.get(SCHEMA_ID_KEY)).decode


def sink_encoder(fmt: RegistryFormat, value_type: DataType, topic: str | None):
    """On the driver: the schema the sink writes with (``valueSchemaId``, or
    the one derived from ``value_type`` registered under the subject; for
    Protobuf, ``valueSchemaId`` or the subject's latest version: a
    descriptor is not derived from a Spark type) and the tasks' encoder
    (picklable; ``encode(row value) -> bytes``)."""
    if not isinstance(value_type, StructType):
        raise HeadraceOptionError(f"{fmt.column}Format {fmt.value_format}: the {fmt.column} "
                                  f"column must be a struct, got {value_type}")
    if fmt.value_format == "protobuf":   # written with a registered schema, never derived
        from .protobuf_values import FramedProtobufEncoder
        schema_id, _ = reader_schema(fmt, topic)
        return FramedProtobufEncoder(fmt, schema_id)
    as_json = fmt.value_format == "json"
    if fmt.schema_id is not None:
        schema_id, text = reader_schema(fmt, topic)
    else:
        text = json.dumps(json_schema(value_type) if as_json else avro_schema(value_type))
        subject = fmt.subject or default_subject(topic, fmt.column)
        try:
            schema_id = fmt.client().register_schema(
                subject, _schema(text, SCHEMA_TYPES[fmt.value_format]))
        except Exception as e:  # noqa: BLE001 - SchemaRegistryError (409: incompatible), httpx
            raise registry_error(fmt, f"registering the {fmt.column} schema under {subject!r}",
                                 e) from None
    if as_json:
        return FramedJsonEncoder(schema_id)
    return FramedAvroEncoder(schema_id, text, value_type)


def _schema(text: str, kind: str):
    from confluent_kafka.schema_registry import Schema
    return Schema(text, kind)
