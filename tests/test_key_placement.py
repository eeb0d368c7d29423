"""Kafka's key placement in every producer the project configures
(headrace.client_settings.KAFKA_PRODUCER_DEFAULTS, murmur2): the CLI
(`headrace produce -K`, both of its producer paths), the Spark sink and a
kafka-python producer (Kafka's Java partitioner: murmur2(key) & 0x7fffffff
% partitions) put the same 1,000 keys on the same partitions of same-sized
topics; the Storm bolt's producer is configured the same way. Real broker,
real clients."""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition

from cli_run import headrace, ok

pytestmark = pytest.mark.timeout(300)
PARTITIONS = 7
KEYS = [f"user-{i}" for i in range(1000)]


def _placement(bootstrap: str, topic: str) -> dict[str, int]:
    """{key: partition} of every record of ``topic``."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"kp-{topic}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    out: dict[str, int] = {}
    try:
        idle = 0
        while len(out) < len(KEYS) and idle < 20:
            msgs = c.consume(1000, 0.5)
            idle = 0 if msgs else idle + 1
            for m in msgs:
                assert m.error() is None, m.error()
                out[m.key().decode()] = m.partition()
    finally:
        c.close()
    assert len(out) == len(KEYS), f"{topic}: read {len(out)} of {len(KEYS)} keys"
    return out


def _expected() -> dict[str, int]:
    from kafka.partitioner.default import murmur2

    return {k: (murmur2(k.encode()) & 0x7FFFFFFF) % PARTITIONS for k in KEYS}


def _create(bs: str, topic: str) -> None:
    ok(headrace("topic", "create", topic, "--partitions", str(PARTITIONS), brokers=bs))


@pytest.fixture(scope="module")
def placed(module_broker):
    """The topics the CLI (both paths) and kafka-python wrote, as {name: bootstrap}."""
    from kafka import KafkaProducer

    bs = module_broker.bootstrap
    lines = "".join(f"{k}\t{i}\n" for i, k in enumerate(KEYS))
    _create(bs, "kp-cli")
    ok(headrace("produce", "kp-cli", "-K", "\t", brokers=bs, input=lines))
    # The confluent-kafka path of `produce` (one call per record).
    _create(bs, "kp-cli-python")
    ok(headrace("produce", "kp-cli-python", "-K", "\t", brokers=bs, input=lines,
                env={"HEADRACE_CLI_PRODUCER": "python"}))
    _create(bs, "kp-kafka-python")
    p = KafkaProducer(bootstrap_servers=bs)
    for i, k in enumerate(KEYS):
        p.send("kp-kafka-python", key=k.encode(), value=str(i).encode())
    p.flush(30)
    p.close()
    return bs


def test_cli_and_kafka_python_place_keys_alike(placed):
    expected = _expected()
    assert len(set(expected.values())) == PARTITIONS
    assert _placement(placed, "kp-kafka-python") == expected
    assert _placement(placed, "kp-cli") == expected
    assert _placement(placed, "kp-cli-python") == expected


def test_user_setting_still_wins(placed):
    """-X partitioner=... overrides the default (consistent_random is CRC32)."""
    import zlib

    lines = "".join(f"{k}\t{i}\n" for i, k in enumerate(KEYS))
    _create(placed, "kp-crc")
    ok(headrace("produce", "kp-crc", "-K", "\t", "-X", "partitioner=consistent",
                brokers=placed, input=lines))
    assert _placement(placed, "kp-crc") == {
        k: zlib.crc32(k.encode()) % PARTITIONS for k in KEYS}


def test_spark_sink_places_keys_as_kafka(placed):
    pytest.importorskip("pyspark", minversion="4.2")
    from spark_session import spark_session

    spark = spark_session()
    _create(placed, "kp-spark")
    df = spark.createDataFrame([(k, str(i)) for i, k in enumerate(KEYS)],
                               "key string, value string")
    (df.repartition(3).write.format("headrace").option("kafka.bootstrap.servers", placed)
     .option("topic", "kp-spark").mode("append").save())
    assert _placement(placed, "kp-spark") == _expected()


def test_storm_bolt_producer_uses_murmur2(monkeypatch):
    """The bolt's producer gets the same defaults (its own settings win)."""
    pytest.importorskip("streamparse")
    from headrace.storm import bolt

    confs = []
    monkeypatch.setattr(bolt, "Producer", lambda conf: confs.append(conf))
    for producer in (None, {"partitioner": "consistent"}):
        b = bolt.KafkaBolt.__new__(bolt.KafkaBolt)
        b.component_name, b.task_id = "writer", 1
        b.initialize({"headrace.brokers": "127.0.0.1:1", "headrace.topic": "t",
                      "headrace.fire_and_forget": True, "headrace.producer": producer}, {})
    assert [c["partitioner"] for c in confs] == ["murmur2_random", "consistent"]
