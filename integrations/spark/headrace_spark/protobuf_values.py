"""``valueFormat=protobuf``: registry-framed Protobuf values
(magic byte 0, the schema id, the message indexes, the message; as
confluent_kafka's ProtobufSerializer writes them) as a typed ``value``
struct.

The reader schema is the first message of the schema the options name
(``valueSchemaSubject``'s latest version or ``valueSchemaId``), loaded from
its descriptor as ``headrace consume --decode`` does
(headrace.registry.decode.Decoder.message_class). Every value is parsed
with that message class whatever schema id its frame names (Protobuf is
read by field number: a field the reader lacks is skipped, one the writer
lacked has its default), after checking that the id is a PROTOBUF schema
the registry knows. Types, as Spark's from_protobuf: message -> struct,
repeated -> array, map -> map, enum -> string (its name), int32 family ->
int, int64 family and uint32/uint64 -> bigint, float, double, bool,
string, bytes as such, google.protobuf.Timestamp -> timestamp; recursive
messages are refused. Each record is one message object walked into a
dict for pyarrow: a Python object per record, as with Avro. The sink's
FramedProtobufEncoder writes rows back with a registered schema.
"""
from __future__ import annotations

import datetime
import io
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, DataType, DoubleType,
                               FloatType, IntegerType, LongType, MapType, StringType,
                               StructField, StructType, TimestampType)

from .option_error import HeadraceOptionError
from .registry_format import RegistryFormat, registry_error

_DECODERS: dict[tuple, Any] = {}   # registry settings -> headrace.registry.decode.Decoder
_TIMESTAMP = "google.protobuf.Timestamp"


def decoder(fmt: RegistryFormat):
    """The per-process Decoder (message classes cached by schema id)."""
    key = tuple(sorted(fmt.client_conf.items()))
    if key not in _DECODERS:
        from headrace.registry.decode import Decoder
        _DECODERS[key] = Decoder(dict(fmt.client_conf))
    return _DECODERS[key]


def message_class(fmt: RegistryFormat, schema_id: int):
    try:
        return decoder(fmt).message_class(schema_id, (0,))
    except Exception as e:  # noqa: BLE001 - registry errors, a descriptor that does not load
        raise registry_error(fmt, f"the Protobuf descriptor of schema id {schema_id}", e) \
            from None


def _scalar(field) -> DataType:
    from google.protobuf.descriptor import FieldDescriptor as F
    kinds = {F.TYPE_INT32: IntegerType(), F.TYPE_SINT32: IntegerType(),
             F.TYPE_SFIXED32: IntegerType(), F.TYPE_INT64: LongType(),
             F.TYPE_SINT64: LongType(), F.TYPE_SFIXED64: LongType(),
             F.TYPE_UINT32: LongType(), F.TYPE_FIXED32: LongType(),
             F.TYPE_UINT64: LongType(), F.TYPE_FIXED64: LongType(),
             F.TYPE_FLOAT: FloatType(), F.TYPE_DOUBLE: DoubleType(), F.TYPE_BOOL: BooleanType(),
             F.TYPE_STRING: StringType(), F.TYPE_BYTES: BinaryType(), F.TYPE_ENUM: StringType()}
    return kinds[field.type]


def spark_type(desc, seen: tuple = ()) -> DataType:
    """The Spark type of message descriptor ``desc``."""
    if desc.full_name == _TIMESTAMP:
        return TimestampType()
    if desc.full_name in seen:
        raise HeadraceOptionError(f"Protobuf: message {desc.full_name} is recursive; Spark "
                                  f"types cannot be")
    seen = seen + (desc.full_name,)
    fields = []
    for f in desc.fields:
        fields.append(StructField(f.name, _field_type(f, seen), True))
    return StructType(fields)


def _field_type(f, seen: tuple) -> DataType:
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        key, value = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        return MapType(_scalar(key), _single(value, seen), True)
    t = _single(f, seen)
    return ArrayType(t, True) if _repeated(f) else t


def _single(f, seen: tuple) -> DataType:
    return spark_type(f.message_type, seen) if f.message_type is not None else _scalar(f)


def _repeated(f) -> bool:
    if hasattr(f, "is_repeated"):   # protobuf >= 6 (``label`` is gone)
        return f.is_repeated
    from google.protobuf.descriptor import FieldDescriptor
    return f.label == FieldDescriptor.LABEL_REPEATED


def _value(f, v):
    """One (non-repeated) field value as pyarrow takes it."""
    if f.message_type is not None:
        if f.message_type.full_name == _TIMESTAMP:
            return v.ToDatetime(tzinfo=datetime.timezone.utc)
        return to_dict(v)
    if f.enum_type is not None:
        known = f.enum_type.values_by_number.get(v)
        return known.name if known is not None else str(v)
    return v


def to_dict(msg) -> dict:
    out = {}
    for f in msg.DESCRIPTOR.fields:
        v = getattr(msg, f.name)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            out[f.name] = {k: _value(vf, x) for k, x in v.items()}
        elif _repeated(f):
            out[f.name] = [_value(f, x) for x in v]
        elif f.message_type is not None and not msg.HasField(f.name):
            out[f.name] = None
        else:
            out[f.name] = _value(f, v)
    return out


class _Undecodable(Exception):
    pass


