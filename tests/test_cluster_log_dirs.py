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
- The leader's replicas of __consumer_offsets and __transaction_state
  move too; their coordinators reload from the moved replica (committed
  offsets kept, new commits and transactions go on).
"""
from __future__ import annotations

import glob
import os
import time

import pytest

ck = pytest.importorskip("confluent_kafka")
import confluent_kafka.admin  # noqa: E402,F401  (ck.admin)
kafka_admin = pytest.importorskip("kafka.admin")

from background_writer import start_writer  # noqa: E402
from headrace import EmbeddedCluster  # noqa: E402

REPLICA_NOT_AVAILABLE = 9
LOG_DIR_NOT_FOUND = 57
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
    """{broker: {dir: {partition: is_future}}} for `topic`. A partition
    listed twice in one directory (current and future at once) fails."""
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
            listed = [(p["partition_index"], p["is_future_key"])
                      for t in d.get("topics", []) if t["name"] == topic
                      for p in t.get("partitions", [])]
            dirs[d["log_dir"]] = dict(listed)
            assert len(dirs[d["log_dir"]]) == len(listed), (a["broker"], d["log_dir"], listed)
    return out


def _dir_of(dirs: dict[str, dict], partition: int) -> str:
    found = [d for d, parts in dirs.items() if parts.get(partition) is False]
    assert len(found) == 1, dirs
    return found[0]


def _consume(cluster, topic: str, partition: int) -> list[tuple[int, bytes]]:
    """(offset, value) of every record of one partition below its HW, in order."""
    cluster.wait_for_leaders(topic)  # and known to every broker (get_watermark_offsets)
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
    """`prefix`N-PAD records to partition 0 (background_writer.start_writer)."""
    return start_writer(cluster.bootstrap_servers, topic, lambda i: prefix + b"%d-" % i + PAD,
                        timeout_s)


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
    # The metadata names the leader before every replica's broker has made
    # the partition's directory: wait until both list it.
    deadline = time.monotonic() + 20
    while True:
        before = _log_dirs(cluster, topic)
        if all(any(0 in parts for parts in before[b].values()) for b in (leader, follower)):
            break
        assert time.monotonic() < deadline, before
        time.sleep(0.2)
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
                   ("pair", 0, 2): next(iter(before[2]))})
        finally:
            admin.close()
        errors = {(k.topic, k.broker_id): v.errno for k, v in answer.items()}
        assert errors[(topic, leader)] == 0 and errors[(topic, follower)] == 0, errors
        assert errors[(topic, 2)] == LOG_DIR_NOT_FOUND, errors
        assert errors[("pair", 2)] == REPLICA_NOT_AVAILABLE, errors
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


def _leader_of(cluster, topic: str, partition: int) -> int:
    md = _ck_admin(cluster).list_topics(topic, timeout=10).topics[topic]
    return md.partitions[partition].leader


def _move(cluster, topic: str, partition: int, broker: int) -> str:
    """Moves broker's replica of topic-partition to its other log directory
    and waits until DescribeLogDirs lists it there; returns that directory."""
    before = _log_dirs(cluster, topic)[broker]
    target = next(d for d in before if d != _dir_of(before, partition))
    admin = _kp_admin(cluster)
    try:
        answer = admin.alter_replica_log_dirs({(topic, partition, broker): target})
    finally:
        admin.close()
    assert [v.errno for v in answer.values()] == [0], answer
    deadline = time.monotonic() + 30
    while _dir_of(_log_dirs(cluster, topic)[broker], partition) != target:
        assert time.monotonic() < deadline, _log_dirs(cluster, topic)[broker]
        time.sleep(0.1)
    return target


def _retry(fn, what: str):
    """fn() until it stops raising KafkaException (a coordinator reloading
    answers retriable errors meanwhile)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return fn()
        except ck.KafkaException as e:
            assert time.monotonic() < deadline, f"{what}: {e}"
            time.sleep(0.2)


def test_coordinators_follow_moved_internal_replicas(cluster):
    """Replicas of __consumer_offsets and __transaction_state move between
    log directories too, as Kafka moves them: the leader's coordinator is
    reloaded from the moved replica, so a group's committed offsets survive
    the move and new commits go on, and a transactional producer commits
    again on the same epoch."""
    from cluster_clients import txn_producer
    from test_cluster_groups import group_partition
    from test_transactions import read_all
    topic, group, txn_id = "coord-moves", "mover-group", "mover-txn"
    _create(cluster, topic, [[0, 1, 2]])
    c = ck.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                     "enable.auto.commit": False})
    producer = txn_producer(cluster, txn_id)
    try:
        c.commit(offsets=[ck.TopicPartition(topic, 0, 42)], asynchronous=False)
        producer.begin_transaction()
        producer.produce(topic, b"before the move", partition=0)
        producer.commit_transaction(30)

        group_p = group_partition(group, 50)
        txn_p = group_partition(txn_id, 50)
        moved = {}
        for internal, p in (("__consumer_offsets", group_p), ("__transaction_state", txn_p)):
            leader = _leader_of(cluster, internal, p)
            moved[internal] = (leader, _move(cluster, internal, p, leader))

        def committed():
            [tp] = c.committed([ck.TopicPartition(topic, 0)], timeout=10)
            return tp.offset
        assert _retry(committed, "offsets after the move") == 42
        _retry(lambda: c.commit(offsets=[ck.TopicPartition(topic, 0, 43)], asynchronous=False),
               "a commit after the move")
        assert committed() == 43

        producer.begin_transaction()
        producer.produce(topic, b"after the move", partition=0)
        producer.commit_transaction(30)
    finally:
        c.close()
    assert [v for *_, v in read_all(cluster.bootstrap_servers, topic, 1, "read_committed",
                                    expect=2)] == [b"before the move", b"after the move"]
    for internal, (leader, target) in moved.items():
        p = group_p if internal == "__consumer_offsets" else txn_p
        log = cluster.node(leader).log_path.read_text()
        assert f"moved {internal}-{p} to {target}/{internal}-{p}" in log


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
