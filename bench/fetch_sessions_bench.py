#!/usr/bin/env python3
"""Fetch across many partitions with and without an incremental fetch
session (KIP-227).

Starts a broker, creates a topic of --partitions partitions (default 1000)
with --records 100-byte records in each, then for each mode ("full": every
request lists every partition, session id 0 / epoch -1, as librdkafka does;
"session": one full request, then incremental requests that list only the
partitions whose position moved) on a raw connection (tests/fetch_wire.py,
Fetch v7):
  drain  reads every record (partition_max_bytes --partition-max-bytes);
  idle   --idle-fetches fetches with max_wait_ms 0 once caught up (a
         consumer polling a quiet topic).
Prints one JSON line per mode and phase: fetches, request and response
bytes per fetch, broker CPU per fetch (utime+stime of the process), fetches/s.

    bench/fetch_sessions_bench.py [--broker-cmd "..."]

A figure, never a test.
"""
from __future__ import annotations

import argparse
import json
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from suite.broker import SuiteBroker  # noqa: E402
from broker_wire import Connection  # noqa: E402
import fetch_wire  # noqa: E402


def next_offset(records: bytes | None, offset: int) -> int:
    """The offset after the last complete batch in `records`."""
    pos = 0
    data = records or b""
    while pos + 27 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if pos + 12 + length > len(data):
            break
        (delta,) = struct.unpack_from(">i", data, pos + 23)
        offset = base + delta + 1
        pos += 12 + length
    return offset


class Meter:
    def __init__(self, broker):
        self.broker = broker
        self.fetches = self.req_bytes = self.resp_bytes = 0

    def start(self):
        self.cpu0, self.t0 = self.broker.cpu_seconds(), time.perf_counter()

    def row(self, mode, phase, **extra):
        secs = time.perf_counter() - self.t0
        cpu = self.broker.cpu_seconds() - self.cpu0
        n = max(self.fetches, 1)
        return {"mode": mode, "phase": phase, "fetches": self.fetches,
                "request_bytes_per_fetch": round(self.req_bytes / n),
                "response_bytes_per_fetch": round(self.resp_bytes / n),
                "broker_cpu_us_per_fetch": round(cpu / n * 1e6),
                "fetches_per_s": round(self.fetches / secs), "seconds": round(secs, 2), **extra}


def run(conn, meter, topic, partitions, mode, pmax, idle_fetches, records_total):
    offsets = {p: 0 for p in range(partitions)}
    sid, epoch = 0, (0 if mode == "session" else -1)
    sent_offsets: dict[int, int] = {}

    def one(max_wait=0):
        nonlocal sid, epoch
        if mode == "full" or epoch == 0:
            want = dict(offsets)
        else:
            want = {p: o for p, o in offsets.items() if sent_offsets.get(p) != o}
        body = fetch_wire.encode_fetch_v7({topic: sorted(want.items())} if want else {},
                                          sid, epoch, max_wait_ms=max_wait,
                                          partition_max_bytes=pmax)
        cid = fetch_wire.send_fetch(conn, 7, body)
        ans = fetch_wire.recv_fetch(conn, 7, cid)
        meter.fetches += 1
        meter.req_bytes += conn.last_request_bytes
        meter.resp_bytes += ans.wire_bytes
        assert ans.error == 0, ans.error
        if mode == "session":
            if epoch == 0:
                assert ans.session_id != 0, "no session slot"
                sid = ans.session_id
            sent_offsets.update(want)
            epoch = fetch_wire.NEXT_EPOCH(epoch)
        got = 0
        for (_, p), part in ans.parts.items():
            assert part.error == 0, (p, part.error)
            new = next_offset(part.records, offsets[p])
            got += new - offsets[p]
            offsets[p] = new
        return got

    meter.start()
    done = 0
    while done < records_total:
        done += one()
    drain = meter.row(mode, "drain", records=done)
    meter.fetches = meter.req_bytes = meter.resp_bytes = 0
    meter.start()
    for _ in range(idle_fetches):
        one()
    return [drain, meter.row(mode, "idle")]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--broker-cmd", default=None)
    p.add_argument("--partitions", type=int, default=1000)
    p.add_argument("--records", type=int, default=100, help="records per partition")
    p.add_argument("--partition-max-bytes", type=int, default=4096)
    p.add_argument("--idle-fetches", type=int, default=500)
    p.add_argument("--label", default="")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="hr-fsess-", dir="/var/tmp") as d:
        broker = SuiteBroker(Path(d) / "data", "--set", "num.partitions=1",
                             broker_cmd=a.broker_cmd).start()
        try:
            from confluent_kafka import Producer
            from confluent_kafka.admin import AdminClient, NewTopic
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            admin.create_topics([NewTopic("many", a.partitions, 1)])["many"].result(120)
            prod = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50,
                             "queue.buffering.max.messages": 2000000})
            value = b"v" * 100
            for i in range(a.partitions * a.records):
                while True:
                    try:
                        prod.produce("many", value, partition=i % a.partitions)
                        break
                    except BufferError:
                        prod.poll(0.01)
            assert prod.flush(120) == 0
            for mode in ("full", "session", "full", "session"):
                with Connection(broker.address) as conn:
                    for row in run(conn, Meter(broker), "many", a.partitions, mode,
                                   a.partition_max_bytes, a.idle_fetches,
                                   a.partitions * a.records):
                        print(json.dumps({"label": a.label, "partitions": a.partitions, **row}),
                              flush=True)
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
