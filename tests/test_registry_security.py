"""The schema registry behind the console's security (docs/schema-registry.md
"Security"): with a SASL listener every request needs HTTP Basic
credentials of a SASL user (confluent_kafka's ``basic.auth.user.info``),
checked by the broker; with a TLS key store it is served over HTTPS with
the broker's certificate. One broker: PLAINTEXT (the registry's own
clients), SASL_PLAINTEXT (PLAIN users) and SSL listeners."""
from __future__ import annotations

import base64
import http.client
import json
import ssl

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from broker_process import BrokerProcess, _finish, http_address
from test_console_security import _free_port
from test_security_tls import make_ca, make_cert

ALICE = ("alice", "alice-secret")
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        f'user_{ALICE[0]}="{ALICE[1]}";')
SCHEMA = '{"type":"record","name":"Secret","fields":[{"name":"x","type":"int"}]}'


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("registry-certs")
    make_ca(d, "ca")
    make_cert(d, "ca", "broker", "/CN=localhost", "IP:127.0.0.1,DNS:localhost")
    (d / "broker-store.pem").write_text((d / "broker.key").read_text() +
                                        (d / "broker.pem").read_text())
    return d


@pytest.fixture(scope="module")
def sb(tmp_path_factory, certs):
    plain, sasl, tls = _free_port(), _free_port(), _free_port()
    b = BrokerProcess(
        tmp_path_factory.mktemp("registry-secure"), "--http", "127.0.0.1:0",
        "--set", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,"
                 "SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL",
        "--set", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
        "--set", "ssl.keystore.type=PEM",
        "--set", f"ssl.keystore.location={certs / 'broker-store.pem'}",
        listen=f"SASL_PLAINTEXT://127.0.0.1:{sasl},PLAINTEXT://127.0.0.1:{plain},"
               f"SSL://127.0.0.1:{tls}")
    b.start()
    try:
        host, port = http_address(b)
        b.http = f"{host}:{port}"
        yield b
    finally:
        _finish([b])


def client(sb, certs, user=None) -> SchemaRegistryClient:
    conf = {"url": f"https://{sb.http}", "ssl.ca.location": str(certs / "ca.pem")}
    if user is not None:
        conf["basic.auth.user.info"] = f"{user[0]}:{user[1]}"
    return SchemaRegistryClient(conf)


def test_a_sasl_user_registers_over_https(sb, certs):
    c = client(sb, certs, ALICE)
    sid = c.register_schema("secret-value", Schema(SCHEMA, "AVRO"))
    assert client(sb, certs, ALICE).get_schema(sid).schema_str == SCHEMA


@pytest.mark.parametrize("user", [None, ("alice", "wrong"), ("mallory", "x")])
def test_no_or_wrong_credentials_get_401(sb, certs, user):
    with pytest.raises(SchemaRegistryError) as e:
        client(sb, certs, user).get_subjects()
    assert (e.value.http_status_code, e.value.error_code) == (401, 401)


def test_plain_http_is_not_served(sb, certs):
    conn = http.client.HTTPConnection(*sb.http.split(":"), timeout=10)
    token = base64.b64encode(f"{ALICE[0]}:{ALICE[1]}".encode()).decode()
    with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
        conn.request("GET", "/subjects", headers={"Authorization": f"Basic {token}"})
        conn.getresponse().read()


def test_https_answer_carries_confluents_json(sb, certs):
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    conn = http.client.HTTPSConnection(*sb.http.split(":"), timeout=10, context=ctx)
    token = base64.b64encode(f"{ALICE[0]}:{ALICE[1]}".encode()).decode()
    conn.request("GET", "/schemas/types", headers={"Authorization": f"Basic {token}"})
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.getheader("Content-Type") == "application/vnd.schemaregistry.v1+json"
    assert json.loads(resp.read()) == ["AVRO", "JSON", "PROTOBUF"]


