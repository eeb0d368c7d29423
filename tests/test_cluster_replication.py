"""Replication across real broker processes coordinated by a real ZooKeeper.

One EmbeddedCluster (a ZooKeeper process and three `headrace broker
--zookeeper` processes) is shared by the module. The tests create RF=3
topics with min.insync.replicas=2 and produce with idempotent acks=all
producers (confluent-kafka and kafka-python) while SIGKILLing and
restarting leaders, the controller and followers; then they read everything
back and count what was lost, duplicated or reordered, and compare the
replicas' segment files byte for byte. Consumer groups keep their committed
offsets across a kill of the group coordinator.
"""
from __future__ import annotations

import subprocess
import threading
import time

import pytest

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from cluster_faults import segment_digests  # noqa: E402
from test_cluster_groups import group_partition  # noqa: E402
from headrace import EmbeddedCluster  # noqa: E402

SETTINGS = {
    # A killed broker's session ends after this: the failover budget.
    "zookeeper.session.timeout.ms": 6000,
    # A stopped follower leaves the ISR after this.
    "replica.lag.time.max.ms": 4000,
    "num.partitions": 3,
    # Replication throttles measured over 2 windows of 1 s (Kafka: 11), so
    # a fresh meter allows one window's worth, not ten, before it holds.
    "replication.quota.window.num": 2,
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with EmbeddedCluster(brokers=3, settings=SETTINGS,
                         data_dir=str(tmp_path_factory.mktemp("cluster"))) as c:
        yield c


def _admin(cluster):
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def _create(cluster, topic, partitions=3, rf=3, configs=None):
    admin = _admin(cluster)  # kept alive until the result is in
    fs = admin.create_topics(
        [NewTopic(topic, partitions, rf, config=configs or {"min.insync.replicas": "2"})],
        operation_timeout=30)
    fs[topic].result(30)
    cluster.wait_for_leaders(topic, timeout=30)
    _wait_full_isr(cluster, topic, rf)


def _wait_new_leader(cluster, topic, partition, old, timeout=30.0):
    """Until another live broker leads `partition` (the old leader's session
    must expire first: zookeeper.session.timeout.ms)."""
    deadline = time.monotonic() + timeout
    while True:
        state = cluster.partition_states(topic).get(partition)
        if state is not None and state.leader not in (old, -1) and \
                state.leader in cluster.live_brokers():
            return state.leader
        assert time.monotonic() < deadline, f"{topic}-{partition} still led by {old}: {state}"
        time.sleep(0.05)


def _wait_full_isr(cluster, topic, rf, timeout=60.0):
    deadline = time.monotonic() + timeout
    while True:
        states = cluster.partition_states(topic)
        if states and all(s is not None and len(s.isr) == rf for s in states.values()):
            return states
        assert time.monotonic() < deadline, f"ISR of {topic} not complete: {states}"
        time.sleep(0.1)


class Produced:
    """What a producer thread sent and what was acknowledged, per partition."""

    def __init__(self):
        self.acked: dict[int, list[bytes]] = {}
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def ack(self, partition: int, value: bytes):
        with self.lock:
            self.acked.setdefault(partition, []).append(value)


def _produce_confluent(cluster, topic, stop: threading.Event, out: Produced, partitions=3):
    p = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                     "enable.idempotence": True, "linger.ms": 2,
                     "message.timeout.ms": 60000, "retry.backoff.ms": 50})

    def report(err, msg):
        if err is None:
            out.ack(msg.partition(), msg.value())
        else:
            with out.lock:
                out.errors.append(str(err))

    i = 0
    while not stop.is_set():
        try:
            p.produce(topic, value=b"c-%08d" % i, partition=i % partitions, on_delivery=report)
        except BufferError:  # the local queue is full while a leader fails over
            p.poll(0.1)
            continue
        p.poll(0)
        i += 1
        if i % 200 == 0:
            time.sleep(0.01)
    assert p.flush(90) == 0, "undelivered records after 90 s"


def _read_all(cluster, topic, partitions=3) -> dict[int, list[bytes]]:
    cluster.wait_for_leaders(topic)  # and known to every broker (get_watermark_offsets)
    c = ck.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"read-{topic}",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    try:
        highs = {p: c.get_watermark_offsets(ck.TopicPartition(topic, p), timeout=30)[1]
                 for p in range(partitions)}
        c.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
        remaining = sum(highs.values())
        deadline = time.monotonic() + 120
        while remaining > 0:
            assert time.monotonic() < deadline, f"read stalled: {remaining} records missing"
            msg = c.poll(1)
            if msg is None or msg.error():
                continue
            if msg.offset() < highs[msg.partition()]:
                out[msg.partition()].append(msg.value())
                remaining -= 1
    finally:
        c.close()
    return out


