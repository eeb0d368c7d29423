"""The binding releases the GIL around I/O: other Python threads keep running."""
from __future__ import annotations

import sys
import threading
import time

import pytest

BIG = b"\xab" * (6 << 20)


@pytest.fixture
def long_switch_interval():
    """With a 2 s switch interval a thread that HOLDS the GIL is practically
    never preempted during one call, so any progress made by another thread
    while that call runs proves the call released the GIL."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(2.0)
    yield
    sys.setswitchinterval(old)


class Ticker(threading.Thread):
    """Counts in Python, sleeping briefly between ticks (so it hands the GIL
    back quickly), until stopped."""

    def __init__(self):
        super().__init__(daemon=True)
        self.count = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.count += 1
            time.sleep(0.0002)


def _progress_during(calls, ticker):
    """Runs each call; returns how many ticks happened during each one."""
    deltas = []
    for call in calls:
        before = ticker.count
        call()
        deltas.append(ticker.count - before)
    return deltas


def _calls_until_others_ran(call, ticker, need: int, limit: int) -> list[int]:
    """Runs `call` until `need` of the calls saw the other thread tick, at
    most `limit` times; returns the ticks seen during each call. A call that
    holds the GIL never sees a tick (the 2 s switch interval), however often
    it runs; one that releases it sees ticks whenever the scheduler gives the
    ticker a core during it, which a loaded 2-core machine does not always
    do within one call (why a fixed share of 8 calls was a flake)."""
    deltas: list[int] = []
    while len(deltas) < limit and sum(d > 0 for d in deltas) < need:
        deltas += _progress_during([call], ticker)
    return deltas


def test_big_appends_reads_and_flushes_let_other_threads_run(log_dir, open_log, long_switch_interval):
    log = open_log(log_dir, max_message_bytes=16 << 20, segment_bytes=64 << 20)
    ticker = Ticker()
    ticker.start()
    time.sleep(0.05)
    try:
        appends = _calls_until_others_ran(lambda: log.append([(b"k", BIG)]), ticker, 4, 24)
        flushes = _progress_during([log.flush], ticker)
        reads = _calls_until_others_ran(lambda: log.read(3), ticker, 4, 24)
    finally:
        ticker.stop.set()
        ticker.join()
    assert log.end_offset == len(appends)
    # Big calls let the other thread tick; a GIL-holding call would see 0.
    assert sum(d > 0 for d in appends) >= 4, appends
    assert sum(d > 0 for d in reads) >= 4, reads
    assert len(flushes) == 1


def test_concurrent_reader_thread_sees_a_consistent_log(log_dir, open_log):
    log = open_log(log_dir, segment_bytes=16 << 10)
    errors = []
    stop = threading.Event()
    reads = 0

    def reader():
        nonlocal reads
        while not stop.is_set():
            end = log.end_offset
            if end == 0:
                continue
            try:
                recs = log.read(max(0, end - 5))
                assert recs and all(r.value == b"v%d" % r.offset for r in recs)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
                return
            reads += 1

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(2000):
            assert log.append([(None, b"v%d" % i)]) == i
    finally:
        stop.set()
        t.join()
    assert errors == []
    assert reads > 0


def test_close_while_another_thread_appends_waits_for_the_call_in_flight(log_dir):
    import headrace

    log = headrace.Log(log_dir, segment_bytes=1 << 20)
    done, errors = [], []

    def writer():
        try:
            while True:
                done.append(log.append([(None, b"x" * 200_000)]))
        except headrace.LogClosedError as e:
            errors.append(e)

    t = threading.Thread(target=writer)
    t.start()
    while len(done) < 20 and t.is_alive():
        time.sleep(0.001)
    log.close()
    t.join(timeout=30)
    assert not t.is_alive() and len(errors) == 1
    assert done == list(range(len(done)))
    with headrace.Log(log_dir) as reopened:
        # every append that returned is there, nothing else
        assert reopened.end_offset == len(done)
        assert reopened.recovery_report["truncated_bytes"] == 0
