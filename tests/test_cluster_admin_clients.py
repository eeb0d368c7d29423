"""Cluster behaviours found by running kafka-python's own integration suite
against a 3-broker cluster (tests/client_suites/run.py): admin calls that
land on a broker whose view trails ZooKeeper, brokers that coordinate no
group, and offsets committed for partitions the coordinator holds no
replica of. One 3-broker cluster for the module; kafka-python clients."""
from __future__ import annotations

import threading
import time
import uuid

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata, TopicPartition

from headrace import EmbeddedCluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with EmbeddedCluster(brokers=3, data_dir=tmp_path_factory.mktemp("cluster")) as c:
        yield c


@pytest.fixture
def admin(cluster):
    a = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, api_version=(3, 9))
    yield a
    a.close()


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_delete_topic_right_after_create(admin, cluster):
    # DeleteTopics used to be refused (UNKNOWN_TOPIC_OR_PARTITION) by a
    # broker whose cluster view did not list the topic CreateTopics had just
    # made: every round below creates and deletes at once.
    for _ in range(5):
        name = _name("fresh")
        created = admin.create_topics([NewTopic(name, 3, 1)])
        assert created["topics"][0]["error_code"] == 0
        deleted = admin.delete_topics([name])
        (result,) = deleted["topics"]
        assert (result["name"], result["error_code"]) == (name, 0)
        assert result["topic_id"] is not None
    missing = admin.delete_topics([_name("never")], raise_errors=False)
    assert missing["topics"][0]["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION


def _partitions_one_per_broker(admin, cluster) -> list[TopicPartition]:
    """Three RF=1 single-partition topics, one on each broker: whichever
    broker coordinates a group holds no replica of the other two (a broker
    holding one partition of a topic knows the whole topic)."""
    tps = []
    for broker in (1, 2, 3):
        name = _name(f"on{broker}")
        admin.create_topics([NewTopic(name, replica_assignments={0: [broker]})])
        cluster.wait_for_leaders(name)
        tps.append(TopicPartition(name, 0))
    return tps


def test_offset_commit_for_partitions_on_other_brokers(admin, cluster):
    tps = _partitions_one_per_broker(admin, cluster)
    group = _name("g")
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                             enable_auto_commit=False, api_version=(3, 9))
    try:
        consumer.assign(tps)
        consumer.commit({tp: OffsetAndMetadata(10 + i, "m", -1) for i, tp in enumerate(tps)})
        assert [consumer.committed(tp) for tp in tps] == [10, 11, 12]
    finally:
        consumer.close()
    # Every broker answers ListGroups; those coordinating nothing with an
    # empty list, not COORDINATOR_NOT_AVAILABLE (kafka-python asks them all).
    assert group in {g["group_id"] for g in admin.list_groups()}


def test_txn_offset_commit_for_partitions_on_other_brokers(admin, cluster):
    tps = _partitions_one_per_broker(admin, cluster)
    group = _name("txn-g")
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                             transactional_id=_name("txn"), api_version=(3, 9))
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for tp in tps:
            producer.send(tp.topic, value=b"v").get(timeout=30)
        # kafka-python retries UNKNOWN_TOPIC_OR_PARTITION without end and
        # waits without a timeout: wait for it here, bounded.
        sent = threading.Thread(target=producer.send_offsets_to_transaction, daemon=True,
                                args=({tp: OffsetAndMetadata(1, "txn", -1) for tp in tps}, group))
        sent.start()
        sent.join(20)
        assert not sent.is_alive(), "TxnOffsetCommit not accepted within 20 s"
        producer.commit_transaction()
    finally:
        producer.close(timeout=5)
    # The offsets turn visible once the coordinator's COMMIT marker reaches
    # __consumer_offsets, after EndTxn is answered (as in Kafka).
    deadline = time.monotonic() + 15
    while True:
        offsets = admin.list_group_offsets({group: None})[group]
        if offsets or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert {tp: o.offset for tp, o in offsets.items()} == {tp: 1 for tp in tps}


def test_created_topic_is_in_the_answering_brokers_metadata(cluster):
    # As Kafka, CreateTopics answers once the broker's own Metadata lists the
    # topic with a leader per partition (was: LEADER_NOT_AVAILABLE, no
    # partitions, every time).
    from confluent_kafka.admin import AdminClient, NewTopic as CkNewTopic

    one_broker = cluster.bootstrap_servers.split(",")[0]
    ck = AdminClient({"bootstrap.servers": one_broker})
    for _ in range(5):
        name = _name("visible")
        ck.create_topics([CkNewTopic(name, 4, 3)], operation_timeout=30)[name].result()
        md = ck.list_topics(name, timeout=10).topics[name]
        assert md.error is None
        assert sorted(md.partitions) == [0, 1, 2, 3]
        assert all(p.leader in (1, 2, 3) for p in md.partitions.values())
