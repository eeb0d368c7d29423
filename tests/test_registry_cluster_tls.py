"""The schema registry of a cluster whose only listener is SSL with client
certificates required (docs/schema-registry.md "Security"): the
registry's own clients present the broker's certificate, a client logs in
over HTTPS by its certificate, and a write sent to a broker that is not
the writer is forwarded for that client's principal (the forwarding broker
authenticated by its own certificate, as Kafka's Envelope)."""
from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from headrace import EmbeddedCluster
from test_security_tls import make_ca, make_cert

SCHEMA_V1 = json.dumps({"type": "record", "name": "Pay",
                        "fields": [{"name": "id", "type": "string"}]})
SCHEMA_V2 = json.dumps({"type": "record", "name": "Pay",
                        "fields": [{"name": "id", "type": "string"},
                                   {"name": "note", "type": "string", "default": ""}]})


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("registry-tls-certs")
    make_ca(d, "ca")
    make_cert(d, "ca", "broker", "/CN=broker", "IP:127.0.0.1,DNS:localhost")
    make_cert(d, "ca", "payments", "/CN=payments", "DNS:payments")
    (d / "broker-store.pem").write_text((d / "broker.key").read_text() +
                                        (d / "broker.pem").read_text())
    return d


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, certs):
    settings = {
        "zookeeper.session.timeout.ms": 6000,
        "listener.security.protocol.map": "INTERNAL:SSL",
        "inter.broker.listener.name": "INTERNAL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs / "broker-store.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certs / "ca.pem"),
        "ssl.client.auth": "required",
    }
    with EmbeddedCluster(2, settings=settings, data_dir=tmp_path_factory.mktemp("c"),
                         node_settings=lambda n, port: {
                             "listeners": f"INTERNAL://127.0.0.1:{port}"}) as c:
        yield c


def _client_tls(certs) -> dict:
    return {"ssl.ca.location": str(certs / "ca.pem"),
            "ssl.certificate.location": str(certs / "payments.pem"),
            "ssl.key.location": str(certs / "payments.key")}


def _registry(cluster, node_id: int, certs) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": f"https://{cluster.node(node_id).http_address}",
                                 **_client_tls(certs)})


def test_a_certificate_login_writes_through_a_broker_that_is_not_the_writer(cluster, certs):
    first = cluster.node_ids[0]
    sid = _registry(cluster, first, certs).register_schema("pay-value", Schema(SCHEMA_V1, "AVRO"))
    admin = AdminClient({"bootstrap.servers": cluster.node(first).address,
                         "security.protocol": "SSL", **_client_tls(certs)})
    leader = admin.list_topics("_schemas", timeout=10).topics["_schemas"].partitions[0].leader
    non_writer = next(n for n in cluster.node_ids if n != leader)
    sid2 = _registry(cluster, non_writer, certs).register_schema(
        "pay-value", Schema(SCHEMA_V2, "AVRO"))
    assert sid2 == sid + 1
    for n in cluster.node_ids:
        c = _registry(cluster, n, certs)
        assert c.get_versions("pay-value") == [1, 2]
        assert json.loads(c.get_schema(sid2).schema_str) == json.loads(SCHEMA_V2)
