"""``headrace registry subject|schema|config`` and ``headrace consume
--decode`` against a broker's built-in schema registry (real processes):
what they print, their exit codes and their one-line errors with the
registry's error codes."""
from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from broker_process import http_address, shared_broker
from cli_run import headrace, ok, one_error_line
from registry_clients import sr_client

V1 = '{"type":"record","name":"Tick","fields":[{"name":"px","type":"double"}]}'
V2 = ('{"type":"record","name":"Tick","fields":[{"name":"px","type":"double"},'
      '{"name":"venue","type":"string","default":"X"}]}')
BAD = '{"type":"record","name":"Tick","fields":[{"name":"px","type":"string"}]}'


@pytest.fixture(scope="module")
def rb(tmp_path_factory):
    for b in shared_broker(tmp_path_factory, "registry-cli-broker"):
        host, port = http_address(b)
        b.http = f"{host}:{port}"
        b.env = {"HEADRACE_REGISTRY_URL": f"http://{b.http}"}
        yield b


def reg(rb, *args):
    return headrace("registry", *args, env=rb.env)


def test_register_get_check_and_delete(rb, tmp_path):
    for name, text in (("v1.avsc", V1), ("v2.avsc", V2), ("bad.avsc", BAD)):
        (tmp_path / name).write_text(text)
    out = ok(reg(rb, "schema", "register", "ticks-value", "--schema", str(tmp_path / "v1.avsc"),
                 "--format", "json")).stdout
    first = json.loads(out)
    assert first["subject"] == "ticks-value" and first["version"] == 1
    ok(reg(rb, "schema", "register", "ticks-value", "--schema", str(tmp_path / "v2.avsc")))
    one_error_line(reg(rb, "schema", "register", "ticks-value", "--schema",
                       str(tmp_path / "bad.avsc")), "error 409", "incompatible")
    r = reg(rb, "schema", "check", "ticks-value", "--schema", str(tmp_path / "bad.avsc"))
    assert r.returncode == 1 and r.stdout.startswith("incompatible:")
    assert ok(reg(rb, "schema", "check", "ticks-value", "--schema",
                  str(tmp_path / "v2.avsc"))).stdout == "compatible\n"
    assert "ticks-value" in ok(reg(rb, "subject", "list")).stdout.split()
    got = json.loads(ok(reg(rb, "schema", "get", "ticks-value", "--format", "json")).stdout)
    assert (got["version"], json.loads(got["schema"])) == (2, json.loads(V2))
    by_id = json.loads(ok(reg(rb, "schema", "get", "--id", str(first["id"]),
                              "--format", "json")).stdout)
    assert json.loads(by_id["schema"]) == json.loads(V1)
    assert ok(reg(rb, "subject", "delete", "ticks-value")).stdout == \
        "ticks-value: deleted versions 1, 2\n"
    assert "ticks-value" not in ok(reg(rb, "subject", "list")).stdout.split()
    assert "ticks-value" in ok(reg(rb, "subject", "list", "--deleted")).stdout.split()
    ok(reg(rb, "subject", "delete", "ticks-value", "--permanent"))
    one_error_line(reg(rb, "schema", "get", "ticks-value"), "40401")


def test_config_get_and_set(rb):
    assert ok(reg(rb, "config", "get")).stdout == "BACKWARD\n"
    assert ok(reg(rb, "config", "set", "cfg-cli", "--level", "full_transitive")).stdout == \
        "FULL_TRANSITIVE\n"
    assert ok(reg(rb, "config", "get", "cfg-cli")).stdout == "FULL_TRANSITIVE\n"
    one_error_line(reg(rb, "config", "set", "--level", "SIDEWAYS"), "42203")


def test_mode_get_and_set(rb, tmp_path):
    (tmp_path / "v1.avsc").write_text(V1)
    assert ok(reg(rb, "mode", "get")).stdout == "READWRITE\n"
    assert ok(reg(rb, "mode", "set", "frozen-value", "--mode", "readonly")).stdout == \
        "READONLY\n"
    assert ok(reg(rb, "mode", "get", "frozen-value")).stdout == "READONLY\n"
    one_error_line(reg(rb, "schema", "register", "frozen-value", "--schema",
                       str(tmp_path / "v1.avsc")), "42205")
    one_error_line(reg(rb, "mode", "set", "--mode", "SOMETIMES"), "42204")


def test_unreachable_registry_is_one_line(rb):
    r = headrace("registry", "subject", "list", "--url", "http://127.0.0.1:1")
    one_error_line(r, "cannot reach the schema registry")


