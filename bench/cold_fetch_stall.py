#!/usr/bin/env python3
"""Stall of a loop's other connections while one connection fetches cold data.

Starts a broker with one I/O thread, produces --mb MB of 16 KiB records to a
topic, drops the page cache (`sync; echo 3 > /proc/sys/vm/drop_caches`, needs
root), then connection A reads the whole topic with bare Fetch requests
(raw_fetch.py's, 16 MiB each) while connection B, on the same I/O thread,
sends one small request (ApiVersions v0) every millisecond and times each
round trip. Then the same with the data in the page cache (hot). Prints one
JSON line per phase: B's round trips (count, p50, p99, max in ms, how many
over 10 ms) and A's MB/s.

    bench/cold_fetch_stall.py --broker-cmd "env PYTHONPATH=DIR python3 -m headrace.cli broker"

A figure, never a test: run before/after builds interleaved and repeat.
"""
from __future__ import annotations

import argparse
import json
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from raw_fetch import fetch_request, next_offset, read_exact  # noqa: E402
from suite.broker import SuiteBroker  # noqa: E402

VALUE = 16384


def produce(bootstrap: str, topic: str, mb: int) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1040000,
                  "acks": 1, "queue.buffering.max.kbytes": 1 << 20})
    value = b"v" * VALUE
    for _ in range(mb * 1000000 // VALUE):
        while True:
            try:
                p.produce(topic, value, partition=0)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(60)


def api_versions_v0(corr: int) -> bytes:
    client = b"stall-probe"
    msg = struct.pack(">hhih", 18, 0, corr, len(client)) + client
    return struct.pack(">i", len(msg)) + msg


class Prober(threading.Thread):
    """Connection B: one ApiVersions round trip per millisecond until stopped."""

    def __init__(self, addr: tuple[str, int]):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(addr)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.stop = threading.Event()
        self.rtts_ms: list[float] = []

    def run(self) -> None:
        buf = memoryview(bytearray(1 << 16))
        corr = 0
        while not self.stop.is_set():
            t0 = time.perf_counter()
            self.sock.sendall(api_versions_v0(corr))
            read_exact(self.sock, buf, 4)
            (size,) = struct.unpack_from(">i", buf, 0)
            read_exact(self.sock, buf, size)
            self.rtts_ms.append((time.perf_counter() - t0) * 1e3)
            corr += 1
            time.sleep(0.001)


def read_all(addr: tuple[str, int], topic: str) -> tuple[int, float]:
    """Connection A: reads the topic from offset 0; returns (msgs, seconds)."""
    sock = socket.create_connection(addr)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    max_bytes = 16 << 20
    buf = memoryview(bytearray(max_bytes + (1 << 20)))
    offset, corr, hw = 0, 0, None
    t0 = time.perf_counter()
    while hw is None or offset < hw:
        sock.sendall(fetch_request(corr, topic, 0, offset, max_bytes))
        read_exact(sock, buf, 4)
        (size,) = struct.unpack_from(">i", buf, 0)
        read_exact(sock, buf, size)
        offset, hw = next_offset(buf, size, offset)
        corr += 1
    return offset, time.perf_counter() - t0


def phase(addr: tuple[str, int], topic: str, name: str) -> dict:
    prober = Prober(addr)
    prober.start()
    time.sleep(0.2)
    baseline = len(prober.rtts_ms)
    msgs, secs = read_all(addr, topic)
    prober.stop.set()
    prober.join()
    rtts = sorted(prober.rtts_ms[baseline:])
    pick = lambda q: round(rtts[min(len(rtts) - 1, int(q * len(rtts)))], 2) if rtts else None
    return {"phase": name, "fetch_mb_per_s": round(msgs * VALUE / secs / 1e6, 1),
            "fetch_seconds": round(secs, 2), "probes": len(rtts), "p50_ms": pick(0.5),
            "p99_ms": pick(0.99), "max_ms": round(rtts[-1], 2) if rtts else None,
            "over_10ms": sum(1 for r in rtts if r > 10.0)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--broker-cmd", default=None, help="command prefix (default: headrace broker)")
    p.add_argument("--broker-arg", action="append", default=[], help="extra broker argument")
    p.add_argument("--mb", type=int, default=512, help="MB of record values to fetch")
    p.add_argument("--label", default="", help="copied into the output")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="hr-cold-", dir="/var/tmp") as d:
        broker = SuiteBroker(Path(d) / "data", "--io-threads", "1", *a.broker_arg,
                             broker_cmd=a.broker_cmd).start()
        try:
            addr = broker.address
            produce(broker.bootstrap, "cold", a.mb)
            subprocess.run(["sync"], check=True)
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
            for name in ("cold", "hot"):
                print(json.dumps({"label": a.label, "backend": broker.backend,
                                  **phase(addr, "cold", name)}), flush=True)
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
