"""``valueFormat=avro``: the Spark source decodes registry-framed values into
a typed ``value`` struct and the sink encodes one back (docs/spark.md).
Real local Spark, one real broker for the module with its built-in schema
registry; records framed and read back with confluent_kafka's
AvroSerializer / AvroDeserializer."""
from __future__ import annotations

import datetime
import json

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from broker_process import http_address, shared_broker
from spark_session import create_topic, load_headrace, produce, spark  # noqa: F401
from spark_sink_check import read_committed_values

pytestmark = pytest.mark.timeout(300)
UTC = datetime.timezone.utc

ADDRESS = {"type": "record", "name": "Address", "fields": [
    {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "int"]}]}
V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "address", "type": ADDRESS},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "status", "type": {"type": "enum", "name": "Status",
                                "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
V2 = {**V1, "fields": V1["fields"] + [{"name": "priority", "type": "int", "default": 3}]}


def _order(i: int, **extra) -> dict:
    return {"id": i, "address": {"city": f"city{i}", "zip": None if i % 2 else 1000 + i},
            "tags": [f"t{j}" for j in range(i % 3)], "note": None if i % 3 else f"note {i}",
            "status": ("NEW", "PAID", "SHIPPED")[i % 3],
            "at": datetime.datetime(2026, 1, 1, tzinfo=UTC) + datetime.timedelta(seconds=i),
            **extra}


@pytest.fixture(scope="module")
def avro_broker(tmp_path_factory):
    for b in shared_broker(tmp_path_factory, "spark-avro-broker"):
        host, port = http_address(b)
        b.registry = f"http://{host}:{port}"
        yield b


def _framed(b, topic: str, schema: dict, records: list) -> None:
    client = SchemaRegistryClient({"url": b.registry})
    ser = AvroSerializer(client, json.dumps(schema))
    ctx = SerializationContext(topic, MessageField.VALUE)
    produce(b.bootstrap, topic, ({"value": ser(r, ctx), "key": str(r["id"]).encode()}
                                 for r in records))


def _read(spark, b, topic: str, **options):
    return load_headrace(spark.read, b.bootstrap, subscribe=topic,
                         **{"valueFormat": "avro", "schema.registry.url": b.registry, **options})


def _as_dict(row) -> dict:
    d = row.asDict(recursive=True)
    d["at"] = d["at"].replace(tzinfo=UTC)   # pyspark: naive, session time zone UTC
    return d


def test_typed_read_evolution_and_exactly_once_write_back(spark, avro_broker):
    b = avro_broker
    create_topic(b.bootstrap, "av-orders", partitions=2)
    old = [_order(i) for i in range(30)]
    _framed(b, "av-orders", V1, old)
    df = _read(spark, b, "av-orders")
    value = df.schema["value"].dataType
    assert value.simpleString() == (
        "struct<id:bigint,address:struct<city:string,zip:int>,tags:array<string>,"
        "note:string,status:string,at:timestamp>")
    assert [f.nullable for f in value.fields] == [False, False, False, True, False, False]
    assert df.columns[1:] == ["value", "topic", "partition", "offset", "timestamp",
                              "timestampType"]
    got = sorted((_as_dict(r.value) for r in df.select("value").collect()),
                 key=lambda d: d["id"])
    assert got == old

    # v2 adds a field with a default: old records read with v2 get it.
    new = [_order(i, priority=i) for i in range(30, 50)]
    _framed(b, "av-orders", V2, new)
    df = _read(spark, b, "av-orders")
    assert df.schema["value"].dataType.fieldNames()[-1] == "priority"
    got = sorted((_as_dict(r.value) for r in df.select("value").collect()),
                 key=lambda d: d["id"])
    assert got == [dict(o, priority=3) for o in old] + new
    # valueSchemaId picks the reader schema: v1 reads the v2 records too.
    v1_id = SchemaRegistryClient({"url": b.registry}).get_version("av-orders-value", 1).schema_id
    df = _read(spark, b, "av-orders", valueSchemaId=str(v1_id))
    assert df.filter("value.id >= 30").count() == 20
    assert "priority" not in df.schema["value"].dataType.fieldNames()

    # Written back framed under the exactly-once sink, twice with one jobId.
    create_topic(b.bootstrap, "av-copy", partitions=2)
    out = _read(spark, b, "av-orders").select("key", "value").repartition(3)
    for _ in range(2):
        (out.write.format("headrace").option("kafka.bootstrap.servers", b.bootstrap)
         .option("topic", "av-copy").option("deliveryGuarantee", "exactly-once")
         .option("jobId", "av-copy-1").option("valueFormat", "avro")
         .option("schema.registry.url", b.registry).mode("append").save())
    client = SchemaRegistryClient({"url": b.registry})
    de = AvroDeserializer(client)
    ctx = SerializationContext("av-copy", MessageField.VALUE)
    copied = [de(v, ctx) for v in read_committed_values(b.bootstrap, "av-copy", 2, text=False)]
    assert len(copied) == 50
    assert sorted(copied, key=lambda d: d["id"]) == [dict(o, priority=3) for o in old] + new
    registered = client.get_latest_version("av-copy-value")
    assert json.loads(registered.schema.schema_str)["name"] == "topLevelRecord"
    # ... and the source reads the copy with the schema the sink registered.
    assert _read(spark, b, "av-copy").filter("value.status = 'PAID'").count() == 17


def test_undecodable_values_failfast_or_null(spark, avro_broker):
    b = avro_broker
    create_topic(b.bootstrap, "av-bad", partitions=1)
    _framed(b, "av-bad", V1, [_order(0), _order(1)])
    produce(b.bootstrap, "av-bad", [{"value": b"plain text"},
                                    {"value": b"\x00\x00\x00\x7f\xffxx"},   # unknown id
                                    {"value": None}])
    _framed(b, "av-bad", V1, [_order(5)])
    with pytest.raises(Exception) as e:
        _read(spark, b, "av-bad").collect()
    assert "av-bad-0 offset 2: the value is not registry-framed" in str(e.value)
    rows = _read(spark, b, "av-bad", mode="PERMISSIVE").orderBy("offset").collect()
    assert [r.value.id if r.value else None for r in rows] == [0, 1, None, None, None, 5]
    with pytest.raises(Exception) as e:
        _read(spark, b, "av-bad", startingOffsets='{"av-bad":{"0":3}}').collect()
    assert "av-bad-0 offset 3: schema id 32767 is unknown to the registry" in str(e.value)


def test_streaming_read_decodes_each_micro_batch(spark, avro_broker, tmp_path):
    b = avro_broker
    create_topic(b.bootstrap, "av-stream", partitions=2)
    _framed(b, "av-stream", V1, [_order(i) for i in range(40)])
    q = (load_headrace(spark.readStream, b.bootstrap, subscribe="av-stream",
                       startingOffsets="earliest", maxOffsetsPerTrigger="15",
                       valueFormat="avro", **{"schema.registry.url": b.registry})
         .selectExpr("value.id AS id", "value.address.city AS city").writeStream
         .format("memory").queryName("av_stream").trigger(availableNow=True)
         .option("checkpointLocation", str(tmp_path / "ck")).start())
    q.awaitTermination(240)
    rows = spark.sql("SELECT id, city FROM av_stream").collect()
    assert sorted((r.id, r.city) for r in rows) == [(i, f"city{i}") for i in range(40)]


@pytest.mark.parametrize("options, sink, message", [
    ({"valueFormat": "avro"}, False, "needs the option 'schema.registry.url'"),
    ({"valueFormat": "xml", "schema.registry.url": "http://x"}, True, "must be one of avro"),
    ({"valueFormat": "xml", "schema.registry.url": "http://x"}, False, "must be one of avro"),
    ({"schema.registry.url": "http://x"}, False, "needs the option 'valueFormat'"),
    ({"valueFormat": "avro", "schema.registry.url": "http://x", "valueSchemaId": "-3"}, False,
     "'valueSchemaId' must be a schema id"),
    ({"valueFormat": "avro", "schema.registry.url": "http://x", "valueSchemaId": "1",
      "valueSchemaSubject": "s"}, True, "not both"),
    ({"valueFormat": "avro", "schema.registry.url": "http://x", "mode": "DROP"}, False,
     "'mode' must be one of"),
    ({"valueFormat": "avro", "schema.registry.url": "http://x", "mode": "FAILFAST"}, True,
     "reads only"),
    ({"valueFormat": "avro", "schema.registry.url": "http://x",
      "schema.registry.no.such": "1"}, False, "schema.registry"),
])
def test_bad_value_format_options_are_refused(options, sink, message):
    from headrace.spark.options import HeadraceOptionError
    from headrace.spark.registry_format import parse_registry_format

    with pytest.raises(HeadraceOptionError, match=message):
        parse_registry_format({k.lower(): v for k, v in options.items()}, sink=sink)


def test_avro_types_that_spark_cannot_hold_are_refused_by_name():
    from headrace.spark.avro_types import spark_type
    from headrace.spark.options import HeadraceOptionError

    union = {"type": "record", "name": "R", "fields": [{"name": "u", "type": ["int", "string"]}]}
    with pytest.raises(HeadraceOptionError, match="u is a union of several non-null types"):
        spark_type(union)
    tree = {"type": "record", "name": "Node", "fields": [{"name": "next",
                                                          "type": ["null", "Node"]}]}
    with pytest.raises(HeadraceOptionError, match="recursive"):
        spark_type(tree)


ORDER_JSON = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order",
              "type": "object", "properties": {
                  "id": {"type": "integer"},
                  "address": {"$ref": "#/definitions/Address"},
                  "tags": {"type": "array", "items": {"type": "string"}},
                  "note": {"type": ["null", "string"]},
                  "price": {"type": "number"}},
              "required": ["id"],
              "definitions": {"Address": {"type": "object", "properties": {
                  "city": {"type": "string"}, "zip": {"type": ["integer", "null"]}}}}}


