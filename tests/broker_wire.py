"""A tiny struct-based Kafka wire helper for raw-socket tests (no protocol library).

Only what the tests need: request framing with header v1 (non-flexible
versions), ApiVersions v0-v2 responses, and Fetch v4 request/response.
Facts from the Kafka protocol guide: every message is an int32 size prefix
followed by that many bytes; a v1 request header is api_key int16,
api_version int16, correlation_id int32, client_id nullable string (int16
length); a v0 response header is correlation_id int32.
"""
from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field

API_PRODUCE = 0
API_FETCH = 1
API_METADATA = 3
API_API_VERSIONS = 18
ERR_NONE = 0
ERR_UNSUPPORTED_VERSION = 35


def kstring(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def request_header(api_key: int, api_version: int, correlation_id: int,
                   client_id: str | None = "raw-test") -> bytes:
    return struct.pack(">hhi", api_key, api_version, correlation_id) + kstring(client_id)


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


class Reader:
    """Big-endian cursor over a response body; raises ValueError on underflow."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"underflow: need {n} at {self.pos} of {len(self.data)}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def _unpack(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def i8(self): return self._unpack(">b")
    def i16(self): return self._unpack(">h")
    def i32(self): return self._unpack(">i")
    def i64(self): return self._unpack(">q")

    def string(self) -> str | None:
        n = self.i16()
        return None if n < 0 else self.take(n).decode()

    def nbytes(self) -> bytes | None:
        n = self.i32()
        return None if n < 0 else self.take(n)

    def array(self, item):
        n = self.i32()
        return None if n < 0 else [item(self) for _ in range(n)]

    @property
    def remaining(self) -> int:
        return len(self.data) - self.pos


class Connection:
    """One raw TCP connection to the broker."""

    def __init__(self, address, timeout: float = 30.0):
        self.sock = socket.create_connection(address, timeout=timeout)
        self.next_correlation_id = 1

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data: bytes):
        self.sock.sendall(data)

    def send_request(self, api_key: int, api_version: int, body: bytes = b"",
                     correlation_id: int | None = None) -> int:
        if correlation_id is None:
            correlation_id = self.next_correlation_id
            self.next_correlation_id += 1
        self.send_raw(frame(request_header(api_key, api_version, correlation_id) + body))
        return correlation_id

    def recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"closed after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def recv_response(self) -> tuple[int, Reader]:
        """Returns (correlation_id, reader over the body after a v0 response header)."""
        (size,) = struct.unpack(">i", self.recv_exact(4))
        assert 4 <= size < 64 << 20, f"absurd response size {size}"
        payload = self.recv_exact(size)
        r = Reader(payload)
        return r.i32(), r

    def is_closed_by_peer(self, timeout: float = 10.0) -> bool:
        """True if the broker closed the connection (EOF or reset) within timeout
        without sending anything."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1)
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
        assert data == b"", f"broker sent unexpected bytes {data!r}"
        return True


# -- ApiVersions ---------------------------------------------------------------
@dataclass
class ApiVersionsResponse:
    error_code: int
    apis: dict[int, tuple[int, int]] = field(default_factory=dict)
    throttle_time_ms: int | None = None


def decode_api_versions(r: Reader, version: int) -> ApiVersionsResponse:
    """Decodes an ApiVersions response body of version 0-2 (non-flexible)."""
    error = r.i16()
    apis = r.array(lambda x: (x.i16(), x.i16(), x.i16()))
    resp = ApiVersionsResponse(error, {k: (lo, hi) for k, lo, hi in apis or []})
    if version >= 1:
        resp.throttle_time_ms = r.i32()
    return resp


# -- Fetch v4 ------------------------------------------------------------------
@dataclass
class FetchPartition:
    partition: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    records: bytes | None


def encode_fetch_v4(topic: str, partition: int, offset: int, max_wait_ms: int,
                    min_bytes: int = 1, max_bytes: int = 1 << 20) -> bytes:
    body = struct.pack(">iiiib", -1, max_wait_ms, min_bytes, max_bytes, 0)
    body += struct.pack(">i", 1) + kstring(topic)
    body += struct.pack(">i", 1) + struct.pack(">iqi", partition, offset, max_bytes)
    return body


def decode_fetch_v4(r: Reader) -> dict[tuple[str, int], FetchPartition]:
    r.i32()  # throttle_time_ms
    out = {}
    for _ in range(r.i32()):
        topic = r.string()
        for _ in range(r.i32()):
            p, err, hw, lso = r.i32(), r.i16(), r.i64(), r.i64()
            r.array(lambda x: (x.i64(), x.i64()))  # aborted transactions
            out[(topic, p)] = FetchPartition(p, err, hw, lso, r.nbytes())
    return out


@dataclass
class BatchHeader:
    base_offset: int
    record_count: int
    attributes: int
    producer_id: int = -1

    @property
    def compression(self) -> int:
        """0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
        return self.attributes & 0x7


def batch_headers(records: bytes | None) -> list[BatchHeader]:
    """The header of each complete v2 batch in a records blob (a partial batch
    at the end, allowed by the protocol, is skipped). Layout: baseOffset int64,
    batchLength int32, partitionLeaderEpoch int32, magic int8, crc int32,
    attributes int16 (at 21), ..., recordCount int32 (at 57); header = 61 bytes."""
    out = []
    pos = 0
    data = records or b""
    while len(data) - pos >= 61:
        base, length = struct.unpack_from(">qi", data, pos)
        if pos + 12 + length > len(data):
            break
        assert data[pos + 16] == 2, f"magic {data[pos + 16]} at {pos}"
        (attributes,) = struct.unpack_from(">h", data, pos + 21)
        (producer_id,) = struct.unpack_from(">q", data, pos + 43)
        (count,) = struct.unpack_from(">i", data, pos + 57)
        out.append(BatchHeader(base, count, attributes, producer_id))
        pos += 12 + length
    return out


def fetch_once(address, topic: str, partition: int, offset: int, max_wait_ms: int = 0,
               max_bytes: int = 4 << 20) -> FetchPartition:
    """One Fetch v4 on a fresh connection; returns that partition's result."""
    with Connection(address) as c:
        cid = c.send_request(API_FETCH, 4, encode_fetch_v4(topic, partition, offset, max_wait_ms,
                                                           max_bytes=max_bytes))
        got_cid, r = c.recv_response()
        assert got_cid == cid
        return decode_fetch_v4(r)[(topic, partition)]
