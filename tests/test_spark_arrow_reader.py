"""The source's executor reader (Fetch + the C++ decoder into Arrow,
headrace._core.RecordColumns) against confluent-kafka on the same records:
every column equal, for null keys, tombstones, headers, each codec, a
LogAppendTime topic, read_committed with an aborted transaction, and a
range that starts and ends inside batches. Real broker, real clients."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from confluent_kafka import (TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Consumer,
                             KafkaError, Producer, TopicPartition)

from pyspark.sql.pandas.types import to_arrow_schema

from headrace.spark.offsets import OffsetRange
from headrace.spark.options import parse_source_options
from headrace.spark.range_reader import read_range
from headrace.spark.schema import source_schema
from spark_session import create_topic, quiet_config

pytestmark = pytest.mark.timeout(300)

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_TS_TYPE = {TIMESTAMP_CREATE_TIME: 0, TIMESTAMP_LOG_APPEND_TIME: 1}


def _records(n: int) -> list[dict]:
    """Null keys on every third record, a tombstone on every seventh,
    zero to two headers (one with a null value), growing values."""
    out = []
    for i in range(n):
        rec = {"value": None if i % 7 == 6 else (b"v%d-" % i) * (1 + i % 5),
               "timestamp": 1_700_000_000_000 + i}
        if i % 3:
            rec["key"] = b"k%d" % i
        if i % 4:
            rec["headers"] = [("h1", b"x%d" % i)] + ([("h2", None)] if i % 4 == 3 else [])
        out.append(rec)
    return out


def _produce(bs: str, topic: str, recs: list[dict], **conf) -> None:
    p = Producer(quiet_config(bs, acks="all", **{"linger.ms": 20, **conf}))
    for r in recs:
        p.produce(topic, partition=0, **r)
    assert p.flush(30) == 0


def _confluent_rows(bs: str, topic: str, begin: int, until: int,
                    level: str = "read_uncommitted") -> list[tuple]:
    c = Consumer(quiet_config(bs, **{"group.id": f"{topic}-check", "enable.auto.commit": False,
                                     "enable.partition.eof": True, "isolation.level": level}))
    rows = []
    try:
        c.assign([TopicPartition(topic, 0, begin)])
        while True:
            msg = c.poll(30)
            assert msg is not None
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                break
            if msg.offset() >= until:
                break
            ts_type, ts = msg.timestamp()
            rows.append((msg.key(), msg.value(), msg.topic(), msg.partition(), msg.offset(),
                         ts * 1000, _TS_TYPE[ts_type],
                         [{"key": k, "value": v} for k, v in msg.headers() or []]))
    finally:
        c.close()
    return rows


def _arrow_rows(bs: str, topic: str, begin: int, until: int,
                level: str = "read_uncommitted") -> list[tuple]:
    opts = parse_source_options({"kafka.bootstrap.servers": bs, "subscribe": topic,
                                 "kafka.isolation.level": level,
                                 "kafkaConsumer.pollTimeoutMs": "20000"}, streaming=False)
    schema = source_schema(True)
    rows = []
    for batch in read_range(opts, schema, OffsetRange(topic, 0, begin, until)):
        assert batch.schema == to_arrow_schema(schema, timezone="UTC")
        batch.validate(full=True)
        d = batch.to_pydict()
        for i in range(batch.num_rows):
            ts = d["timestamp"][i]
            us = None if ts is None else (ts - _EPOCH) // timedelta(microseconds=1)
            rows.append((d["key"][i], d["value"][i], d["topic"][i], d["partition"][i],
                         d["offset"][i], us, d["timestampType"][i], d["headers"][i]))
    return rows


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_columns_equal_confluent_kafka_for_each_codec(module_broker, codec):
    bs, topic = module_broker.bootstrap, f"arrow-{codec}"
    create_topic(bs, topic)
    _produce(bs, topic, _records(3000), **{"compression.type": codec, "batch.num.messages": 300})
    want = _confluent_rows(bs, topic, 0, 3000)
    assert len(want) == 3000
    assert _arrow_rows(bs, topic, 0, 3000) == want
    # a range starting and ending inside batches
    assert _arrow_rows(bs, topic, 155, 2410) == [r for r in want if 155 <= r[4] < 2410]


def test_log_append_time_topic(module_broker):
    bs, topic = module_broker.bootstrap, "arrow-logappend"
    create_topic(bs, topic, **{"message.timestamp.type": "LogAppendTime"})
    _produce(bs, topic, _records(200))
    want = _confluent_rows(bs, topic, 0, 200)
    assert {r[6] for r in want} == {1}
    assert _arrow_rows(bs, topic, 0, 200) == want


def test_read_committed_skips_the_aborted_transaction(module_broker):
    bs, topic = module_broker.bootstrap, "arrow-txn"
    create_topic(bs, topic)
    _produce(bs, topic, _records(50))
    txn = Producer(quiet_config(bs, **{"transactional.id": f"{topic}-txn"}))
    txn.init_transactions(30)
    for commit in (False, True, False):
        txn.begin_transaction()
        for r in _records(40):
            txn.produce(topic, partition=0, **r)
        assert txn.flush(30) == 0
        (txn.commit_transaction if commit else txn.abort_transaction)(30)
    _produce(bs, topic, _records(30), **{"compression.type": "zstd"})
    end = 50 + 3 * 41 + 30
    for level in ("read_committed", "read_uncommitted"):
        want = _confluent_rows(bs, topic, 0, end, level)
        assert len(want) == (50 + 40 + 30 if level == "read_committed" else 50 + 120 + 30)
        assert _arrow_rows(bs, topic, 0, end, level) == want
