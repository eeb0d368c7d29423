"""Executor side of ``valueFormat=avro``: registry-framed values of an Arrow
batch decoded into a typed struct column (source), and a struct value
encoded into a framed one (sink).

A framed value is Confluent's wire format: magic byte 0, the writer's
schema id (4 bytes, big-endian), the Avro binary payload. Decoding is
fastavro's ``schemaless_reader`` with the writer's schema (fetched by id
from the registry once per worker process) and the reader schema the
driver resolved, so a record written with another compatible schema is
resolved to the reader's (Avro schema resolution: defaults filled, fields
the reader lacks dropped). fastavro makes one Python dict per record, which
pyarrow turns into the column: there is no Arrow-native Avro decoder on
PyPI to avoid that; docs/performance.md has the cost.

A value that cannot be decoded (not framed, an id the registry does not
know or that is not Avro, a payload its schema cannot read or that has
bytes left over) fails the task under ``mode`` FAILFAST, naming the topic,
partition and offset; under PERMISSIVE its ``value`` is null. A null value
(a tombstone) is a null ``value`` in both modes.
"""
from __future__ import annotations

import datetime
import io
import struct
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (ArrayType, DataType, MapType, StructType,
                               TimestampType)

from .avro_types import plain_schema
from .option_error import HeadraceOptionError
from .registry_format import RegistryFormat, parsed, registry_error

_WRITERS: dict[tuple, Any] = {}   # (registry url, id) -> parsed writer schema, per worker
_READERS: dict[str, Any] = {}     # reader schema text -> parsed
_CLIENTS: dict[tuple, Any] = {}   # registry settings -> SchemaRegistryClient, per worker
SCHEMA_KEY = "headrace.avroSchema"   # metadata of the source's value field
SCHEMA_ID_KEY = "headrace.avroSchemaId"


class AvroDecodeError(RuntimeError):
    """A value could not be decoded (mode FAILFAST)."""


class _Undecodable(Exception):
    pass


def _parse(schema_json: Any):
    import fastavro

    return fastavro.parse_schema(plain_schema(schema_json))


def _writer_schema(fmt: RegistryFormat, client, schema_id: int):
    key = (fmt.url, schema_id)
    if key not in _WRITERS:
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            schema = client.get_schema(schema_id)
        except SchemaRegistryError as e:
            if e.http_status_code == 404:
                raise _Undecodable(f"schema id {schema_id} is unknown to the registry")
            raise registry_error(fmt, f"schema id {schema_id}", e) from None
        except Exception as e:  # noqa: BLE001 - httpx's connection errors
            raise registry_error(fmt, f"schema id {schema_id}", e) from None
        if (schema.schema_type or "AVRO") != "AVRO":
            raise _Undecodable(f"schema id {schema_id} is {schema.schema_type}, not AVRO")
        _WRITERS[key] = _parse(parsed(schema.schema_str))
    return _WRITERS[key]