def test_json_schema_values_read_typed_and_written_back(spark, avro_broker):
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

    b = avro_broker
    create_topic(b.bootstrap, "js-orders", partitions=2)
    client = SchemaRegistryClient({"url": b.registry})
    ser = JSONSerializer(json.dumps(ORDER_JSON), client)
    ctx = SerializationContext("js-orders", MessageField.VALUE)
    records = [{"id": i, "address": {"city": f"c{i}", "zip": None if i % 2 else i},
                "tags": [f"t{j}" for j in range(i % 3)], "note": None if i % 3 else "n",
                "price": i + 0.5} for i in range(40)]
    produce(b.bootstrap, "js-orders", ({"value": ser(r, ctx), "partition": r["id"] % 2}
                                       for r in records))
    df = load_headrace(spark.read, b.bootstrap, subscribe="js-orders", valueFormat="json",
                       **{"schema.registry.url": b.registry})
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,address:struct<city:string,zip:bigint>,tags:array<string>,"
        "note:string,price:double>")
    got = sorted((r.value.asDict(recursive=True) for r in df.select("value").collect()),
                 key=lambda d: d["id"])
    assert got == records

    create_topic(b.bootstrap, "js-copy", partitions=1)
    (df.select("value").write.format("headrace").option("kafka.bootstrap.servers", b.bootstrap)
     .option("topic", "js-copy").option("deliveryGuarantee", "exactly-once")
     .option("jobId", "js-copy-1").option("valueFormat", "json")
     .option("schema.registry.url", b.registry).mode("append").save())
    de = JSONDeserializer(None, schema_registry_client=client)
    copied = [de(v, SerializationContext("js-copy", MessageField.VALUE))
              for v in read_committed_values(b.bootstrap, "js-copy", 1, text=False)]
    assert sorted(copied, key=lambda d: d["id"]) == records

    produce(b.bootstrap, "js-orders", [{"value": b"\x00" + ser(records[0], ctx)[1:5] + b"{oops",
                                        "partition": 0}])
    with pytest.raises(Exception) as e:
        df.collect()   # planned before: reads up to the old end
        load_headrace(spark.read, b.bootstrap, subscribe="js-orders", valueFormat="json",
                      **{"schema.registry.url": b.registry}).collect()
    assert "js-orders-0 offset 20: its JSON payload cannot be read" in str(e.value)
    rows = load_headrace(spark.read, b.bootstrap, subscribe="js-orders", valueFormat="json",
                         mode="PERMISSIVE", **{"schema.registry.url": b.registry}).collect()
    assert len(rows) == 41 and sum(r.value is None for r in rows) == 1


