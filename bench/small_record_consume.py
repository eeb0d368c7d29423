#!/usr/bin/env python3
"""Consume of small records with confluent-kafka's Python consumer.

Starts a broker, produces --msgs records of --value-size bytes (default 100)
to a topic of --partitions partitions, then consumes them all with a
Consumer as a user would (assign every partition at offset 0,
`consume(10000, 1.0)` in a loop, fetch.max.bytes 50 MB) and reports msgs/s
and the CPU both sides used meanwhile (broker: /proc utime+stime of the
process; client: this process's os.times()), as a share of one core.

    bench/small_record_consume.py [--broker-cmd "..."] [--msgs 2000000]

Prints one JSON line per repeat. A figure, never a test.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suite.broker import SuiteBroker  # noqa: E402


def produce(bootstrap: str, topic: str, partitions: int, msgs: int, size: int) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1000000,
                  "acks": 1, "queue.buffering.max.kbytes": 1 << 20,
                  "queue.buffering.max.messages": 2000000})
    value = b"v" * size
    for i in range(msgs):
        while True:
            try:
                p.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(120)


def schedstat(pid: int | str = "self") -> tuple[float, float]:
    """(seconds on a CPU, seconds runnable but waiting for one) summed over
    the threads of `pid` (/proc/PID/task/*/schedstat, nanoseconds): a low
    CPU share with a high wait means CPU starvation, with a low wait sleep."""
    run = wait = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue  # the thread ended meanwhile
        run += int(fields[0])
        wait += int(fields[1])
    return run / 1e9, wait / 1e9


def consume(bootstrap: str, topic: str, partitions: int, msgs: int, extra: dict) -> dict:
    from confluent_kafka import Consumer, TopicPartition
    conf = {"bootstrap.servers": bootstrap, "group.id": "small-record-bench",
            "enable.auto.commit": False, "fetch.max.bytes": 50 * 1024 * 1024, **extra}
    c = Consumer(conf)
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    c0 = os.times()
    s0 = schedstat()
    t0 = time.perf_counter()
    while got < msgs:
        for m in c.consume(10000, 1.0):
            if m.error() is None:
                got += 1
    secs = time.perf_counter() - t0
    c1 = os.times()
    s1 = schedstat()
    c.close()
    return {"msgs": got, "seconds": secs,
            "client_cpu": (c1.user - c0.user + c1.system - c0.system) / secs,
            "client_runq_wait": (s1[1] - s0[1]) / secs}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--broker-cmd", default=None, help="command prefix (default: headrace broker)")
    p.add_argument("--broker-arg", action="append", default=[], help="extra broker argument")
    p.add_argument("--msgs", type=int, default=2000000)
    p.add_argument("--value-size", type=int, default=100)
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--consumer-conf", action="append", default=[], help="k=v for the Consumer")
    p.add_argument("--label", default="")
    a = p.parse_args()
    extra = dict(kv.split("=", 1) for kv in a.consumer_conf)
    with tempfile.TemporaryDirectory(prefix="hr-small-", dir="/var/tmp") as d:
        broker = SuiteBroker(Path(d) / "data", *a.broker_arg, broker_cmd=a.broker_cmd).start()
        try:
            from confluent_kafka.admin import AdminClient, NewTopic
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            admin.create_topics([NewTopic("small", a.partitions, 1)])["small"].result(30)
            produce(broker.bootstrap, "small", a.partitions, a.msgs, a.value_size)
            for _ in range(a.repeats):
                b0 = broker.cpu_seconds()
                w0 = schedstat(broker.pid)[1]
                r = consume(broker.bootstrap, "small", a.partitions, a.msgs, extra)
                broker_cpu = (broker.cpu_seconds() - b0) / r["seconds"]
                broker_wait = (schedstat(broker.pid)[1] - w0) / r["seconds"]
                print(json.dumps({"label": a.label, "backend": broker.backend,
                                  "value_size": a.value_size, "partitions": a.partitions,
                                  "msgs": r["msgs"], "msgs_per_s": round(r["msgs"] / r["seconds"]),
                                  "seconds": round(r["seconds"], 2),
                                  "broker_cpu": round(broker_cpu, 3),
                                  "client_cpu": round(r["client_cpu"], 3),
                                  "broker_runq_wait": round(broker_wait, 3),
                                  "client_runq_wait": round(r["client_runq_wait"], 3)}),
                      flush=True)
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