def test_consume_decode_shows_avro_as_json(rb):
    ser = AvroSerializer(sr_client(rb.http), V2)
    ctx = SerializationContext("ticks", MessageField.VALUE)
    p = Producer({"bootstrap.servers": rb.bootstrap})
    p.produce("ticks", value=ser({"px": 1.5, "venue": "XLON"}, ctx))
    p.produce("ticks", value=b"not framed")
    assert p.flush(30) == 0
    r = ok(headrace("consume", "ticks", "--decode", brokers=rb.bootstrap, env=rb.env))
    assert r.stdout.splitlines() == ['{"px": 1.5, "venue": "XLON"}', "not framed"]
    raw = ok(headrace("consume", "ticks", "--encoding", "hex", brokers=rb.bootstrap))
    assert raw.stdout.startswith("00")  # without --decode: the framed bytes
    bad = headrace("consume", "ticks", "--decode", "--registry-url", "http://127.0.0.1:1",
                   brokers=rb.bootstrap)
    one_error_line(bad, "cannot ask the schema registry")


def test_consume_decode_shows_framed_keys_too(rb):
    key_schema = '{"type":"record","name":"TickKey","fields":[{"name":"venue","type":"string"}]}'
    key_ser = AvroSerializer(sr_client(rb.http), key_schema)
    ser = AvroSerializer(sr_client(rb.http), V2)
    p = Producer({"bootstrap.servers": rb.bootstrap})
    p.produce("keyed-ticks",
              key=key_ser({"venue": "XPAR"}, SerializationContext("keyed-ticks", MessageField.KEY)),
              value=ser({"px": 2.5, "venue": "XPAR"},
                        SerializationContext("keyed-ticks", MessageField.VALUE)))
    p.produce("keyed-ticks", key=b"plain-key", value=b"plain")
    assert p.flush(30) == 0
    r = ok(headrace("consume", "keyed-ticks", "--decode", "--format", "%k|%s\\n",
                    brokers=rb.bootstrap, env=rb.env))
    assert r.stdout.splitlines() == ['{"venue": "XPAR"}|{"px": 2.5, "venue": "XPAR"}',
                                     "plain-key|plain"]


def test_consume_decode_shows_protobuf_as_json(rb):
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    from test_registry_api import reading_class

    Reading = reading_class()
    ser = ProtobufSerializer(Reading, sr_client(rb.http), {"use.deprecated.format": False})
    ctx = SerializationContext("readings", MessageField.VALUE)
    p = Producer({"bootstrap.servers": rb.bootstrap})
    p.produce("readings", value=ser(Reading(sensor="t9", value=-4.5), ctx))
    assert p.flush(30) == 0
    r = ok(headrace("consume", "readings", "--decode", brokers=rb.bootstrap, env=rb.env))
    assert json.loads(r.stdout) == {"sensor": "t9", "value": -4.5}


def test_consume_decode_protobuf_source_with_references(rb):
    """A .proto registered as text, importing a referenced schema and a
    well-known type: --decode builds the writer's message from the
    registry's serialized descriptors."""
    import base64

    from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2
    from google.protobuf.message_factory import GetMessageClass

    from registry_clients import call

    money = 'syntax = "proto3";\npackage shop;\nmessage Money { int64 cents = 1; }\n'
    order = ('syntax = "proto3";\npackage shop;\nimport "money.proto";\n'
             'import "google/protobuf/timestamp.proto";\n'
             'message Order { Money total = 1; google.protobuf.Timestamp at = 2; }\n')
    assert call(rb.http, "POST", "/subjects/money-cli/versions",
                {"schema": money, "schemaType": "PROTOBUF"})[0] == 200
    status, doc, _ = call(rb.http, "POST", "/subjects/orders-pb-value/versions",
                          {"schema": order, "schemaType": "PROTOBUF", "references": [
                              {"name": "money.proto", "subject": "money-cli", "version": 1}]})
    assert status == 200, doc
    sid = doc["id"]
    # The producer's side, built from the registry's descriptors.
    pool = descriptor_pool.DescriptorPool()
    ts = descriptor_pb2.FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(ts)
    pool.Add(ts)
    for path, name in ((f"/subjects/money-cli/versions/1?format=serialized", "money.proto"),
                       (f"/schemas/ids/{sid}?format=serialized", "order.proto")):
        fd = descriptor_pb2.FileDescriptorProto.FromString(
            base64.b64decode(call(rb.http, "GET", path)[1]["schema"]))
        fd.name = name
        pool.Add(fd)
    Order = GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
    msg = Order()
    msg.total.cents = 250
    msg.at.seconds = 1700000000
    framed = b"\x00" + sid.to_bytes(4, "big") + b"\x00" + msg.SerializeToString()
    p = Producer({"bootstrap.servers": rb.bootstrap})
    p.produce("orders-pb", value=framed)
    assert p.flush(30) == 0
    r = ok(headrace("consume", "orders-pb", "--decode", brokers=rb.bootstrap, env=rb.env))
    assert json.loads(r.stdout) == {"total": {"cents": "250"}, "at": "2023-11-14T22:13:20Z"}, \
        repr(r.stdout)
