"""Consumer groups on a 3-broker cluster with a partitioned __consumer_offsets
(a real ZooKeeper and three `headrace broker --zookeeper` processes).

A group's coordinator is the leader of partition abs(Java hashCode(group id))
% N of __consumer_offsets (computed here with our own Java hash), so groups
spread over the brokers: FindCoordinator names the leader of each group's
partition, confluent-kafka and kafka-python groups commit and resume, a
SIGKILL of one group's coordinator moves that group (offsets intact) while a
group of another partition carries on (also for a KIP-848
`group.protocol=consumer` group), and a transactional
consume-transform-produce commits its offsets through a non-zero partition.
The migration test turns a single-node data dir into a cluster member and
reads the offsets it had committed back through the cluster (with the
default 50 partitions).
"""
from __future__ import annotations

import struct
import time
import uuid

import pytest

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from broker_process import BrokerProcess  # noqa: E402
from cluster_clients import create_topic as create  # noqa: E402
from headrace import EmbeddedCluster  # noqa: E402
from headrace.admin_wire import Connection, WireError  # noqa: E402

TIMEOUT_S = 60.0
PARTITIONS = 6  # of __consumer_offsets in the shared cluster
SETTINGS = {
    "zookeeper.session.timeout.ms": 6000,
    "replica.lag.time.max.ms": 4000,
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 1000,
    "offsets.topic.num.partitions": PARTITIONS,
    # KIP-848 groups (test_kip848_group_...): a failover within seconds.
    "group.consumer.min.session.timeout.ms": 1000,
    "group.consumer.session.timeout.ms": 6000,
    "group.consumer.min.heartbeat.interval.ms": 100,
    "group.consumer.heartbeat.interval.ms": 300,
}


def java_hash(s: str) -> int:
    """Java's String.hashCode: h = 31*h + c over the UTF-16 code units, as a
    signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def group_partition(group: str, partitions: int) -> int:
    """Kafka's partitionFor: Utils.abs(hashCode) % partitions (MIN_VALUE -> 0)."""
    h = java_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def test_java_hash_matches_known_values():
    # Values computed on a JVM (String.hashCode), as in group_partition_test.cc.
    assert java_hash("my-group") == -1906497762
    assert java_hash("emoji-\U0001F600") == 1164511306
    assert group_partition("polygenelubricants", 50) == 0  # hashCode == Integer.MIN_VALUE


def group_on(partition: int, partitions: int, prefix: str) -> str:
    """A fresh group id whose partition is `partition`."""
    while True:
        g = f"{prefix}-{uuid.uuid4().hex[:8]}"
        if group_partition(g, partitions) == partition:
            return g


def find_group_coordinators(bootstrap: str, groups: list[str],
                            key_type: int = 0) -> dict[str, tuple[int, int]]:
    """FindCoordinator v4 (batched keys; key type 0 = groups, 1 =
    transactional ids) at the first broker that answers: {key: (error,
    node)}. A broker that accepts and then drops the connection (one being
    killed) counts as not answering."""
    def cstr(s: str) -> bytes:
        b = s.encode()
        return bytes([len(b) + 1]) + b
    body = bytes([key_type, len(groups) + 1]) + b"".join(cstr(g) for g in groups) + b"\x00"
    for address in bootstrap.split(","):
        host, port = address.rsplit(":", 1)
        try:
            conn = Connection(host, int(port), 10.0)
        except WireError:
            continue
        try:
            r = conn.call(10, 4, body)
        except WireError:
            continue
        finally:
            conn.close()
        r.int32()  # throttle
        out = {}
        for _ in range(r.uvarint() - 1):
            key = r.cstring()
            node = r.int32()
            r.cstring()  # host
            r.int32()  # port
            code = r.int16()
            r.cstring()  # message
            r.tags()
            out[key] = (code, node)
        return out
    raise AssertionError(f"no broker of {bootstrap} answers")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with EmbeddedCluster(brokers=3, settings=SETTINGS,
                         data_dir=str(tmp_path_factory.mktemp("groups-cluster"))) as c:
        yield c




def produce(bootstrap: str, topic: str, n: int, partitions: int = 3) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(n):
        p.produce(topic, b"v-%04d" % i, partition=i % partitions)
    assert p.flush(30) == 0


