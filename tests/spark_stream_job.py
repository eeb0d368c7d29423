"""A streaming job run as its own process by the Spark sink fault tests
(tests/spark_kill_harness.py kills it with SIGKILL and restarts it).

Queries read the same input topic from one SparkSession, each with its own
checkpoint under WORK:
- ``idem``: foreachBatch into files keyed by batch id (idempotent sink);
- ``alo``, ``amo``, ``eos``: the headrace sink with deliveryGuarantee
  at-least-once, at-most-once, exactly-once into topic OUT-<name>.

``run`` keeps going (processing-time trigger) until killed; ``finish`` runs
with Trigger.AvailableNow and exits 0 once every query is done; ``batch``
writes the whole input once per query with a batch read and write, both
with ``jobId`` ``<sink-id or OUT_PREFIX>-<name>``, and exits 0.

Options: ``--master URL`` (default local[2]; give a cluster's URL to run the
same job there), ``--queries idem,alo,amo,eos`` (which to run),
``--fail-first-attempts`` (a UDF fails the first attempt of some tasks
part-way through their rows; needs a master that retries tasks, e.g.
local[2,4]), ``--crash-first-attempts`` (the same tasks' Python worker
exits instead; given both flags, even batches raise and odd ones exit, so
one job shows both faults), ``--amo-fails-after-claim`` (in the ``amo`` query those
failures, or the ``--hold-at`` hold 400 rows in, wait until the
at-most-once sink has claimed the task's (batch, partition), so they cost
it records; the sink must get rows before the task ends: see
tests/test_spark_sink_faults.py, ``EARLY_ROWS``),
``--slow-partition-0 SECONDS`` (the first attempt of partition
0 of every batch waits at every 100th row, up to that long, until Spark has
launched a speculative copy of it: the two then race), ``--min-partitions N``
(the source's minPartitions), ``--sink-id ID`` (the sinks' sinkId),
``--hold-at BATCH:PARTITION`` (the first attempt of that Spark partition of
that micro-batch stops at its first row, leaves ``held-<query id>`` in
WORK/faults and waits to be killed: a deterministic moment mid-batch).

Usage: python spark_stream_job.py run|finish BOOTSTRAP INPUT_TOPIC OUT_PREFIX WORK
       MAX_PER_TRIGGER [--master URL] [--queries ...] [--fail-first-attempts]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_session import SPARK_CONF, write_json_atomically  # noqa: E402

GUARANTEES = {"alo": "at-least-once", "amo": "at-most-once", "eos": "exactly-once"}


def _session(master: str, extra: dict):
    """A SparkSession on ``master`` with the tests' settings plus ``extra``."""
    import os
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import headrace.spark

    builder = SparkSession.builder.master(master).appName("headrace-stream-job")
    for key, value in {**SPARK_CONF, **extra}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    headrace.spark.register(spark)
    return spark


def _file_sink(out: Path):
    out.mkdir(parents=True, exist_ok=True)

    def sink(df, batch_id):
        write_json_atomically(out / f"{batch_id}.json", [r.value.decode() for r in df.collect()])
    return sink


def _started(writer, timeout: float = 60.0):
    """Starts a query and waits until its sources are initialised. Staggering
    the starts keeps Spark from spawning every query's Python planner
    processes at once: on a loaded 2-core machine a burst of them can miss
    Spark's fixed 10 s connect-back timeout for a new Python worker."""
    query = writer.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and query.isActive \
            and query.status["message"].startswith("Initializing"):
        time.sleep(0.1)
    return query


