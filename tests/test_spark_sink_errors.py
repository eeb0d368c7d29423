"""The sink's errors say why librdkafka failed: an exactly-once task that
outlives kafka.transaction.timeout.ms (the broker aborts its transaction),
or one fenced by a newer attempt, fails with that reason, not "Local:
Fatal error". The write task function itself against a real broker, as a
Spark executor's Python worker runs it; and a real Spark write fenced by a
second writer of its transactional id. (Authentication failures:
test_spark_auth_errors.py.)"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaException

from headrace.spark.options import parse_sink_options
from headrace.spark.sink_rows import SinkColumns
from headrace.spark.sink_tasks import TaskIdentity, write_exactly_once
from spark_session import create_topic, spark  # noqa: F401

pytestmark = pytest.mark.timeout(120)


def _slow_rows(n: int, pause_s: float):
    from pyspark.sql import Row
    for i in range(n):
        if i == n // 2:
            time.sleep(pause_s)
        yield Row(value=str(i))


def test_task_outliving_the_transaction_timeout_says_so(broker_factory):
    from pyspark.sql.types import StringType, StructField, StructType
    bs = broker_factory(None, "--set",
                        "transaction.abort.timed.out.transaction.cleanup.interval.ms=200").bootstrap
    create_topic(bs, "slow-eos", partitions=1)
    opts = parse_sink_options({"kafka.bootstrap.servers": bs, "topic": "slow-eos",
                               "deliveryGuarantee": "exactly-once", "sinkId": "slow",
                               "kafka.transaction.timeout.ms": "1500",
                               "kafka.message.timeout.ms": "1500"}, streaming=True)
    cols = SinkColumns.of(StructType([StructField("value", StringType())]), opts)
    with pytest.raises(KafkaException) as e:
        write_exactly_once(opts, cols, _slow_rows(100, 4.0), TaskIdentity("slow", 0, 0, 0, "q"))
    text = str(e.value)
    print(text)
    assert "longer than kafka.transaction.timeout.ms=1500" in text, text
    # The broker's abort fenced the producer: no guess at another writer.
    assert "another producer" not in text, text


def test_fenced_attempt_says_so(broker_factory):
    """Attempt 0 of an exactly-once task is overtaken half-way by attempt 1
    (a retry or a speculative copy): attempt 1's init fences it, and
    attempt 0 fails with librdkafka's reason, not only "Fatal error"."""
    from pyspark.sql import Row
    from pyspark.sql.types import StringType, StructField, StructType
    bs = broker_factory(None).bootstrap
    create_topic(bs, "fenced-eos", partitions=1)
    opts = parse_sink_options({"kafka.bootstrap.servers": bs, "topic": "fenced-eos",
                               "deliveryGuarantee": "exactly-once", "sinkId": "fenced"},
                              streaming=True)
    cols = SinkColumns.of(StructType([StructField("value", StringType())]), opts)

    def rows(overtaken: bool):
        for i in range(100):
            if overtaken and i == 50:
                done = write_exactly_once(opts, cols, rows(False),
                                          TaskIdentity("fenced", 0, 0, 1, "q"))
                assert done.written == 100
            yield Row(value=str(i))

    with pytest.raises(KafkaException) as e:
        write_exactly_once(opts, cols, rows(True), TaskIdentity("fenced", 0, 0, 0, "q"))
    text = str(e.value)
    print(text)
    assert "fenced" in text.lower(), text
    assert "headrace-spark-sink-fenced-0: " in text and \
        "another producer initialised the same transactional id" in text, text


def test_spark_write_fenced_by_a_second_writer_says_so(spark, broker_factory, tmp_path):
    """A real Spark batch write (exactly-once, ``jobId``) whose transactional
    id another producer initialises while the write task holds it (what a
    second writer with the same ``jobId`` or ``sinkId`` does): the task, and
    in local mode the job, fails with one line naming the fencing; nothing
    of the fenced attempt is visible, and a rerun of the job writes every
    row once."""
    import threading

    from confluent_kafka import Producer
    from pyspark.sql.functions import udf

    from headrace.admin_wire import Connection, describe_transactions

    bs = broker_factory(None).bootstrap
    create_topic(bs, "fenced-spark", partitions=1)
    txn_id = "headrace-spark-sink-fence-job-0"   # <prefix>-<jobId>-<Spark partition>
    go = str(tmp_path / "go")

    def held(value: str) -> str:
        import os
        deadline = time.monotonic() + 60
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.05)
        return value

    df = (spark.range(100, numPartitions=1).selectExpr("cast(id as string) AS value")
          .select(udf(held, "string")("value").alias("value")))

    def write():
        (df.write.format("headrace").option("kafka.bootstrap.servers", bs)
         .option("topic", "fenced-spark").option("jobId", "fence-job")
         .option("deliveryGuarantee", "exactly-once").mode("append").save())

    def second_writer(seen: list) -> None:
        """Waits until the task's producer has initialised the id (its rows
        wait in the UDF), then initialises it again, and lets the rows go."""
        try:
            host, port = bs.rsplit(":", 1)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                conn = Connection(host, int(port), 10.0)
                try:
                    answer, = describe_transactions(conn, [txn_id])
                finally:
                    conn.close()
                seen.append(answer)
                if answer.error_code == 0:
                    second = Producer({"bootstrap.servers": bs, "transactional.id": txn_id})
                    second.init_transactions(30)   # fences the task's producer
                    seen.append("fenced it")
                    return
                time.sleep(0.1)
        finally:
            open(go, "w").close()

    seen: list = []
    thread = threading.Thread(target=second_writer, args=(seen,))
    thread.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(Exception) as e:
            write()   # Spark's Python data sources are looked up in the session's thread
    finally:
        thread.join(180)
    took = time.monotonic() - t0
    assert seen and seen[-1] == "fenced it", seen
    text = str(e.value)
    lines = [ln for ln in text.splitlines() if "fenced" in ln.lower() and txn_id in ln
             and "the same sinkId or jobId" in ln]
    assert lines, text[-3000:]
    print(f"failed {took:.1f} s after the start: {lines[-1].strip()}")
    assert _committed_values(bs, "fenced-spark") == []   # nothing of the fenced attempt
    write()   # the rerun of the job (same jobId) writes every row, once
    assert sorted(int(v) for v in _committed_values(bs, "fenced-spark")) == list(range(100))


def _committed_values(bs: str, topic: str) -> list[bytes]:
    from confluent_kafka import Consumer, KafkaError, TopicPartition
    c = Consumer({"bootstrap.servers": bs, "group.id": "fence-check",
                  "isolation.level": "read_committed", "enable.partition.eof": True,
                  "enable.auto.commit": False})
    out = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        while True:
            msg = c.poll(30)
            assert msg is not None
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                return out
            out.append(msg.value())
    finally:
        c.close()