def _check_history(produced: Produced, stored: dict[int, list[bytes]]):
    """0 acknowledged records lost, 0 duplicates, per-partition order kept."""
    lost = dup = reordered = 0
    for p, acked in produced.acked.items():
        have = stored.get(p, [])
        seen = set()
        for v in have:
            if v in seen:
                dup += 1
            seen.add(v)
        lost += sum(1 for v in acked if v not in seen)
        # The values carry their send sequence: stored order must be increasing.
        seq = [int(v.split(b"-")[1]) for v in have]
        reordered += sum(1 for a, b in zip(seq, seq[1:]) if b <= a)
    return lost, dup, reordered


def _wait_identical(cluster, topic, partition, timeout=60.0):
    deadline = time.monotonic() + timeout
    while True:
        digests = segment_digests(cluster, topic, partition)
        if len(digests) == 3 and len(set(digests.values())) == 1:
            return digests
        assert time.monotonic() < deadline, f"{topic}-{partition} replicas differ: {digests}"
        time.sleep(0.2)


def test_metadata_lists_every_broker_leader_replicas_and_isr(cluster):
    _create(cluster, "meta")
    admin = _admin(cluster)
    deadline = time.monotonic() + 10  # every broker applies the ZooKeeper state on its own
    while True:
        md = admin.list_topics("meta", timeout=10)
        parts = md.topics["meta"].partitions
        if len(parts) == 3 and all(len(p.isrs) == 3 for p in parts.values()):
            break
        assert time.monotonic() < deadline, {p.id: (p.leader, p.isrs) for p in parts.values()}
        time.sleep(0.1)
    assert sorted(md.brokers) == [1, 2, 3]
    assert md.controller_id == cluster.controller_id()
    parts = md.topics["meta"].partitions
    assert len(parts) == 3
    leaders = set()
    for p in parts.values():
        assert sorted(p.replicas) == [1, 2, 3] and sorted(p.isrs) == [1, 2, 3]
        leaders.add(p.leader)
    assert len(leaders) == 3, "leadership is spread over the brokers"


def test_leader_kill_loses_no_acknowledged_record(cluster):
    topic = "kill-leader"
    _create(cluster, topic)
    produced, stop = Produced(), threading.Event()
    t = threading.Thread(target=_produce_confluent, args=(cluster, topic, stop, produced))
    t.start()
    try:
        time.sleep(2)
        leader = cluster.wait_for_leaders(topic)[0]
        cluster.kill(leader)                      # SIGKILL the leader of partition 0
        _wait_new_leader(cluster, topic, 0, leader)
        cluster.restart(leader)
        time.sleep(2)
        controller = cluster.controller_id()
        cluster.kill(controller)                  # then the controller
        time.sleep(2)
        cluster.restart(controller)
        time.sleep(2)
    finally:
        stop.set()
        t.join(180)
    assert not t.is_alive()
    acked = sum(len(v) for v in produced.acked.values())
    assert acked > 1000, f"only {acked} records acknowledged"
    _wait_full_isr(cluster, topic, 3)
    stored = _read_all(cluster, topic)
    lost, dup, reordered = _check_history(produced, stored)
    print(f"leader+controller kill: {acked} acknowledged, {len(produced.errors)} delivery errors, "
          f"lost {lost}, duplicated {dup}, reordered {reordered}")
    assert (lost, dup, reordered) == (0, 0, 0), \
        f"{acked} acked: lost {lost}, duplicated {dup}, reordered {reordered}; errors {produced.errors[:3]}"
    for p in range(3):
        _wait_identical(cluster, topic, p)


def test_sigkill_of_every_broker_loses_no_acknowledged_record(cluster):
    """headrace.acks.all.fsync (the default): an acknowledged acks=all write
    is fsynced on every ISR member, whose followers fsync behind their
    fetches (docs/cluster.md). All three brokers are SIGKILLed at once while
    acknowledgements stream in, then started again: every acknowledged
    record is there, once, in order."""
    topic = "kill-all"
    _create(cluster, topic, partitions=1)
    produced, stop = Produced(), threading.Event()
    t = threading.Thread(target=_produce_confluent, args=(cluster, topic, stop, produced, 1))
    t.start()
    try:
        deadline = time.monotonic() + 30
        while sum(len(v) for v in produced.acked.values()) < 2000:
            assert time.monotonic() < deadline, "no acknowledgements"
            time.sleep(0.02)
        nodes = [cluster.node(i) for i in (1, 2, 3)]
        for n in nodes:
            n.proc.kill()                         # all three at once, mid-stream
        for n in nodes:
            n.wait(10)
        acked_at_kill = sum(len(v) for v in produced.acked.values())
        for n in nodes:
            n.start()
        cluster.wait_for_brokers([1, 2, 3])
        cluster.wait_for_leaders(topic, timeout=30)
        time.sleep(1)                             # it takes writes again
    finally:
        stop.set()
        t.join(180)
    assert not t.is_alive()
    _wait_full_isr(cluster, topic, 3)
    stored = _read_all(cluster, topic, partitions=1)
    lost, dup, reordered = _check_history(produced, stored)
    acked = sum(len(v) for v in produced.acked.values())
    print(f"kill all: {acked_at_kill} acknowledged before the kill, {acked} in all, "
          f"lost {lost}, duplicated {dup}, reordered {reordered}")
    assert (lost, dup, reordered) == (0, 0, 0), \
        f"{acked} acked: lost {lost}, duplicated {dup}, reordered {reordered}"
    _wait_identical(cluster, topic, 0)


