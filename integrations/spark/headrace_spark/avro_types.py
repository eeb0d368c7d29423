"""Avro schemas as Spark types and back, for the registry value formats
(``registry_format``). The mapping follows Spark's own from_avro / to_avro
(SchemaConverters), as its documentation states it:

- record -> struct, array -> array, map -> map<string, _>, enum -> string,
  fixed and bytes -> binary, boolean/int/long/float/double/string as such;
- a union of null and one type -> that type, nullable; a union of several
  non-null types is refused (the source says so on the driver);
- logical types: date -> date, timestamp-millis/-micros -> timestamp,
  local-timestamp-millis/-micros -> timestamp_ntz, decimal -> decimal(p, s);
  uuid -> string, time-millis -> int, time-micros -> long (their physical
  types: ``plain_schema`` drops these three so that fastavro returns plain
  values too).

Writing (``avro_schema``) goes the other way: struct -> record named
``topLevelRecord`` (nested records named by their field path, as Spark
does), a nullable field -> ["null", T] with default null, timestamp ->
timestamp-micros, timestamp_ntz -> local-timestamp-micros, decimal -> bytes
with the decimal logical type.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, ByteType, DataType, DateType,
                               DecimalType, DoubleType, FloatType, IntegerType, LongType, MapType,
                               ShortType, StringType, StructField, StructType, TimestampNTZType,
                               TimestampType)

from .option_error import HeadraceOptionError

_PRIMITIVES = {"boolean": BooleanType(), "int": IntegerType(), "long": LongType(),
               "float": FloatType(), "double": DoubleType(), "string": StringType(),
               "bytes": BinaryType()}
_LOGICAL = {"date": DateType(), "timestamp-millis": TimestampType(),
            "timestamp-micros": TimestampType(), "local-timestamp-millis": TimestampNTZType(),
            "local-timestamp-micros": TimestampNTZType()}
# Logical types shown as their physical type (removed by plain_schema).
_AS_PHYSICAL = ("uuid", "time-millis", "time-micros")


def plain_schema(schema: Any) -> Any:
    """``schema`` (parsed JSON) without the logical types of _AS_PHYSICAL."""
    if isinstance(schema, list):
        return [plain_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items()
           if not (k == "logicalType" and v in _AS_PHYSICAL)}
    if "fields" in out:
        out["fields"] = [{**f, "type": plain_schema(f["type"])} for f in out["fields"]]
    for key in ("items", "values"):
        if key in out:
            out[key] = plain_schema(out[key])
    if isinstance(out.get("type"), (dict, list)):
        out["type"] = plain_schema(out["type"])
    return out


def spark_type(schema: Any) -> tuple[DataType, bool]:
    """(the Spark type of Avro ``schema`` (parsed JSON), nullable)."""
    return _convert(schema, {}, ())


def _convert(schema: Any, named: dict, path: tuple) -> tuple[DataType, bool]:
    where = ".".join(path) or "the value"
    if isinstance(schema, list):   # a union
        branches = [b for b in schema if b != "null"]
        if len(branches) != 1:
            raise HeadraceOptionError(
                f"Avro schema: {where} is a union of several non-null types {schema}; the "
                f"headrace source reads unions of null and one type only")
        return _convert(branches[0], named, path)[0], len(branches) < len(schema)
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return _PRIMITIVES[schema], False
        if schema == "null":
            raise HeadraceOptionError(f"Avro schema: {where} is always null")
        if schema not in named:
            raise HeadraceOptionError(f"Avro schema: {where} names the unknown type {schema!r} "
                                      f"(schema references are not supported by the source)")
        if named[schema] is None:
            raise HeadraceOptionError(f"Avro schema: {where} is recursive ({schema}); Spark "
                                      f"types cannot be")
        return named[schema], False
    kind = schema.get("type")
    logical = schema.get("logicalType")
    if logical == "decimal":
        return DecimalType(int(schema["precision"]), int(schema.get("scale", 0))), False
    if logical in _LOGICAL:
        return _LOGICAL[logical], False
    if kind == "record":
        name = _full_name(schema)
        named[name] = None   # being defined: a reference to it now is recursion
        fields = []
        for f in schema.get("fields", ()):
            t, nullable = _convert(f["type"], named, path + (f["name"],))
            fields.append(StructField(f["name"], t, nullable))
        named[name] = StructType(fields)
        named.setdefault(schema["name"], named[name])
        return named[name], False
    if kind == "enum" or kind == "fixed":
        t = StringType() if kind == "enum" else BinaryType()
        named[_full_name(schema)] = t
        named.setdefault(schema["name"], t)
        return t, False
    if kind == "array":
        t, nullable = _convert(schema["items"], named, path + ("element",))
        return ArrayType(t, nullable), False
    if kind == "map":
        t, nullable = _convert(schema["values"], named, path + ("value",))
        return MapType(StringType(), t, nullable), False
    return _convert(kind, named, path)   # {"type": "int"} and the like


def _full_name(schema: dict) -> str:
    name = schema["name"]
    ns = schema.get("namespace")
    return f"{ns}.{name}" if ns and "." not in name else name


def avro_schema(t: DataType, name: str = "topLevelRecord", namespace: str = "") -> Any:
    """The Avro schema (parsed JSON) Spark type ``t`` is written with."""
    if isinstance(t, StructType):
        fields = []
        for f in t.fields:
            ns = f"{namespace}.{name}" if namespace else name
            ft = avro_schema(f.dataType, f.name, ns)
            field = {"name": f.name, "type": ft}
            if f.nullable:
                field = {"name": f.name, "type": ["null", ft], "default": None}
            fields.append(field)
        out = {"type": "record", "name": name, "fields": fields}
        if namespace:
            out["namespace"] = namespace
        return out
    if isinstance(t, ArrayType):
        items = avro_schema(t.elementType, name, namespace)
        return {"type": "array", "items": ["null", items] if t.containsNull else items}
    if isinstance(t, MapType):
        if not isinstance(t.keyType, StringType):
            raise HeadraceOptionError(f"valueFormat avro: map keys must be strings, got {t}")
        values = avro_schema(t.valueType, name, namespace)
        return {"type": "map",
                "values": ["null", values] if t.valueContainsNull else values}
    if isinstance(t, DecimalType):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision,
                "scale": t.scale}
    simple = {BooleanType: "boolean", ByteType: "int", ShortType: "int", IntegerType: "int",
              LongType: "long", FloatType: "float", DoubleType: "double", StringType: "string",
              BinaryType: "bytes"}
    for cls, avro in simple.items():
        if isinstance(t, cls):
            return avro
    if isinstance(t, DateType):
        return {"type": "int", "logicalType": "date"}
    if isinstance(t, TimestampType):
        return {"type": "long", "logicalType": "timestamp-micros"}
    if isinstance(t, TimestampNTZType):
        return {"type": "long", "logicalType": "local-timestamp-micros"}
    raise HeadraceOptionError(f"valueFormat avro: Spark type {t} has no Avro counterpart")
