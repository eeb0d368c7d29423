"""``valueFormat=json``: registry-framed JSON Schema values (magic byte 0,
the schema id, JSON text, as confluent_kafka's JSONSerializer writes them)
as a typed ``value`` struct, and a struct written back framed.

Types from the reader's JSON Schema: object with ``properties`` -> struct
(properties in their order), array with ``items`` -> array, string ->
string, integer -> bigint, number -> double, boolean -> boolean; ``type``
lists and ``oneOf``/``anyOf`` with null take the other branch; local
``$ref`` (``#/definitions/X``, ``#/$defs/X``) are followed. Every field is
nullable (JSON records may omit any property). Objects without
``properties`` (maps), several non-null types and recursion are refused
when the query is planned.

Decoding is Arrow-native: a batch's payloads are joined into one
newline-delimited buffer and parsed by pyarrow's JSON reader with the
column's type as its explicit schema (properties the reader schema lacks
are ignored), so no Python object is made per record. A batch with a value
that cannot be decoded is parsed again record by record to find it, which
then fails the task (FAILFAST, naming topic, partition and offset) or
becomes a null value (PERMISSIVE).
"""
from __future__ import annotations

import io
import json
import struct
from typing import Any

import pyarrow as pa
import pyarrow.json as pj
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, ByteType, DataType,
                               DateType, DecimalType, DoubleType, FloatType, IntegerType,
                               LongType, ShortType, StringType, StructField, StructType,
                               TimestampNTZType, TimestampType)

from .option_error import HeadraceOptionError
from .registry_format import RegistryFormat, registry_error

_SIMPLE = {"string": StringType(), "integer": LongType(), "number": DoubleType(),
           "boolean": BooleanType()}
_KNOWN_IDS: dict[tuple, str] = {}   # (registry url, id) -> schema type, per worker


def spark_type(schema: Any) -> DataType:
    """The Spark type of JSON Schema ``schema`` (parsed JSON)."""
    return _convert(schema, schema, (), ())


def _convert(s: Any, root: Any, path: tuple, refs: tuple) -> DataType:
    where = ".".join(path) or "the value"
    if not isinstance(s, dict):
        raise HeadraceOptionError(f"JSON Schema: {where} is not a schema object")
    if "$ref" in s:
        ref = s["$ref"]
        if ref in refs:
            raise HeadraceOptionError(f"JSON Schema: {where} is recursive ({ref})")
        parts = ref.split("/")
        if parts[0] != "#":
            raise HeadraceOptionError(f"JSON Schema: {where}: only local $ref are supported, "
                                      f"got {ref!r}")
        target = root
        for p in parts[1:]:
            target = target[p]
        return _convert(target, root, path, refs + (ref,))
    for key in ("oneOf", "anyOf"):
        if key in s:
            branches = [b for b in s[key] if b.get("type") != "null"]
            if len(branches) != 1:
                raise HeadraceOptionError(f"JSON Schema: {where} is a {key} of several "
                                          f"non-null types; only null and one type are read")
            return _convert(branches[0], root, path, refs)
    kind = s.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) != 1:
            raise HeadraceOptionError(f"JSON Schema: {where} has several non-null types "
                                      f"{kind}")
        kind = kinds[0]
    if kind == "object" or (kind is None and "properties" in s):
        if not s.get("properties"):
            raise HeadraceOptionError(f"JSON Schema: {where} is an object without "
                                      f"'properties' (a map): not supported")
        return StructType([StructField(n, _convert(p, root, path + (n,), refs), True)
                           for n, p in s["properties"].items()])
    if kind == "array":
        return ArrayType(_convert(s.get("items", {}), root, path + ("items",), refs), True)
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    raise HeadraceOptionError(f"JSON Schema: {where} has no type the source can read "
                              f"({kind!r})")


def json_schema(t: DataType) -> dict:
    """The JSON Schema a Spark type is written with (sink)."""
    if isinstance(t, StructType):
        out = {"type": "object", "properties": {
            f.name: ({"oneOf": [{"type": "null"}, json_schema(f.dataType)]} if f.nullable
                     else json_schema(f.dataType)) for f in t.fields}}
        required = [f.name for f in t.fields if not f.nullable]
        if required:
            out["required"] = required
        return out
    if isinstance(t, ArrayType):
        return {"type": "array", "items": json_schema(t.elementType)}
    if isinstance(t, (ByteType, ShortType, IntegerType, LongType)):
        return {"type": "integer"}
    if isinstance(t, (FloatType, DoubleType, DecimalType)):
        return {"type": "number"}
    if isinstance(t, BooleanType):
        return {"type": "boolean"}
    if isinstance(t, (StringType, DateType, TimestampType, TimestampNTZType)):
        return {"type": "string"}
    if isinstance(t, BinaryType):
        return {"type": "string", "contentEncoding": "base64"}
    raise HeadraceOptionError(f"valueFormat json: Spark type {t} is not written as JSON")


