"""Inter-broker security across real broker processes (ZooKeeper + three
`headrace broker --zookeeper` processes): brokers replicate, fail over and
write transaction markers to each other over SASL_SSL (SCRAM-SHA-512) with
an authorizer whose only super user is the brokers' principal, and over
mutual TLS; a broker with a wrong inter-broker password stays out of the
ISR with the cause in its log and keeps serving its own partitions.

The links are secured for real: the SASL_SSL cluster has no PLAINTEXT
listener at all (every registered endpoint is SASL_SSL), and an
authorizer without `User:ANONYMOUS` in `super.users` refuses any
unauthenticated replica fetch or WriteTxnMarkers (CLUSTER_ACTION).
docs/security.md "Inter-broker security".
"""
from __future__ import annotations

import json
import re
import socket
import struct
import subprocess
import threading
import time

import pytest

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType,  # noqa: E402
                                   AdminClient, NewTopic, ResourcePatternType, ResourceType)

from cluster_faults import segment_digests  # noqa: E402
from headrace import EmbeddedCluster  # noqa: E402
from headrace.cluster import scram_users  # noqa: E402
from headrace.cluster.zookeeper_server import free_port  # noqa: E402
from test_security_tls import make_ca, make_cert  # noqa: E402

TIMEOUT_S = 30
BROKER_PW = "broker-secret"
ALICE_PW = "alice-secret"
REAUTH_MS = 2000
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="broker" password="{pw}";')


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("interbroker-certs")
    make_ca(d, "ca")
    make_ca(d, "rogue-ca")
    make_cert(d, "ca", "broker", "/CN=broker", "IP:127.0.0.1,DNS:localhost")
    make_cert(d, "rogue-ca", "rogue", "/CN=broker", "IP:127.0.0.1,DNS:localhost")
    for name in ("broker", "rogue"):  # Kafka's PEM keystore: key and chain in one file
        (d / f"{name}-store.pem").write_text((d / f"{name}.key").read_text() +
                                             (d / f"{name}.pem").read_text())
    return d


def _two_listeners(client_ports: dict[int, int], internal: str = "INTERNAL"):
    """node_settings: the inter-broker listener on the node's own port (what
    it registers), the client listener on a second port."""
    def settings(node_id: int, port: int) -> dict:
        client_ports[node_id] = free_port()
        return {"listeners": f"{internal}://127.0.0.1:{port},"
                             f"CLIENT://127.0.0.1:{client_ports[node_id]}"}
    return settings


def _wait(pred, what: str, timeout: float = TIMEOUT_S):
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _isr(cluster, topic):
    return {p: sorted(s.isr) if s else None for p, s in cluster.partition_states(topic).items()}


def _wait_isr(cluster, topic, want: list[int], timeout: float = TIMEOUT_S):
    return _wait(lambda: all(v == want for v in _isr(cluster, topic).values()) or None,
                 f"ISR {want} of {topic} (now {_isr(cluster, topic)})", timeout)


def _wait_identical(cluster, topic, partition, replicas=3):
    def same():
        d = segment_digests(cluster, topic, partition)
        return len(d) == replicas and len(set(d.values())) == 1
    _wait(same, f"{topic}-{partition} replicas byte-identical")


def _log(cluster, node_id) -> str:
    return cluster.node(node_id).log_path.read_text(errors="replace")


# -- SASL_SSL + SCRAM-SHA-512 between brokers, ACLs, super.users=User:broker -----------
class SaslCluster:
    def __init__(self, cluster: EmbeddedCluster, client_ports: dict[int, int], certs):
        self.cluster, self.client_ports, self.certs = cluster, client_ports, certs

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.client_ports.values())

    def conf(self, user: str = "alice", password: str = ALICE_PW, **extra) -> dict:
        return {"bootstrap.servers": self.bootstrap, "security.protocol": "SASL_SSL",
                "sasl.mechanisms": "PLAIN", "sasl.username": user, "sasl.password": password,
                "ssl.ca.location": str(self.certs / "ca.pem"), **extra}

    def admin(self) -> AdminClient:
        return AdminClient(self.conf("broker", BROKER_PW))  # the only super user

    def create(self, topic: str, partitions: int = 3, assignment=None):
        admin = self.admin()
        new = (NewTopic(topic, len(assignment), replica_assignment=assignment,
                        config={"min.insync.replicas": "2"})
               if assignment else
               NewTopic(topic, partitions, 3, config={"min.insync.replicas": "2"}))
        admin.create_topics([new], operation_timeout=TIMEOUT_S)[topic].result(TIMEOUT_S)
        self.cluster.wait_for_leaders(topic, timeout=TIMEOUT_S)


