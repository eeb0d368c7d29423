"""KafkaSpout flow control under the Storm harness: retries with exponential
back-off and a retry limit, max uncommitted offsets (back-pressure), two tasks
of one group splitting the partitions, and the first poll offset strategies."""
from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from headrace.admin import Admin
from storm_harness import InFlight, SpoutExecutor
from storm_kafka import (committed, create_topic, offset_of, produce, start_spout,
                         storm_broker, unique)  # noqa: F401 (fixture)
from storm_multilang import env_ok

pytestmark = pytest.mark.skipif(env_ok() is not None, reason=str(env_ok()))


def collect(ex: SpoutExecutor, seconds: float, on_tuple=lambda t: None) -> list[InFlight]:
    """Steps the executor for ``seconds``; returns the tuples delivered."""
    out: list[InFlight] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for t in ex.step():
            out.append(t)
            on_tuple(t)
    return out


def wait_emit(ex: SpoutExecutor, timeout: float) -> tuple[InFlight, float]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = ex.step()
        if got:
            assert len(got) == 1
            return got[0], time.monotonic()
    raise AssertionError("no tuple emitted")


def test_failed_tuple_is_reemitted_after_exponential_backoff_then_dropped_at_retry_limit(
        storm_broker, tmp_path):
    topic, group = unique("retry"), unique("retry-g")
    create_topic(storm_broker.bootstrap, topic, 1)
    produce(storm_broker.bootstrap, topic, 3, 1)
    # retry n is due initial + period * 2**(n-1) after the n-th failure: 0.4 s, 0.6 s
    ex = start_spout(tmp_path, storm_broker.bootstrap, topics=topic, group=group,
                     commit_period_ms=100, retry_initial_delay_ms=200,
                     retry_delay_period_ms=200, retry_max_retries=2)
    first, _ = wait_emit(ex, 20)
    assert offset_of(first.emit.msg_id) == (0, 0)
    for t in collect(ex, 0.3):
        ex.ack(t)                       # offsets 1 and 2 are acked
    ex.fail(first)
    failed_at = time.monotonic()
    for delay in (0.4, 0.6):
        again, at = wait_emit(ex, 5)
        assert again.emit.msg_id == first.emit.msg_id and again.emit.values == first.emit.values
        assert delay <= at - failed_at < delay + 0.5, (delay, at - failed_at)
        ex.fail(again)
        failed_at = time.monotonic()
    assert collect(ex, 1.2) == [], "re-emitted past the retry limit"
    assert any("dropping" in line and first.emit.msg_id in line for line in ex.task.logs)
    assert committed(storm_broker.bootstrap, group) == {0: 3}, "dropped tuple blocks the commit"
    ex.task.proc.kill()


