#!/usr/bin/env python3
"""AlterReplicaLogDirs: how fast a partition moves between two log
directories, and how long producers wait around the swap.

Starts `headrace broker` with log.dirs=A,B (both under --dir), fills
partition 0 of a topic with --mb MB of 1 KiB records, then moves it from A to
B while one producer (acks=all, idempotent) keeps writing 1 KiB records, and
prints: the copy's MB/s (bytes moved / time from the request until
DescribeLogDirs lists it in B), and the producer's worst delivery latency
during the move (the swap refuses appends with NOT_LEADER_OR_FOLLOWER until
the client retries on the moved partition). docs/performance.md holds the
figures.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

import confluent_kafka as ck
from kafka.admin import KafkaAdminClient, NewTopic


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--dir", default=None, help="where the two log dirs go (default: a temp dir)")
    args = ap.parse_args()
    root = args.dir or tempfile.mkdtemp(prefix="hr-move-")
    a, b = os.path.join(root, "a"), os.path.join(root, "b")
    proc = subprocess.Popen([sys.executable, "-m", "headrace.cli", "broker", "--data-dir", a,
                             "--listen", "127.0.0.1:0", "--set", f"log.dirs={a},{b}"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        bootstrap = re.search(r"listening on (\S+:\d+)", line).group(1)
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic("move", 1, 1)])
        p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all",
                         "enable.idempotence": True})
        value = b"x" * 1024
        for _ in range(args.mb * 1024):
            while True:
                try:
                    p.produce("move", value=value, partition=0)
                    break
                except BufferError:
                    p.poll(0.01)
        p.flush(60)

        worst = [0.0]
        stop = threading.Event()

        def write():
            q = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all",
                             "enable.idempotence": True})
            while not stop.is_set():
                t0 = time.monotonic()
                q.produce("move", value=value, partition=0,
                          on_delivery=lambda e, m, t0=t0: worst.__setitem__(
                              0, max(worst[0], time.monotonic() - t0)))
                q.poll(0.001)
            q.flush(30)

        w = threading.Thread(target=write)
        w.start()
        time.sleep(0.5)
        worst[0] = 0.0
        t0 = time.monotonic()
        admin.alter_replica_log_dirs({("move", 0, 0): b})
        while True:
            dirs = admin.describe_log_dirs()[0]["log_dirs"]
            where = [d["log_dir"] for d in dirs for t in d["topics"]
                     for q in t["partitions"] if not q["is_future_key"]]
            if where == [b]:
                break
            time.sleep(0.01)
        took = time.monotonic() - t0
        time.sleep(0.5)
        stop.set()
        w.join()
        print(f"moved {args.mb} MB in {took:.2f} s: {args.mb / took:.0f} MB/s; "
              f"worst produce delivery latency during the move {worst[0] * 1000:.1f} ms")
        admin.close()
    finally:
        proc.terminate()
        proc.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