def _sasl_settings(certs) -> dict:
    return {
        "zookeeper.session.timeout.ms": 6000,
        "replica.lag.time.max.ms": 4000,
        "replica.fetch.backoff.ms": 500,
        # Only secured listeners: the brokers cannot talk to each other in plaintext.
        "listener.security.protocol.map": "INTERNAL:SASL_SSL,CLIENT:SASL_SSL",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.internal.scram-sha-512.sasl.jaas.config": SCRAM_JAAS.format(pw=BROKER_PW),
        # KIP-368: inter-broker sessions last 2 s; the leader closes a
        # connection that sends anything but SASL requests after that.
        "listener.name.internal.connections.max.reauth.ms": REAUTH_MS,
        "listener.name.client.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.client.plain.sasl.jaas.config":
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'user_broker="{BROKER_PW}" user_alice="{ALICE_PW}";',
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs / "broker-store.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certs / "ca.pem"),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:broker",
    }


def _create_broker_user(zk_connect: str) -> None:
    """The brokers' SCRAM credential, in ZooKeeper before any broker runs."""
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=zk_connect, timeout=10)
    zk.start(10)
    try:
        scram_users.upsert_password(zk, "broker", "SCRAM-SHA-512", BROKER_PW)
    finally:
        zk.stop()
        zk.close()


@pytest.fixture(scope="module")
def sasl(tmp_path_factory, certs):
    ports: dict[int, int] = {}
    with EmbeddedCluster(3, settings=_sasl_settings(certs),
                         data_dir=tmp_path_factory.mktemp("interbroker-sasl"),
                         node_settings=_two_listeners(ports),
                         before_brokers=_create_broker_user) as c:
        s = SaslCluster(c, ports, certs)
        admin = s.admin()
        acls = [AclBinding(ResourceType.TOPIC, "sec-", ResourcePatternType.PREFIXED, "User:alice",
                           "*", AclOperation.ALL, AclPermissionType.ALLOW),
                AclBinding(ResourceType.GROUP, "*", ResourcePatternType.LITERAL, "User:alice",
                           "*", AclOperation.ALL, AclPermissionType.ALLOW),
                AclBinding(ResourceType.TRANSACTIONAL_ID, "*", ResourcePatternType.LITERAL,
                           "User:alice", "*", AclOperation.ALL, AclPermissionType.ALLOW)]
        for f in admin.create_acls(acls).values():
            f.result(TIMEOUT_S)
        yield s


def test_brokers_replicate_over_sasl_ssl_with_scram_and_acls(sasl):
    c = sasl.cluster
    for node_id in c.nodes:
        assert ("inter-broker connections: listener INTERNAL, SASL_SSL (SCRAM-SHA-512 as "
                "broker; TLS, host names verified)") in _log(c, node_id)
        # Registered endpoints: no PLAINTEXT listener anywhere.
        reg = json.loads(c.zk.get(f"/brokers/ids/{node_id}")[0])
        assert set(reg["listener_security_protocol_map"].values()) == {"SASL_SSL"}
        assert reg["port"] == c.node(node_id).port  # INTERNAL: what the others fetch from
    sasl.create("sec-rep")
    p = ck.Producer(sasl.conf(acks="all", **{"enable.idempotence": True, "linger.ms": 5}))
    errors = []
    for i in range(600):
        p.produce("sec-rep", value=b"r-%05d" % i, partition=i % 3,
                  on_delivery=lambda err, msg: err and errors.append(err))
    assert p.flush(TIMEOUT_S) == 0 and errors == []
    _wait_isr(c, "sec-rep", [1, 2, 3])
    for part in range(3):
        _wait_identical(c, "sec-rep", part)
    # ANONYMOUS is nobody here: a plaintext connection to a broker's
    # inter-broker port gets no Kafka answer (it is TLS).
    with socket.create_connection(("127.0.0.1", c.node(1).port), timeout=5) as s:
        s.sendall(b"\x00\x00\x00\x0e\x00\x12\x00\x00\x00\x00\x00\x01\x00\x04abcd")
        s.settimeout(5)
        try:
            data = s.recv(64)
        except (ConnectionResetError, socket.timeout):
            data = b""
        assert not data.startswith(b"\x00\x00\x00"), data  # not a Kafka response frame


