#!/usr/bin/env python3
"""A minimal fetch reader: the broker's fetch path without a client library.

Sends Fetch v4 requests for one partition over one socket, one at a time
(like librdkafka), reads each response into one reused buffer and only walks
the record batch headers to find the next offset. What it measures is what
the broker (and loopback) can deliver to a reader as cheap as the sendfile
reference's; compare with `headrace-loadgen consume` to see how much of a
fetch run is the client library.

    bench/raw_fetch.py --bootstrap 127.0.0.1:9092 --topic t --value-size 16384

Prints one JSON line: msgs, mb_per_s (MB = 10^6 bytes of values, counting
value_size per record), seconds, fetches.
"""
from __future__ import annotations

import argparse
import json
import socket
import struct
import time


def fetch_request(corr: int, topic: str, partition: int, offset: int, max_bytes: int) -> bytes:
    """Fetch v4 (request header v1), one topic-partition."""
    t = topic.encode()
    body = struct.pack(">iiiib", -1, 500, 1, max_bytes, 0)
    body += struct.pack(">ih", 1, len(t)) + t
    body += struct.pack(">iiqi", 1, partition, offset, max_bytes)
    client = b"raw-fetch"
    head = struct.pack(">hhih", 1, 4, corr, len(client)) + client
    msg = head + body
    return struct.pack(">i", len(msg)) + msg


def read_exact(sock: socket.socket, view: memoryview, n: int) -> None:
    got = 0
    while got < n:
        r = sock.recv_into(view[got:n])
        if r == 0:
            raise ConnectionError("broker closed the connection")
        got += r


def next_offset(buf: memoryview, size: int, offset: int) -> tuple[int, int]:
    """Walks the v4 response in buf[:size]; returns (next offset, high watermark)."""
    pos = 4 + 4 + 4  # correlation id, throttle time, topics count
    (tlen,) = struct.unpack_from(">h", buf, pos)
    pos += 2 + tlen + 4  # topic, partitions count
    _, err, hw, _ = struct.unpack_from(">ihqq", buf, pos)
    if err != 0:
        raise RuntimeError(f"fetch error {err}")
    pos += 4 + 2 + 8 + 8
    (naborted,) = struct.unpack_from(">i", buf, pos)
    pos += 4 + max(naborted, 0) * 16
    (rlen,) = struct.unpack_from(">i", buf, pos)
    pos += 4
    end = pos + max(rlen, 0)
    while pos + 12 <= end:
        base, blen = struct.unpack_from(">qi", buf, pos)
        if pos + 12 + blen > end:
            break  # a partial batch at the end of the budget
        (delta,) = struct.unpack_from(">i", buf, pos + 23)
        offset = base + delta + 1
        pos += 12 + blen
    return offset, hw


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap", default="127.0.0.1:9092")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, default=0)
    p.add_argument("--max-bytes", type=int, default=16 * 1024 * 1024)
    p.add_argument("--value-size", type=int, default=16384, help="for the MB figure")
    a = p.parse_args()
    host, port = a.bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = memoryview(bytearray(a.max_bytes + (1 << 20)))
    offset, fetches, hw = 0, 0, None
    t0 = time.perf_counter()
    while hw is None or offset < hw:
        sock.sendall(fetch_request(fetches, a.topic, a.partition, offset, a.max_bytes))
        read_exact(sock, buf, 4)
        (size,) = struct.unpack_from(">i", buf, 0)
        if size > len(buf):
            buf = memoryview(bytearray(size))
        read_exact(sock, buf, size)
        offset, hw = next_offset(buf, size, offset)
        fetches += 1
    secs = time.perf_counter() - t0
    print(json.dumps({"msgs": offset, "seconds": round(secs, 3), "fetches": fetches,
                      "mb_per_s": round(offset * a.value_size / secs / 1e6, 1)}))


if __name__ == "__main__":
    main()
