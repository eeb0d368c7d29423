"""The Kafka wire format's primitives, sans I/O: request framing, the
encoders of varints, compact strings and arrays and tagged fields, a
:class:`Reader` of response bodies, and the names of error codes. Used by
headrace.admin_wire (the admin requests) and headrace.secure_socket (the
SASL exchange); it knows nothing of sockets.

Facts from the Kafka protocol guide: a message is an int32 size and that
many bytes; flexible versions use request header v2 (api_key int16,
api_version int16, correlation_id int32, client_id as an int16-length
string, tagged fields) and response header v1 (correlation_id, tagged
fields); compact strings and arrays carry length+1 as an unsigned varint
(0 = null); every flexible struct ends in tagged fields (a count, then tag,
size, bytes).
"""
from __future__ import annotations

import struct

from headrace.errors import HeadraceError

CLIENT_ID = b"headrace-admin"
# Names of the Kafka error codes these APIs answer that librdkafka does not know.
_ERROR_NAMES = {105: "TRANSACTIONAL_ID_NOT_FOUND", 104: "INVALID_PRODUCER_ID_MAPPING",
                57: "LOG_DIR_NOT_FOUND", 58: "KAFKA_STORAGE_ERROR",
                39: "INVALID_REPLICA_ASSIGNMENT", 85: "NO_REASSIGNMENT_IN_PROGRESS"}


class WireError(HeadraceError):
    """A broker that could not be reached or sent an answer we cannot read."""


class WireSecurityError(WireError):
    """TLS or SASL refused the connection (a bad certificate, a wrong
    password, an unsupported mechanism): retrying does not help."""


def error_name(code: int) -> str:
    if code in _ERROR_NAMES:
        return _ERROR_NAMES[code]
    from confluent_kafka import KafkaError

    name = KafkaError(code).name()
    return f"error {code}" if name.startswith("ERR_") else name


# -- encoding ----------------------------------------------------------------
def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cstr(s: str | None) -> bytes:
    if s is None:
        return b"\0"
    b = s.encode()
    return uvarint(len(b) + 1) + b


def carray(items: list[bytes] | None) -> bytes:
    if items is None:
        return b"\0"
    return uvarint(len(items) + 1) + b"".join(items)


NO_TAGS = b"\0"


def request(api_key: int, version: int, correlation_id: int, body: bytes,
            flexible: bool = True) -> bytes:
    """A framed request (header v2 if flexible, else v1)."""
    header = struct.pack(">hhih", api_key, version, correlation_id, len(CLIENT_ID)) + CLIENT_ID
    if flexible:
        header += NO_TAGS
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


# -- decoding ----------------------------------------------------------------
class Reader:
    """Reads fields of a response body in order."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def _take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise WireError("truncated response")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def int8(self) -> int:
        return struct.unpack(">b", self._take(1))[0]

    def int16(self) -> int:
        return struct.unpack(">h", self._take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self._take(4))[0]

    def int64(self) -> int:
        return struct.unpack(">q", self._take(8))[0]

    def uvarint(self) -> int:
        shift = n = 0
        while True:
            b = self._take(1)[0]
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7

    def string(self) -> str | None:  # int16 length, -1 = null
        n = self.int16()
        return None if n < 0 else self._take(n).decode()

    def cstring(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self._take(n - 1).decode()

    def array(self, item) -> list:  # int32 count, -1 = null
        n = self.int32()
        return [item(self) for _ in range(max(n, 0))]

    def carray(self, item) -> list:
        n = self.uvarint()
        return [] if n == 0 else [item(self) for _ in range(n - 1)]

    def cbytes(self) -> bytes | None:
        n = self.uvarint()
        return None if n == 0 else self._take(n - 1)

    def float64(self) -> float:
        return struct.unpack(">d", self._take(8))[0]

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self._take(self.uvarint())