def test_leader_kill_over_secured_links_loses_no_acknowledged_record(sasl):
    c = sasl.cluster
    topic = "sec-kill"
    sasl.create(topic)
    acked: dict[int, list[bytes]] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def produce():
        p = ck.Producer(sasl.conf(acks="all", **{"enable.idempotence": True, "linger.ms": 2,
                                                 "message.timeout.ms": 60000,
                                                 "retry.backoff.ms": 50}))

        def report(err, msg):
            if err is None:
                with lock:
                    acked.setdefault(msg.partition(), []).append(msg.value())
        i = 0
        while not stop.is_set():
            try:
                p.produce(topic, value=b"k-%08d" % i, partition=i % 3, on_delivery=report)
            except BufferError:
                p.poll(0.1)
                continue
            p.poll(0)
            i += 1
            if i % 100 == 0:
                time.sleep(0.01)
        assert p.flush(90) == 0

    t = threading.Thread(target=produce)
    t.start()
    try:
        _wait(lambda: sum(map(len, acked.values())) > 300, "records acknowledged")
        victim = c.partition_states(topic)[0].leader
        c.kill(victim)
        deadline = time.monotonic() + TIMEOUT_S
        while c.partition_states(topic)[0].leader in (victim, -1):
            assert time.monotonic() < deadline, "no new leader"
            time.sleep(0.05)
        before = sum(map(len, acked.values()))
        _wait(lambda: sum(map(len, acked.values())) > before + 300, "records after failover")
    finally:
        stop.set()
        t.join(120)
    c.restart(victim)
    _wait_isr(c, topic, [1, 2, 3], timeout=60)  # the restarted broker catches up over SASL_SSL
    consumer = ck.Consumer(sasl.conf(**{"group.id": "sec-kill-read", "auto.offset.reset":
                                        "earliest", "enable.auto.commit": False}))
    stored: dict[int, set[bytes]] = {part: set() for part in range(3)}
    try:
        highs = {part: consumer.get_watermark_offsets(ck.TopicPartition(topic, part),
                                                      timeout=TIMEOUT_S)[1] for part in range(3)}
        consumer.assign([ck.TopicPartition(topic, part, 0) for part in range(3)])
        remaining = sum(highs.values())
        deadline = time.monotonic() + 60
        while remaining > 0 and time.monotonic() < deadline:
            m = consumer.poll(1)
            if m is None or m.error() or m.offset() >= highs[m.partition()]:
                continue
            stored[m.partition()].add(m.value())
            remaining -= 1
    finally:
        consumer.close()
    lost = sum(1 for part, vals in acked.items() for v in vals if v not in stored[part])
    assert sum(map(len, acked.values())) > 600
    assert lost == 0
    for part in range(3):
        _wait_identical(c, topic, part)


