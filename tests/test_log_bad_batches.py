"""Invalid RecordBatch bytes are refused with the right error; the log is untouched."""
from __future__ import annotations

import struct

import crc32c
import pytest

from headrace import CorruptRecordError, HeadraceError
from batch_builder import ATTRIBUTES_OFFSET, CRC_OFFSET, encode_batch, file_sizes

GOOD = encode_batch([(b"key", b"value-1"), (None, b"value-2", [("h", b"x")])])


def _flip(b: bytes, pos: int) -> bytes:
    out = bytearray(b)
    out[pos] ^= 0x5A
    return bytes(out)


def _with_length(b: bytes, length: int) -> bytes:
    out = bytearray(b)
    struct.pack_into(">i", out, 8, length)
    return bytes(out)


def _with_count(b: bytes, count: int) -> bytes:
    out = bytearray(b)
    struct.pack_into(">i", out, 57, count)  # record count; then fix the CRC
    struct.pack_into(">I", out, CRC_OFFSET, crc32c.crc32c(bytes(out[ATTRIBUTES_OFFSET:])))
    return bytes(out)


BAD_BATCHES = {
    "crc_mismatch_in_records": (_flip(GOOD, len(GOOD) - 3), CorruptRecordError),
    "crc_field_wrong": (_flip(GOOD, CRC_OFFSET), CorruptRecordError),
    "length_runs_past_the_input": (_with_length(GOOD, len(GOOD) - 12 + 50), CorruptRecordError),
    "length_below_header": (_with_length(GOOD, 20), CorruptRecordError),
    "length_shorter_than_records": (_with_length(GOOD, len(GOOD) - 12 - 5), CorruptRecordError),
    "negative_length": (_with_length(GOOD, -1), CorruptRecordError),
    "record_count_lies": (_with_count(GOOD, 3), CorruptRecordError),
    "truncated_input": (GOOD[:40], CorruptRecordError),
    "good_then_garbage": (GOOD + b"\x00\x01\x02", CorruptRecordError),
    "good_then_bad_crc": (GOOD + _flip(GOOD, len(GOOD) - 1), CorruptRecordError),
}


@pytest.fixture
def used_log(log_dir, open_log):
    log = open_log(log_dir, segment_bytes=1 << 20)
    log.append([(b"before", b"1"), (b"before", b"2")])
    log.flush()
    return log


@pytest.mark.parametrize("name", sorted(BAD_BATCHES))
def test_bad_batch_is_refused_and_log_untouched(name, used_log, log_dir):
    data, error = BAD_BATCHES[name]
    before = file_sizes(log_dir)
    with pytest.raises(error):
        used_log.append(data)
    assert used_log.end_offset == 2
    assert file_sizes(log_dir) == before
    assert [r.value for r in used_log.read(0)] == [b"1", b"2"]
    assert used_log.append(GOOD) == 2  # and the log still works


@pytest.mark.parametrize("magic", [0, 1, 3, 0x7F])
def test_wrong_magic_is_refused_and_log_untouched(magic, used_log, log_dir):
    before = file_sizes(log_dir)
    data = encode_batch([(b"k", b"v")], magic=magic)  # CRC is right; magic is not 2
    with pytest.raises(CorruptRecordError) as info:  # log.h: Append reports a bad magic as Corruption
        used_log.append(data)
    assert isinstance(info.value, HeadraceError)
    assert used_log.end_offset == 2
    assert file_sizes(log_dir) == before
