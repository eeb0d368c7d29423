"""A 3-broker cluster with node ids 0..2 and two log directories per broker.

- Node ids from 0 (`EmbeddedCluster(first_node_id=0)`, as a single Kafka's
  broker.id=0 that client test suites assume): the brokers join, one of them
  is elected controller, new partitions can be assigned to broker 0, and a
  partition led by broker 0 takes idempotent produces.
- AlterReplicaLogDirs in cluster mode (docs/cluster.md, "Moving a replica
  between log directories"): the leader's and a follower's replica of an
  RF=3 partition move to their broker's other log directory while an
  idempotent acks=all producer writes; every acknowledged record is read
  back once and in order, the three replicas end byte-identical,
  DescribeLogDirs lists each moved replica in its new directory, and a
  restart of the leader's broker keeps it there. A replica the broker does
  not host answers REPLICA_NOT_AVAILABLE.
"""
from __future__ import annotations

import glob
import os
import threading
import time

import pytest

ck = pytest.importorskip("confluent_kafka")
import confluent_kafka.admin  # noqa: E402,F401  (ck.admin)
kafka_admin = pytest.importorskip("kafka.admin")

from headrace import EmbeddedCluster  # noqa: E402

REPLICA_NOT_AVAILABLE = 9
LOG_DIR_NOT_FOUND = 57
INVALID_TOPIC_EXCEPTION = 17
PAD = b"x" * 100  # records of ~100 bytes: the copy takes several reads


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("logdirs")

    def two_dirs(node_id: int, port: int) -> dict:
        return {"log.dirs": f"{root}/broker-{node_id},{root}/broker-{node_id}-b"}

    with EmbeddedCluster(brokers=3, first_node_id=0, data_dir=root, node_settings=two_dirs,
                         settings={"min.insync.replicas": 2}) as c:
        yield c


def _kp_admin(cluster):
    return kafka_admin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                                        request_timeout_ms=15000)


def _ck_admin(cluster):
    return ck.admin.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def _create(cluster, topic: str, assignment: list[list[int]]) -> None:
    kp = _kp_admin(cluster)
    try:
        kp.create_topics([kafka_admin.NewTopic(
            topic, replica_assignments=dict(enumerate(assignment)))])
    finally:
        kp.close()
    admin = _ck_admin(cluster)
    deadline = time.monotonic() + 20
    while True:  # every partition has its preferred leader
        md = admin.list_topics(topic, timeout=10).topics[topic]
        if len(md.partitions) == len(assignment) and all(
                md.partitions[p].leader == assignment[p][0] for p in range(len(assignment))):
            return
        assert time.monotonic() < deadline, md.partitions
        time.sleep(0.1)


def _log_dirs(cluster, topic: str) -> dict[int, dict[str, dict]]:
    """{broker: {dir: {partition: is_future}}} for `topic`."""
    admin = _kp_admin(cluster)
    try:
        answers = admin.describe_log_dirs()
    finally:
        admin.close()
    out: dict[int, dict[str, dict]] = {}
    for a in answers:
        dirs = out.setdefault(a["broker"], {})
        for d in a["log_dirs"]:
            assert d["error_code"] == 0, d
            dirs[d["log_dir"]] = {p["partition_index"]: p["is_future_key"]
                                  for t in d.get("topics", []) if t["name"] == topic
                                  for p in t.get("partitions", [])}
    return out


def _dir_of(dirs: dict[str, dict], partition: int) -> str:
    found = [d for d, parts in dirs.items() if parts.get(partition) is False]
    assert len(found) == 1, dirs
    return found[0]


def _consume(cluster, topic: str, partition: int) -> list[tuple[int, bytes]]:
    """(offset, value) of every record of one partition below its HW, in order."""
    c = ck.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "logdirs",
                     "enable.auto.commit": False, "fetch.queue.backoff.ms": 10})
    try:
        low, high = c.get_watermark_offsets(ck.TopicPartition(topic, partition), timeout=15)
        c.assign([ck.TopicPartition(topic, partition, low)])
        out: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 30
        while len(out) < high - low:
            assert time.monotonic() < deadline, f"read stalled at {len(out)} of {high - low}"
            for msg in c.consume(min(1000, high - low - len(out)), 1.0):
                assert msg.error() is None, msg.error()
                out.append((msg.offset(), msg.value()))
        return out
    finally:
        c.close()