def test_follower_kill_with_kafka_python_acks_all(cluster):
    kafka = pytest.importorskip("kafka")
    topic = "kill-follower"
    _create(cluster, topic, partitions=1)
    leader = cluster.wait_for_leaders(topic)[0]
    follower = next(n for n in (1, 2, 3) if n != leader)
    producer = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                                   retries=20, max_in_flight_requests_per_connection=1,
                                   request_timeout_ms=30000)
    acked = []
    try:
        for i in range(300):
            if i == 100:
                cluster.kill(follower)   # the ISR shrinks to 2 = min.insync.replicas
            if i == 200:
                cluster.restart(follower)
            md = producer.send(topic, value=b"k-%08d" % i, partition=0).get(timeout=60)
            acked.append((md.offset, b"k-%08d" % i))
    finally:
        producer.close()
    offsets = [o for o, _ in acked]
    assert offsets == sorted(set(offsets)), "offsets are unique and increasing"
    _wait_full_isr(cluster, topic, 3)
    stored = _read_all(cluster, topic, partitions=1)[0]
    assert [v for _, v in acked] == stored
    _wait_identical(cluster, topic, 0)


def _hw_checkpoint(cluster, node_id) -> dict[tuple[str, int], int]:
    """The broker's <data dir>/replication-offset-checkpoint (docs/log-format.md)."""
    lines = (cluster.node(node_id).data_dir / "replication-offset-checkpoint") \
        .read_text().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2, lines[:2]
    return {(t, int(p)): int(hw) for t, p, hw in (line.split() for line in lines[2:])}


def _metadata_per_broker(cluster, topic: str) -> dict:
    """{node: what its own Metadata says of `topic`} (diagnostics)."""
    out = {}
    for n in (1, 2, 3):
        try:
            md = ck.admin.AdminClient({"bootstrap.servers": cluster.node(n).address}).list_topics(
                topic, timeout=5).topics.get(topic)
            out[n] = None if md is None else (md.error, {p: (pm.leader, pm.isrs)
                                                         for p, pm in md.partitions.items()})
        except ck.KafkaException as e:
            out[n] = e
    return out


def test_high_watermark_is_checkpointed_and_bounds_visibility_after_restart(cluster):
    """Issue 14: a follower stopped cleanly leaves its HW in
    replication-offset-checkpoint; after every broker restarts (each HW
    starting at min(checkpoint, log end)) consumers still read every record."""
    topic = "hw-checkpoint"
    _create(cluster, topic, partitions=1)
    leader = cluster.wait_for_leaders(topic)[0]
    p = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                     "enable.idempotence": True, "linger.ms": 2})
    values = [b"h-%08d" % i for i in range(500)]
    for v in values:
        p.produce(topic, value=v, partition=0)
    assert p.flush(60) == 0
    # Records 0..499 were committed before this one was appended, so the fetch
    # that brought it to each ISR follower carried HW >= 500, and its own
    # acks=all needs every ISR follower to fetch past it: each follower's HW
    # is then 500 or 501.
    values.append(b"h-sentinel")
    p.produce(topic, value=values[-1], partition=0)
    assert p.flush(60) == 0
    # A follower still in the ISR took part in the sentinel's commit (a slow
    # one may have left it under load: it proves nothing, so it is not used).
    follower = next(n for n in cluster.partition_states(topic)[0].isr if n != leader)
    assert cluster.stop(follower) == 0
    hw = _hw_checkpoint(cluster, follower)[(topic, 0)]
    assert hw in (500, 501), hw
    for n in (1, 2, 3):
        if n != follower:
            assert cluster.stop(n) == 0
    for n in (1, 2, 3):
        cluster.node(n).start()
    cluster.wait_for_brokers([1, 2, 3])
    cluster.wait_for_leaders(topic, timeout=30)
    c = ck.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "hw-cp"})
    try:
        deadline, high, why = time.monotonic() + 30, -1, None
        while high < 501:
            assert time.monotonic() < deadline, \
                f"HW {high}: records stayed invisible ({why}; partition " \
                f"{cluster.partition_states(topic)[0]}; {_metadata_per_broker(cluster, topic)})"
            try:
                high = c.get_watermark_offsets(ck.TopicPartition(topic, 0), timeout=10)[1]
            except ck.KafkaException as e:  # the new leader is not known yet
                why = e
            time.sleep(0.1)
        assert high == 501
    finally:
        c.close()
    assert _read_all(cluster, topic, partitions=1)[0] == values


