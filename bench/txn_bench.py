#!/usr/bin/env python3
"""Transaction figures of issue 15 against one `headrace broker` process
(EmbeddedBroker, loopback), with confluent-kafka (librdkafka) on both sides.

    bench/txn_bench.py [--records 200000] [--size 100] [--repeats 3] [--json-out F]
                       [--flush-threads 1,4] [--no-fetch]
                       [--per-txn 100,1000,10000]
                       [--loadgen [BIN]] [--producers 1,4,16] [--duration 4]
                       [--python-clients kafka-python,aiokafka] [--client-records 20000]
                       [--broker-set KEY=VALUE ...]

- produce: the same N records of SIZE bytes to one 4-partition topic,
  interleaved per repeat: an idempotent producer (produce all, flush) vs a
  transactional one committing every N records for each N of --per-txn
  (begin, produce, commit; figures txn_N). Ratio = transactional msgs/s / idempotent msgs/s. Each
  producer connects and delivers one record (the transactional one in a
  committed transaction) before its clock starts, so connection set-up,
  InitProducerId and metadata are outside every figure alike.
- --loadgen: the same three figures from headrace-loadgen (librdkafka's C
  API, no Python per record; on the confluent-kafka wheel's librdkafka, so
  the client library is the same as above) for each count of concurrent
  producers in --producers (each transactional one with its own
  transactional.id), --duration seconds each, warm-up as above, plus the
  broker's CPU seconds per transaction and the commit latency.
- --python-clients: the same produce figures from kafka-python and aiokafka
  (bench/txn_python_clients.py), --client-records records each (they are
  ~20-80x slower per record than librdkafka); figures CLIENT_idempotent and
  CLIENT_txn_N.
- fetch: a topic holding the committed transactions of 1000 records (the
  first N of --per-txn >= 1000, else the last) is read
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
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from headrace import EmbeddedBroker  # noqa: E402

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from suite import peer  # noqa: E402
import txn_python_clients  # noqa: E402

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
    send(p, topic, payload, 0)  # warm-up: connected, producer id, metadata
    if p.flush(60) != 0:
        raise RuntimeError("warm-up record not delivered")
    t0 = time.perf_counter()
    for i in range(n):
        send(p, topic, payload, i % PARTITIONS)
    p.flush(60)
    return n / (time.perf_counter() - t0)


def produce_transactional(bs: str, topic: str, n: int, payload: bytes, per_txn: int) -> float:
    p = Producer({"bootstrap.servers": bs, "transactional.id": f"bench-{uuid.uuid4().hex[:8]}",
                  "linger.ms": 5, "batch.size": 1000000})
    p.init_transactions(60)
    p.begin_transaction()  # warm-up, as produce_idempotent's
    send(p, topic, payload, 0)
    p.commit_transaction(60)
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
    per_txn = per_txn_counts(args)
    fetch_from = next((n for n in per_txn if n >= 1000), per_txn[-1])
    figures = [("idempotent", lambda t: produce_idempotent(bs, t, args.records, payload))]
    figures += [(f"txn_{n}", lambda t, n=n: produce_transactional(bs, t, args.records, payload, n))
                for n in per_txn]
    figures += [(f"{client}_{name}",
                 lambda t, client=client, n=n: txn_python_clients.produce(
                     client, bs, t, args.client_records, payload, PARTITIONS, n))
                for client in python_clients(args)
                for name, n in [("idempotent", None)] + [(f"txn_{n}", n) for n in per_txn]]
    for name, fn in figures:
        t = f"bench-{name}-{r}"
        create(bs, t)
        record(name + suffix, fn(t))
        if name == f"txn_{fetch_from}" and not args.no_fetch:
            for iso in ("read_uncommitted", "read_committed"):
                record(f"fetch_{iso}{suffix}", consume(bs, t, args.records, iso))


def per_txn_counts(args) -> list[int]:
    return [int(x) for x in args.per_txn.split(",") if x]


def python_clients(args) -> list[str]:
    return [c for c in args.python_clients.split(",") if c]


def run_loadgen(bs: str, broker_pid: int, r: int, args, record, suffix: str) -> None:
    """One repeat of the load generator's figures, per producer count."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as libs:
        env["LD_LIBRARY_PATH"] = str(peer.modern_librdkafka_dir(None, Path(libs)))
        for k in (int(x) for x in args.producers.split(",")):
            figures = [("idempotent", ["--pset", "enable.idempotence=true"])]
            figures += [(f"txn_{n}", ["--txn-records", str(n)]) for n in per_txn_counts(args)]
            for name, extra in figures:
                t = f"lg-{name}-{k}-{r}"
                create(bs, t)
                out = subprocess.run(
                    [args.loadgen, "produce", "--bootstrap", bs, "--topic", t,
                     "--partitions", str(PARTITIONS), "--size", str(args.size),
                     "--duration", str(args.duration), "--producers", str(k), "--acks", "all",
                     "--warmup", "--broker-pid", str(broker_pid), "--json", *extra],
                    env=env, capture_output=True, text=True, timeout=args.duration * 10 + 120)
                if out.returncode != 0:
                    raise RuntimeError(f"{name} x{k}: {out.stderr.strip()}")
                rep = json.loads(out.stdout)
                rate = rep["produce"]["msgs_per_s"]
                record(f"loadgen_{name}_x{k}{suffix}", rate)
                if "txn" in rep:
                    txns = rep["txn"]["commit_latency_us"]["count"]
                    record(f"loadgen_{name}_x{k}_broker_cpu_us_per_txn{suffix}",
                           rep["broker_cpu_s"] / txns * 1e6)
                    record(f"loadgen_{name}_x{k}_commit_p50_us{suffix}",
                           rep["txn"]["commit_latency_us"]["p50"])