KINDS = {"type": "record", "name": "Kinds", "fields": [
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                               "scale": 2}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "counts", "type": {"type": "map", "values": "long"}},
    {"name": "blob", "type": "bytes"},
    {"name": "digest", "type": {"type": "fixed", "name": "MD5", "size": 4}},
    {"name": "ratio", "type": ["null", "double"], "default": None}]}


def test_logical_types_maps_and_bytes_round_trip(spark, avro_broker):
    import decimal
    import uuid

    b = avro_broker
    create_topic(b.bootstrap, "av-kinds", partitions=1)
    records = [{"price": decimal.Decimal(f"{i}.25"), "day": datetime.date(2026, 1, 1 + i),
                "local": datetime.datetime(2026, 2, 3, 4, 5, 6, i),
                "uid": str(uuid.UUID(int=i)), "counts": {"a": i, "b": -i},
                "blob": bytes([i]) * i, "digest": b"%04d" % i,
                "ratio": None if i % 2 else i / 4} for i in range(6)]
    _framed_plain(b, "av-kinds", KINDS, records)
    df = _read(spark, b, "av-kinds")
    assert df.schema["value"].dataType.simpleString() == (
        "struct<price:decimal(9,2),day:date,local:timestamp_ntz,uid:string,"
        "counts:map<string,bigint>,blob:binary,digest:binary,ratio:double>")
    got = [r.value.asDict() for r in df.orderBy("offset").collect()]
    assert [dict(g, blob=bytes(g["blob"]), digest=bytes(g["digest"])) for g in got] == records
    create_topic(b.bootstrap, "av-kinds-copy", partitions=1)
    (df.select("value").write.format("headrace").option("kafka.bootstrap.servers", b.bootstrap)
     .option("topic", "av-kinds-copy").option("valueFormat", "avro")
     .option("schema.registry.url", b.registry).mode("append").save())
    de = AvroDeserializer(SchemaRegistryClient({"url": b.registry}))
    ctx = SerializationContext("av-kinds-copy", MessageField.VALUE)
    back = [de(v, ctx) for v in read_committed_values(b.bootstrap, "av-kinds-copy", 1,
                                                       text=False)]
    # Written from Spark types: uuid as a plain string, fixed as bytes.
    assert back == records


