"""Parsing, canonical form and compatibility of the three schema types,
each with a library (no hand-written schema parser):

- AVRO: parsed by the ``avro`` package (Apache Avro's Python
  implementation); compatibility is its ReaderWriterCompatibilityChecker
  (reader/writer rules of the Avro specification). References are named
  types, parsed first into the same name table.
- JSON: parsed by ``jsonschema`` (the schema checked against its declared
  draft's meta-schema); compatibility is Confluent's JSON Schema rules over
  the parsed document (headrace.registry.json_compat).
- PROTOBUF: the serialized FileDescriptorProto in base64 (what
  confluent_kafka's ProtobufSerializer registers), parsed by ``protobuf``;
  or ``.proto`` source text, compiled by protoc (grpcio-tools,
  headrace.registry.protobuf_source); compatibility is Confluent's Protobuf
  rules over the descriptors (headrace.registry.proto_compat).

Compatibility is one question for every type, asked in :func:`check`:
can a reader with one schema take every record written with another.

Canonical form (schema identity: the same schema gets the same id in every
subject): AVRO and JSON: the JSON text without insignificant whitespace,
key order kept; PROTOBUF: the deterministic serialization of the parsed
descriptor, in base64, or the source text as given (without surrounding
whitespace).
"""
from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from headrace.registry import errors as E

SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")
LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE",
          "FULL", "FULL_TRANSITIVE")


@dataclass
class Parsed:
    schema_type: str
    canonical: str
    obj: Any  # the library's parsed schema


def _invalid(message: str) -> E.RegistryError:
    return E.unprocessable(E.INVALID_SCHEMA, message)


def parse(schema_type: str, text: str, dependencies: list[tuple[str, str, str]] = ()) -> Parsed:
    """``text`` of ``schema_type`` parsed; ``dependencies``: (reference
    name, type, text) of the schemas it references, transitively, each
    after those it needs.
    RegistryError 42201 when it does not parse."""
    if schema_type not in SCHEMA_TYPES:
        raise _invalid(f"Unknown schema type {schema_type!r} (known: {', '.join(SCHEMA_TYPES)})")
    if not isinstance(text, str) or not text.strip():
        raise _invalid("Empty schema")
    return {"AVRO": _parse_avro, "JSON": _parse_json, "PROTOBUF": _parse_protobuf}[
        schema_type](text, dependencies)


def _compact(doc) -> str:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def _parse_avro(text: str, dependencies) -> Parsed:
    import avro.errors
    import avro.schema

    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = text  # a bare primitive name, e.g. string (Confluent accepts it)
    names = avro.schema.Names()
    try:
        for _, dep_type, dep_text in dependencies:
            if dep_type == "AVRO":
                avro.schema.make_avsc_object(json.loads(dep_text), names)
        parsed = avro.schema.make_avsc_object(doc, names)
    except (avro.errors.AvroException, json.JSONDecodeError, TypeError, AttributeError,
            KeyError, ValueError) as e:
        raise _invalid(f"Invalid Avro schema: {e}") from None
    return Parsed("AVRO", _compact(doc), parsed)


def _parse_json(text: str, dependencies) -> Parsed:
    import jsonschema
    import jsonschema.exceptions
    import jsonschema.validators

    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise _invalid(f"Invalid JSON schema: not JSON: {e}") from None
    if not isinstance(doc, (dict, bool)):
        raise _invalid("Invalid JSON schema: must be an object or a boolean")
    try:
        jsonschema.validators.validator_for(doc).check_schema(doc)
    except jsonschema.exceptions.SchemaError as e:
        raise _invalid(f"Invalid JSON schema: {e.message}") from None
    return Parsed("JSON", _compact(doc), doc)


def _parse_protobuf(text: str, dependencies) -> Parsed:
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    from headrace.registry.protobuf_source import ProtoSourceError, compile_source

    try:
        raw = base64.b64decode(text.strip(), validate=True)
        proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
        canonical = base64.b64encode(proto.SerializeToString(deterministic=True)).decode()
    except (binascii.Error, ValueError, DecodeError):
        try:  # not a serialized descriptor: .proto source
            proto = compile_source(text, dependencies)
        except ProtoSourceError as e:
            raise _invalid(f"Invalid Protobuf schema: {e}") from None
        canonical = text.strip()
    if not proto.message_type and not proto.enum_type:
        raise _invalid("Invalid Protobuf schema: the file declares no message or enum")
    return Parsed("PROTOBUF", canonical, proto)


def check(level: str, new: Parsed, older: list[Parsed], versions: list[int] = ()) -> list[str]:
    """Why ``new`` breaks ``level`` against ``older`` (the subject's live
    versions, oldest first; ``versions``: their numbers, when known); []
    when compatible. Only the latest is checked unless the level is
    _TRANSITIVE. BACKWARD: ``new`` reads what each older one wrote;
    FORWARD: each older one reads what ``new`` writes; FULL: both. As
    Confluent's, the reasons against one version are followed by
    ``{oldSchemaVersion: N}``, and the list ends with ``{compatibility:
    'LEVEL'}``."""
    if level == "NONE" or not older:
        return []
    numbered = list(zip(older, list(versions) or [None] * len(older)))
    against = numbered if level.endswith("_TRANSITIVE") else numbered[-1:]
    base = level.removesuffix("_TRANSITIVE")
    messages = []
    for old, version in against:
        found = []
        if old.schema_type != new.schema_type:
            found.append(f"{{errorType:'TYPE_MISMATCH', description:'The schema type changed "
                         f"from {old.schema_type} to {new.schema_type}'}}")
        else:
            if base in ("BACKWARD", "FULL"):
                found += _reads(new, old, "new schema cannot read data written with an "
                                          "earlier one")
            if base in ("FORWARD", "FULL"):
                found += _reads(old, new, "an earlier schema cannot read data written "
                                          "with the new one")
        if found and version is not None:
            found.append(f"{{oldSchemaVersion: {version}}}")
        messages += found
    if messages:
        messages.append(f"{{compatibility: '{level}'}}")
    return messages


def _reads(reader: Parsed, writer: Parsed, what: str) -> list[str]:
    """Why ``reader`` cannot read every record ``writer`` allows ([] when it can)."""
    if reader.schema_type == "AVRO":
        return _avro_reads(reader, writer, what)
    if reader.schema_type == "JSON":
        from headrace.registry.json_compat import differences
    else:
        from headrace.registry.proto_compat import differences
    return [f"{what}: {{errorType:'{kind}', description:'{text}'}}"
            for kind, text in differences(writer.obj, reader.obj)]


def _avro_reads(reader: Parsed, writer: Parsed, what: str) -> list[str]:
    from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

    result = ReaderWriterCompatibilityChecker().get_compatibility(reader.obj, writer.obj)
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    details = "; ".join(sorted(str(m) for m in result.messages)) or "incompatible"
    locations = ", ".join(sorted(str(loc) for loc in result.locations))
    return [f"{what}: {details}" + (f" at {locations}" if locations else "")]