def _segments(path: str) -> bytes:
    return b"".join(open(f, "rb").read() for f in sorted(glob.glob(os.path.join(path, "*.log"))))


def _start_writer(cluster, topic: str, prefix: bytes, timeout_s: int):
    """An idempotent acks=all producer writing `prefix`N-PAD records to
    partition 0 on a thread until `stop` is set. Returns (acked offset ->
    value, delivery failures, stop, thread)."""
    acked: dict[int, bytes] = {}
    failures: list = []
    stop = threading.Event()

    def write():
        p = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 2,
                         "message.timeout.ms": timeout_s * 1000})

        def report(err, msg):
            if err is None:
                acked[msg.offset()] = msg.value()
            else:
                failures.append(err)
        i = 0
        while not stop.is_set():
            p.produce(topic, value=prefix + b"%d-" % i + PAD, partition=0, on_delivery=report)
            p.poll(0)
            i += 1
            if i % 100 == 0:
                time.sleep(0.002)
        assert p.flush(timeout_s) == 0

    writer = threading.Thread(target=write)
    writer.start()
    return acked, failures, stop, writer


def test_node_ids_start_at_zero(cluster):
    assert cluster.node_ids == [0, 1, 2]
    assert sorted(cluster.live_brokers()) == [0, 1, 2]
    md = _ck_admin(cluster).list_topics(timeout=10)
    assert sorted(md.brokers) == [0, 1, 2]
    assert md.controller_id in (0, 1, 2)
    # kafka-python's test_create_partitions: new partitions on broker 0.
    _create(cluster, "ids", [[1, 2, 0]])
    admin = _ck_admin(cluster)
    admin.create_partitions([ck.admin.NewPartitions("ids", 2, replica_assignment=[[0, 1, 2]])])[
        "ids"].result(30)
    deadline = time.monotonic() + 20
    while True:
        parts = admin.list_topics("ids", timeout=10).topics["ids"].partitions
        if len(parts) == 2 and parts[1].leader == 0:
            break
        assert time.monotonic() < deadline, parts
        time.sleep(0.1)
    assert parts[1].replicas == [0, 1, 2]
    p = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True})
    acked = []
    for i in range(100):
        p.produce("ids", value=b"v%d" % i, partition=1,
                  on_delivery=lambda err, msg: acked.append(err or msg.offset()))
    assert p.flush(30) == 0
    assert acked == list(range(100))
    assert [v for _, v in _consume(cluster, "ids", 1)] == [b"v%d" % i for i in range(100)]