def test_group_keeps_committed_offsets_across_a_coordinator_kill(cluster):
    topic = "group-failover"
    _create(cluster, topic, partitions=1)
    p = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(200):
        p.produce(topic, value=b"g-%04d" % i, partition=0)
    assert p.flush(30) == 0

    def consumer():
        return ck.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "survivor",
                            "enable.auto.commit": False, "auto.offset.reset": "earliest",
                            "session.timeout.ms": 6000})

    c = consumer()
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < 120:
        assert time.monotonic() < deadline, f"consumed {len(got)} of 120"
        m = c.poll(1)
        if m is not None and not m.error():
            got.append(m.value())
    c.commit(asynchronous=False)  # offset 120 (or a little more if polled ahead)
    committed = c.committed([ck.TopicPartition(topic, 0)], timeout=10)[0].offset
    c.close()
    assert committed >= 120

    # The group's coordinator: the leader of its __consumer_offsets partition.
    leaders = cluster.wait_for_leaders("__consumer_offsets")
    coordinator = leaders[group_partition("survivor", len(leaders))]
    cluster.kill(coordinator)
    cluster.wait_for_leaders("__consumer_offsets", timeout=30)
    try:
        c = consumer()
        c.subscribe([topic])
        rest = []
        deadline = time.monotonic() + 90
        while len(rest) < 200 - committed:
            assert time.monotonic() < deadline, f"resumed {len(rest)} of {200 - committed}"
            m = c.poll(1)
            if m is not None and not m.error():
                rest.append(m.value())
        c.close()
        assert rest[0] == b"g-%04d" % committed, "resumed exactly at the committed offset"
    finally:
        cluster.restart(coordinator)


def test_elect_leaders_preferred_then_unclean(cluster):
    from confluent_kafka import ElectionType, TopicPartition
    topic = "elect"
    _create(cluster, topic, partitions=1)
    preferred = cluster.partition_states(topic)[0].leader  # the first replica leads at first
    admin = _admin(cluster)
    tp = [TopicPartition(topic, 0)]
    # Nothing to do while the preferred replica leads.
    result = admin.elect_leaders(ElectionType.PREFERRED, tp).result(30)
    assert result[tp[0]] is not None and "ELECTION_NOT_NEEDED" in str(result[tp[0]])

    assert cluster.stop(preferred) == 0      # controlled shutdown moves the leadership
    moved = cluster.partition_states(topic)[0]
    assert moved.leader != preferred
    cluster.restart(preferred)
    _wait_full_isr(cluster, topic, 3)        # back in the ISR: eligible again
    result = admin.elect_leaders(ElectionType.PREFERRED, tp).result(30)
    assert result[tp[0]] is None, result      # elected
    state = cluster.partition_states(topic)[0]
    assert state.leader == preferred and state.leader_epoch > moved.leader_epoch

    # Unclean: refused while the leader is live.
    result = admin.elect_leaders(ElectionType.UNCLEAN, tp).result(30)
    assert "ELECTION_NOT_NEEDED" in str(result[tp[0]])
    unknown = [TopicPartition(topic, 7)]
    result = admin.elect_leaders(ElectionType.PREFERRED, unknown).result(30)
    assert "UNKNOWN_TOPIC_OR_PART" in str(result[unknown[0]])


def test_cli_elect_leaders_and_topic_describe_show_the_cluster(cluster):
    import subprocess
    import sys
    _create(cluster, "cli-elect", partitions=2)
    run = lambda *a: subprocess.run([sys.executable, "-m", "headrace.cli", *a,  # noqa: E731
                                     "--brokers", cluster.bootstrap_servers],
                                    capture_output=True, text=True, timeout=60)
    out = run("cluster", "elect-leaders", "cli-elect")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["cli-elect-0\tELECTION_NOT_NEEDED",
                                       "cli-elect-1\tELECTION_NOT_NEEDED"]
    states = cluster.partition_states("cli-elect")
    deadline = time.monotonic() + 10
    while True:
        d = run("topic", "describe", "cli-elect")
        assert d.returncode == 0, d.stderr
        rows = [ln.split("\t") for ln in d.stdout.splitlines() if ln[:1].isdigit()]
        if all(len(r[3].split(",")) == 3 for r in rows):
            break
        assert time.monotonic() < deadline, d.stdout
        time.sleep(0.2)
    for r in rows:
        assert int(r[1]) == states[int(r[0])].leader
        assert sorted(int(x) for x in r[2].split(",")) == [1, 2, 3]


