"""Fetch v17 and incremental fetch sessions (KIP-227) against a real broker.

Real clients: a librdkafka consumer (which always sends full, sessionless
fetches) and a kafka-python consumer (which uses incremental sessions) read
many partitions exactly; raw-protocol fetches (tests/fetch_wire.py) check
what a session answers: only the changed partitions, enforced epochs, the
KIP-227 error codes, v17's topic ids and the cache bound.
"""
from __future__ import annotations

import base64
import time

import pytest

from broker_process import shared_broker
from broker_wire import API_API_VERSIONS, Connection, decode_api_versions
from fetch_wire import encode_fetch_v7, encode_fetch_v17, fetch, recv_fetch, send_fetch

FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71
FETCH_SESSION_TOPIC_ID_ERROR = 106
UNKNOWN_TOPIC_OR_PARTITION = 3
UNKNOWN_TOPIC_ID = 100


@pytest.fixture(scope="module")
def fbroker(tmp_path_factory):
    yield from shared_broker(tmp_path_factory, "fetch-sessions")


@pytest.fixture(scope="module")
def one_slot_broker(tmp_path_factory):
    yield from shared_broker(tmp_path_factory, "fetch-one-slot",
                             "--set", "max.incremental.fetch.session.cache.slots=1")


def create_topic(bootstrap: str, topic: str, partitions: int) -> bytes:
    """Creates the topic; returns its id (16 bytes)."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=30)[topic].result(30)
    desc = admin.describe_topics(TopicCollection([topic]), request_timeout=30)[topic].result(30)
    text = str(desc.topic_id)
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def produce(bootstrap: str, topic: str, counts: dict[int, int], tag: str = "") -> None:
    """counts: partition -> records to append (values 'p<partition>-<n><tag>')."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    errors = []
    for part, n in counts.items():
        for i in range(n):
            p.produce(topic, f"p{part}-{i}{tag}".encode(), partition=part,
                      on_delivery=lambda err, m: err and errors.append(err))
    assert p.flush(30) == 0
    assert not errors, errors


# -- real clients ---------------------------------------------------------------------
def test_librdkafka_consumer_reads_many_partitions_exactly(fbroker):
    from confluent_kafka import Consumer, TopicPartition
    topic, parts = "fs-rdkafka", 64
    create_topic(fbroker.bootstrap, topic, parts)
    counts = {p: 3 + p % 5 for p in range(parts)}
    produce(fbroker.bootstrap, topic, counts)
    c = Consumer({"bootstrap.servers": fbroker.bootstrap, "group.id": "fs-rd",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(parts)])
        got: dict[int, list[int]] = {p: [] for p in range(parts)}
        deadline = time.monotonic() + 30
        while sum(map(len, got.values())) < sum(counts.values()):
            assert time.monotonic() < deadline, {p: len(v) for p, v in got.items()}
            for m in c.consume(1000, 0.5):
                assert m.error() is None, m.error()
                got[m.partition()].append(m.offset())
    finally:
        c.close()
    assert got == {p: list(range(n)) for p, n in counts.items()}


def test_kafka_python_consumer_fetches_incrementally_in_a_session(fbroker):
    from kafka import KafkaConsumer, TopicPartition
    topic, parts = "fs-kafka-python", 48
    create_topic(fbroker.bootstrap, topic, parts)
    counts = {p: 2 for p in range(parts)}
    produce(fbroker.bootstrap, topic, counts)
    c = KafkaConsumer(bootstrap_servers=fbroker.bootstrap, enable_auto_commit=False,
                      fetch_max_wait_ms=100)
    try:
        c.assign([TopicPartition(topic, p) for p in range(parts)])
        c.seek_to_beginning()
        got: dict[int, list[int]] = {p: [] for p in range(parts)}

        def drain(want: int) -> None:
            deadline = time.monotonic() + 30
            while sum(map(len, got.values())) < want:
                assert time.monotonic() < deadline, {p: len(v) for p, v in got.items()}
                for tp, msgs in c.poll(timeout_ms=500).items():
                    got[tp.partition].extend(m.offset for m in msgs)

        drain(sum(counts.values()))
        handlers = c._fetcher._session_handlers  # kafka-python's KIP-227 state
        assert len(handlers) == 1
        handler = next(iter(handlers.values()))
        # A session the broker created (a refused or unknown one would have
        # reset the client to session 0, epoch 0).
        sid, epoch = handler.next_metadata.session_id, handler.next_metadata.epoch
        assert sid != 0 and epoch >= 1
        # More records for a few partitions while the session is open: the
        # incremental fetches must deliver them, with nothing lost or doubled,
        # in the same session at later epochs.
        for round_ in range(3):
            produce(fbroker.bootstrap, topic, {3: 5, 40: 1}, tag=f"-late{round_}")
            drain(sum(counts.values()) + 6 * (round_ + 1))
        assert handler.next_metadata.session_id == sid
        assert handler.next_metadata.epoch >= epoch + 3
    finally:
        c.close()
    want = {p: list(range(2)) for p in range(parts)}
    want[3] = list(range(2 + 15))
    want[40] = list(range(2 + 3))
    assert got == want


