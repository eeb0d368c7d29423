"""KafkaBolt under the Storm harness (async tuples, heartbeats) against a real
broker: acked mode writes exactly what it acked, fails tuples while the
broker is down; fire-and-forget acks at once; a topic chosen per tuple."""
from __future__ import annotations

import json
import time

import pytest

from storm_kafka import create_topic, read_all, start_bolt, storm_broker, unique  # noqa: F401
from storm_multilang import env_ok

pytestmark = pytest.mark.skipif(env_ok() is not None, reason=str(env_ok()))
FIELDS = ["key", "message"]
FAST_FAIL = {"message.timeout.ms": 1500, "reconnect.backoff.max.ms": 300,
             "socket.connection.setup.timeout.ms": 1000}


def test_acked_bolt_writes_exactly_what_it_acked_and_answers_heartbeats(storm_broker, tmp_path):
    topic = unique("bolt")
    create_topic(storm_broker.bootstrap, topic, 1)
    bolt = start_bolt(tmp_path, storm_broker.bootstrap, FIELDS, topic=topic)
    ids = [bolt.send_tuple([f"k{i}", f"m{i}"]) for i in range(50)]
    bolt.wait_for(lambda: len(bolt.acked) == 50, 20, "50 acks")
    bolt.wait_for(lambda: bolt.syncs >= 1, 5, "a heartbeat sync")
    assert sorted(bolt.acked) == sorted(ids) and bolt.failed == [] and bolt.violations == []
    records = read_all(storm_broker.bootstrap, topic, 1, 50)
    assert [(k, v) for _, _, k, v in records] == \
        [(f"k{i}".encode(), f"m{i}".encode()) for i in range(50)]
    assert bolt.errors == []
    bolt.close()


def test_topic_field_selects_the_topic_and_undeclared_streams_map_by_position(
        storm_broker, tmp_path):
    a, b = unique("sel-a"), unique("sel-b")
    for t in (a, b):
        create_topic(storm_broker.bootstrap, t, 1)
    bolt = start_bolt(tmp_path, storm_broker.bootstrap, ["key", "message", "dest"],
                      topic=a, topic_field="dest")
    bolt.send_tuple(["x", {"n": 1}, b])      # to b, value as JSON
    bolt.send_tuple([None, "plain", None])   # no dest: the default topic a
    bolt.send_tuple(["y", "z"], comp="other")   # undeclared source: [key, message]
    bolt.wait_for(lambda: len(bolt.acked) == 3, 20, "3 acks")
    got_b = read_all(storm_broker.bootstrap, b, 1, 1)
    got_a = read_all(storm_broker.bootstrap, a, 1, 2)
    assert [(k, json.loads(v)) for _, _, k, v in got_b] == [(b"x", {"n": 1})]
    assert [(k, v) for _, _, k, v in got_a] == [(None, b"plain"), (b"y", b"z")]
    assert bolt.failed == [] and bolt.violations == []
    bolt.close()


def replay_until_acked(bolt, tuples: list[list], timeout: float) -> dict[str, list]:
    """Sends ``tuples`` and re-sends each one that fails, as a spout replays
    a failed tuple, until all are acked; returns {tuple id: values} of every
    tuple sent (the failed ones too).

    A producer that lost every broker finds a restarted one on librdkafka's
    1 s topic scan, and may send its Metadata request only on the scan after
    (it logs "already being requested" and waits): up to ~2 s, more than
    FAST_FAIL's message.timeout.ms, so a tuple sent right after the restart
    may fail. Such a record was never sent, so its replay writes it once."""
    deadline = time.monotonic() + timeout
    sent = {bolt.send_tuple(t): t for t in tuples}
    waiting, fails_seen = set(sent), len(bolt.failed)
    while waiting:
        bolt.wait_for(lambda: len(bolt.failed) > fails_seen or not waiting.isdisjoint(bolt.acked),
                      max(deadline - time.monotonic(), 0), "acks after the broker is back")
        failed = bolt.failed_since(fails_seen)
        fails_seen += len(failed)
        waiting -= set(bolt.acked_since(0))
        for i in waiting & set(failed):
            waiting.discard(i)
            replay = bolt.send_tuple(sent[i])
            sent[replay] = sent[i]
            waiting.add(replay)
    return sent


def test_bolt_fails_tuples_while_the_broker_is_down_and_writes_what_it_acked(
        broker_factory, tmp_path):
    import storm_kafka
    broker = broker_factory(tmp_path / "data", *storm_kafka.GROUP_ARGS)
    topic = unique("down")
    create_topic(broker.bootstrap, topic, 1)
    acked = start_bolt(tmp_path, broker.bootstrap, FIELDS, topic=topic, producer=FAST_FAIL)
    forget = start_bolt(tmp_path, broker.bootstrap, FIELDS, topic=topic, producer=FAST_FAIL,
                        fire_and_forget=True)
    before = [acked.send_tuple([f"k{i}", f"before{i}"]) for i in range(5)]
    acked.wait_for(lambda: len(acked.acked) == 5, 20, "acks while the broker is up")

    broker.kill()
    during = [acked.send_tuple([f"k{i}", f"during{i}"]) for i in range(5)]
    lost = [forget.send_tuple([f"k{i}", f"lost{i}"]) for i in range(5)]
    forget.wait_for(lambda: len(forget.acked) == 5, 5, "fire-and-forget acks")
    acked.wait_for(lambda: len(acked.failed) == 5, 20, "fails while the broker is down")
    assert sorted(acked.failed) == sorted(during) and sorted(acked.acked) == sorted(before)
    assert sorted(forget.acked) == sorted(lost), "fire-and-forget acks without the broker"

    broker.start_again()
    after = replay_until_acked(acked, [[f"k{i}", f"after{i}"] for i in range(5)], 30)
    print(f"\nBOLT after the restart: {len(after) - 5} replays of 5 tuples")
    assert acked.violations == []
    # The topic holds exactly the acked tuples' records, in the order acked.
    values = [v for _, _, _, v in read_all(broker.bootstrap, topic, 1, 10)]
    assert values == [f"before{i}".encode() for i in range(5)] + \
        [after[i][1].encode() for i in acked.acked[5:]]
    assert sorted(after[i][1] for i in acked.acked[5:]) == [f"after{i}" for i in range(5)]
    for bolt in (acked, forget):
        bolt.close()