def test_compressed_and_reencoded_batches_replicate_byte_identical(cluster):
    """Followers store the leader's batches as it stored them: as sent
    (gzip, compression.type=producer) or re-encoded (zstd from lz4 input).
    Every replica ends byte-identical and the records read back exactly."""
    from pathlib import Path

    from batch_builder import batch_spans
    cases = [("repl-gzip-as-sent", "gzip", {}, 1),
             ("repl-lz4-to-zstd", "lz4", {"compression.type": "zstd"}, 4)]
    for topic, codec, extra, stored_codec in cases:
        _create(cluster, topic, partitions=1, configs={"min.insync.replicas": "2", **extra})
        p = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "compression.type": codec, "linger.ms": 20,
                         "enable.idempotence": True})
        errors = []
        values = [b"%s-%06d-" % (codec.encode(), i) * 8 for i in range(500)]
        for v in values:
            p.produce(topic, value=v, partition=0,
                      on_delivery=lambda err, m: err and errors.append(err))
        assert p.flush(60) == 0 and errors == []
        assert _read_all(cluster, topic, partitions=1)[0] == values
        digests = _wait_identical(cluster, topic, 0)
        assert len(digests) == 3
        node = next(iter(cluster.nodes.values()))
        seg = sorted((Path(node.data_dir) / f"{topic}-0").glob("*.log"))[0].read_bytes()
        codecs = {seg[pos + 22] & 7 for pos, _, _ in batch_spans(seg)}
        assert codecs == {stored_codec}, (topic, codecs)


def _dontcache_supported(directory) -> bool:
    """Whether the kernel and the file system of `directory` take
    RWF_DONTCACHE (Linux 6.14+)."""
    import os
    import tempfile
    with tempfile.TemporaryFile(dir=directory) as f:
        try:
            os.pwritev(f.fileno(), [b"x"], 0, 0x80)  # RWF_DONTCACHE
            return True
        except OSError:
            return False


def _resident_bytes(path) -> int:
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def test_followers_write_uncached_and_leaders_keep_their_pages(cluster):
    """headrace.follower.uncached.writes (default true): a follower's copy of
    the log leaves the page cache once written back, the leader's stays
    there for consumers. Checked with fincore on each replica's segment
    after 7 MB of acks=all produce (every ISR member fsynced it)."""
    from pathlib import Path
    topic = "uncached-followers"
    _create(cluster, topic, partitions=1)
    p = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                     "linger.ms": 5})
    for i in range(8000):
        p.produce(topic, value=b"%07d" % i * 128, partition=0)
    assert p.flush(60) == 0
    leader = cluster.partition_states(topic)[0].leader
    segments = {n: sorted((Path(cluster.nodes[n].data_dir) / f"{topic}-0").glob("*.log"))[0]
                for n in cluster.nodes}
    size = segments[leader].stat().st_size
    assert size >= 7_000_000  # 8,000 records of 896 bytes
    if not _dontcache_supported(Path(cluster.nodes[leader].data_dir).parent):
        pytest.skip("no RWF_DONTCACHE here: followers write through the page cache")
    deadline = time.monotonic() + 10
    while True:  # a page leaves when its writeback completes
        resident = {n: _resident_bytes(seg) for n, seg in segments.items()}
        followers = [resident[n] for n in segments if n != leader]
        if max(followers) < size // 20 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert resident[leader] > size * 0.9, resident
    assert max(followers) < size // 20, (leader, size, resident)
    assert _read_all(cluster, topic, partitions=1)[0][-1] == b"%07d" % 7999 * 128


def _assignment(cluster, topic):
    from headrace.cluster import zk_layout as L

    return L.TopicAssignment.decode(topic, cluster.zk.get(L.topic_path(topic))[0])


def _wait_reassigned(cluster, topic, targets: dict[int, list[int]], timeout=60.0):
    """Until every partition's replicas are its target, nothing is moving,
    and the ISR is the whole target."""
    deadline = time.monotonic() + timeout
    while True:
        a = _assignment(cluster, topic)
        states = cluster.partition_states(topic)
        done = all(a.partitions[p] == r and not a.reassigning(p) and states.get(p) is not None
                   and sorted(states[p].isr) == sorted(r) for p, r in targets.items())
        if done:
            return states
        assert time.monotonic() < deadline, \
            f"reassignment of {topic} not done: {a} {states}"
        time.sleep(0.1)