# -- raw protocol -------------------------------------------------------------------
def test_incremental_fetch_lists_only_changed_partitions_and_enforces_epochs(fbroker):
    topic = "fs-raw-names"
    create_topic(fbroker.bootstrap, topic, 5)
    produce(fbroker.bootstrap, topic, {p: 1 for p in range(5)})
    with Connection(fbroker.address) as conn:
        full = fetch(conn, 7, encode_fetch_v7({topic: [(p, 0) for p in range(5)]}, 0, 0))
        assert full.error == 0 and full.session_id != 0
        sid = full.session_id
        assert sorted(p for _, p in full.parts) == [0, 1, 2, 3, 4]
        assert all(p.records and p.high_watermark == 1 for p in full.parts.values())

        # The client moves every position to 1: nothing new anywhere, so
        # nothing is listed.
        inc = fetch(conn, 7, encode_fetch_v7({topic: [(p, 1) for p in range(5)]}, sid, 1))
        assert (inc.error, inc.session_id, inc.parts) == (0, sid, {})

        # New data in partition 2 only: an incremental request naming no
        # partition gets exactly that one.
        produce(fbroker.bootstrap, topic, {2: 2})
        inc = fetch(conn, 7, encode_fetch_v7({}, sid, 2))
        assert inc.error == 0 and list(inc.parts) == [(topic, 2)]
        assert inc.parts[(topic, 2)].high_watermark == 3 and inc.parts[(topic, 2)].records

        # A repeated epoch is refused (the session's epoch is 3 now).
        bad = fetch(conn, 7, encode_fetch_v7({}, sid, 2))
        assert (bad.error, bad.session_id, bad.parts) == (INVALID_FETCH_SESSION_EPOCH, 0, {})
        gone = fetch(conn, 7, encode_fetch_v7({}, sid + 1 if sid < 2**31 - 1 else 1, 1))
        assert gone.error == FETCH_SESSION_ID_NOT_FOUND

        # Forget partition 2, add partition 99 (no such partition: listed
        # with its error), move partition 2's new data past the client.
        inc = fetch(conn, 7, encode_fetch_v7({topic: [(99, 0)]}, sid, 3, forgotten={topic: [2]}))
        assert list(inc.parts) == [(topic, 99)]
        assert inc.parts[(topic, 99)].error == UNKNOWN_TOPIC_OR_PARTITION
        produce(fbroker.bootstrap, topic, {2: 1, 4: 1})
        inc = fetch(conn, 7, encode_fetch_v7({}, sid, 4))
        assert sorted(p for _, p in inc.parts) == [4, 99]  # not the forgotten 2
        assert inc.parts[(topic, 4)].high_watermark == 2

        # Only the log start offset of partition 0 moves (DeleteRecords): it
        # is listed, without records.
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": fbroker.bootstrap})
        fut = admin.delete_records([TopicPartition(topic, 0, 1)], request_timeout=30)
        next(iter(fut.values())).result(30)
        # (The client moves partition 4 past what it got, else its records
        # would be listed again.)
        inc = fetch(conn, 7, encode_fetch_v7({topic: [(4, 2)]}, sid, 5))
        assert sorted(p for _, p in inc.parts) == [0, 99]
        p0 = inc.parts[(topic, 0)]
        assert (p0.error, p0.log_start_offset, p0.high_watermark, p0.records) == (0, 1, 1, b"")
        sid_epoch = 6

        # A session made with names is not usable with ids.
        mixed = fetch(conn, 17, encode_fetch_v17({}, sid, sid_epoch))
        assert mixed.error == FETCH_SESSION_TOPIC_ID_ERROR

        # A full request naming the session (epoch -1) closes it.
        closed = fetch(conn, 7, encode_fetch_v7({topic: [(0, 1)]}, sid, -1))
        assert closed.error == 0 and closed.session_id == 0
        assert fetch(conn, 7, encode_fetch_v7({}, sid, sid_epoch)).error == \
            FETCH_SESSION_ID_NOT_FOUND