def test_transaction_markers_travel_over_secured_links(sasl):
    c = sasl.cluster
    topic = "sec-txn"
    # Each partition led by a different broker: the coordinator sends
    # WriteTxnMarkers to at least two other brokers.
    sasl.create(topic, assignment=[[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    _wait_isr(c, topic, [1, 2, 3])
    leaders = {p: s.leader for p, s in c.partition_states(topic).items()}
    assert sorted(leaders.values()) == [1, 2, 3]
    p = ck.Producer(sasl.conf(**{"transactional.id": "sec-txn-1"}))
    p.init_transactions(TIMEOUT_S)
    p.begin_transaction()
    for part in range(3):
        for i in range(5):
            p.produce(topic, value=b"aborted-%d-%d" % (part, i), partition=part)
    p.abort_transaction(TIMEOUT_S)
    p.begin_transaction()
    for part in range(3):
        for i in range(5):
            p.produce(topic, value=b"committed-%d-%d" % (part, i), partition=part)
    p.commit_transaction(TIMEOUT_S)
    consumer = ck.Consumer(sasl.conf(**{"group.id": "sec-txn-read", "isolation.level":
                                        "read_committed", "auto.offset.reset": "earliest",
                                        "enable.auto.commit": False}))
    got = []
    try:
        consumer.assign([ck.TopicPartition(topic, part, 0) for part in range(3)])
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < 15 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
    finally:
        consumer.close()
    assert sorted(got) == sorted(b"committed-%d-%d" % (part, i)
                                 for part in range(3) for i in range(5))
    for part in range(3):
        _wait_identical(c, topic, part)  # the markers too, on every replica


def _fetch_connections(follower_pid: int, leader_port: int) -> set[str]:
    """The local addresses of `follower_pid`'s connections to leader_port."""
    out = subprocess.run(["ss", "-Htnp", "state", "established", f"( dport = :{leader_port} )"],
                         capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if f"pid={follower_pid}," in line}


def test_fetchers_reauthenticate_in_band_before_the_session_expires(sasl):
    """The leader gives inter-broker sessions REAUTH_MS (SaslAuthenticate
    session_lifetime_ms) and closes a connection whose session expired;
    the follower re-authenticates on the same connection, so its fetch
    connection outlives several lifetimes and replication never stops."""
    c = sasl.cluster
    sasl.create("sec-reauth", assignment=[[1, 2, 3]])
    _wait_isr(c, "sec-reauth", [1, 2, 3])
    follower, leader_port = c.node(2).pid, c.node(1).port
    before = _wait(lambda: _fetch_connections(follower, leader_port), "broker 2's fetch connection")
    p = ck.Producer(sasl.conf(acks="all"))
    deadline = time.monotonic() + 2.5 * REAUTH_MS / 1000
    i = 0
    while time.monotonic() < deadline:  # acks=all needs the followers all along
        p.produce("sec-reauth", value=b"a-%d" % i)
        i += 1
        assert p.flush(TIMEOUT_S) == 0
        time.sleep(0.1)
    assert _fetch_connections(follower, leader_port) & before, "the fetch connection was replaced"
    _wait_identical(c, "sec-reauth", 0)
    assert "SASL session expired" not in _log(c, 1)


def test_wrong_inter_broker_password_keeps_the_follower_out_of_the_isr(sasl):
    c = sasl.cluster
    node = c.node(3)
    key = "listener.name.internal.scram-sha-512.sasl.jaas.config"
    c.stop(3)
    node.settings[key] = SCRAM_JAAS.format(pw="wrong")
    mark = len(_log(c, 3))
    try:
        c.start_node(3)
        sasl.create("sec-wrong", assignment=[[1, 2, 3]])
        sasl.create("sec-own", assignment=[[3, 1, 2]])
        # Broker 3 cannot fetch (its password is wrong): once the leader has
        # records it lacks, it leaves the ISR after replica.lag.time.max.ms ...
        p = ck.Producer(sasl.conf(acks="1"))
        for i in range(20):
            p.produce("sec-wrong", value=b"w-%d" % i)
        assert p.flush(TIMEOUT_S) == 0
        _wait_isr(c, "sec-wrong", [1, 2], timeout=TIMEOUT_S)
        pattern = (r"replica fetcher for leader 1 \(127\.0\.0\.1:\d+\): SASL authentication to "
                   r"127\.0\.0\.1:\d+ \(SCRAM-SHA-512 as broker\) failed: Authentication failed: "
                   r"Invalid user credentials")
        _wait(lambda: re.search(pattern, _log(c, 3)[mark:]), "the SASL failure in broker 3's log")
        # ... but serves what it leads: the others authenticate to it fine.
        _wait_isr(c, "sec-own", [1, 2, 3])
        p = ck.Producer(sasl.conf(acks="all"))
        errors = []
        for i in range(50):
            p.produce("sec-own", value=b"own-%d" % i, on_delivery=lambda e, m: e and errors.append(e))
        assert p.flush(TIMEOUT_S) == 0 and errors == []
        _wait_identical(c, "sec-own", 0)
        # Rate-limited and backed off: a few lines, not one per retry.
        time.sleep(2)
        failures = len(re.findall(pattern, _log(c, 3)[mark:]))
        assert 1 <= failures <= 3, failures
    finally:
        c.stop(3)
        node.settings[key] = SCRAM_JAAS.format(pw=BROKER_PW)
        c.start_node(3)
    _wait_isr(c, "sec-wrong", [1, 2, 3])


# -- SSL with required client certificates between brokers ---------------------------------
@pytest.fixture(scope="module")
def mtls(tmp_path_factory, certs):
    ports: dict[int, int] = {}
    settings = {
        "zookeeper.session.timeout.ms": 6000,
        "listener.security.protocol.map": "INTERNAL:SSL,CLIENT:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "listener.name.internal.ssl.client.auth": "required",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs / "broker-store.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certs / "ca.pem"),
        # The brokers' principal is their certificate's subject; clients on
        # the PLAINTEXT listener (ANONYMOUS) may do what no ACL restricts.
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:CN=broker",
        "allow.everyone.if.no.acl.found": "true",
    }
    with EmbeddedCluster(3, settings=settings, data_dir=tmp_path_factory.mktemp("interbroker-mtls"),
                         node_settings=_two_listeners(ports)) as c:
        yield c, ports


def _connecting_pids(port: int) -> list[int]:
    """The processes with an established TCP connection to 127.0.0.1:port."""
    out = subprocess.run(["ss", "-Htnp", "state", "established", f"( dport = :{port} )"],
                         capture_output=True, text=True, check=True).stdout
    return [int(pid) for pid in re.findall(r"pid=(\d+)", out)]


def _anonymous_replica_fetch_error(port: int, topic: str) -> int:
    """The error code of partition 0 in the answer to a replica fetch
    (Fetch v4, replica_id 2) sent in plaintext, i.e. as User:ANONYMOUS."""
    name = topic.encode()
    body = struct.pack(">hhih", 1, 4, 7, 4) + b"test"  # Fetch v4, correlation id 7
    body += struct.pack(">iiiib", 2, 0, 1, 1 << 20, 0)  # replica_id, max_wait, min/max bytes
    body += struct.pack(">ih", 1, len(name)) + name
    body += struct.pack(">iiqi", 1, 0, 0, 1 << 20)      # partition 0 from offset 0
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sock.recv(65536)
            assert chunk, "connection closed"
            data += chunk
    # size, correlation id, throttle, [topics] count, topic name, [partitions]
    # count, partition index, error code.
    at = 4 + 4 + 4 + 4
    at += 2 + struct.unpack(">h", data[at:at + 2])[0]
    return struct.unpack(">h", data[at + 8:at + 10])[0]


def test_brokers_replicate_over_mutual_tls(mtls):
    c, ports = mtls
    for node_id in c.nodes:
        assert ("inter-broker connections: listener INTERNAL, SSL (TLS, host names verified)"
                in _log(c, node_id))
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports.values())
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("mtls-rep", 1, 3, config={"min.insync.replicas": "2"})],
                        operation_timeout=TIMEOUT_S)["mtls-rep"].result(TIMEOUT_S)
    leader = c.wait_for_leaders("mtls-rep", timeout=TIMEOUT_S)[0]
    # ANONYMOUS may not act as a broker: only followers that authenticate
    # with their certificate (User:CN=broker, a super user) can replicate.
    deny = AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL,
                      "User:ANONYMOUS", "*", AclOperation.CLUSTER_ACTION, AclPermissionType.DENY)
    for f in admin.create_acls([deny]).values():
        f.result(TIMEOUT_S)
    # Once the leader applied it, a replica fetch as ANONYMOUS is refused.
    _wait(lambda: _anonymous_replica_fetch_error(ports[leader], "mtls-rep") in (29, 31),
          "the DENY ACL to reach the leader")
    p = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(300):
        p.produce("mtls-rep", value=b"m-%05d" % i)
    assert p.flush(TIMEOUT_S) == 0
    _wait_isr(c, "mtls-rep", [1, 2, 3])
    _wait_identical(c, "mtls-rep", 0)
    for node_id in c.nodes:
        assert "AUTHORIZATION_FAILED" not in _log(c, node_id)
    # The followers' fetch connections go to the leader's TLS port, and
    # no broker connects to its plaintext client port.
    followers = {c.node(n).pid for n in c.nodes if n != leader}
    assert followers <= set(_connecting_pids(c.node(leader).port))
    brokers = {c.node(n).pid for n in c.nodes}
    assert not brokers & set(_connecting_pids(ports[leader]))


