"""PartitionChain (headrace.storm.source_chain): which buffered source
records a transactional KafkaBolt may write and commit, whatever order the
tuples arrive in, and what replays are acked without writing."""
from __future__ import annotations

from headrace.storm.source_chain import PartitionChain


def test_ready_run_stops_at_a_gap_and_covers_skipped_offsets():
    c = PartitionChain()
    # Intervals [from, offset+1): the spout skipped offsets 0, 1, 3, 4; the
    # tuple of offset 6 (interval [6, 7)) has not arrived; arrival out of order.
    for off, frm in [(7, 7), (2, 0), (5, 3), (8, 8)]:
        assert c.add(off, frm, f"r{off}", f"t{off}")
    assert c.ready(100) == ([], -1), "nothing is ready before the frontier is read"
    assert c.set_frontier(0) == []
    run, end = c.ready(100)
    assert [e.offset for e in run] == [2, 5] and end == 6   # 7 waits for [6, 7)
    assert c.written(run, end) == ["t2", "t5"] and c.frontier == 6
    c.add(6, 6, "r6", "t6")
    run, end = c.ready(100)
    assert [e.offset for e in run] == [6, 7, 8] and end == 9


def test_replays_join_a_buffered_record_or_are_acked_below_the_frontier():
    c = PartitionChain()
    c.set_frontier(10)
    assert not c.add(9, 9, "r9", "old")         # already committed: ack without writing
    assert c.add(10, 10, "r10", "a") and c.add(10, 10, "r10", "b")   # a replay while buffered
    run, end = c.ready(100)
    assert len(run) == 1 and end == 11
    assert c.add(10, 10, "r10", "c")            # arrives during the transaction
    assert c.written(run, end) == ["a", "b", "c"] and c.frontier == 11 and len(c) == 0


def test_failed_transaction_fails_its_tuples_and_keeps_the_frontier():
    c = PartitionChain()
    c.set_frontier(0)
    c.add(0, 0, "r0", "a")
    c.add(1, 1, "r1", "b")
    run, end = c.ready(1)
    assert [e.offset for e in run] == [0] and end == 1   # limit: one entry per transaction
    assert c.dropped(run) == ["a"] and c.frontier == 0
    assert c.ready(100) == ([], 0)                        # 1 waits for 0's replay
    assert c.set_frontier(None) == [] and c.set_frontier(2) == ["b"]   # read again: 1 was written
