"""ShareSpout (docs/storm.md, "ShareSpout"): a Storm spout on a share group,
under the Storm harness against a real broker. Two tasks read one partition
together and every record is acked exactly once; a failed tuple comes back
with its delivery count raised (fail_as=release) or never (reject); the
records a SIGKILLed task held come back to the other task after the lock
expires, and nothing is lost.
"""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from broker_process import GROUP_ARGS, shared_broker
from storm_harness import InFlight, SpoutExecutor
from storm_kafka import create_topic, offset_of, produce, start_share_spout
from storm_multilang import env_ok

pytestmark = pytest.mark.skipif(env_ok() is not None, reason=str(env_ok()))

@pytest.fixture(scope="module")
def share_broker(tmp_path_factory):
    yield from shared_broker(tmp_path_factory, "storm-share", *GROUP_ARGS,
                             "--set", "group.share.heartbeat.interval.ms=500",
                             "--set", "group.share.min.record.lock.duration.ms=1000")


def _earliest_group(bootstrap: str, lock_ms: int = 15000) -> str:
    """A new share group id whose share-partitions start at the log start,
    with records locked for ``lock_ms`` (long by default: a lock that
    expires on a loaded machine before the tuple is acked delivers the
    record again, which these counts would take for a defect)."""
    group = f"storm-share-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource("group", group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest",
                    incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("share.record.lock.duration.ms", str(lock_ms),
                    incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(30)
    return group


def _topic(bootstrap: str, partitions: int, records: int) -> str:
    topic = f"storm-share-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, partitions)
    produce(bootstrap, topic, records, partitions)
    return topic


def _run(executors: list[SpoutExecutor], until, timeout: float = 60.0, on_tuple=None) -> None:
    """Steps every executor in turn until ``until()``; ``on_tuple(i, t)``
    sees each tuple task ``i`` delivers (default: ack it)."""
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "timed out"
        for i, ex in enumerate(executors):
            for t in ex.step():
                if on_tuple is None:
                    ex.ack(t)
                else:
                    on_tuple(i, t)


def test_two_tasks_share_one_partition_and_every_record_is_acked_once(share_broker, tmp_path):
    b = share_broker.bootstrap
    topic, group = _topic(b, 1, 200), _earliest_group(b)
    spouts = [start_share_spout(tmp_path, b, task_id=i, topics=topic, group=group,
                                max_poll_records=20, emit_batch=10) for i in (1, 2)]
    try:
        _run(spouts, lambda: sum(len(ex.acked) for ex in spouts) >= 200)
        time.sleep(0.5)
        for ex in spouts:   # nothing more comes: every record was accepted once
            for t in ex.step():
                ex.ack(t)
        acked = [offset_of(m) for ex in spouts for m in ex.acked]
        assert sorted(acked) == [(0, o) for o in range(200)]
        assert all(ex.acked for ex in spouts), [len(ex.acked) for ex in spouts]
    finally:
        for ex in spouts:
            ex.task.proc.kill()


@pytest.mark.parametrize("fail_as", ["release", "reject"])
def test_a_failed_tuple_comes_back_with_its_delivery_count_or_never(share_broker, tmp_path,
                                                                   fail_as):
    b = share_broker.bootstrap
    topic, group = _topic(b, 1, 10), _earliest_group(b)
    ex = start_share_spout(tmp_path, b, topics=topic, group=group, fail_as=fail_as)
    seen: list[InFlight] = []

    def on_tuple(_, t: InFlight) -> None:
        seen.append(t)
        if offset_of(t.emit.msg_id) == (0, 3) and t.emit.values[5] == 1:
            ex.fail(t)
        else:
            ex.ack(t)

    try:
        _run([ex], lambda: len(ex.acked) >= (10 if fail_as == "release" else 9),
             on_tuple=on_tuple)
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            for t in ex.step():
                on_tuple(0, t)
        threes = [t.emit.values[5] for t in seen if offset_of(t.emit.msg_id) == (0, 3)]
        assert threes == ([1, 2] if fail_as == "release" else [1]), threes
        assert sorted(offset_of(m)[1] for m in ex.acked) == \
            [o for o in range(10) if fail_as == "release" or o != 3]
    finally:
        ex.task.proc.kill()


def test_records_a_killed_task_held_come_back_to_the_other_task(share_broker, tmp_path):
    b = share_broker.bootstrap
    # The killed task's records come back when their locks expire (its
    # share session stays until the member's session times out): 5 s, long
    # enough for the other task's own acks on a loaded machine.
    topic, group = _topic(b, 1, 60), _earliest_group(b, lock_ms=5000)
    a = start_share_spout(tmp_path, b, task_id=1, topics=topic, group=group,
                          max_poll_records=20, emit_batch=20)
    held: list[InFlight] = []
    _run([a], lambda: len(held) >= 5, timeout=60, on_tuple=lambda _, t: held.append(t))
    a.task.proc.kill()   # SIGKILL with its tuples neither acked nor failed
    held_offsets = {offset_of(t.emit.msg_id)[1] for t in held}
    other = start_share_spout(tmp_path, b, task_id=2, topics=topic, group=group,
                              max_poll_records=20, emit_batch=20)
    counts: dict[int, int] = {}

    def on_tuple(_, t: InFlight) -> None:
        counts[offset_of(t.emit.msg_id)[1]] = t.emit.values[5]
        other.ack(t)

    try:
        _run([other], lambda: len(other.acked) >= 60, timeout=60, on_tuple=on_tuple)
        assert sorted(counts) == list(range(60)), "a record was lost"
        assert {o for o, n in counts.items() if n > 1} == held_offsets
    finally:
        other.task.proc.kill()
