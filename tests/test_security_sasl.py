"""SASL on a SASL_PLAINTEXT listener (docs/security.md "SASL"), with real
clients: confluent-kafka (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER with a JWT
signed here and checked against the broker's JWKS file), kafka-python and
aiokafka (PLAIN, SCRAM), kcat; bad credentials fail with the client's
authentication error and produce nothing; unauthenticated and expired
sessions are closed; re-authentication (KIP-368) keeps a long-lived
connection; malformed tokens never stop the broker; SCRAM users are managed
with AlterUserScramCredentials / `headrace user` and survive a restart."""
from __future__ import annotations

import base64
import json
import random
import socket
import struct
import subprocess
import sys
import time
import uuid

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from broker_process import BrokerProcess, _finish
from broker_wire import API_API_VERSIONS, API_METADATA, Connection, frame
from sasl_wire import (ERR_ILLEGAL_SASL_STATE, ERR_SASL_AUTHENTICATION_FAILED,
                       ERR_UNSUPPORTED_SASL_MECHANISM, authenticate, handshake, plain_token,
                       scram_login, ScramClient)

ISSUER = "https://idp.test"
AUDIENCE = "headrace"
ADMIN = ("admin", "admin-secret")
ALICE = ("alice", "alice-secret")
SCRAM_USER = ("sam", "sam-secret")
REAUTH_MS = 1500  # SCRAM-SHA-512 sessions on this listener (KIP-368)
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        f'user_{ADMIN[0]}="{ADMIN[1]}" user_{ALICE[0]}="{ALICE[1]}";')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def b64url(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def int_bytes(n: int) -> bytes:
    return n.to_bytes((n.bit_length() + 7) // 8, "big")


class Idp:
    """An identity provider: one RSA key, its JWKS file, and signed JWTs."""

    def __init__(self, path):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pub = self.key.public_key().public_numbers()
        self.jwks_path = path
        path.write_text(json.dumps({"keys": [{"kty": "RSA", "kid": "k1", "use": "sig",
                                              "alg": "RS256", "n": b64url(int_bytes(pub.n)),
                                              "e": b64url(int_bytes(pub.e))}]}))

    def token(self, sub: str = "carol", lifetime_s: float = 300, aud=AUDIENCE,
              iss: str = ISSUER) -> tuple[str, float]:
        now = time.time()
        claims = {"sub": sub, "iss": iss, "aud": aud, "iat": int(now), "exp": int(now + lifetime_s)}
        signing_input = (b64url(json.dumps({"alg": "RS256", "kid": "k1", "typ": "JWT"}).encode())
                         + "." + b64url(json.dumps(claims).encode()))
        sig = self.key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + b64url(sig), claims["exp"]


def broker_args(idp: Idp) -> list[str]:
    return ["--set", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
            "--set", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
            "--set", "listener.name.sasl_plaintext.scram-sha-512.connections.max.reauth.ms="
                     f"{REAUTH_MS}",
            "--set", f"sasl.oauthbearer.jwks.endpoint.url=file:{idp.jwks_path}",
            "--set", f"sasl.oauthbearer.expected.issuer={ISSUER}",
            "--set", f"sasl.oauthbearer.expected.audience={AUDIENCE}"]


@pytest.fixture(scope="module")
def idp(tmp_path_factory):
    return Idp(tmp_path_factory.mktemp("idp") / "jwks.json")


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory, idp):
    b = BrokerProcess(tmp_path_factory.mktemp("sasl-broker"), *broker_args(idp),
                      listen=f"SASL_PLAINTEXT://127.0.0.1:{free_port()}")
    b.start()
    try:
        create_scram_user(b, *SCRAM_USER)
        yield b
    finally:
        _finish([b])


def plain_conf(b, user=ADMIN[0], password=ADMIN[1], mechanism="PLAIN", **extra) -> dict:
    return {"bootstrap.servers": b.bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password,
            **extra}


def create_scram_user(b, user, password, mechanisms=("SCRAM-SHA-256", "SCRAM-SHA-512"),
                      iterations=4096):
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)
    admin = AdminClient(plain_conf(b))
    ups = [UserScramCredentialUpsertion(user, ScramCredentialInfo(
        getattr(ScramMechanism, m.replace("-", "_")), iterations), password.encode())
        for m in mechanisms]
    for f in admin.alter_user_scram_credentials(ups).values():
        f.result(timeout=30)


