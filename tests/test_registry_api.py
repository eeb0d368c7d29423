"""The built-in schema registry on one broker, driven by confluent_kafka's
SchemaRegistryClient and serializers (and raw HTTP where the client hides
the answer): registration, evolution, Confluent's error codes, deletes,
references, config and the ``_schemas`` records (docs/schema-registry.md).
One broker for the module; each test uses its own subjects."""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry.error import SchemaRegistryError

from broker_process import http_address, shared_broker
from registry_clients import CONTENT_TYPE, call, schemas_records, sr_client


def record(name: str, *fields: tuple) -> str:
    import json
    return json.dumps({"type": "record", "name": name,
                       "fields": [dict(zip(("name", "type", "default"), f)) for f in fields]})


V1 = record("User", ("name", "string"))
V2 = record("User", ("name", "string"), ("age", "int", 0))          # BACKWARD-compatible
BAD = record("User", ("name", "int"))                               # string -> int: not


@pytest.fixture(scope="module")
def rb(tmp_path_factory):
    for b in shared_broker(tmp_path_factory, "registry-broker"):
        host, port = http_address(b)
        b.http = f"{host}:{port}"
        yield b


def code_of(call_, *args) -> tuple[int, int]:
    with pytest.raises(SchemaRegistryError) as e:
        call_(*args)
    return e.value.http_status_code, e.value.error_code


def test_register_evolve_and_reject_incompatible(rb):
    c = sr_client(rb.http)
    id1 = c.register_schema("users-value", Schema(V1, "AVRO"))
    id2 = c.register_schema("users-value", Schema(V2, "AVRO"))
    assert id2 != id1
    assert c.get_versions("users-value") == [1, 2]
    assert code_of(c.register_schema, "users-value", Schema(BAD, "AVRO")) == (409, 409)
    assert c.get_versions("users-value") == [1, 2]
    # Registering a version again answers its id, no new version.
    assert sr_client(rb.http).register_schema("users-value", Schema(V1, "AVRO")) == id1
    assert c.get_versions("users-value") == [1, 2]
    latest = c.get_latest_version("users-value")
    assert (latest.version, latest.schema_id) == (2, id2)


def test_same_schema_gets_the_same_id_in_every_subject(rb):
    c = sr_client(rb.http)
    s = record("Shared", ("x", "long"))
    a = c.register_schema("shared-a", Schema(s, "AVRO"))
    spaced = s.replace(",", ", ").replace(":", ": ")  # whitespace is not identity
    b = sr_client(rb.http).register_schema("shared-b", Schema(spaced, "AVRO"))
    assert a == b
    assert sorted(c.get_subjects_by_schema_id(a)) == ["shared-a", "shared-b"]
    assert sorted((v.subject, v.version) for v in c.get_schema_versions(a)) == \
        [("shared-a", 1), ("shared-b", 1)]


def test_lookups_and_not_found_codes(rb):
    c = sr_client(rb.http)
    sid = c.register_schema("lookup-value", Schema(V1, "AVRO"))
    fresh = sr_client(rb.http)
    assert fresh.get_schema(sid).schema_str == V1.replace(" ", "")
    found = fresh.lookup_schema("lookup-value", Schema(V1, "AVRO"))
    assert (found.schema_id, found.version) == (sid, 1)
    assert code_of(fresh.get_schema, 999999) == (404, 40403)
    assert code_of(fresh.get_latest_version, "no-such-subject") == (404, 40401)
    assert code_of(fresh.get_version, "lookup-value", 7) == (404, 40402)
    assert code_of(fresh.lookup_schema, "lookup-value", Schema(V2, "AVRO")) == (404, 40403)
    status, doc, headers = call(rb.http, "GET", "/subjects/lookup-value/versions/0")
    assert (status, doc["error_code"]) == (422, 42202)
    assert headers["Content-Type"] == CONTENT_TYPE
    status, doc, _ = call(rb.http, "GET", "/subjects/lookup-value/versions/latest/schema")
    assert status == 200 and doc == {"type": "record", "name": "User",
                                     "fields": [{"name": "name", "type": "string"}]}
    status, doc, _ = call(rb.http, "GET", f"/schemas/ids/{sid}")
    assert status == 200 and "schemaType" not in doc and doc["schema"] == fresh.get_schema(
        sid).schema_str
    assert call(rb.http, "GET", "/schemas/types")[1] == ["AVRO", "JSON", "PROTOBUF"]


