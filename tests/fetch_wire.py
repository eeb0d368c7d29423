"""Raw Fetch requests with session fields (KIP-227): v7 (topic names,
non-flexible) and v17 (topic ids, flexible), on top of broker_wire's framing.

Field order from the Kafka 3.9 FetchRequest/FetchResponse schemas
(/work/shared/kafka-protocol). Flexible versions: compact strings and arrays
(unsigned varint length + 1), a tagged-field section after every struct,
request header v2 (header v1 + tags) and response header v1 (correlation id
+ tags).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from broker_wire import API_FETCH, Connection, Reader, kstring, request_header


@dataclass
class Part:
    """One partition of a Fetch answer."""
    partition: int
    error: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: bytes | None
    preferred_read_replica: int = -1
    current_leader: tuple[int, int] | None = None  # (leader id, epoch), KIP-951


@dataclass
class FetchAnswer:
    error: int
    session_id: int
    # (topic name or topic id bytes, partition) -> Part, in answer order
    parts: dict = field(default_factory=dict)
    node_endpoints: list = field(default_factory=list)  # (node, host, port, rack)
    wire_bytes: int = 0  # the response's size on the wire (prefix included)


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_uvarint(r: Reader) -> int:
    shift = value = 0
    while True:
        b = r.take(1)[0]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value
        shift += 7


def compact_str(s: str | None) -> bytes:
    if s is None:
        return uvarint(0)
    b = s.encode()
    return uvarint(len(b) + 1) + b


def compact_array(items: list[bytes]) -> bytes:
    return uvarint(len(items) + 1) + b"".join(items)


NO_TAGS = uvarint(0)


def read_tags(r: Reader) -> dict[int, bytes]:
    out = {}
    for _ in range(read_uvarint(r)):
        tag = read_uvarint(r)
        out[tag] = r.take(read_uvarint(r))
    return out


# -- v7: topic names ------------------------------------------------------------
def encode_fetch_v7(topics: dict[str, list[tuple[int, int]]], session_id: int, epoch: int,
                    forgotten: dict[str, list[int]] | None = None, max_wait_ms: int = 0,
                    min_bytes: int = 1, max_bytes: int = 50 << 20,
                    partition_max_bytes: int = 1 << 20) -> bytes:
    """topics: name -> [(partition, fetch offset)]."""
    body = struct.pack(">iiiibii", -1, max_wait_ms, min_bytes, max_bytes, 0, session_id, epoch)
    body += struct.pack(">i", len(topics))
    for name, parts in topics.items():
        body += kstring(name) + struct.pack(">i", len(parts))
        for p, offset in parts:
            body += struct.pack(">iqqi", p, offset, -1, partition_max_bytes)
    forgotten = forgotten or {}
    body += struct.pack(">i", len(forgotten))
    for name, parts in forgotten.items():
        body += kstring(name) + struct.pack(">i", len(parts))
        body += b"".join(struct.pack(">i", p) for p in parts)
    return body


def decode_fetch_v7(r: Reader) -> FetchAnswer:
    r.i32()  # throttle
    ans = FetchAnswer(error=r.i16(), session_id=r.i32())
    for _ in range(r.i32()):
        name = r.string()
        for _ in range(r.i32()):
            p = Part(r.i32(), r.i16(), r.i64(), r.i64(), r.i64(), None)
            n = r.i32()
            for _ in range(max(n, 0)):
                r.i64(), r.i64()
            p.records = r.nbytes()
            ans.parts[(name, p.partition)] = p
    return ans


# -- v17: topic ids, flexible ------------------------------------------------------
def encode_fetch_v17(topics: dict[bytes, list[tuple[int, int]]], session_id: int, epoch: int,
                     forgotten: dict[bytes, list[int]] | None = None, max_wait_ms: int = 0,
                     min_bytes: int = 1, max_bytes: int = 50 << 20,
                     partition_max_bytes: int = 1 << 20, leader_epoch: int = -1,
                     rack: str = "") -> bytes:
    """topics: topic id (16 bytes) -> [(partition, fetch offset)]."""
    # cluster_id (tag 0) and replica_state (tag 1) are tagged: left out.
    body = struct.pack(">iiibii", max_wait_ms, min_bytes, max_bytes, 0, session_id, epoch)
    items = []
    for tid, parts in topics.items():
        ps = [struct.pack(">iiqiqi", p, leader_epoch, offset, -1, -1, partition_max_bytes)
              + NO_TAGS for p, offset in parts]
        items.append(tid + compact_array(ps) + NO_TAGS)
    body += compact_array(items)
    fitems = [tid + compact_array([struct.pack(">i", p) for p in parts]) + NO_TAGS
              for tid, parts in (forgotten or {}).items()]
    body += compact_array(fitems)
    body += compact_str(rack) + NO_TAGS
    return body


def decode_fetch_v17(r: Reader) -> FetchAnswer:
    read_tags(r)  # response header v1
    r.i32()  # throttle
    ans = FetchAnswer(error=r.i16(), session_id=r.i32())
    for _ in range(read_uvarint(r) - 1):
        tid = r.take(16)
        for _ in range(read_uvarint(r) - 1):
            p = Part(r.i32(), r.i16(), r.i64(), r.i64(), r.i64(), None)
            n = read_uvarint(r) - 1
            for _ in range(max(n, 0)):
                r.i64(), r.i64()
                read_tags(r)
            p.preferred_read_replica = r.i32()
            size = read_uvarint(r) - 1
            p.records = r.take(size) if size >= 0 else None
            tags = read_tags(r)
            if 1 in tags:
                t = Reader(tags[1])
                p.current_leader = (t.i32(), t.i32())
            ans.parts[(tid, p.partition)] = p
        read_tags(r)
    tags = read_tags(r)
    if 0 in tags:
        t = Reader(tags[0])
        for _ in range(read_uvarint(t) - 1):
            node = t.i32()
            host = t.take(read_uvarint(t) - 1).decode()
            port = t.i32()
            n = read_uvarint(t)
            rack = t.take(n - 1).decode() if n else None
            read_tags(t)
            ans.node_endpoints.append((node, host, port, rack))
    return ans


def send_fetch(conn: Connection, version: int, body: bytes) -> int:
    """Sends one Fetch (request header v1, or v2 for v12+); returns its
    correlation id."""
    cid = conn.next_correlation_id
    conn.next_correlation_id += 1
    head = request_header(API_FETCH, version, cid)
    if version >= 12:
        head += NO_TAGS
    payload = head + body
    conn.send_raw(struct.pack(">i", len(payload)) + payload)
    conn.last_request_bytes = 4 + len(payload)
    return cid


def recv_fetch(conn: Connection, version: int, cid: int) -> FetchAnswer:
    got, r = conn.recv_response()
    assert got == cid
    ans = decode_fetch_v17(r) if version >= 12 else decode_fetch_v7(r)
    ans.wire_bytes = 4 + len(r.data)
    return ans


def fetch(conn: Connection, version: int, body: bytes) -> FetchAnswer:
    """One Fetch round trip."""
    return recv_fetch(conn, version, send_fetch(conn, version, body))


def NEXT_EPOCH(epoch: int) -> int:  # noqa: N802 (KIP-227's nextEpoch)
    """The session epoch after `epoch` (1 after 2**31-1; 0 -> 1)."""
    return 1 if epoch >= 2**31 - 1 else epoch + 1
