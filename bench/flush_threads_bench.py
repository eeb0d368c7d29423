#!/usr/bin/env python3
"""acks=all produce over several partitions with headrace.flush.threads 1 vs
N: the native load generator against a real `headrace broker` process per
run (tests/broker_process.py), interleaved.

    bench/flush_threads_bench.py [--threads 1,4] [--partitions 4,16] [--repeats 3]
        [--producers 4] [--duration 8] [--size 100] [--rate 0] [--build-dir build/bench]

Each repeat runs every (partitions, threads) pair once, on a fresh broker
and data dir, with `--producers` load-generator producers (one client and
connection each) sending round robin over the topic's partitions with
acks=all (headrace.acks.all.fsync=true: each answer waits for its
partition's fsync); `--rate` caps msgs/s over all producers so that the
figure is latency rather than throughput. Prints one JSON line per run and a summary of medians
(msgs/s, p50/p99 produce latency) with the ratio threads=N / threads=first.
Never pass/fail.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from broker_process import BrokerProcess  # noqa: E402

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def run_once(loadgen: Path, args, partitions: int, threads: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        b = BrokerProcess(d, "--set", f"headrace.flush.threads={threads}").start()
        try:
            admin = AdminClient({"bootstrap.servers": b.bootstrap})
            admin.create_topics([NewTopic("flush", partitions, 1)])["flush"].result(30)
            out = subprocess.run(
                [str(loadgen), "produce", "--bootstrap", b.bootstrap, "--topic", "flush",
                 "--partitions", str(partitions), "--acks", "all", "--size", str(args.size),
                 "--producers", str(args.producers), "--duration", str(args.duration),
                 *(["--rate", str(args.rate)] if args.rate else []),
                 "--json"], check=True, capture_output=True, text=True, timeout=300).stdout
        finally:
            b.stop()
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,4")
    ap.add_argument("--partitions", default="4,16")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--producers", type=int, default=4)
    ap.add_argument("--duration", type=float, default=8)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rate", type=float, default=0,
                    help="target msgs/s over all producers (0 = as fast as possible)")
    ap.add_argument("--build-dir", type=Path, default=REPO / "build" / "bench")
    args = ap.parse_args()
    loadgen = args.build_dir / "bench" / "headrace-loadgen"
    threads = [int(t) for t in args.threads.split(",")]
    parts = [int(p) for p in args.partitions.split(",")]
    runs: dict[tuple[int, int], list[dict]] = {}
    for r in range(args.repeats):
        for p in parts:
            for t in threads:
                res = run_once(loadgen, args, p, t)
                runs.setdefault((p, t), []).append(res)
                print(json.dumps({"repeat": r, "partitions": p, "threads": t, **res,
                                  "load": os.getloadavg()[0]}), flush=True)
    summary = {}
    for (p, t), rs in runs.items():
        med = lambda f: round(statistics.median(f(x["produce"]) for x in rs))  # noqa: E731
        summary[f"p{p}_t{t}"] = {"msgs_per_s": med(lambda x: x["msgs_per_s"]),
                                 "latency_p50_us": med(lambda x: x["latency_us"]["p50"]),
                                 "latency_p99_us": med(lambda x: x["latency_us"]["p99"])}
    for p in parts:
        base = summary[f"p{p}_t{threads[0]}"]
        for t in threads[1:]:
            s = summary[f"p{p}_t{t}"]
            s[f"msgs_per_s_vs_t{threads[0]}"] = round(s["msgs_per_s"] / base["msgs_per_s"], 3)
            s[f"p50_vs_t{threads[0]}"] = round(s["latency_p50_us"] / base["latency_p50_us"], 3)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
