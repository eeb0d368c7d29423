#!/usr/bin/env python3
"""Transaction figures of issue 15 against one `headrace broker` process
(EmbeddedBroker, loopback), with confluent-kafka (librdkafka) on both sides.

    bench/txn_bench.py [--records 200000] [--size 100] [--repeats 3] [--json-out F]
                       [--flush-threads 1,4] [--no-fetch]

- produce: the same N records of SIZE bytes to one 4-partition topic,
  interleaved per repeat: an idempotent producer (produce all, flush) vs a
  transactional one committing every 100 and every 1000 records (begin,
  produce, commit). Ratio = transactional msgs/s / idempotent msgs/s.
- fetch: a topic holding the committed transactions of 1000 records is read
  from the start by an assign()ed consumer with isolation.level
  read_uncommitted and read_committed; msgs/s of each and their ratio.
- --flush-threads 1,4: each repeat runs every figure once per value of
  headrace.flush.threads, on a fresh broker each (same build, interleaved);
  figures are then named FIGURE@tN and the ratios are given per value and
  between values. Without it: one broker with the default settings.

Never pass/fail; prints one JSON line per figure and a summary.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from headrace import EmbeddedBroker  # noqa: E402

PARTITIONS = 4


def create(bs: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)


def send(p: Producer, topic: str, payload: bytes, partition: int) -> None:
    """produce(), waiting for room in the client's queue."""
    while True:
        try:
            p.produce(topic, payload, partition=partition)
            return
        except BufferError:
            p.poll(0.01)


def produce_idempotent(bs: str, topic: str, n: int, payload: bytes) -> float:
    p = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "linger.ms": 5,
                  "batch.size": 1000000})
    t0 = time.perf_counter()
    for i in range(n):
        send(p, topic, payload, i % PARTITIONS)
    p.flush(60)
    return n / (time.perf_counter() - t0)


def produce_transactional(bs: str, topic: str, n: int, payload: bytes, per_txn: int) -> float:
    p = Producer({"bootstrap.servers": bs, "transactional.id": f"bench-{uuid.uuid4().hex[:8]}",
                  "linger.ms": 5, "batch.size": 1000000})
    p.init_transactions(60)
    t0 = time.perf_counter()
    i = 0
    while i < n:
        p.begin_transaction()
        for _ in range(min(per_txn, n - i)):
            send(p, topic, payload, i % PARTITIONS)
            i += 1
        p.commit_transaction(60)
    return n / (time.perf_counter() - t0)


def consume(bs: str, topic: str, n: int, isolation: str) -> float:
    c = Consumer({"bootstrap.servers": bs, "group.id": "bench", "isolation.level": isolation,
                  "enable.auto.commit": False, "fetch.max.bytes": 52428800})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = 0
    t0 = time.perf_counter()
    while got < n:
        msgs = c.consume(10000, 1.0)
        got += sum(1 for m in msgs if m.error() is None)
    rate = n / (time.perf_counter() - t0)
    c.close()
    return rate


def run_figures(bs: str, r: int, args, payload: bytes, record, suffix: str) -> None:
    """One repeat of every figure against the broker at `bs`."""
    for name, fn in (("idempotent", lambda t: produce_idempotent(bs, t, args.records, payload)),
                     ("txn_100", lambda t: produce_transactional(bs, t, args.records, payload, 100)),
                     ("txn_1000", lambda t: produce_transactional(bs, t, args.records, payload, 1000))):
        t = f"bench-{name}-{r}"
        create(bs, t)
        record(name + suffix, fn(t))
        if name == "txn_1000" and not args.no_fetch:
            for iso in ("read_uncommitted", "read_committed"):
                record(f"fetch_{iso}{suffix}", consume(bs, t, args.records, iso))


def ratios(med: dict[str, float], suffix: str) -> dict[str, float]:
    out = {
        "txn_100_vs_idempotent" + suffix: round(med["txn_100" + suffix] / med["idempotent" + suffix], 3),
        "txn_1000_vs_idempotent" + suffix: round(med["txn_1000" + suffix] / med["idempotent" + suffix], 3),
    }
    if "fetch_read_committed" + suffix in med:
        out["read_committed_vs_uncommitted" + suffix] = round(
            med["fetch_read_committed" + suffix] / med["fetch_read_uncommitted" + suffix], 3)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json-out")
    ap.add_argument("--flush-threads", default="",
                    help="comma-separated headrace.flush.threads values, one broker each")
    ap.add_argument("--no-fetch", action="store_true", help="skip the consumer figures")
    args = ap.parse_args()
    payload = os.urandom(args.size)
    results: dict[str, list[float]] = {}

    def record(name: str, rate: float) -> None:
        results.setdefault(name, []).append(rate)
        print(json.dumps({"figure": name, "msgs_per_s": round(rate),
                          "load": os.getloadavg()[0]}), flush=True)

    threads = [int(t) for t in args.flush_threads.split(",") if t]
    for r in range(args.repeats):
        for t in threads or [None]:
            settings = {} if t is None else {"headrace.flush.threads": t}
            suffix = "" if t is None else f"@t{t}"
            with tempfile.TemporaryDirectory() as d, \
                    EmbeddedBroker(data_dir=d, settings=settings) as broker:
                run_figures(broker.bootstrap_servers, r, args, payload, record, suffix)
    med = {k: statistics.median(v) for k, v in results.items()}
    summary = {
        "records": args.records, "size": args.size, "repeats": args.repeats,
        "median_msgs_per_s": {k: round(v) for k, v in med.items()},
    }
    for t in threads or [None]:
        summary.update(ratios(med, "" if t is None else f"@t{t}"))
    if len(threads) > 1:
        base = f"@t{threads[0]}"
        for t in threads[1:]:
            for name in ("idempotent", "txn_100", "txn_1000"):
                summary[f"{name}@t{t}_vs{base}"] = round(med[f"{name}@t{t}"] / med[name + base], 3)
    print(json.dumps(summary, indent=2))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"summary": summary, "raw": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