def test_reassignment_moves_replicas_under_load_and_loses_nothing(cluster):
    """AlterPartitionReassignments (kafka-python's admin) while an acks=all
    idempotent producer writes: a partition whose leader is removed, one
    shrunk to a single replica, one grown to three; afterwards every
    acknowledged record is there exactly once, in order, the replicas and
    ISR are the targets, and removed brokers deleted their copies."""
    kafka = pytest.importorskip("kafka")
    from kafka.admin import KafkaAdminClient
    from kafka.errors import (InvalidReplicationAssignmentError, NoReassignmentInProgressError,
                              UnknownTopicOrPartitionError)
    from kafka.structs import TopicPartition as KTP

    topic = "moving"
    admin = _admin(cluster)
    admin.create_topics([NewTopic(topic, 3, replica_assignment=[[1, 2], [2, 3], [3, 1]],
                                  config={"min.insync.replicas": "1"})])[topic].result(30)
    cluster.wait_for_leaders(topic, timeout=30)
    _wait_full_isr(cluster, topic, 2)

    produced, stop = Produced(), threading.Event()
    writer = threading.Thread(target=_produce_confluent, args=(cluster, topic, stop, produced))
    writer.start()
    kadmin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                              request_timeout_ms=30000)
    try:
        time.sleep(1.0)
        targets = {0: [2, 3], 1: [1], 2: [1, 2, 3]}
        answer = kadmin.alter_partition_reassignments(
            {KTP(topic, p): r for p, r in targets.items()}, timeout_ms=30000)
        assert answer == {KTP(topic, p): None for p in targets}
        _wait_reassigned(cluster, topic, targets)
        time.sleep(1.0)  # keep writing to the new replica sets
        assert kadmin.list_partition_reassignments() == {}

        # Refusals, per partition, with Kafka's codes.
        bad = kadmin.alter_partition_reassignments(
            {KTP(topic, 0): [2, 9], KTP(topic, 1): None, KTP("no-such-topic", 0): [1],
             KTP(topic, 2): [1, 1]}, timeout_ms=30000)
        assert bad == {KTP(topic, 0): InvalidReplicationAssignmentError,
                       KTP(topic, 1): NoReassignmentInProgressError,
                       KTP("no-such-topic", 0): UnknownTopicOrPartitionError,
                       KTP(topic, 2): InvalidReplicationAssignmentError}
    finally:
        stop.set()
        writer.join(120)
        kadmin.close()
    assert not produced.errors, produced.errors[:5]
    lost, dup, reordered = _check_history(produced, _read_all(cluster, topic))
    assert (lost, dup, reordered) == (0, 0, 0)
    assert sum(len(v) for v in produced.acked.values()) > 500
    # Copies exist exactly on the target brokers, identical.
    for p, r in targets.items():
        deadline = time.monotonic() + 30
        while sorted(segment_digests(cluster, topic, p)) != sorted(r):
            assert time.monotonic() < deadline, (p, segment_digests(cluster, topic, p))
            time.sleep(0.2)


def test_reassignment_in_progress_is_listed_and_cancelled(cluster):
    """A reassignment onto a stopped (SIGSTOP) broker cannot complete: it is
    listed with its adding/removing replicas, and cancelling it restores the
    original replicas and ISR."""
    pytest.importorskip("kafka")
    from kafka.admin import KafkaAdminClient
    from kafka.structs import TopicPartition as KTP

    topic = "stuck"
    # kafka-python sends reassignments to the controller: pause another broker.
    ctl = cluster.controller_id()
    paused = max(b for b in (1, 2, 3) if b != ctl)
    a_, b_ = [b for b in (1, 2, 3) if b != paused]
    admin = _admin(cluster)
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[a_, b_]])])[topic].result(30)
    cluster.wait_for_leaders(topic, timeout=30)
    _wait_full_isr(cluster, topic, 2)
    kadmin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                              request_timeout_ms=30000)
    # Learn the controller while every broker answers: kafka-python asks any
    # broker for it, possibly the paused one.
    assert kadmin.list_partition_reassignments() == {}
    cluster.pause(paused)
    try:
        assert kadmin.alter_partition_reassignments(
            {KTP(topic, 0): [b_, paused]}, timeout_ms=30000) == {KTP(topic, 0): None}
        listed = kadmin.list_partition_reassignments()
        assert listed == {KTP(topic, 0): {"replicas": [b_, paused, a_],
                                          "adding_replicas": [paused],
                                          "removing_replicas": [a_]}}
        assert kadmin.alter_partition_reassignments({KTP(topic, 0): None},
                                                    timeout_ms=30000) == {KTP(topic, 0): None}
        assert kadmin.list_partition_reassignments() == {}
        a = _assignment(cluster, topic)
        # The original replicas, in their order within RS (as Kafka).
        assert a.partitions[0] == [b_, a_] and not a.reassigning(0)
        assert sorted(cluster.partition_states(topic)[0].isr) == [a_, b_]
    finally:
        cluster.resume(paused)
        kadmin.close()


def test_cli_reassign_and_reassignments(cluster):
    """`headrace cluster reassign` moves a partition (JSON answer), the move
    completes, `cluster reassignments` then lists nothing; a refusal is one
    line per partition with Kafka's error name and exit status 1."""
    import json
    import subprocess
    import sys
    topic = "cli-move"
    admin = _admin(cluster)  # alive until the result is in
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[1, 2]])])[topic].result(30)
    cluster.wait_for_leaders(topic, timeout=30)
    run = lambda *a: subprocess.run([sys.executable, "-m", "headrace.cli", *a,  # noqa: E731
                                     "--brokers", cluster.bootstrap_servers],
                                    capture_output=True, text=True, timeout=60)
    out = run("cluster", "reassign", topic, "--partition", "0", "--replicas", "3,2",
              "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"topic": topic, "replicas": [3, 2],
                                      "partitions": [{"partition": 0, "error": None}]}
    _wait_reassigned(cluster, topic, {0: [3, 2]})
    listed = run("cluster", "reassignments")
    assert (listed.returncode, listed.stdout.strip()) == (0, "no reassignment in progress")
    bad = run("cluster", "reassign", topic, "--partition", "0", "--replicas", "3,7")
    assert bad.returncode == 1
    assert bad.stdout.startswith(f"{topic}-0\tINVALID_REPLICA_ASSIGNMENT"), bad.stdout


