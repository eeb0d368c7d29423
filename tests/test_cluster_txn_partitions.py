"""Transactions on a 3-broker cluster with a partitioned __transaction_state
(6 partitions here; a real ZooKeeper and three `headrace broker --zookeeper`
processes).

A transactional id's coordinator is the leader of partition
abs(Java hashCode(id)) % N of __transaction_state (computed here with the
test's own Java hash, the one groups use), so ids spread over the brokers:
FindCoordinator (v4 batched keys, key type 1) names the leader of each id's
partition; transactional producers whose ids live on different coordinators
commit and abort, read_committed readers see exactly the committed records,
and `headrace txn list` lists the open transactions of every coordinator; a
SIGKILL of one id's coordinator right after EndTxn moves that id to the new
leader of its partition, which finishes the transaction wholly committed,
while a producer whose id lives on another coordinator goes on.
(tests/test_cluster_transactions.py runs with the default 50 partitions.)
"""
from __future__ import annotations

import json
import time
import uuid

import pytest

ck = pytest.importorskip("confluent_kafka")

from cli_run import headrace, ok  # noqa: E402
from cluster_clients import create_topic as create, txn_producer  # noqa: E402
from headrace import EmbeddedCluster  # noqa: E402
from headrace.admin_wire import Connection, find_transaction_coordinator  # noqa: E402
from test_cluster_groups import group_partition, wait_coordinators  # noqa: E402
from test_transactions import read_all  # noqa: E402