def _framed_plain(b, topic: str, schema: dict, records: list) -> None:
    """Framed like _framed, keys none (the records have no id)."""
    client = SchemaRegistryClient({"url": b.registry})
    ser = AvroSerializer(client, json.dumps(schema))
    ctx = SerializationContext(topic, MessageField.VALUE)
    produce(b.bootstrap, topic, ({"value": ser(r, ctx)} for r in records))


def _reading_class():
    """test.Reading (a nested message, a repeated field, an enum, a map, a
    Timestamp), built from a descriptor as protoc's module would define it."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from google.protobuf import timestamp_pb2  # noqa: F401 - registers timestamp.proto

    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="reading.proto", package="test",
                                             syntax="proto3",
                                             dependency=["google/protobuf/timestamp.proto"])
    m = fdp.message_type.add(name="Reading")
    place = m.nested_type.add(name="Place")
    place.field.add(name="room", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry = m.nested_type.add(name="LabelsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    kind = m.enum_type.add(name="Kind")
    kind.value.add(name="HEAT", number=0)
    kind.value.add(name="COLD", number=1)
    for name, number, t, extra in (
            ("sensor", 1, F.TYPE_STRING, {}), ("value", 2, F.TYPE_DOUBLE, {}),
            ("place", 3, F.TYPE_MESSAGE, {"type_name": ".test.Reading.Place"}),
            ("samples", 4, F.TYPE_INT64, {"label": F.LABEL_REPEATED}),
            ("kind", 5, F.TYPE_ENUM, {"type_name": ".test.Reading.Kind"}),
            ("labels", 6, F.TYPE_MESSAGE, {"type_name": ".test.Reading.LabelsEntry",
                                           "label": F.LABEL_REPEATED}),
            ("at", 7, F.TYPE_MESSAGE, {"type_name": ".google.protobuf.Timestamp"})):
        m.field.add(name=name, number=number, type=t,
                    **{"label": F.LABEL_OPTIONAL, **extra})
    pool = descriptor_pool.DescriptorPool()
    from google.protobuf import descriptor_pool as dp
    known = descriptor_pb2.FileDescriptorProto()
    dp.Default().FindFileByName("google/protobuf/timestamp.proto").CopyToProto(known)
    pool.Add(known)
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("test.Reading"))


def test_protobuf_values_read_typed(spark, avro_broker):
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    b = avro_broker
    Reading = _reading_class()
    create_topic(b.bootstrap, "pb-readings", partitions=1)
    ser = ProtobufSerializer(Reading, SchemaRegistryClient({"url": b.registry}),
                             {"use.deprecated.format": False})
    ctx = SerializationContext("pb-readings", MessageField.VALUE)
    msgs = []
    for i in range(10):
        m = Reading(sensor=f"s{i}", value=i / 2, samples=list(range(i % 3)), kind=i % 2)
        if i % 2:
            m.place.room = f"r{i}"
        m.labels["n"] = i
        m.at.FromDatetime(datetime.datetime(2026, 3, 1, 0, 0, i))
        msgs.append(m)
    produce(b.bootstrap, "pb-readings", ({"value": ser(m, ctx)} for m in msgs))
    produce(b.bootstrap, "pb-readings", [{"value": b"not framed"}])
    df = _read(spark, b, "pb-readings", valueFormat="protobuf", mode="PERMISSIVE")
    assert df.schema["value"].dataType.simpleString() == (
        "struct<sensor:string,value:double,place:struct<room:string>,samples:array<bigint>,"
        "kind:string,labels:map<string,int>,at:timestamp>")
    rows = [r.value for r in df.orderBy("offset").collect()]
    assert rows[10] is None
    got = [r.asDict(recursive=True) for r in rows[:10]]
    want = [{"sensor": f"s{i}", "value": i / 2, "place": {"room": f"r{i}"} if i % 2 else None,
             "samples": list(range(i % 3)), "kind": ("HEAT", "COLD")[i % 2], "labels": {"n": i},
             "at": datetime.datetime(2026, 3, 1, 0, 0, i)} for i in range(10)]
    assert got == want
    with pytest.raises(Exception) as e:
        _read(spark, b, "pb-readings", valueFormat="protobuf").collect()
    assert "pb-readings-0 offset 10: the value is not registry-framed" in str(e.value)


def test_protobuf_values_written_back_framed(spark, avro_broker):
    """Typed Protobuf rows read from one topic and written to another with
    the subject's registered schema: confluent_kafka's ProtobufDeserializer
    reads back the same messages."""
    from confluent_kafka.schema_registry.protobuf import (ProtobufDeserializer,
                                                          ProtobufSerializer)

    b = avro_broker
    Reading = _reading_class()
    create_topic(b.bootstrap, "pb-src", partitions=1)
    create_topic(b.bootstrap, "pb-out", partitions=1)
    registry = SchemaRegistryClient({"url": b.registry})
    ser = ProtobufSerializer(Reading, registry, {"use.deprecated.format": False})
    msgs = []
    for i in range(6):
        m = Reading(sensor=f"s{i}", value=i / 4, samples=list(range(i % 3)), kind=i % 2)
        if i % 2:
            m.place.room = f"r{i}"
        m.labels["n"] = i
        m.at.FromDatetime(datetime.datetime(2026, 4, 1, 0, 0, i))
        msgs.append(m)
    produce(b.bootstrap, "pb-src", ({"value": ser(m, SerializationContext(
        "pb-src", MessageField.VALUE))} for m in msgs))
    df = _read(spark, b, "pb-src", valueFormat="protobuf")
    (df.select("value").write.format("headrace").option("kafka.bootstrap.servers", b.bootstrap)
     .option("topic", "pb-out").option("valueFormat", "protobuf")
     .option("schema.registry.url", b.registry).option("valueSchemaSubject", "pb-src-value")
     .mode("append").save())
    de = ProtobufDeserializer(Reading, {"use.deprecated.format": False})
    ctx = SerializationContext("pb-out", MessageField.VALUE)
    got = [de(v, ctx) for v in read_committed_values(b.bootstrap, "pb-out", 1, text=False)]
    assert sorted(got, key=lambda m: m.sensor) == msgs


KEY = {"type": "record", "name": "OrderKey", "fields": [{"name": "id", "type": "long"},
                                                        {"name": "region", "type": "string"}]}


def test_key_format_reads_and_writes_framed_keys(spark, avro_broker):
    b = avro_broker
    client = SchemaRegistryClient({"url": b.registry})
    keys = AvroSerializer(client, json.dumps(KEY))
    values = AvroSerializer(client, json.dumps(V1))
    create_topic(b.bootstrap, "av-keyed", partitions=1)
    kctx = SerializationContext("av-keyed", MessageField.KEY)
    vctx = SerializationContext("av-keyed", MessageField.VALUE)
    produce(b.bootstrap, "av-keyed", ({"key": keys({"id": i, "region": f"r{i % 2}"}, kctx),
                                       "value": values(_order(i), vctx)} for i in range(8)))
    df = _read(spark, b, "av-keyed", keyFormat="avro")
    assert df.schema["key"].dataType.simpleString() == "struct<id:bigint,region:string>"
    rows = df.orderBy("offset").collect()
    assert [(r.key.id, r.key.region, r.value.id) for r in rows] == \
        [(i, f"r{i % 2}", i) for i in range(8)]
    create_topic(b.bootstrap, "av-keyed-copy", partitions=1)
    (df.select("key", "value").write.format("headrace")
     .option("kafka.bootstrap.servers", b.bootstrap).option("topic", "av-keyed-copy")
     .option("keyFormat", "avro").option("valueFormat", "json")
     .option("schema.registry.url", b.registry).mode("append").save())
    assert client.get_latest_version("av-keyed-copy-key").schema.schema_type == "AVRO"
    back = _read(spark, b, "av-keyed-copy", keyFormat="avro", valueFormat="json")
    assert sorted((r.key.id, r.key.region, r.value.id, r.value.status)
                  for r in back.collect()) == \
        [(i, f"r{i % 2}", i, ("NEW", "PAID", "SHIPPED")[i % 3]) for i in range(8)]


def test_sink_with_a_given_schema_id_and_an_incompatible_schema(spark, avro_broker):
    b = avro_broker
    client = SchemaRegistryClient({"url": b.registry})
    create_topic(b.bootstrap, "av-given", partitions=1)
    _framed(b, "av-given", V1, [_order(i) for i in range(5)])
    v1_id = client.get_latest_version("av-given-value").schema_id
    df = _read(spark, b, "av-given").select("value")
    create_topic(b.bootstrap, "av-given-copy", partitions=1)

    def save(frame, **options):
        w = (frame.write.format("headrace").option("kafka.bootstrap.servers", b.bootstrap)
             .option("topic", "av-given-copy").option("valueFormat", "avro")
             .option("schema.registry.url", b.registry))
        for k, v in options.items():
            w = w.option(k, v)
        w.mode("append").save()
    save(df, valueSchemaId=str(v1_id))   # the enum and timestamp-millis of V1, not derived
    de = AvroDeserializer(client)
    ctx = SerializationContext("av-given-copy", MessageField.VALUE)
    raw = read_committed_values(b.bootstrap, "av-given-copy", 1, text=False)
    assert {int.from_bytes(v[1:5], "big") for v in raw} == {v1_id}
    assert [de(v, ctx) for v in raw] == [_order(i) for i in range(5)]
    # A struct whose schema the subject's BACKWARD check refuses: the registry's 409.
    with pytest.raises(Exception) as e:
        save(spark.createDataFrame([((1,),)], "value struct<id: string>"),
             valueSchemaSubject="av-given-value")
    assert "HTTP 409" in str(e.value) and "av-given-value" in str(e.value)
