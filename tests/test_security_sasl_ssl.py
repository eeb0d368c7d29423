"""docs/security.md's walkthrough as a test: one `headrace broker` with a
SASL_SSL listener (TLS underneath, PLAIN and SCRAM on top) and the
authorizer on, administered only through the secured listener with the
`headrace` CLI's client settings (-X and --command-config).

- the admin (PLAIN, in super.users) creates a SCRAM user with `headrace
  user create` and grants it ACLs with `headrace acl create`;
- that user produces and consumes with confluent-kafka over SASL_SSL
  (SCRAM-SHA-512) and reads with kcat (SCRAM-SHA-256);
- without an ACL the same user gets TOPIC_AUTHORIZATION_FAILED and writes
  nothing; a wrong password and plaintext against the port fail cleanly.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid

import pytest

from broker_process import GROUP_ARGS, BrokerProcess, _finish
from test_security_tls import certs, free_port  # noqa: F401  (session fixture)

ck = pytest.importorskip("confluent_kafka")

ADMIN = ("admin", "admin-secret")
ALICE = ("alice", "alice-secret")
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{ADMIN[0]}" password="{ADMIN[1]}" user_{ADMIN[0]}="{ADMIN[1]}";')


@pytest.fixture(scope="module")
def secured(tmp_path_factory, certs):  # noqa: F811
    port = free_port()
    proc = BrokerProcess(
        tmp_path_factory.mktemp("sasl-ssl"),
        "--set", "ssl.keystore.type=PEM",
        "--set", f"ssl.keystore.location={certs / 'broker-store.pem'}",
        "--set", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "--set", f"listener.name.sasl_ssl.plain.sasl.jaas.config={JAAS}",
        "--set", "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
        "--set", f"super.users=User:{ADMIN[0]}",
        *GROUP_ARGS,
        listen=f"SASL_SSL://127.0.0.1:{port}")
    proc.start()
    cfg = tmp_path_factory.mktemp("client") / "admin.properties"
    # Kafka tools' client config (Java names); the CLI translates them.
    cfg.write_text("security.protocol=SASL_SSL\n"
                   "sasl.mechanism=PLAIN\n"
                   f"ssl.truststore.location={certs / 'ca.pem'}\n"
                   "ssl.truststore.type=PEM\n"
                   "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
                   f'required username="{ADMIN[0]}" password="{ADMIN[1]}";\n')
    yield f"127.0.0.1:{port}", cfg
    _finish([proc])


def cli(bootstrap: str, *args: str, config=None, props: dict | None = None):
    cmd = [sys.executable, "-m", "headrace.cli", *args, "--brokers", bootstrap]
    if config is not None:
        cmd += ["--command-config", str(config)]
    for k, v in (props or {}).items():
        cmd += ["-X", f"{k}={v}"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def alice_conf(bootstrap: str, certs, mechanism="SCRAM-SHA-512", password=ALICE[1]) -> dict:  # noqa: F811
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(certs / "ca.pem"), "sasl.mechanism": mechanism,
            "sasl.username": ALICE[0], "sasl.password": password}


def test_walkthrough_user_acl_produce_consume(secured, certs):  # noqa: F811
    bootstrap, admin_cfg = secured
    topic, other = f"orders-{uuid.uuid4().hex[:6]}", f"audit-{uuid.uuid4().hex[:6]}"
    out = cli(bootstrap, "user", "create", ALICE[0], "--password", ALICE[1], config=admin_cfg)
    assert out.returncode == 0, out.stderr
    for t in (topic, other):
        out = cli(bootstrap, "topic", "create", t, "--partitions", "1", config=admin_cfg)
        assert out.returncode == 0, out.stderr
    for op in ("Write", "Read", "Describe"):
        out = cli(bootstrap, "acl", "create", "--allow-principal", f"User:{ALICE[0]}",
                  "--operation", op, "--topic", topic, config=admin_cfg)
        assert out.returncode == 0, out.stderr
    out = cli(bootstrap, "acl", "create", "--allow-principal", f"User:{ALICE[0]}",
              "--operation", "Read", "--group", "walk", config=admin_cfg)
    assert out.returncode == 0, out.stderr
    listed = cli(bootstrap, "acl", "list", "--format", "json", config=admin_cfg)
    assert listed.returncode == 0 and f"User:{ALICE[0]}" in listed.stdout, listed.stderr

    # alice produces and consumes over SASL_SSL with SCRAM-SHA-512.
    values = [os.urandom(64) for _ in range(50)]
    acked = []
    p = ck.Producer({**alice_conf(bootstrap, certs), "acks": "all"})
    for v in values:
        p.produce(topic, v, on_delivery=lambda e, m: acked.append((e, m.offset())))
    assert p.flush(30) == 0
    assert [e for e, _ in acked] == [None] * 50
    assert sorted(o for _, o in acked) == list(range(50))
    c = ck.Consumer({**alice_conf(bootstrap, certs), "group.id": "walk",
                     "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    while len(got) < 50:
        m = c.poll(30)
        assert m is not None, f"only {len(got)} of 50 records read"
        assert m.error() is None, m.error()
        got.append(m.value())
    c.close()
    assert got == values

    # kcat (Debian's librdkafka 2.0.2) with SCRAM-SHA-256 reads the same bytes.
    if shutil.which("kcat"):
        k = subprocess.run(
            ["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q",
             "-f", "%o\n", "-X", "security.protocol=SASL_SSL",
             "-X", f"ssl.ca.location={certs / 'ca.pem'}",
             "-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", f"sasl.username={ALICE[0]}",
             "-X", f"sasl.password={ALICE[1]}"], capture_output=True, text=True, timeout=60)
        assert k.returncode == 0, k.stderr
        assert k.stdout.split() == [str(i) for i in range(50)]

    # No ACL on `other`: refused, nothing written (the admin sees offset 0).
    errors = []
    p = ck.Producer({**alice_conf(bootstrap, certs), "message.timeout.ms": 5000})
    try:  # raises at once if librdkafka's metadata already named it unauthorized
        p.produce(other, b"x", on_delivery=lambda e, m: errors.append(e))
    except ck.KafkaException as e:
        errors.append(e.args[0])
    p.flush(15)
    assert errors and errors[0] is not None
    assert errors[0].code() == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED, errors[0]
    offsets = cli(bootstrap, "topic", "describe", other, "--format", "json", config=admin_cfg)
    assert offsets.returncode == 0, offsets.stderr
    assert '"end_offset": 0' in offsets.stdout.replace("'", '"'), offsets.stdout


def test_wrong_password_and_plaintext_fail_cleanly(secured, certs):  # noqa: F811
    bootstrap, _ = secured
    errors = []
    p = ck.Producer({**alice_conf(bootstrap, certs, password="wrong"),
                     "message.timeout.ms": 3000,
                     "error_cb": lambda e: errors.append(e)})
    p.produce("anything", b"x")
    p.flush(10)
    assert any(e.code() == ck.KafkaError._AUTHENTICATION for e in errors), errors
    # The CLI against the TLS port without client settings: a clear error.
    out = cli(bootstrap, "topic", "list")
    assert out.returncode != 0
    assert bootstrap in out.stderr or "Traceback" not in out.stderr, out.stderr