def _set_broker_config(node_id: int, key: str, value: str | None, cluster):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    res = ConfigResource(ConfigResource.Type.BROKER, str(node_id), incremental_configs=[
        ConfigEntry(key, value or "", incremental_operation=op)])
    admin = _admin(cluster)
    admin.incremental_alter_configs([res])[res].result(30)
    # The write lands in ZooKeeper; the broker applies it on its own watch.
    # Wait until it reports the value (the broker answers for itself), so a
    # test does not race the apply (a throttle applied after the first fetch
    # let 1 MiB through unthrottled under load).
    deadline = time.monotonic() + 30
    while True:
        entries = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER,
                                                         str(node_id))])
        got = next(iter(entries.values())).result(30).get(key)
        now = got.value if got is not None and not got.is_default else None
        if now == value:
            return
        assert time.monotonic() < deadline, f"broker {node_id}: {key}={now!r}, not {value!r}"
        time.sleep(0.05)


@pytest.mark.parametrize("side", ["leader", "follower"])
def test_throttled_reassignment_copies_at_the_configured_rate(cluster, side):
    """KIP-73 replication throttles: a replica added by a reassignment to a
    topic whose <side>.replication.throttled.replicas is "*" copies at
    <side>.replication.throttled.rate of the leader (leader side) or of
    the new follower (follower side), not at full speed; once it is in the
    ISR it is no longer throttled, and every record arrived."""
    pytest.importorskip("kafka")
    import os

    from kafka.admin import KafkaAdminClient
    from kafka.structs import TopicPartition as KTP

    rate, records, size = 400_000, 3000, 1000
    topic = f"throttled-{side}"
    src, dst = (1, 2) if side == "leader" else (2, 3)
    throttled = src if side == "leader" else dst
    admin = _admin(cluster)
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[src]], config={
        f"{side}.replication.throttled.replicas": "*"})])[topic].result(30)
    cluster.wait_for_leaders(topic, timeout=30)
    p = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                     "linger.ms": 5, "compression.type": "none"})
    for _ in range(records):
        p.produce(topic, value=os.urandom(size), partition=0)
        p.poll(0)
    assert p.flush(60) == 0
    total = records * size

    _set_broker_config(throttled, f"{side}.replication.throttled.rate", str(rate), cluster)
    kadmin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                              request_timeout_ms=30000)
    try:
        start = time.monotonic()
        assert kadmin.alter_partition_reassignments(
            {KTP(topic, 0): [src, dst]}, timeout_ms=30000) == {KTP(topic, 0): None}
        _wait_reassigned(cluster, topic, {0: [src, dst]}, timeout=90)
        elapsed = time.monotonic() - start
    finally:
        kadmin.close()
        _set_broker_config(throttled, f"{side}.replication.throttled.rate", None, cluster)
    # Unthrottled this copy takes well under a second. Throttled, reads are
    # one window's worth (rate bytes) and the 2-window meter lets two of
    # them through before it holds: all but those wait for the rate.
    floor = (total - 2 * rate) / rate - 1
    assert elapsed >= floor, f"copied {total} B in {elapsed:.1f} s, faster than {rate} B/s"
    assert elapsed <= total / rate * 3 + 10, f"copy took {elapsed:.1f} s"
    # Nothing lost: the new replica holds the same bytes.
    deadline = time.monotonic() + 30
    while (len(segment_digests(cluster, topic, 0)) != 2
           or len(set(segment_digests(cluster, topic, 0).values())) != 1):
        assert time.monotonic() < deadline, segment_digests(cluster, topic, 0)
        time.sleep(0.2)