class ProtobufBatchDecoder:
    """``decode(batch)``: the value column parsed with the reader's class."""

    def __init__(self, fmt: RegistryFormat, reader_id: int, value_type: DataType, topic: str,
                 partition: int):
        self.fmt, self.reader_id = fmt, reader_id
        self.cls = message_class(fmt, reader_id)
        self.arrow_type = to_arrow_type(value_type, timezone="UTC")
        self.topic, self.partition = topic, partition

    def _one(self, raw: bytes):
        from confluent_kafka.schema_registry.common.serde import SchemaId
        from google.protobuf.message import DecodeError

        if len(raw) < 5 or raw[0] != 0:
            raise _Undecodable(f"the {self.fmt.column} is not registry-framed (magic byte 0 and a 4-byte "
                             "schema id)")
        frame = SchemaId("PROTOBUF")
        try:
            payload = frame.from_bytes(io.BytesIO(raw))
        except Exception as e:  # noqa: BLE001 - bad message indexes
            raise _Undecodable(f"its Protobuf frame cannot be read: {e}")
        if frame.id != self.reader_id:
            kind = decoder(self.fmt).schema_type(frame.id)
            if kind != "PROTOBUF":
                raise _Undecodable(f"schema id {frame.id} is " + (
                    f"{kind}, not PROTOBUF" if kind else "unknown to the registry"))
        msg = self.cls()
        try:
            msg.ParseFromString(payload.read())
        except DecodeError as e:
            raise _Undecodable(f"its Protobuf payload cannot be read: {e}")
        return to_dict(msg)

    def decode(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        out = []
        for i, raw in enumerate(batch.column(self.fmt.column).to_pylist()):
            try:
                out.append(None if raw is None else self._one(raw))
            except _Undecodable as e:
                if self.fmt.mode == "PERMISSIVE":
                    out.append(None)
                    continue
                offset = batch.column("offset")[i].as_py()
                raise RuntimeError(
                    f"headrace: {self.topic}-{self.partition} offset {offset}: {e} (mode "
                    f"FAILFAST; option mode=PERMISSIVE makes such values null)") from None
        at = batch.schema.get_field_index(self.fmt.column)
        return batch.set_column(at, pa.field(self.fmt.column, self.arrow_type),
                                pa.array(out, type=self.arrow_type))


class FramedProtobufEncoder:
    """Picklable: ``encode(row_value)`` is the value registry-framed as
    confluent_kafka's ProtobufSerializer frames it (magic byte 0, the schema
    id, the message indexes of the schema's first message — one 0 byte —
    then the message). The message class is the first message of schema
    ``schema_id``, loaded on first use in each worker (cached per process);
    each struct field fills the field of its name: struct -> message, array
    -> repeated, map -> map, an enum from its name (or number), timestamp ->
    google.protobuf.Timestamp (Spark's naive timestamps read as UTC, as the
    source writes them). A field the message lacks, or a value its field
    cannot take, fails the row naming the field."""

    def __init__(self, fmt: RegistryFormat, schema_id: int):
        import struct

        self.fmt = fmt
        self.schema_id = schema_id
        self.frame = b"\0" + struct.pack(">I", schema_id) + b"\0"

    def encode(self, value) -> bytes | None:
        if value is None:
            return None
        msg = message_class(self.fmt, self.schema_id)()
        _fill(msg, value.asDict(recursive=True), "")
        return self.frame + msg.SerializeToString()


def _fill(msg, values: dict, path: str) -> None:
    fields = msg.DESCRIPTOR.fields_by_name
    for name, v in values.items():
        where = f"{path}{name}"
        field = fields.get(name)
        if field is None:
            raise HeadraceOptionError(f"valueFormat protobuf: {msg.DESCRIPTOR.full_name} has no "
                                      f"field {where!r}")
        if v is None:
            continue
        try:
            _set(msg, field, v, where)
        except (TypeError, ValueError, KeyError) as e:
            raise HeadraceOptionError(f"valueFormat protobuf: field {where!r}: {e}") from None


def _set(msg, field, v, where: str) -> None:
    target = getattr(msg, field.name)
    kind = field.message_type
    if kind is not None and kind.GetOptions().map_entry:
        value_field = kind.fields_by_name["value"]
        for k, item in v.items():
            if value_field.message_type is not None:
                _fill_message(target[k], item, f"{where}[{k!r}]")
            else:
                target[k] = _scalar_value(value_field, item)
    elif _repeated(field):
        for i, item in enumerate(v):
            if kind is not None:
                _fill_message(target.add(), item, f"{where}[{i}]")
            else:
                target.append(_scalar_value(field, item))
    elif kind is not None:
        _fill_message(target, v, where)
    else:
        setattr(msg, field.name, _scalar_value(field, v))


def _fill_message(msg, v, where: str) -> None:
    if msg.DESCRIPTOR.full_name == _TIMESTAMP:
        msg.FromDatetime(v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
                         if v.tzinfo else v)
    else:
        _fill(msg, v, f"{where}.")


def _scalar_value(field, v):
    from decimal import Decimal

    if field.enum_type is not None and isinstance(v, str):
        return field.enum_type.values_by_name[v].number
    if isinstance(v, bytearray):
        return bytes(v)
    if isinstance(v, Decimal):
        return float(v)
    return v