def test_move_leader_and_follower_replicas_while_writing(cluster):
    topic, leader, follower = "moving", 0, 1
    _create(cluster, topic, [[leader, follower, 2]])
    _create(cluster, "pair", [[0, 1]])  # no replica on broker 2
    before = _log_dirs(cluster, topic)
    source = {b: _dir_of(before[b], 0) for b in (leader, follower)}
    target = {b: next(d for d in before[b] if d != source[b]) for b in (leader, follower)}

    acked, failures, stop, writer = _start_writer(cluster, topic, b"r", 30)
    try:
        deadline = time.monotonic() + 10
        while len(acked) < 20000:  # something to copy
            assert time.monotonic() < deadline and not failures, (len(acked), failures[:3])
            time.sleep(0.05)
        admin = _kp_admin(cluster)
        try:
            answer = admin.alter_replica_log_dirs(
                {(topic, 0, b): target[b] for b in (leader, follower)}
                | {(topic, 0, 2): "/no/such/dir",
                   # broker 2 hosts no replica of pair-0
                   ("pair", 0, 2): next(iter(before[2])),
                   # a coordinator's log is not moved
                   ("__consumer_offsets", 0, 2): next(iter(before[2]))})
        finally:
            admin.close()
        errors = {(k.topic, k.broker_id): v.errno for k, v in answer.items()}
        assert errors[(topic, leader)] == 0 and errors[(topic, follower)] == 0, errors
        assert errors[(topic, 2)] == LOG_DIR_NOT_FOUND, errors
        assert errors[("pair", 2)] == REPLICA_NOT_AVAILABLE, errors
        assert errors[("__consumer_offsets", 2)] == INVALID_TOPIC_EXCEPTION, errors
        deadline = time.monotonic() + 30
        while True:
            dirs = _log_dirs(cluster, topic)
            if all(_dir_of(dirs[b], 0) == target[b] for b in (leader, follower)):
                break
            assert time.monotonic() < deadline, dirs
            time.sleep(0.1)
        moved_at = len(acked)
        time.sleep(0.5)  # keep writing to the moved replicas
    finally:
        stop.set()
        writer.join(60)
    assert not failures, failures[:3]
    assert len(acked) > moved_at, "nothing was written after the move"
    assert not any(future for by_dir in dirs.values() for parts in by_dir.values()
                   for future in parts.values())  # no future replica left

    def check_records():
        stored = _consume(cluster, topic, 0)
        offsets = [o for o, _ in stored]
        assert offsets == list(range(len(stored)))  # in order, each once
        by_offset = dict(stored)
        lost = [o for o, v in acked.items() if by_offset.get(o) != v]
        values = [v for _, v in stored]
        assert lost == [] and len(values) == len(set(values)), (len(lost), len(values))
        return len(stored)
    count = check_records()

    # The three replicas converge to the same bytes.
    paths = {b: os.path.join(_dir_of(_log_dirs(cluster, topic)[b], 0), f"{topic}-0")
             for b in (0, 1, 2)}
    deadline = time.monotonic() + 20
    while len({_segments(p) for p in paths.values()}) != 1:
        assert time.monotonic() < deadline, {b: len(_segments(p)) for b, p in paths.items()}
        time.sleep(0.2)
    assert not os.path.exists(os.path.join(source[leader], f"{topic}-0"))
    for b in (leader, follower):  # each broker moved its replica itself
        assert f"moved {topic}-0 to {target[b]}/{topic}-0" in cluster.node(b).log_path.read_text()
    print(f"acked {len(acked)} ({moved_at} when both had moved), stored {count}")

    # A restart keeps the moved replica where it went (and its records).
    cluster.restart(leader)
    dirs = _log_dirs(cluster, topic)
    assert _dir_of(dirs[leader], 0) == target[leader], dirs
    assert check_records() == count


@pytest.mark.slow
def test_moves_across_leadership_changes(cluster):
    """Every broker moves its replica to its other directory 8 times while
    the leader is stopped (controlled shutdown: leadership moves, the
    control plane's state reaches the moving broker mid-move) and restarted
    every other round, and an idempotent acks=all producer writes: 0 lost,
    0 duplicated, order kept, replicas byte-identical. (~15 s here.)"""
    topic = "churn"
    _create(cluster, topic, [[0, 1, 2]])
    acked, failures, stop, writer = _start_writer(cluster, topic, b"c", 60)
    moves = 0
    try:
        for rnd in range(8):
            time.sleep(0.3)
            dirs = _log_dirs(cluster, topic)
            want = {(topic, 0, b): next(d for d in dirs[b] if d != _dir_of(dirs[b], 0))
                    for b in (0, 1, 2)}
            admin = _kp_admin(cluster)
            try:
                moves += sum(e.errno == 0 for e in admin.alter_replica_log_dirs(want).values())
            finally:
                admin.close()
            if rnd % 2 == 0:
                leader = cluster.wait_for_leaders(topic, timeout=30)[0]
                cluster.stop(leader)
                time.sleep(0.2)
                cluster.start_node(leader)
    finally:
        stop.set()
        writer.join(120)
    assert not failures, failures[:3]
    assert moves == 24
    stored = _consume(cluster, topic, 0)
    assert [o for o, _ in stored] == list(range(len(stored)))
    by_offset = dict(stored)
    assert [o for o, v in acked.items() if by_offset.get(o) != v] == []
    assert len({v for _, v in stored}) == len(stored)
    deadline = time.monotonic() + 30
    while True:
        dirs = _log_dirs(cluster, topic)
        segments = {_segments(os.path.join(_dir_of(dirs[b], 0), f"{topic}-0")) for b in (0, 1, 2)}
        if len(segments) == 1:
            break
        assert time.monotonic() < deadline, "replicas differ"
        time.sleep(0.5)
