"""A write forwarded for a certificate login (docs/schema-registry.md
"Security"): the writer acts for the principal a forwarding broker names
(X-Headrace-Forwarded-Principal), and takes that name only from a
principal allowed ClusterAction on the cluster, as Kafka takes an
Envelope's (KIP-590). One broker, SSL only with client certificates
required, the ACL authorizer on: `CN=broker` (its own certificate) is a
super user, `CN=payments` may WRITE topic pay, `CN=nobody` nothing."""
from __future__ import annotations

import http.client
import json
import ssl

import pytest
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType)

from broker_process import BrokerProcess, _finish, http_address
from headrace.registry.forward import FORWARDED_HEADER, PRINCIPAL_HEADER
from test_console_security import _free_port
from test_security_tls import make_ca, make_cert

SCHEMA = json.dumps({"schema": json.dumps(
    {"type": "record", "name": "Pay", "fields": [{"name": "id", "type": "string"}]})})


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    d = tmp_path_factory.mktemp("forwarded-principal")
    make_ca(d, "ca")
    make_cert(d, "ca", "broker", "/CN=broker", "IP:127.0.0.1,DNS:localhost")
    for user in ("payments", "nobody"):
        make_cert(d, "ca", user, f"/CN={user}", f"DNS:{user}")
    (d / "broker-store.pem").write_text((d / "broker.key").read_text() +
                                        (d / "broker.pem").read_text())
    port = _free_port()
    b = BrokerProcess(
        d / "data", "--http", "127.0.0.1:0",
        "--set", "ssl.keystore.type=PEM",
        "--set", f"ssl.keystore.location={d / 'broker-store.pem'}",
        "--set", "ssl.truststore.type=PEM",
        "--set", f"ssl.truststore.location={d / 'ca.pem'}",
        "--set", "ssl.client.auth=required",
        "--set", "authorizer.class.name=headrace.security.AclAuthorizer",
        "--set", "super.users=User:CN=broker",
        "--set", "offsets.topic.replication.factor=1",
        listen=f"SSL://127.0.0.1:{port}")
    b.start()
    try:
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}",
                             "security.protocol": "SSL", "ssl.ca.location": str(d / "ca.pem"),
                             "ssl.certificate.location": str(d / "broker.pem"),
                             "ssl.key.location": str(d / "broker.key")})
        acls = [AclBinding(ResourceType.TOPIC, "pay", ResourcePatternType.LITERAL,
                           "User:CN=payments", "*", op, AclPermissionType.ALLOW)
                for op in (AclOperation.READ, AclOperation.WRITE)]
        for f in admin.create_acls(acls).values():
            f.result(30)
        host, http_port = http_address(b)
        yield d, f"{host}:{http_port}"
    finally:
        _finish([b])


def _post(tls, cert: str, headers: dict | None = None) -> tuple[int, dict]:
    d, address = tls
    ctx = ssl.create_default_context(cafile=str(d / "ca.pem"))
    ctx.check_hostname = False
    ctx.load_cert_chain(str(d / f"{cert}.pem"), str(d / f"{cert}.key"))
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=30)
    conn.request("POST", "/subjects/pay-value/versions", body=SCHEMA,
                 headers={"Content-Type": "application/vnd.schemaregistry.v1+json",
                          **(headers or {})})
    resp = conn.getresponse()
    return resp.status, json.loads(resp.read() or b"{}")


def _forwarded(principal: str) -> dict:
    return {FORWARDED_HEADER: "7", PRINCIPAL_HEADER: principal}


def test_the_writer_acts_for_the_principal_a_broker_forwards_for(tls):
    assert _post(tls, "payments")[0] == 200
    # The broker's own certificate forwarding for CN=nobody: nobody's rights.
    status, doc = _post(tls, "broker", _forwarded("User:CN=nobody"))
    assert (status, doc["error_code"]) == (403, 40301), doc
    assert "User:CN=nobody" in doc["message"]
    status, doc = _post(tls, "broker", _forwarded("User:CN=payments"))
    assert status == 200, doc


def test_a_client_may_not_name_another_principal(tls):
    # CN=nobody claiming to forward for CN=payments: not a broker.
    status, doc = _post(tls, "nobody", _forwarded("User:CN=payments"))
    assert status == 403 and "may not forward" in doc["message"], doc
    # Its own request: its own (missing) rights.
    status, doc = _post(tls, "nobody")
    assert status == 403, doc
