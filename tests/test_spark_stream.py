"""headrace.spark Structured Streaming: real local Spark, real broker."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from spark_session import (create_topic, load_headrace, produce_values,  # noqa: F401
                           quiet_config, read_all, spark, write_json_atomically)

pytestmark = pytest.mark.timeout(300)


def _stream(spark, bootstrap, **options):
    return load_headrace(spark.readStream, bootstrap, **options)


def _batch_file_sink(out: Path):
    """foreachBatch sink, idempotent per batch id: batch N always lands in
    the one file N.json, so a replayed batch overwrites rather than adds."""
    out.mkdir(parents=True, exist_ok=True)

    def sink(df, batch_id):
        rows = [(r.partition, r.offset, r.value.decode()) for r in df.collect()]
        write_json_atomically(out / f"{batch_id}.json", rows)
    return sink


def _run_available_now(df_writer, checkpoint: Path, timeout: float = 180) -> None:
    q = df_writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    try:
        finished = q.awaitTermination(timeout)
    except Exception as e:   # StreamingQueryException: the query failed
        raise AssertionError(f"query failed: {e}") from e
    finally:
        q.stop()
    assert finished, "query did not finish"


def _batches(out: Path) -> dict[int, list]:
    return {int(p.stem): json.loads(p.read_text()) for p in out.glob("*.json")}


def test_available_now_with_max_offsets_per_trigger_is_exactly_once(spark, module_broker,
                                                                     tmp_path):
    bs = module_broker.bootstrap
    create_topic(bs, "st-once", partitions=2)
    produce_values(bs, "st-once", [f"r{i}" for i in range(100)], partitions=2)
    out, ck = tmp_path / "sink", tmp_path / "ck"
    df = _stream(spark, bs, subscribe="st-once", startingOffsets="earliest",
                 maxOffsetsPerTrigger="30", commitOffsetsToGroup="st-monitor")
    _run_available_now(df.writeStream.foreachBatch(_batch_file_sink(out)), ck)
    batches = _batches(out)
    assert sorted(batches) == [0, 1, 2, 3]                  # 30 + 30 + 30 + 10
    assert [len(batches[b]) for b in range(4)] == [30, 30, 30, 10]
    values = [v for b in batches.values() for _, _, v in b]
    assert sorted(values) == sorted(f"r{i}" for i in range(100))   # each exactly once
    # Within a partition, batches follow offset order without gaps.
    for part in (0, 1):
        offsets = [o for b in range(4) for p, o, _ in batches[b] if p == part]
        assert offsets == list(range(50))

    # New data: the same checkpoint resumes where it stopped.
    produce_values(bs, "st-once", [f"s{i}" for i in range(20)], partitions=2)
    _run_available_now(df.writeStream.foreachBatch(_batch_file_sink(out)), ck)
    batches = _batches(out)
    assert sorted(batches) == [0, 1, 2, 3, 4]
    assert sorted(v for _, _, v in batches[4]) == sorted(f"s{i}" for i in range(20))

    # The monitoring group lags: it holds the end of a batch that finished
    # before the last one, never more than the query has read.
    c = Consumer(quiet_config(bs, **{"group.id": "st-monitor"}))
    try:
        committed = c.committed([TopicPartition("st-once", p) for p in (0, 1)], timeout=10)
    finally:
        c.close()
    assert [tp.offset for tp in committed] in ([50, 50], [45, 45])


def test_stream_write_to_a_topic_at_least_once(spark, module_broker, tmp_path):
    bs = module_broker.bootstrap
    create_topic(bs, "st-in", partitions=2)
    create_topic(bs, "st-out", partitions=2)
    produce_values(bs, "st-in", [f"m{i}" for i in range(60)], partitions=2)
    df = (_stream(spark, bs, subscribe="st-in", startingOffsets="earliest",
                  maxOffsetsPerTrigger="25")
          .selectExpr("key", "upper(cast(value as string)) as value"))
    writer = (df.writeStream.format("headrace").option("kafka.bootstrap.servers", bs)
              .option("topic", "st-out"))
    _run_available_now(writer, tmp_path / "ck")
    got = sorted(m.value().decode() for m in read_all(bs, "st-out", 2))
    assert got == sorted(f"M{i}" for i in range(60))


def _delete_records(bs: str, topic: str, before: int) -> None:
    admin = AdminClient(quiet_config(bs))
    futures = admin.delete_records([TopicPartition(topic, 0, before)], request_timeout=30)
    for f in futures.values():
        assert f.result(30).low_watermark == before   # the new log start offset


def test_fail_on_data_loss_when_unread_data_is_deleted(spark, module_broker, tmp_path):
    bs = module_broker.bootstrap
    create_topic(bs, "st-loss", partitions=1)
    produce_values(bs, "st-loss", [f"a{i}" for i in range(50)])
    out, ck = tmp_path / "sink", tmp_path / "ck"
    df = _stream(spark, bs, subscribe="st-loss", startingOffsets="earliest")
    _run_available_now(df.writeStream.foreachBatch(_batch_file_sink(out)), ck)
    assert len(_batches(out)[0]) == 50

    # 50 more arrive; before the query reads them, offsets < 80 are deleted.
    produce_values(bs, "st-loss", [f"b{i}" for i in range(50)])
    _delete_records(bs, "st-loss", 80)

    # Batch read of an explicit range that starts in the deleted part.
    batch = (spark.read.format("headrace").option("kafka.bootstrap.servers", bs)
             .option("subscribe", "st-loss").option("startingOffsets", '{"st-loss":{"0":60}}'))
    with pytest.raises(Exception, match="Data loss in st-loss-0"):
        batch.load().collect()
    assert [r.offset for r in batch.option("failOnDataLoss", "false").load().collect()] \
        == list(range(80, 100))

    # failOnDataLoss=true (default): the restarted query fails, writes nothing.
    with pytest.raises(AssertionError, match="Data loss in st-loss-0"):
        _run_available_now(df.writeStream.foreachBatch(_batch_file_sink(out)), ck)
    assert sorted(_batches(out)) == [0]
    # failOnDataLoss=false: it skips what is gone and reads the rest.
    df = _stream(spark, bs, subscribe="st-loss", startingOffsets="earliest",
                 failOnDataLoss="false")
    _run_available_now(df.writeStream.foreachBatch(_batch_file_sink(out)), ck)
    batches = _batches(out)
    assert sorted(batches) == [0, 1]
    assert [o for _, o, _ in batches[1]] == list(range(80, 100))
