"""The web console's client-certificate login (docs/console.md "Mutual
TLS"), over HTTPS from Python with real certificates.

One broker for the module with one listener, SSL with
``ssl.client.auth=required``, and the ACL authorizer on. The broker's own
certificate (CN=localhost) and CN=admin are super users; CN=alice may READ
topic `alpha` and DESCRIBE group `mixed` only. Topic `bravo` has records and
its own group; group `mixed` has offsets on both topics. The console reads
with the broker's key store and cuts every answer to what the browser's
principal may see, by asking the broker's authorizer.
"""
from __future__ import annotations

import http.client
import json
import ssl

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)

from broker_process import BrokerProcess, _finish, http_address
from test_security_tls import free_port, make_ca, make_cert

SECRET = "bravo"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("console-mtls-certs")
    make_ca(d, "ca")
    make_ca(d, "rogue-ca")
    make_cert(d, "ca", "broker", "/CN=localhost", "IP:127.0.0.1,DNS:localhost")
    make_cert(d, "ca", "alice", "/O=headrace/CN=alice")
    make_cert(d, "ca", "admin", "/CN=admin")
    make_cert(d, "ca", "nobody", "/CN=nobody")
    make_cert(d, "rogue-ca", "rogue", "/CN=admin")
    (d / "broker-store.pem").write_text((d / "broker.key").read_text() +
                                        (d / "broker.pem").read_text())
    return d


@pytest.fixture(scope="module")
def mb(tmp_path_factory, certs):
    """The broker; ``mb.http`` is its console's "host:port", ``mb.kafka``
    its SSL listener."""
    port = free_port()
    b = BrokerProcess(
        tmp_path_factory.mktemp("console-mtls"),
        "--http", "127.0.0.1:0",
        "--set", "ssl.keystore.type=PEM",
        "--set", f"ssl.keystore.location={certs / 'broker-store.pem'}",
        "--set", "ssl.truststore.type=PEM",
        "--set", f"ssl.truststore.location={certs / 'ca.pem'}",
        "--set", "ssl.client.auth=required",
        "--set", "authorizer.class.name=headrace.security.AclAuthorizer",
        "--set", "super.users=User:CN=localhost;User:CN=admin",
        "--set", "offsets.topic.replication.factor=1",
        listen=f"SSL://127.0.0.1:{port}")
    b.start()
    try:
        host, http_port = http_address(b)
        b.http = f"{host}:{http_port}"
        b.kafka = f"127.0.0.1:{port}"
        yield b
    finally:
        _finish([b])


def _kafka_conf(mb, certs, who: str = "admin") -> dict:
    return {"bootstrap.servers": mb.kafka, "security.protocol": "SSL",
            "ssl.ca.location": str(certs / "ca.pem"),
            "ssl.certificate.location": str(certs / f"{who}.pem"),
            "ssl.key.location": str(certs / f"{who}.key")}


@pytest.fixture(scope="module")
def cluster_data(mb, certs):
    admin = AdminClient(_kafka_conf(mb, certs))
    for t in ("alpha", SECRET):
        admin.create_topics([NewTopic(t, 1, 1)])[t].result(30)
    acls = [AclBinding(ResourceType.TOPIC, "alpha", ResourcePatternType.LITERAL,
                       "User:CN=alice,O=headrace", "*", AclOperation.READ,
                       AclPermissionType.ALLOW),
            AclBinding(ResourceType.GROUP, "mixed", ResourcePatternType.LITERAL,
                       "User:CN=alice,O=headrace", "*", AclOperation.DESCRIBE,
                       AclPermissionType.ALLOW)]
    for f in admin.create_acls(acls).values():
        f.result(30)
    p = Producer({**_kafka_conf(mb, certs), "linger.ms": 5})
    p.produce("alpha", b"alpha-record-0", b"k-alpha")
    p.produce(SECRET, b"bravo-record-0", b"k-bravo")
    assert p.flush(30) == 0
    for group, offsets in ((f"{SECRET}-readers", [TopicPartition(SECRET, 0, 1)]),
                           ("mixed", [TopicPartition("alpha", 0, 1),
                                      TopicPartition(SECRET, 0, 1)])):
        c = Consumer({**_kafka_conf(mb, certs), "group.id": group})
        try:
            c.commit(offsets=offsets, asynchronous=False)
        finally:
            c.close()
    return admin


