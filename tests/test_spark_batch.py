"""headrace.spark batch reads and writes: real local Spark, real broker."""
from __future__ import annotations

import pytest

from spark_session import create_topic, load_headrace, produce, read_all, spark  # noqa: F401
from spark_sink_check import read_committed_values

pytestmark = pytest.mark.timeout(300)


def _reader(spark, bootstrap, **options):
    return load_headrace(spark.read, bootstrap, **options)


def test_batch_read_returns_exactly_the_requested_offset_ranges(spark, module_broker):
    bs = module_broker.bootstrap
    create_topic(bs, "br-ranges", partitions=3)
    produce(bs, "br-ranges", ({"key": f"k{p}-{i}".encode(), "value": f"v{p}-{i}".encode(),
                               "partition": p, "headers": [("n", str(i).encode())]}
                              for i in range(10) for p in range(3)))
    df = _reader(spark, bs, subscribe="br-ranges", includeHeaders="true",
                 startingOffsets='{"br-ranges":{"0":2,"1":-2,"2":5}}',
                 endingOffsets='{"br-ranges":{"0":7,"1":-1,"2":6}}')
    rows = df.orderBy("partition", "offset").collect()
    got = [(r.partition, r.offset, r.key, r.value) for r in rows]
    want = [(p, o, f"k{p}-{o}".encode(), f"v{p}-{o}".encode())
            for p, lo, hi in ((0, 2, 7), (1, 0, 10), (2, 5, 6)) for o in range(lo, hi)]
    assert got == want
    assert {r.topic for r in rows} == {"br-ranges"}
    assert {r.timestampType for r in rows} == {0}   # CreateTime
    assert all(r.timestamp is not None for r in rows)
    assert [(h.key, h.value) for h in rows[0].headers] == [("n", b"2")]
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                          "timestampType", "headers"]


def test_batch_read_assign_pattern_timestamp_and_min_partitions(spark, module_broker):
    bs = module_broker.bootstrap
    create_topic(bs, "br-time-a", partitions=1)
    create_topic(bs, "br-time-b", partitions=1)
    for topic in ("br-time-a", "br-time-b"):
        produce(bs, topic, ({"value": f"{topic}:{i}".encode(), "timestamp": 1_000_000 + i * 1000}
                            for i in range(20)))
    # startingTimestamp: the first record at or after 1_005_500 ms is offset 6.
    df = _reader(spark, bs, subscribePattern="br-time-.*", startingTimestamp="1005500")
    got = sorted((r.topic, r.offset) for r in df.collect())
    assert got == [(t, o) for t in ("br-time-a", "br-time-b") for o in range(6, 20)]
    # assign one partition; minPartitions cuts its 20 offsets into 4 tasks.
    df = _reader(spark, bs, assign='{"br-time-b":[0]}', minPartitions="4")
    assert df.rdd.getNumPartitions() == 4
    assert [r.offset for r in df.collect()] == list(range(20))
    stamps = [r.timestamp for r in df.orderBy("offset").collect()]
    assert int(stamps[3].timestamp() * 1000) == 1_003_000


def test_batch_write_then_read_back_with_keys_headers_partitions(spark, module_broker):
    bs = module_broker.bootstrap
    create_topic(bs, "bw-out-a", partitions=2)
    create_topic(bs, "bw-out-b", partitions=1)
    data = [(f"key{i}", f"value{i}".encode(), "bw-out-a" if i % 3 else "bw-out-b",
             (i % 2) if i % 3 else 0, [(f"h{i}", b"x")]) for i in range(30)]
    df = spark.createDataFrame(
        data, "key string, value binary, topic string, partition int, "
              "headers array<struct<key:string,value:binary>>")
    df.write.format("headrace").option("kafka.bootstrap.servers", bs).mode("append").save()
    got = {}
    for topic, parts in (("bw-out-a", 2), ("bw-out-b", 1)):
        for m in read_all(bs, topic, parts):
            got[m.value().decode()] = (m.topic(), m.partition(), m.key(), m.headers())
    assert len(got) == 30
    for key, value, topic, part, headers in data:
        assert got[value.decode()] == (topic, part, key.encode(), [(headers[0][0], b"x")])
    # ... and the same data read back through the source.
    back = _reader(spark, bs, subscribe="bw-out-a,bw-out-b").collect()
    assert sorted(r.value for r in back) == sorted(v for _, v, *_ in data)


