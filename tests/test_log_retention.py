"""Retention deletes exactly the right whole segments, never the active one."""
from __future__ import annotations

import pytest

from headrace import OffsetOutOfRangeError
from batch_builder import segment_bases, segment_files

DAY = 24 * 3600 * 1000
NOW = 1_700_000_000_000


def _segment_max_timestamps(log, bases, end):
    """{segment base: newest record timestamp in it}, read back through the log."""
    bounds = bases[1:] + [end]
    out = {}
    for base, nxt in zip(bases, bounds):
        ts, pos = [], base
        while pos < nxt:
            recs = [r for r in log.read(pos) if r.offset < nxt]
            ts += [r.timestamp for r in recs]
            pos = recs[-1].offset + 1
        out[base] = max(ts)
    return out


def test_time_retention_deletes_exactly_the_expired_segments(log_dir, open_log):
    log = open_log(log_dir, segment_bytes=1024, retention_ms=DAY)
    # 30 batches 10 days old, then 30 from the last hour.
    for i in range(60):
        ts = NOW - 10 * DAY + i if i < 30 else NOW - 3600_000 + i
        log.append([{"key": b"k", "value": b"%03d" % i + b"." * 120, "timestamp": ts}])
    bases = segment_bases(log_dir)
    newest = _segment_max_timestamps(log, bases, log.end_offset)
    expired = [b for b in bases[:-1] if newest[b] < NOW - DAY]
    assert 2 <= len(expired) < len(bases) - 1
    size_before = log.size_bytes

    result = log.apply_retention(now_ms=NOW)

    kept = [b for b in bases if b not in expired]
    assert result.segments_deleted == len(expired)
    assert segment_bases(log_dir) == kept
    assert log.start_offset == result.start_offset == kept[0]
    assert result.bytes_deleted == size_before - log.size_bytes > 0
    for suffix in (".index", ".timeindex"):
        assert all(int(p.name[:20]) in kept for p in segment_files(log_dir, suffix))
    assert log.read(kept[0])[0].offset == kept[0]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(kept[0] - 1)
    # Nothing more expires at the same time.
    assert log.apply_retention(now_ms=NOW).segments_deleted == 0


def test_time_retention_never_deletes_the_active_segment(log_dir, open_log):
    log = open_log(log_dir, segment_bytes=1024, retention_ms=DAY)
    for i in range(30):
        log.append([{"value": b"x" * 120, "timestamp": NOW - 30 * DAY}])
    bases = segment_bases(log_dir)
    result = log.apply_retention(now_ms=NOW)
    assert result.segments_deleted == len(bases) - 1
    assert segment_bases(log_dir) == bases[-1:]
    assert log.start_offset == bases[-1]
    assert log.end_offset == 30
    assert log.append([(None, b"still works")]) == 30


def test_size_retention_keeps_the_newest_segments_within_the_limit(log_dir, open_log):
    log = open_log(log_dir, segment_bytes=1024, retention_bytes=3000, retention_ms=-1)
    for i in range(60):
        log.append([{"value": b"%03d" % i + b"." * 120}])
    files = segment_files(log_dir)
    sizes = [p.stat().st_size for p in files]
    bases = segment_bases(log_dir)
    # Kafka's rule: drop the oldest segment while the log would still be at
    # least retention_bytes without it (the active segment always stays).
    total, drop = sum(sizes), 0
    while drop < len(sizes) - 1 and total - sizes[drop] >= 3000:
        total -= sizes[drop]
        drop += 1
    assert drop >= 2

    result = log.apply_retention()

    assert result.segments_deleted == drop
    assert result.bytes_deleted == sum(sizes[:drop])
    assert segment_bases(log_dir) == bases[drop:]
    assert log.start_offset == bases[drop]
    assert log.size_bytes == sum(sizes[drop:]) >= 3000
    assert log.end_offset == 60


def test_unlimited_retention_deletes_nothing(log_dir, open_log):
    log = open_log(log_dir, segment_bytes=1024, retention_ms=-1, retention_bytes=-1)
    for i in range(30):
        log.append([{"value": b"x" * 120, "timestamp": 1000}])
    bases = segment_bases(log_dir)
    assert log.apply_retention().segments_deleted == 0
    assert segment_bases(log_dir) == bases and log.start_offset == 0
