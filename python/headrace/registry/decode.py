"""Registry-framed records shown as JSON (``headrace consume --decode``).

A framed value is Confluent's wire format: magic byte 0, the schema id
(4 bytes, big-endian), then the payload. Decoding is confluent_kafka's own
deserializers (AvroDeserializer and JSONDeserializer with the writer's
schema, fetched from the registry by id and cached), so what is shown is
what a consumer of that library reads. Protobuf has no such deserializer
without the generated message class: the writer's descriptor (``?format=
serialized``, with its references and the well-known types) is loaded into
a descriptor pool, the message found by the frame's message indexes
(confluent_kafka's SchemaId reads them) and printed with protobuf's
json_format. Values that are not framed and ids the registry does not know
are left as they are.

Used by ``headrace consume --decode`` (through headrace.cli.format's
``decode``) and by the console's message browser (headrace.console.browser),
which also shows the schema's subject, version and id (:meth:`describe`).
"""
from __future__ import annotations

import base64
import datetime
import decimal
import json
import uuid

from headrace.errors import HeadraceError


def _jsonable(value):
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (datetime.date, datetime.time, uuid.UUID)):
        return value.isoformat() if hasattr(value, "isoformat") else str(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


class Decoder:
    """``decode(raw)``: JSON text (bytes) of a framed Avro, JSON Schema or
    Protobuf value the registry knows, else ``raw`` itself (the same
    object: callers tell a decoded value by identity). ``conf``: SchemaRegistryClient settings
    (url, basic.auth.user.info, ssl.ca.location)."""

    def __init__(self, conf: dict):
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry.avro import AvroDeserializer
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer

        self.url = conf.get("url", "")
        self.client = SchemaRegistryClient(conf)
        # Protobuf descriptors in the serialized form only: the client's cache
        # is by id whatever the format, so that form has a client of its own.
        self._serialized = SchemaRegistryClient(conf)
        self._by_type = {"AVRO": AvroDeserializer(self.client),
                         "JSON": JSONDeserializer(None, schema_registry_client=self.client)}
        self._types: dict[int, str | None] = {}
        self._protobuf: dict[tuple, object] = {}  # (id, indexes) -> message class
        self._described: dict[tuple[int, str], dict] = {}

    def schema_type(self, schema_id: int) -> str | None:
        """The type of schema ``schema_id``; None when the registry has none."""
        if schema_id not in self._types:
            from confluent_kafka.schema_registry.error import SchemaRegistryError

            try:
                self._types[schema_id] = self.client.get_schema(schema_id).schema_type or "AVRO"
            except SchemaRegistryError as e:
                if e.http_status_code != 404:
                    raise HeadraceError(f"schema registry {self.url}: schema {schema_id}: "
                                        f"{e.error_message} ({e.error_code})") from None
                self._types[schema_id] = None
            except Exception as e:  # noqa: BLE001 - httpx's connection errors and the like
                raise HeadraceError(f"cannot ask the schema registry at {self.url}: "
                                    f"{e}") from None
        return self._types[schema_id]

    def describe(self, schema_id: int, topic: str = "", field: str = "value") -> dict:
        """{"id", "type", "subject", "version"} of schema ``schema_id``: the
        subject ``<topic>-<field>`` (Confluent's default naming) when the
        schema is registered under it, else the first subject that has it;
        subject and version None when it is under none (all deleted)."""
        key = (schema_id, f"{topic}-{field}")
        if key not in self._described:
            try:
                uses = self.client.get_schema_versions(schema_id)
            except Exception as e:  # noqa: BLE001 - as schema_type's failures
                raise HeadraceError(f"schema registry {self.url}: versions of schema "
                                    f"{schema_id}: {e}") from None
            use = next((u for u in uses if u.subject == key[1]), uses[0] if uses else None)
            self._described[key] = {"id": schema_id, "type": self.schema_type(schema_id),
                                    "subject": use.subject if use else None,
                                    "version": use.version if use else None}
        return self._described[key]

    @staticmethod
    def schema_id(raw: bytes | None) -> int | None:
        """The schema id of a framed value (magic 0), else None."""
        if raw is None or len(raw) < 5 or raw[0] != 0:
            return None
        return int.from_bytes(raw[1:5], "big")

    def decode(self, raw: bytes | None, topic: str = "", field: str = "value") -> bytes | None:
        schema_id = self.schema_id(raw)
        if schema_id is None:
            return raw
        kind = self.schema_type(schema_id)
        if kind == "PROTOBUF":
            return self._decode_protobuf(raw, schema_id)
        deserializer = self._by_type.get(kind)
        if deserializer is None:
            return raw
        from confluent_kafka.serialization import MessageField, SerializationContext

        ctx = SerializationContext(topic, MessageField.KEY if field == "key"
                                   else MessageField.VALUE)
        try:
            obj = deserializer(raw, ctx)
        except Exception:  # noqa: BLE001 - a payload its schema cannot read: shown as is
            return raw
        return json.dumps(obj, ensure_ascii=False, default=_jsonable).encode()

    def _decode_protobuf(self, raw: bytes, schema_id: int) -> bytes:
        import io

        from confluent_kafka.schema_registry.common.serde import SchemaId
        from google.protobuf import json_format
        from google.protobuf.message import DecodeError

        frame = SchemaId("PROTOBUF")
        try:
            payload = frame.from_bytes(io.BytesIO(raw))
            cls = self.message_class(schema_id, tuple(frame.message_indexes or [0]))
            msg = cls()
            msg.ParseFromString(payload.read())
        except (DecodeError, IndexError, KeyError, TypeError, ValueError):
            return raw  # not what its schema says: shown as is
        return json.dumps(json_format.MessageToDict(msg, preserving_proto_field_name=True),
                          ensure_ascii=False).encode()

    def message_class(self, schema_id: int, indexes: tuple):
        """The message class of schema ``schema_id`` (PROTOBUF) at ``indexes``
        (the frame's message indexes), built from its descriptor and cached."""
        key = (schema_id, indexes)
        if key not in self._protobuf:
            from google.protobuf import descriptor_pool
            from google.protobuf.message_factory import GetMessageClass

            pool = descriptor_pool.DescriptorPool()
            schema = self._serialized.get_schema(schema_id, fmt="serialized")
            fdp = self._add_file(pool, schema, None, set())
            top = fdp.message_type[indexes[0]].name
            target = pool.FindMessageTypeByName(f"{fdp.package}.{top}" if fdp.package else top)
            for i in indexes[1:]:
                target = target.nested_types[i]
            self._protobuf[key] = GetMessageClass(target)
        return self._protobuf[key]

    def _add_file(self, pool, schema, name: str | None, added: set):
        """Adds ``schema`` (serialized form) and what it imports to ``pool``,
        as file ``name`` (a reference's import path; None: its own name);
        returns its FileDescriptorProto."""
        from google.protobuf import descriptor_pb2
        from google.protobuf import descriptor_pool as dp
        # The well-known types register themselves in the default pool.
        from google.protobuf import (any_pb2, duration_pb2, empty_pb2,  # noqa: F401
                                     field_mask_pb2, struct_pb2, timestamp_pb2, wrappers_pb2)

        fdp = descriptor_pb2.FileDescriptorProto.FromString(
            base64.b64decode(schema.schema_str))
        fdp.name = name or fdp.name or "headrace_schema.proto"
        by_name = {r.name: r for r in schema.references or ()}
        for dep in fdp.dependency:
            if dep in added:
                continue
            added.add(dep)
            ref = by_name.get(dep)
            if ref is not None:
                dep_schema = self._serialized.get_version(ref.subject, ref.version,
                                                          fmt="serialized").schema
                self._add_file(pool, dep_schema, dep, added)
            else:
                known = descriptor_pb2.FileDescriptorProto()
                dp.Default().FindFileByName(dep).CopyToProto(known)
                pool.Add(known)
        pool.Add(fdp)
        return fdp
