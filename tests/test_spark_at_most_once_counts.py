"""The at-most-once write task's accounting, attempt by attempt, against a
real broker: the task function itself, as a Spark executor's Python worker
runs it (no Spark session), with an attempt whose input fails part-way, an
attempt SIGKILLed with its delivery open, and the retry that finds their
claims. Reported drops equal what a read_committed reader misses."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from headrace.spark.options import parse_sink_options
from headrace.spark.sink_at_most_once import write_at_most_once
from headrace.spark.sink_progress import sink_report
from headrace.spark.sink_rows import SinkColumns
from headrace.spark.sink_tasks import TaskIdentity
from spark_session import create_topic
from spark_sink_check import lost_and_duplicated, read_committed_values

pytestmark = pytest.mark.timeout(120)
ROWS = 500
WANT = [str(i) for i in range(ROWS)]


def _sink(bs: str, topic: str):
    from pyspark.sql.types import StringType, StructField, StructType
    create_topic(bs, topic, partitions=1)
    opts = parse_sink_options({"kafka.bootstrap.servers": bs, "topic": topic,
                               "deliveryGuarantee": "at-most-once", "sinkId": topic},
                              streaming=True)
    return opts, SinkColumns.of(StructType([StructField("value", StringType())]), opts)


def _rows(fail_at: int | None = None):
    from pyspark.sql import Row
    for i in range(ROWS):
        if i == fail_at:
            raise RuntimeError("upstream failed")
        yield Row(value=str(i))


def _outcome(bs: str, topic: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """((lost, duplicated), (reported written, reported dropped))."""
    counts = lost_and_duplicated(WANT, read_committed_values(bs, topic, 1))
    rep = sink_report(bs, topic, topic, 1)
    return counts, (rep["total_written"], rep["total_dropped"])


def test_input_failing_part_way_then_the_retry_counts_the_rest(broker_factory):
    bs = broker_factory(None).bootstrap
    opts, cols = _sink(bs, "amo-fail")
    with pytest.raises(RuntimeError, match="upstream failed"):
        write_at_most_once(opts, cols, _rows(fail_at=300), TaskIdentity("amo-fail", 0, 0, 0, "q"))
    retry = write_at_most_once(opts, cols, _rows(), TaskIdentity("amo-fail", 0, 0, 1, "q"))
    assert (retry.skipped, retry.dropped) == (ROWS, 200)
    assert _outcome(bs, "amo-fail") == ((200, 0), (300, 200))


CRASHING_ATTEMPT = textwrap.dedent("""
    import pathlib, sys, time
    from pyspark.sql import Row
    from headrace.spark.options import parse_sink_options
    from headrace.spark.sink_at_most_once import write_at_most_once
    from headrace.spark.sink_rows import SinkColumns
    from headrace.spark.sink_tasks import TaskIdentity
    from pyspark.sql.types import StringType, StructField, StructType
    bs, topic, flag = sys.argv[1:4]
    opts = parse_sink_options({"kafka.bootstrap.servers": bs, "topic": topic,
                               "deliveryGuarantee": "at-most-once", "sinkId": topic}, True)
    cols = SinkColumns.of(StructType([StructField("value", StringType())]), opts)
    def rows():
        for i in range(500):
            if i == 300:
                pathlib.Path(flag).touch()
                time.sleep(3600)
            yield Row(value=str(i))
    write_at_most_once(opts, cols, rows(), TaskIdentity(topic, 0, 0, 0, "q"))
""")


def test_attempt_killed_with_its_delivery_open_then_the_retry_counts_it(broker_factory,
                                                                       tmp_path):
    bs = broker_factory(None).bootstrap
    opts, cols = _sink(bs, "amo-crash")
    flag = tmp_path / "sending"
    proc = subprocess.Popen([sys.executable, "-c", CRASHING_ATTEMPT, bs, "amo-crash", str(flag)])
    try:
        deadline = time.monotonic() + 60
        while not flag.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "attempt never sent"
            time.sleep(0.05)
        time.sleep(0.5)   # its 300 records reach the broker, in its open transaction
    finally:
        proc.kill()
        proc.wait(10)
    retry = write_at_most_once(opts, cols, _rows(), TaskIdentity("amo-crash", 0, 0, 1, "q"))
    assert (retry.skipped, retry.dropped) == (ROWS, ROWS)
    assert _outcome(bs, "amo-crash") == ((ROWS, 0), (0, ROWS))