def consume_all(conf: dict, topic: str, expect: int, timeout: float = 30) -> list[tuple[int, bytes]]:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({**conf, "group.id": f"g-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])  # no group join: fetches at once
    got = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < expect and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append((m.offset(), m.value()))
    finally:
        c.close()
    return got


def end_offset(b, topic: str) -> int | None:
    """The topic's partition 0 end offset through an admin session (None:
    no such topic)."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({**plain_conf(b), "group.id": "probe"})
    try:
        md = c.list_topics(timeout=20)
        if topic not in md.topics or md.topics[topic].error is not None:
            return None
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)[1]
    finally:
        c.close()


def produce(conf: dict, topic: str, n: int) -> list[int]:
    from confluent_kafka import Producer
    p = Producer({**conf, "acks": "all"})
    offsets, errors = [], []
    for i in range(n):
        p.produce(topic, f"v{i}".encode(),
                  on_delivery=lambda e, m: errors.append(e) if e else offsets.append(m.offset()))
    assert p.flush(30) == 0
    assert not errors, errors
    return sorted(offsets)


# -- confluent-kafka, every mechanism -------------------------------------------------------

@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_confluent_kafka_produces_and_consumes_with_each_mechanism(sasl_broker, idp, mechanism):
    topic = f"ck-{mechanism.lower()}"
    if mechanism == "PLAIN":
        conf = plain_conf(sasl_broker, *ALICE)
    elif mechanism.startswith("SCRAM"):
        conf = plain_conf(sasl_broker, *SCRAM_USER, mechanism=mechanism)
    else:
        conf = {"bootstrap.servers": sasl_broker.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER",
                "oauth_cb": lambda _cfg: idp.token(sub="carol")}
    assert produce(conf, topic, 20) == list(range(20))
    got = consume_all(conf, topic, 20)
    assert got == [(i, f"v{i}".encode()) for i in range(20)]


# -- kafka-python and aiokafka ---------------------------------------------------------------

@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_produces_and_consumes(sasl_broker, mechanism):
    from kafka import KafkaConsumer, KafkaProducer
    user, password = ALICE if mechanism == "PLAIN" else SCRAM_USER
    auth = dict(bootstrap_servers=sasl_broker.bootstrap, security_protocol="SASL_PLAINTEXT",
                sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password)
    topic = f"kp-{mechanism.lower()}"
    p = KafkaProducer(acks="all", **auth)
    offsets = [p.send(topic, f"m{i}".encode()).get(timeout=30).offset for i in range(5)]
    p.close()
    assert offsets == list(range(5))
    c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10000, **auth)
    got = [(m.offset, m.value) for _, m in zip(range(5), c)]
    c.close()
    assert got == [(i, f"m{i}".encode()) for i in range(5)]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_aiokafka_produces_and_consumes(sasl_broker, mechanism):
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    user, password = ALICE if mechanism == "PLAIN" else SCRAM_USER
    auth = dict(bootstrap_servers=sasl_broker.bootstrap, security_protocol="SASL_PLAINTEXT",
                sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password)
    topic = f"aio-{mechanism.lower()}"

    async def run():
        p = AIOKafkaProducer(acks="all", **auth)
        await p.start()
        try:
            offsets = [(await p.send_and_wait(topic, f"a{i}".encode())).offset for i in range(5)]
        finally:
            await p.stop()
        c = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **auth)
        await c.start()
        try:
            got = []
            while len(got) < 5:
                batch = await asyncio.wait_for(c.getmany(timeout_ms=1000), 30)
                for msgs in batch.values():
                    got += [(m.offset, m.value) for m in msgs]
        finally:
            await c.stop()
        return offsets, got

    offsets, got = asyncio.run(run())
    assert offsets == list(range(5))
    assert got == [(i, f"a{i}".encode()) for i in range(5)]


# -- kcat --------------------------------------------------------------------------------------

@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_kcat_produces_and_consumes(sasl_broker, mechanism):
    user, password = ALICE if mechanism == "PLAIN" else SCRAM_USER
    x = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", f"sasl.mechanisms={mechanism}",
         "-X", f"sasl.username={user}", "-X", f"sasl.password={password}"]
    topic = f"kcat-{mechanism.lower()}"
    subprocess.run(["kcat", "-b", sasl_broker.bootstrap, *x, "-P", "-t", topic],
                   input=b"one\ntwo\nthree\n", check=True, timeout=60)
    out = subprocess.run(["kcat", "-b", sasl_broker.bootstrap, *x, "-C", "-t", topic, "-e",
                          "-f", "%o:%s\n"], capture_output=True, check=True, timeout=60)
    assert out.stdout.decode().split() == ["0:one", "1:two", "2:three"]


# -- failures ----------------------------------------------------------------------------------

def _auth_failure(conf: dict, topic: str) -> str:
    """Produces one message with `conf`; returns the client's error text,
    which must be librdkafka's authentication error."""
    from confluent_kafka import KafkaError, Producer
    errors = []
    p = Producer({**conf, "error_cb": errors.append, "reconnect.backoff.ms": 500})
    p.produce(topic, b"never")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and \
            not any(e.code() == KafkaError._AUTHENTICATION for e in errors):
        p.poll(0.1)
    p.purge()
    p.flush(0)
    auth = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert auth, f"no authentication error, got {errors}"
    return auth[0].str()


@pytest.mark.parametrize("case", ["plain-wrong-password", "plain-unknown-user",
                                  "scram-wrong-password", "scram-unknown-user",
                                  "oauth-expired", "oauth-wrong-audience", "oauth-wrong-issuer"])
def test_bad_credentials_fail_cleanly_and_produce_nothing(sasl_broker, idp, case):
    topic = f"denied-{case}"
    if case == "plain-wrong-password":
        conf = plain_conf(sasl_broker, ALICE[0], "nope")
    elif case == "plain-unknown-user":
        conf = plain_conf(sasl_broker, "mallory", "x")
    elif case == "scram-wrong-password":
        conf = plain_conf(sasl_broker, SCRAM_USER[0], "nope", mechanism="SCRAM-SHA-256")
    elif case == "scram-unknown-user":
        conf = plain_conf(sasl_broker, "mallory", "x", mechanism="SCRAM-SHA-512")
    else:
        token = {"oauth-expired": lambda: idp.token(lifetime_s=-120),
                 "oauth-wrong-audience": lambda: idp.token(aud="someone-else"),
                 "oauth-wrong-issuer": lambda: idp.token(iss="https://evil.test")}[case]()
        conf = {"bootstrap.servers": sasl_broker.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER",
                # librdkafka refuses a token that expired already: hand it one
                # that looks alive to the client; the broker knows better.
                "oauth_cb": lambda _cfg, t=token: (t[0], time.time() + 300)}
    text = _auth_failure(conf, topic)
    assert "Authentication failed" in text or "SASL" in text, text
    assert end_offset(sasl_broker, topic) in (None, 0)


def test_requests_before_authentication_close_the_connection(sasl_broker):
    with Connection(sasl_broker.address) as c:
        c.send_request(API_API_VERSIONS, 0)  # allowed: clients ask before the handshake
        assert c.recv_response()[1].i16() == 0
        c.send_request(API_METADATA, 1, b"\xff\xff\xff\xff")
        assert c.is_closed_by_peer()


def test_oversized_request_before_authentication_closes_the_connection(sasl_broker):
    """sasl.server.max.receive.size (524288 by default) bounds what an
    unauthenticated client may send."""
    with Connection(sasl_broker.address) as c:
        assert handshake(c, "PLAIN")[0] == 0
        body = struct.pack(">i", 600_000) + b"\0" * 600_000
        c.send_request(36, 1, body)
        assert c.is_closed_by_peer()
    sasl_broker.assert_alive()


def test_unknown_mechanism_and_out_of_order_authenticate(sasl_broker):
    with Connection(sasl_broker.address) as c:
        err, mechanisms = handshake(c, "GSSAPI")
        assert err == ERR_UNSUPPORTED_SASL_MECHANISM
        assert mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
        assert c.is_closed_by_peer()
    with Connection(sasl_broker.address) as c:
        r = authenticate(c, plain_token(*ALICE))
        assert r.error_code == ERR_ILLEGAL_SASL_STATE
        assert c.is_closed_by_peer()


def test_failed_authentication_answers_58_then_closes(sasl_broker):
    with Connection(sasl_broker.address) as c:
        assert handshake(c, "PLAIN")[0] == 0
        r = authenticate(c, plain_token(ALICE[0], "wrong"))
        assert r.error_code == ERR_SASL_AUTHENTICATION_FAILED
        assert "Invalid username or password" in r.error_message
        assert c.is_closed_by_peer()


def test_handshake_v0_raw_plain_token(sasl_broker):
    """SaslHandshake v0: the token follows as a raw size-prefixed frame."""
    with Connection(sasl_broker.address) as c:
        assert handshake(c, "PLAIN", version=0)[0] == 0
        c.send_raw(frame(plain_token(*ALICE)))
        assert c.recv_exact(4) == b"\0\0\0\0"  # an empty server token: authenticated
        c.send_request(API_API_VERSIONS, 0)
        assert c.recv_response()[1].i16() == 0
    with Connection(sasl_broker.address) as c:
        assert handshake(c, "PLAIN", version=0)[0] == 0
        c.send_raw(frame(plain_token(ALICE[0], "wrong")))
        assert c.is_closed_by_peer()  # v0 has no error response: Kafka closes


# -- re-authentication (KIP-368) ---------------------------------------------------------------

def test_expired_session_is_closed_and_reauth_keeps_it(sasl_broker):
    # SCRAM-SHA-512 sessions last REAUTH_MS on this listener.
    with Connection(sasl_broker.address) as c:
        r = scram_login(c, "SCRAM-SHA-512", *SCRAM_USER)
        assert r.error_code == 0 and r.session_lifetime_ms == REAUTH_MS
        time.sleep(REAUTH_MS / 1000 * 0.3)
        # Re-authenticate within the session: same principal, new lifetime.
        r = scram_login(c, "SCRAM-SHA-512", *SCRAM_USER)
        assert r.error_code == 0 and r.session_lifetime_ms == REAUTH_MS
        c.send_request(API_API_VERSIONS, 0)
        assert c.recv_response()[1].i16() == 0
        time.sleep(REAUTH_MS / 1000 + 0.3)
        c.send_request(API_API_VERSIONS, 0)  # the session expired: closed, as Kafka
        assert c.is_closed_by_peer()
    # PLAIN has no reauth period here: the lifetime is 0 (never expires).
    with Connection(sasl_broker.address) as c:
        handshake(c, "PLAIN")
        assert authenticate(c, plain_token(*ALICE)).session_lifetime_ms == 0


def test_reauthentication_cannot_change_principal(sasl_broker):
    with Connection(sasl_broker.address) as c:
        handshake(c, "PLAIN")
        assert authenticate(c, plain_token(*ALICE)).error_code == 0
        handshake(c, "PLAIN")
        r = authenticate(c, plain_token(*ADMIN))
        assert r.error_code == ERR_SASL_AUTHENTICATION_FAILED
        assert "Cannot change principals" in r.error_message
        assert c.is_closed_by_peer()


def test_librdkafka_reauthenticates_a_long_lived_connection(sasl_broker):
    """A producer on SCRAM-SHA-512 (sessions of 1.5 s) keeps producing for 4 s
    over one connection: librdkafka re-authenticates before each expiry."""
    from confluent_kafka import Producer
    stats = []
    p = Producer({**plain_conf(sasl_broker, *SCRAM_USER, mechanism="SCRAM-SHA-512"),
                  "acks": "all", "statistics.interval.ms": 500, "stats_cb": stats.append})
    delivered, errors = [], []
    deadline = time.monotonic() + 4
    i = 0
    while time.monotonic() < deadline:
        p.produce("reauth", f"r{i}".encode(),
                  on_delivery=lambda e, m: errors.append(e) if e else delivered.append(m.offset()))
        i += 1
        p.poll(0.05)
    assert p.flush(30) == 0
    assert not errors and len(delivered) == i
    assert sorted(delivered) == list(range(i))
    last = json.loads(stats[-1])
    connects = [b["connects"] for name, b in last["brokers"].items() if "bootstrap" not in name
                and b.get("nodeid", -1) >= 0]
    assert connects == [1], connects  # never reconnected


# -- fuzz --------------------------------------------------------------------------------------

def test_malformed_tokens_never_stop_the_broker(sasl_broker):
    rng = random.Random(18)
    good_scram_first = ScramClient("SCRAM-SHA-256", *SCRAM_USER).first()
    seeds = {
        "PLAIN": [plain_token(*ALICE), b"\0\0", b"\0" * 3, b"a\0b\0c\0d"],
        "SCRAM-SHA-256": [good_scram_first, b"n,,n=sam,r=", b"y,,n=sam,r=x", b"n,a=x,n=sam,r=x",
                          b"c=biws,r=x,p=AAAA"],
        "SCRAM-SHA-512": [b"n,,n==ZZ,r=x", b"n,,n=sam,r=x,t=1"],
        "OAUTHBEARER": [b"n,,\x01auth=Bearer a.b.c\x01\x01", b"n,,\x01auth=Bearer \x01\x01",
                        b"n,,\x01auth=Bearer " + b"A" * 5000 + b".e30.\x01\x01"],
    }
    start = time.monotonic()
    tries = 0
    while time.monotonic() - start < 3:
        mechanism = rng.choice(list(seeds))
        token = bytearray(rng.choice(seeds[mechanism]))
        for _ in range(rng.randint(0, 4)):
            op = rng.randrange(3)
            if op == 0 and token:
                token[rng.randrange(len(token))] = rng.randrange(256)
            elif op == 1:
                token.insert(rng.randrange(len(token) + 1), rng.randrange(256))
            elif token:
                del token[rng.randrange(len(token)):]
        with Connection(sasl_broker.address, timeout=10) as c:
            assert handshake(c, mechanism)[0] == 0
            r = authenticate(c, bytes(token))
            if r.error_code == 0 and mechanism.startswith("SCRAM") and r.auth_bytes:
                r = authenticate(c, bytes(rng.randbytes(rng.randint(0, 64))))
            assert r.error_code in (0, ERR_SASL_AUTHENTICATION_FAILED)
        tries += 1
    # Raw garbage as a v0 token and as SaslAuthenticate framing.
    for _ in range(50):
        with Connection(sasl_broker.address, timeout=10) as c:
            handshake(c, rng.choice(list(seeds)), version=0)
            c.send_raw(frame(rng.randbytes(rng.randint(0, 200))))
    assert tries > 50
    sasl_broker.assert_alive()
    assert produce(plain_conf(sasl_broker, *ALICE), "after-fuzz", 3) == [0, 1, 2]


# -- SCRAM credentials -------------------------------------------------------------------------

def test_alter_user_scram_credentials_errors(sasl_broker):
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialDeletion, UserScramCredentialUpsertion)
    admin = AdminClient(plain_conf(sasl_broker))
    futures = admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("few", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 100),
                                     b"pw"),
        UserScramCredentialDeletion("ghost", ScramMechanism.SCRAM_SHA_512)])
    for user, fragment in (("few", "UNACCEPTABLE_CREDENTIAL"), ("ghost", "RESOURCE_NOT_FOUND")):
        with pytest.raises(Exception) as e:
            futures[user].result(timeout=30)
        assert fragment in str(e.value), e.value
    described = admin.describe_user_scram_credentials([SCRAM_USER[0]])[SCRAM_USER[0]].result(30)
    assert sorted((str(i.mechanism), i.iterations) for i in described.scram_credential_infos) == \
        sorted((str(m), 4096) for m in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512))


