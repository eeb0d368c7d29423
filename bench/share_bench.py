#!/usr/bin/env python3
"""Share groups against a classic consumer group on one partition (issue 31).

Starts a broker, produces --msgs records of --value-size bytes to a
1-partition topic, then reads them all, each run with a new group:
  - `classic`: one confluent-kafka Consumer of a classic group (commits
    every 10,000 records, as a user of at-least-once would);
  - `share-N` for each N of --consumers: N ShareConsumer processes of one
    share group (implicit acknowledgement, share.auto.offset.reset=earliest),
    the run ending when they received --msgs distinct records between them.
    Every acknowledgement is written to __share_group_state before it is
    answered (docs/share-groups.md), so this includes that cost.
Reports records/s, the broker's CPU per record (/proc utime+stime) and the
broker's run-queue wait (a crowded machine: N processes on 2 cores).

    bench/share_bench.py [--msgs 200000] [--consumers 1,4,16] [--repeats 2]

Prints one JSON line per run. A figure, never a test.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from small_record_consume import produce, schedstat  # noqa: E402
from suite.broker import SuiteBroker  # noqa: E402

TOPIC = "share-bench"


def classic(bootstrap: str, msgs: int) -> float:
    """Seconds one classic-group Consumer takes to read `msgs` records."""
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "classic-" + uuid.uuid4().hex[:6],
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "fetch.max.bytes": 50 * 1024 * 1024})
    c.subscribe([TOPIC])
    got = 0
    t0 = None
    while got < msgs:
        batch = [m for m in c.consume(10000, 1.0) if m.error() is None]
        if batch and t0 is None:
            t0 = time.perf_counter()
        got += len(batch)
        if batch and got % 10000 < len(batch):
            c.commit(asynchronous=False)
    secs = time.perf_counter() - t0
    c.close()
    return secs


def _share_member(bootstrap: str, group: str, counts, index: int, stop) -> None:
    from confluent_kafka import ShareConsumer
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0})
    c.subscribe([TOPIC])
    n = 0
    while not stop.is_set():
        for m in c.poll(0.5):
            if m.error() is None:
                n += 1
        counts[index] = n
    c.close()


def share(bootstrap: str, msgs: int, members: int) -> tuple[float, int]:
    """(seconds from the first record to `msgs` records received by
    `members` ShareConsumer processes, records received)."""
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, ResourceType)
    group = "share-" + uuid.uuid4().hex[:6]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest",
                    incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(30)
    counts = mp.Array("q", members, lock=False)
    stop = mp.Event()
    procs = [mp.Process(target=_share_member, args=(bootstrap, group, counts, i, stop))
             for i in range(members)]
    for p in procs:
        p.start()
    t0 = None
    deadline = time.monotonic() + 600
    while sum(counts) < msgs and time.monotonic() < deadline:
        if t0 is None and sum(counts) > 0:
            t0 = time.perf_counter()
        time.sleep(0.005)
    secs = time.perf_counter() - (t0 or time.perf_counter())
    got = sum(counts)
    stop.set()
    for p in procs:
        p.join(30)
    return secs, got


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--broker-cmd", default=None)
    p.add_argument("--msgs", type=int, default=200000)
    p.add_argument("--value-size", type=int, default=100)
    p.add_argument("--consumers", default="1,4,16")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--broker-arg", action="append", default=[], help="extra broker argument")
    p.add_argument("--label", default="")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="hr-share-", dir="/var/tmp") as d:
        broker = SuiteBroker(Path(d) / "data", *a.broker_arg, broker_cmd=a.broker_cmd).start()
        try:
            from confluent_kafka.admin import AdminClient, NewTopic
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
            produce(broker.bootstrap, TOPIC, 1, a.msgs, a.value_size)
            runs = [("classic", 0)] + [(f"share-{n}", int(n)) for n in a.consumers.split(",")]
            for _ in range(a.repeats):
                for name, n in runs:
                    b0, w0 = broker.cpu_seconds(), schedstat(broker.pid)[1]
                    t0 = time.perf_counter()
                    if n == 0:
                        secs, got = classic(broker.bootstrap, a.msgs), a.msgs
                    else:
                        secs, got = share(broker.bootstrap, a.msgs, n)
                    wall = time.perf_counter() - t0
                    cpu = broker.cpu_seconds() - b0
                    print(json.dumps({
                        "label": a.label, "run": name, "consumers": max(n, 1), "msgs": got,
                        "value_size": a.value_size, "seconds": round(secs, 2),
                        "msgs_per_s": round(got / secs) if secs > 0 else None,
                        # over the whole run (joins, leaves included)
                        "broker_cpu_us_per_msg": round(cpu / got * 1e6, 2) if got else None,
                        "broker_runq_wait": round((schedstat(broker.pid)[1] - w0) / wall, 3)}),
                        flush=True)
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