def _fault_udf(fail_first: bool, slow_s: float, record_dir: Path, crash: bool = False,
               claims: tuple[str, str] | None = None, raise_: bool = False):
    """value -> value, failing or sleeping in first attempts (see module doc).
    A failure raises, or with ``crash`` exits the Python worker; with both
    ``crash`` and ``raise_`` even batches raise and odd batches exit.
    Each injected failure and each attempt of a slowed partition leaves a
    file in ``record_dir`` (the tests count them). With ``claims``
    (bootstrap, progress topic) of an at-most-once sink, a first attempt
    about to fail first waits until the sink has claimed its (batch,
    partition), so that the failure costs that sink records."""
    from pyspark.sql.functions import udf
    record_dir.mkdir(parents=True, exist_ok=True)
    where = str(record_dir)

    def inject(value: bytes) -> bytes:
        from pyspark import TaskContext
        ctx = TaskContext.get()
        if ctx.attemptNumber() == 0:
            batch = int(ctx.getLocalProperty("streaming.sql.batchId") or 0)
            # Partition (batch % 2) of every batch fails at its value 2k+p
            # with k % 500 == 400: with 500 rows per partition and batch
            # (the tests' layout), 400 rows into the task.
            if fail_first and ctx.partitionId() == batch % 2 and (int(value) // 2) % 500 == 400:
                if claims and _wait_for_claim(claims, ctx, batch):
                    _touch(where, f"claimed-{ctx.taskAttemptId()}")
                _touch(where, f"failed-{ctx.taskAttemptId()}")
                if crash and (not raise_ or batch % 2):
                    import os
                    os._exit(1)   # the Python worker dies mid-task
                raise RuntimeError(f"injected failure: batch {batch} partition "
                                   f"{ctx.partitionId()} at {value!r}")
            if slow_s and ctx.partitionId() == 0 and value.endswith(b"00"):
                _wait_for_copy(where, ctx.stageId(), slow_s)
        if slow_s and ctx.partitionId() == 0:
            _touch(where, f"attempt-{ctx.stageId()}-{ctx.attemptNumber()}")
        return value
    return udf(inject, "binary")


def _hold_udf(batch: int, partition: int, record_dir: Path,
              claims: tuple[str, str] | None = None):
    """value -> value; holds the first attempt of (batch, partition) at its
    first row after leaving ``held-<query id>`` in ``record_dir`` (see
    module doc). With ``claims`` (an at-most-once sink, see ``_fault_udf``)
    it holds at the row 400 rows into the task instead, once the sink has
    claimed the task's (batch, partition): the sink is then mid-delivery."""
    from pyspark.sql.functions import udf
    record_dir.mkdir(parents=True, exist_ok=True)
    where = str(record_dir)

    def hold(value: bytes) -> bytes:
        from pyspark import TaskContext
        ctx = TaskContext.get()
        if ctx.attemptNumber() == 0 and ctx.partitionId() == partition \
                and int(ctx.getLocalProperty("streaming.sql.batchId") or 0) == batch:
            if claims:
                if (int(value) // 2) % 500 != 400:
                    return value
                if not _wait_for_claim(claims, ctx, batch):
                    raise RuntimeError("the at-most-once sink never claimed")
            _touch(where, f"held-{ctx.getLocalProperty('sql.streaming.queryId') or 'batch'}")
            time.sleep(3600)
        return value
    return udf(hold, "binary")


def _wait_for_claim(claims: tuple[str, str], ctx, batch: int, limit_s: float = 30.0) -> bool:
    """Waits until the at-most-once sink of this task's query has claimed
    (batch, this partition): its progress group (default prefix, sinkId =
    the query id) holds offset batch + 1. The sink claims at its first row,
    which it has only if Spark passed it rows before this one (small
    spark.buffer.size and spark.sql.execution.arrow.maxRecordsPerBatch).
    False if that did not happen within ``limit_s``."""
    from confluent_kafka import Consumer, TopicPartition
    bootstrap, topic = claims
    group = f"headrace-spark-sink-{ctx.getLocalProperty('sql.streaming.queryId')}-" \
            f"{ctx.partitionId()}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            tp, = consumer.committed([TopicPartition(topic, 0)], timeout=10)
            if tp.offset > batch:
                return True
            time.sleep(0.05)
        return False
    finally:
        consumer.close()


def _wait_for_copy(where: str, stage: int, limit_s: float) -> None:
    """Holds a first attempt until Spark launched a speculative copy of it
    (the copy's first row leaves attempt-<stage>-1) or for ``limit_s``: the
    two attempts then race through the rest of their rows."""
    import os
    copy = os.path.join(where, f"attempt-{stage}-1")
    deadline = time.monotonic() + limit_s
    while not os.path.exists(copy) and time.monotonic() < deadline:
        time.sleep(0.05)


def _touch(where: str, name: str) -> None:
    import os
    open(os.path.join(where, name), "a").close()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    for name in ("mode", "bootstrap", "topic", "out_prefix", "work", "limit"):
        ap.add_argument(name)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--queries", default="idem,alo,amo")
    ap.add_argument("--fail-first-attempts", action="store_true")
    ap.add_argument("--crash-first-attempts", action="store_true")
    ap.add_argument("--amo-fails-after-claim", action="store_true")
    ap.add_argument("--slow-partition-0", type=float, default=0.0)
    ap.add_argument("--conf", action="append", default=[], help="extra Spark conf KEY=VALUE")
    ap.add_argument("--min-partitions", type=int, default=0)
    ap.add_argument("--sink-id", default="")
    ap.add_argument("--hold-at", default="", help="BATCH:PARTITION")
    a = ap.parse_args(argv)
    spark = _session(a.master, dict(c.split("=", 1) for c in a.conf))
    work_dir = Path(a.work)
    trigger = {"availableNow": True} if a.mode == "finish" else \
        {"processingTime": "500 milliseconds"}
    fail = a.fail_first_attempts or a.crash_first_attempts
    faults = fail or a.slow_partition_0 > 0

    def injector(name: str = ""):
        claims = (a.bootstrap, f"{a.out_prefix}-amo") \
            if name == "amo" and a.amo_fails_after_claim else None
        if a.hold_at:
            batch, part = (int(x) for x in a.hold_at.split(":"))
            return _hold_udf(batch, part, work_dir / "faults", claims)
        if not faults:
            return None
        return _fault_udf(fail, a.slow_partition_0, work_dir / "faults",
                          a.crash_first_attempts, claims, a.fail_first_attempts)
    inject = injector()

    def source(name: str = ""):
        inject = injector(name)
        r = (spark.readStream.format("headrace").option("kafka.bootstrap.servers", a.bootstrap)
             .option("subscribe", a.topic).option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", a.limit))
        if a.min_partitions:
            r = r.option("minPartitions", a.min_partitions)
        df = r.load()
        return df.select("key", inject("value").alias("value")) if inject else df

    if a.mode == "batch":
        return _batch(spark, a, inject)
    queries = []
    for name in a.queries.split(","):
        if name == "idem":
            w = source().writeStream.foreachBatch(_file_sink(work_dir / "idem"))
        else:
            w = (source(name).select("key", "value").writeStream.format("headrace")
                 .option("kafka.bootstrap.servers", a.bootstrap)
                 .option("topic", f"{a.out_prefix}-{name}")
                 .option("deliveryGuarantee", GUARANTEES[name]))
            if a.sink_id:
                w = w.option("sinkId", f"{a.sink_id}-{name}")
        queries.append(_started(w.option("checkpointLocation", str(work_dir / f"ck-{name}"))
                                .trigger(**trigger).queryName(name)))
    print("job: queries started", flush=True)
    if a.mode != "finish":
        spark.streams.awaitAnyTermination()
        return 1   # a run-mode query ended by itself: that is a failure
    failed = 0
    for q in queries:
        try:
            q.awaitTermination()
        except Exception as e:   # StreamingQueryException
            print(f"job: query {q.name} failed: {e}", file=sys.stderr, flush=True)
            failed += 1
    print(f"job: finished, {failed} failed", flush=True)
    return 1 if failed else 0


def _batch(spark, a, inject) -> int:
    """Batch mode: each sink query reads the input and writes it, keyed by jobId."""
    for name in a.queries.split(","):
        job_id = f"{a.sink_id or a.out_prefix}-{name}"
        r = (spark.read.format("headrace").option("kafka.bootstrap.servers", a.bootstrap)
             .option("subscribe", a.topic).option("jobId", job_id))
        if a.min_partitions:
            r = r.option("minPartitions", a.min_partitions)
        df = r.load()
        df = df.select("key", inject("value").alias("value")) if inject else df
        (df.select("key", "value").write.format("headrace")
         .option("kafka.bootstrap.servers", a.bootstrap)
         .option("topic", f"{a.out_prefix}-{name}").option("jobId", job_id)
         .option("deliveryGuarantee", GUARANTEES[name]).mode("append").save())
    print("job: batch written", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