TIMEOUT_S = 60.0
PARTITIONS = 6  # of __transaction_state in the shared cluster
TXN_KEY = 1  # FindCoordinator key type of transactional ids
SETTINGS = {
    "zookeeper.session.timeout.ms": 6000,
    "replica.lag.time.max.ms": 4000,
    "transaction.state.log.num.partitions": PARTITIONS,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with EmbeddedCluster(brokers=3, settings=SETTINGS,
                         data_dir=str(tmp_path_factory.mktemp("txn-parts"))) as c:
        yield c


def id_on(partition: int, prefix: str) -> str:
    """A fresh transactional id whose partition of __transaction_state is
    `partition` (Kafka's rule: the same function as groups')."""
    while True:
        tid = f"{prefix}-{uuid.uuid4().hex[:8]}"
        if group_partition(tid, PARTITIONS) == partition:
            return tid


def txn_leaders(cluster) -> dict[int, int]:
    """{partition: leader} of __transaction_state, creating it first (the
    first FindCoordinator for a transactional id does)."""
    wait_coordinators(cluster, ["bootstrap-the-topic"], TXN_KEY)
    return cluster.wait_for_leaders("__transaction_state", timeout=TIMEOUT_S)






def ids_on_two_coordinators(cluster, prefix: str, avoid: int | None = None):
    """Two transactional ids whose partitions are led by different brokers:
    ((id, partition, leader), (id, partition, leader))."""
    leaders = txn_leaders(cluster)
    first = next(p for p in range(PARTITIONS) if leaders[p] != avoid)
    other = next(p for p in range(PARTITIONS) if leaders[p] != leaders[first])
    return ((id_on(first, prefix), first, leaders[first]),
            (id_on(other, prefix), other, leaders[other]))


def test_ids_spread_over_the_leaders_of_their_partitions(cluster):
    leaders = txn_leaders(cluster)
    assert sorted(leaders) == list(range(PARTITIONS))
    ids = [id_on(p, "spread") for p in range(PARTITIONS)]
    found = wait_coordinators(cluster, ids, TXN_KEY)
    assert [found[t] for t in ids] == [leaders[p] for p in range(PARTITIONS)]
    assert len(set(found.values())) > 1, f"every id on one broker: {found}"
    # FindCoordinator v1 (one key), asked of another broker, answers the same.
    host, port = cluster.bootstrap_servers.split(",")[-1].rsplit(":", 1)
    conn = Connection(host, int(port), 10.0)
    try:
        assert [find_transaction_coordinator(conn, t)[0] for t in ids] == \
            [leaders[p] for p in range(PARTITIONS)]
    finally:
        conn.close()


def test_producers_on_different_coordinators_commit_abort_and_are_listed(cluster):
    bs = cluster.bootstrap_servers
    topic = f"parts-{uuid.uuid4().hex[:6]}"
    create(cluster, topic)
    (a, _, node_a), (b, _, node_b) = ids_on_two_coordinators(cluster, "two")
    pa, pb = txn_producer(cluster, a), txn_producer(cluster, b)
    want = []
    for n, (tid, p) in enumerate(((a, pa), (b, pb))):
        p.begin_transaction()
        for i in range(9):
            p.produce(topic, f"{tid}-c{i}".encode(), partition=i % 3)
        p.commit_transaction(TIMEOUT_S)
        want += [f"{tid}-c{i}".encode() for i in range(9)]
        p.begin_transaction()
        for i in range(9):
            p.produce(topic, f"{tid}-a{i}".encode(), partition=i % 3)
        p.flush(TIMEOUT_S)
        p.abort_transaction(TIMEOUT_S)
    # Both open at once, on two coordinators: `headrace txn list` (every
    # broker asked, each id described at its own coordinator) lists both.
    for tid, p in ((a, pa), (b, pb)):
        p.begin_transaction()
        p.produce(topic, f"{tid}-open".encode(), partition=0)
        p.flush(TIMEOUT_S)
    try:
        listed = {x["transactional_id"]: x for x in
                  map(json.loads, ok(headrace("txn", "list", "--json", brokers=bs))
                      .stdout.splitlines())}
        assert listed[a]["state"] == listed[b]["state"] == "Ongoing", listed
        assert (listed[a]["coordinator"], listed[b]["coordinator"]) == (node_a, node_b)
        assert listed[a]["partitions"] == [{"topic": topic, "partition": 0}]
    finally:
        pa.commit_transaction(TIMEOUT_S)
        pb.abort_transaction(TIMEOUT_S)
    want.append(f"{a}-open".encode())
    got = [v for *_, v in read_all(bs, topic, 3, "read_committed", expect=len(want))]
    assert sorted(got) == sorted(want)
    # Nothing else is visible to read_committed, everything to read_uncommitted.
    assert len(read_all(bs, topic, 3, "read_committed")) == len(want)
    assert len(read_all(bs, topic, 3, "read_uncommitted", expect=38)) == 38


def test_coordinator_killed_after_end_txn_finishes_it_elsewhere(cluster):
    bs = cluster.bootstrap_servers
    topic = f"pkill-{uuid.uuid4().hex[:6]}"
    create(cluster, topic)
    # Not the controller: its failover would add a controller election.
    (moving, part, victim), (staying, _, safe) = ids_on_two_coordinators(
        cluster, "k", avoid=cluster.controller_id())
    pm, ps = txn_producer(cluster, moving), txn_producer(cluster, staying)
    ps.begin_transaction()
    ps.produce(topic, b"staying-0", partition=0)
    ps.flush(TIMEOUT_S)
    pm.begin_transaction()
    for i in range(30):
        pm.produce(topic, f"m{i}".encode(), partition=i % 3)
    # EndTxn answered: the decision (PrepareCommit) is in the replicated
    # log; the coordinator dies before (or while) writing the markers.
    pm.commit_transaction(TIMEOUT_S)
    cluster.kill(victim)
    try:
        # The other id's producer carries on with its coordinator.
        ps.commit_transaction(TIMEOUT_S)
        assert wait_coordinators(cluster, [staying], TXN_KEY)[staying] == safe
        # The moved id: a new leader of its partition finishes the markers.
        deadline = time.monotonic() + TIMEOUT_S
        while cluster.partition_states("__transaction_state")[part].leader in (victim, -1):
            assert time.monotonic() < deadline, "no new leader for the killed coordinator"
            time.sleep(0.1)
        new = cluster.partition_states("__transaction_state")[part].leader
        assert wait_coordinators(cluster, [moving], TXN_KEY)[moving] == new
        got = sorted(v for *_, v in read_all(bs, topic, 3, "read_committed", expect=31))
        assert got == sorted([b"staying-0"] + [f"m{i}".encode() for i in range(30)])
        # The id goes on at its new coordinator, fencing the old producer.
        p2 = txn_producer(cluster, moving)
        p2.begin_transaction()
        p2.produce(topic, b"after", partition=1)
        p2.commit_transaction(TIMEOUT_S)
        assert b"after" in [v for *_, v in read_all(bs, topic, 3, "read_committed", expect=32)]
    finally:
        cluster.restart(victim)
