"""Kafka's message formats v0 and v1 (Produce v0-2, clients of Kafka
0.8-0.10 or told the broker is that old) against a real broker process:
every message set is up-converted to one RecordBatch v2 on produce, as
Kafka 3.x does, so today's consumers read it (librdkafka's 0052_msg_timestamps
case in the client suites).

- librdkafka told the broker is 0.9.0.0 (`api.version.request=false`) sends
  Produce v1 with format v0 (no timestamps), uncompressed and in gzip,
  snappy and lz4 wrappers: every record arrives once, in order, with key
  and value; its timestamp is -1 on a CreateTime topic (v0 has none) and
  the broker's append time on a LogAppendTime topic.
- kafka-python pinned to 0.10.1 sends Produce v2 with format v1: the
  producer's timestamps are kept.
"""
from __future__ import annotations

import time

import pytest

from broker_kafka_clients import ConfluentClient

TIMEOUT_S = 30
COUNT = 100
FUTURE_TS = int(time.time() * 1000) + 24 * 3600 * 1000  # what the producer asks for


def _produce_as_for_0_9(bootstrap: str, topic: str, codec: str) -> list:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "api.version.request": False,
                  "broker.version.fallback": "0.9.0.0", "enable.idempotence": False,
                  "compression.codec": codec, "batch.num.messages": 20, "linger.ms": 5,
                  "log_level": 0})
    reports: list = []
    for i in range(COUNT):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, timestamp=FUTURE_TS,
                  on_delivery=lambda err, m: reports.append(err or m.offset()))
    assert p.flush(TIMEOUT_S) == 0
    return reports


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
@pytest.mark.parametrize("ts_type", ["CreateTime", "LogAppendTime"])
def test_librdkafka_for_a_0_9_broker_sends_format_v0(module_broker, codec, ts_type):
    client = ConfluentClient(module_broker.bootstrap)
    topic = f"legacy-v0-{codec}-{ts_type}"
    client.create_topic(topic, 1, **{"message.timestamp.type": ts_type})
    before = int(time.time() * 1000)
    reports = _produce_as_for_0_9(module_broker.bootstrap, topic, codec)
    after = int(time.time() * 1000)
    assert sorted(reports) == list(range(COUNT)), reports[:5]
    recs = client.read(topic, 1)
    assert [(r.offset, r.key, r.value) for r in recs] == \
        [(i, b"k%d" % i, b"v%d" % i) for i in range(COUNT)]
    if ts_type == "CreateTime":
        assert {r.timestamp for r in recs} == {-1}  # format v0 carries none
    else:
        assert all(before <= r.timestamp <= after and not r.create_time for r in recs), recs[:3]


def test_kafka_python_pinned_to_0_10_1_sends_format_v1(module_broker):
    from kafka import KafkaProducer
    client = ConfluentClient(module_broker.bootstrap)
    client.create_topic("legacy-v1", 1)
    p = KafkaProducer(bootstrap_servers=module_broker.bootstrap, api_version=(0, 10, 1),
                      compression_type="gzip", linger_ms=5)
    try:
        futures = [p.send("legacy-v1", key=b"k%d" % i, value=b"v%d" % i,
                          timestamp_ms=FUTURE_TS + i) for i in range(COUNT)]
        offsets = [f.get(timeout=TIMEOUT_S).offset for f in futures]
    finally:
        p.close()
    assert offsets == list(range(COUNT))
    recs = client.read("legacy-v1", 1)
    assert [(r.key, r.value, r.timestamp, r.create_time) for r in recs] == \
        [(b"k%d" % i, b"v%d" % i, FUTURE_TS + i, True) for i in range(COUNT)]
