#!/usr/bin/env python3
"""Storm components at the multi-lang transport's limit (issue 30 item 4):
records/s and CPU per tuple of KafkaSpout and KafkaBolt beside a no-op
streamparse spout and bolt (bench/storm_noop.py) speaking the same protocol
through the same channel and serializer (JSON), in one run.

    bench/storm_bench.py [--records 100000] [--size 100] [--partitions 4]
                         [--per-next 1,100] [--max-pending 1000] [--repeats 1]
                         [--only spout,bolt] [--guarantees at_most_once,...]
                         [--spout-set max_poll_records=2000] [--json out.json]

Storm's side is the tests' player of ShellSpout / ShellBolt / the acker
(tests/storm_multilang.py, tests/storm_harness.py), in this process.
Spout runs: the executor steps (``next`` below topology.max.spout.pending)
and acks every tracked tuple at once (one ``ack`` command each, as
ShellSpout sends them); timed from the first tuple to the last.
Bolt runs: all tuples written asynchronously as ShellBolt does, timed from
the first write to the last ack. CPU: the component process's utime+stime
(/proc, librdkafka threads included) and this process's (the Storm side).
Starts its own broker in a temporary directory. Never pass/fail.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
# The no-op components are imported by streamparse_run in the child processes.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(REPO / "bench"), os.environ.get("PYTHONPATH")) if p)

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from broker_process import GROUP_ARGS, BrokerProcess  # noqa: E402
from headrace.admin import Admin  # noqa: E402
from storm_harness import BoltTask, SpoutExecutor, SpoutTask  # noqa: E402
from storm_multilang import ShellProcess, base_conf, context  # noqa: E402

FIELDS = ["topic", "partition", "offset", "key", "message", "from_offset"]
SPOUT_FIELDS = ["topic", "partition", "offset", "key", "value", "from_offset"]
TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """utime + stime of a process, seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def fill(bootstrap: str, topic: str, records: int, size: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    pad = b"x" * size
    for i in range(records):
        value = (b"%010d" % i + pad)[:size]
        while True:
            try:
                p.produce(topic, value=value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(60) == 0


class Run:
    def __init__(self, name: str, workdir: Path):
        self.name, self.workdir = name, workdir

    def result(self, n: int, wall: float, comp_cpu: float, harness_cpu: float) -> dict:
        return {"run": self.name, "tuples": n, "seconds": round(wall, 3),
                "tuples_per_s": round(n / wall), "component_cpu_us_per_tuple":
                round(comp_cpu / n * 1e6, 2), "storm_side_cpu_us_per_tuple":
                round(harness_cpu / n * 1e6, 2)}


def spout_run(name: str, target: str, conf: dict, n: int, workdir: Path) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    proc = ShellProcess(target, conf, context("spout", 1, SPOUT_FIELDS), workdir).launch()
    ex = SpoutExecutor(SpoutTask(proc))
    task = ex.task
    try:
        # Warm-up: until the first tuple (group join, first fetch).
        deadline = time.monotonic() + 60
        while not task.emits and time.monotonic() < deadline:
            for t in ex.step():
                ex.ack(t)
        assert task.emits, f"{name}: no tuple within 60 s\n{proc.stderr}"
        base = len(task.emits)
        t0, c0, h0 = time.monotonic(), proc_cpu(proc.pid), time.process_time()
        while len(task.emits) - base < n:
            for t in ex.step():
                ex.ack(t)
            if time.monotonic() - t0 > 600:
                raise AssertionError(f"{name}: {len(task.emits) - base} of {n} in 600 s")
        wall = time.monotonic() - t0
        got = len(task.emits) - base
        res = Run(name, workdir).result(got, wall, proc_cpu(proc.pid) - c0,
                                        time.process_time() - h0)
        task.emits.clear()
        return res
    finally:
        proc.kill()


def bolt_run(name: str, target: str, conf: dict, tuples: list[list], workdir: Path) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    proc = ShellProcess(target, conf, context("bolt", 5, [], sources={"spout": FIELDS}),
                        workdir).launch()
    bolt = BoltTask(proc)
    try:
        n = len(tuples)
        t0, c0, h0 = time.monotonic(), proc_cpu(proc.pid), time.process_time()
        for values in tuples:
            bolt.send_tuple(values)
        bolt.wait_for(lambda: len(bolt.acked) + len(bolt.failed) >= n, 600, f"{n} acks")
        wall = time.monotonic() - t0
        res = Run(name, workdir).result(n, wall, proc_cpu(proc.pid) - c0,
                                        time.process_time() - h0)
        assert not bolt.failed and not bolt.violations, (bolt.failed[:3], bolt.violations[:3])
        return res
    finally:
        bolt.close()


def commit_start(bootstrap: str, group: str, topic: str, partitions: int) -> None:
    """The exactly-once spout's start commit, made here for the bolt-only run."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.commit(offsets=[TopicPartition(topic, p, 0) for p in range(partitions)],
             asynchronous=False)
    c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--per-next", default="1",
                    help="comma-separated tuples per next (KafkaSpout headrace.emit_batch)")
    ap.add_argument("--max-pending", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--only", default="spout,bolt")
    ap.add_argument("--guarantees", default="at_most_once,at_least_once,exactly_once")
    ap.add_argument("--spout-set", action="append", default=[], metavar="KEY=VALUE",
                    help="extra headrace.KEY of the KafkaSpout runs (JSON or text value)")
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()
    per_next = [int(x) for x in args.per_next.split(",")]
    spout_extra = {}
    for kv in args.spout_set:
        key, _, raw = kv.partition("=")
        try:
            spout_extra[f"headrace.{key}"] = json.loads(raw)
        except ValueError:
            spout_extra[f"headrace.{key}"] = raw
    tmp = Path(tempfile.mkdtemp(prefix="storm-bench-"))
    broker = BrokerProcess(tmp / "broker", *GROUP_ARGS).start()
    bs = broker.bootstrap
    results: list[dict] = []
    try:
        src, out = "bench-src", "bench-out"
        Admin(bs).create_topic(src, args.partitions)
        Admin(bs).create_topic(out, args.partitions)
        # Enough records for every spout run: each run reads with its own group.
        fill(bs, src, args.records + 20_000, args.size, args.partitions)
        common = {"topology.max.spout.pending": args.max_pending,
                  "pystorm.log.level": "warning"}
        k = 0
        for rep in range(args.repeats):
            if "spout" in args.only:
                for b in per_next:
                    for tracked in (False, True):
                        conf = base_conf(**common, **{"bench.tracked": tracked,
                                                      "bench.per_next": b,
                                                      "bench.value_size": args.size})
                        name = f"noop-spout {'tracked' if tracked else 'untracked'} x{b}"
                        results.append(spout_run(name, "storm_noop.NoopSpout", conf,
                                                 args.records, tmp / f"r{k}"))
                        k += 1
                        print(json.dumps(results[-1]), flush=True)
                    for g in args.guarantees.split(","):
                        extra = {"headrace.emit_batch": b} if b != 1 else {}
                        extra.update(spout_extra)
                        conf = base_conf(**common, **{
                            "headrace.brokers": bs, "headrace.topics": src,
                            "headrace.group": f"g-{rep}-{k}", "headrace.guarantee": g,
                            **extra})
                        results.append(spout_run(f"KafkaSpout {g} x{b}",
                                                 "headrace.storm.KafkaSpout", conf,
                                                 args.records, tmp / f"r{k}"))
                        k += 1
                        print(json.dumps(results[-1]), flush=True)
            if "bolt" in args.only:
                value = "x" * args.size
                tuples = [[src, i % args.partitions, i // args.partitions, None, value,
                           i // args.partitions] for i in range(args.records)]
                conf = base_conf(**common)
                results.append(bolt_run("noop-bolt", "storm_noop.NoopBolt", conf, tuples,
                                        tmp / f"r{k}"))
                k += 1
                print(json.dumps(results[-1]), flush=True)
                conf = base_conf(**common, **{"headrace.brokers": bs, "headrace.topic": out})
                results.append(bolt_run("KafkaBolt at_least_once", "headrace.storm.KafkaBolt",
                                        conf, tuples, tmp / f"r{k}"))
                k += 1
                print(json.dumps(results[-1]), flush=True)
                group = f"txn-src-{rep}"
                commit_start(bs, group, src, args.partitions)
                conf = base_conf(**common, **{"headrace.brokers": bs, "headrace.topic": out,
                                              "headrace.transactional": True,
                                              "headrace.source_group": group})
                results.append(bolt_run("KafkaBolt transactional", "headrace.storm.KafkaBolt",
                                        conf, tuples, tmp / f"r{k}"))
                k += 1
                print(json.dumps(results[-1]), flush=True)
    finally:
        broker.stop()
    summary = ratios(results)
    for line in summary:
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results,
                                               "ratios": summary}, indent=1))


def ratios(results: list[dict]) -> list[str]:
    """Each component's median records/s over its ceiling's (same tuples per next)."""
    med: dict[str, float] = {}
    for name in {r["run"] for r in results}:
        med[name] = statistics.median(r["tuples_per_s"] for r in results if r["run"] == name)
    out = []
    for name, v in sorted(med.items()):
        if name.startswith("KafkaSpout"):
            g, b = name.split()[1:]
            ceil = med.get(f"noop-spout {'untracked' if g == 'at_most_once' else 'tracked'} {b}")
        elif name.startswith("KafkaBolt"):
            ceil = med.get("noop-bolt")
        else:
            continue
        if ceil:
            out.append(f"{name}: {v:.0f}/s = {v / ceil:.2f} of its ceiling ({ceil:.0f}/s)")
    return out


if __name__ == "__main__":
    main()
