"""The sink's errors say why librdkafka failed: an exactly-once task that
outlives kafka.transaction.timeout.ms (the broker aborts its transaction),
or one fenced by a newer attempt, fails with that reason, not "Local:
Fatal error". The write task function itself against a real broker, as a
Spark executor's Python worker runs it."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaException

from headrace.spark.options import parse_sink_options
from headrace.spark.sink_rows import SinkColumns
from headrace.spark.sink_tasks import TaskIdentity, write_exactly_once
from spark_session import create_topic

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
