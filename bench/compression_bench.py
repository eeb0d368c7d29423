#!/usr/bin/env python3
"""Produce throughput per codec, and the cost of compression.type (issue 17),
against one `headrace` broker (EmbeddedBroker, loopback) with
`headrace-loadgen` (librdkafka) as the producer.

    bench/compression_bench.py --loadgen build/dev-bench/bench/headrace-loadgen \
        [--size 1024] [--duration 5] [--repeats 2] [--json-out F]

Cases, interleaved per repeat, each on a fresh 1-partition topic:
- producer codec none / gzip / snappy / lz4 / zstd on a topic with
  compression.type=producer (stored as sent: the broker decompresses only to
  validate the records);
- producer none and lz4 on a topic with compression.type=zstd (the broker
  decompresses, validates and re-encodes every batch with zstd).
The loadgen's values are one repeated byte plus an 8-byte send stamp, so
they compress far better than real data: the figures bound the broker's
per-byte cost from below, they are not a compression-ratio study.
Never pass/fail; prints one JSON line per run and a summary table.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid

from confluent_kafka.admin import AdminClient, NewTopic

from headrace import EmbeddedBroker

CASES = [("producer", c) for c in ("none", "gzip", "snappy", "lz4", "zstd")] + \
        [("zstd", "none"), ("zstd", "lz4")]


def create(bs: str, topic: str, target: str) -> None:
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, 1, 1, config={"compression.type": target})])[topic] \
        .result(30)


def run(loadgen: str, bs: str, topic: str, codec: str, size: int, duration: float) -> dict:
    out = subprocess.run(
        [loadgen, "produce", "--bootstrap", bs, "--topic", topic, "--size", str(size),
         "--duration", str(duration), "--acks", "1", "--compression", codec,
         "--broker-pid", str(os.getpid()), "--json"],
        check=True, capture_output=True, text=True, timeout=duration * 10 + 60)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loadgen", required=True)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    results: dict[tuple[str, str], list[dict]] = {c: [] for c in CASES}
    with tempfile.TemporaryDirectory() as d, EmbeddedBroker(data_dir=d) as broker:
        bs = broker.bootstrap_servers
        for r in range(args.repeats):
            for target, codec in CASES:
                topic = f"comp-{target}-{codec}-{uuid.uuid4().hex[:6]}"
                create(bs, topic, target)
                res = run(args.loadgen, bs, topic, codec, args.size, args.duration)
                res.update(repeat=r, target=target, codec=codec, load=os.getloadavg()[0],
                           mb_per_s=res["produce"]["mb_per_s"],
                           p99_us=res["produce"]["latency_us"].get("p99"),
                           errors=res["produce"]["errors"])
                print(json.dumps(res), flush=True)
                results[(target, codec)].append(res)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump([x for v in results.values() for x in v], f, indent=1)
    base = statistics.median(x["mb_per_s"] for x in results[("producer", "none")])
    print(f"\n{'topic compression.type':24} {'producer':9} {'MB/s':>8} {'vs none':>8} "
          f"{'broker CPU s/GB':>16} {'errors':>7}", file=sys.stderr)
    for (target, codec), runs in results.items():
        mbs = statistics.median(x["mb_per_s"] for x in runs)
        cpu = statistics.median(x.get("broker_cpu_s_per_gb", float("nan")) for x in runs)
        errors = sum(x["errors"] for x in runs)
        print(f"{target:24} {codec:9} {mbs:8.1f} {mbs / base:8.2f} {cpu:16.2f} {errors:7d}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
