"""The console's message browser decoding registry-framed values
(docs/console.md "Message browser", docs/schema-registry.md "The
console"): Avro, JSON Schema and Protobuf values framed by confluent_kafka's
serializers against the broker's own registry are shown as JSON with their
subject, version and id, over the JSON endpoint and in headless Chromium;
unframed values and hex pages as they are. The broker and browser fixtures
are test_console.py's (their own instances for this module)."""
from __future__ import annotations

import json

from test_console import _api, _cells, _create, _produce, _shot  # noqa: F401
from test_console import admin, browser, cb  # noqa: F401 - fixtures


def _framed_records(cb, topic: str) -> dict[str, int]:
    """An Avro, a JSON Schema and a Protobuf value, framed by confluent_kafka's
    serializers with the broker's registry (subject <topic>-value, level NONE
    so that the three types are versions 1, 2, 3), and one unframed value;
    returns each type's schema id."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    registry = SchemaRegistryClient({"url": f"http://{cb.http}"})
    registry.set_compatibility(f"{topic}-value", "NONE")
    ctx = SerializationContext(topic, MessageField.VALUE)
    avro = AvroSerializer(registry, json.dumps({"type": "record", "name": "User", "fields": [
        {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}))
    js = JSONSerializer(json.dumps({"type": "object", "properties": {
        "sensor": {"type": "string"}, "value": {"type": "number"}}}), registry)
    fdp = descriptor_pb2.FileDescriptorProto(name="reading.proto", package="test",
                                             syntax="proto3")
    m = fdp.message_type.add(name="Reading")
    m.field.add(name="sensor", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    Reading = message_factory.GetMessageClass(pool.FindMessageTypeByName("test.Reading"))
    proto = ProtobufSerializer(Reading, registry, {"use.deprecated.format": False})
    _produce(cb.bootstrap, topic, [
        (0, b"a", avro({"name": "ada", "age": 36}, ctx), None),
        (0, b"j", js({"sensor": "t1", "value": 21.5}, ctx), None),
        (0, b"p", proto(Reading(sensor="t2"), ctx), None),
        (0, b"u", b"plain text", None)])
    return {v.schema.schema_type or "AVRO": v.schema_id for v in
            (registry.get_version(f"{topic}-value", n) for n in (1, 2, 3))}


def test_message_browser_decodes_registry_framed_values(cb, admin, browser):
    topic = "framed"
    _create(admin, topic, 1)
    ids = _framed_records(cb, topic)
    page = _api(cb.http, f"/api/topics/{topic}/0?from=0")
    assert page["schema_note"] is None
    recs = page["records"]
    assert [json.loads(r["value"]) for r in recs[:3]] == [
        {"name": "ada", "age": 36}, {"sensor": "t1", "value": 21.5}, {"sensor": "t2"}]
    assert [r["schema"] for r in recs[:3]] == [
        {"id": ids[t], "type": t, "subject": f"{topic}-value", "version": v}
        for v, t in ((1, "AVRO"), (2, "JSON"), (3, "PROTOBUF"))]
    assert recs[3]["value"] == "plain text" and "schema" not in recs[3]
    # hex shows the bytes as they are (the frame included).
    hexed = _api(cb.http, f"/api/topics/{topic}/0?from=0&count=1&encoding=hex")["records"][0]
    assert hexed["value"].startswith("00" + ids["AVRO"].to_bytes(4, "big").hex())
    assert "schema" not in hexed
    browser.get(f"http://{cb.http}/topics/{topic}/0?from=0")
    values = _cells(browser, "#messages td.value")
    assert values[0] == ('{"name": "ada", "age": 36}\n'
                         f"{topic}-value v1, id {ids['AVRO']}, AVRO")
    assert values[2].endswith(f"{topic}-value v3, id {ids['PROTOBUF']}, PROTOBUF")
    assert values[3] == "plain text"
    _shot(browser, "messages-decoded")


def test_a_logged_in_user_sees_decoded_values(tmp_path):
    """With a SASL listener the console needs a login, and so does the
    registry: the browser asks it with the session's SASL user as Basic
    credentials."""
    import http.client

    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from broker_process import BrokerProcess, _finish, http_address
    from test_console_security import _free_port

    user, password = "alice", "alice-secret"
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            f'user_{user}="{password}";')
    plain, sasl = _free_port(), _free_port()
    b = BrokerProcess(tmp_path / "data", "--http", "127.0.0.1:0",
                      "--set", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,"
                               "SASL_PLAINTEXT:SASL_PLAINTEXT",
                      "--set", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={jaas}",
                      listen=f"SASL_PLAINTEXT://127.0.0.1:{sasl},PLAINTEXT://127.0.0.1:{plain}")
    b.start()
    try:
        address = "%s:%d" % http_address(b)
        registry = SchemaRegistryClient({"url": f"http://{address}",
                                         "basic.auth.user.info": f"{user}:{password}"})
        ser = AvroSerializer(registry, json.dumps({"type": "record", "name": "Login",
                                                   "fields": [{"name": "n", "type": "int"}]}))
        value = ser({"n": 7}, SerializationContext("logged", MessageField.VALUE))
        _produce(f"127.0.0.1:{plain}", "logged", [(0, None, value, None)])
        sid = registry.get_latest_version("logged-value").schema_id

        def request(method, path, body=None, headers=None):
            host, port = address.rsplit(":", 1)
            conn = http.client.HTTPConnection(host, int(port), timeout=30)
            try:
                conn.request(method, path, body=body, headers=headers or {})
                r = conn.getresponse()
                return r.status, dict(r.getheaders()), r.read()
            finally:
                conn.close()

        status, headers, _ = request("GET", "/api/topics/logged/0")
        assert status in (302, 303, 401)  # no session: no page
        status, headers, _ = request(
            "POST", "/login", f"user={user}&password={password}&next=/",
            {"Content-Type": "application/x-www-form-urlencoded"})
        assert status == 303, headers
        cookie = headers["Set-Cookie"].split(";")[0]
        status, _, body = request("GET", "/api/topics/logged/0?from=0",
                                  headers={"Cookie": cookie})
        assert status == 200, body
        page = json.loads(body)
        assert page["schema_note"] is None
        rec = page["records"][0]
        assert json.loads(rec["value"]) == {"n": 7}
        assert rec["schema"] == {"id": sid, "type": "AVRO", "subject": "logged-value",
                                 "version": 1}
    finally:
        _finish([b])


def test_an_https_console_decodes_for_a_certificate_login(tmp_path):
    """The console over HTTPS, logged in by a client certificate (an SSL
    listener requiring them): the browser asks its own registry over HTTPS
    with the broker's certificate, and the page shows the value decoded."""
    import ssl
    import urllib.request

    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from broker_process import BrokerProcess, _finish, http_address
    from test_console_security import _free_port
    from test_security_tls import make_ca, make_cert

    make_ca(tmp_path, "ca")
    make_cert(tmp_path, "ca", "broker", "/CN=localhost", "IP:127.0.0.1,DNS:localhost")
    make_cert(tmp_path, "ca", "reader", "/CN=reader", "DNS:reader")
    (tmp_path / "broker-store.pem").write_text((tmp_path / "broker.key").read_text() +
                                               (tmp_path / "broker.pem").read_text())
    port = _free_port()
    b = BrokerProcess(tmp_path / "data", "--http", "127.0.0.1:0",
                      "--set", "ssl.keystore.type=PEM",
                      "--set", f"ssl.keystore.location={tmp_path / 'broker-store.pem'}",
                      "--set", "ssl.truststore.type=PEM",
                      "--set", f"ssl.truststore.location={tmp_path / 'ca.pem'}",
                      "--set", "ssl.client.auth=required",
                      listen=f"SSL://127.0.0.1:{port}")
    b.start()
    try:
        address = "%s:%d" % http_address(b)
        tls = {"ssl.ca.location": str(tmp_path / "ca.pem"),
               "ssl.certificate.location": str(tmp_path / "reader.pem"),
               "ssl.key.location": str(tmp_path / "reader.key")}
        registry = SchemaRegistryClient({"url": f"https://{address}", **tls})
        ser = AvroSerializer(registry, json.dumps({"type": "record", "name": "Tls",
                                                   "fields": [{"name": "n", "type": "int"}]}))
        value = ser({"n": 9}, SerializationContext("sealed", MessageField.VALUE))
        from confluent_kafka import Producer
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}",
                             "security.protocol": "SSL", **tls})
        producer.produce("sealed", value)
        assert producer.flush(30) == 0
        sid = registry.get_latest_version("sealed-value").schema_id
        ctx = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
        ctx.check_hostname = False
        ctx.load_cert_chain(str(tmp_path / "reader.pem"), str(tmp_path / "reader.key"))
        with urllib.request.urlopen(f"https://{address}/api/topics/sealed/0?from=0",
                                    context=ctx, timeout=30) as r:
            page = json.loads(r.read())
        assert page["schema_note"] is None, page["schema_note"]
        rec = page["records"][0]
        assert json.loads(rec["value"]) == {"n": 9}
        assert rec["schema"] == {"id": sid, "type": "AVRO", "subject": "sealed-value",
                                 "version": 1}
    finally:
        _finish([b])
