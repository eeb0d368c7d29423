"""headrace.Log: misuse raises the right exception and leaves the log as it was."""
from __future__ import annotations

import pytest

import headrace
from headrace import (
    HeadraceError,
    InvalidArgumentError,
    LogClosedError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from batch_builder import file_sizes


def test_read_outside_the_log_is_offset_out_of_range(log_dir, open_log):
    log = open_log(log_dir)
    for _ in range(3):
        log.append([(b"k", b"v")])
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1)
    with pytest.raises(IndexError):  # also the builtin
        log.read(100)
    log.truncate(1)
    assert log.end_offset == 1
    with pytest.raises(OffsetOutOfRangeError):
        log.read(2)


def test_read_below_start_after_retention_is_offset_out_of_range(log_dir, open_log):
    log = open_log(log_dir, segment_bytes=300, retention_bytes=0)
    for _ in range(10):
        log.append([(b"k", b"v" * 100)])
    log.apply_retention()
    assert log.start_offset > 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(log.start_offset - 1)
    assert log.read(log.start_offset)[0].offset == log.start_offset


def test_use_after_close_raises_log_closed(log_dir):
    log = headrace.Log(log_dir)
    log.append([(b"k", b"v")])
    log.close()
    log.close()  # idempotent
    calls = [
        lambda: log.append([(b"k", b"v")]),
        lambda: log.append(b"\x00" * 70),
        lambda: log.read(0),
        lambda: log.flush(),
        lambda: log.truncate(0),
        lambda: log.apply_retention(),
        lambda: log.offset_for_time(0),
        lambda: log.start_offset,
        lambda: log.end_offset,
        lambda: log.recovery_report,
    ]
    for call in calls:
        with pytest.raises(LogClosedError):
            call()
    with pytest.raises(ValueError):
        log.read(0)


def test_unknown_config_key_is_invalid_argument_naming_it(log_dir):
    with pytest.raises(InvalidArgumentError, match="segment_byte"):
        headrace.Log(log_dir, segment_byte=1024)
    with pytest.raises(InvalidArgumentError, match="retention_ms"):
        headrace.Log(log_dir, retention_ms="7d")
    with pytest.raises(InvalidArgumentError, match="message_timestamp_type"):
        headrace.Log(log_dir, message_timestamp_type="Now")
    with pytest.raises(InvalidArgumentError, match="max_message_bytes"):
        headrace.Log(log_dir, max_message_bytes=1 << 40)  # does not fit int32
    for key, value in [("segment_bytes", 0), ("segment_ms", 0), ("retention_ms", -2),
                       ("flush_messages", -2), ("max_index_bytes", 3)]:
        with pytest.raises(InvalidArgumentError, match=key):
            headrace.Log(log_dir, **{key: value})
    assert not log_dir.exists()  # nothing was created for a bad config


def test_every_documented_config_key_is_accepted(log_dir, open_log):
    log = open_log(log_dir, segment_bytes=1 << 20, segment_ms=3_600_000, retention_ms=-1,
                   retention_bytes=-1, index_interval_bytes=128, max_index_bytes=1 << 16,
                   max_message_bytes=1 << 20, flush_messages=1, flush_ms=1000,
                   message_timestamp_type="CreateTime")
    assert log.append([(b"k", b"v")]) == 0
    assert headrace.log.CONFIG_KEYS >= {"segment_bytes", "flush_messages", "message_timestamp_type"}


def test_bad_record_arguments(log_dir, open_log):
    log = open_log(log_dir)
    with pytest.raises(InvalidArgumentError):
        log.append([])
    with pytest.raises(HeadraceError):
        log.append(b"")
    with pytest.raises(TypeError):
        log.append([(1, 2)])
    with pytest.raises(TypeError):
        log.append([{"value": b"v", "partition": 3}])
    with pytest.raises(TypeError):
        log.append("not records")
    assert log.end_offset == 0


def test_batch_above_max_message_bytes_is_too_large_and_not_written(log_dir, open_log):
    log = open_log(log_dir, max_message_bytes=10_000)
    log.append([(b"k", b"small")])
    log.flush()
    before = file_sizes(log_dir)
    with pytest.raises(RecordTooLargeError):
        log.append([(b"k", b"x" * 20_000)])
    assert log.end_offset == 1
    assert file_sizes(log_dir) == before
    assert log.append([(b"k", b"fits")]) == 1