def test_cli_reassign_throttle_sets_and_clear_throttle_removes(cluster):
    """`cluster reassign --throttle` sets Kafka's throttles (the rates on
    every broker involved, the current replicas as throttled leaders, the
    new one as throttled follower); `cluster reassignments --clear-throttle`
    removes them once nothing is moving."""
    import subprocess
    import sys
    from confluent_kafka.admin import ConfigResource

    topic = "cli-throttle"
    admin = _admin(cluster)
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[1, 2]])])[topic].result(30)
    cluster.wait_for_leaders(topic, timeout=30)
    run = lambda *a: subprocess.run([sys.executable, "-m", "headrace.cli", *a,  # noqa: E731
                                     "--brokers", cluster.bootstrap_servers],
                                    capture_output=True, text=True, timeout=60)

    def configs(kind, name, keys, expect):
        """Until the broker answering DescribeConfigs has applied the change
        (topic configs reach each broker from ZooKeeper)."""
        res = ConfigResource(kind, name)
        deadline = time.monotonic() + 15
        while True:
            got = admin.describe_configs([res])[res].result(30)
            got = {k: got[k].value for k in keys}
            if got == expect or time.monotonic() > deadline:
                return got
            time.sleep(0.1)

    out = run("cluster", "reassign", topic, "--partition", "0", "--replicas", "2,3",
              "--throttle", "5000000")
    assert out.returncode == 0, out.stderr
    lists = {"leader.replication.throttled.replicas": "0:1,0:2",
             "follower.replication.throttled.replicas": "0:3"}
    assert configs(ConfigResource.Type.TOPIC, topic, list(lists), lists) == lists
    rates = {"leader.replication.throttled.rate": "5000000",
             "follower.replication.throttled.rate": "5000000"}
    for b in (1, 2, 3):
        assert configs(ConfigResource.Type.BROKER, str(b), list(rates), rates) == rates
    _wait_reassigned(cluster, topic, {0: [2, 3]})
    cleared = run("cluster", "reassignments", "--clear-throttle")
    assert cleared.returncode == 0, cleared.stderr
    unset = {"leader.replication.throttled.replicas": ""}
    assert configs(ConfigResource.Type.TOPIC, topic, list(unset), unset) == unset
    unlimited = {"leader.replication.throttled.rate": str(2**63 - 1)}
    assert configs(ConfigResource.Type.BROKER, "3", list(unlimited), unlimited) == unlimited


def _plain_producer(cluster, retries: bool):
    """A non-idempotent acks=all producer: a retry of a stored batch stores it twice."""
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
            "enable.idempotence": False, "linger.ms": 1, "message.timeout.ms": 60000,
            "retry.backoff.ms": 50}
    if not retries:
        conf["retries"] = 0  # every broker error reaches the delivery report
    return ck.Producer(conf)


def test_isr_changes_do_not_fail_parked_acks_all_produces(cluster):
    """Issue 37, item 2: followers paused one at a time past
    replica.lag.time.max.ms (the ISR shrinks, then grows back) while two
    non-idempotent acks=all producers write: one without retries sees every
    broker error (0 NOT_LEADER_OR_FOLLOWER: leader and log never changed),
    the other retries what failed (0 duplicates, 0 acknowledged lost)."""
    topic = "isr-churn"
    _create(cluster, topic, partitions=1)
    state = cluster.partition_states(topic)[0]
    followers = [b for b in state.isr if b != state.leader]  # full ISR: every replica
    stop = threading.Event()
    acked: list[bytes] = []
    errors: dict[str, int] = {}
    lock = threading.Lock()

    def run(retries: bool, prefix: bytes):
        p = _plain_producer(cluster, retries)

        def report(err, msg):
            with lock:
                if err is None:
                    acked.append(msg.value())
                elif not retries:
                    errors[err.name()] = errors.get(err.name(), 0) + 1

        i = 0
        while not stop.is_set():
            try:
                p.produce(topic, value=prefix + b"-%08d" % i, partition=0, on_delivery=report)
                i += 1
            except BufferError:
                p.poll(0.05)
            p.poll(0)
        assert p.flush(60) == 0

    threads = [threading.Thread(target=run, args=(r, n)) for r, n in ((True, b"r"), (False, b"n"))]
    for t in threads:
        t.start()
    try:
        for f in followers:
            time.sleep(0.5)
            cluster.pause(f)
            try:
                deadline = time.monotonic() + 30
                while f in cluster.partition_states(topic)[0].isr:  # out after the lag
                    assert time.monotonic() < deadline, f"broker {f} never left the ISR"
                    time.sleep(0.1)
            finally:
                cluster.resume(f)
            _wait_full_isr(cluster, topic, 3)  # and back in: a second ISR change
        time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join(90)
    assert errors.get("NOT_LEADER_OR_FOLLOWER", 0) == 0, errors
    stored = _read_all(cluster, topic, partitions=1)[0]
    assert len(stored) == len(set(stored)), f"{len(stored) - len(set(stored))} duplicates"
    missing = set(acked) - set(stored)
    assert not missing, f"{len(missing)} acknowledged records lost"
    assert len(acked) > 1000


def test_acks_1_writes_are_at_once_visible_to_delete_records_and_list_offsets(cluster):
    """Issue 37, item 3, RF=3: the HW passes an acks=1 record only once the
    followers fetched (and fsynced) it; DeleteRecords up to it and ListOffsets
    LATEST right after its acknowledgement wait for that."""
    from ack_visibility import check_acked_writes_visible
    _create(cluster, "ack-visible", partitions=1)
    assert check_acked_writes_visible(cluster.bootstrap_servers, "ack-visible") == {}