def test_invalid_schema_and_bad_requests(rb):
    status, doc, _ = call(rb.http, "POST", "/subjects/bad-value/versions",
                          {"schema": '{"type":"recrod","name":"X"}'})
    assert (status, doc["error_code"]) == (422, 42201)
    status, doc, _ = call(rb.http, "POST", "/subjects/bad-value/versions",
                          {"schema": "{}", "schemaType": "XML"})
    assert (status, doc["error_code"]) == (422, 42201)
    status, doc, _ = call(rb.http, "POST", "/subjects/bad-value/versions", "not json")
    assert status == 400 and doc["error_code"] == 400
    status, doc, _ = call(rb.http, "GET", "/subjects/bad-value/nonsense")
    assert status == 404 and "not part of the registry" in doc["message"]
    assert call(rb.http, "GET", "/subjects/bad-value/versions")[1]["error_code"] == 40401


def test_soft_and_hard_delete_then_register_again(rb):
    c = sr_client(rb.http)
    # Schemas of this subject only (an id used by another subject lives on).
    d1, d2 = V1.replace("User", "Deleted"), V2.replace("User", "Deleted")
    id1 = c.register_schema("del-value", Schema(d1, "AVRO"))
    c.register_schema("del-value", Schema(d2, "AVRO"))
    assert code_of(c.delete_version, "del-value", 1, True) == (404, 40407)  # soft first
    assert c.delete_version("del-value", 1) == 1
    assert code_of(c.delete_version, "del-value", 1) == (404, 40406)
    assert c.get_versions("del-value") == [2]
    assert c.get_schema(id1).schema_str  # an id outlives a soft delete
    assert code_of(c.delete_subject, "del-value", True) == (404, 40405)
    assert c.delete_subject("del-value") == [2]
    assert "del-value" not in c.get_subjects()
    assert "del-value" in c.get_subjects(deleted=True)
    assert code_of(c.delete_subject, "del-value") == (404, 40404)
    assert sorted(c.delete_subject("del-value", permanent=True)) == [1, 2]
    assert "del-value" not in c.get_subjects(deleted=True)
    assert code_of(sr_client(rb.http).get_schema, id1) == (404, 40403)
    # Registered again after a permanent delete: version 1, a new id.
    again = sr_client(rb.http).register_schema("del-value", Schema(BAD.replace("User", "Deleted"),
                                                                   "AVRO"))
    assert again > id1
    assert c.get_version("del-value", 1).schema_id == again


def test_references(rb):
    c = sr_client(rb.http)
    address = record("Address", ("street", "string"))
    c.register_schema("address-value", Schema(address, "AVRO"))
    person = record("Person", ("name", "string"), ("home", "Address"))
    ref = SchemaReference("Address", "address-value", 1)
    pid = c.register_schema("person-value", Schema(person, "AVRO", [ref]))
    got = sr_client(rb.http).get_schema(pid)
    assert [(r.name, r.subject, r.version) for r in got.references] == \
        [("Address", "address-value", 1)]
    assert call(rb.http, "GET", "/subjects/address-value/versions/1/referencedby")[1] == [pid]
    status, doc, _ = call(rb.http, "DELETE", "/subjects/address-value/versions/1")
    assert (status, doc["error_code"]) == (422, 42206)
    # Without the reference the named type is unknown: not a valid schema.
    status, doc, _ = call(rb.http, "POST", "/subjects/person2-value/versions",
                          {"schema": person})
    assert (status, doc["error_code"]) == (422, 42201)