def test_without_a_plaintext_listener_the_registry_says_why(tmp_path):
    """The registry's own clients use a PLAINTEXT listener; a broker with
    only SASL listeners answers 503 naming what is missing (after the
    credentials check), and the rest of the HTTP listener works."""
    b = BrokerProcess(tmp_path / "sasl-only", "--http", "127.0.0.1:0",
                      "--set", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
                      listen=f"SASL_PLAINTEXT://127.0.0.1:{_free_port()}")
    b.start()
    try:
        host, port = http_address(b)
        conn = http.client.HTTPConnection(host, port, timeout=10)
        token = base64.b64encode(f"{ALICE[0]}:{ALICE[1]}".encode()).decode()
        conn.request("GET", "/subjects", headers={"Authorization": f"Basic {token}"})
        resp = conn.getresponse()
        doc = json.loads(resp.read())
        assert resp.status == 503 and "PLAINTEXT listener" in doc["message"]
        conn.request("GET", "/subjects")
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 401
        conn.request("GET", "/healthz")
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (200, b"ok\n")
    finally:
        _finish([b])


def test_a_sasl_only_broker_serves_the_registry_with_its_own_credentials(tmp_path):
    """No PLAINTEXT listener, but the SASL listener's JAAS config carries the
    broker's own username and password (as for inter-broker SASL): the
    registry's clients log in with them, and a SASL user registers and
    reads a schema back."""
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            'username="broker" password="broker-secret" user_broker="broker-secret" '
            f'user_{ALICE[0]}="{ALICE[1]}";')
    b = BrokerProcess(tmp_path / "sasl-own", "--http", "127.0.0.1:0",
                      "--set", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={jaas}",
                      listen=f"SASL_PLAINTEXT://127.0.0.1:{_free_port()}")
    b.start()
    try:
        host, port = http_address(b)
        c = SchemaRegistryClient({"url": f"http://{host}:{port}",
                                  "basic.auth.user.info": f"{ALICE[0]}:{ALICE[1]}"})
        sid = c.register_schema("secret-value", Schema(SCHEMA, "AVRO"))
        assert json.loads(c.get_schema(sid).schema_str) == json.loads(SCHEMA)
        assert c.get_subjects() == ["secret-value"]
        with pytest.raises(SchemaRegistryError) as e:
            SchemaRegistryClient({"url": f"http://{host}:{port}",
                                  "basic.auth.user.info": f"{ALICE[0]}:wrong"}).get_subjects()
        assert e.value.http_status_code == 401
    finally:
        _finish([b])


def test_an_ssl_only_broker_serves_the_registry_with_its_own_certificate(tmp_path, certs):
    """Only an SSL listener that requires client certificates: the
    registry's clients present the broker's own certificate (as brokers do
    to each other), and a client logged in by its certificate over HTTPS
    registers and reads a schema back; one without a certificate is 401."""
    from test_security_tls import make_cert

    make_cert(certs, "ca", "reg-client", "/CN=reg-client", "DNS:reg-client")
    b = BrokerProcess(tmp_path / "ssl-only", "--http", "127.0.0.1:0",
                      "--set", "ssl.keystore.type=PEM",
                      "--set", f"ssl.keystore.location={certs / 'broker-store.pem'}",
                      "--set", "ssl.truststore.type=PEM",
                      "--set", f"ssl.truststore.location={certs / 'ca.pem'}",
                      "--set", "ssl.client.auth=required",
                      listen=f"SSL://127.0.0.1:{_free_port()}")
    b.start()
    try:
        host, port = http_address(b)
        conf = {"url": f"https://{host}:{port}", "ssl.ca.location": str(certs / "ca.pem")}
        c = SchemaRegistryClient({**conf,
                                  "ssl.certificate.location": str(certs / "reg-client.pem"),
                                  "ssl.key.location": str(certs / "reg-client.key")})
        sid = c.register_schema("tls-value", Schema(SCHEMA, "AVRO"))
        assert json.loads(c.get_schema(sid).schema_str) == json.loads(SCHEMA)
        assert c.get_subjects() == ["tls-value"]
        with pytest.raises(SchemaRegistryError) as e:
            SchemaRegistryClient(conf).get_subjects()
        assert e.value.http_status_code == 401
    finally:
        _finish([b])
