"""The Spark sink's exactly-once and at-most-once modes in batch writes and
in-process streaming queries: reruns with the same jobId, two queries side
by side, option errors. Real local Spark, real broker; output read with a
read_committed consumer."""
from __future__ import annotations

import pytest

from headrace.spark.options import HeadraceOptionError, parse_sink_options
from headrace.spark.sink_progress import sink_report
from spark_session import create_topic, load_headrace, produce_values, spark  # noqa: F401
from spark_sink_check import lost_and_duplicated, read_committed_values

pytestmark = pytest.mark.timeout(300)
BS = {"kafka.bootstrap.servers": "127.0.0.1:1"}


@pytest.fixture
def sink_broker(broker_factory):
    """A fresh broker per test: each test's groups and transactional ids
    start from nothing."""
    return broker_factory(None)


def _save(df, bootstrap: str, **options: str) -> None:
    w = df.write.format("headrace").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        w = w.option(k, v)
    w.mode("append").save()


def _numbers(spark, n: int, partitions: int = 4):
    return spark.range(n).selectExpr("cast(id as string) as value").repartition(partitions)


@pytest.mark.parametrize("guarantee", ["exactly-once", "at-most-once"])
def test_batch_rerun_with_the_same_job_id_writes_nothing_twice(spark, sink_broker, guarantee):
    bs = sink_broker.bootstrap
    topic = f"sm-rerun-{guarantee}"
    create_topic(bs, topic, partitions=2)
    df = _numbers(spark, 2000)
    for _ in range(2):
        _save(df, bs, topic=topic, deliveryGuarantee=guarantee, jobId="nightly-1")
    got = read_committed_values(bs, topic, 2)
    assert lost_and_duplicated([str(i) for i in range(2000)], got) == (0, 0)
    report = sink_report(bs, "nightly-1", topic, partitions=4)
    assert report["total_written"] == 2000 and report["total_dropped"] == 0, report
    assert sorted(report["partitions"]) == [0, 1, 2, 3]
    # A new jobId is a new job: it writes again.
    _save(df, bs, topic=topic, deliveryGuarantee=guarantee, jobId="nightly-2")
    assert len(read_committed_values(bs, topic, 2)) == 4000


def _stream_to(spark, bs, src: str, out: str, ck, name: str, **options: str):
    w = (load_headrace(spark.readStream, bs, subscribe=src, startingOffsets="earliest",
                       maxOffsetsPerTrigger="200")
         .select("value").writeStream.format("headrace").option("kafka.bootstrap.servers", bs)
         .option("topic", out).option("checkpointLocation", str(ck)).queryName(name))
    for k, v in options.items():
        w = w.option(k, v)
    q = w.trigger(availableNow=True).start()
    try:
        assert q.awaitTermination(180), "query did not finish"
    finally:
        q.stop()
    return q.id


def test_two_at_most_once_queries_do_not_share_claims(spark, sink_broker, tmp_path):
    """The old ledger's bug: two at-most-once queries that shared everything
    but the query dropped all of the second one's records."""
    bs = sink_broker.bootstrap
    create_topic(bs, "sm-two-in", partitions=2)
    create_topic(bs, "sm-two-out", partitions=2)
    produce_values(bs, "sm-two-in", [str(i) for i in range(1000)], partitions=2)
    ids = [_stream_to(spark, bs, "sm-two-in", "sm-two-out", tmp_path / f"ck{i}", f"amo{i}",
                      deliveryGuarantee="at-most-once") for i in range(2)]
    got = read_committed_values(bs, "sm-two-out", 2)
    assert sorted(got) == sorted([str(i) for i in range(1000)] * 2)
    for qid in ids:
        rep = sink_report(bs, qid, "sm-two-out", partitions=2)
        assert rep["total_written"] == 1000 and rep["total_dropped"] == 0, rep


def test_streaming_exactly_once_replayed_batches_are_skipped(spark, sink_broker, tmp_path):
    """Batches 0-4 committed to the topic but Spark's commit log lost (as
    after a crash between the sink's transaction and the commit log):
    the replay skips every (batch, partition) and writes nothing twice."""
    import shutil
    bs = sink_broker.bootstrap
    create_topic(bs, "sm-eos-in", partitions=2)
    create_topic(bs, "sm-eos-out", partitions=2)
    produce_values(bs, "sm-eos-in", [str(i) for i in range(1000)], partitions=2)
    ck = tmp_path / "ck"
    qid = _stream_to(spark, bs, "sm-eos-in", "sm-eos-out", ck, "eos1",
                     deliveryGuarantee="exactly-once")
    shutil.rmtree(ck / "commits")
    assert _stream_to(spark, bs, "sm-eos-in", "sm-eos-out", ck, "eos2",
                      deliveryGuarantee="exactly-once") == qid
    got = read_committed_values(bs, "sm-eos-out", 2)
    assert lost_and_duplicated([str(i) for i in range(1000)], got) == (0, 0)
    rep = sink_report(bs, qid, "sm-eos-out", partitions=2)
    assert rep["total_written"] == 1000 and rep["partitions"][0]["next_batch"] == 5, rep


@pytest.mark.parametrize("options, streaming, message", [
    ({"deliveryGuarantee": "exactly-once", "topic": "t"}, False, "needs the option 'jobId'"),
    ({"deliveryGuarantee": "at-most-once", "topic": "t"}, False, "needs the option 'jobId'"),
    ({"deliveryGuarantee": "exactly-once"}, True, "progressTopic"),
    ({"deliveryGuarantee": "at-most-once", "attemptsDir": "/x"}, True, "no longer supported"),
    ({"jobId": "j"}, True, "'jobId' is for batch"),
    ({"sinkId": "s"}, False, "'sinkId' is for streaming"),
    ({"jobId": "has space"}, False, "letters, digits"),
    ({"kafka.transactional.id": "x"}, True, "transactional.id"),
    ({"deliveryGuarantee": "twice"}, False, "deliveryGuarantee"),
])
def test_bad_sink_options_are_refused(options, streaming, message):
    with pytest.raises(HeadraceOptionError, match=message):
        parse_sink_options({**BS, **options}, streaming=streaming)


def test_sink_options_defaults_and_names():
    opts = parse_sink_options({**BS, "deliveryGuarantee": "EXACTLY-ONCE", "topic": "t",
                               "transactionalIdPrefix": "etl", "sinkId": "clicks"},
                              streaming=True)
    assert (opts.guarantee, opts.sink_id, opts.transactional_id_prefix, opts.progress_topic) \
        == ("exactly-once", "clicks", "etl", "t")
    opts = parse_sink_options(BS, streaming=False)
    assert opts.guarantee == "at-least-once" and opts.transactional_id_prefix == \
        "headrace-spark-sink"