def test_config_levels(rb):
    c = sr_client(rb.http)
    assert c.get_compatibility() == "BACKWARD"
    c.register_schema("cfg-value", Schema(V1, "AVRO"))
    assert code_of(c.get_compatibility, "cfg-value") == (404, 40408)
    c.set_compatibility("cfg-value", "FORWARD")
    assert c.get_compatibility("cfg-value") == "FORWARD"
    # FORWARD: the old schema must read the new one's data; V2 adds a field: fine.
    c.register_schema("cfg-value", Schema(V2, "AVRO"))
    dropped = record("User", ("age", "int", 0))  # drops "name" (no default): V2 cannot read it
    assert c.test_compatibility("cfg-value", Schema(dropped, "AVRO")) is False
    c.set_compatibility("cfg-value", "NONE")
    assert c.test_compatibility("cfg-value", Schema(dropped, "AVRO")) is True
    status, doc, _ = call(rb.http, "PUT", "/config/cfg-value", {"compatibility": "SIDEWAYS"})
    assert (status, doc["error_code"]) == (422, 42203)
    status, doc, _ = call(rb.http, "DELETE", "/config/cfg-value")
    assert (status, doc) == (200, {"compatibilityLevel": "NONE"})
    assert code_of(c.get_compatibility, "cfg-value") == (404, 40408)
    assert call(rb.http, "GET", "/config/cfg-value?defaultToGlobal=true")[1] == \
        {"compatibilityLevel": "BACKWARD"}


def test_transitive_checks_every_version(rb):
    c = sr_client(rb.http)
    c.set_compatibility("trans-value", "BACKWARD")
    c.register_schema("trans-value", Schema(record("T", ("a", "int")), "AVRO"))
    c.register_schema("trans-value", Schema(record("T", ("a", "int"), ("b", "int", 1)), "AVRO"))
    # Drops a, keeps b: fine against the latest (b has a default), not against version 1.
    v3 = Schema(record("T", ("b", "int", 1)), "AVRO")
    assert c.test_compatibility("trans-value", v3) is True
    c.set_compatibility("trans-value", "BACKWARD_TRANSITIVE")
    assert c.test_compatibility("trans-value", v3) is True  # b defaulted: readable from v1 too
    v4 = Schema(record("T", ("c", "int")), "AVRO")  # c with no default
    assert code_of(c.register_schema, "trans-value", v4) == (409, 409)


def test_read_only_mode_refuses_writes(rb):
    status, doc, _ = call(rb.http, "PUT", "/mode/ro-value", {"mode": "READONLY"})
    assert (status, doc) == (200, {"mode": "READONLY"})
    status, doc, _ = call(rb.http, "POST", "/subjects/ro-value/versions", {"schema": V1})
    assert (status, doc["error_code"]) == (422, 42205)
    assert call(rb.http, "DELETE", "/mode/ro-value")[0] == 200
    assert call(rb.http, "POST", "/subjects/ro-value/versions", {"schema": V1})[0] == 200


def test_avro_serializer_through_the_broker(rb):
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    c = sr_client(rb.http)
    ser = AvroSerializer(c, V2)
    ctx = SerializationContext("avro-topic", MessageField.VALUE)
    p = Producer({"bootstrap.servers": rb.bootstrap})
    for i in range(5):
        p.produce("avro-topic", value=ser({"name": f"u{i}", "age": i}, ctx))
    assert p.flush(30) == 0
    sid = c.get_latest_version("avro-topic-value").schema_id
    con = Consumer({"bootstrap.servers": rb.bootstrap, "group.id": "avro-readers",
                    "auto.offset.reset": "earliest"})
    con.subscribe(["avro-topic"])
    de = AvroDeserializer(sr_client(rb.http))
    got = []
    while len(got) < 5:
        m = con.poll(30)
        assert m is not None and m.error() is None
        assert m.value()[0] == 0 and int.from_bytes(m.value()[1:5], "big") == sid
        got.append(de(m.value(), ctx))
    con.close()
    assert got == [{"name": f"u{i}", "age": i} for i in range(5)]


