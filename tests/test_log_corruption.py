"""Recovery: a damaged tail is cut at exactly the bad batch; indexes are rebuilt."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from batch_builder import batch_spans, segment_files

SEGMENT_BYTES = 2048

# Appends `n` one-record batches, flushes all but the last `unflushed`, and
# dies by SIGKILL: the on-disk state of a crashed broker. Recovery scans and
# validates what lies after the flush point (like Kafka, a cleanly closed log
# is trusted up to its end).
CRASHING_WRITER = textwrap.dedent("""
    import os, signal, sys
    import headrace
    path, n, unflushed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    log = headrace.Log(path, segment_bytes=int(sys.argv[4]))
    for i in range(n):
        v = b"value-%04d-" % i + bytes([65 + i % 26]) * 100
        assert log.append([{"key": b"k%d" % i, "value": v, "timestamp": 1_000_000 + i * 10}]) == i
        if i == n - unflushed - 1:
            log.flush()
    os.kill(os.getpid(), signal.SIGKILL)
""")


def _value(i):
    return b"value-%04d-" % i + bytes([65 + i % 26]) * 100


def _fill(open_log, log_dir, batches=40, crash=False):
    """A log of `batches` one-record batches over several segments, closed
    cleanly or (crash=True) left by a killed writer with the last 2 batches
    unflushed. Returns {offset: value}."""
    if crash:
        child = subprocess.run([sys.executable, "-c", CRASHING_WRITER, str(log_dir), str(batches), "2",
                                str(SEGMENT_BYTES)])
        assert child.returncode == -signal.SIGKILL
    else:
        log = open_log(log_dir, segment_bytes=SEGMENT_BYTES)
        for i in range(batches):
            assert log.append([{"key": b"k%d" % i, "value": _value(i),
                                "timestamp": 1_000_000 + i * 10}]) == i
        log.close()
    assert len(segment_files(log_dir)) >= 3
    return {i: _value(i) for i in range(batches)}


def _last_batch(log_dir):
    last = segment_files(log_dir)[-1]
    spans = batch_spans(last.read_bytes())
    assert spans, "the last segment holds at least one batch"
    return last, spans[-1]


def _assert_intact_below(log, values, end):
    assert log.end_offset == end
    got, pos = {}, log.start_offset
    while pos < end:
        for r in log.read(pos):
            got[r.offset] = r.value
            pos = r.offset + 1
    assert got == {o: v for o, v in values.items() if o < end}


@pytest.mark.parametrize("where", ["record_bytes", "crc_field", "length_field"])
def test_damaged_last_batch_is_cut_exactly_there(where, log_dir, open_log):
    values = _fill(open_log, log_dir, crash=True)
    seg, (pos, size, base) = _last_batch(log_dir)
    seg_size = seg.stat().st_size
    with open(seg, "r+b") as f:
        at = {"record_bytes": pos + size - 10, "crc_field": pos + 17, "length_field": pos + 10}[where]
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x40]))
    log = open_log(log_dir, segment_bytes=SEGMENT_BYTES)
    report = log.recovery_report
    assert report["truncated_at"] == base
    assert report["truncated_bytes"] == seg_size - pos
    assert report["reason"] != ""
    assert seg.stat().st_size == pos
    _assert_intact_below(log, values, base)
    assert log.append([(b"new", b"after recovery")]) == base
    assert log.read(base)[0].value == b"after recovery"


def test_tail_cut_mid_batch_is_truncated_to_the_last_whole_batch(log_dir, open_log):
    values = _fill(open_log, log_dir, crash=True)
    seg, (pos, size, base) = _last_batch(log_dir)
    os.truncate(seg, pos + size // 2)
    log = open_log(log_dir, segment_bytes=SEGMENT_BYTES)
    report = log.recovery_report
    assert report["truncated_at"] == base
    assert report["truncated_bytes"] == size // 2
    assert seg.stat().st_size == pos
    _assert_intact_below(log, values, base)


def test_garbage_appended_after_the_last_batch_is_cut(log_dir, open_log):
    values = _fill(open_log, log_dir, crash=True)
    seg = segment_files(log_dir)[-1]
    good_size = seg.stat().st_size
    with open(seg, "ab") as f:
        f.write(b"\x00" * 7 + b"\xff" * 100)
    log = open_log(log_dir, segment_bytes=SEGMENT_BYTES)
    assert log.recovery_report["truncated_bytes"] == 107
    assert log.recovery_report["truncated_at"] == len(values)
    assert seg.stat().st_size == good_size
    _assert_intact_below(log, values, len(values))


@pytest.mark.parametrize("crash", [False, True], ids=["clean", "crash"])
@pytest.mark.parametrize("damage", ["delete", "garble", "empty"])
def test_damaged_indexes_are_rebuilt(damage, crash, log_dir, open_log):
    values = _fill(open_log, log_dir, batches=60, crash=crash)
    for suffix in (".index", ".timeindex"):
        files = segment_files(log_dir, suffix)
        assert files, f"the log keeps {suffix} files"
        for p in files:
            if damage == "delete":
                p.unlink()
            elif damage == "garble":
                p.write_bytes(os.urandom(max(p.stat().st_size, 96)))
            else:
                p.write_bytes(b"")
    log = open_log(log_dir, segment_bytes=SEGMENT_BYTES, index_interval_bytes=64)
    assert log.recovery_report["truncated_bytes"] == 0
    if damage != "empty" and not crash:
        # A trusted (cleanly closed) segment whose index is missing or bad is
        # rebuilt and reported. (After a crash the unflushed segments are
        # rescanned and their indexes rebuilt anyway; an empty index is valid.)
        assert log.recovery_report["indexes_rebuilt"] is True
    assert log.end_offset == len(values)
    for o in (0, 1, 17, 33, 42, 59):
        assert log.read(o)[0].offset == o
        assert log.read(o)[0].value == values[o]
    for o in (0, 5, 31, 59):
        assert log.offset_for_time(1_000_000 + o * 10) == o
        assert log.offset_for_time(1_000_000 + o * 10 - 5) == o
    assert log.offset_for_time(1_000_000 + 60 * 10) is None
