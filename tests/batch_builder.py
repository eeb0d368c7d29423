"""A small, independent pure-Python Kafka RecordBatch v2 encoder for tests.

Written from the Kafka protocol guide's description of the format, so that
tests check the C++ codec against a second implementation rather than itself.
Also: helpers to look at a log directory's segment files.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Iterable, Optional, Sequence

import crc32c

HEADER_SIZE = 61           # base offset .. record count
CRC_OFFSET = 17            # 8 base offset + 4 length + 4 epoch + 1 magic
MAGIC_OFFSET = 16
ATTRIBUTES_OFFSET = 21     # what the CRC covers starts here


def varint(n: int) -> bytes:
    """Zigzag varint (Kafka's varint/varlong)."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _bytes_field(b: Optional[bytes]) -> bytes:
    return varint(-1) if b is None else varint(len(b)) + b


def encode_record(offset_delta: int, timestamp_delta: int, key: Optional[bytes],
                  value: Optional[bytes], headers: Sequence[tuple[str, Optional[bytes]]] = ()) -> bytes:
    body = bytearray(b"\x00")  # attributes
    body += varint(timestamp_delta) + varint(offset_delta)
    body += _bytes_field(key) + _bytes_field(value)
    body += varint(len(headers))
    for hk, hv in headers:
        body += _bytes_field(hk.encode()) + _bytes_field(hv)
    return varint(len(body)) + bytes(body)


TRANSACTIONAL = 0x10       # attributes bit 4
CONTROL = 0x20             # attributes bit 5


def encode_batch(records: Iterable[tuple], base_offset: int = 0, base_timestamp: int = 1_700_000_000_000,
                 magic: int = 2, producer_id: int = -1, producer_epoch: int = -1,
                 base_sequence: int = -1, attributes: int = 0) -> bytes:
    """records: (key, value) or (key, value, headers) or (key, value, headers, timestamp_ms)."""
    recs = []
    timestamps = []
    for i, r in enumerate(records):
        key, value = r[0], r[1]
        headers = r[2] if len(r) > 2 else ()
        ts = r[3] if len(r) > 3 else base_timestamp + i
        timestamps.append(ts)
        recs.append(encode_record(i, ts - base_timestamp, key, value, headers))
    first_ts = base_timestamp
    max_ts = max(timestamps) if timestamps else base_timestamp
    after_crc = struct.pack(">hiqqqhii", attributes, len(recs) - 1, first_ts, max_ts, producer_id,
                            producer_epoch, base_sequence, len(recs)) + b"".join(recs)
    crc = crc32c.crc32c(after_crc)
    after_length = struct.pack(">ibI", 0, magic, crc) + after_crc
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


def encode_control_batch(commit: bool, producer_id: int, producer_epoch: int,
                         coordinator_epoch: int, base_offset: int = 0,
                         base_timestamp: int = 1_700_000_000_000) -> bytes:
    """A transaction marker: a transactional control batch of one record whose
    key is (int16 version 0, int16 type: 1 COMMIT, 0 ABORT) and value
    (int16 version 0, int32 coordinator epoch)."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return encode_batch([(key, value)], base_offset=base_offset, base_timestamp=base_timestamp,
                        producer_id=producer_id, producer_epoch=producer_epoch,
                        attributes=TRANSACTIONAL | CONTROL)


def batch_spans(data: bytes) -> list[tuple[int, int, int]]:
    """(position, size, base_offset) of each whole batch in a .log file's bytes."""
    spans, pos = [], 0
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if pos + 12 + length > len(data):
            break
        spans.append((pos, 12 + length, base))
        pos += 12 + length
    return spans


def segment_files(log_dir: os.PathLike, suffix: str = ".log") -> list[Path]:
    """The directory's segment files with this suffix, sorted by base offset."""
    return sorted(p for p in Path(log_dir).iterdir() if p.name.endswith(suffix) and p.name[:20].isdigit())


def segment_bases(log_dir: os.PathLike) -> list[int]:
    return [int(p.name[:20]) for p in segment_files(log_dir)]


def file_sizes(log_dir: os.PathLike) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in Path(log_dir).iterdir() if p.is_file()}
