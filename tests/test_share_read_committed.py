"""share.isolation.level=read_committed (KIP-932, issue 31): a share group
reads up to the last stable offset, and records of aborted transactions are
archived, never delivered, even where an aborted and a committed transaction
interleave in one partition; an open transaction's records arrive once it
commits. A read_uncommitted group on the same partition gets every record.
confluent-kafka's ShareConsumer against a real broker.
"""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer, ShareConsumer

from broker_process import shared_broker
from test_group_configs import TIMEOUT_S, _admin, _alter, _poll, _topic


@pytest.fixture(scope="module")
def b(tmp_path_factory):
    yield from shared_broker(tmp_path_factory, "share-rc",
                             "--set", "group.share.heartbeat.interval.ms=500")


def _txn_producer(b, name: str) -> Producer:
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0,
                  "transactional.id": f"{name}-{uuid.uuid4().hex[:6]}"})
    p.init_transactions(TIMEOUT_S)
    return p


def _send(p: Producer, topic: str, values) -> None:
    for v in values:
        p.produce(topic, value=v.encode())
    p.flush(TIMEOUT_S)


def _group(b, isolation: str) -> ShareConsumer:
    group = f"rc-{isolation}-{uuid.uuid4().hex[:6]}"
    _alter(_admin(b), group, {"share.auto.offset.reset": "earliest",
                              "share.isolation.level": isolation})
    return ShareConsumer({"bootstrap.servers": b.bootstrap, "group.id": group})


def test_read_committed_share_group_never_gets_aborted_or_open_records(b):
    topic = _topic(b)
    plain = [f"plain-{i}" for i in range(5)]
    _send(Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0}), topic, plain)
    # Two transactions interleaved in the partition: x aborts, y commits.
    x, y = _txn_producer(b, "x"), _txn_producer(b, "y")
    x.begin_transaction()
    y.begin_transaction()
    aborted, committed = [], []
    for round_ in range(3):
        a = [f"aborted-{round_}-{i}" for i in range(4)]
        c = [f"committed-{round_}-{i}" for i in range(4)]
        _send(x, topic, a)
        _send(y, topic, c)
        aborted += a
        committed += c
    x.abort_transaction(TIMEOUT_S)
    y.commit_transaction(TIMEOUT_S)
    # A third transaction stays open for now: the last stable offset stops
    # before it.
    z = _txn_producer(b, "z")
    z.begin_transaction()
    pending = [f"open-{i}" for i in range(5)]
    _send(z, topic, pending)
    after = [f"after-{i}" for i in range(3)]  # plain records behind the open transaction
    _send(Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0}), topic, after)

    rc, ru = _group(b, "read_committed"), _group(b, "read_uncommitted")
    try:
        rc.subscribe([topic])
        ru.subscribe([topic])
        stable = plain + committed
        got = _poll(rc, lambda g: len(g) >= len(stable))
        assert sorted(got) == sorted(stable)
        # Nothing else while z is open: not its records, not the plain
        # records after them, never the aborted ones.
        got += _poll(rc, lambda g: False, timeout=3)
        assert sorted(got) == sorted(stable), sorted(set(got) - set(stable))

        everything = plain + aborted + committed + pending + after
        got_ru = _poll(ru, lambda g: len(g) >= len(everything))
        assert sorted(got_ru) == sorted(everything)

        z.commit_transaction(TIMEOUT_S)
        rest = pending + after
        more = _poll(rc, lambda g: len(g) >= len(rest))
        more += _poll(rc, lambda g: False, timeout=2)
        assert sorted(more) == sorted(rest)
    finally:
        rc.close()
        ru.close()


def test_read_committed_is_a_valid_group_config_and_described(b):
    from test_group_configs import DYNAMIC_GROUP_CONFIG, _describe

    group = "rc-cfg-" + uuid.uuid4().hex[:6]
    admin = _admin(b)
    _alter(admin, group, {"share.isolation.level": "read_committed"})
    entry = _describe(admin, group)["share.isolation.level"]
    assert (entry.value, entry.source) == ("read_committed", DYNAMIC_GROUP_CONFIG)
