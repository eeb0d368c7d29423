"""The schema registry's permissions (docs/schema-registry.md
"Permissions"): the broker's ACL authorizer decides, for the SASL user a
request authenticated as, with Confluent's Topic ACL mapping — a subject
<topic>-key/-value is read with READ on the topic and changed with WRITE;
the global config and mode need DESCRIBE / ALTER on the cluster.

One broker with the authorizer on: SASL_PLAINTEXT with PLAIN users `admin`
(a super user), `alice` (READ on topic orders, WRITE on topic payments) and
`bob` (no ACLs), and the PLAINTEXT listener the registry's own clients use
(User:ANONYMOUS, made a super user here so that it may create and write
`_schemas`; docs/schema-registry.md says which ACLs it needs otherwise)."""
from __future__ import annotations

import pytest
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType)
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.common.schema_registry_client import (
    ConfigCompatibilityLevel, ServerConfig)
from confluent_kafka.schema_registry.error import SchemaRegistryError

from broker_process import BrokerProcess, _finish, http_address
from test_console_security import _free_port

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required ' +
        " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")


def _schema(name: str) -> Schema:
    return Schema('{"type":"record","name":"%s","fields":[{"name":"x","type":"int"}]}' % name,
                  "AVRO")


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    plain, sasl = _free_port(), _free_port()
    b = BrokerProcess(
        tmp_path_factory.mktemp("registry-acl"), "--http", "127.0.0.1:0",
        "--set", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "--set", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
        "--set", "authorizer.class.name=headrace.security.AclAuthorizer",
        "--set", "super.users=User:admin;User:ANONYMOUS",
        "--set", "offsets.topic.replication.factor=1",
        listen=f"SASL_PLAINTEXT://127.0.0.1:{sasl},PLAINTEXT://127.0.0.1:{plain}")
    b.start()
    try:
        host, port = http_address(b)
        b.http = f"{host}:{port}"
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{sasl}",
                             "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                             "sasl.username": "admin", "sasl.password": USERS["admin"]})
        acls = [AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL,
                           "User:alice", "*", op, AclPermissionType.ALLOW)
                for topic, op in (("orders", AclOperation.READ),
                                  ("payments", AclOperation.WRITE))]
        for f in admin.create_acls(acls).values():
            f.result(30)
        yield b
    finally:
        _finish([b])


def client(pb, user: str) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": f"http://{pb.http}",
                                 "basic.auth.user.info": f"{user}:{USERS[user]}"})


@pytest.fixture(scope="module")
def ids(pb):
    admin = client(pb, "admin")
    return {s: admin.register_schema(s, _schema(s.replace("-", "_")))
            for s in ("orders-value", "payments-value", "audit")}


def _level(name: str) -> ServerConfig:
    return ServerConfig(compatibility=ConfigCompatibilityLevel[name])


def _refused(call) -> None:
    with pytest.raises(SchemaRegistryError) as e:
        call()
    assert (e.value.http_status_code, e.value.error_code) == (403, 40301), e.value


def test_topic_acls_decide_each_subject(pb, ids):
    alice = client(pb, "alice")
    # READ on orders: its subject reads, does not change.
    assert alice.get_latest_version("orders-value").schema_id == ids["orders-value"]
    assert alice.get_schema(ids["orders-value"]).schema_str
    _refused(lambda: alice.register_schema("orders-value", _schema("Other")))
    _refused(lambda: alice.delete_subject("orders-value"))
    _refused(lambda: alice.set_config("orders-value", _level("NONE")))
    # WRITE on payments: its subject changes, is not read.
    assert alice.register_schema("payments-value", _schema("payments_value")) == \
        ids["payments-value"]
    assert alice.set_config("payments-value", _level("FULL"))
    _refused(lambda: alice.get_latest_version("payments-value"))
    _refused(lambda: alice.get_schema(ids["payments-value"]))
    # The list shows what alice may read.
    assert alice.get_subjects() == ["orders-value"]


def test_what_concerns_no_topic_needs_the_cluster(pb, ids):
    alice = client(pb, "alice")
    _refused(lambda: alice.get_config())
    _refused(lambda: alice.set_config(None, _level("NONE")))
    _refused(lambda: alice.get_latest_version("audit"))  # not <topic>-key/-value
    admin = client(pb, "admin")
    assert admin.get_config()
    assert admin.get_latest_version("audit").schema_id == ids["audit"]
    assert sorted(admin.get_subjects()) == ["audit", "orders-value", "payments-value"]


def test_a_user_without_acls_sees_nothing(pb, ids):
    bob = client(pb, "bob")
    assert bob.get_subjects() == []
    _refused(lambda: bob.get_latest_version("orders-value"))
    _refused(lambda: bob.get_schema(ids["orders-value"]))
    _refused(lambda: bob.register_schema("orders-value", _schema("orders_value")))
