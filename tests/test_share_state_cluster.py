"""Durable share state on a 3-broker cluster (KIP-932, issue 31 item 2):
a share group reads a 1-partition topic (3 replicas) while the partition's
leader is SIGKILLed, then while the broker running the share coordinator of
its share-partition (the leader of its __share_group_state partition) is
SIGKILLed. Each time a new consumer of the group gets exactly the records
that were not acknowledged (delivery count carried on) and the records
produced since; no ACCEPTed or REJECTed record comes back, none is lost.

The coordinator of a share-partition is found as the brokers find it: the
leader of partition abs(Java hashCode("group:topicId:partition")) %
partitions of __share_group_state.
"""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import AcknowledgeType
from confluent_kafka.admin import AdminClient, NewTopic

from cli_run import headrace
from headrace import EmbeddedCluster
from test_cluster_groups import group_partition
from test_group_configs import _alter
from test_share_state_durable import _consumer, _kind, _quiet, _receive

TIMEOUT_S = 60
SETTINGS = {"zookeeper.session.timeout.ms": 6000, "replica.lag.time.max.ms": 4000,
            "group.share.record.lock.duration.ms": 30000,
            "group.share.heartbeat.interval.ms": 500}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with EmbeddedCluster(brokers=3, settings=SETTINGS,
                         data_dir=str(tmp_path_factory.mktemp("share-state-cluster"))) as c:
        yield c


def _coordinator(cluster, group: str, topic_id: str) -> int:
    """The broker leading the share-partition's __share_group_state partition."""
    states = cluster.partition_states("__share_group_state")
    return states[group_partition(f"{group}:{topic_id}:0", len(states))].leader


def _topic_id(admin, topic) -> str:
    from confluent_kafka import TopicCollection
    d = admin.describe_topics(TopicCollection([topic]))[topic].result(TIMEOUT_S)
    return str(d.topic_id)


def _produce(cluster, topic, values):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0, "acks": "all"})
    for v in values:
        p.produce(topic, value=v.encode())
    assert p.flush(TIMEOUT_S) == 0


def _wait_new_leader(cluster, topic, old):
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        s = cluster.partition_states(topic).get(0)
        if s is not None and s.leader not in (old, -1):
            return s.leader
        time.sleep(0.05)
    raise AssertionError(f"{topic}-0 got no leader other than {old}")


def _close(c):
    try:
        c.close()
    except Exception:
        pass  # its broker went away under it


def test_share_state_survives_the_leader_and_the_coordinator_being_killed(cluster):
    topic = "ssc-" + uuid.uuid4().hex[:6]
    group = "sg-ssc-" + uuid.uuid4().hex[:6]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    admin.create_topics([NewTopic(topic, 1, 3, config={"min.insync.replicas": "2"})])[topic] \
        .result(TIMEOUT_S)
    cluster.wait_for_leaders(topic, TIMEOUT_S)
    _alter(admin, group, {"share.auto.offset.reset": "earliest"})
    n = 200
    _produce(cluster, topic, [f"v-{i}" for i in range(n)])

    # 1. Every record delivered once: 100 accepted, 50 rejected, 50 held.
    c = _consumer_on(cluster, group, topic)
    first = _receive(c, n, ack=_kind, timeout=TIMEOUT_S)
    assert len(first) == n and set(first.values()) == {1}, len(first)
    held = {v for v in first if _kind(v) is None}

    # 2. SIGKILL the partition's leader; a new consumer gets the held
    # records back (count 2) and the records produced since (count 1).
    leader = cluster.wait_for_leaders(topic, TIMEOUT_S)[0]
    cluster.kill(leader)
    _wait_new_leader(cluster, topic, leader)
    _close(c)
    _produce(cluster, topic, [f"a-{i}" for i in range(20)])
    c2 = _consumer_on(cluster, group, topic)
    again = _receive(c2, len(held) + 20,
                     ack=lambda v: AcknowledgeType.ACCEPT if _accepted_second(v) else None,
                     timeout=TIMEOUT_S)
    _check(again, {v: 2 for v in held} | {f"a-{i}": 1 for i in range(20)})
    cluster.start_node(leader)
    # Of those, half were accepted now; the rest are still held by c2.
    held2 = {v for v in again if not _accepted_second(v)}

    # 3. SIGKILL the share coordinator's broker; the next consumer gets
    # exactly what is still unacknowledged.
    coordinator = _coordinator(cluster, group, _topic_id(admin, topic))
    print(f"partition leader killed: {leader}, share coordinator killed: {coordinator}")
    cluster.kill(coordinator)
    _close(c2)
    _produce(cluster, topic, [f"b-{i}" for i in range(20)])
    c3 = _consumer_on(cluster, group, topic)
    try:
        third = _receive(c3, len(held2) + 20, ack=lambda v: AcknowledgeType.ACCEPT,
                         timeout=TIMEOUT_S)
        want = {v: (3 if v in held else 2) for v in held2} | {f"b-{i}": 1 for i in range(20)}
        _check(third, want)
        assert _quiet(c3, 3.0) == []
    finally:
        _close(c3)
        cluster.start_node(coordinator)

    # 4. AlterShareGroupOffsets (`share-group reset`) at the group's
    # coordinator: the share-partition's leader, wherever it is, drops what
    # it holds and the next consumer reads everything again at count 1.
    everything = {f"v-{i}": 1 for i in range(n)} | {f"a-{i}": 1 for i in range(20)} | \
        {f"b-{i}": 1 for i in range(20)}
    deadline = time.monotonic() + TIMEOUT_S
    while True:  # the last member's leave reaches the group coordinator
        r = headrace("share-group", "reset", group, "--to", "earliest", "--topic", topic,
                     brokers=cluster.bootstrap_servers)
        if r.returncode == 0:
            break
        assert "active members" in r.stderr and time.monotonic() < deadline, r.stderr
        time.sleep(0.3)
    c4 = _consumer_on(cluster, group, topic)
    try:
        _check(_receive(c4, len(everything), ack=lambda v: AcknowledgeType.ACCEPT,
                        timeout=TIMEOUT_S), everything)
    finally:
        _close(c4)


def _consumer_on(cluster, group, topic):
    class _B:  # what _consumer reads of a broker
        bootstrap = cluster.bootstrap_servers
    c = _consumer(_B, group)
    c.subscribe([topic])
    return c


def _accepted_second(v: str) -> bool:
    """Of the records the second consumer gets, it accepts half the held
    ones (v-3, v-11, ...) and the even new ones."""
    i = int(v.split("-")[1])
    return i % 8 == 3 if v.startswith("v-") else i % 2 == 0


def _check(got: dict[str, int], want: dict[str, int]):
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    assert not missing and not extra, f"lost {missing[:10]}, delivered again {extra[:10]}"
    wrong = {v: (got[v], want[v]) for v in want if got[v] != want[v]}
    assert not wrong, f"delivery counts (got, want): {wrong}"