class BatchDecoder:
    """``decode(batch)``: ``batch`` (the source's columns, value binary) with
    its value column decoded into ``value_type``."""

    def __init__(self, fmt: RegistryFormat, reader_text: str, value_type: DataType,
                 topic: str, partition: int, reader_id: int | None = None):
        self.fmt = fmt
        key = tuple(sorted(fmt.client_conf.items()))
        if key not in _CLIENTS:
            _CLIENTS[key] = fmt.client()
        self.client = _CLIENTS[key]
        if reader_text not in _READERS:
            _READERS[reader_text] = _parse(parsed(reader_text))
        self.reader = _READERS[reader_text]
        self.arrow_type = to_arrow_type(value_type, timezone="UTC")
        self.topic, self.partition = topic, partition
        self.reader_id = reader_id

    def _one(self, raw: bytes):
        import fastavro

        if len(raw) < 5 or raw[0] != 0:
            raise _Undecodable(f"the {self.fmt.column} is not registry-framed (magic byte 0 and a 4-byte "
                               "schema id)")
        schema_id = struct.unpack_from(">I", raw, 1)[0]
        same = schema_id == self.reader_id   # no resolution: fastavro is 1.4x faster
        writer = self.reader if same else _writer_schema(self.fmt, self.client, schema_id)
        buf = io.BytesIO(raw)
        buf.seek(5)
        try:
            obj = fastavro.schemaless_reader(buf, writer, None if same else self.reader)
        except Exception as e:  # noqa: BLE001 - fastavro raises many kinds on bad input
            raise _Undecodable(f"its Avro payload (schema id {schema_id}) cannot be read "
                               f"with the reader schema: {type(e).__name__}: {e}")
        if buf.tell() != len(raw):
            raise _Undecodable(f"{len(raw) - buf.tell()} bytes are left after its Avro "
                               f"payload (schema id {schema_id})")
        return obj

    def decode(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        values = batch.column(self.fmt.column).to_pylist()
        out = []
        for i, raw in enumerate(values):
            if raw is None:
                out.append(None)
                continue
            try:
                out.append(self._one(raw))
            except _Undecodable as e:
                if self.fmt.mode == "PERMISSIVE":
                    out.append(None)
                    continue
                offset = batch.column("offset")[i].as_py()
                raise AvroDecodeError(
                    f"headrace: {self.topic}-{self.partition} offset {offset}: {e} (mode "
                    f"FAILFAST; option mode=PERMISSIVE makes such values null)") from None
        column = pa.array(out, type=self.arrow_type)
        at = batch.schema.get_field_index(self.fmt.column)
        return batch.set_column(at, pa.field(self.fmt.column, self.arrow_type), column)


# ----------------------------------------------------------------- the sink


def _local_is_utc() -> bool:
    """True when this process's local time zone is UTC (no offset, no DST)."""
    import time
    return time.timezone == 0 and time.altzone == 0 and not time.daylight


def converter(t: DataType, local_is_utc: bool):
    """A function from Spark's Python value of type ``t`` to what fastavro
    takes: Rows as dicts; timestamps (pyspark's naive local times) as aware
    UTC datetimes (a plain ``replace`` when the local zone is UTC, else
    ``astimezone``); None for values that need no change. Built once per
    type, so a row costs no type dispatch."""
    if isinstance(t, StructType):
        parts = [(f.name, i, converter(f.dataType, local_is_utc)) for i, f in enumerate(t.fields)]
        return lambda v: None if v is None else {
            n: (c(v[i]) if c is not None else v[i]) for n, i, c in parts}
    if isinstance(t, ArrayType):
        c = converter(t.elementType, local_is_utc)
        return None if c is None else (lambda v: None if v is None else [c(x) for x in v])
    if isinstance(t, MapType):
        c = converter(t.valueType, local_is_utc)
        return None if c is None else (
            lambda v: None if v is None else {k: c(x) for k, x in v.items()})
    if isinstance(t, TimestampType):
        utc = datetime.timezone.utc
        if local_is_utc:
            return lambda v: v if v is None or v.tzinfo else v.replace(tzinfo=utc)
        return lambda v: v if v is None or v.tzinfo else v.astimezone(utc)
    return None


class FramedAvroEncoder:
    """Picklable: ``encode(row_value)`` is the framed Avro value (bytes)."""

    def __init__(self, schema_id: int, schema_text: str, value_type: StructType):
        self.schema_id, self.schema_text, self.value_type = schema_id, schema_text, value_type
        self._parsed = None
        self._convert = None

    def __getstate__(self):
        return {**self.__dict__, "_parsed": None, "_convert": None}

    def encode(self, value) -> bytes | None:
        import fastavro

        if value is None:
            return None
        if self._parsed is None:
            self._parsed = _parse(parsed(self.schema_text))
            self._convert = converter(self.value_type, _local_is_utc())
        obj = self._convert(value)
        buf = io.BytesIO()
        buf.write(b"\0" + struct.pack(">I", self.schema_id))
        try:
            fastavro.schemaless_writer(buf, self._parsed, obj)
        except Exception as e:  # noqa: BLE001 - fastavro's validation errors
            raise HeadraceOptionError(f"Avro: a struct value does not fit schema id "
                                      f"{self.schema_id}: {type(e).__name__}: {e}") from None
        return buf.getvalue()
