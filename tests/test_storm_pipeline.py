"""A whole topology under the harness: KafkaSpout -> KafkaBolt, tuples routed
by the harness, tracked by its acker (the spout's tuple is acked only when
the bolt acked the tuple delivered to it, i.e. after the broker stored the
copy), and the spout commits only then."""
from __future__ import annotations

import time

import pytest

from storm_kafka import (SPOUT_FIELDS, committed, create_topic, produce, read_all,
                         start_bolt, start_spout, storm_broker, unique)  # noqa: F401
from storm_multilang import env_ok

pytestmark = pytest.mark.skipif(env_ok() is not None, reason=str(env_ok()))
N = 200


def test_spout_to_bolt_copies_every_record_and_commits_after_the_copy_is_acked(
        storm_broker, tmp_path):
    src, dst, group = unique("src"), unique("dst"), unique("copy-g")
    create_topic(storm_broker.bootstrap, src, 2)
    create_topic(storm_broker.bootstrap, dst, 1)
    produce(storm_broker.bootstrap, src, N, 2)
    spout = start_spout(tmp_path, storm_broker.bootstrap, topics=src, group=group,
                        commit_period_ms=100, max_pending=50)
    bolt = start_bolt(tmp_path, storm_broker.bootstrap, SPOUT_FIELDS, topic=dst,
                      message_field="value")
    routed = {}   # bolt tuple id -> spout InFlight
    done = 0
    deadline = time.monotonic() + 30
    while len(spout.acked) < N:
        assert time.monotonic() < deadline, f"{len(spout.acked)} of {N} acked"
        for t in spout.step():
            routed[bolt.send_tuple(t.emit.values, comp="spout")] = t
        finished = bolt.acked_since(done)
        done += len(finished)
        for tup_id in finished:
            spout.ack(routed.pop(tup_id))
    for _ in range(20):   # a few more turns: the commit period elapses
        spout.step()
        time.sleep(0.01)
    assert bolt.failed == [] and bolt.violations == [] and spout.failed == []
    copied = read_all(storm_broker.bootstrap, dst, 1, N)
    assert sorted(v for _, _, _, v in copied) == sorted(f"v{i}".encode() for i in range(N))
    assert {k for _, _, k, _ in copied} == {f"k{i}".encode() for i in range(N)}
    assert committed(storm_broker.bootstrap, group) == {0: N // 2, 1: N // 2}
    spout.task.proc.kill()
    bolt.close()