def _cli(bootstrap: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "headrace.cli", "user", *args, "--brokers",
                           bootstrap], capture_output=True, text=True, input=stdin, timeout=60)


def test_cli_manages_scram_users_and_they_survive_restart(tmp_path, idp):
    """`headrace user` over a PLAINTEXT listener (client security settings for
    the CLI are docs/cli.md's -X); logins on the SASL_PLAINTEXT one."""
    plain, sasl = free_port(), free_port()
    b = BrokerProcess(tmp_path / "data", *broker_args(idp),
                      listen=f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}")
    b.start()
    sasl_address = ("127.0.0.1", sasl)
    try:
        r = _cli(b.bootstrap, "create", "dora", "--password-stdin", "--mechanism",
                 "SCRAM-SHA-512", "--iterations", "8192", stdin="dora-pw\n")
        assert r.returncode == 0, r.stderr
        r = _cli(b.bootstrap, "list", "--format", "json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout) == {"users": [{"user": "dora", "mechanisms": [
            {"mechanism": "SCRAM-SHA-512", "iterations": 8192}]}]}
        stored = json.loads((tmp_path / "data" / "scram-credentials.json").read_text())
        assert stored["version"] == 1
        cred = stored["users"]["dora"]["SCRAM-SHA-512"]
        assert cred.startswith("salt=") and "stored_key=" in cred and "server_key=" in cred
        assert cred.endswith(",iterations=8192") and "dora-pw" not in json.dumps(stored)
        b.restart()
        with Connection(sasl_address) as c:
            assert scram_login(c, "SCRAM-SHA-512", "dora", "dora-pw").error_code == 0
        with Connection(sasl_address) as c:
            assert scram_login(c, "SCRAM-SHA-512", "dora", "wrong").error_code == \
                ERR_SASL_AUTHENTICATION_FAILED
        r = _cli(b.bootstrap, "create", "eve", "--iterations", "100", "--password", "x")
        assert r.returncode != 0 and "4096..16384" in r.stderr
        r = _cli(b.bootstrap, "delete", "dora")
        assert r.returncode == 0, r.stderr
        with Connection(sasl_address) as c:
            r = scram_login(c, "SCRAM-SHA-512", "dora", "dora-pw")
            assert r.error_code == ERR_SASL_AUTHENTICATION_FAILED
        r = _cli(b.bootstrap, "list")
        assert r.returncode == 0 and r.stdout.strip() == "USER\tMECHANISM\tITERATIONS", r
    finally:
        _finish([b])