def offsets_leaders(cluster) -> dict[int, int]:
    """{partition: leader} of __consumer_offsets, creating it first."""
    find_group_coordinators(cluster.bootstrap_servers, ["bootstrap-the-topic"])
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            return cluster.wait_for_leaders("__consumer_offsets", timeout=1.0)
        except Exception:
            assert time.monotonic() < deadline, "__consumer_offsets not created"


def wait_coordinators(cluster, groups: list[str], key_type: int = 0) -> dict[str, int]:
    """Until FindCoordinator answers every key without error: {key: node}."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        got = find_group_coordinators(cluster.bootstrap_servers, groups, key_type)
        if all(code == 0 for code, _ in got.values()):
            return {g: node for g, (code, node) in got.items()}
        assert time.monotonic() < deadline, f"coordinators not found: {got}"
        time.sleep(0.2)


def consume_commit(bootstrap: str, group: str, topic: str, want: int, lib: str) -> int:
    """Consumes `want` records of `topic` as `group` with `lib`, commits
    synchronously, closes; returns how many it consumed."""
    got = 0
    deadline = time.monotonic() + TIMEOUT_S
    if lib == "confluent":
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "session.timeout.ms": 6000})
        c.subscribe([topic])
        try:
            while got < want:
                assert time.monotonic() < deadline, f"{group}: consumed {got} of {want}"
                m = c.poll(0.5)
                if m is not None and not m.error():
                    got += 1
                    if got == want:  # every partition's consumed position
                        c.commit(asynchronous=False)
        finally:
            c.close()
        return got
    from kafka import KafkaConsumer
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                      enable_auto_commit=False, auto_offset_reset="earliest",
                      session_timeout_ms=6000, consumer_timeout_ms=500)
    try:
        while got < want:
            assert time.monotonic() < deadline, f"{group}: consumed {got} of {want}"
            for m in c:
                got += 1
                if got == want:
                    c.commit()  # every partition's consumed position
                    break
    finally:
        c.close()
    return got


def committed(bootstrap: str, group: str, topic: str, partitions: int = 3) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], TIMEOUT_S)
        return {tp.partition: tp.offset for tp in tps if tp.offset >= 0}
    finally:
        c.close()


def test_groups_spread_over_the_leaders_of_their_partitions(cluster):
    leaders = offsets_leaders(cluster)
    assert sorted(leaders) == list(range(PARTITIONS))
    groups = [group_on(p, PARTITIONS, "spread") for p in range(PARTITIONS)]
    found = wait_coordinators(cluster, groups)
    for p, g in enumerate(groups):
        assert found[g] == cluster.wait_for_leaders("__consumer_offsets")[p], (g, p)
    assert len(set(found.values())) > 1, f"every group on one broker: {found}"


def test_confluent_and_kafka_python_groups_commit_and_resume(cluster):
    topic = f"resume-{uuid.uuid4().hex[:6]}"
    # RF 1: at least one of the two coordinators below holds no replica of
    # the topic (it checks the topic against the cluster's view).
    create(cluster, topic, rf=1)
    produce(cluster.bootstrap_servers, topic, 90)
    leaders = offsets_leaders(cluster)
    # Two groups on partitions led by different brokers.
    first = group_on(0, PARTITIONS, "ck")
    other = next(p for p in range(PARTITIONS) if leaders[p] != leaders[0])
    second = group_on(other, PARTITIONS, "kp")
    for g, lib in ((first, "confluent"), (second, "kafka-python")):
        assert consume_commit(cluster.bootstrap_servers, g, topic, 30, lib) == 30
        done = committed(cluster.bootstrap_servers, g, topic)
        assert 0 < sum(done.values()) <= 30, done
        # The rest from where it committed: 90 - committed records, no more.
        rest = 90 - sum(done.values())
        assert consume_commit(cluster.bootstrap_servers, g, topic, rest, lib) == rest
        assert sum(committed(cluster.bootstrap_servers, g, topic).values()) == 90


def test_killed_coordinator_moves_one_group_and_leaves_the_other(cluster):
    topic = f"failover-{uuid.uuid4().hex[:6]}"
    create(cluster, topic)
    produce(cluster.bootstrap_servers, topic, 60)
    leaders = offsets_leaders(cluster)
    victim_partition = 1
    victim = leaders[victim_partition]
    safe_partition = next(p for p in range(PARTITIONS) if leaders[p] != victim)
    moving = group_on(victim_partition, PARTITIONS, "moving")
    staying = group_on(safe_partition, PARTITIONS, "staying")
    for g in (moving, staying):
        assert consume_commit(cluster.bootstrap_servers, g, topic, 40, "confluent") == 40
    before = {g: committed(cluster.bootstrap_servers, g, topic) for g in (moving, staying)}
    cluster.kill(victim)
    try:
        # The other group is served during the failover: answered while the
        # killed broker still leads the moving group's partition in
        # ZooKeeper (its session has not expired yet).
        assert committed(cluster.bootstrap_servers, staying, topic) == before[staying]
        assert cluster.partition_states("__consumer_offsets")[victim_partition].leader == victim, \
            "the unaffected group waited for the failover"
        # The moved group: a new leader of its partition, offsets intact.
        deadline = time.monotonic() + TIMEOUT_S
        while cluster.partition_states("__consumer_offsets")[victim_partition].leader in (victim, -1):
            assert time.monotonic() < deadline, "no new leader for the killed coordinator's partition"
            time.sleep(0.1)
        new = cluster.partition_states("__consumer_offsets")[victim_partition].leader
        assert wait_coordinators(cluster, [moving])[moving] == new
        assert committed(cluster.bootstrap_servers, moving, topic) == before[moving]
        rest = 60 - sum(before[moving].values())
        assert consume_commit(cluster.bootstrap_servers, moving, topic, rest, "confluent") == rest
    finally:
        cluster.restart(victim)


def test_kip848_group_follows_its_coordinator_across_a_kill(cluster):
    """A KIP-848 member (librdkafka group.protocol=consumer: heartbeats carry
    the assignment, no JoinGroup/SyncGroup) consumes half a topic and commits;
    its coordinator is SIGKILLed; the member finds the new leader of the
    group's partition and goes on from its committed offsets: every record,
    old and produced after the kill, consumed exactly once."""
    topic = f"kip848-{uuid.uuid4().hex[:6]}"
    create(cluster, topic)
    produce(cluster.bootstrap_servers, topic, 60)
    leaders = offsets_leaders(cluster)
    group = group_on(2, PARTITIONS, "kip848")
    victim = leaders[2]
    assert wait_coordinators(cluster, [group])[group] == victim
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                  "group.protocol": "consumer", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100})
    seen: list[bytes] = []
    where: list[tuple[int, int]] = []  # (partition, offset) of each

    def consume_until(n: int) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while len(set(seen)) < n:
            assert time.monotonic() < deadline, f"consumed {len(set(seen))} of {n}"
            m = c.poll(0.2)
            if m is not None and not m.error():
                seen.append(m.value())
                where.append((m.partition(), m.offset()))
                c.commit(message=m, asynchronous=False)

    c.subscribe([topic])
    try:
        consume_until(30)
        before = committed(cluster.bootstrap_servers, group, topic)
        assert sum(before.values()) == 30
        cluster.kill(victim)
        try:
            deadline = time.monotonic() + TIMEOUT_S
            while cluster.partition_states("__consumer_offsets")[2].leader in (victim, -1):
                assert time.monotonic() < deadline, "no new leader for the group's partition"
                time.sleep(0.1)
            # Idempotent: a produce retried across the failover must not
            # store a record twice (the check below is about the group).
            p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                          "enable.idempotence": True})
            for i in range(60, 90):
                p.produce(topic, b"v-%04d" % i, partition=i % 3)
            assert p.flush(30) == 0
            consume_until(90)
            assert wait_coordinators(cluster, [group])[group] != victim
        finally:
            cluster.restart(victim)
    finally:
        c.close()
    # The same offset twice: the group lost a commit; two offsets: the log
    # holds the record twice.
    twice = [(v, [w for w, x in zip(where, seen) if x == v]) for v in sorted(set(seen))
             if seen.count(v) > 1]
    assert not twice, f"consumed twice (value, [(partition, offset)]): {twice}"
    assert sorted(seen) == [b"v-%04d" % i for i in range(90)]  # none lost, none twice
    assert sum(committed(cluster.bootstrap_servers, group, topic).values()) == 90


def test_transactional_offsets_commit_through_a_nonzero_partition(cluster):
    bs = cluster.bootstrap_servers
    src, dst = f"tsrc-{uuid.uuid4().hex[:6]}", f"tdst-{uuid.uuid4().hex[:6]}"
    create(cluster, src)
    create(cluster, dst)
    produce(bs, src, 30)
    offsets_leaders(cluster)
    group = group_on(PARTITIONS - 1, PARTITIONS, "ctp")
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    p = Producer({"bootstrap.servers": bs, "transactional.id": f"tid-{uuid.uuid4().hex[:6]}",
                  "transaction.timeout.ms": 20000})
    p.init_transactions(TIMEOUT_S)
    c.subscribe([src])
    try:
        got = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < 30:
            assert time.monotonic() < deadline, f"consumed {len(got)} of 30"
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m)
        p.begin_transaction()
        for m in got:
            p.produce(dst, m.value().upper(), partition=m.partition())
        positions = c.position([TopicPartition(src, q) for q in range(3)])
        p.send_offsets_to_transaction(positions, c.consumer_group_metadata(), TIMEOUT_S)
        p.commit_transaction(TIMEOUT_S)
    finally:
        c.close()
    assert committed(bs, group, src) == {0: 10, 1: 10, 2: 10}
    r = Consumer({"bootstrap.servers": bs, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    r.assign([TopicPartition(dst, q, 0) for q in range(3)])
    out = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(out) < 30:
        assert time.monotonic() < deadline, f"read {len(out)} of 30 transformed records"
        m = r.poll(0.5)
        if m is not None and not m.error():
            out.append(m.value())
    r.close()
    assert sorted(out) == sorted(b"V-%04d" % i for i in range(30))


def test_single_node_offsets_migrate_into_the_cluster(tmp_path):
    """A data dir that ran single-node joins a cluster (default 50
    partitions of __consumer_offsets): the offsets it had committed are read
    back through the cluster, and its old group log is renamed."""
    base = tmp_path / "migrating"
    old_dir = base / "broker-1"  # EmbeddedCluster's broker 1 uses this dir
    old_dir.mkdir(parents=True)
    single = BrokerProcess(old_dir, "--node-id", "1").start()  # the member it becomes
    topic = "migrated"
    groups = {f"old-{i}": {0: 3 + i, 1: 10 + i} for i in range(4)}
    try:
        admin = AdminClient({"bootstrap.servers": single.bootstrap})  # alive until results
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
        from confluent_kafka import ConsumerGroupTopicPartitions
        for g, offs in groups.items():
            tps = [TopicPartition(topic, p, o) for p, o in offs.items()]
            admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(g, tps)])[g].result(30)
    finally:
        single.stop()
    assert (old_dir / "__group_metadata").is_dir()
    settings = {k: v for k, v in SETTINGS.items() if k != "offsets.topic.num.partitions"}
    with EmbeddedCluster(brokers=3, settings=settings, data_dir=str(base)) as c:
        # Its offsets wait for their topic: the cluster does not serve the
        # single node's own copy (docs/cluster.md).
        deadline = time.monotonic() + TIMEOUT_S
        while "topic not in the cluster: migrated)" not in (base / "broker-1.log").read_text():
            assert time.monotonic() < deadline, "the migration does not wait for the topic"
            time.sleep(0.1)
        assert (old_dir / "__group_metadata").is_dir()
        create(c, topic, partitions=2)
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            got = {g: committed(c.bootstrap_servers, g, topic, 2) for g in groups}
            if got == groups:
                break
            assert time.monotonic() < deadline, f"migrated offsets: {got}"
            time.sleep(0.5)
        assert len(c.partition_states("__consumer_offsets")) == 50
        # Marked migrated: renamed, not deleted, and not migrated again.
        deadline = time.monotonic() + 10
        while (old_dir / "__group_metadata").exists():
            assert time.monotonic() < deadline, "old group log not marked migrated"
            time.sleep(0.1)
        renamed = [p.name for p in old_dir.iterdir() if p.name.startswith("__group_metadata.migrated.")]
        assert len(renamed) == 1, list(old_dir.iterdir())
        log = (base / "broker-1.log").read_text()
        assert "group metadata migration: re-committed 8 of 8 committed offset(s) of 4 group(s)" in log
        # A restart finds nothing to migrate; the offsets stay.
        c.restart(1)
        log = (base / "broker-1.log").read_text()
        assert log.count("__group_metadata holds") == 1, log
        assert {g: committed(c.bootstrap_servers, g, topic, 2) for g in groups} == groups
