#!/usr/bin/env python3
"""Spark sink throughput per delivery guarantee (issue 16): a Spark batch
job reads N records of S bytes from one topic through the headrace source
and writes them to another topic through the headrace sink, once per
``deliveryGuarantee``; prints records/s per mode and the ratio
exactly-once / at-least-once.

    bench/spark_sink_bench.py [--records 200000] [--size 100] [--partitions 4]
                              [--repeats 2] [--master local[2]] [--broker-set K=V]

Starts its own broker (``python -m headrace.cli broker``, a temporary data
directory) and a SparkSession with the tests' settings. Modes are
interleaved per repeat so machine load hits them alike; a small warm-up job
runs first (JVM, Python workers). Never pass/fail.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

MODES = ("at-least-once", "exactly-once", "at-most-once")


def _session(master: str):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import headrace.spark
    from spark_session import SPARK_CONF

    builder = SparkSession.builder.master(master).appName("spark-sink-bench")
    for key, value in SPARK_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    headrace.spark.register(spark)
    return spark


def _fill(bootstrap: str, topic: str, records: int, size: int, partitions: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                  "acks": "all"})
    pad = b"x" * size
    for i in range(records):
        value = (b"%010d" % i + pad)[:size]
        while True:
            try:
                p.produce(topic, value=value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(120) == 0


def _copy(spark, bootstrap: str, source: str, out: str, mode: str, job_id: str) -> float:
    """One read->write job; returns its wall time in seconds."""
    df = (spark.read.format("headrace").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", source).load().select("key", "value"))
    t0 = time.perf_counter()
    (df.write.format("headrace").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", out).option("deliveryGuarantee", mode).option("jobId", job_id)
     .mode("append").save())
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--broker-set", action="append", default=[],
                    help="broker setting KEY=VALUE (repeatable), e.g. "
                         "headrace.acks.all.fsync=false")
    a = ap.parse_args()

    from broker_process import BrokerProcess
    from spark_session import create_topic

    sets = [arg for kv in a.broker_set for arg in ("--set", kv)]
    broker = BrokerProcess(tempfile.mkdtemp(prefix="spark-sink-bench-"), *sets).start()
    try:
        bs = broker.bootstrap
        create_topic(bs, "bench-in", partitions=a.partitions)
        create_topic(bs, "bench-warm", partitions=a.partitions)
        for mode in MODES:
            create_topic(bs, f"bench-out-{mode}", partitions=a.partitions)
        t0 = time.perf_counter()
        _fill(bs, "bench-in", a.records, a.size, a.partitions)
        print(f"filled {a.records} x {a.size} B in {time.perf_counter() - t0:.1f}s", flush=True)
        spark = _session(a.master)
        _fill(bs, "bench-warm", 1000, a.size, a.partitions)
        for mode in MODES:
            _copy(spark, bs, "bench-warm", "bench-warm", mode, f"warm-{mode}")
        rates: dict[str, list[float]] = {m: [] for m in MODES}
        for r in range(a.repeats):
            for mode in MODES:
                secs = _copy(spark, bs, "bench-in", f"bench-out-{mode}", mode, f"run{r}-{mode}")
                rates[mode].append(a.records / secs)
                print(f"repeat {r} {mode}: {secs:.2f}s {a.records / secs:,.0f} records/s "
                      f"(load {os.getloadavg()[0]:.2f})", flush=True)
        summary = {m: round(statistics.median(v)) for m, v in rates.items()}
        summary["exactly_once_over_at_least_once"] = round(
            summary["exactly-once"] / summary["at-least-once"], 3)
        summary.update(records=a.records, size=a.size, partitions=a.partitions,
                       master=a.master, repeats=a.repeats, broker_set=a.broker_set)
        print(json.dumps(summary))
        spark.stop()
    finally:
        broker.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
