#!/usr/bin/env python3
"""What the data-path metrics cost: produce and fetch with
headrace.metrics.enable=true vs false, interleaved (docs/performance.md,
"Metrics overhead").

    bench/metrics_overhead.py [--build-dir build/bench] [--pairs 4] [--duration 4]

Per pair, a fresh broker for each mode (the order alternates between pairs
so drift of the shared machine's load cancels), each running, with
headrace-loadgen against one partition:
  produce      100-byte values, acks=1, linger.ms=5, ~1 MB batches: the
               suite's throughput case (few, large requests);
  produce-req  100-byte values, one record per batch (batch.num.messages=1):
               request-bound, where a per-request cost shows most;
  fetch        the first 2,000,000 of the produce run's records read back
               with at most 64 KiB per partition per fetch (many requests).
Prints per mode the median msgs/s and broker CPU s/GB of each case, and the
on/off ratios.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from broker_process import BrokerProcess  # noqa: E402
from headrace.admin import Admin  # noqa: E402

CASES = ("produce", "produce-req", "fetch")


def loadgen(tool: Path, mode: str, b: BrokerProcess, topic: str, *args: str) -> dict:
    cmd = [str(tool), mode, "--bootstrap", b.bootstrap, "--topic", topic,
           "--broker-pid", str(b.proc.pid), "--json", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    lines = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    if not lines:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    r = lines[-1]
    flow = r["consume" if mode == "consume" else "produce"]
    return {"msgs_per_s": flow["msgs_per_s"], "cpu_s_per_gb": r["broker_cpu_s_per_gb"],
            "errors": flow.get("errors", 0)}


def one_broker(tool: Path, enabled: bool, duration: float, root: Path) -> dict:
    data = Path(tempfile.mkdtemp(prefix="metrics-", dir=root))
    b = BrokerProcess(data, "--http", "", "--set",
                      f"headrace.metrics.enable={'true' if enabled else 'false'}")
    b.start()
    try:
        admin = Admin(b.bootstrap, 60)
        admin.create_topic("t", 1)
        admin.create_topic("req", 1)
        out = {"produce": loadgen(tool, "produce", b, "t", "--size", "100", "--acks", "1",
                                  "--duration", str(duration))}
        out["produce-req"] = loadgen(tool, "produce", b, "req", "--size", "100", "--acks", "1",
                                     "--linger-ms", "0", "--pset", "batch.num.messages=1",
                                     "--duration", str(duration))
        out["fetch"] = loadgen(tool, "consume", b, "t", "--partitions", "1", "--count", "2000000",
                               "--cset", "max.partition.fetch.bytes=65536")
        return out
    finally:
        b.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", type=Path, default=REPO / "build" / "bench")
    p.add_argument("--pairs", type=int, default=4)
    p.add_argument("--duration", type=float, default=4.0)
    p.add_argument("--json-out", type=Path)
    args = p.parse_args()
    tool = args.build_dir / "bench" / "headrace-loadgen"
    runs: dict[bool, list[dict]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="headrace-metrics-bench-") as root:
        for i in range(args.pairs):
            for enabled in ((True, False) if i % 2 == 0 else (False, True)):
                r = one_broker(tool, enabled, args.duration, Path(root))
                runs[enabled].append(r)
                print(f"pair {i} metrics {'on ' if enabled else 'off'}: " + ", ".join(
                    f"{c} {r[c]['msgs_per_s']:,.0f} msgs/s {r[c]['cpu_s_per_gb']:.2f} s/GB"
                    for c in CASES), file=sys.stderr, flush=True)
    print("| case | metrics on msgs/s | off msgs/s | on/off | on CPU s/GB | off CPU s/GB | on/off |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for c in CASES:
        med = {e: (statistics.median(r[c]["msgs_per_s"] for r in runs[e]),
                   statistics.median(r[c]["cpu_s_per_gb"] for r in runs[e])) for e in runs}
        print(f"| {c} | {med[True][0]:,.0f} | {med[False][0]:,.0f} | "
              f"{med[True][0] / med[False][0]:.3f} | {med[True][1]:.2f} | {med[False][1]:.2f} | "
              f"{med[True][1] / med[False][1]:.3f} |")
    if args.json_out:
        args.json_out.write_text(json.dumps({"on": runs[True], "off": runs[False]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
