"""headrace.spark source over transactional topics: ``kafka.isolation.level``.

Every test builds the same partition history with real transactional
producers against a real broker:

    offset  0-2   plain records p0..p2
            3-5   an aborted transaction a0..a2, 6 its ABORT marker
            7-8   a committed transaction c0, c1, 9 its COMMIT marker
            10    an open transaction's record o0 (left open)
            11-12 plain records q0, q1 (after the open transaction)

so the last stable offset is 10 and the high watermark 13. read_committed
must stop at 10 and skip a0..a2; read_uncommitted reads everything that is a
record (never the markers); both must be deterministic for a planned range.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from headrace.spark import HeadraceOptionError
from headrace.spark.offsets import OffsetRange
from headrace.spark.options import parse_source_options
from headrace.spark.range_reader import read_range
from headrace.spark.schema import source_schema
from spark_session import (create_topic, load_headrace, produce_values, quiet_config,  # noqa: F401
                           spark, write_json_atomically)

pytestmark = pytest.mark.timeout(300)

COMMITTED_BEFORE_OPEN = ["p0", "p1", "p2", "c0", "c1"]
ALL_RECORDS = ["p0", "p1", "p2", "a0", "a1", "a2", "c0", "c1", "o0", "q0", "q1"]


def _history(bs: str, topic: str) -> Producer:
    """Writes the history of the module docstring; returns the producer whose
    transaction is still open (commit it to move the LSO to 13)."""
    create_topic(bs, topic)
    produce_values(bs, topic, ["p0", "p1", "p2"])
    # The open transaction must outlive the Spark reads of the test: with
    # librdkafka's default transaction.timeout.ms (60 s) the broker aborted
    # it (LSO 10 -> 14) while a loaded machine took 86 s over them. 15 min
    # is the broker's transaction.max.timeout.ms.
    txn = Producer(quiet_config(bs, **{"transactional.id": f"{topic}-txn",
                                       "transaction.timeout.ms": 900000}))
    txn.init_transactions(30)
    for values, commit in ((["a0", "a1", "a2"], False), (["c0", "c1"], True)):
        txn.begin_transaction()
        for v in values:
            txn.produce(topic, value=v.encode(), partition=0)
        assert txn.flush(30) == 0
        (txn.commit_transaction if commit else txn.abort_transaction)(30)
    txn.begin_transaction()
    txn.produce(topic, value=b"o0", partition=0)
    assert txn.flush(30) == 0
    produce_values(bs, topic, ["q0", "q1"])
    return txn


def _commit(txn: Producer, bs: str, topic: str) -> None:
    """Commits the open transaction and waits until its COMMIT marker is in
    the partition. EndTxn is answered once the coordinator has made
    PrepareCommit durable, and the markers are written after that (as in
    Kafka, docs/transactions.md), so the LSO moves past o0 shortly after
    ``commit_transaction`` returns, not when it returns. A read_committed
    client's "latest" offset is the LSO: 10 while o0's transaction is open,
    14 once its marker (offset 13) is written."""
    consumer = Consumer(quiet_config(bs, **{"group.id": f"{topic}-lso",
                                            "isolation.level": "read_committed"}))
    try:
        def lso() -> int:
            return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
        assert lso() == 10, "o0's transaction is no longer open"
        txn.commit_transaction(30)
        deadline = time.monotonic() + 30
        while lso() < 14:
            assert time.monotonic() < deadline, "the COMMIT marker never came"
            time.sleep(0.01)
    finally:
        consumer.close()


def _opts(bs: str, topic: str, level: str | None):
    options = {"kafka.bootstrap.servers": bs, "subscribe": topic,
               "kafkaConsumer.pollTimeoutMs": "20000"}
    if level is not None:
        options["kafka.isolation.level"] = level
    return parse_source_options(options, streaming=False)


def _read(opts, topic: str, begin: int, until: int) -> list[tuple[int, str]]:
    rows = []
    for batch in read_range(opts, source_schema(False), OffsetRange(topic, 0, begin, until)):
        d = batch.to_pydict()
        rows.extend(zip(d["offset"], (v.decode() for v in d["value"])))
    return rows


def test_isolation_level_option_is_validated_and_defaults_to_read_uncommitted():
    base = {"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t"}
    assert parse_source_options(base, streaming=True).isolation_level == "read_uncommitted"
    opts = parse_source_options({**base, "kafka.isolation.level": "READ_COMMITTED"}, True)
    assert opts.isolation_level == "read_committed"
    with pytest.raises(HeadraceOptionError, match="kafka.isolation.level"):
        parse_source_options({**base, "kafka.isolation.level": "serializable"}, True)


def test_ranges_with_gaps_read_deterministically_at_both_levels(module_broker):
    """Executor side without Spark: ranges that start or end inside aborted
    records and markers finish at once and give the same rows every time."""
    bs, topic = module_broker.bootstrap, "rc-ranges"
    txn = _history(bs, topic)
    try:
        committed = _opts(bs, topic, "read_committed")
        uncommitted = _opts(bs, topic, None)
        cases = [
            (committed, 0, 10, [(0, "p0"), (1, "p1"), (2, "p2"), (7, "c0"), (8, "c1")]),
            (committed, 3, 7, []),                  # only aborted records and a marker
            (committed, 4, 8, [(7, "c0")]),
            (committed, 9, 10, []),                 # only the COMMIT marker
            (committed, 2, 4, [(2, "p2")]),         # ends inside the aborted transaction
            (uncommitted, 0, 13, [(0, "p0"), (1, "p1"), (2, "p2"), (3, "a0"), (4, "a1"),
                                  (5, "a2"), (7, "c0"), (8, "c1"), (10, "o0"), (11, "q0"),
                                  (12, "q1")]),
            (uncommitted, 6, 7, []),                # only the ABORT marker
            (uncommitted, 5, 8, [(5, "a2"), (7, "c0")]),
        ]
        for opts, begin, until, want in cases:
            for _ in range(2):   # a replayed range reads exactly the same rows
                assert _read(opts, topic, begin, until) == want, (opts.isolation_level, begin,
                                                                  until)
    finally:
        txn.abort_transaction(30)


def test_batch_read_committed_stops_at_the_last_stable_offset(spark, module_broker):
    bs, topic = module_broker.bootstrap, "rc-batch"
    txn = _history(bs, topic)

    def values(level):
        options = {"subscribe": topic}
        if level:
            options["kafka.isolation.level"] = level
        rows = load_headrace(spark.read, bs, **options).orderBy("offset").collect()
        return [r.value.decode() for r in rows]

    assert values("read_committed") == COMMITTED_BEFORE_OPEN
    assert values(None) == ALL_RECORDS               # Spark's default: read_uncommitted
    _commit(txn, bs, topic)
    assert values("read_committed") == ["p0", "p1", "p2", "c0", "c1", "o0", "q0", "q1"]


def test_stream_read_committed_plans_to_the_lso_and_resumes_after_commit(spark, module_broker,
                                                                           tmp_path):
    """A micro-batch planned while a transaction is open ends at the LSO (10)
    in the checkpoint; the next run, after the commit, reads the rest once."""
    bs, topic = module_broker.bootstrap, "rc-stream"
    txn = _history(bs, topic)
    out, ck = tmp_path / "out", tmp_path / "ck"
    out.mkdir()

    def sink(df, batch_id):
        write_json_atomically(out / f"{batch_id}.json",
                              [(r.offset, r.value.decode()) for r in df.collect()])

    def run():
        df = load_headrace(spark.readStream, bs, subscribe=topic, startingOffsets="earliest",
                           **{"kafka.isolation.level": "read_committed"})
        q = (df.writeStream.foreachBatch(sink).option("checkpointLocation", str(ck))
             .trigger(availableNow=True).start())
        try:
            assert q.awaitTermination(180), "query did not finish"
        finally:
            q.stop()

    run()
    batches = {int(p.stem): json.loads(p.read_text()) for p in out.glob("*.json")}
    assert [v for b in sorted(batches) for _, v in batches[b]] == COMMITTED_BEFORE_OPEN
    last = max(int(p.name) for p in (ck / "offsets").iterdir() if p.name.isdigit())
    planned = json.loads((ck / "offsets" / str(last)).read_text().splitlines()[-1])
    assert planned == {topic: {"0": 10}, "headrace:plan": {"minPartitions": 0}}

    _commit(txn, bs, topic)
    run()
    batches = {int(p.stem): json.loads(p.read_text()) for p in out.glob("*.json")}
    got = [tuple(row) for b in sorted(batches) for row in batches[b]]
    assert got == [(0, "p0"), (1, "p1"), (2, "p2"), (7, "c0"), (8, "c1"), (10, "o0"),
                   (11, "q0"), (12, "q1")]