class _Undecodable(Exception):
    pass


class JsonBatchDecoder:
    """``decode(batch)``: the value column parsed into ``value_type``."""

    def __init__(self, fmt: RegistryFormat, value_type: DataType, topic: str, partition: int):
        self.fmt = fmt
        self.client = fmt.client()
        self.arrow_type = to_arrow_type(value_type, timezone="UTC")
        self.arrow_schema = pa.schema(list(self.arrow_type))
        self.topic, self.partition = topic, partition

    def _check_id(self, raw: bytes) -> None:
        if len(raw) < 5 or raw[0] != 0:
            raise _Undecodable(f"the {self.fmt.column} is not registry-framed (magic byte 0 and a 4-byte "
                               "schema id)")
        schema_id = struct.unpack_from(">I", raw, 1)[0]
        key = (self.fmt.url, schema_id)
        if key not in _KNOWN_IDS:
            from confluent_kafka.schema_registry.error import SchemaRegistryError
            try:
                _KNOWN_IDS[key] = self.client.get_schema(schema_id).schema_type or "AVRO"
            except SchemaRegistryError as e:
                if e.http_status_code != 404:
                    raise registry_error(self.fmt, f"schema id {schema_id}", e) from None
                _KNOWN_IDS[key] = ""
            except Exception as e:  # noqa: BLE001 - httpx's connection errors
                raise registry_error(self.fmt, f"schema id {schema_id}", e) from None
        if _KNOWN_IDS[key] != "JSON":
            raise _Undecodable(f"schema id {schema_id} is " + (
                f"{_KNOWN_IDS[key]}, not JSON" if _KNOWN_IDS[key] else "unknown to the registry"))

    def _parse(self, lines: list) -> pa.Table:
        data = b"\n".join(lines)
        return pj.read_json(io.BytesIO(data),
                            read_options=pj.ReadOptions(block_size=max(len(data) + 1, 1 << 20)),
                            parse_options=pj.ParseOptions(explicit_schema=self.arrow_schema,
                                                          unexpected_field_behavior="ignore",
                                                          newlines_in_values=True))

    def decode(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        values = batch.column(self.fmt.column)
        lines, valid = [], []
        bad: dict[int, str] = {}
        for i, raw in enumerate(values.to_pylist()):
            ok = raw is not None
            if ok:
                try:
                    self._check_id(raw)
                except _Undecodable as e:
                    bad[i], ok = str(e), False
            lines.append(raw[5:] if ok else b"{}")
            valid.append(ok)
        try:
            table = self._parse(lines)
            if table.num_rows != len(lines):
                raise pa.ArrowInvalid(f"{table.num_rows} JSON values for {len(lines)} records")
        except pa.ArrowInvalid:
            for i, line in enumerate(lines):   # find the values that cannot be read
                if valid[i]:
                    try:
                        if self._parse([line]).num_rows != 1:
                            raise pa.ArrowInvalid("not one JSON value")
                    except pa.ArrowInvalid as e:
                        bad[i] = f"its JSON payload cannot be read: {e}"
                        valid[i], lines[i] = False, b"{}"
            table = self._parse(lines)
        if bad and self.fmt.mode == "FAILFAST":
            i = min(bad)
            offset = batch.column("offset")[i].as_py()
            raise RuntimeError(
                f"headrace: {self.topic}-{self.partition} offset {offset}: {bad[i]} (mode "
                f"FAILFAST; option mode=PERMISSIVE makes such values null)")
        table = table.combine_chunks()
        mask = pa.array([not v for v in valid], pa.bool_())
        column = pa.StructArray.from_arrays([table.column(n).chunk(0) if table.num_rows else
                                             pa.array([], f.type)
                                             for n, f in zip(table.column_names,
                                                             self.arrow_schema)],
                                            fields=list(self.arrow_type), mask=mask)
        at = batch.schema.get_field_index(self.fmt.column)
        return batch.set_column(at, pa.field(self.fmt.column, self.arrow_type), column)


class FramedJsonEncoder:
    """Picklable: ``encode(row_value)`` is the framed JSON value (bytes)."""

    def __init__(self, schema_id: int):
        self.frame = b"\0" + struct.pack(">I", schema_id)

    def encode(self, value) -> bytes | None:
        if value is None:
            return None
        import base64

        def default(v):
            if isinstance(v, (bytes, bytearray)):
                return base64.b64encode(v).decode("ascii")
            if hasattr(v, "isoformat"):
                return v.isoformat()
            return float(v)   # Decimal: a JSON number, as its schema says
        return self.frame + json.dumps(value.asDict(recursive=True), default=default,
                                       separators=(",", ":")).encode()
