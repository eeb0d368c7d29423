"""Fetch (API 1, v4) over headrace.admin_wire's Connection: the bulk read of
the pipeline edge. The records of each partition come back as one
memoryview of the response (no copy, no object per record), for a decoder
such as ``headrace._core.RecordColumns``.

v4 is the oldest Fetch that carries the isolation level and the aborted
transactions (KIP-98), and the oldest Kafka 4 still serves; a v4 answer
holds whole RecordBatch v2 except possibly the last, cut at the size limit.

:class:`PartitionFetcher` follows one partition's leader: it finds it in a
Metadata answer, keeps one connection to it, and after a leader change or a
lost connection asks again (the caller decides how long to keep trying).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Mapping

from headrace.admin_wire import Connection, cluster_metadata
from headrace.cli.probe import split_bootstrap
from headrace.wire_codec import WireError, WireSecurityError, request

FETCH_API, FETCH_VERSION = 1, 4
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
# Errors after which the partition's leader must be looked up again: the
# broker asked no longer leads it (or does not know it yet).
LEADER_ERRORS = frozenset({3, 5, 6, 74, 75})  # UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
#   NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH
# Errors a retry on the same or a new leader ends.
RETRIABLE_ERRORS = LEADER_ERRORS | {7, 13, 15, 56}  # REQUEST_TIMED_OUT, NETWORK_EXCEPTION,
#   COORDINATOR_NOT_AVAILABLE (never for Fetch, harmless), KAFKA_STORAGE_ERROR


@dataclass
class FetchedPartition:
    """One partition of a Fetch answer. ``records`` is a view into the
    answer's buffer (valid as long as the caller keeps it)."""

    error_code: int
    high_watermark: int
    last_stable_offset: int
    aborted: list[tuple[int, int]]  # (producer id, first offset)
    records: memoryview


def _recv_into(sock, buf: memoryview) -> None:
    while len(buf):
        n = sock.recv_into(buf)
        if n == 0:
            raise OSError("connection closed")
        buf = buf[n:]


def fetch(conn: Connection, topic: str, partition: int, offset: int, max_bytes: int,
          isolation: int, max_wait_ms: int = 500,
          buf: bytearray | None = None) -> FetchedPartition:
    """One Fetch v4 of one partition from ``offset``, up to ``max_bytes``.
    The answer is received into ``buf`` when it is large enough (its first
    bytes are overwritten: what an earlier answer's ``records`` showed is
    gone), else into a new buffer."""
    name = topic.encode()
    body = (struct.pack(">iiiib", -1, max_wait_ms, 1, max_bytes, isolation)
            + struct.pack(">ih", 1, len(name)) + name
            + struct.pack(">iiqi", 1, partition, offset, max_bytes))
    conn.next_id += 1
    try:
        conn.sock.sendall(request(FETCH_API, FETCH_VERSION, conn.next_id, body, False))
        head = bytearray(8)
        _recv_into(conn.sock, memoryview(head))
        size, correlation = struct.unpack(">ii", head)
        if buf is None or len(buf) < size - 4:
            buf = bytearray(size - 4)
        view = memoryview(buf)[:size - 4]
        _recv_into(conn.sock, view)
    except (OSError, struct.error) as e:
        raise WireError(f"broker {conn.address}: {e}") from None
    if correlation != conn.next_id:
        raise WireError(f"broker {conn.address}: answer to another request")
    return _parse(view, topic, partition, conn.address)


def _parse(mv: memoryview, topic: str, partition: int, address: str) -> FetchedPartition:
    try:
        pos = 4  # throttle time
        (n_topics,) = struct.unpack_from(">i", mv, pos)
        pos += 4
        for _ in range(n_topics):
            (tlen,) = struct.unpack_from(">h", mv, pos)
            name = bytes(mv[pos + 2:pos + 2 + tlen]).decode()
            pos += 2 + tlen
            (n_parts,) = struct.unpack_from(">i", mv, pos)
            pos += 4
            for _ in range(n_parts):
                part, code, hw, lso, n_aborted = struct.unpack_from(">ihqqi", mv, pos)
                pos += 26
                aborted = []
                for _ in range(max(n_aborted, 0)):
                    aborted.append(struct.unpack_from(">qq", mv, pos))
                    pos += 16
                (rlen,) = struct.unpack_from(">i", mv, pos)
                pos += 4
                records = mv[pos:pos + max(rlen, 0)]
                pos += max(rlen, 0)
                if name == topic and part == partition:
                    return FetchedPartition(code, hw, lso, aborted, records)
    except (struct.error, UnicodeDecodeError) as e:
        raise WireError(f"broker {address}: malformed Fetch answer ({e})") from None
    raise WireError(f"broker {address}: Fetch answered without {topic}-{partition}")


class PartitionFetcher:
    """Fetches one partition from its current leader. Not thread-safe.

    ``settings``: librdkafka property names (``bootstrap.servers``,
    ``security.protocol``, ``ssl.*``, ``sasl.*``; headrace.secure_socket)."""

    def __init__(self, settings: Mapping[str, str], topic: str, partition: int,
                 timeout_s: float = 30.0):
        self.settings = dict(settings)
        self.topic, self.partition = topic, partition
        self.timeout_s = timeout_s
        self._conn: Connection | None = None
        self._buf = bytearray()   # the last answer, reused (no zero-filled buffer per answer)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def forget_leader(self) -> None:
        """After a leader change or a broken connection: look it up again."""
        self.close()

    def _leader(self) -> Connection:
        if self._conn is not None:
            return self._conn
        why = "no bootstrap server answered"
        for host, port in split_bootstrap(self.settings.get("bootstrap.servers", "")):
            try:
                boot = Connection(host, port, self.timeout_s, self.settings)
            except WireSecurityError:
                raise   # TLS or SASL refused us: another server will too
            except WireError as e:
                why = str(e)
                continue
            try:
                md = cluster_metadata(boot)
            except WireError as e:
                why = str(e)
                continue
            finally:
                boot.close()
            topic = md.topics.get(self.topic)
            pm = topic.partitions.get(self.partition) if topic is not None else None
            if pm is None or pm.leader < 0 or pm.leader not in md.brokers:
                raise WireError(f"{self.topic}-{self.partition} has no leader now "
                                f"(metadata from {host}:{port})")
            b = md.brokers[pm.leader]
            self._conn = Connection(b.host, b.port, self.timeout_s, self.settings)
            return self._conn
        raise WireError(f"{self.topic}-{self.partition}: cannot find its leader: {why}")

    def fetch(self, offset: int, max_bytes: int, isolation: int,
              max_wait_ms: int = 500) -> FetchedPartition:
        """One Fetch from the leader; its ``records`` are valid until the
        next call (the receive buffer is reused). Raises WireError when the leader
        cannot be reached or answers garbage (the connection is dropped),
        WireSecurityError when TLS or SASL refuse the connection."""
        conn = self._leader()
        try:
            part = fetch(conn, self.topic, self.partition, offset, max_bytes, isolation,
                         max_wait_ms, self._buf)
        except WireError:
            self.forget_leader()
            raise
        if part.records.obj is not self._buf and len(part.records.obj) > len(self._buf):
            self._buf = part.records.obj   # a larger answer: keep its buffer for the next
        return part