def test_incremental_fetch_long_polls_until_a_session_partition_changes(fbroker):
    topic = "fs-raw-wait"
    create_topic(fbroker.bootstrap, topic, 3)
    with Connection(fbroker.address) as conn:
        sid = fetch(conn, 7, encode_fetch_v7({topic: [(p, 0) for p in range(3)]}, 0, 0)).session_id
        assert sid != 0
        t0 = time.monotonic()
        empty = fetch(conn, 7, encode_fetch_v7({}, sid, 1, max_wait_ms=300))
        assert empty.parts == {} and time.monotonic() - t0 >= 0.25
        # Parked (nothing new), then woken by a produce to one partition.
        t0 = time.monotonic()
        cid = send_fetch(conn, 7, encode_fetch_v7({}, sid, 2, max_wait_ms=10000))
        time.sleep(0.2)
        produce(fbroker.bootstrap, topic, {1: 1})
        got = recv_fetch(conn, 7, cid)
        assert time.monotonic() - t0 < 5
        assert list(got.parts) == [(topic, 1)] and got.parts[(topic, 1)].records


def test_fetch_v17_topic_ids_fields_and_api_versions(fbroker):
    topic = "fs-v17"
    tid = create_topic(fbroker.bootstrap, topic, 2)
    produce(fbroker.bootstrap, topic, {0: 3})
    with Connection(fbroker.address) as conn:
        conn.send_request(API_API_VERSIONS, 0)
        _, r = conn.recv_response()
        assert decode_api_versions(r, 0).apis[1] == (4, 17)

        unknown = b"\x01" * 16
        ans = fetch(conn, 17, encode_fetch_v17({tid: [(0, 0), (1, 0)], unknown: [(0, 0)]}, 0, 0,
                                               leader_epoch=0, rack="rack-a"))
        assert ans.error == 0 and ans.session_id != 0
        p0, p1 = ans.parts[(tid, 0)], ans.parts[(tid, 1)]
        assert (p0.error, p0.high_watermark, p0.last_stable_offset, p0.log_start_offset) == (0, 3, 3, 0)
        assert p0.records and not p1.records and p1.error == 0
        # No follower fetching (KIP-392) without a replica selector: -1.
        assert p0.preferred_read_replica == -1
        assert ans.parts[(unknown, 0)].error == UNKNOWN_TOPIC_ID
        assert p0.current_leader is None and ans.node_endpoints == []  # single broker leads

        # The id session answers incrementally: only partition 1's new data
        # and the unknown topic's standing error.
        produce(fbroker.bootstrap, topic, {1: 1})
        inc = fetch(conn, 17, encode_fetch_v17({tid: [(0, 3)]}, ans.session_id, 1))
        assert sorted(inc.parts) == sorted([(tid, 1), (unknown, 0)])
        assert inc.parts[(tid, 1)].high_watermark == 1 and inc.parts[(tid, 1)].records
        # Sessions by id refuse a by-name request.
        assert fetch(conn, 7, encode_fetch_v7({}, ans.session_id, 2)).error == \
            FETCH_SESSION_TOPIC_ID_ERROR


def test_session_cache_slots_bound_sessions(one_slot_broker):
    b = one_slot_broker
    topic = "fs-slots"
    create_topic(b.bootstrap, topic, 4)
    with Connection(b.address) as c1, Connection(b.address) as c2:
        first = fetch(c1, 7, encode_fetch_v7({topic: [(p, 0) for p in range(4)]}, 0, 0))
        assert first.session_id != 0
        # The one slot holds a young session: a smaller (or equal) newcomer
        # gets no session and is answered as a full fetch.
        second = fetch(c2, 7, encode_fetch_v7({topic: [(0, 0)]}, 0, 0))
        assert second.error == 0 and second.session_id == 0
        assert list(second.parts) == [(topic, 0)]
        # The first session still works.
        produce(b.bootstrap, topic, {3: 1})
        inc = fetch(c1, 7, encode_fetch_v7({}, first.session_id, 1))
        assert inc.error == 0 and list(inc.parts) == [(topic, 3)]