def test_json_serializer_through_the_broker(rb):
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    schema = ('{"$schema":"http://json-schema.org/draft-07/schema#","title":"Reading",'
              '"type":"object","properties":{"sensor":{"type":"string"},'
              '"value":{"type":"number"}},"required":["sensor","value"]}')
    c = sr_client(rb.http)
    ser = JSONSerializer(schema, c)
    ctx = SerializationContext("json-topic", MessageField.VALUE)
    p = Producer({"bootstrap.servers": rb.bootstrap})
    p.produce("json-topic", value=ser({"sensor": "t1", "value": 21.5}, ctx))
    assert p.flush(30) == 0
    status, doc, _ = call(rb.http, "GET", "/subjects/json-topic-value/versions/1")
    assert status == 200 and doc["schemaType"] == "JSON"
    con = Consumer({"bootstrap.servers": rb.bootstrap, "group.id": "json-readers",
                    "auto.offset.reset": "earliest"})
    con.subscribe(["json-topic"])
    m = con.poll(30)
    con.close()
    assert m is not None and m.error() is None
    assert JSONDeserializer(schema, schema_registry_client=sr_client(rb.http))(
        m.value(), ctx) == {"sensor": "t1", "value": 21.5}
    status, doc, _ = call(rb.http, "POST", "/subjects/json-bad/versions",
                          {"schema": '{"type":"object","properties":{"a":{"type":7}}}',
                           "schemaType": "JSON"})
    assert (status, doc["error_code"]) == (422, 42201)


def test_schemas_topic_is_in_confluents_layout(rb):
    from confluent_kafka.admin import AdminClient, ConfigResource

    c = sr_client(rb.http)
    sid = c.register_schema("layout-value", Schema(V1, "AVRO"))
    c.set_compatibility("layout-value", "FULL")
    c.delete_subject("layout-value")
    recs = schemas_records(rb.bootstrap)
    keys = [k for _, k, _ in recs]
    assert {"keytype": "SCHEMA", "subject": "layout-value", "version": 1, "magic": 1} in keys
    first = next(v for _, k, v in recs if k.get("subject") == "layout-value"
                 and k["keytype"] == "SCHEMA")
    assert first == {"subject": "layout-value", "version": 1, "id": sid,
                     "schema": V1.replace(" ", ""), "deleted": False}
    assert ({"keytype": "CONFIG", "subject": "layout-value", "magic": 0},
            {"compatibilityLevel": "FULL"}) in [(k, v) for _, k, v in recs]
    assert ({"keytype": "DELETE_SUBJECT", "subject": "layout-value", "magic": 0},
            {"subject": "layout-value", "version": 1}) in [(k, v) for _, k, v in recs]
    # NOOP markers carry no value (Confluent's reader refuses one with a value).
    noops = [v for _, k, v in recs if k["keytype"] == "NOOP"]
    assert noops and all(v is None for v in noops)
    assert all(k == {"keytype": "NOOP", "magic": 0} for _, k, _ in recs
               if k["keytype"] == "NOOP")
    admin = AdminClient({"bootstrap.servers": rb.bootstrap})
    res = ConfigResource("topic", "_schemas")
    configs = admin.describe_configs([res])[res].result(30)
    assert configs["cleanup.policy"].value == "compact"
    md = admin.list_topics("_schemas", timeout=10).topics["_schemas"]
    assert list(md.partitions) == [0]


