"""headrace.Log: what goes in comes back out, with dense offsets."""
from __future__ import annotations

import os
import time

import headrace
from batch_builder import encode_batch, segment_bases


def test_records_round_trip_with_keys_headers_and_timestamps(log_dir, open_log):
    log = open_log(log_dir)
    base = log.append([
        {"key": b"k1", "value": b"v1", "headers": [("trace", b"abc"), ("empty", b""), ("nul", None)],
         "timestamp": 1_600_000_000_123},
        {"key": "clé", "value": "välue", "timestamp": 1_600_000_000_456},
        (None, b"no key"),
        (b"empty value", b""),
        (b"null value", None),
    ])
    assert base == 0
    assert log.end_offset == 5
    recs = log.read(0)
    assert [r.offset for r in recs] == [0, 1, 2, 3, 4]
    assert recs[0] == headrace.Record(0, b"k1", b"v1", [("trace", b"abc"), ("empty", b""), ("nul", None)],
                                      1_600_000_000_123)
    assert (recs[1].key, recs[1].value) == ("clé".encode(), "välue".encode())
    assert recs[1].timestamp == 1_600_000_000_456
    assert (recs[2].key, recs[2].value, recs[2].headers) == (None, b"no key", [])
    assert (recs[3].key, recs[3].value) == (b"empty value", b"")
    assert (recs[4].key, recs[4].value) == (b"null value", None)
    # A record without a timestamp gets "now".
    now = time.time() * 1000
    assert abs(recs[2].timestamp - now) < 60_000


def test_second_append_continues_offsets_and_read_drops_records_below_offset(log_dir, open_log):
    log = open_log(log_dir)
    assert log.append([(b"a", b"0"), (b"a", b"1"), (b"a", b"2")]) == 0
    assert log.append([(b"b", b"3"), (b"b", b"4")]) == 3
    assert [r.value for r in log.read(1)] == [b"1", b"2", b"3", b"4"]
    assert [r.offset for r in log.read(4)] == [4]
    assert log.read(5) == []  # end offset: nothing yet, not an error


def test_multi_mib_values_round_trip(log_dir, open_log):
    log = open_log(log_dir, max_message_bytes=16 << 20)
    big = [os.urandom(3 << 20), os.urandom(5 << 20), b"x" * (6 << 20)]
    offsets = [log.append([(b"big%d" % i, v)]) for i, v in enumerate(big)]
    assert offsets == [0, 1, 2]
    for i, v in enumerate(big):
        # max_bytes far below the batch size still returns the whole first batch
        (rec,) = log.read(i, max_bytes=1)
        assert rec.offset == i and rec.key == b"big%d" % i and rec.value == v


def test_offsets_dense_and_monotonic_across_many_segments_and_reopen(log_dir, open_log):
    log = open_log(log_dir, segment_bytes=4096)
    expected = []
    next_offset = 0
    for i in range(300):
        n = 1 + i % 3
        batch = [(b"k%d" % i, b"v%d-%d-" % (i, j) + b"." * (i % 50)) for j in range(n)]
        assert log.append(batch) == next_offset
        expected += [(next_offset + j, v) for j, (_, v) in enumerate(batch)]
        next_offset += n
    assert log.end_offset == next_offset == len(expected)
    bases = segment_bases(log_dir)
    assert len(bases) >= 10 and bases == sorted(bases) and bases[0] == 0
    assert log.segment_count == len(bases)

    def read_all(lg):
        out, pos = [], 0
        while pos < lg.end_offset:
            recs = lg.read(pos, max_bytes=1000)
            assert recs and recs[0].offset == pos
            out += [(r.offset, r.value) for r in recs]
            pos = recs[-1].offset + 1
        return out

    assert read_all(log) == expected
    log.close()
    reopened = open_log(log_dir, segment_bytes=4096)
    assert reopened.end_offset == len(expected)
    report = reopened.recovery_report
    assert report["truncated_bytes"] == 0 and report["truncated_at"] is None and report["reason"] == ""
    assert report["segments"] == len(bases)
    assert read_all(reopened) == expected
    assert reopened.append([(None, b"after reopen")]) == len(expected)


def test_raw_record_batch_bytes_are_accepted_and_offsets_reassigned(log_dir, open_log):
    log = open_log(log_dir)
    log.append([(b"first", b"record")])
    b1 = encode_batch([(b"a", b"1", [("h", b"x")], 1_650_000_000_000), (None, b"2")],
                      base_offset=999, base_timestamp=1_650_000_000_000)
    b2 = encode_batch([(b"c", b"3")], base_offset=12345, base_timestamp=1_650_000_001_000)
    assert log.append(b1 + b2) == 1  # one call, two batches
    assert log.append(bytearray(encode_batch([(b"d", b"4")]))) == 4
    assert log.append(memoryview(encode_batch([(b"e", b"5")]))) == 5
    recs = log.read(1)
    assert [(r.offset, r.key, r.value) for r in recs] == [
        (1, b"a", b"1"), (2, None, b"2"), (3, b"c", b"3"), (4, b"d", b"4"), (5, b"e", b"5")]
    assert recs[0].headers == [("h", b"x")]
    assert recs[0].timestamp == 1_650_000_000_000
    assert recs[2].timestamp == 1_650_000_001_000


def test_offset_for_time_finds_first_batch_at_or_after(log_dir, open_log):
    log = open_log(log_dir, segment_bytes=1024)
    for i in range(40):
        log.append([{"key": b"t", "value": b"v" * 50, "timestamp": 1_000_000 + i * 1000}])
    assert log.offset_for_time(0) == 0
    assert log.offset_for_time(1_000_000) == 0
    assert log.offset_for_time(1_000_001) == 1
    assert log.offset_for_time(1_025_000) == 25
    assert log.offset_for_time(1_039_000) == 39
    assert log.offset_for_time(1_039_001) is None


def test_log_append_time_replaces_timestamps(log_dir, open_log):
    log = open_log(log_dir, message_timestamp_type="LogAppendTime")
    log.append([{"value": b"old", "timestamp": 1000}])
    (rec,) = log.read(0)
    assert abs(rec.timestamp - time.time() * 1000) < 60_000


def test_context_manager_closes_and_data_survives(log_dir):
    with headrace.Log(log_dir) as log:
        log.append([(b"k", b"v")])
        assert not log.closed
    assert log.closed
    with headrace.Log(log_dir) as log:
        assert [r.value for r in log.read(0)] == [b"v"]
        assert log.start_offset == 0 and log.end_offset == 1
