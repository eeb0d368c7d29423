#!/usr/bin/env python3
"""Runs the standard headrace benchmark suite against real broker processes
and prints markdown tables of medians and ratios (issue 8's targets).

    bench/run_suite.py [--quick] [--repeats N] [--write-doc] [--only fetch,produce]
                       [--broker-cmd CMD] [--build-dir DIR] [--profile DIR]

Needs headrace-loadgen and headrace-reference built (HEADRACE_BUILD_BENCH=ON)
and the headrace package installed. Never pass/fail: exits 0 unless a tool or
the broker crashed. bench/README.md describes each scenario.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

from suite import tables  # noqa: E402
from suite.scenarios import SCENARIOS, Context, Settings  # noqa: E402
from suite.tools import ToolError, Tools  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="everything small (1 repeat, short runs, 1,000 partitions): ~1-2 min")
    p.add_argument("--repeats", type=int, help="repeats per scenario (default 3; quick 1)")
    p.add_argument("--only", default=",".join(SCENARIOS),
                   help=f"comma-separated scenarios (default all: {','.join(SCENARIOS)})")
    p.add_argument("--build-dir", type=Path, default=REPO / "build" / "dev-bench",
                   help="CMake build dir holding bench/headrace-loadgen (default build/dev-bench)")
    p.add_argument("--broker-cmd", help="broker command prefix instead of `headrace broker` "
                   "(--data-dir and --listen are appended)")
    p.add_argument("--broker-arg", action="append", default=[],
                   help="extra broker argument (repeatable), e.g. --broker-arg=--io-threads=2")
    p.add_argument("--data-root", type=Path, help="where broker data dirs go (default a temp dir)")
    p.add_argument("--profile", type=Path, metavar="DIR",
                   help="perf record the broker during the first fetch and produce-100B runs")
    p.add_argument("--json-out", type=Path, help="write the raw results as JSON here")
    p.add_argument("--write-doc", action="store_true",
                   help="write the tables into docs/performance.md between the markers")
    return p.parse_args(argv)


def settings_for(args: argparse.Namespace) -> Settings:
    s = Settings(broker_cmd=args.broker_cmd, broker_args=args.broker_arg,
                 profile_dir=args.profile)
    if args.quick:
        s.repeats, s.duration_s, s.reference_s, s.latency_s = 1, 2.0, 1.0, 2.0
        s.fetch_mb, s.scale_partitions, s.spread_partitions, s.metadata_repeats = 200, 1000, 100, 5
    if args.repeats:
        s.repeats = args.repeats
    return s


def _sh(*cmd: str) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO).stdout.strip()
    except OSError:
        return "?"


def machine_meta(args: argparse.Namespace, s: Settings) -> dict:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    dirty = " (+ local changes)" if _sh("git", "status", "--porcelain", "--", "cpp") else ""
    return {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
            "commit": _sh("git", "rev-parse", "--short", "HEAD") + dirty,
            "cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
            "repeats": s.repeats, "mode": "quick" if args.quick else "full",
            "load_before": "%.2f %.2f %.2f" % os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    s = settings_for(args)
    try:
        tools = Tools.find(args.build_dir)
    except ToolError as e:
        print(f"run_suite: {e}", file=sys.stderr)
        return 2
    data_root = args.data_root or Path(tempfile.mkdtemp(prefix="headrace-bench-"))
    data_root.mkdir(parents=True, exist_ok=True)
    ctx = Context(tools, s, data_root, log=lambda m: print(m, file=sys.stderr, flush=True))
    meta = machine_meta(args, s)
    results: dict = {}
    t0 = time.monotonic()
    code = 0
    for name in [n.strip() for n in args.only.split(",") if n.strip()]:
        ctx.log(f"== {name}")
        try:
            results[name] = SCENARIOS[name](ctx)
        except Exception as e:  # noqa: BLE001 - a crash: report it, keep going
            print(f"run_suite: scenario {name} failed: {type(e).__name__}: {e}", file=sys.stderr)
            code = 1
        if args.json_out:  # after every scenario, so a later crash loses nothing
            args.json_out.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    if args.data_root is None:
        shutil.rmtree(data_root, ignore_errors=True)
    meta["elapsed_s"] = time.monotonic() - t0
    meta["load_after"] = "%.2f %.2f %.2f" % os.getloadavg()
    text = tables.markdown(results, meta)
    print(text)
    if args.json_out:
        args.json_out.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    if args.write_doc:
        tables.write_doc(REPO / "docs" / "performance.md", text)
    return code


if __name__ == "__main__":
    sys.exit(main())