def test_untrusted_leader_certificate_is_refused_and_retried(tmp_path, certs):
    """A follower whose truststore does not hold the leader's CA: the TLS
    failure is named in its log, it stays out of the ISR, nothing crashes."""
    ports: dict[int, int] = {}
    settings = {
        "zookeeper.session.timeout.ms": 6000,
        "replica.lag.time.max.ms": 4000,
        "listener.security.protocol.map": "INTERNAL:SSL,CLIENT:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs / "broker-store.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certs / "ca.pem"),
    }

    def per_node(node_id, port):
        s = _two_listeners(ports)(node_id, port)
        if node_id == 2:  # broker 2 presents a certificate of another CA
            s["ssl.keystore.location"] = str(certs / "rogue-store.pem")
        return s

    with EmbeddedCluster(2, settings=settings, data_dir=tmp_path / "c",
                         node_settings=per_node) as c:
        bootstrap = f"127.0.0.1:{ports[1]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("rogue", 1, replica_assignment=[[2, 1]])],
                            operation_timeout=TIMEOUT_S)["rogue"].result(TIMEOUT_S)
        c.wait_for_leaders("rogue", timeout=TIMEOUT_S)
        p = ck.Producer({"bootstrap.servers": bootstrap, "acks": "1"})
        for i in range(20):
            p.produce("rogue", value=b"r-%d" % i)
        assert p.flush(TIMEOUT_S) == 0
        _wait_isr(c, "rogue", [2])
        _wait(lambda: re.search(r"replica fetcher for leader 2 \(127\.0\.0\.1:\d+\): TLS handshake "
                                r"with 127\.0\.0\.1 failed: server certificate not accepted: "
                                r"unable to get local issuer certificate", _log(c, 1)),
              "the certificate failure in broker 1's log")
        assert all(n.running for n in c.nodes.values())


