"""Transactions on a 3-broker cluster (a real ZooKeeper and three `headrace
broker --zookeeper` processes, __transaction_state with the default 50
partitions): a transactional id's coordinator is the leader of the id's
partition of __transaction_state and sends markers to partition leaders on
other brokers; offsets sent to the transaction reach the group coordinator on
whichever broker leads the group's __consumer_offsets partition; SIGKILLing the coordinator's
broker mid-transaction moves coordination to a replica that replays the
replicated log, and the transaction still ends wholly committed or wholly
aborted."""
from __future__ import annotations

import time
import uuid

import pytest

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaException, TopicPartition  # noqa: E402

from cluster_clients import create_topic as create, txn_producer  # noqa: E402
from headrace import EmbeddedCluster  # noqa: E402
from test_cluster_groups import group_partition  # noqa: E402
from test_transactions import end_offsets, read_all  # noqa: E402

TIMEOUT_S = 60.0
SETTINGS = {
    "zookeeper.session.timeout.ms": 6000,
    "replica.lag.time.max.ms": 4000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 1000,
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with EmbeddedCluster(brokers=3, settings=SETTINGS,
                         data_dir=str(tmp_path_factory.mktemp("txn-cluster"))) as c:
        yield c


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"






def test_markers_reach_leaders_on_every_broker(cluster):
    bs = cluster.bootstrap_servers
    t = unique("ctx")
    create(cluster, t, 6)
    leaders = {s.leader for s in cluster.partition_states(t).values()}
    assert len(leaders) == 3, f"leaders not spread: {leaders}"
    p = txn_producer(cluster, unique("tid"), 20000)
    p.begin_transaction()
    for i in range(60):
        p.produce(t, f"c{i}".encode(), partition=i % 6)
    p.commit_transaction(TIMEOUT_S)
    p.begin_transaction()
    for i in range(60):
        p.produce(t, f"a{i}".encode(), partition=i % 6)
    p.flush(TIMEOUT_S)  # written, then aborted (abort_transaction drops unsent ones)
    p.abort_transaction(TIMEOUT_S)
    values = sorted(v for *_, v in read_all(bs, t, 6, "read_committed", expect=60))
    assert values == sorted(f"c{i}".encode() for i in range(60))
    assert len(read_all(bs, t, 6, "read_uncommitted", expect=120)) == 120
    # Every partition's LSO is past both markers.
    deadline = time.monotonic() + 30
    while end_offsets(bs, t, 6, "read_committed") != end_offsets(bs, t, 6, "read_uncommitted"):
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_offsets_sent_to_transaction_reach_the_group_coordinator(cluster):
    bs = cluster.bootstrap_servers
    src, dst = unique("csrc"), unique("cdst")
    create(cluster, src, 3)
    create(cluster, dst, 3)
    group = unique("cg")
    c = Consumer({"bootstrap.servers": bs, "group.id": group})
    p = txn_producer(cluster, unique("tid"), 20000)
    try:
        p.begin_transaction()
        p.produce(dst, b"out", partition=1)
        p.send_offsets_to_transaction([TopicPartition(src, 0, 7), TopicPartition(src, 2, 9)],
                                      c.consumer_group_metadata(), TIMEOUT_S)
        p.commit_transaction(TIMEOUT_S)
        committed = c.committed([TopicPartition(src, 0), TopicPartition(src, 2)], TIMEOUT_S)
        assert [tp.offset for tp in committed] == [7, 9]
    finally:
        c.close()


def test_coordinator_killed_mid_transaction_moves_and_finishes(cluster):
    bs = cluster.bootstrap_servers
    t = unique("ckill")
    create(cluster, t, 3)
    # init_transactions creates __transaction_state (50 partitions, the
    # default); the id's coordinator leads its partition.
    txn_id = unique("tid")
    p = txn_producer(cluster, txn_id, 20000)
    states = cluster.partition_states("__transaction_state")
    assert len(states) == 50
    part = group_partition(txn_id, 50)
    coordinator = states[part].leader
    p.begin_transaction()
    for i in range(30):
        p.produce(t, f"k{i}".encode(), partition=i % 3)
    p.flush(TIMEOUT_S)
    cluster.kill(coordinator)
    try:
        committed = True
        try:
            p.commit_transaction(TIMEOUT_S)
        except KafkaException:
            committed = False
        values = sorted(v for *_, v in read_all(bs, t, 3, "read_committed",
                                                 expect=30 if committed else None))
        if committed:
            assert values == sorted(f"k{i}".encode() for i in range(30))
        else:
            assert values in ([], sorted(f"k{i}".encode() for i in range(30)))
        # The coordinator moved to another broker.
        assert cluster.partition_states("__transaction_state")[part].leader != coordinator
    finally:
        cluster.restart(coordinator)
    # The id is usable again (its state came from the replicated log).
    p2 = txn_producer(cluster, txn_id, 20000)
    p2.begin_transaction()
    p2.produce(t, b"after", partition=0)
    p2.commit_transaction(TIMEOUT_S)
    assert b"after" in [v for *_, v in read_all(bs, t, 3, "read_committed")]
