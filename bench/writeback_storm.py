"""Writeback storm (issue 32): produce and end-to-end latency of one broker
while another process writes, deletes and `sync`s gigabytes on the same
file system, with the appends on the network threads
(headrace.log.writer.threads=0, the path before the log writers) and on the
log writers (4, the default), interleaved in one run.

Per repeat and per mode: a fresh single-node broker on a fresh data dir
(its HTTP listener for /metrics), a topic of 4 partitions, then
headrace-loadgen `both` (4 producers on partitions 0..3, 2 consumers from the
end) at --rate msgs/s of 1 KiB, linger.ms=0, for --duration s, once with
acks=1 and once with acks=all; each load runs twice: quiet, and during the
storm. The storm: a process that writes --storm-gb GB in 1 MiB writes to a
file next to the data dir, deletes it, calls sync(2), and starts again until
the load ends. Reported per run: produce and end-to-end p50/p99/p99.9/max,
the broker's network-thread stall counters from /metrics (stalls, seconds,
longest), the storm's GB written. Raw JSON lines on stdout (and --out), a
summary of medians on stderr.

    python bench/writeback_storm.py --loadgen build/bench/bench/headrace-loadgen \\
        --repeats 2 --out bench/results/writeback-storm-DATE.json
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite.broker import SuiteBroker  # noqa: E402  (adds tests/ to the path)
from broker_process import http_address  # noqa: E402

STALL_RE = re.compile(r"^(headrace_network_thread_stall\w*) (\S+)$", re.M)
PARTITIONS = 4


def start_broker(python: str, data: str, writers: int) -> tuple[SuiteBroker, str]:
    """The broker (bench/suite's, whose stderr a thread drains) and its HTTP
    address."""
    b = SuiteBroker(data, "--set", f"headrace.log.writer.threads={writers}",
                    broker_cmd=f"{python} -m headrace.cli broker").start()
    host, port = http_address(b)
    return b, f"{host}:{port}"


def stall_counters(http: str) -> dict[str, float]:
    with urllib.request.urlopen(f"http://{http}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {k: float(v) for k, v in STALL_RE.findall(text)}


def storm(path: str, gb: float, stop, written) -> None:
    """Writes ``gb`` GB to ``path`` in 1 MiB writes, deletes it, syncs;
    again until ``stop`` is set. Adds each GB written to ``written``."""
    chunk = os.urandom(1 << 20)
    while not stop.is_set():
        with open(path, "wb") as f:
            for _ in range(int(gb * 1024)):
                if stop.is_set():
                    break
                f.write(chunk)
                with written.get_lock():
                    written.value += 1 / 1024
        os.unlink(path)
        os.sync()


def loadgen(binary: str, bootstrap: str, topic: str, pid: int, acks: str, rate: int,
            duration: int) -> dict:
    out = subprocess.run([binary, "both", "--bootstrap", bootstrap, "--topic", topic,
                          "--partitions", str(PARTITIONS), "--producers", str(PARTITIONS),
                          "--consumers", "2", "--size", "1024", "--linger-ms", "0",
                          "--acks", acks, "--rate", str(rate), "--duration", str(duration),
                          "--warmup", "--broker-pid", str(pid), "--json"],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def one_run(python: str, binary: str, writers: int, duration: int, rate: int,
            storm_gb: float, work: str) -> list[dict]:
    data = tempfile.mkdtemp(prefix="storm-broker-", dir=work)
    subprocess.run(["sync"])
    broker, http = start_broker(python, data, writers)
    bootstrap = broker.bootstrap
    rows = []
    try:
        for acks in ("1", "all"):
            for stormy in (False, True):
                topic = f"storm-{acks}-{int(stormy)}"
                subprocess.run([python, "-m", "headrace.cli", "topic", "create", topic,
                                "--brokers", bootstrap, "--partitions", str(PARTITIONS)],
                               check=True, capture_output=True)
                before = stall_counters(http)
                logged = len(broker.stderr)
                stop = multiprocessing.Event()
                written = multiprocessing.Value("d", 0.0)
                writer = multiprocessing.Process(
                    target=storm, args=(os.path.join(work, "storm.bin"), storm_gb, stop,
                                        written)) if stormy else None
                if writer:
                    writer.start()
                    time.sleep(1.0)   # the storm under way before the load starts
                try:
                    r = loadgen(binary, bootstrap, topic, broker.pid, acks, rate, duration)
                finally:
                    if writer:
                        stop.set()
                        writer.join(120)
                after = stall_counters(http)
                row = {**r, "writers": writers, "acks": acks, "storm": stormy,
                       "storm_gb": round(written.value, 2), "load": os.getloadavg()[0],
                       "stalls": {k: after.get(k, 0) - before.get(k, 0)
                                  for k in after if not k.endswith("max_seconds")},
                       "stall_max_seconds": after.get(
                           "headrace_network_thread_stall_max_seconds", 0),
                       "stall_lines": [ln for ln in broker.stderr[logged:].splitlines()
                                       if "stall" in ln][:5]}
                print(json.dumps(row), flush=True)
                rows.append(row)
    finally:
        broker.stop()
        shutil.rmtree(data, ignore_errors=True)
    return rows


def figures(row: dict) -> dict:
    p, e = row["produce"], row.get("consume", {})
    out = {}
    for name, lat in (("produce", p["latency_us"]), ("e2e", e.get("latency_us", {}))):
        for q in ("p50", "p99", "p999", "max"):
            if q in lat:
                out[f"{name}_{q}_ms"] = lat[q] / 1000
    out["stalls"] = row["stalls"].get("headrace_network_thread_stalls_total", 0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loadgen", required=True)
    ap.add_argument("--python", default=sys.executable, help="python whose headrace runs the broker")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--duration", type=int, default=15)
    ap.add_argument("--rate", type=int, default=50000)
    ap.add_argument("--storm-gb", type=float, default=3.0)
    ap.add_argument("--work", default=tempfile.gettempdir(),
                    help="directory on the file system under test (data dirs and the storm file)")
    ap.add_argument("--out", help="also write the JSON lines here")
    opts = ap.parse_args()
    rows: list[dict] = []
    for _ in range(opts.repeats):
        for writers in (0, 4):
            rows += one_run(opts.python, opts.loadgen, writers, opts.duration, opts.rate,
                            opts.storm_gb, opts.work)
    if opts.out:
        with open(opts.out, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    print("summary (medians over repeats):", file=sys.stderr)
    for acks in ("1", "all"):
        for stormy in (False, True):
            for writers in (0, 4):
                sel = [figures(r) for r in rows
                       if r["acks"] == acks and r["storm"] == stormy and r["writers"] == writers]
                med = {k: round(statistics.median(f[k] for f in sel), 2) for k in sel[0]}
                print(f"  acks={acks:3} storm={int(stormy)} writers={writers}: {json.dumps(med)}",
                      file=sys.stderr)


if __name__ == "__main__":
    main()