def test_follower_without_cluster_action_is_refused_until_granted(sasl):
    """Broker 2 authenticates fine but as a principal that is no super user:
    the leaders refuse its replica fetches (CLUSTER_ACTION on the cluster),
    its fetcher logs the authorisation failure and it leaves the ISR; an
    ACL granting that principal ClusterAction lets it catch up, without a
    restart."""
    c = sasl.cluster
    sasl.create("sec-denied", assignment=[[1, 2, 3]])
    _wait_isr(c, "sec-denied", [1, 2, 3])
    scram_users.upsert_password(c.zk, "replicator", "SCRAM-SHA-512", "replicator-pw")
    node = c.node(2)
    key = "listener.name.internal.scram-sha-512.sasl.jaas.config"
    c.stop(2)
    node.settings[key] = SCRAM_JAAS.format(pw="replicator-pw").replace('"broker"', '"replicator"')
    mark = len(_log(c, 2))
    c.start_node(2)
    p = ck.Producer(sasl.conf(acks="1"))
    for i in range(20):
        p.produce("sec-denied", value=b"d-%d" % i, partition=0)
    assert p.flush(TIMEOUT_S) == 0
    _wait_isr(c, "sec-denied", [1, 3])
    pattern = (r"replica fetcher for leader 1 \(127\.0\.0\.1:\d+\): .*"
               r"(CLUSTER_AUTHORIZATION_FAILED|TOPIC_AUTHORIZATION_FAILED)")
    _wait(lambda: re.search(pattern, _log(c, 2)[mark:]), "the authorisation failure in the log")
    assert "inter-broker connections: listener INTERNAL, SASL_SSL (SCRAM-SHA-512 as replicator" \
        in _log(c, 2)[mark:]
    grant = AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL,
                       "User:replicator", "*", AclOperation.CLUSTER_ACTION,
                       AclPermissionType.ALLOW)
    admin = sasl.admin()  # kept alive until the result is in
    for f in admin.create_acls([grant]).values():
        f.result(TIMEOUT_S)
    _wait_isr(c, "sec-denied", [1, 2, 3])
    _wait_identical(c, "sec-denied", 0)
