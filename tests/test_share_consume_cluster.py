"""Share groups on a 3-broker cluster (KIP-932, issue 31): confluent-kafka's
ShareConsumer reads a 3-partition topic whose leaders are spread over the
brokers (ShareFetch to each leader, the group coordinator on one of them):
every record delivered once, none lost. A ShareFetch sent to a broker that
does not lead the partition is NOT_LEADER_OR_FOLLOWER with CurrentLeader and
the leader's endpoint (KIP-951).

The share-partitions start at the high watermark (share.auto.offset.reset
latest): probes first, as in test_share_consume.py.
"""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic

from acl_wire import Conn, msg
from headrace import EmbeddedCluster
from test_share_consume import _records, _start

PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with EmbeddedCluster(3, data_dir=tmp_path_factory.mktemp("share-cluster")) as c:
        yield c


def _topic(cluster) -> tuple[str, dict[int, int]]:
    name = "share-c-" + uuid.uuid4().hex[:6]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    admin.create_topics([NewTopic(name, PARTITIONS, 2)])[name].result(30)
    return name, cluster.wait_for_leaders(name, 30)


def test_share_consumers_read_every_partition_from_its_leader(cluster):
    topic, leaders = _topic(cluster)
    assert len(set(leaders.values())) > 1, leaders  # spread over brokers
    group = "sgc-" + uuid.uuid4().hex[:6]
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    conf = {"bootstrap.servers": cluster.bootstrap_servers, "group.id": group}
    a, b = ShareConsumer(conf), ShareConsumer(conf)
    try:
        a.subscribe([topic])
        b.subscribe([topic])
        _start(a, producer, topic, partitions=PARTITIONS, others=(b,), timeout=60)
        values = [f"rec-{i}" for i in range(600)]
        for i, v in enumerate(values):
            producer.produce(topic, value=v.encode(), partition=i % PARTITIONS)
        producer.flush(10)
        got = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(got) < len(values):
            for c in (a, b):
                got.extend((m.partition(), m.value().decode()) for m in _records(c.poll(0.3))
                           if not m.value().startswith(b"probe-"))
        assert sorted(v for _, v in got) == sorted(values)  # each once, none lost
        assert {p for p, _ in got} == set(range(PARTITIONS))
    finally:
        a.close()
        b.close()


def test_share_fetch_to_a_follower_names_the_leader(cluster):
    topic, leaders = _topic(cluster)
    leader = leaders[0]
    follower = next(n for n in cluster.node_ids if n != leader)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    from confluent_kafka import TopicCollection

    tid = admin.describe_topics(TopicCollection([topic]))[topic].result(30).topic_id
    topic_id = uuid.UUID(int=(tid.get_most_significant_bits() % (1 << 64)) << 64
                         | tid.get_least_significant_bits() % (1 << 64))
    node = cluster.node(follower)
    with Conn((node.host, node.port)) as conn:
        r = conn.call(msg("", "ShareFetchRequest", 1, group_id="sg-nl", member_id="m-nl",
                          share_session_epoch=0, max_wait_ms=0, min_bytes=0,
                          max_bytes=1 << 20, max_records=10, batch_size=10,
                          topics=[{"topic_id": topic_id, "partitions": [
                              {"partition_index": 0, "acknowledgement_batches": []}]}],
                          forgotten_topics_data=[]))
    assert r.error_code == 0
    part = r.responses[0].partitions[0]
    assert part.error_code == 6  # NOT_LEADER_OR_FOLLOWER
    assert part.current_leader.leader_id == leader
    leader_node = cluster.node(leader)
    assert [(e.node_id, e.port) for e in r.node_endpoints] == [(leader, leader_node.port)]
