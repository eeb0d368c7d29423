#!/usr/bin/env python3
"""The cost of a running log cleaner on produce latency (docs/performance.md,
"Log compaction"), against one in-process broker (EmbeddedBroker, loopback),
with confluent-kafka (librdkafka).

    bench/compaction_bench.py [--seconds 10] [--rate 2000] [--repeats 3] [--json-out F]

Per repeat, interleaved, two brokers: `log.cleaner.enable=false` and `true`
(one thread, 100 ms backoff, unthrottled). In both, a background producer
rewrites 20,000 keys of 1 KiB random values into a compacted topic
(segment.bytes 4 MiB, min.cleanable.dirty.ratio 0.1) as fast as it can,
while the measured producer sends 1 KiB records at `--rate` msgs/s
(acks=1, linger.ms=0) to an ordinary topic; its delivery latency
(produce() -> delivery report) p50/p99/p99.9 is recorded. With the cleaner
on, the compacted topic's size on disk at the end and the bytes written to
it give how much the cleaner removed while running (MB/s of segments
cleaned = what it rewrote / run time).

Never pass/fail; prints one JSON line per run and a summary table.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from headrace import EmbeddedBroker

KEYS = 20000
VALUE = 1024


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.glob("*.log"))


def run_once(cleaner: bool, seconds: float, rate: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        settings = {"log.cleaner.enable": "true" if cleaner else "false",
                    "log.cleaner.backoff.ms": "100"}
        with EmbeddedBroker(data_dir=d, settings=settings) as broker:
            bs = broker.bootstrap_servers
            admin = AdminClient({"bootstrap.servers": bs})
            fs = admin.create_topics([
                NewTopic("dirty", 1, 1, config={"cleanup.policy": "compact",
                                                 "segment.bytes": str(4 << 20),
                                                 "min.cleanable.dirty.ratio": "0.1"}),
                NewTopic("lat", 1, 1)])
            for f in fs.values():
                f.result(30)
            stop = threading.Event()
            written = [0]

            def fill():
                p = Producer({"bootstrap.servers": bs, "linger.ms": 5, "acks": 1,
                              "batch.size": 1000000})
                i = 0
                while not stop.is_set():
                    try:
                        p.produce("dirty", key=b"k%d" % (i % KEYS), value=os.urandom(VALUE))
                        written[0] += VALUE
                        i += 1
                    except BufferError:
                        p.poll(0.01)
                    if i % 1000 == 0:
                        p.poll(0)
                p.flush(30)

            filler = threading.Thread(target=fill)
            filler.start()
            time.sleep(1.0)  # the filler is at speed (and the cleaner, if on, busy)
            lat = []
            p = Producer({"bootstrap.servers": bs, "linger.ms": 0, "acks": 1})
            payload = os.urandom(VALUE)
            t_start = time.perf_counter()
            n = int(seconds * rate)
            for i in range(n):
                due = t_start + i / rate
                while True:
                    now = time.perf_counter()
                    if now >= due:
                        break
                    p.poll(min(due - now, 0.001))
                t0 = time.perf_counter()
                p.produce("lat", payload,
                          on_delivery=lambda err, m, t0=t0: lat.append(time.perf_counter() - t0))
                p.poll(0)
            p.flush(30)
            stop.set()
            filler.join()
            elapsed = time.perf_counter() - t_start + 1.0
            time.sleep(0.5)
            on_disk = dir_bytes(Path(d) / "dirty-0")
    lat.sort()
    q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))] * 1000  # noqa: E731
    return {"cleaner": cleaner, "sent": n, "delivered": len(lat), "p50_ms": q(0.50),
            "p99_ms": q(0.99), "p999_ms": q(0.999), "dirty_written_mb": written[0] / 1e6,
            "dirty_on_disk_mb": on_disk / 1e6, "seconds": elapsed,
            "removed_mb_per_s": max(0.0, written[0] - on_disk) / 1e6 / elapsed}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    runs = []
    for _ in range(args.repeats):
        for cleaner in (False, True):
            r = run_once(cleaner, args.seconds, args.rate)
            print(json.dumps(r), flush=True)
            runs.append(r)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(runs, indent=1))

    def med(cleaner, key):
        return statistics.median(r[key] for r in runs if r["cleaner"] == cleaner)
    print("\n| cleaner | p50 ms | p99 ms | p99.9 ms | compacted topic written MB | on disk MB | removed MB/s |")
    print("|---|---|---|---|---|---|---|")
    for c in (False, True):
        print(f"| {'on' if c else 'off'} | {med(c, 'p50_ms'):.2f} | {med(c, 'p99_ms'):.2f} | "
              f"{med(c, 'p999_ms'):.2f} | {med(c, 'dirty_written_mb'):.0f} | "
              f"{med(c, 'dirty_on_disk_mb'):.0f} | {med(c, 'removed_mb_per_s'):.1f} |")
    print(f"\np99 ratio on/off: {med(True, 'p99_ms') / med(False, 'p99_ms'):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