def _get(mb, certs, path: str, who: str | None, ca: str = "ca") -> tuple[int, str]:
    """GET ``path`` over HTTPS presenting ``who``'s certificate (None: none),
    the key of ``who`` signed by ``ca``."""
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    if who is not None:
        ctx.load_cert_chain(str(certs / f"{who}.pem"), str(certs / f"{who}.key"))
    host, port = mb.http.rsplit(":", 1)
    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=30)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def test_a_browser_without_a_certificate_is_told_to_present_one(mb, certs, cluster_data):
    status, body = _get(mb, certs, "/api/topics", None)
    assert status == 403
    assert "client certificate" in json.loads(body)["error"]
    status, body = _get(mb, certs, "/", None)
    assert status == 403 and "client certificate" in body and SECRET not in body


def test_a_certificate_the_listener_does_not_trust_is_refused(mb, certs):
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _get(mb, certs, "/api/topics", "rogue")


def test_a_principal_sees_only_what_the_authorizer_allows_it(mb, certs, cluster_data):
    status, body = _get(mb, certs, "/api/topics", "alice")
    assert status == 200, body
    assert [t["name"] for t in json.loads(body)["topics"]] == ["alpha"]

    status, body = _get(mb, certs, f"/api/topics/{SECRET}", "alice")
    assert status == 404 and "bravo-record" not in body
    status, body = _get(mb, certs, f"/api/topics/{SECRET}/0", "alice")
    assert status == 404 and "bravo-record" not in body

    status, body = _get(mb, certs, "/api/topics/alpha/0", "alice")
    assert status == 200, body
    assert [r["value"] for r in json.loads(body)["records"]] == ["alpha-record-0"]

    status, body = _get(mb, certs, "/api/groups", "alice")
    assert status == 200, body
    assert [g["group_id"] for g in json.loads(body)["groups"]] == ["mixed"]
    status, body = _get(mb, certs, f"/api/groups/{SECRET}-readers", "alice")
    assert status == 404
    status, body = _get(mb, certs, "/api/groups/mixed", "alice")
    assert status == 200, body
    assert [(o["topic"], o["committed"]) for o in json.loads(body)["offsets"]] == [("alpha", 1)]

    # The overview and every page: the secret topic's name nowhere.
    for path in ("/api/cluster", "/", "/topics", "/groups", "/groups/mixed", "/topics/alpha"):
        status, body = _get(mb, certs, path, "alice")
        assert status == 200, (path, body)
        assert SECRET not in body, path


def test_a_principal_with_no_acls_sees_no_topic(mb, certs, cluster_data):
    status, body = _get(mb, certs, "/api/topics", "nobody")
    assert status == 200, body
    assert json.loads(body)["topics"] == []
    status, body = _get(mb, certs, "/api/topics/alpha/0", "nobody")
    assert status == 404 and "alpha-record" not in body


def test_a_super_user_certificate_sees_everything(mb, certs, cluster_data):
    status, body = _get(mb, certs, "/api/topics", "admin")
    assert status == 200, body
    assert {t["name"] for t in json.loads(body)["topics"]} >= {"alpha", SECRET}
    status, body = _get(mb, certs, f"/api/topics/{SECRET}/0", "admin")
    assert status == 200, body
    assert [r["value"] for r in json.loads(body)["records"]] == ["bravo-record-0"]
    status, body = _get(mb, certs, "/api/groups/mixed", "admin")
    assert sorted(o["topic"] for o in json.loads(body)["offsets"]) == ["alpha", SECRET]


def test_the_principal_is_the_one_the_kafka_listener_names(certs):
    """The console names a certificate with the broker's own code: the name
    the ACLs above were written for, and alice's Kafka consumer is allowed
    exactly what her console pages show."""
    from headrace._core import certificate_principal

    der = ssl.PEM_cert_to_DER_cert((certs / "alice.pem").read_text())
    assert certificate_principal(der) == "User:CN=alice,O=headrace"
    assert certificate_principal(b"not a certificate") == ""


def test_alices_kafka_client_is_allowed_what_her_pages_show(mb, certs, cluster_data):
    c = Consumer({**_kafka_conf(mb, certs, "alice"), "group.id": "mixed",
                  "enable.auto.commit": False})
    try:
        assert {"alpha", SECRET} & set(c.list_topics(timeout=15).topics) == {"alpha"}
        c.assign([TopicPartition("alpha", 0, 0)])
        m = c.poll(15)
        assert m is not None and m.error() is None and m.value() == b"alpha-record-0"
    finally:
        c.close()
