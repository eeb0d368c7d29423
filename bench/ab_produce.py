"""A/B of two broker builds on the produce path, interleaved in one run.

Each build is a Python interpreter whose `headrace` package runs the broker
(e.g. the system install of main vs a worktree's venv). Per repeat and per
build: a fresh single-node broker on a fresh data dir, a 1-partition topic,
then headrace-loadgen
  - throughput: 1 KiB, linger.ms=5, batch.size=1000000, acks=1 and acks=all,
    --duration s each (MB/s, broker CPU s/GB);
  - latency: 1 KiB at --rate msgs/s, linger.ms=0, acks=1 (produce p50/p99).
Prints one JSON line per run and a summary (medians per build and case).

    python bench/ab_produce.py --loadgen build/bench/bench/headrace-loadgen \\
        --a /usr/bin/python3 --b .venv/bin/python --repeats 3
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite.broker import SuiteBroker  # noqa: E402



def start_broker(python: str, data: str) -> SuiteBroker:
    """The broker of build `python` (bench/suite's: a thread drains its
    stderr, so its log lines never block it)."""
    return SuiteBroker(data, broker_cmd=f"{python} -m headrace.cli broker").start()


def create_topic(python: str, bootstrap: str, topic: str) -> None:
    subprocess.run([python, "-m", "headrace.cli", "topic", "create", topic, "--brokers",
                    bootstrap, "--partitions", "1"], check=True, capture_output=True)


def loadgen(binary: str, bootstrap: str, topic: str, pid: int, *args: str) -> dict:
    out = subprocess.run([binary, "produce", "--bootstrap", bootstrap, "--topic", topic,
                          "--size", "1024", "--broker-pid", str(pid), "--json", *args],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def one_run(build: str, python: str, binary: str, duration: int, rate: int) -> list[dict]:
    data = tempfile.mkdtemp(prefix="ab-produce-")
    subprocess.run(["sync"])
    broker = start_broker(python, data)
    bootstrap = broker.bootstrap
    rows = []
    try:
        for case, args in [
            ("acks1", ["--acks", "1", "--duration", str(duration)]),
            ("acksall", ["--acks", "all", "--duration", str(duration)]),
            ("latency", ["--acks", "1", "--linger-ms", "0", "--rate", str(rate),
                         "--duration", str(duration)]),
        ]:
            topic = f"ab-{case}"
            create_topic(python, bootstrap, topic)
            r = loadgen(binary, bootstrap, topic, broker.pid, "--warmup", *args)
            row = {"build": build, "case": case, "load": os.getloadavg()[0], **r}
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        broker.stop()
        shutil.rmtree(data, ignore_errors=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loadgen", required=True)
    ap.add_argument("--a", required=True, help="python of build A")
    ap.add_argument("--b", required=True, help="python of build B")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--duration", type=int, default=6)
    ap.add_argument("--rate", type=int, default=20000)
    opts = ap.parse_args()
    rows: list[dict] = []
    for _ in range(opts.repeats):
        for build, python in (("A", opts.a), ("B", opts.b)):
            rows += one_run(build, python, opts.loadgen, opts.duration, opts.rate)
    print("summary (medians):", file=sys.stderr)
    for case in ("acks1", "acksall", "latency"):
        for build in ("A", "B"):
            sel = [r for r in rows if r["case"] == case and r["build"] == build]
            def fig(r: dict) -> dict:
                p = r["produce"]
                return {"mb_per_s": p["mb_per_s"], "broker_cpu_s_per_gb": r["broker_cpu_s_per_gb"],
                        "p50_us": p["latency_us"]["p50"], "p99_us": p["latency_us"]["p99"]}
            figs = [fig(r) for r in sel]
            med = {k: round(statistics.median(f[k] for f in figs), 3) for k in figs[0]}
            print(f"  {case:8} {build}: {json.dumps(med)}", file=sys.stderr)


if __name__ == "__main__":
    main()