def reading_class():
    """A protobuf message class (test.Reading) built from a descriptor, as
    protoc's generated module would define it."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    fdp = descriptor_pb2.FileDescriptorProto(name="reading.proto", package="test",
                                             syntax="proto3")
    m = fdp.message_type.add(name="Reading")
    m.field.add(name="sensor", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    m.field.add(name="value", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("test.Reading"))


def test_protobuf_serializer_through_the_broker(rb):
    from confluent_kafka.schema_registry.protobuf import (ProtobufDeserializer,
                                                          ProtobufSerializer)
    from confluent_kafka.serialization import MessageField, SerializationContext

    Reading = reading_class()
    c = sr_client(rb.http)
    ser = ProtobufSerializer(Reading, c, {"use.deprecated.format": False})
    ctx = SerializationContext("proto-topic", MessageField.VALUE)
    p = Producer({"bootstrap.servers": rb.bootstrap})
    p.produce("proto-topic", value=ser(Reading(sensor="t2", value=3.25), ctx))
    assert p.flush(30) == 0
    status, doc, _ = call(rb.http, "GET", "/subjects/proto-topic-value/versions/latest")
    assert status == 200 and doc["schemaType"] == "PROTOBUF"
    con = Consumer({"bootstrap.servers": rb.bootstrap, "group.id": "proto-readers",
                    "auto.offset.reset": "earliest"})
    con.subscribe(["proto-topic"])
    m = con.poll(30)
    con.close()
    assert m is not None and m.error() is None
    assert int.from_bytes(m.value()[1:5], "big") == doc["id"]
    got = ProtobufDeserializer(Reading, {"use.deprecated.format": False})(m.value(), ctx)
    assert (got.sensor, got.value) == ("t2", 3.25)


def test_protobuf_source_text_with_an_import_and_a_reference(rb):
    dep = 'syntax = "proto3";\npackage shop;\nmessage Money { int64 cents = 1; }\n'
    status, doc, _ = call(rb.http, "POST", "/subjects/money.proto/versions",
                          {"schema": dep, "schemaType": "PROTOBUF"})
    assert status == 200, doc
    order = ('syntax = "proto3";\npackage shop;\nimport "money.proto";\n'
             'import "google/protobuf/timestamp.proto";\n'
             'message Order { Money total = 1; google.protobuf.Timestamp at = 2; }\n')
    ref = [{"name": "money.proto", "subject": "money.proto", "version": 1}]
    status, doc, _ = call(rb.http, "POST", "/subjects/order-proto-value/versions",
                          {"schema": order, "schemaType": "PROTOBUF", "references": ref})
    assert status == 200, doc
    got = call(rb.http, "GET", f"/schemas/ids/{doc['id']}")[1]
    assert (got["schemaType"], got["schema"], got["references"]) == ("PROTOBUF", order.strip(),
                                                                     ref)
    # Asked for in the serialized form (as deserializers do): the compiled descriptor.
    import base64

    from google.protobuf import descriptor_pb2

    serialized = call(rb.http, "GET", f"/schemas/ids/{doc['id']}?format=serialized")[1]
    fd = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized["schema"]))
    assert [m.name for m in fd.message_type] == ["Order"]
    assert list(fd.dependency) == ["money.proto", "google/protobuf/timestamp.proto"]
    # Without the reference the import is missing: protoc's reason, 42201.
    status, doc, _ = call(rb.http, "POST", "/subjects/order-proto2-value/versions",
                          {"schema": order, "schemaType": "PROTOBUF"})
    assert (status, doc["error_code"]) == (422, 42201)
    assert "money.proto" in doc["message"]
    status, doc, _ = call(rb.http, "POST", "/subjects/proto-bad/versions",
                          {"schema": 'syntax = "proto3"; message M { nope a = 1; }',
                           "schemaType": "PROTOBUF"})
    assert (status, doc["error_code"]) == (422, 42201) and "nope" in doc["message"]


def test_async_client_registers_and_reads(rb):
    import asyncio

    from confluent_kafka.schema_registry import AsyncSchemaRegistryClient

    async def run():
        c = AsyncSchemaRegistryClient({"url": f"http://{rb.http}"})
        sid = await c.register_schema("async-value", Schema(record("Async", ("a", "int")),
                                                            "AVRO"))
        got = await AsyncSchemaRegistryClient({"url": f"http://{rb.http}"}).get_schema(sid)
        versions = await c.get_versions("async-value")
        return sid, got.schema_str, versions

    sid, text, versions = asyncio.run(run())
    assert text == record("Async", ("a", "int")).replace(" ", "")
    assert versions == [1]


def test_subject_names_with_slashes_and_unicode(rb):
    from urllib.parse import quote

    c = sr_client(rb.http)
    subject = "team/a:orders-ü"
    sid = c.register_schema(subject, Schema(record("Slashed", ("a", "int")), "AVRO"))
    assert subject in c.get_subjects()
    status, doc, _ = call(rb.http, "GET", f"/subjects/{quote(subject, safe='')}/versions/1")
    assert (status, doc["subject"], doc["id"]) == (200, subject, sid)
