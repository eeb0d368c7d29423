"""Internal topics against a real broker process with real clients (issue 17,
item 4): __consumer_offsets and __transaction_state are listed in Metadata
with is_internal, are never auto-created as ordinary topics, refuse client
Produce / CreateTopics / DeleteTopics / CreatePartitions with Kafka's codes,
are readable (a consumer reads the committed offset's record from
__consumer_offsets), and pattern subscriptions include them only when
internal topics are not excluded (kafka-python's exclude_internal_topics;
librdkafka includes them, as with Kafka, and reads them without errors)."""
from __future__ import annotations

import subprocess
import time

import pytest

from broker_process import shared_broker
from broker_kafka_clients import ConfluentClient, Out

TIMEOUT_S = 30
ERR_INVALID_TOPIC_EXCEPTION = 17
ERR_TOPIC_ALREADY_EXISTS = 36
INTERNAL = ("__consumer_offsets", "__transaction_state")


@pytest.fixture(scope="module")
def b(tmp_path_factory):
    yield from shared_broker(tmp_path_factory, "internal-topics")


def test_metadata_lists_internal_topics_as_internal(b):
    from kafka.admin import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=TIMEOUT_S * 1000)
    try:
        ConfluentClient(b.bootstrap).create_topic("plain", 2)
        described = {t["name"]: t for t in admin.describe_topics()}
        for name in INTERNAL:
            assert described[name]["is_internal"] is True, described[name]
            parts = described[name]["partitions"]
            assert [(p["partition_index"], p["leader_id"], p["replica_nodes"]) for p in parts] == [(0, 0, [0])]
        assert described["plain"]["is_internal"] is False
        # Asked for by name it is the same internal topic, not an auto-created one.
        one = admin.describe_topics(["__consumer_offsets"])
        assert one[0]["is_internal"] is True and len(one[0]["partitions"]) == 1
    finally:
        admin.close()
    # kcat (librdkafka) sees it in its metadata listing too.
    out = subprocess.run(["kcat", "-b", b.bootstrap, "-L", "-m", "10"], capture_output=True,
                         text=True, timeout=TIMEOUT_S, check=True).stdout
    assert 'topic "__consumer_offsets" with 1 partitions' in out, out
    # No ordinary topic directory was created for it.
    assert not list(b.data_dir.glob("__consumer_offsets-*"))


def test_client_writes_to_internal_topics_are_refused(b):
    from confluent_kafka import KafkaError, Producer, TopicPartition
    from confluent_kafka.admin import NewPartitions, NewTopic
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "message.timeout.ms": 10000,
                  "retries": 0})
    errors = []
    p.produce("__consumer_offsets", value=b"junk", partition=0,
              on_delivery=lambda err, m: errors.append(err))
    assert p.flush(TIMEOUT_S) == 0
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].code() == KafkaError.TOPIC_EXCEPTION, errors[0]

    admin = ConfluentClient(b.bootstrap).admin()
    fut = admin.create_topics([NewTopic("__consumer_offsets", 3, 1)])["__consumer_offsets"]
    with pytest.raises(Exception) as e:
        fut.result(TIMEOUT_S)
    assert e.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    fut = admin.delete_topics(["__consumer_offsets"])["__consumer_offsets"]
    with pytest.raises(Exception) as e:
        fut.result(TIMEOUT_S)
    assert e.value.args[0].code() == KafkaError.TOPIC_EXCEPTION
    fut = admin.create_partitions([NewPartitions("__transaction_state", 4)])["__transaction_state"]
    with pytest.raises(Exception) as e:
        fut.result(TIMEOUT_S)
    assert e.value.args[0].code() == KafkaError.TOPIC_EXCEPTION

    fut = admin.delete_records([TopicPartition("__consumer_offsets", 0, 1)])
    with pytest.raises(Exception) as e:
        list(fut.values())[0].result(TIMEOUT_S)
    assert e.value.args[0].code() == KafkaError.TOPIC_EXCEPTION

    # Nothing was written or created: still one internal partition, no data dir.
    md = admin.list_topics(timeout=TIMEOUT_S)
    assert len(md.topics["__consumer_offsets"].partitions) == 1
    assert not list(b.data_dir.glob("__consumer_offsets-*"))


def test_pattern_subscription_includes_internal_topics_only_when_asked(b):
    from kafka import KafkaConsumer
    ConfluentClient(b.bootstrap).create_topic("pattern-a", 1)
    seen = {}
    for exclude in (True, False):
        c = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=f"pat-{exclude}",
                          exclude_internal_topics=exclude, consumer_timeout_ms=200,
                          metadata_max_age_ms=500, request_timeout_ms=TIMEOUT_S * 1000)
        try:
            c.subscribe(pattern="^.*$")
            deadline = time.monotonic() + TIMEOUT_S
            while "pattern-a" not in (c.subscription() or set()):
                assert time.monotonic() < deadline, c.subscription()
                c.poll(timeout_ms=200)
            seen[exclude] = set(c.subscription())
        finally:
            c.close()
    assert not seen[True] & set(INTERNAL), seen[True]
    assert "__consumer_offsets" in seen[False], seen[False]


def test_consumer_offsets_is_readable_and_regex_consumers_see_no_errors(b):
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    client = ConfluentClient(b.bootstrap)
    client.create_topic("read-a", 1)
    client.produce("read-a", [Out(b"v", partition=0)])
    c = client.consumer(**{"group.id": "committer"})
    c.commit(offsets=[TopicPartition("read-a", 0, 1)], asynchronous=False)
    c.close()

    # The commit's record: key version 1 (offset commit) naming group and topic.
    r = client.consumer(**{"group.id": "reader"})
    try:
        r.assign([TopicPartition("__consumer_offsets", 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + TIMEOUT_S
        keys = []
        while not any(b"committer" in k and b"read-a" in k for k in keys):
            assert time.monotonic() < deadline, keys
            m = r.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            keys.append(m.key() or b"")
        low, high = r.get_watermark_offsets(TopicPartition("__consumer_offsets", 0), timeout=10)
        assert 0 <= low < high
    finally:
        r.close()

    # librdkafka subscribes regex consumers to internal topics too (as with
    # Kafka); they read them without an error.
    rx = client.consumer(**{"group.id": "regex-all", "auto.offset.reset": "earliest"})
    try:
        rx.subscribe(["^.*$"])
        deadline = time.monotonic() + TIMEOUT_S
        topics = set()
        while "read-a" not in topics or "__consumer_offsets" not in topics:
            assert time.monotonic() < deadline, topics
            m = rx.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            topics.add(m.topic())
    finally:
        rx.close()