def test_max_uncommitted_offsets_stops_emission_until_acks_are_committed(storm_broker, tmp_path):
    topic, group = unique("maxunc"), unique("maxunc-g")
    create_topic(storm_broker.bootstrap, topic, 2)
    produce(storm_broker.bootstrap, topic, 100, 2)
    ex = start_spout(tmp_path, storm_broker.bootstrap, topics=topic, group=group,
                     commit_period_ms=100, max_uncommitted=10)
    held = collect(ex, 1.5)
    assert Counter(offset_of(t.emit.msg_id)[0] for t in held) == {0: 10, 1: 10}
    for t in held:
        ex.ack(t)
    more = collect(ex, 1.5)   # acks committed at the next commit period, then 10 more each
    assert Counter(offset_of(t.emit.msg_id)[0] for t in more) == {0: 10, 1: 10}
    assert committed(storm_broker.bootstrap, group) == {0: 10, 1: 10}
    for t in more:
        ex.ack(t)
    rest: list[InFlight] = []
    deadline = time.monotonic() + 20
    while len(held) + len(more) + len(rest) < 100 and time.monotonic() < deadline:
        rest += collect(ex, 0.2, on_tuple=ex.ack)
    ids = [t.emit.msg_id for t in held + more + rest]
    assert sorted(map(offset_of, ids)) == sorted((i % 2, i // 2) for i in range(100))
    ex.task.proc.kill()


def _run_task(ex: SpoutExecutor, stop: threading.Event, seen: list) -> None:
    while not stop.is_set():
        for t in ex.step():
            seen.append(offset_of(t.emit.msg_id))
            ex.ack(t)


def test_two_spout_tasks_in_one_group_split_the_partitions(storm_broker, tmp_path):
    topic, group = unique("split"), unique("split-g")
    create_topic(storm_broker.bootstrap, topic, 4)
    a = start_spout(tmp_path, storm_broker.bootstrap, task_id=1, topics=topic, group=group)
    b = start_spout(tmp_path, storm_broker.bootstrap, task_id=2, topics=topic, group=group)
    stop, seen_a, seen_b = threading.Event(), [], []
    threads = [threading.Thread(target=_run_task, args=(a, stop, seen_a)),
               threading.Thread(target=_run_task, args=(b, stop, seen_b))]
    for t in threads:
        t.start()
    try:
        admin, deadline = Admin(storm_broker.bootstrap), time.monotonic() + 30
        while True:   # both members stable with two partitions each
            desc = admin.describe_group(group)
            sizes = [len(m.assignment.topic_partitions) for m in desc.members]
            if str(desc.state).endswith("STABLE") and sorted(sizes) == [2, 2]:
                break
            assert time.monotonic() < deadline, f"group never split: {desc.state} {sizes}"
            time.sleep(0.2)
        produce(storm_broker.bootstrap, topic, 200, 4)
        deadline = time.monotonic() + 30
        while len(seen_a) + len(seen_b) < 200 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    parts_a, parts_b = {p for p, _ in seen_a}, {p for p, _ in seen_b}
    assert len(parts_a) == 2 and len(parts_b) == 2 and parts_a | parts_b == {0, 1, 2, 3}
    assert sorted(seen_a + seen_b) == sorted((i % 4, i // 4) for i in range(200))
    for ex in (a, b):
        ex.task.proc.kill()


@pytest.mark.parametrize("strategy, storm_id, expect_first", [
    ("earliest", "other-deployment", 0),          # a new deployment starts over
    ("earliest", "headrace-test-1-1700000000", 5),  # a restart of this one resumes
    ("uncommitted_earliest", "other-deployment", 5),
    ("latest", "other-deployment", 10),           # only records produced from now on
    ("uncommitted_latest", "other-deployment", 5),
])
def test_first_poll_offset_strategy(storm_broker, tmp_path, strategy, storm_id, expect_first):
    from confluent_kafka import Consumer, TopicPartition
    from headrace.storm.consumer import commit_metadata
    topic, group = unique("first"), unique("first-g")
    create_topic(storm_broker.bootstrap, topic, 1)
    produce(storm_broker.bootstrap, topic, 10, 1)
    c = Consumer({"bootstrap.servers": storm_broker.bootstrap, "group.id": group})
    c.commit(offsets=[TopicPartition(topic, 0, 5, metadata=commit_metadata(storm_id, 1))],
             asynchronous=False)
    c.close()
    ex = start_spout(tmp_path, storm_broker.bootstrap, topics=topic, group=group,
                     first_poll=strategy)
    if expect_first == 10:
        collect(ex, 1.0)   # assigned at the end; nothing to emit yet
        produce(storm_broker.bootstrap, topic, 1, 1, start=10)
    first, _ = wait_emit(ex, 20)
    assert offset_of(first.emit.msg_id) == (0, expect_first)
    ex.task.proc.kill()


def test_partitions_are_emitted_round_robin_one_tuple_each(storm_broker, tmp_path):
    topic, group = unique("rr"), unique("rr-g")
    create_topic(storm_broker.bootstrap, topic, 3)
    # 1000 per partition, all there at start: one poll (100 records) holds one
    # partition only, so emitting what is buffered would emit them in runs.
    produce(storm_broker.bootstrap, topic, 3000, 3)
    ex = start_spout(tmp_path, storm_broker.bootstrap, topics=topic, group=group,
                     max_poll_records=100, max_pending=1)
    first, _ = wait_emit(ex, 20)
    time.sleep(1.0)   # max pending reached: no next; the consumer fetches every partition
    ex.max_pending = None
    ex.ack(first)
    order: list[int] = [offset_of(first.emit.msg_id)[0]]
    deadline = time.monotonic() + 30
    while len(order) < 3000 and time.monotonic() < deadline:
        for t in ex.step():
            order.append(offset_of(t.emit.msg_id)[0])
            ex.ack(t)
    ex.task.proc.kill()
    assert sorted(order) == sorted(i % 3 for i in range(3000))
    # From the first time every partition has records buffered, each run of
    # three tuples holds one of each partition, in the same order.
    start = max(order.index(p) for p in range(3))
    assert start < 50, f"a partition waited {start} tuples: {order[:12]}"
    head = order[start - 2:start + 1]   # the first full cycle ends at `start`
    body = order[start + 1:start + 1 + 3 * 800]
    assert sorted(head) == [0, 1, 2], order[:12]
    cycles = [body[i:i + 3] for i in range(0, len(body), 3)]
    assert all(c == head for c in cycles), (order[:12], [c for c in cycles if c != head][:3])
    print(f"\nround robin: first cycle complete after {start + 1} tuples, then "
          f"{len(cycles)} cycles {head}")


def test_emit_batch_emits_several_tuples_per_next_within_max_spout_pending(
        storm_broker, tmp_path):
    topic, group = unique("batch"), unique("batch-g")
    create_topic(storm_broker.bootstrap, topic, 2)
    produce(storm_broker.bootstrap, topic, 300, 2)
    ex = start_spout(tmp_path, storm_broker.bootstrap, topics=topic, group=group,
                     emit_batch=30, max_pending=70)
    sizes: list[int] = []
    held: list[InFlight] = []
    end = time.monotonic() + 2.0
    while time.monotonic() < end:   # nothing acked: pending fills to the limit exactly
        got = ex.step()
        if got:
            sizes.append(len(got))
            held += got
        assert len(ex.pending) <= 70
    assert len(held) == 70 and max(sizes) == 30, sizes
    order: list[tuple[int, int]] = [offset_of(t.emit.msg_id) for t in held]
    for t in held:
        ex.ack(t)
    deadline = time.monotonic() + 30
    while len(order) < 300 and time.monotonic() < deadline:
        got = ex.step()
        assert len(got) <= 30
        for t in got:
            order.append(offset_of(t.emit.msg_id))
            ex.ack(t)
    ex.task.proc.kill()
    assert sorted(order) == sorted((i % 2, i // 2) for i in range(300))
    for p in (0, 1):   # offset order within a partition
        assert [o for q, o in order if q == p] == list(range(150))