def test_batch_write_topic_option_and_at_most_once(spark, module_broker):
    bs = module_broker.bootstrap
    create_topic(bs, "bw-most", partitions=1)
    df = spark.range(50).selectExpr("cast(id as string) as value")
    (df.write.format("headrace").option("kafka.bootstrap.servers", bs).option("topic", "bw-most")
     .option("deliveryGuarantee", "at-most-once").option("jobId", "bw-most-1")
     .mode("append").save())
    # at-most-once delivers in transactions: read as read_committed.
    assert sorted(int(v) for v in read_committed_values(bs, "bw-most", 1)) == list(range(50))


@pytest.mark.parametrize("options, message", [
    ({"subscribe": "x", "assign": '{"x":[0]}'}, "Exactly one of the options"),
    ({"subscribe": "x", "startingOffsets": "latest"}, "not allowed in batch"),
    ({"subscribe": "x", "endingOffsets": "earliest"}, "not allowed in batch"),
    ({"subscribe": "x", "kafka.auto.offset.reset": "earliest"}, "auto.offset.reset"),
    ({"subscribe": "x", "startingOffsets": "{bad"}, "startingOffsets"),
])
def test_bad_read_options_fail_with_the_option_named(spark, module_broker, options, message):
    with pytest.raises(Exception, match=message):
        _reader(spark, module_broker.bootstrap, **options).collect()


def test_bad_write_options_fail_before_writing(spark, module_broker):
    bs = module_broker.bootstrap
    df = spark.range(3).selectExpr("cast(id as string) as value")
    with pytest.raises(Exception, match="needs the option 'jobId'"):
        (df.write.format("headrace").option("kafka.bootstrap.servers", bs).option("topic", "t")
         .option("deliveryGuarantee", "exactly-once").mode("append").save())
    with pytest.raises(Exception, match="topic option required"):
        df.write.format("headrace").option("kafka.bootstrap.servers", bs).mode("append").save()
    with pytest.raises(Exception, match="Required attribute 'value'"):
        (spark.range(3).write.format("headrace").option("kafka.bootstrap.servers", bs)
         .option("topic", "t").mode("append").save())


def test_fail_on_data_loss_when_retention_deletes_unread_data(spark, broker_factory):
    """Retention (not DeleteRecords) removes the first segment under a range
    the job asks for: failOnDataLoss=true fails naming the partition, false
    reads what is left (as Spark's Kafka source)."""
    import time
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource)

    b = broker_factory(None, "--set", "log.retention.check.interval.ms=200")
    bs = b.bootstrap
    # A segment holds one batch (segment.bytes=200); produce() sends about one
    # batch per call.
    create_topic(bs, "rt-loss", **{"segment.bytes": "200", "retention.ms": "1500"})
    for start in (0, 20, 40):
        produce(bs, "rt-loss", ({"value": f"v{i}".encode(), "partition": 0}
                                for i in range(start, start + 20)))
        time.sleep(0.6)   # the older segments age past retention.ms; the last stays young
    c = Consumer({"bootstrap.servers": bs, "group.id": "rt-loss-probe"})
    deadline = time.monotonic() + 30
    low = high = 0
    while time.monotonic() < deadline:
        low, high = c.get_watermark_offsets(TopicPartition("rt-loss", 0), timeout=10, cached=False)
        if low >= 40:
            break
        time.sleep(0.2)
    assert low >= 40, low   # retention took (at least) the first two rounds' segments
    # Freeze the log before Spark reads it: no more retention.
    admin = AdminClient({"bootstrap.servers": bs})
    res = ConfigResource(ConfigResource.Type.TOPIC, "rt-loss")
    res.add_incremental_config(ConfigEntry("retention.ms", "-1",
                                           incremental_operation=AlterConfigOpType.SET))
    admin.incremental_alter_configs([res])[res].result(30)
    time.sleep(0.5)   # a retention pass already running when the change landed
    low, high = c.get_watermark_offsets(TopicPartition("rt-loss", 0), timeout=10, cached=False)
    c.close()
    assert 40 <= low < high == 60, (low, high)

    reader = dict(subscribe="rt-loss", startingOffsets='{"rt-loss":{"0":0}}')
    with pytest.raises(Exception, match="Data loss in rt-loss-0"):
        _reader(spark, bs, **reader).collect()
    rows = _reader(spark, bs, failOnDataLoss="false", **reader).collect()
    assert [r.offset for r in rows] == list(range(low, 60))
    assert [r.value.decode() for r in rows] == [f"v{i}" for i in range(low, 60)]
