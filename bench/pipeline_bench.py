#!/usr/bin/env python3
"""The Spark source at engine speed (issue 30, the reading half): on the
same rows, ``spark.read.format("headrace")`` -> ``sum(length(value))``
against a Parquet scan of those rows -> the same aggregate, and the
source's executor reader alone (Fetch + the C++ decoder into Arrow,
headrace.spark.range_reader.read_range, no Spark), for each record size.

    bench/pipeline_bench.py [--records 1000000] [--sizes 100,1024]
                            [--partitions 4] [--repeats 3] [--master local[2]]
                            [--out bench/results/pipeline-DATE.json]

Starts its own broker (a temporary data directory) and a SparkSession with
the tests' settings except the JVM's (``--jvm-opts``: by default the full
JIT, not the tests' C1-only start-up setting); fills one topic per size with confluent-kafka and
writes the same rows (key, value) to Parquet through Spark. Prints
records/s (median of the repeats), MB/s of values, CPU seconds per million
records of everything the run started (the broker, Spark's JVM and its
Python workers, this process), and the ratio source / Parquet; writes the raw runs as JSON.
Runs are interleaved per repeat so load hits them alike. Never pass/fail.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))


def _cpu() -> float:
    """CPU seconds of this process and its waited-for children so far, plus
    the live JVM's (Spark's local-mode executors run inside it)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    return total + _live_children_cpu()


def _live_children_cpu() -> float:
    """CPU of the still-running descendants (the JVM, Python workers)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    me = os.getpid()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ppid = int(fields[1])
        if ppid == me or _descends(int(stat.parent.name), me):
            total += sum(int(f) for f in fields[11:15]) / ticks  # utime stime cutime cstime
    return total


def _descends(pid: int, ancestor: int) -> bool:
    for _ in range(8):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return False
        pid = int(fields[1])
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


def _timed(fn):
    c0, t0 = _cpu(), time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, _cpu() - c0, out


def _source_sum(spark, bs: str, topic: str):
    from pyspark.sql import functions as F
    df = spark.read.format("headrace").option("kafka.bootstrap.servers", bs) \
        .option("subscribe", topic).load()
    return df.agg(F.sum(F.length("value"))).collect()[0][0]


def _parquet_sum(spark, path: str):
    from pyspark.sql import functions as F
    return spark.read.parquet(path).agg(F.sum(F.length("value"))).collect()[0][0]


def _raw_reader(bs: str, topic: str, partitions: int, records: int) -> int:
    """Every range read by the executor reader in this process, one after
    another (what one Spark task per partition does, without Spark)."""
    from headrace.spark.offsets import OffsetRange
    from headrace.spark.options import parse_source_options
    from headrace.spark.range_reader import read_range
    from headrace.spark.schema import source_schema
    opts = parse_source_options({"kafka.bootstrap.servers": bs, "subscribe": topic}, False)
    per = records // partitions
    total = 0
    for p in range(partitions):
        n = per + (1 if p < records % partitions else 0)
        for batch in read_range(opts, source_schema(False), OffsetRange(topic, p, 0, n)):
            total += batch.num_rows
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--sizes", default="100,1024")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--jvm-opts", default="-XX:+UseSerialGC",
                    help="the driver JVM's options (the tests use -XX:TieredStopAtLevel=1 "
                         "-XX:+UseSerialGC, which stops the JIT at C1: faster start, slower "
                         "per-row work on both sides)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" /
                                         f"pipeline-{datetime.date.today()}.json"))
    a = ap.parse_args()

    from broker_process import BrokerProcess
    import spark_session
    from spark_session import create_topic
    from spark_sink_bench import _fill, _session

    spark_session.SPARK_CONF["spark.driver.extraJavaOptions"] = a.jvm_opts

    tmp = tempfile.mkdtemp(prefix="pipeline-bench-")
    broker = BrokerProcess(os.path.join(tmp, "broker")).start()
    raw_runs, summary = [], {}
    try:
        bs = broker.bootstrap
        spark = _session(a.master)
        sizes = [int(s) for s in a.sizes.split(",")]
        for size in sizes:
            topic = f"bench-{size}"
            create_topic(bs, topic, partitions=a.partitions)
            _fill(bs, topic, a.records, size, a.partitions)
            pq = os.path.join(tmp, f"rows-{size}.parquet")
            spark.read.format("headrace").option("kafka.bootstrap.servers", bs) \
                .option("subscribe", topic).load().select("key", "value") \
                .write.parquet(pq)
            want = _source_sum(spark, bs, topic)   # also the warm-up
            assert _parquet_sum(spark, pq) == want == a.records * size
            runs = {"source": [], "parquet": [], "raw_reader": []}
            for r in range(a.repeats):
                for name, fn in (("source", lambda: _source_sum(spark, bs, topic)),
                                 ("parquet", lambda: _parquet_sum(spark, pq)),
                                 ("raw_reader", lambda: _raw_reader(bs, topic, a.partitions,
                                                                    a.records))):
                    secs, cpu, out = _timed(fn)
                    assert out in (want, a.records), (name, out)
                    run = {"size": size, "what": name, "repeat": r, "seconds": round(secs, 4),
                           "cpu_seconds": round(cpu, 3), "records": a.records,
                           "load": round(os.getloadavg()[0], 2)}
                    raw_runs.append(run)
                    runs[name].append(run)
                    print(f"{size} B {name}: {secs:.2f}s {a.records / secs:,.0f} records/s "
                          f"cpu {cpu:.1f}s (load {run['load']})", flush=True)
            s = {}
            for name, rs in runs.items():
                secs = statistics.median(r["seconds"] for r in rs)
                cpu = statistics.median(r["cpu_seconds"] for r in rs)
                s[name] = {"records_per_s": round(a.records / secs),
                           "value_mb_per_s": round(a.records * size / secs / 1e6, 1),
                           "cpu_s_per_million": round(cpu / a.records * 1e6, 2)}
            s["source_over_parquet"] = round(s["source"]["records_per_s"] /
                                             s["parquet"]["records_per_s"], 3)
            summary[f"{size}B"] = s
        summary.update(records=a.records, partitions=a.partitions, master=a.master,
                       repeats=a.repeats, cores=os.cpu_count(), jvm_opts=a.jvm_opts)
        print(json.dumps(summary, indent=1))
        Path(a.out).write_text(json.dumps({"summary": summary, "runs": raw_runs}, indent=1) + "\n")
        print(f"wrote {a.out}")
        spark.stop()
    finally:
        broker.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
