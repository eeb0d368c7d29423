"""Crash safety: a writer killed with SIGKILL loses nothing it reported flushed."""
from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import headrace

# Record i holds value(i); each append is one batch of 1-4 records; after
# every few appends the writer flushes and prints the offsets now durable.
WRITER = textwrap.dedent("""
    import random, sys
    import headrace

    def value(i):
        return (b"%08d:" % i) * (1 + (i * 7919) % 400)

    log = headrace.Log(sys.argv[1], segment_bytes=64 * 1024)
    rng = random.Random(7)
    i = log.end_offset
    pending = []
    while True:
        n = rng.randint(1, 4)
        base = log.append([(b"k%d" % (i + j), value(i + j)) for j in range(n)])
        assert base == i, (base, i)
        pending += range(i, i + n)
        i += n
        if rng.random() < 0.3:
            log.flush()
            sys.stdout.write("".join("%d\\n" % o for o in pending))
            sys.stdout.flush()
            pending = []
""")


def value(i: int) -> bytes:
    return (b"%08d:" % i) * (1 + (i * 7919) % 400)


def _run_and_kill(log_dir, min_reported: int) -> list[int]:
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(log_dir)],
                             stdout=subprocess.PIPE, text=True)
    reported = []
    try:
        for line in child.stdout:
            reported.append(int(line))
            if len(reported) >= min_reported:
                break
    finally:
        child.send_signal(signal.SIGKILL)  # mid-append: the loop never pauses
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert len(reported) >= min_reported, "writer died early"
    return reported


def test_sigkill_mid_append_keeps_every_flushed_offset_exactly_once(log_dir):
    reported = _run_and_kill(log_dir, 2000)
    # Kill it again after a restart, so recovery also runs over a recovered log.
    reported += _run_and_kill(log_dir, 500)
    assert reported == sorted(set(reported)), "offsets are reported once, in order"

    with headrace.Log(log_dir, segment_bytes=64 * 1024) as log:
        report = log.recovery_report
        assert report["segments"] >= 2
        assert report["truncated_bytes"] >= 0
        if report["truncated_at"] is not None:
            assert report["truncated_at"] == log.end_offset
        assert log.start_offset == 0
        assert log.end_offset > reported[-1]

        seen = []
        pos = 0
        while pos < log.end_offset:
            for r in log.read(pos):
                assert r.key == b"k%d" % r.offset
                assert r.value == value(r.offset), f"record {r.offset} is torn"
                seen.append(r.offset)
                pos = r.offset + 1
        assert seen == list(range(log.end_offset)), "offsets are dense, each present once"
        assert set(reported) <= set(seen)