def ratios(med: dict[str, float], suffix: str, per_txn: list[int],
           clients: list[str]) -> dict[str, float]:
    txn_names = [f"txn_{n}" for n in per_txn]
    out = {}
    for prefix in [""] + [f"{c}_" for c in clients]:
        for name in txn_names:
            out[f"{prefix}{name}_vs_idempotent{suffix}"] = round(
                med[prefix + name + suffix] / med[f"{prefix}idempotent{suffix}"], 3)
    for k in (m.removeprefix("loadgen_idempotent") for m in med
              if m.startswith("loadgen_idempotent_x") and m.endswith(suffix)):
        for name in txn_names:
            out[f"loadgen_{name}_vs_idempotent{k}"] = round(
                med[f"loadgen_{name}{k}"] / med[f"loadgen_idempotent{k}"], 3)
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
    ap.add_argument("--per-txn", default="100,1000,10000",
                    help="records per transaction, comma-separated")
    ap.add_argument("--loadgen", nargs="?", const=str(BENCH.parent / "build/bench/bench/headrace-loadgen"),
                    help="also run headrace-loadgen (default build/bench/bench/headrace-loadgen)")
    ap.add_argument("--producers", default="1,4,16",
                    help="concurrent load generator producers, comma-separated")
    ap.add_argument("--duration", type=float, default=4.0, help="seconds per load generator run")
    ap.add_argument("--broker-set", action="append", default=[], metavar="K=V",
                    help="a broker setting for every broker of the run (repeatable), e.g. "
                         "headrace.acks.all.fsync=false")
    ap.add_argument("--python-clients", default="",
                    help="also kafka-python and/or aiokafka, comma-separated")
    ap.add_argument("--client-records", type=int, default=20000,
                    help="records per figure of --python-clients")
    args = ap.parse_args()
    payload = os.urandom(args.size)
    results: dict[str, list[float]] = {}

    def record(name: str, rate: float) -> None:
        results.setdefault(name, []).append(rate)
        print(json.dumps({"figure": name, "value": round(rate),
                          "load": os.getloadavg()[0]}), flush=True)

    threads = [int(t) for t in args.flush_threads.split(",") if t]
    for r in range(args.repeats):
        for t in threads or [None]:
            settings = dict(kv.split("=", 1) for kv in args.broker_set)
            if t is not None:
                settings["headrace.flush.threads"] = t
            suffix = "" if t is None else f"@t{t}"
            with tempfile.TemporaryDirectory() as d, \
                    EmbeddedBroker(data_dir=d, settings=settings) as broker:
                run_figures(broker.bootstrap_servers, r, args, payload, record, suffix)
                if args.loadgen:
                    # In-process broker: this process is idle while the load generator runs.
                    run_loadgen(broker.bootstrap_servers, os.getpid(), r, args, record, suffix)
    med = {k: statistics.median(v) for k, v in results.items()}
    summary = {
        "records": args.records, "size": args.size, "repeats": args.repeats,
        "broker_set": args.broker_set,
        "medians": {k: round(v) for k, v in med.items()},  # msgs/s, µs or µs of CPU per transaction
    }
    for t in threads or [None]:
        summary.update(ratios(med, "" if t is None else f"@t{t}", per_txn_counts(args),
                              python_clients(args)))
    if len(threads) > 1:
        base = f"@t{threads[0]}"
        for t in threads[1:]:
            for name in ["idempotent"] + [f"txn_{n}" for n in per_txn_counts(args)]:
                summary[f"{name}@t{t}_vs{base}"] = round(med[f"{name}@t{t}"] / med[name + base], 3)
    print(json.dumps(summary, indent=2))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"summary": summary, "raw": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
