"""KafkaSpout processing guarantees, with the spout running as Storm runs it
(a streamparse_run subprocess driven over multi-lang by tests/storm_harness.py)
against a real broker, and the spout process SIGKILLed mid-stream."""
from __future__ import annotations

import time

import pytest

from storm_harness import InFlight, SpoutExecutor
from storm_kafka import (committed, create_topic, offset_of, produce, start_spout,
                         storm_broker, unique)  # noqa: F401 (fixture)
from storm_multilang import env_ok

pytestmark = pytest.mark.skipif(env_ok() is not None, reason=str(env_ok()))
N, PARTS = 400, 2
COMMIT_MS = 100


def drive(ex: SpoutExecutor, until, on_tuple, timeout: float = 30.0) -> None:
    """Steps the executor until ``until()``; each delivered tuple goes to on_tuple."""
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "spout did not get there in time"
        for t in ex.step():
            on_tuple(t)


def settled_commit(bootstrap: str, group: str) -> dict:
    """The group's committed offsets once an OffsetCommit the killed spout had
    already sent (still in the broker's socket buffer) has landed: two reads
    0.3 s apart agree."""
    last = committed(bootstrap, group)
    while True:
        time.sleep(0.3)
        now = committed(bootstrap, group)
        if now == last:
            return now
        last = now


def test_at_least_once_sigkill_restart_emits_every_record_duplicates_only_uncommitted(
        storm_broker, tmp_path):
    topic, group = unique("alo"), unique("alo-g")
    create_topic(storm_broker.bootstrap, topic, PARTS)
    produce(storm_broker.bootstrap, topic, N, PARTS)
    conf = dict(topics=topic, group=group, guarantee="at_least_once", commit_period_ms=COMMIT_MS)

    # Run 1: the downstream acks each tuple once 25 newer ones were delivered.
    ex = start_spout(tmp_path, storm_broker.bootstrap, **conf)
    window: list[InFlight] = []
    acked_at: dict[str, float] = {}
    run1: list[str] = []

    def ack_late(t: InFlight) -> None:
        time.sleep(0.004)   # a downstream that takes its time: commits happen mid-stream
        run1.append(t.emit.msg_id)
        window.append(t)
        if len(window) > 25:
            old = window.pop(0)
            ex.ack(old)
            acked_at[old.emit.msg_id] = time.monotonic()

    drive(ex, lambda: len(run1) >= N // 2, ack_late)
    ex.task.proc.kill()            # SIGKILL mid-stream
    killed_at = time.monotonic()
    unacked = {t.emit.msg_id for t in window}
    commit = settled_commit(storm_broker.bootstrap, group)

    # The commit never passed a tuple that was still unacked.
    for mid in unacked:
        p, o = offset_of(mid)
        assert commit.get(p, 0) <= o, f"committed {commit} past unacked {mid}"

    # Run 2 (same deployment restarts the task): ack everything at once.
    ex2 = start_spout(tmp_path, storm_broker.bootstrap, **conf)
    run2: list[str] = []
    drive(ex2, lambda: len({offset_of(m) for m in run1 + run2}) >= N,
          lambda t: (run2.append(t.emit.msg_id), ex2.ack(t)))
    ex2.task.proc.kill()

    assert len(run1) == len(set(run1)) and len(run2) == len(set(run2)), "duplicate within a run"
    assert {offset_of(m) for m in run1 + run2} == {(i % PARTS, i // PARTS) for i in range(N)}
    for p in range(PARTS):   # run 2 resumed exactly at the committed offset
        first = min(o for q, o in map(offset_of, run2) if q == p)
        assert first == commit.get(p, 0), (p, first, commit)
    dups = set(run1) & set(run2)
    assert dups == {m for m in run1 if offset_of(m)[1] >= commit.get(offset_of(m)[0], 0)}, \
        (commit, sorted(dups, key=offset_of)[:4], len(dups))
    assert unacked <= dups
    # Every duplicate was unacked at the kill, or acked within the last commit period.
    late_acked = {m for m in dups - unacked if killed_at - acked_at[m] <= COMMIT_MS / 1e3 + 0.5}
    assert dups == unacked | late_acked, sorted(dups - unacked - late_acked)[:5]
    print(f"\nAT_LEAST_ONCE: {len(run1)} emitted before SIGKILL, {len(unacked)} unacked, "
          f"{len(dups)} duplicates ({len(late_acked)} acked but not yet committed)")


def test_at_most_once_sigkill_never_emits_twice_and_counts_what_is_lost(storm_broker, tmp_path):
    topic, group = unique("amo"), unique("amo-g")
    create_topic(storm_broker.bootstrap, topic, PARTS)
    produce(storm_broker.bootstrap, topic, N, PARTS)
    conf = dict(topics=topic, group=group, guarantee="at_most_once", max_poll_records=20)
    emitted: list[tuple[int, int]] = []

    def take(ex: SpoutExecutor, until) -> None:
        deadline = time.monotonic() + 30
        while not until():
            assert time.monotonic() < deadline
            ex.step()
            new = ex.task.emits[take.seen:]
            take.seen = len(ex.task.emits)
            for e in new:
                assert e.msg_id is None, "at-most-once tuples are unanchored"
                emitted.append((e.values[1], e.values[2]))

    ex = start_spout(tmp_path, storm_broker.bootstrap, **conf)
    take.seen = 0
    take(ex, lambda: len(emitted) >= N // 2 - 7)
    ex.task.proc.kill()
    run1 = list(emitted)
    commit = settled_commit(storm_broker.bootstrap, group)

    ex2 = start_spout(tmp_path, storm_broker.bootstrap, **conf)
    take.seen = 0
    last = N // PARTS - 1   # run 2 ends once each partition's last record is emitted or lost
    take(ex2, lambda: all((p, last) in emitted or commit.get(p, 0) > last for p in range(PARTS)))
    ex2.task.proc.kill()

    assert len(emitted) == len(set(emitted)), "a record was emitted twice"
    lost = {(i % PARTS, i // PARTS) for i in range(N)} - set(emitted)
    # Exactly the records committed (before emission) but not emitted at the kill.
    last1 = {p: max([o for q, o in run1 if q == p], default=-1) for p in range(PARTS)}
    assert lost == {(p, o) for p in range(PARTS) for o in range(last1[p] + 1, commit.get(p, 0))}
    for p in range(PARTS):   # what was buffered: under max_poll_records when polled, plus one poll
        assert sum(1 for q, _ in lost if q == p) < 2 * 20, "more lost than one buffer per partition"
    print(f"\nAT_MOST_ONCE: {len(run1)} emitted before SIGKILL, lost {len(lost)} of {N}, "
          f"0 duplicates")
